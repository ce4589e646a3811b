//! `toolgate proxy` with a real MCP client and a real upstream, both the Python `mcp`
//! SDK (2.3.0, pinned in `.ci/run`): hidden tools absent, a denied call refused, an
//! allowed call passed unchanged, and an admin change reaching the client as
//! `notifications/tools/list_changed` — over stdio and Streamable HTTP, in both
//! protocol generations (legacy `initialize`, and 2026-07-28 `subscriptions/listen`).
//!
//! Without python3 and `mcp` the tests say they were skipped, except under CI.

use crate::support;

use serde_json::Value;
use std::process::Stdio;
use std::time::Duration;
use support::*;
use tokio::io::{AsyncBufReadExt, BufReader};
use toolgate::config::TokenConfig;
use toolgate::proto::v1 as pb;
use toolgate::proxy;

const STEP_DEADLINE: Duration = Duration::from_secs(60);

pub(crate) fn python_has_mcp() -> bool {
    let found = std::process::Command::new("python3")
        .args(["-c", "import mcp, httpx2"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must have python3 with mcp==2.3.0"
        );
        eprintln!("skipped: python3 with the mcp package not found (pip install mcp==2.3.0)");
    }
    found
}

pub(crate) fn script(name: &str) -> String {
    format!("{}/tests/python/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// Team acme: echo and add allowlisted by the admin, secret blocked (hidden), ask_me
/// unlisted (ASK); alice runs in auto-run mode so allowlisted tools run.
pub(crate) async fn policy(server: &TestServer) {
    server
        .set_controls(pb::AutoRunControls {
            enabled: true,
            mcp_tool_allowlist: vec!["demo:echo".into(), "demo:add".into()],
            mcp_tool_blocklist: vec!["demo:secret".into()],
            ..Default::default()
        })
        .await;
    server
        .users("alice-token")
        .update_user_settings(pb::UpdateUserSettingsRequest {
            settings: Some(pb::UserSettings {
                team_id: TEAM.into(),
                user_id: "alice".into(),
                use_yolo_mode: true,
                ..Default::default()
            }),
            expected_revision: None,
            update_mask: None,
        })
        .await
        .expect("alice's settings");
}

/// The admin blocks `add` through the gRPC API.
async fn block_add(server: &TestServer) {
    server
        .set_controls(pb::AutoRunControls {
            enabled: true,
            mcp_tool_allowlist: vec!["demo:echo".into(), "demo:add".into()],
            mcp_tool_blocklist: vec!["demo:secret".into(), "demo:add".into()],
            ..Default::default()
        })
        .await;
}

/// Runs the Python client, makes the admin change when it waits, and returns its
/// steps by name.
pub(crate) async fn drive(
    server: &TestServer,
    args: Vec<String>,
) -> serde_json::Map<String, Value> {
    let mut child = tokio::process::Command::new("python3")
        .arg(script("mcp_proxy_client.py"))
        .args(&args)
        .env("TOOLGATE_SERVER", format!("http://{}", server.addr))
        .env("TOOLGATE_TOKEN", "alice-token")
        .env("TOOLGATE_TEAM", TEAM)
        .env("TOOLGATE_USER", "alice")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("run python3");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut steps = serde_json::Map::new();
    loop {
        let line = tokio::time::timeout(STEP_DEADLINE, lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("client stalled after {steps:?}"))
            .expect("read client output");
        let Some(line) = line else { break };
        let step: Value = serde_json::from_str(&line).expect("a JSON line");
        let name = step["step"].as_str().unwrap().to_owned();
        if name == "waiting" {
            block_add(server).await;
        }
        steps.insert(name, step);
    }
    let status = tokio::time::timeout(STEP_DEADLINE, child.wait())
        .await
        .expect("client exits")
        .unwrap();
    assert!(status.success(), "client failed after {steps:?}");
    steps
}

fn names(v: &Value) -> Vec<&str> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect()
}

/// What every run must show, whatever the transport and generation.
fn check(steps: &serde_json::Map<String, Value>, elicited: bool) {
    // hidden: the blocked tool is absent; the order is stable (by name)
    assert_eq!(
        names(&steps["listed"]["tools"]),
        ["add", "ask_me", "crash", "echo"],
        "{steps:?}"
    );
    let calls = &steps["calls"];
    // allowed: passed through unchanged
    assert_eq!(calls["echo"]["is_error"], false, "{calls}");
    assert_eq!(calls["echo"]["text"], "through the proxy");
    // hidden tool: an unknown tool, as the spec's example and the gateways answer
    assert_eq!(calls["secret"]["code"], -32602, "{calls}");
    assert_eq!(calls["secret"]["message"], "Unknown tool: secret");
    assert_eq!(calls["nothing"]["code"], -32602, "{calls}");
    // ASK: elicitation where the client offers it, else an error naming the approval
    if elicited {
        assert_eq!(calls["ask_me"]["is_error"], false, "{calls}");
        assert_eq!(calls["ask_me"]["text"], "approved and ran");
    } else {
        assert_eq!(calls["ask_me"]["is_error"], true, "{calls}");
        let text = calls["ask_me"]["text"].as_str().unwrap();
        assert!(
            text.contains("demo:ask_me needs approval") && text.contains("NOT_IN_ADMIN_ALLOWLIST"),
            "{text}"
        );
    }
    // prompts and resources pass through
    assert_eq!(steps["passthrough"]["prompt"], "Hello, Ada!");
    assert_eq!(steps["passthrough"]["resource"], "read me");
    // the admin's change arrived as list_changed; the tool shown before is now
    // refused as denied (isError with the reason), and the next list lacks it
    let changed = &steps["changed"];
    assert_eq!(changed["add"]["is_error"], true, "{changed}");
    let text = changed["add"]["text"].as_str().unwrap();
    assert!(
        text.contains("denied demo:add") && text.contains("BLOCKED_BY_ADMIN"),
        "{text}"
    );
    assert_eq!(names(&changed["tools"]), ["ask_me", "crash", "echo"]);
}

async fn stdio(mode: &str, elicit: bool) {
    if !python_has_mcp() {
        return;
    }
    let (server, _dir) = start().await;
    policy(&server).await;
    let mut args: Vec<String> = vec![
        mode.into(),
        "stdio".into(),
        env!("CARGO_BIN_EXE_toolgate").into(),
        "proxy".into(),
        "--server-id".into(),
        "demo".into(),
        "--".into(),
        "python3".into(),
        script("mcp_upstream.py"),
    ];
    if elicit {
        args.extend(["--elicit".into(), "accept".into()]);
    }
    let steps = drive(&server, args).await;
    assert_eq!(
        steps["connected"]["protocol"],
        if mode == "legacy" { "2025-11-25" } else { mode }
    );
    check(&steps, elicit);
    server.stop().await;
}

#[tokio::test]
async fn stdio_legacy_with_elicitation() {
    stdio("legacy", true).await;
}

#[tokio::test]
async fn stdio_2026_07_28() {
    stdio("2026-07-28", false).await;
}

/// The proxy in HTTP mode, in process, with its service token; alice connects with hers.
async fn http(mode: &str) {
    if !python_has_mcp() {
        return;
    }
    let (server, _dir) = start().await;
    policy(&server).await;
    let clients = proxy::ClientTokens::from_configs(vec![TokenConfig {
        groups: Vec::new(),
        name: "alice".into(),
        sha256: toolgate::auth::hash_token("alice-mcp-token"),
        role: toolgate::auth::Role::Member,
        team: Some(TEAM.into()),
        user: Some("alice".into()),
    }])
    .unwrap();
    let config = proxy::ProxyConfig {
        toolgate: toolgate::grpc::client::ClientConfig {
            server: format!("http://{}", server.addr),
            token: Some("service-token".into()),
            ..Default::default()
        },
        server_id: "demo".into(),
        upstream: proxy::Target::Command(vec!["python3".into(), script("mcp_upstream.py")]),
        who: None,
        listen: None,
        clients: Some(clients),
        http: Default::default(),
        pins: None,
        max_staleness: Duration::ZERO,
        approvals: Default::default(),
        max_description_bytes: proxy::DEFAULT_MAX_DESCRIPTION_BYTES,
        max_upstream_processes: proxy::DEFAULT_MAX_UPSTREAM_PROCESSES,
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let proxy = tokio::spawn(proxy::run_http(config, listener, async {
        let _ = stopped.await;
    }));
    let steps = drive(
        &server,
        vec![mode.into(), "http".into(), url, "alice-mcp-token".into()],
    )
    .await;
    check(&steps, false);
    let _ = stop.send(());
    let _ = tokio::time::timeout(STEP_DEADLINE, proxy).await;
    server.stop().await;
}

#[tokio::test]
async fn http_legacy() {
    http("legacy").await;
}

#[tokio::test]
async fn http_2026_07_28() {
    http("2026-07-28").await;
}
