//! The decision log under a queue too small for the traffic: ALLOW and ASK records
//! are shed and counted in `toolgate_decision_log_records_shed_total`, DENY records
//! never are. A file of its own because it reads the process's metrics recorder.

#[path = "support/mod.rs"]
mod support;

use std::time::Duration;
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use toolgate::proto::v1 as pb;

const DEADLINE: Duration = Duration::from_secs(30);

async fn scrape(addr: std::net::SocketAddr) -> String {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: toolgate\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    answer.split_once("\r\n\r\n").unwrap().1.to_owned()
}

fn counter(text: &str, name: &str) -> u64 {
    text.lines()
        .find(|l| l.starts_with(name) && l[name.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .map_or(0, |v| v as u64)
}

#[tokio::test]
async fn a_full_queue_sheds_allows_and_asks_counted_and_never_a_deny() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path());
    config.metrics.listen = Some("127.0.0.1:0".into());
    config.decision_log.queue_size = 1;
    let app = toolgate::server::App::build(config).await.unwrap();
    let metrics = app.metrics_addr.expect("metrics are served");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(toolgate::server::run(listener, app, async {
        let _ = stopped.await;
    }));
    let channel = tonic::transport::Channel::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    AdminServiceClient::with_interceptor(channel.clone(), Auth::new("admin-token"))
        .update_team_admin_settings(pb::UpdateTeamAdminSettingsRequest {
            team_id: TEAM.into(),
            auto_run_controls: Some(pb::AutoRunControls {
                enabled: true,
                mcp_tool_allowlist: vec!["github:*".into()],
                mcp_tool_blocklist: vec!["evil:*".into()],
                ..Default::default()
            }),
            expected_revision: None,
        })
        .await
        .unwrap();

    // 1,000 calls in one batch, every tenth denied
    let calls: Vec<_> = (0..1000)
        .map(|i| {
            let server = if i % 10 == 0 { "evil" } else { "github" };
            mcp(server, &format!("t{i}"))
        })
        .collect();
    let mut policy =
        PolicyServiceClient::with_interceptor(channel.clone(), Auth::new("alice-token"));
    for _ in 0..3 {
        policy
            .evaluate_batch(pb::EvaluateBatchRequest {
                team_id: TEAM.into(),
                user_id: "alice".into(),
                calls: calls.clone(),
                ..Default::default()
            })
            .await
            .unwrap();
    }

    // every record is written or shed, within the deadline
    let started = tokio::time::Instant::now();
    let (written, shed) = loop {
        let text = scrape(metrics).await;
        let written = counter(&text, "toolgate_decision_log_records_written_total");
        let shed = counter(&text, "toolgate_decision_log_records_shed_total");
        if written + shed == 3000 {
            break (written, shed);
        }
        assert!(
            started.elapsed() < DEADLINE,
            "written {written} + shed {shed} did not reach 3000 within {DEADLINE:?}"
        );
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(shed > 0, "a queue of one cannot take a batch of 1,000");

    // every DENY is in the log
    let mut log = DecisionLogServiceClient::with_interceptor(channel, Auth::new("admin-token"));
    let mut denies = 0;
    let mut total = 0;
    let mut page_token = String::new();
    loop {
        let page = log
            .list_decisions(pb::ListDecisionsRequest {
                filter: Some(pb::DecisionFilter {
                    team_id: TEAM.into(),
                    ..Default::default()
                }),
                page_size: 1000,
                page_token,
            })
            .await
            .unwrap()
            .into_inner();
        total += page.decisions.len() as u64;
        denies += page
            .decisions
            .iter()
            .filter(|d| d.outcome() == pb::Outcome::Deny)
            .count();
        if page.next_page_token.is_empty() {
            break;
        }
        page_token = page.next_page_token;
    }
    assert_eq!(denies, 300, "no DENY is shed");
    assert_eq!(total, written);
    let _ = stop.send(());
    task.await.unwrap().unwrap();
}
