//! A DENY answered is a DENY recorded: the real binary is killed (SIGKILL) again and
//! again in the middle of a stream of denials, on SQLite and on PostgreSQL (also while
//! PostgreSQL is down); the test keeps every answer it got and, once the last start
//! has written what the journal held, finds each one's audit and decision-log record.

use crate::support;

use std::collections::HashSet;
use support::*;
use toolgate::proto::v1 as pb;
use toolgate::store::{AuditFilter, DecisionQuery, Store};

/// Kills per test; each kill comes once this many more denials were answered.
const ROUNDS: usize = 20;
const ANSWERED_PER_ROUND: usize = 60;
/// Clients sending denials at once.
const CLIENTS: usize = 4;
/// The longest wait for the last start to write what the journal holds.
const DEADLINE: std::time::Duration = std::time::Duration::from_secs(60);

pub(crate) async fn channel(addr: &str) -> tonic::transport::Channel {
    tonic::transport::Channel::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap()
}

pub(crate) async fn kill_switch_on(addr: &str) {
    AdminServiceClient::with_interceptor(channel(addr).await, Auth::new("admin-token"))
        .update_team_admin_settings(pb::UpdateTeamAdminSettingsRequest {
            team_id: TEAM.into(),
            auto_run_controls: Some(pb::AutoRunControls {
                kill_switch: true,
                ..Default::default()
            }),
            expected_revision: None,
        })
        .await
        .unwrap();
}

/// Sends denials, each a tool of its own name, until the server stops answering;
/// the names of those answered DENY.
async fn deny_until_killed(addr: String, round: usize, client: usize) -> Vec<String> {
    let mut policy =
        PolicyServiceClient::with_interceptor(channel(&addr).await, Auth::new("alice-token"));
    let mut answered = Vec::new();
    for i in 0u64.. {
        let tool = format!("r{round}c{client}n{i}");
        let r = policy
            .evaluate(pb::EvaluateRequest {
                team_id: TEAM.into(),
                user_id: "alice".into(),
                call: Some(mcp("jira", &tool)),
                ..Default::default()
            })
            .await;
        match r {
            Ok(r) => {
                let d = r.into_inner().decision.unwrap();
                assert_eq!(d.outcome, pb::Outcome::Deny as i32, "{d:?}");
                answered.push(tool);
            }
            Err(_) => break,
        }
    }
    answered
}

/// Rounds of: start, denials from several clients, SIGKILL once enough are answered
/// (with `outage` rounds PostgreSQL is down meanwhile); then a last start writes what
/// the journal holds and every answered denial must have its records.
async fn kill_under_deny_load(store_url: Option<String>, cluster: Option<&support::pg::Cluster>) {
    let dir = tempfile::tempdir().unwrap();
    let yaml = checked_store_config_file(dir.path(), store_url.as_deref());
    let data = dir.path().join("data");
    let mut answered: Vec<String> = Vec::new();
    for round in 0..ROUNDS {
        let (mut child, addr) = spawn_binary(&yaml);
        if round == 0 {
            kill_switch_on(&addr).await;
        }
        // every fourth round on PostgreSQL: the database goes away first, so the
        // denials of the round wait for it in the journal when the kill comes
        let outage = cluster.filter(|_| round % 4 == 1);
        let mut probe =
            PolicyServiceClient::with_interceptor(channel(&addr).await, Auth::new("bob-token"));
        let mut alice =
            PolicyServiceClient::with_interceptor(channel(&addr).await, Auth::new("alice-token"));
        // both users in the replica's cache, so they are decided through the outage
        for (client, user) in [(&mut probe, "bob"), (&mut alice, "alice")] {
            client
                .evaluate(pb::EvaluateRequest {
                    team_id: TEAM.into(),
                    user_id: user.into(),
                    call: Some(mcp("jira", "warm")),
                    ..Default::default()
                })
                .await
                .unwrap();
        }
        if let Some(cluster) = outage {
            cluster.kill();
        }
        let clients: Vec<_> = (0..CLIENTS)
            .map(|c| tokio::spawn(deny_until_killed(addr.clone(), round, c)))
            .collect();
        let before = answered.len();
        // bob's denials share the server's queue and journal with alice's: when this
        // many of his are answered, alice's clients have had as many turns
        for _ in 0..ANSWERED_PER_ROUND {
            let r = probe
                .evaluate(pb::EvaluateRequest {
                    team_id: TEAM.into(),
                    user_id: "bob".into(),
                    call: Some(mcp("jira", "probe")),
                    ..Default::default()
                })
                .await;
            if r.is_err() {
                break;
            }
        }
        child.kill().expect("SIGKILL");
        child.wait().unwrap();
        for client in clients {
            answered.extend(client.await.unwrap());
        }
        assert!(
            outage.is_some() || answered.len() > before,
            "round {round}: no denial answered before the kill"
        );
        if let Some(cluster) = outage {
            cluster.ctl("start");
        }
    }
    // the last start writes what the journal holds, then stops cleanly
    let (child, _addr) = spawn_binary(&yaml);
    let deadline = std::time::Instant::now() + DEADLINE;
    while !crate::limits::journal_segments(&data).is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the deny journal was not written to the store: {:?}",
            crate::limits::journal_segments(&data)
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    drop(child);
    let store: Box<dyn Store> = match &store_url {
        None => Box::new(
            toolgate::store::SqliteStore::open(&data.join("toolgate.db"), 100)
                .await
                .unwrap(),
        ),
        Some(url) => Box::new(
            toolgate::store::PostgresStore::connect(url, 100)
                .await
                .unwrap(),
        ),
    };
    let (audited, logged) = recorded(store.as_ref()).await;
    let missing_audit: Vec<&String> = answered.iter().filter(|t| !audited.contains(*t)).collect();
    let missing_log: Vec<&String> = answered.iter().filter(|t| !logged.contains(*t)).collect();
    assert!(
        missing_audit.is_empty() && missing_log.is_empty(),
        "{} denials answered; without an audit record: {} {:?}; without a decision-log record: {} {:?}",
        answered.len(),
        missing_audit.len(),
        &missing_audit[..missing_audit.len().min(10)],
        missing_log.len(),
        &missing_log[..missing_log.len().min(10)],
    );
}

/// The tools of every DENY audit record and every DENY decision-log record stored.
async fn recorded(store: &dyn Store) -> (HashSet<String>, HashSet<String>) {
    let mut audited = HashSet::new();
    let mut after_id = 0;
    loop {
        let page = store
            .list_audit(&AuditFilter {
                after_id,
                limit: 1_000,
                kind: Some("decision_denied".into()),
                ..Default::default()
            })
            .await
            .unwrap();
        let Some(last) = page.last() else { break };
        after_id = last.id;
        for e in &page {
            let detail: serde_json::Value = serde_json::from_str(&e.detail_json).unwrap();
            // the call as the record keeps it: Mcp { server: "jira", tool: "…" }
            let call = detail["call"].as_str().unwrap_or_default();
            if let Some(tool) = call
                .split("tool: \"")
                .nth(1)
                .and_then(|t| t.split('"').next())
            {
                audited.insert(tool.to_owned());
            }
        }
    }
    let mut logged = HashSet::new();
    let mut before = None;
    loop {
        let page = store
            .list_decisions(&DecisionQuery {
                team_id: Some(TEAM.into()),
                outcome: Some("DENY".into()),
                before,
                limit: 1_000,
                ..Default::default()
            })
            .await
            .unwrap();
        let Some(last) = page.last() else { break };
        before = Some((last.decision.at_ms, last.id));
        logged.extend(page.into_iter().map(|r| r.decision.tool));
    }
    (audited, logged)
}

#[tokio::test]
async fn sqlite_answered_denials_survive_sigkill() {
    kill_under_deny_load(None, None).await;
}

#[tokio::test]
async fn postgres_answered_denials_survive_sigkill_and_outages() {
    let Some(cluster) = support::pg::Cluster::start("postgres deny records under sigkill") else {
        return;
    };
    kill_under_deny_load(Some(cluster.url()), Some(&cluster)).await;
}

/// `command` (a toolgate server logging JSON to stderr) started, with its address and
/// its log lines on a channel.
fn spawn_logged(
    mut command: std::process::Command,
) -> (
    ServerProcess,
    String,
    std::sync::mpsc::Receiver<serde_json::Value>,
) {
    use std::io::{BufRead, BufReader};
    for (key, _) in std::env::vars().filter(|(k, _)| k.starts_with("TOOLGATE_")) {
        command.env_remove(key);
    }
    let mut child = ServerProcess(
        command
            .stderr(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("spawn toolgate"),
    );
    let (tx, rx) = std::sync::mpsc::channel();
    let lines = BufReader::new(child.stderr.take().unwrap()).lines();
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) {
                let _ = tx.send(v);
            }
        }
    });
    let addr = wait_log(&rx, |v| v["fields"]["message"] == "serving")["fields"]["addr"]
        .as_str()
        .unwrap()
        .to_owned();
    (child, addr, rx)
}

/// The first log line that `want` accepts, by the deadline.
fn wait_log(
    rx: &std::sync::mpsc::Receiver<serde_json::Value>,
    want: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let deadline = std::time::Instant::now() + DEADLINE;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let line = rx.recv_timeout(left).expect("log line by the deadline");
        if want(&line) {
            return line;
        }
    }
}

async fn deny_n(addr: &str, n: usize, tag: &str) {
    let mut policy =
        PolicyServiceClient::with_interceptor(channel(addr).await, Auth::new("alice-token"));
    for i in 0..n {
        let d = policy
            .evaluate(pb::EvaluateRequest {
                team_id: TEAM.into(),
                user_id: "alice".into(),
                call: Some(mcp("jira", &format!("{tag}{i}"))),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner()
            .decision
            .unwrap();
        assert_eq!(d.outcome, pb::Outcome::Deny as i32);
    }
}

/// Retention never trusts a wall clock that jumped: records written today, then a
/// server started under a clock a month ahead (libfaketime), which writes records
/// dated then and runs retention passes every second with a 30-day limit: nothing is
/// deleted, since nothing was due.
#[tokio::test]
async fn retention_deletes_nothing_after_a_clock_jump() {
    // the library itself, preloaded into the server (the `faketime` wrapper forks, and
    // a signal to it would not reach the server)
    let lib = std::fs::read_dir("/usr/lib")
        .into_iter()
        .flatten()
        .filter_map(|e| Some(e.ok()?.path().join("faketime/libfaketimeMT.so.1")))
        .find(|p| p.exists());
    let Some(lib) = lib else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run the clock test: install Debian's faketime"
        );
        eprintln!("skipped retention_deletes_nothing_after_a_clock_jump: needs libfaketime");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut config = test_config(&data);
    config.log.format = toolgate::config::LogFormat::Json;
    config.log.level = "info,toolgate_server::service=debug".into();
    config.decision_log.prune_interval_secs = 1;
    config.decision_log.max_age_days = 30;
    config.decision_log.deny_max_age_days = 30;
    let yaml = dir.path().join("toolgate.yaml");
    std::fs::write(&yaml, serde_norway::to_string(&config).unwrap()).unwrap();
    let mut today = std::process::Command::new(toolgate_binary());
    today.args(["serve", "--config"]).arg(&yaml);
    let (child, addr, _log) = spawn_logged(today);
    kill_switch_on(&addr).await;
    deny_n(&addr, 20, "today").await;
    stop(child);

    let mut ahead = std::process::Command::new(toolgate_binary());
    ahead.args(["serve", "--config"]).arg(&yaml);
    ahead.env("LD_PRELOAD", &lib).env("FAKETIME", "+31d");
    let (child, addr, log) = spawn_logged(ahead);
    let passes = |n: usize| {
        for _ in 0..n {
            let pass = wait_log(&log, |v| v["fields"]["message"] == "retention pass");
            assert_eq!(pass["fields"]["removed"], 0, "{pass}");
            assert_eq!(pass["fields"]["audit_removed"], 0, "{pass}");
        }
    };
    passes(2);
    // records dated a month ahead do not make today's look due
    deny_n(&addr, 20, "ahead").await;
    passes(3);
    stop(child);

    let store = toolgate::store::SqliteStore::open(&data.join("toolgate.db"), 100)
        .await
        .unwrap();
    // the server's clock was a month ahead: its records say so
    let newest = store
        .list_decisions(&DecisionQuery {
            team_id: Some(TEAM.into()),
            limit: 1,
            ..Default::default()
        })
        .await
        .unwrap();
    let day = 86_400_000;
    assert!(
        newest[0].decision.at_ms > toolgate::service::now_ms() + 30 * day,
        "the server did not run under the jumped clock: {newest:?}"
    );
    let (audited, logged) = recorded(&store).await;
    for i in 0..20 {
        for tag in ["today", "ahead"] {
            let tool = format!("{tag}{i}");
            assert!(audited.contains(&tool), "{tool}: audit record deleted");
            assert!(logged.contains(&tool), "{tool}: decision record deleted");
        }
    }
}

/// SIGTERM, and the exit waited for.
fn stop(mut child: ServerProcess) {
    let ok = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    child.wait().unwrap();
}

/// A small tmpfs mounted at a new directory, unmounted when dropped; `None` (after
/// saying so) where mounting is not allowed.
pub(crate) struct Tmpfs(pub(crate) tempfile::TempDir);

impl Tmpfs {
    pub(crate) fn mount(size: &str, test: &str) -> Option<Self> {
        let dir = tempfile::tempdir().unwrap();
        let mounted = std::process::Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0700"),
                "tmpfs",
            ])
            .arg(dir.path())
            .output()
            .is_ok_and(|o| o.status.success());
        if !mounted {
            eprintln!("skipped {test}: cannot mount a tmpfs (needs root)");
            return None;
        }
        Some(Self(dir))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg(self.0.path())
            .status();
    }
}

/// A member floods the server with large denials until its disk (a 32 MiB tmpfs) is
/// full: the store releases its reserve, and the kill switch and a token's revocation
/// still commit; the decision records wait. A SIGTERM then stops the server cleanly
/// (journaling what waited in memory, on the reserve, as far as it goes) and says so
/// in a few lines, not one per record.
#[tokio::test]
async fn a_full_disk_still_takes_the_kill_switch_and_a_revocation() {
    let Some(disk) = Tmpfs::mount("32m", "a_full_disk_still_takes_the_kill_switch") else {
        return;
    };
    let data = disk.0.path().join("data");
    let mut config = test_config(&data);
    config.log.format = toolgate::config::LogFormat::Json;
    config.decision_log.disk_reserve_bytes = 8 * 1024 * 1024;
    // the budgets would fold the flood's records and slow the filling to their refill
    // rate (flood.rs proves them); here the disk is to fill as fast as the machine goes
    config.decision_log.principal_bytes_per_minute = 1 << 40;
    config.decision_log.team_bytes_per_minute = 1 << 40;
    config.decision_log.principal_records_per_minute = 1 << 40;
    config.decision_log.team_records_per_minute = 1 << 40;
    config.shutdown_grace_secs = 2;
    let yaml = disk.0.path().join("toolgate.yaml");
    std::fs::write(&yaml, serde_norway::to_string(&config).unwrap()).unwrap();
    let mut command = std::process::Command::new(toolgate_binary());
    command.args(["serve", "--config"]).arg(&yaml);
    let (mut child, addr, log) = spawn_logged(command);
    let issued =
        TokenServiceClient::with_interceptor(channel(&addr).await, Auth::new("admin-token"))
            .create_token(pb::CreateTokenRequest {
                team_id: TEAM.into(),
                user_id: "carol".into(),
                role: pb::TokenRole::Member.into(),
                expires_in_seconds: 0,
                groups: Vec::new(),
            })
            .await
            .unwrap()
            .into_inner()
            .token
            .unwrap();
    kill_switch_on(&addr).await;

    // distinct 16 KiB commands (the most a record keeps), a hundred a call, until the
    // server says the disk is full; the deadline is a loaded machine's, only a failure
    // waits for it
    let mut policy =
        PolicyServiceClient::with_interceptor(channel(&addr).await, Auth::new("alice-token"));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(600);
    let mut full = false;
    'flood: for batch in 0u64.. {
        assert!(
            std::time::Instant::now() < deadline,
            "the disk did not fill by the deadline"
        );
        let calls = (0..100)
            .map(|i| pb::ToolCall {
                kind: Some(pb::tool_call::Kind::Shell(format!(
                    "echo {batch}-{i} {}",
                    "x".repeat(16_000)
                ))),
                arguments: None,
            })
            .collect();
        let answer = policy
            .evaluate_batch(pb::EvaluateBatchRequest {
                team_id: TEAM.into(),
                user_id: "alice".into(),
                calls,
                ..Default::default()
            })
            .await
            .unwrap_or_else(|e| panic!("batch {batch} of the flood: {e:?}"))
            .into_inner();
        assert!(
            answer
                .decisions
                .iter()
                .all(|d| d.outcome == pb::Outcome::Deny as i32),
            "batch {batch}: every call is denied"
        );
        while let Ok(line) = log.try_recv() {
            let message = line["fields"]["message"].as_str().unwrap_or_default();
            if message.starts_with("the disk is full: the reserve is released") {
                full = true;
                break 'flood;
            }
        }
    }
    assert!(full);
    // the admin's writes commit on the full disk
    AdminServiceClient::with_interceptor(channel(&addr).await, Auth::new("other-admin-token"))
        .update_team_admin_settings(pb::UpdateTeamAdminSettingsRequest {
            team_id: OTHER_TEAM.into(),
            auto_run_controls: Some(pb::AutoRunControls {
                kill_switch: true,
                ..Default::default()
            }),
            expected_revision: None,
        })
        .await
        .expect("the kill switch commits on a full disk");
    let revoked =
        TokenServiceClient::with_interceptor(channel(&addr).await, Auth::new("admin-token"))
            .revoke_token(pb::RevokeTokenRequest {
                token_id: issued.token_id,
            })
            .await
            .expect("a revocation commits on a full disk")
            .into_inner();
    assert!(revoked.revoked);
    // denials are still answered (their records wait)
    let d = policy
        .evaluate(pb::EvaluateRequest {
            team_id: TEAM.into(),
            user_id: "alice".into(),
            call: Some(mcp("jira", "after")),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .decision
        .unwrap();
    assert_eq!(d.outcome, pb::Outcome::Deny as i32);

    // a SIGTERM on the full disk: a clean stop, a few lines
    let ok = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    let status = child.wait().unwrap();
    assert!(status.success(), "the server stopped with {status}");
    let lines: Vec<serde_json::Value> = log.try_iter().collect();
    assert!(
        lines.len() < 50,
        "{} log lines after the disk filled: {:#?}",
        lines.len(),
        &lines[..lines.len().min(20)]
    );
}
