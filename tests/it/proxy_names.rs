//! `toolgate proxy` in front of a lying upstream (tests/python/lying_upstream.py, the
//! standard library only): tool names seed 001 refuses, or that hold `/`, a control,
//! invisible or bidirectional character, surrounding spaces or Latin mixed with
//! Cyrillic letters, are hidden from `tools/list` and refused on `tools/call`, though
//! `demo:get_*` would match them; honest names pass, a 110 KB description is cut to
//! the proxy's limit, and a call's `action` argument is decided as the seed 000
//! `tool.action` it names.

use crate::support::*;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use std::time::Duration;
use toolgate::proto::v1 as pb;
use toolgate::proxy;

const DEADLINE: Duration = Duration::from_secs(30);

#[tokio::test]
async fn a_lying_upstreams_names_are_hidden_and_refused() {
    let (server, _dir) = start().await;
    server
        .set_controls(pb::AutoRunControls {
            enabled: true,
            mcp_tool_allowlist: vec!["demo:get_*".into(), "demo:interact".into()],
            ..Default::default()
        })
        .await;
    server.yolo("alice").await;
    let config = proxy::ProxyConfig {
        toolgate: toolgate::grpc::client::ClientConfig {
            server: format!("http://{}", server.addr),
            token: Some("alice-token".into()),
            ..Default::default()
        },
        server_id: "demo".into(),
        upstream: proxy::Target::Command(vec![
            "python3".into(),
            format!(
                "{}/tests/python/lying_upstream.py",
                env!("CARGO_MANIFEST_DIR")
            ),
        ]),
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
    let client = tokio::time::timeout(DEADLINE, ().serve(client_io))
        .await
        .expect("initialize in time")
        .expect("initialize");
    let peer = client.peer().clone();
    // the first listing may come before the upstream's: wait for it, bounded
    let tools = tokio::time::timeout(DEADLINE, async {
        loop {
            let tools = peer.list_tools(None).await.expect("tools/list").tools;
            if !tools.is_empty() {
                return tools;
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the upstream's tools listed in time");
    let names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
    assert_eq!(names, ["get_issue", "get_long", "interact"]);
    let long = tools[1].description.as_deref().unwrap_or_default();
    assert!(
        long.len() < proxy::DEFAULT_MAX_DESCRIPTION_BYTES + 200,
        "{} bytes passed on",
        long.len()
    );
    assert!(long.contains("cut by toolgate"), "{long}");
    assert_eq!(tools[0].description.as_deref(), Some("a tool"));

    for name in [
        "get_a/../delete_repo",
        "get_b ",
        " get_c",
        "get_d\0",
        "get_e\nx",
        "get:f",
        "get_\u{200b}hidden",
        "get_\u{202e}exe.txt",
        "get_\u{2066}x\u{2069}",
        "get_d\u{435}lete",
    ] {
        let refused = tokio::time::timeout(
            DEADLINE,
            peer.call_tool(CallToolRequestParams::new(name.to_owned())),
        )
        .await
        .expect("tools/call in time");
        let e = refused.expect_err(name).to_string();
        assert!(e.contains("Unknown tool"), "{name:?}: {e}");
    }
    let ran = tokio::time::timeout(
        DEADLINE,
        peer.call_tool(CallToolRequestParams::new("get_issue".to_owned())),
    )
    .await
    .expect("tools/call in time")
    .expect("get_issue runs");
    assert_eq!(ran.is_error, Some(false));
    client.cancel().await.ok();
    server.stop().await;
}
