//! The flood: one member token sends 200,000 distinct DENY calls and 200,000 repeats as
//! fast as it can, for up to 30 s, against the real binary on a small filesystem. The
//! data directory grows by at most the principal's budget and a stated constant, every
//! DENY answered is in a record (its own, a counted one, or a shed event's count), and
//! the kill switch and a token revocation commit at the end, also with the disk full.
//! Another team's `Evaluate` latency meanwhile is printed, never asserted.

use crate::deny_crash::{Tmpfs, channel, kill_switch_on};
use crate::support::*;
use std::time::{Duration, Instant};
use toolgate::proto::v1 as pb;

/// The member's budgets: a minute's records and bytes (the team's the same, so both
/// hold).
const BUDGET_RECORDS: u64 = 10_000;
const BUDGET_BYTES: u64 = 4 * 1024 * 1024;
/// What the flood sends at most, and for how long at most.
const DISTINCT: usize = 200_000;
const REPEATS: usize = 200_000;
const FLOOD_FOR: Duration = Duration::from_secs(30);
/// Calls per `EvaluateBatch`, and batches in flight at once.
const BATCH: usize = 500;
const SENDERS: usize = 4;
/// What the data directory may grow by beyond the budget: the store's pages and
/// indexes around the records, the SQLite WAL before a checkpoint, the counted records
/// and shed events (at most 32 calls a principal each 5 s), and the DENY journal's
/// segments not yet removed.
const SLACK_BYTES: u64 = 24 * 1024 * 1024;
/// How much the stored form of a record may take over its texts (the budget counts
/// texts; each is kept in a JSON block, its audit row, and the WAL for a while).
const STORED_PER_BUDGETED: u64 = 3;

/// Bytes the files under `dir` take on disk.
fn disk_usage(dir: &std::path::Path) -> u64 {
    use std::os::unix::fs::MetadataExt as _;
    let mut total = 0;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    for entry in entries.flatten() {
        let Ok(meta) = entry.metadata() else { continue };
        if meta.is_dir() {
            total += disk_usage(&entry.path());
        } else {
            total += meta.blocks() * 512;
        }
    }
    total
}

/// A member token for `user`: its id and secret.
async fn issue(addr: &str, user: &str) -> pb::CreateTokenResponse {
    TokenServiceClient::with_interceptor(channel(addr).await, Auth::new("admin-token"))
        .create_token(pb::CreateTokenRequest {
            team_id: TEAM.into(),
            user_id: user.into(),
            role: pb::TokenRole::Member.into(),
            expires_in_seconds: 0,
            groups: Vec::new(),
        })
        .await
        .unwrap()
        .into_inner()
}

/// The kill switch (of the other team) and a token's revocation, each committed.
async fn admin_writes_commit(addr: &str, token_id: String, kill_switch: bool) {
    AdminServiceClient::with_interceptor(channel(addr).await, Auth::new("other-admin-token"))
        .update_team_admin_settings(pb::UpdateTeamAdminSettingsRequest {
            team_id: OTHER_TEAM.into(),
            auto_run_controls: Some(pb::AutoRunControls {
                kill_switch,
                ..Default::default()
            }),
            expected_revision: None,
        })
        .await
        .expect("the kill switch commits");
    let revoked =
        TokenServiceClient::with_interceptor(channel(addr).await, Auth::new("admin-token"))
            .revoke_token(pb::RevokeTokenRequest { token_id })
            .await
            .expect("the revocation commits")
            .into_inner();
    assert!(revoked.revoked);
}

/// Every audit record of the team, oldest first.
async fn team_audit(addr: &str) -> Vec<pb::AuditEvent> {
    let mut audit =
        AdminServiceClient::with_interceptor(channel(addr).await, Auth::new("admin-token"));
    let mut all = Vec::new();
    let mut after_id = 0;
    loop {
        let page = audit
            .list_audit_events(pb::ListAuditEventsRequest {
                team_id: TEAM.into(),
                after_id,
                limit: 1000,
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        all.extend(page.events);
        if page.next_after_id == 0 {
            return all;
        }
        after_id = page.next_after_id;
    }
}

/// One sender: batches of its share of the distinct calls, each followed by as many
/// repeats of one call, until its share or the time is spent; the DENYs answered.
async fn flood(addr: String, token: String, sender: usize, until: Instant) -> u64 {
    let mut policy = PolicyServiceClient::with_interceptor(channel(&addr).await, Auth::new(&token));
    let mut denied = 0;
    let share = DISTINCT / SENDERS;
    let mut sent = 0;
    while sent < share && Instant::now() < until {
        for distinct in [true, false] {
            if !distinct && sent >= REPEATS / SENDERS {
                continue;
            }
            let calls = (0..BATCH)
                .map(|i| {
                    let line = if distinct {
                        format!("deploy --target s{sender}n{}", sent + i)
                    } else {
                        "deploy --target production".into()
                    };
                    pb::ToolCall {
                        kind: Some(pb::tool_call::Kind::Shell(line)),
                        arguments: None,
                    }
                })
                .collect();
            let answer = policy
                .evaluate_batch(pb::EvaluateBatchRequest {
                    team_id: TEAM.into(),
                    user_id: "mallory".into(),
                    calls,
                    ..Default::default()
                })
                .await
                .unwrap()
                .into_inner();
            assert!(
                answer
                    .decisions
                    .iter()
                    .all(|d| d.outcome == pb::Outcome::Deny as i32)
            );
            denied += answer.decisions.len() as u64;
        }
        sent += BATCH;
    }
    denied
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_member_cannot_fill_the_disk_or_stop_the_admin() {
    let Some(disk) = Tmpfs::mount("256m", "one_member_cannot_fill_the_disk") else {
        return;
    };
    let data = disk.0.path().join("data");
    let mut config = test_config(&data);
    config.log.format = toolgate::config::LogFormat::Json;
    config.decision_log.disk_reserve_bytes = 8 * 1024 * 1024;
    config.decision_log.principal_records_per_minute = BUDGET_RECORDS;
    config.decision_log.team_records_per_minute = BUDGET_RECORDS;
    config.decision_log.principal_bytes_per_minute = BUDGET_BYTES;
    config.decision_log.team_bytes_per_minute = BUDGET_BYTES;
    let yaml = disk.0.path().join("toolgate.yaml");
    std::fs::write(&yaml, serde_norway::to_string(&config).unwrap()).unwrap();
    // an optimised build may be named for the latency figure
    let binary =
        std::env::var_os("TOOLGATE_FIGURE_BINARY").map_or_else(toolgate_binary, Into::into);
    let mut command = std::process::Command::new(binary);
    command.args(["serve", "--config"]).arg(&yaml);
    let (_child, addr) = spawn_server(command);
    let member = issue(&addr, "mallory").await;
    let spare = issue(&addr, "trent").await;
    let last = issue(&addr, "victor").await;
    kill_switch_on(&addr).await;
    let before = disk_usage(&data);

    // the flood, another team's Evaluate timed meanwhile, the data directory's size
    // looked at as it goes (its largest is what a full disk would meet)
    let began = Instant::now();
    let until = began + FLOOD_FOR;
    let senders: Vec<_> = (0..SENDERS)
        .map(|s| tokio::spawn(flood(addr.clone(), member.secret.clone(), s, until)))
        .collect();
    let mut other =
        PolicyServiceClient::with_interceptor(channel(&addr).await, Auth::new("operator-token"));
    let mut latencies = Vec::new();
    let mut largest = before;
    while !senders.iter().all(|s| s.is_finished()) {
        let asked = Instant::now();
        other
            .evaluate(pb::EvaluateRequest {
                team_id: OTHER_TEAM.into(),
                user_id: "carol".into(),
                call: Some(mcp("jira", "get_issue")),
                ..Default::default()
            })
            .await
            .unwrap();
        latencies.push(asked.elapsed());
        largest = largest.max(disk_usage(&data));
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let mut denied = 0;
    for s in senders {
        denied += s.await.unwrap();
    }
    let flooded = began.elapsed();

    // the counted records and shed events come within the budgets' report interval
    // (5 s); the member's DENYs are all in the trail once their counts add up
    let deadline = Instant::now() + Duration::from_secs(60);
    let (recorded, shed_events, events) = loop {
        let events = team_audit(&addr).await;
        let mut recorded = 0u64;
        let mut shed_events = 0;
        for e in &events {
            let detail = detail(e);
            if e.kind == audit_kind("decision_denied") {
                recorded += detail["count"].as_u64().unwrap_or(1);
            } else if e.kind == audit_kind("decisions_shed") {
                shed_events += 1;
                recorded += detail["denies_summarised"].as_u64().unwrap();
            }
        }
        largest = largest.max(disk_usage(&data));
        if recorded >= denied {
            break (recorded, shed_events, events.len());
        }
        assert!(
            Instant::now() < deadline,
            "{recorded} of {denied} DENYs in the audit trail after the deadline"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    assert_eq!(recorded, denied, "every DENY answered is in a record");
    assert!(shed_events > 0, "the member's shedding is reported");
    let grown = largest.saturating_sub(before);
    let minutes = flooded.as_secs_f64() / 60.0;
    let budget = (BUDGET_BYTES as f64 * (1.0 + minutes)) as u64;
    let bound = STORED_PER_BUDGETED * budget + SLACK_BYTES;
    latencies.sort();
    let at = |q: f64| latencies[((latencies.len() as f64 * q) as usize).min(latencies.len() - 1)];
    eprintln!(
        "flood: {denied} DENYs in {flooded:?} ({} of {} distinct); the data directory grew by at most {} KiB (bound {} KiB: {STORED_PER_BUDGETED} x the {} KiB budget + {} KiB); {events} audit records, {shed_events} shed events; the other team's Evaluate: {} calls, p50 {:?}, p99 {:?}, max {:?}",
        denied / 2,
        DISTINCT,
        grown / 1024,
        bound / 1024,
        budget / 1024,
        SLACK_BYTES / 1024,
        latencies.len(),
        at(0.5),
        at(0.99),
        latencies.last().unwrap()
    );
    assert!(
        grown <= bound,
        "the data directory grew by {grown} bytes, past {bound}"
    );

    // the admin's writes commit after the flood, and with the disk full
    admin_writes_commit(&addr, member.token.unwrap().token_id, true).await;
    let filler = disk.0.path().join("filler");
    {
        use std::io::Write as _;
        let mut f = std::fs::File::create(&filler).unwrap();
        let block = vec![0u8; 1 << 20];
        while f.write_all(&block).is_ok() {}
        let _ = f.sync_all();
    }
    assert!(
        std::fs::write(disk.0.path().join("one-more"), [0u8; 8192]).is_err(),
        "the disk is full"
    );
    admin_writes_commit(&addr, spare.token.unwrap().token_id, false).await;
    admin_writes_commit(&addr, last.token.unwrap().token_id, true).await;
}
