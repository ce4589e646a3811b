//! `toolgate proxy` as a transparent gateway, beyond what the conformance suite checks:
//! a client's cancellation reaches the upstream's handler, progress arrives under the
//! client's own token, a request's `_meta` reaches the upstream, resource updates
//! reach the subscriber, sampling is relayed to the client until the team's policy
//! refuses it, and a foreign `Host` or `Origin` gets 403 even with a valid token.
//!
//! rmcp's client is downstream, `tests/python/conformance_upstream.py` (the Python
//! `mcp` SDK) upstream on stdio.

use crate::support;

use rmcp::model::*;
use rmcp::service::{NotificationContext, Peer, PeerRequestOptions, RequestContext, RoleClient};
use rmcp::{ClientHandler, ErrorData, ServiceExt};
use std::time::Duration;
use support::*;
use tokio::sync::mpsc;
use toolgate::config::TokenConfig;
use toolgate::proto::v1 as pb;
use toolgate::proxy;

const DEADLINE: Duration = Duration::from_secs(60);

fn python_has_mcp() -> bool {
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

fn upstream() -> proxy::Target {
    proxy::Target::Command(vec![
        "python3".into(),
        format!(
            "{}/tests/python/conformance_upstream.py",
            env!("CARGO_MANIFEST_DIR")
        ),
        "stdio".into(),
    ])
}

/// What the client was sent, in order.
#[derive(Debug)]
enum Heard {
    Log(String),
    Progress(ProgressToken, f64),
    Updated(String),
    Sampled,
}

/// A client that can sample (answering "from the client") and records what it hears.
struct Ear(mpsc::UnboundedSender<Heard>);

#[allow(deprecated)] // logging and sampling are what is relayed
impl ClientHandler for Ear {
    fn get_info(&self) -> ClientInfo {
        let mut capabilities = ClientCapabilities::default();
        capabilities.sampling = Some(Default::default());
        InitializeRequestParams::new(capabilities, Implementation::new("ear", "1"))
    }

    async fn create_message(
        &self,
        _params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let _ = self.0.send(Heard::Sampled);
        Ok(CreateMessageResult::new(
            SamplingMessage::assistant_text("from the client"),
            "test-model".into(),
        ))
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let text = params.data.as_str().unwrap_or_default().to_owned();
        let _ = self.0.send(Heard::Log(text));
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self
            .0
            .send(Heard::Progress(params.progress_token, params.progress));
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.0.send(Heard::Updated(params.uri));
    }
}

/// Alice may run every tool of `conf`.
async fn policy(server: &TestServer, blocked: &[&str]) {
    server
        .set_controls(pb::AutoRunControls {
            enabled: true,
            mcp_tool_allowlist: vec!["conf:*".into()],
            mcp_tool_blocklist: blocked.iter().map(|b| b.to_string()).collect(),
            ..Default::default()
        })
        .await;
}

fn config(server: &TestServer) -> proxy::ProxyConfig {
    proxy::ProxyConfig {
        toolgate: toolgate::grpc::client::ClientConfig {
            server: format!("http://{}", server.addr),
            token: Some("alice-token".into()),
            ..Default::default()
        },
        server_id: "conf".into(),
        upstream: upstream(),
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
    }
}

/// The proxy on a pipe (stdio) with the `Ear` client on the other end.
async fn connect(
    server: &TestServer,
) -> (
    rmcp::service::RunningService<RoleClient, Ear>,
    mpsc::UnboundedReceiver<Heard>,
) {
    let (client_io, proxy_io) = tokio::io::duplex(1 << 20);
    let (read, write) = tokio::io::split(proxy_io);
    tokio::spawn(proxy::run_stream(config(server), read, write));
    let (tx, rx) = mpsc::unbounded_channel();
    let client = tokio::time::timeout(DEADLINE, Ear(tx).serve(client_io))
        .await
        .expect("initialize in time")
        .expect("initialize");
    (client, rx)
}

/// Waits for the first thing heard that `pick` accepts.
async fn hear<T>(
    rx: &mut mpsc::UnboundedReceiver<Heard>,
    mut pick: impl FnMut(Heard) -> Option<T>,
) -> T {
    let found = async {
        while let Some(heard) = rx.recv().await {
            if let Some(t) = pick(heard) {
                return t;
            }
        }
        panic!("the client's session ended");
    };
    tokio::time::timeout(DEADLINE, found)
        .await
        .expect("heard in time")
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join(" ")
}

async fn call(peer: &Peer<RoleClient>, name: &str, args: serde_json::Value) -> CallToolResult {
    let params = CallToolRequestParams::new(name.to_owned())
        .with_arguments(args.as_object().cloned().unwrap_or_default());
    tokio::time::timeout(DEADLINE, peer.call_tool(params))
        .await
        .expect("tools/call in time")
        .expect("tools/call")
}

/// Every tool is listed once the upstream has started (the first list waits for it).
async fn ready(peer: &Peer<RoleClient>) {
    let tools = tokio::time::timeout(DEADLINE, peer.list_all_tools())
        .await
        .expect("tools/list in time")
        .expect("tools/list");
    assert!(tools.iter().any(|t| t.name == "test_slow"), "{tools:?}");
}

#[tokio::test]
async fn a_cancelled_call_is_cancelled_upstream() {
    if !python_has_mcp() {
        return;
    }
    let (server, _dir) = start().await;
    policy(&server, &[]).await;
    server.yolo("alice").await;
    let (client, mut heard) = connect(&server).await;
    let peer = client.peer().clone();
    ready(&peer).await;
    #[allow(deprecated)]
    peer.set_level(SetLevelRequestParams::new(LoggingLevel::Info))
        .await
        .expect("logging/setLevel passes through");

    let request = ClientRequest::CallToolRequest(CallToolRequest::new(CallToolRequestParams::new(
        "test_slow",
    )));
    let handle = peer
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await
        .expect("sent");
    hear(&mut heard, |h| {
        matches!(h, Heard::Log(ref t) if t == "slow started").then_some(())
    })
    .await;
    handle
        .cancel(Some("the user stopped it".into()))
        .await
        .expect("cancelled");
    // the upstream's handler saw the cancellation (it says so once cancelled)
    hear(&mut heard, |h| {
        matches!(h, Heard::Log(ref t) if t == "slow cancelled").then_some(())
    })
    .await;
    client.cancel().await.ok();
    server.stop().await;
}

#[tokio::test]
async fn progress_keeps_the_clients_token_and_meta_reaches_the_upstream() {
    if !python_has_mcp() {
        return;
    }
    let (server, _dir) = start().await;
    policy(&server, &[]).await;
    server.yolo("alice").await;
    let (client, mut heard) = connect(&server).await;
    let peer = client.peer().clone();
    ready(&peer).await;

    // rmcp's client gives each request its own progress token: the one to expect
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(CallToolRequestParams::new(
        "test_tool_with_progress",
    )));
    let handle = peer
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await
        .expect("sent");
    let token = handle.progress_token.clone();
    tokio::time::timeout(DEADLINE, handle.await_response())
        .await
        .expect("answered in time")
        .expect("answered");
    let mut seen = Vec::new();
    while seen.len() < 3 {
        seen.push(
            hear(&mut heard, |h| match h {
                Heard::Progress(t, p) => Some((t, p)),
                _ => None,
            })
            .await,
        );
    }
    assert!(
        seen.iter().all(|(t, _)| *t == token),
        "{seen:?} under {token:?}"
    );
    assert_eq!(
        seen.iter().map(|(_, p)| *p).collect::<Vec<_>>(),
        [0.0, 50.0, 100.0]
    );

    let mut meta = RequestMetaObject::new();
    meta.0.insert(
        "traceparent".into(),
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".into(),
    );
    meta.0.insert("com.example/tenant".into(), "blue".into());
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(CallToolRequestParams::new(
        "test_meta",
    )));
    let answer = peer
        .send_request_with_option(request, PeerRequestOptions::no_options().with_meta(meta))
        .await
        .expect("sent")
        .await_response()
        .await
        .expect("answered");
    let ServerResult::CallToolResult(result) = answer else {
        panic!("{answer:?}")
    };
    let upstream_saw: serde_json::Value = serde_json::from_str(&text(&result)).unwrap();
    assert_eq!(
        upstream_saw["traceparent"], "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        "{upstream_saw}"
    );
    assert_eq!(upstream_saw["com.example/tenant"], "blue", "{upstream_saw}");
    client.cancel().await.ok();
    server.stop().await;
}

#[tokio::test]
async fn resource_updates_reach_the_subscriber() {
    if !python_has_mcp() {
        return;
    }
    let (server, _dir) = start().await;
    policy(&server, &[]).await;
    server.yolo("alice").await;
    let (client, mut heard) = connect(&server).await;
    let peer = client.peer().clone();
    ready(&peer).await;
    #[allow(deprecated)]
    peer.subscribe(SubscribeRequestParams::new("test://watched-resource"))
        .await
        .expect("resources/subscribe passes through");
    let touched = call(&peer, "test_touch_watched", serde_json::json!({})).await;
    assert_eq!(text(&touched), "touched");
    let uri = hear(&mut heard, |h| match h {
        Heard::Updated(uri) => Some(uri),
        _ => None,
    })
    .await;
    assert_eq!(uri, "test://watched-resource");
    client.cancel().await.ok();
    server.stop().await;
}

#[tokio::test]
async fn sampling_reaches_the_client_until_the_team_refuses_it() {
    if !python_has_mcp() {
        return;
    }
    let (server, _dir) = start().await;
    policy(&server, &[]).await;
    server.yolo("alice").await;
    let (client, mut heard) = connect(&server).await;
    let peer = client.peer().clone();
    ready(&peer).await;
    let args = serde_json::json!({"prompt": "say hi"});
    let sampled = call(&peer, "test_sampling", args.clone()).await;
    assert_eq!(text(&sampled), "LLM response: from the client");
    hear(&mut heard, |h| matches!(h, Heard::Sampled).then_some(())).await;

    // the team refuses sampling by its pseudo-tool's entry
    policy(&server, &[&format!("conf:{}", proxy::SAMPLING)]).await;
    let refused = call(&peer, "test_sampling", args).await;
    let said = text(&refused);
    assert!(
        said.contains("Sampling not supported or error")
            && said.contains("toolgate denied conf:sampling/createMessage"),
        "{said}"
    );
    client.cancel().await.ok();
    // nothing more reached the client
    while let Ok(h) = heard.try_recv() {
        assert!(!matches!(h, Heard::Sampled), "sampled after the refusal");
    }
    server.stop().await;
}

#[tokio::test]
async fn a_foreign_host_or_origin_gets_403_even_with_a_token() {
    let (server, _dir) = start().await;
    let clients = proxy::ClientTokens::from_configs(vec![TokenConfig {
        groups: Vec::new(),
        name: "alice".into(),
        sha256: toolgate::auth::hash_token("alice-mcp-token"),
        role: toolgate::auth::Role::Member,
        team: Some(TEAM.into()),
        user: Some("alice".into()),
    }])
    .unwrap();
    let mut config = config(&server);
    config.who = None;
    config.clients = Some(clients);
    config.upstream = proxy::Target::Command(vec!["true".into()]);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let proxy = tokio::spawn(proxy::run_http(config, listener, async {
        let _ = stopped.await;
    }));
    let http = reqwest::Client::new();
    let post = |host: &str, origin: Option<&str>| {
        let mut req = http
            .post(format!("http://{addr}/mcp"))
            .header("host", host)
            .header("authorization", "Bearer alice-mcp-token")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
        if let Some(origin) = origin {
            req = req.header("origin", origin);
        }
        req.send()
    };
    let local = addr.to_string();
    // (Host, Origin, refused)
    let cases = [
        ("evil.example.com", Some("http://evil.example.com"), true),
        ("evil.example.com", None, true),
        (local.as_str(), Some("http://evil.example.com"), true),
        (local.as_str(), Some("null"), true),
        (local.as_str(), None, false),
        (local.as_str(), Some(&format!("http://{local}")[..]), false),
    ];
    for (host, origin, refused) in cases {
        let answer = tokio::time::timeout(DEADLINE, post(host, origin))
            .await
            .expect("answered in time")
            .expect("answered");
        let status = answer.status();
        assert_eq!(
            status == reqwest::StatusCode::FORBIDDEN,
            refused,
            "{host} {origin:?}: {status} {}",
            answer.text().await.unwrap_or_default()
        );
    }
    let _ = stop.send(());
    let _ = tokio::time::timeout(DEADLINE, proxy).await;

    // without tokens, only on a loopback address
    let mut config = self::config(&server);
    config.upstream = proxy::Target::Command(vec!["true".into()]);
    let wide = tokio::net::TcpListener::bind("0.0.0.0:0").await.unwrap();
    let refused = proxy::run_http(config, wide, async {}).await.unwrap_err();
    assert!(refused.to_string().contains("loopback"), "{refused}");
    server.stop().await;
}

/// Counts the tool list changes announced.
struct Announced(mpsc::UnboundedSender<()>);

impl ClientHandler for Announced {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.0.send(());
    }
}

async fn tool_names(peer: &Peer<RoleClient>) -> Vec<String> {
    let tools = tokio::time::timeout(DEADLINE, peer.list_all_tools())
        .await
        .expect("tools/list in time")
        .expect("tools/list");
    tools.into_iter().map(|t| t.name.to_string()).collect()
}

/// Waits, list change by list change, until the list is `want`.
async fn listed_as(
    peer: &Peer<RoleClient>,
    changes: &mut mpsc::UnboundedReceiver<()>,
    want: &[&str],
) {
    let settled = async {
        loop {
            if tool_names(peer).await == want {
                return;
            }
            changes.recv().await.expect("client alive");
        }
    };
    tokio::time::timeout(DEADLINE, settled)
        .await
        .unwrap_or_else(|_| panic!("the list never became {want:?}"));
}

fn toolgate_cli(args: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(args)
        .output()
        .expect("run toolgate");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{args:?}: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

type PinClient = rmcp::service::RunningService<RoleClient, Announced>;

/// Alice's proxy, pinning as `pins` says, in front of the lying upstream: its tools
/// are pinned and run, then it rewrites `weather`'s description, which the proxy
/// hides and whose call asks. The client and its list-change notices.
async fn rug_pulled(
    server: &TestServer,
    pins: proxy::Pinning,
) -> (PinClient, mpsc::UnboundedReceiver<()>) {
    server
        .set_controls(pb::AutoRunControls {
            enabled: true,
            mcp_tool_allowlist: vec!["pin:*".into()],
            ..Default::default()
        })
        .await;
    server.yolo("alice").await;
    let mut config = config(server);
    config.server_id = "pin".into();
    config.pins = Some(pins);
    config.upstream = proxy::Target::Command(vec![
        "python3".into(),
        format!(
            "{}/tests/python/pin_upstream.py",
            env!("CARGO_MANIFEST_DIR")
        ),
    ]);
    let (client_io, proxy_io) = tokio::io::duplex(1 << 20);
    let (read, write) = tokio::io::split(proxy_io);
    tokio::spawn(proxy::run_stream(config, read, write));
    let (tx, mut changes) = mpsc::unbounded_channel();
    let client = tokio::time::timeout(DEADLINE, Announced(tx).serve(client_io))
        .await
        .expect("initialize in time")
        .expect("initialize");
    let peer = client.peer().clone();

    // first seen: pinned, shown, run
    assert_eq!(tool_names(&peer).await, ["flip", "weather"]);
    assert_eq!(text(&call(&peer, "weather", oslo()).await), "sunny in Oslo");

    // the upstream rewrites the description: hidden, and its call asks
    assert_eq!(
        text(&call(&peer, "flip", serde_json::json!({})).await),
        "flipped"
    );
    listed_as(&peer, &mut changes, &["flip"]).await;
    let asked = call(&peer, "weather", oslo()).await;
    assert_eq!(asked.is_error, Some(true));
    let said = text(&asked);
    assert!(
        said.contains("pin:weather needs approval (TOOL_CHANGED)"),
        "{said}"
    );
    (client, changes)
}

fn oslo() -> serde_json::Value {
    serde_json::json!({"city": "Oslo"})
}

/// Once re-pinned, the tool is listed again and runs.
async fn runs_again(client: &PinClient, changes: &mut mpsc::UnboundedReceiver<()>) {
    let peer = client.peer();
    listed_as(peer, changes, &["flip", "weather"]).await;
    let ran = call(peer, "weather", oslo()).await;
    assert_eq!(ran.is_error, Some(false), "{}", text(&ran));
}

#[tokio::test]
async fn a_tool_changed_under_the_proxy_is_hidden_and_asks_until_repinned() {
    if !python_has_mcp() {
        return;
    }
    let (server, _dir) = start().await;
    let pins_dir = tempfile::tempdir().unwrap();
    let pin_file = pins_dir.path().join("pins.json");
    let (client, mut changes) = rug_pulled(&server, proxy::Pinning::File(pin_file.clone())).await;

    // the admin sees the change, then accepts it
    let pins = pin_file.to_str().unwrap();
    let status = toolgate_cli(&[
        "proxy",
        "--server-id",
        "pin",
        "--pins",
        pins,
        "--pins-status",
    ]);
    assert!(
        status.contains("weather changed since it was pinned"),
        "{status}"
    );
    assert_shows_the_weather_diff(&status);
    let repinned = toolgate_cli(&[
        "proxy",
        "--server-id",
        "pin",
        "--pins",
        pins,
        "--repin",
        "weather",
    ]);
    assert!(repinned.contains("re-pinned acme pin"), "{repinned}");
    runs_again(&client, &mut changes).await;
    client.cancel().await.ok();
    server.stop().await;
}

/// `text` shows the rug pull's diff: the poisoned description added, the honest one
/// removed.
fn assert_shows_the_weather_diff(text: &str) {
    assert!(
        text.lines()
            .any(|l| l.trim_start().starts_with("+ ") && l.contains("<IMPORTANT>")),
        "{text}"
    );
    assert!(
        text.lines().any(
            |l| l.trim_start().starts_with("- ") && l.contains("Gets the weather of a city.\"")
        ),
        "{text}"
    );
}

/// The same rug pull with the pins in the server's store: the admin reviews the
/// change with its diff and flags (`toolgate pins list`), accepts it (`toolgate pins
/// accept`), and the proxy shows the tool again on the server's word.
// the CLI runs as a blocking child process against this process's server: a second
// worker keeps the server answering meanwhile
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_pinned_in_the_store_is_held_until_an_admin_accepts_the_change() {
    if !python_has_mcp() {
        return;
    }
    let (server, _dir) = start().await;
    let (client, mut changes) = rug_pulled(&server, proxy::Pinning::Server).await;
    let url = format!("http://{}", server.addr);
    let admin = |args: &[&str]| {
        let mut all = vec!["--server", url.as_str(), "--token", "admin-token"];
        all.extend_from_slice(args);
        toolgate_cli(&all)
    };
    let listed = admin(&[
        "pins",
        "list",
        "--team",
        TEAM,
        "--server-id",
        "pin",
        "--changed",
    ]);
    assert!(listed.contains("pin:weather  CHANGED"), "{listed}");
    assert!(!listed.contains("pin:flip"), "{listed}");
    assert_shows_the_weather_diff(&listed);
    for kind in ["hidden-tag", "sensitive-files"] {
        assert!(
            listed.contains(&format!("flagged: {kind} in description")),
            "{listed}"
        );
    }
    // a member may not accept
    let refused = std::process::Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["--server", &url, "--token", "alice-token"])
        .args([
            "pins",
            "accept",
            "--team",
            TEAM,
            "--server-id",
            "pin",
            "weather",
        ])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let accepted = admin(&[
        "pins",
        "accept",
        "--team",
        TEAM,
        "--server-id",
        "pin",
        "weather",
    ]);
    assert!(accepted.contains("accepted pin:weather"), "{accepted}");
    runs_again(&client, &mut changes).await;
    client.cancel().await.ok();
    server.stop().await;
}

/// Over HTTP each MCP session runs its own upstream process: past the proxy's
/// `--max-upstream-processes`, a session's call gets an error naming the limit,
/// while the sessions within it run.
#[tokio::test]
async fn upstream_processes_past_the_cap_are_refused_with_the_reason() {
    use rmcp::transport::StreamableHttpClientTransport;
    if !python_has_mcp() {
        return;
    }
    let (server, _dir) = start().await;
    policy(&server, &[]).await;
    server.yolo("alice").await;
    let mut config = config(&server);
    config.max_upstream_processes = 1;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let proxy = tokio::spawn(proxy::run_http(config, listener, async {
        let _ = stopped.await;
    }));
    let open = || async {
        let transport = StreamableHttpClientTransport::from_config(
            rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
                url.as_str(),
            ),
        );
        let (tx, _) = mpsc::unbounded_channel();
        tokio::time::timeout(DEADLINE, Announced(tx).serve(transport))
            .await
            .expect("initialize in time")
            .expect("initialize")
    };
    let first = open().await;
    ready(first.peer()).await;
    let ran = call(first.peer(), "test_simple_text", serde_json::json!({})).await;
    assert_eq!(ran.is_error, Some(false), "{}", text(&ran));

    let second = open().await;
    let params = CallToolRequestParams::new("test_simple_text".to_owned());
    let refused = tokio::time::timeout(DEADLINE, second.peer().call_tool(params))
        .await
        .expect("answered in time");
    let said = match refused {
        Ok(result) => text(&result),
        Err(e) => e.to_string(),
    };
    assert!(
        said.contains("--max-upstream-processes") && said.contains("runs 1 upstream"),
        "{said}"
    );
    // the first session still runs
    let ran = call(first.peer(), "test_simple_text", serde_json::json!({})).await;
    assert_eq!(ran.is_error, Some(false), "{}", text(&ran));
    first.cancel().await.ok();
    second.cancel().await.ok();
    let _ = stop.send(());
    let _ = tokio::time::timeout(DEADLINE, proxy).await;
    server.stop().await;
}
