//! The Prometheus endpoint: a known sequence of calls is counted exactly, and the text
//! passes `promtool check metrics` (Debian's `prometheus` package, installed by
//! .ci/run; without it that check says it was skipped, except in CI).
//!
//! One server per process here: the metrics recorder is the process's.

#[path = "support/mod.rs"]
mod support;

use std::time::Duration;
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use toolgate::proto::v1 as pb;

/// `GET /metrics` over a plain HTTP/1.1 connection.
async fn scrape(addr: std::net::SocketAddr) -> String {
    let fetch = async {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream
            .write_all(b"GET /metrics HTTP/1.1\r\nHost: toolgate\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.unwrap();
        answer
    };
    let answer = tokio::time::timeout(Duration::from_secs(10), fetch)
        .await
        .expect("metrics answered within 10 s");
    let (head, body) = answer.split_once("\r\n\r\n").expect("an HTTP answer");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    body.to_owned()
}

/// The value of the sample `name` whose labels include every one of `labels`.
fn sample(text: &str, name: &str, labels: &[&str]) -> Option<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter(|l| {
            l.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with('{') || rest.starts_with(' '))
        })
        .find(|l| labels.iter().all(|label| l.contains(label)))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
}

fn check_with_promtool(text: &str) {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(child) => child,
        Err(e) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("CI=true but promtool cannot run ({e}): .ci/run installs prometheus")
        }
        Err(e) => {
            eprintln!("skipped: promtool cannot run ({e}): apt-get install prometheus");
            return;
        }
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool check metrics: {}{}\n{text}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn a_known_sequence_of_calls_is_counted_exactly_and_promtool_accepts_the_text() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path());
    config.metrics.listen = Some("127.0.0.1:0".into());
    let app = toolgate::server::App::build(config).await.unwrap();
    let metrics = app.metrics_addr.expect("metrics are served");
    // the app is built already: start it as TestServer does
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
    let policy =
        |token: &str| PolicyServiceClient::with_interceptor(channel.clone(), Auth::new(token));

    // three decisions, one refused call, one batch of two
    let mut seen = Vec::new();
    for tool in ["create_issue", "create_issue", "get_issue"] {
        let d = policy("alice-token")
            .evaluate(pb::EvaluateRequest {
                approval: None,
                team_id: TEAM.into(),
                user_id: "alice".into(),
                call: Some(mcp("github", tool)),
                explain: false,
                agent: None,
                client: String::new(),
                tool_use_id: String::new(),
            })
            .await
            .unwrap()
            .into_inner()
            .decision
            .unwrap();
        seen.push((d.outcome(), d.reason()));
    }
    let refused = policy("no-such-token")
        .evaluate(pb::EvaluateRequest {
            approval: None,
            team_id: TEAM.into(),
            user_id: "alice".into(),
            call: Some(mcp("github", "x")),
            explain: false,
            agent: None,
            client: String::new(),
            tool_use_id: String::new(),
        })
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::Unauthenticated);
    let batch = policy("alice-token")
        .evaluate_batch(pb::EvaluateBatchRequest {
            team_id: TEAM.into(),
            user_id: "alice".into(),
            calls: vec![mcp("jira", "a"), mcp("jira", "b")],
            explain: false,
            agent: None,
            client: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    for d in &batch.decisions {
        seen.push((d.outcome(), d.reason()));
    }
    // fifty made-up paths: answered UNIMPLEMENTED and counted as one series, so a
    // caller cannot grow the registry
    for n in 0..50 {
        let mut grpc = tonic::client::Grpc::new(channel.clone());
        grpc.ready().await.unwrap();
        let path = format!("/toolgate.v1.MadeUp/Made{n}").parse().unwrap();
        let codec = tonic_prost::ProstCodec::<(), ()>::default();
        let made_up = grpc
            .unary(tonic::Request::new(()), path, codec)
            .await
            .unwrap_err();
        assert_eq!(made_up.code(), tonic::Code::Unimplemented);
    }

    let text = scrape(metrics).await;
    let evaluate = "method=\"/toolgate.v1.PolicyService/Evaluate\"";
    assert_eq!(
        sample(
            &text,
            "toolgate_rpc_requests_total",
            &[evaluate, "code=\"OK\""]
        ),
        Some(3.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            "toolgate_rpc_requests_total",
            &[evaluate, "code=\"UNAUTHENTICATED\""]
        ),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            "toolgate_rpc_requests_total",
            &[
                "method=\"/toolgate.v1.PolicyService/EvaluateBatch\"",
                "code=\"OK\""
            ]
        ),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, "toolgate_rpc_duration_seconds_count", &[evaluate]),
        Some(4.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            "toolgate_rpc_requests_total",
            &["method=\"other\"", "code=\"UNIMPLEMENTED\""]
        ),
        Some(50.0),
        "{text}"
    );
    assert!(
        !text.contains("Made"),
        "a made-up path is never a label: {text}"
    );
    // a code that never happened is not listed
    assert_eq!(
        sample(
            &text,
            "toolgate_rpc_requests_total",
            &[evaluate, "code=\"INTERNAL\""]
        ),
        None,
        "{text}"
    );
    // every decision, by outcome and reason, and nothing else
    let mut want = std::collections::BTreeMap::new();
    for (outcome, reason) in &seen {
        let outcome = outcome
            .as_str_name()
            .trim_start_matches("OUTCOME_")
            .to_owned();
        let reason = reason
            .as_str_name()
            .trim_start_matches("REASON_")
            .to_owned();
        *want.entry((outcome, reason)).or_insert(0.0) += 1.0;
    }
    for ((outcome, reason), n) in &want {
        let labels = [
            &format!("outcome=\"{outcome}\"")[..],
            &format!("reason=\"{reason}\"")[..],
        ];
        assert_eq!(
            sample(&text, "toolgate_decisions_total", &labels),
            Some(*n),
            "{text}"
        );
    }
    let total: f64 = text
        .lines()
        .filter(|l| l.starts_with("toolgate_decisions_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    assert_eq!(total, 5.0, "{text}");
    assert_eq!(sample(&text, "toolgate_watchers", &[]), Some(0.0), "{text}");
    assert_eq!(
        sample(&text, "toolgate_cached_teams", &[]),
        Some(1.0),
        "{text}"
    );
    // the embedded store: up, always current, on a disk with room
    assert_eq!(sample(&text, "toolgate_store_up", &[]), Some(1.0), "{text}");
    assert_eq!(
        sample(&text, "toolgate_policy_staleness_seconds", &[]),
        Some(0.0),
        "{text}"
    );
    assert!(
        sample(&text, "toolgate_data_dir_free_bytes", &[]).is_some_and(|b| b > 0.0),
        "{text}"
    );
    // one replica: never behind its own store
    assert_eq!(
        sample(&text, "toolgate_replica_revision_lag", &[]),
        Some(0.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, "toolgate_replica_teams_behind", &[]),
        Some(0.0),
        "{text}"
    );
    assert!(
        sample(
            &text,
            "toolgate_store_duration_seconds_count",
            &["op=\"get_admin\""]
        )
        .is_some_and(|n| n >= 1.0),
        "{text}"
    );
    assert!(
        sample(
            &text,
            "toolgate_build_info",
            &[&format!("version=\"{}\"", env!("CARGO_PKG_VERSION"))]
        ) == Some(1.0),
        "{text}"
    );
    // every metric the dashboard queries is one the server exports
    for (name, _) in toolgate::metrics::ALL {
        let dashboard = include_str!("../deploy/grafana/toolgate-dashboard.json");
        assert!(dashboard.contains(name), "the dashboard shows {name}");
    }
    check_with_promtool(&text);

    let _ = stop.send(());
    task.await.unwrap().unwrap();
}
