//! `toolgate proxy` and the team's MCP servers by identity: an upstream denied by
//! its command or its URL is refused at `initialize`, before its process starts or a
//! message is relayed; an allowed one is served, and refused from the moment an
//! admin denies it.

use crate::proxy_failures::{Announced, DEADLINE, call, names, open, policy, python_has_mcp, text};
use crate::support::*;
use std::path::Path;
use std::time::Duration;
use tokio::sync::mpsc;
use toolgate::proto::v1 as pb;
use toolgate::proxy::Target;

fn command(words: &[String]) -> pb::McpServerIdentity {
    pb::McpServerIdentity {
        identity: Some(pb::mcp_server_identity::Identity::Command(
            pb::CommandWords {
                words: words.to_vec(),
            },
        )),
    }
}

fn url(pattern: &str) -> pb::McpServerIdentity {
    pb::McpServerIdentity {
        identity: Some(pb::mcp_server_identity::Identity::Url(pattern.into())),
    }
}

/// echo allowlisted (as the proxy failure tests' policy), with these servers.
async fn servers(
    server: &TestServer,
    allowed: Vec<pb::McpServerIdentity>,
    denied: Vec<pb::McpServerIdentity>,
) {
    server
        .set_controls(pb::AutoRunControls {
            enabled: true,
            mcp_tool_allowlist: vec!["demo:echo".into(), "demo:crash".into()],
            managed: Some(pb::ManagedDelivery {
                allowed_mcp_servers: allowed,
                denied_mcp_servers: denied,
                ..Default::default()
            }),
            ..Default::default()
        })
        .await;
}

/// The Python upstream, launched through a shell that first leaves `marker`.
fn marked_upstream(marker: &Path) -> Vec<String> {
    vec![
        "sh".into(),
        "-c".into(),
        format!(
            "touch '{}' && exec python3 '{}/tests/python/mcp_upstream.py'",
            marker.display(),
            env!("CARGO_MANIFEST_DIR")
        ),
    ]
}

#[tokio::test]
async fn a_denied_command_or_url_is_refused_before_anything_runs() {
    if !python_has_mcp() {
        return;
    }
    let (server, dir) = start().await;
    policy(&server).await;
    let marker = dir.path().join("upstream-started");
    let argv = marked_upstream(&marker);

    servers(&server, vec![], vec![command(&argv)]).await;
    let (tx, _rx) = mpsc::unbounded_channel();
    let refused = open(
        server.addr,
        Duration::ZERO,
        Target::Command(argv.clone()),
        Announced(tx),
    )
    .await;
    let err = refused.err().expect("initialize refused").to_string();
    assert!(err.contains("may not run"), "{err}");
    assert!(!marker.exists(), "the denied upstream was started");

    // a URL denied by a wildcard, the host compared in lower case; never connected
    servers(&server, vec![], vec![url("https://*.evil.example/*")]).await;
    let (tx, _rx) = mpsc::unbounded_channel();
    let refused = open(
        server.addr,
        Duration::ZERO,
        Target::Url("https://MCP.evil.example/mcp".into()),
        Announced(tx),
    )
    .await;
    let err = refused.err().expect("initialize refused").to_string();
    assert!(err.contains("denied MCP server at"), "{err}");

    // with URLs allowed but no command, a stdio server goes by its name: refused
    servers(&server, vec![url("https://mcp.example.com/*")], vec![]).await;
    let (tx, _rx) = mpsc::unbounded_channel();
    let refused = open(
        server.addr,
        Duration::ZERO,
        Target::Command(argv.clone()),
        Announced(tx),
    )
    .await;
    let err = refused.err().expect("initialize refused").to_string();
    assert!(err.contains("its name is not one of the allowed"), "{err}");
    assert!(!marker.exists(), "the refused upstream was started");
    server.stop().await;
}

#[tokio::test]
async fn an_allowed_command_runs_until_an_admin_denies_it() {
    if !python_has_mcp() {
        return;
    }
    let (server, dir) = start().await;
    policy(&server).await;
    let marker = dir.path().join("upstream-started");
    let argv = marked_upstream(&marker);
    servers(&server, vec![command(&argv)], vec![]).await;
    let (tx, mut changes) = mpsc::unbounded_channel();
    let client = open(
        server.addr,
        Duration::ZERO,
        Target::Command(argv.clone()),
        Announced(tx),
    )
    .await
    .expect("initialize");
    let peer = client.peer().clone();
    assert!(names(&peer).await.contains(&"echo".to_owned()));
    assert_eq!(text(&call(&peer, "echo").await), "hi");
    assert!(marker.exists());

    servers(&server, vec![command(&argv)], vec![command(&argv)]).await;
    tokio::time::timeout(DEADLINE, changes.recv())
        .await
        .expect("list_changed in time")
        .expect("client alive");
    assert_eq!(names(&peer).await, Vec::<String>::new(), "nothing visible");
    let refused = call(&peer, "echo").await;
    assert_eq!(refused.is_error, Some(true));
    assert!(text(&refused).contains("may not run"), "{}", text(&refused));
    client.cancel().await.ok();
    server.stop().await;
}
