//! Central approvals against the real server binary: the time from an approver's
//! `ApproveRequest` to the answer arriving on the waiting side's `AwaitApproval`
//! stream (p50, p99, max), and the server's resident memory per open wait.
//!
//! `cargo bench -p toolgate-benches --bench approvals -- [--rounds 500] [--waits 1000]`
//!
//! Each round: alice's `Evaluate` sends an ASK to the approvers, her wait opens (its
//! first message, the pending request, read), then the admin approves; timed from just
//! before `ApproveRequest` is sent to the answer read on the wait (and, separately,
//! the `ApproveRequest` call itself). The memory figure opens `--waits` waits on as
//! many pending requests and reads the server's RSS before and after. The last line
//! printed is the figures as JSON.

#[path = "../tests/support/mod.rs"]
mod support;

use serde_json::json;
use std::time::{Duration, Instant};
use support::*;
use tonic::transport::Channel;
use toolgate::proto::v1 as pb;

type Approvals = pb::approval_service_client::ApprovalServiceClient<
    tonic::service::interceptor::InterceptedService<Channel, Auth>,
>;
type Policy = PolicyServiceClient<tonic::service::interceptor::InterceptedService<Channel, Auth>>;

fn arg(name: &str, default: usize) -> usize {
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == name {
            return it
                .next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{name} takes a whole number"));
        }
    }
    default
}

fn percentile_us(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i].as_secs_f64() * 1e6
}

async fn connect(addr: &str) -> Channel {
    Channel::from_shared(format!("http://{addr}"))
        .unwrap()
        .tcp_nodelay(true)
        .connect()
        .await
        .expect("connect")
}

/// Alice's ASK, sent to the approvers: the request id.
async fn ask(policy: &mut Policy, n: usize) -> String {
    policy
        .evaluate(pb::EvaluateRequest {
            team_id: TEAM.into(),
            user_id: "alice".into(),
            call: Some(pb::ToolCall {
                kind: Some(pb::tool_call::Kind::Shell(format!("make target{n}"))),
                arguments: None,
            }),
            explain: false,
            agent: None,
            approval: Some(pb::ApprovalCapability {
                can_wait: true,
                interactive: Some(false),
                client: "bench".into(),
                session_id: "bench".into(),
            }),
            client: String::new(),
            tool_use_id: String::new(),
        })
        .await
        .expect("evaluate")
        .into_inner()
        .decision
        .expect("a decision")
        .approval
        .expect("sent to the approvers")
        .request_id
}

/// Opens a wait and reads its first message (the pending request).
async fn open_wait(
    approvals: &mut Approvals,
    id: &str,
) -> tonic::Streaming<pb::AwaitApprovalResponse> {
    let mut stream = approvals
        .await_approval(pb::AwaitApprovalRequest {
            request_id: id.into(),
        })
        .await
        .expect("await")
        .into_inner();
    stream.message().await.expect("first").expect("first");
    stream
}

#[tokio::main]
async fn main() {
    let rounds = arg("--rounds", 500).max(1);
    // a team holds at most 1,000 pending requests
    let waits = arg("--waits", 1000).clamp(1, 1000);
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(&dir.path().join("data"));
    config.log.format = toolgate::config::LogFormat::Json;
    let config_path = dir.path().join("toolgate.yaml");
    std::fs::write(&config_path, serde_norway::to_string(&config).unwrap()).unwrap();
    let (mut child, addr) = spawn_binary(&config_path);
    let pid = child.id();

    let channel = connect(&addr).await;
    let mut admin = AdminServiceClient::with_interceptor(channel.clone(), Auth::new("admin-token"));
    admin
        .update_team_admin_settings(pb::UpdateTeamAdminSettingsRequest {
            team_id: TEAM.into(),
            auto_run_controls: Some(pb::AutoRunControls {
                enabled: true,
                allowed: vec!["git status".into()],
                approvals: Some(pb::ApprovalSettings {
                    mode: pb::ApprovalMode::Always as i32,
                    deadline_seconds: 3600,
                    ..Default::default()
                }),
                ..Default::default()
            }),
            expected_revision: None,
        })
        .await
        .expect("settings");
    // the waiting side and the approver on connections of their own, as in life
    let waiter_channel = connect(&addr).await;
    let mut policy =
        PolicyServiceClient::with_interceptor(waiter_channel.clone(), Auth::new("alice-token"));
    let mut waiter = pb::approval_service_client::ApprovalServiceClient::with_interceptor(
        waiter_channel,
        Auth::new("alice-token"),
    );
    let mut approver = pb::approval_service_client::ApprovalServiceClient::with_interceptor(
        connect(&addr).await,
        Auth::new("admin-token"),
    );

    let mut answered = Vec::with_capacity(rounds);
    let mut calls = Vec::with_capacity(rounds);
    for n in 0..rounds + rounds / 10 {
        let id = ask(&mut policy, n).await;
        let mut wait = open_wait(&mut waiter, &id).await;
        let sent = Instant::now();
        approver
            .approve_request(pb::ApproveRequestRequest {
                request_id: id,
                scope: pb::ApprovalScope::Once as i32,
                ..Default::default()
            })
            .await
            .expect("approve");
        let call = sent.elapsed();
        loop {
            let m = wait.message().await.expect("answer").expect("answer");
            if let Some(pb::await_approval_response::Event::Approval(a)) = m.event
                && a.answer.is_some()
            {
                break;
            }
        }
        // the first tenth warms the connections and the caches up
        if n >= rounds / 10 {
            answered.push(sent.elapsed());
            calls.push(call);
        }
    }
    answered.sort();
    calls.sort();

    // memory per open wait: that many pending requests, each with a wait open
    let before = process_rss_bytes(pid);
    let mut open = Vec::with_capacity(waits);
    for n in 0..waits {
        let id = ask(&mut policy, rounds * 2 + n).await;
        open.push(open_wait(&mut waiter, &id).await);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = process_rss_bytes(pid);
    let per_wait = after.saturating_sub(before) / waits as u64;
    drop(open);

    let figures = json!({
        "bench": "approvals",
        "rounds": rounds,
        "approve_to_answer_us": {
            "p50": percentile_us(&answered, 0.50),
            "p99": percentile_us(&answered, 0.99),
            "max": percentile_us(&answered, 1.0),
        },
        "approve_call_us": {
            "p50": percentile_us(&calls, 0.50),
            "p99": percentile_us(&calls, 0.99),
        },
        "waits": waits,
        "rss_before_bytes": before,
        "rss_after_bytes": after,
        "bytes_per_open_wait": per_wait,
    });
    eprintln!(
        "approve → answer: p50 {:.0} µs, p99 {:.0} µs, max {:.0} µs over {} rounds; ~{} bytes per open wait ({} waits)",
        percentile_us(&answered, 0.50),
        percentile_us(&answered, 0.99),
        percentile_us(&answered, 1.0),
        answered.len(),
        per_wait,
        waits
    );
    println!("{figures}");
    child.kill().ok();
    child.wait().ok();
}
