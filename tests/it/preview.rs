//! The impact preview's bounds: a record budget and a time budget
//! (`decision_log.preview_max_records`, `preview_max_ms`) cut it short and the answer
//! says so and why; a second preview of a team while one runs is refused.

use crate::support;

use std::time::Duration;
use support::*;
use toolgate::proto::v1 as pb;

/// Every wait of these tests has this deadline.
const STEP: Duration = Duration::from_secs(60);

fn shell(line: &str) -> pb::ToolCall {
    pb::ToolCall {
        kind: Some(pb::tool_call::Kind::Shell(line.into())),
        arguments: None,
    }
}

/// `n` distinct ASKs logged for alice, in batches, and listed.
async fn plant(server: &TestServer, n: usize) {
    server
        .set_controls(pb::AutoRunControls {
            enabled: true,
            allowed: vec!["git status".into()],
            ..Default::default()
        })
        .await;
    server.yolo("alice").await;
    for chunk in (0..n).collect::<Vec<_>>().chunks(500) {
        server
            .policy("alice-token")
            .evaluate_batch(pb::EvaluateBatchRequest {
                team_id: TEAM.into(),
                calls: chunk.iter().map(|i| shell(&format!("make t{i}"))).collect(),
                ..Default::default()
            })
            .await
            .unwrap();
    }
    // the records are written off the decision path: wait until all are listed
    let start = tokio::time::Instant::now();
    loop {
        let mut listed = 0;
        let mut token = String::new();
        loop {
            let page = server
                .decisions("admin-token")
                .list_decisions(pb::ListDecisionsRequest {
                    filter: Some(pb::DecisionFilter {
                        team_id: TEAM.into(),
                        ..Default::default()
                    }),
                    page_size: 1000,
                    page_token: token,
                })
                .await
                .unwrap()
                .into_inner();
            listed += page.decisions.len();
            if page.next_page_token.is_empty() {
                break;
            }
            token = page.next_page_token;
        }
        if listed >= n {
            return;
        }
        assert!(
            start.elapsed() < STEP,
            "{listed} of {n} records within {STEP:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The preview of a change that allows `make`: every planted call changes.
async fn preview(
    server: &TestServer,
) -> Result<pb::PreviewTeamAdminSettingsResponse, tonic::Status> {
    server
        .decisions("admin-token")
        .preview_team_admin_settings(pb::PreviewTeamAdminSettingsRequest {
            team_id: TEAM.into(),
            auto_run_controls: Some(pb::AutoRunControls {
                enabled: true,
                allowed: vec!["git status".into(), "make".into()],
                ..Default::default()
            }),
            window_seconds: 3600,
            examples_per_group: 1,
        })
        .await
        .map(tonic::Response::into_inner)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_record_budget_cuts_the_preview_short_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path());
    config.decision_log.preview_max_records = 5;
    let server = TestServer::start(config).await;
    plant(&server, 12).await;
    let impact = preview(&server).await.unwrap();
    assert_eq!(impact.decided, 5);
    assert_eq!(impact.changed, 5);
    assert!(impact.truncated);
    assert_eq!(impact.cut_short(), pb::PreviewCutShort::Records);
    server.stop().await;

    // within the budget: whole, and not marked
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(test_config(dir.path())).await;
    plant(&server, 12).await;
    let impact = preview(&server).await.unwrap();
    assert_eq!((impact.decided, impact.changed), (12, 12));
    assert!(!impact.truncated);
    assert_eq!(impact.cut_short(), pb::PreviewCutShort::Unspecified);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_time_budget_cuts_the_preview_short_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path());
    // a millisecond: reading the first page of a thousand records takes longer
    config.decision_log.preview_max_ms = 1;
    let server = TestServer::start(config).await;
    plant(&server, 2500).await;
    let impact = preview(&server).await.unwrap();
    assert!(impact.decided < 2500, "{}", impact.decided);
    assert!(impact.truncated);
    assert_eq!(impact.cut_short(), pb::PreviewCutShort::Time);
    server.stop().await;
}

/// Not a test: the figure for the load, printed. Two previews (two teams)
/// over 10,000 large logged commands each, while a third team's `Evaluate` is timed
/// against the real binary. Run it with
/// `cargo test --test it preview::figure -- --ignored --nocapture`
/// (`TOOLGATE_FIGURE_BINARY=target/profiling/toolgate` for an optimised build).
#[tokio::test(flavor = "multi_thread")]
#[ignore]
async fn figure_evaluate_latency_during_two_previews() {
    use toolgate::proto::v1::decision_log_service_client::DecisionLogServiceClient;
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(&dir.path().join("data"));
    config.log.format = toolgate::config::LogFormat::Json;
    // one principal plants 80 MB of records in seconds: past the decision log's
    // default budget, which would keep most of them out
    let log = &mut config.decision_log;
    log.principal_records_per_minute = 1_000_000;
    log.principal_bytes_per_minute = 1 << 30;
    log.team_records_per_minute = 1_000_000;
    log.team_bytes_per_minute = 1 << 30;
    let path = dir.path().join("toolgate.yaml");
    std::fs::write(&path, serde_norway::to_string(&config).unwrap()).unwrap();
    // another build of the binary (the profiling profile) may be named instead
    let (_child, addr) = match std::env::var_os("TOOLGATE_FIGURE_BINARY") {
        Some(binary) => {
            let mut command = std::process::Command::new(binary);
            command.args(["serve", "--config"]).arg(&path);
            spawn_server(command)
        }
        None => spawn_binary(&path),
    };
    let channel = tonic::transport::Channel::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let policy =
        |token: &str| PolicyServiceClient::with_interceptor(channel.clone(), Auth::new(token));
    let decisions =
        |token: &str| DecisionLogServiceClient::with_interceptor(channel.clone(), Auth::new(token));
    const RECORDS: usize = 10_000;
    let words = "--flag value ".repeat(300);
    let planted = std::time::Instant::now();
    for team in [TEAM, OTHER_TEAM] {
        for chunk in (0..RECORDS).collect::<Vec<_>>().chunks(500) {
            policy("operator-token")
                .evaluate_batch(pb::EvaluateBatchRequest {
                    team_id: team.into(),
                    user_id: "dev".into(),
                    calls: chunk
                        .iter()
                        .map(|i| shell(&format!("make t{i} {words}")))
                        .collect(),
                    ..Default::default()
                })
                .await
                .unwrap();
        }
    }
    // written off the decision path: wait until the newest page is full
    let start = tokio::time::Instant::now();
    for team in [TEAM, OTHER_TEAM] {
        loop {
            let listed = decisions("operator-token")
                .list_decisions(pb::ListDecisionsRequest {
                    filter: Some(pb::DecisionFilter {
                        team_id: team.into(),
                        ..Default::default()
                    }),
                    page_size: 1000,
                    page_token: String::new(),
                })
                .await
                .unwrap()
                .into_inner();
            if listed.decisions.len() == 1000 && !listed.next_page_token.is_empty() {
                break;
            }
            assert!(start.elapsed() < Duration::from_secs(600));
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    eprintln!(
        "planted {} records of {} bytes in {:?}",
        2 * RECORDS,
        words.len() + 10,
        planted.elapsed()
    );
    let preview_of = |team: &'static str, token: &'static str| {
        let client = decisions(token);
        tokio::spawn(async move {
            let mut client = client;
            let began = std::time::Instant::now();
            let r = client
                .preview_team_admin_settings(pb::PreviewTeamAdminSettingsRequest {
                    team_id: team.into(),
                    auto_run_controls: Some(pb::AutoRunControls {
                        enabled: true,
                        allowed: vec!["make".into()],
                        ..Default::default()
                    }),
                    window_seconds: 3600,
                    examples_per_group: 1,
                })
                .await;
            (began.elapsed(), r.map(tonic::Response::into_inner))
        })
    };
    let a = preview_of(TEAM, "admin-token");
    let b = preview_of(OTHER_TEAM, "other-admin-token");
    let mut latencies = Vec::new();
    let mut third = policy("operator-token");
    while !(a.is_finished() && b.is_finished()) {
        let began = std::time::Instant::now();
        third
            .evaluate(pb::EvaluateRequest {
                team_id: "initech".into(),
                user_id: "carol".into(),
                call: Some(shell("git status")),
                ..Default::default()
            })
            .await
            .unwrap();
        latencies.push(began.elapsed());
    }
    for (team, p) in [(TEAM, a.await.unwrap()), (OTHER_TEAM, b.await.unwrap())] {
        let (took, r) = p;
        let r = r.unwrap();
        eprintln!(
            "preview of {team}: {took:?}, {} decided, cut short: {:?}",
            r.decided,
            r.cut_short()
        );
    }
    latencies.sort();
    let at = |q: f64| latencies[((latencies.len() as f64 * q) as usize).min(latencies.len() - 1)];
    eprintln!(
        "third team's Evaluate during the previews: {} calls, p50 {:?}, p99 {:?}, max {:?}",
        latencies.len(),
        at(0.5),
        at(0.99),
        latencies.last().unwrap()
    );
}
