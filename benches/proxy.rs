//! `toolgate proxy`: the overhead it adds to one `tools/call` against a direct
//! connection to the same upstream (p50, p99), and, over Streamable HTTP with many
//! concurrent sessions, the time from an admin's commit to `list_changed` at every
//! client.
//!
//! `cargo bench -p toolgate-benches --bench proxy -- [--calls 2000] [--sessions 1000] [--writes 5]`
//!
//! Needs python3 with `mcp` (the upstream is tests/python/mcp_upstream.py). The
//! clients are rmcp's own, in this process; the proxy runs in this process too, the
//! toolgate server as in the tests. The last line printed is the figures as JSON.

#[path = "../tests/support/mod.rs"]
mod support;

use rmcp::model::CallToolRequestParams;
use rmcp::service::{NotificationContext, Peer, RoleClient};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ServiceExt};
use serde_json::json;
use std::time::{Duration, Instant};
use support::*;
use tokio::sync::mpsc;
use toolgate::config::TokenConfig;
use toolgate::proto::v1 as pb;
use toolgate::proxy;

struct Args {
    calls: usize,
    sessions: usize,
    writes: usize,
}

impl Args {
    fn parse() -> Self {
        let mut args = Self {
            calls: 2_000,
            sessions: 1_000,
            writes: 5,
        };
        let mut it = std::env::args().skip(1);
        while let Some(flag) = it.next() {
            let mut number = || -> usize {
                it.next()
                    .unwrap_or_default()
                    .parse()
                    .unwrap_or_else(|_| panic!("{flag} takes a whole number"))
            };
            match flag.as_str() {
                "--calls" => args.calls = number().max(1),
                "--sessions" => args.sessions = number(),
                "--writes" => args.writes = number().max(1),
                // cargo passes --bench to every bench binary
                _ => {}
            }
        }
        args
    }
}

fn percentile_us(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i].as_secs_f64() * 1e6
}

fn upstream_argv() -> Vec<String> {
    vec![
        "python3".into(),
        format!(
            "{}/../tests/python/mcp_upstream.py",
            env!("CARGO_MANIFEST_DIR")
        ),
    ]
}

fn proxy_config(server: &TestServer) -> proxy::ProxyConfig {
    proxy::ProxyConfig {
        toolgate: toolgate::grpc::client::ClientConfig {
            server: format!("http://{}", server.addr),
            token: Some("alice-token".into()),
            ..Default::default()
        },
        server_id: "demo".into(),
        upstream: proxy::Target::Command(upstream_argv()),
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
    }
}

async fn controls(server: &TestServer, blocked: &[&str]) -> u64 {
    server
        .set_controls(pb::AutoRunControls {
            enabled: true,
            mcp_tool_allowlist: vec!["demo:echo".into(), "demo:add".into()],
            mcp_tool_blocklist: blocked.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        })
        .await
}

async fn time_calls(peer: &Peer<RoleClient>, n: usize) -> Vec<Duration> {
    let mut args = serde_json::Map::new();
    args.insert("text".into(), "hi".into());
    // warm up
    for _ in 0..20 {
        let p = CallToolRequestParams::new("echo").with_arguments(args.clone());
        peer.call_tool(p).await.expect("call");
    }
    let mut took = Vec::with_capacity(n);
    for _ in 0..n {
        let p = CallToolRequestParams::new("echo").with_arguments(args.clone());
        let start = Instant::now();
        let result = peer.call_tool(p).await.expect("call");
        took.push(start.elapsed());
        assert_eq!(result.is_error, Some(false));
    }
    took.sort();
    took
}

async fn overhead(server: &TestServer, calls: usize) -> serde_json::Value {
    let argv = upstream_argv();
    let mut command = tokio::process::Command::new(&argv[0]);
    command.args(&argv[1..]);
    let direct = ().serve(TokioChildProcess::new(command).unwrap()).await.unwrap();
    let direct_took = time_calls(direct.peer(), calls).await;
    direct.cancel().await.ok();

    let (client_io, proxy_io) = tokio::io::duplex(1 << 20);
    let (read, write) = tokio::io::split(proxy_io);
    tokio::spawn(proxy::run_stream(proxy_config(server), read, write));
    let proxied = ().serve(client_io).await.unwrap();
    proxied.peer().list_tools(None).await.unwrap();
    let proxied_took = time_calls(proxied.peer(), calls).await;
    proxied.cancel().await.ok();

    let fig =
        |t: &[Duration]| json!({"p50_us": percentile_us(t, 0.5), "p99_us": percentile_us(t, 0.99)});
    json!({
        "calls": calls,
        "direct": fig(&direct_took),
        "proxied": fig(&proxied_took),
        "overhead_p50_us": percentile_us(&proxied_took, 0.5) - percentile_us(&direct_took, 0.5),
        "overhead_p99_us": percentile_us(&proxied_took, 0.99) - percentile_us(&direct_took, 0.99),
    })
}

/// Reports each list change with the time it arrived.
struct Stamp(mpsc::UnboundedSender<Instant>);

impl ClientHandler for Stamp {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.0.send(Instant::now());
    }
}

async fn fanout(server: &TestServer, sessions: usize, writes: usize) -> serde_json::Value {
    let clients = proxy::ClientTokens::from_configs(vec![TokenConfig {
        groups: Vec::new(),
        name: "alice".into(),
        sha256: toolgate::auth::hash_token("alice-mcp-token"),
        role: toolgate::auth::Role::Member,
        team: Some(TEAM.into()),
        user: Some("alice".into()),
    }])
    .unwrap();
    let mut config = proxy_config(server);
    config.toolgate.token = Some("service-token".into());
    config.who = None;
    config.clients = Some(clients);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(proxy::run_http(config, listener, std::future::pending()));

    let (tx, mut rx) = mpsc::unbounded_channel();
    let opening = Instant::now();
    let mut running = Vec::with_capacity(sessions);
    for _ in 0..sessions {
        let transport = StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(url.as_str())
                .auth_header("alice-mcp-token"),
        );
        let client = Stamp(tx.clone()).serve(transport).await.expect("session");
        client.peer().list_tools(None).await.expect("list");
        running.push(client);
    }
    let opened_in = opening.elapsed();
    // let every session's event stream open before the first write
    tokio::time::sleep(Duration::from_secs(2)).await;
    while rx.try_recv().is_ok() {}

    let mut delays = Vec::with_capacity(sessions * writes);
    let mut missing = 0;
    for w in 0..writes {
        let blocked: &[&str] = if w % 2 == 0 { &["demo:add"] } else { &[] };
        controls(server, blocked).await;
        let committed = Instant::now();
        for _ in 0..sessions {
            match tokio::time::timeout(Duration::from_secs(30), rx.recv()).await {
                Ok(Some(at)) => delays.push(at.saturating_duration_since(committed)),
                _ => {
                    missing += 1;
                    break;
                }
            }
        }
    }
    delays.sort();
    json!({
        "sessions": sessions,
        "writes": writes,
        "opened_in_s": opened_in.as_secs_f64(),
        "deliveries": delays.len(),
        "missing_writes": missing,
        "commit_to_list_changed_p50_ms": percentile_us(&delays, 0.5) / 1e3,
        "commit_to_list_changed_p99_ms": percentile_us(&delays, 0.99) / 1e3,
        "commit_to_list_changed_max_ms": delays.last().map_or(0.0, |d| d.as_secs_f64() * 1e3),
    })
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(test_config(dir.path())).await;
    controls(&server, &[]).await;
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
    let overhead = overhead(&server, args.calls).await;
    println!("overhead: {overhead}");
    let fanout = if args.sessions > 0 {
        fanout(&server, args.sessions, args.writes).await
    } else {
        json!(null)
    };
    println!(
        "{}",
        json!({"call_overhead": overhead, "http_fanout": fanout})
    );
}
