//! `toolgate proxy` when things fail: toolgate unreachable (fail closed, announced,
//! recovered by itself; with `--max-staleness`, the last known policy until it runs
//! out), the upstream crashing (a clear call error, then a restart),
//! malformed and oversized input (JSON-RPC errors, the session lives on). rmcp's own
//! client is downstream, the Python `mcp` SDK server upstream.

use crate::support;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{NotificationContext, Peer, RoleClient, RunningService};
use rmcp::{ClientHandler, ServiceExt};
use std::net::SocketAddr;
use std::time::Duration;
use support::*;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use toolgate::proto::v1 as pb;
use toolgate::proxy;

pub(crate) const DEADLINE: Duration = Duration::from_secs(30);

pub(crate) fn python_has_mcp() -> bool {
    let found = std::process::Command::new("python3")
        .args(["-c", "import mcp"])
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

/// Counts the list changes announced to the client.
pub(crate) struct Announced(pub(crate) mpsc::UnboundedSender<()>);

impl ClientHandler for Announced {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.0.send(());
    }
}

/// A TCP relay in front of toolgate that the test cuts and restores.
struct Relay {
    addr: SocketAddr,
    up: watch::Sender<bool>,
    /// Connections dropped while cut: the proxy has noticed the cut once it is 1.
    refused: watch::Receiver<u64>,
}

impl Relay {
    async fn start(target: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (up, _) = watch::channel(true);
        let (refused_tx, refused) = watch::channel(0u64);
        let state = up.clone();
        tokio::spawn(async move {
            loop {
                let Ok((mut inbound, _)) = listener.accept().await else {
                    return;
                };
                let mut rx = state.subscribe();
                if !*rx.borrow_and_update() {
                    refused_tx.send_modify(|n| *n += 1);
                    continue; // dropped: refused while cut
                }
                tokio::spawn(async move {
                    let Ok(mut outbound) = TcpStream::connect(target).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                        _ = rx.wait_for(|up| !*up) => {}
                    }
                });
            }
        });
        Self { addr, up, refused }
    }

    fn set(&self, up: bool) {
        self.up.send_replace(up);
    }

    /// Cuts the relay and waits until the proxy has been refused a connection, so it
    /// knows toolgate is gone.
    async fn cut_and_wait_refused(&mut self) {
        let before = *self.refused.borrow_and_update();
        self.set(false);
        tokio::time::timeout(DEADLINE, self.refused.wait_for(|n| *n > before))
            .await
            .expect("the proxy reconnects in time")
            .expect("relay alive");
    }
}

pub(crate) fn upstream() -> proxy::Target {
    proxy::Target::Command(vec![
        "python3".into(),
        format!(
            "{}/tests/python/mcp_upstream.py",
            env!("CARGO_MANIFEST_DIR")
        ),
    ])
}

/// echo and crash allowlisted for alice, in auto-run mode.
pub(crate) async fn policy(server: &TestServer) {
    server
        .set_controls(pb::AutoRunControls {
            enabled: true,
            mcp_tool_allowlist: vec!["demo:echo".into(), "demo:crash".into()],
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

/// The proxy in process on a pipe, for alice, and an rmcp client on the other end.
async fn connect(
    toolgate: SocketAddr,
    max_staleness: Duration,
) -> (
    RunningService<RoleClient, Announced>,
    mpsc::UnboundedReceiver<()>,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    let client = open(toolgate, max_staleness, upstream(), Announced(tx))
        .await
        .expect("initialize");
    (client, rx)
}

/// The proxy in process on a pipe, for alice, in front of `upstream`, and `client`
/// initializing on the other end.
pub(crate) async fn open(
    toolgate: SocketAddr,
    max_staleness: Duration,
    upstream: proxy::Target,
    client: Announced,
) -> Result<RunningService<RoleClient, Announced>, rmcp::service::ClientInitializeError> {
    let config = proxy::ProxyConfig {
        toolgate: toolgate::grpc::client::ClientConfig {
            server: format!("http://{toolgate}"),
            token: Some("alice-token".into()),
            ..Default::default()
        },
        server_id: "demo".into(),
        upstream,
        who: Some(proxy::Who {
            team: TEAM.into(),
            user: "alice".into(),
        }),
        listen: None,
        clients: None,
        http: Default::default(),
        pins: None,
        max_staleness,
        approvals: Default::default(),
        max_description_bytes: proxy::DEFAULT_MAX_DESCRIPTION_BYTES,
        max_upstream_processes: proxy::DEFAULT_MAX_UPSTREAM_PROCESSES,
    };
    let (client_io, proxy_io) = tokio::io::duplex(1 << 20);
    let (read, write) = tokio::io::split(proxy_io);
    tokio::spawn(proxy::run_stream(config, read, write));
    tokio::time::timeout(DEADLINE, client.serve(client_io))
        .await
        .expect("initialize answered in time")
}

pub(crate) async fn names(peer: &Peer<RoleClient>) -> Vec<String> {
    let tools = tokio::time::timeout(DEADLINE, peer.list_tools(None))
        .await
        .expect("tools/list in time")
        .expect("tools/list");
    tools
        .tools
        .into_iter()
        .map(|t| t.name.to_string())
        .collect()
}

pub(crate) async fn call(peer: &Peer<RoleClient>, name: &str) -> CallToolResult {
    let mut args = serde_json::Map::new();
    args.insert("text".into(), "hi".into());
    let params = CallToolRequestParams::new(name.to_owned()).with_arguments(args);
    tokio::time::timeout(DEADLINE, peer.call_tool(params))
        .await
        .expect("tools/call in time")
        .expect("tools/call")
}

pub(crate) fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join(" ")
}

async fn announced(rx: &mut mpsc::UnboundedReceiver<()>) {
    tokio::time::timeout(DEADLINE, rx.recv())
        .await
        .expect("list_changed in time")
        .expect("client alive");
}

#[tokio::test]
async fn toolgate_unreachable_fails_closed_and_recovers_by_itself() {
    if !python_has_mcp() {
        return;
    }
    let (server, _dir) = start().await;
    policy(&server).await;
    let relay = Relay::start(server.addr).await;
    let (client, mut changes) = connect(relay.addr, Duration::ZERO).await;
    let peer = client.peer().clone();
    assert!(names(&peer).await.contains(&"echo".to_owned()));

    relay.set(false);
    announced(&mut changes).await;
    assert_eq!(names(&peer).await, Vec::<String>::new(), "nothing visible");
    let refused = call(&peer, "echo").await;
    assert_eq!(refused.is_error, Some(true));
    assert!(
        text(&refused).contains("toolgate is unreachable"),
        "{}",
        text(&refused)
    );

    relay.set(true);
    announced(&mut changes).await;
    assert!(names(&peer).await.contains(&"echo".to_owned()));
    let ran = call(&peer, "echo").await;
    assert_eq!(text(&ran), "hi");
    client.cancel().await.ok();
    server.stop().await;
}

#[tokio::test]
async fn within_max_staleness_the_last_known_policy_decides_then_recovers() {
    if !python_has_mcp() {
        return;
    }
    let (server, _dir) = start().await;
    policy(&server).await;
    let mut relay = Relay::start(server.addr).await;
    let (client, mut changes) = connect(relay.addr, Duration::from_secs(3600)).await;
    let peer = client.peer().clone();
    let before = names(&peer).await;
    assert!(before.contains(&"echo".to_owned()), "{before:?}");

    relay.cut_and_wait_refused().await;
    // an admin blocks echo while the proxy cannot hear it
    server
        .set_controls(pb::AutoRunControls {
            enabled: true,
            mcp_tool_allowlist: vec!["demo:echo".into(), "demo:crash".into()],
            mcp_tool_blocklist: vec!["demo:echo".into()],
            ..Default::default()
        })
        .await;
    assert_eq!(names(&peer).await, before, "the last known list is served");
    let ran = call(&peer, "echo").await;
    assert_eq!(ran.is_error, Some(false), "{}", text(&ran));
    assert_eq!(text(&ran), "hi", "allowed by the last known policy");
    let asked = call(&peer, "ask_me").await;
    assert_eq!(asked.is_error, Some(true));
    assert!(
        text(&asked).contains("needs approval")
            && text(&asked).contains("decided by the last known policy"),
        "{}",
        text(&asked)
    );

    relay.set(true);
    announced(&mut changes).await;
    let after = names(&peer).await;
    assert!(!after.contains(&"echo".to_owned()), "{after:?}");
    let refused = call(&peer, "echo").await;
    assert_eq!(refused.is_error, Some(true));
    assert!(
        text(&refused).contains("toolgate denied demo:echo (BLOCKED_BY_ADMIN)")
            && !text(&refused).contains("last known policy"),
        "{}",
        text(&refused)
    );
    client.cancel().await.ok();
    server.stop().await;
}

#[tokio::test]
async fn past_max_staleness_fails_closed_with_a_clear_message_then_recovers() {
    if !python_has_mcp() {
        return;
    }
    let (server, _dir) = start().await;
    policy(&server).await;
    let mut relay = Relay::start(server.addr).await;
    let (client, mut changes) = connect(relay.addr, Duration::from_millis(300)).await;
    let peer = client.peer().clone();
    assert!(names(&peer).await.contains(&"echo".to_owned()));

    relay.cut_and_wait_refused().await;
    // the allowance runs out: the list empties and the client is told
    announced(&mut changes).await;
    assert_eq!(names(&peer).await, Vec::<String>::new(), "nothing visible");
    let refused = call(&peer, "echo").await;
    assert_eq!(refused.is_error, Some(true));
    assert!(
        text(&refused).contains("toolgate is unreachable")
            && text(&refused).contains("the call to demo:echo was refused"),
        "{}",
        text(&refused)
    );

    relay.set(true);
    announced(&mut changes).await;
    assert!(names(&peer).await.contains(&"echo".to_owned()));
    let ran = call(&peer, "echo").await;
    assert_eq!(text(&ran), "hi");
    client.cancel().await.ok();
    server.stop().await;
}

#[tokio::test]
async fn upstream_crash_is_a_clear_error_then_a_restart() {
    if !python_has_mcp() {
        return;
    }
    let (server, _dir) = start().await;
    policy(&server).await;
    let (client, _changes) = connect(server.addr, Duration::ZERO).await;
    let peer = client.peer().clone();
    assert!(names(&peer).await.contains(&"crash".to_owned()));
    let crashed = call(&peer, "crash").await;
    assert_eq!(crashed.is_error, Some(true));
    assert!(
        text(&crashed).contains("upstream server demo failed during the call"),
        "{}",
        text(&crashed)
    );
    // the next call waits for the restarted upstream
    let ran = call(&peer, "echo").await;
    assert_eq!(ran.is_error, Some(false), "{}", text(&ran));
    assert_eq!(text(&ran), "hi");
    client.cancel().await.ok();
    server.stop().await;
}

#[tokio::test]
async fn malformed_and_oversized_input_get_json_rpc_errors() {
    if !python_has_mcp() {
        return;
    }
    let (server, _dir) = start().await;
    policy(&server).await;
    let config = proxy::ProxyConfig {
        toolgate: toolgate::grpc::client::ClientConfig {
            server: format!("http://{}", server.addr),
            token: Some("alice-token".into()),
            ..Default::default()
        },
        server_id: "demo".into(),
        upstream: upstream(),
        who: Some(proxy::Who {
            team: TEAM.into(),
            user: "alice".into(),
        }),
        listen: None,
        clients: None,
        http: Default::default(),
        pins: None,
        max_staleness: Duration::ZERO,
        approvals: Default::default(),
        max_description_bytes: proxy::DEFAULT_MAX_DESCRIPTION_BYTES,
        max_upstream_processes: proxy::DEFAULT_MAX_UPSTREAM_PROCESSES,
    };
    let (client_io, proxy_io) = tokio::io::duplex(1 << 20);
    let (read, write) = tokio::io::split(proxy_io);
    tokio::spawn(proxy::run_stream(config, read, write));
    let (client_read, mut client_write) = tokio::io::split(client_io);
    let mut lines = BufReader::new(client_read).lines();
    let mut next = async || -> serde_json::Value {
        let line = tokio::time::timeout(DEADLINE, lines.next_line())
            .await
            .expect("an answer in time")
            .unwrap()
            .expect("the proxy is still there");
        serde_json::from_str(&line).expect("a JSON-RPC message")
    };
    client_write.write_all(b"this is not json\n").await.unwrap();
    let answer = next().await;
    assert_eq!(answer["error"]["code"], -32700, "{answer}");

    let huge = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{{\"pad\":\"{}\"}}}}\n",
        "x".repeat(proxy::MAX_MESSAGE_BYTES)
    );
    client_write.write_all(huge.as_bytes()).await.unwrap();
    let answer = next().await;
    assert_eq!(answer["error"]["code"], -32600, "{answer}");

    // the session lives on
    client_write
        .write_all(
            br#"{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}
"#,
        )
        .await
        .unwrap();
    let answer = next().await;
    assert_eq!(answer["id"], 2, "{answer}");
    assert!(
        answer["result"]["capabilities"]["tools"]["listChanged"] == true,
        "{answer}"
    );
    server.stop().await;
}
