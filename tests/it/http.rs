//! Every RPC over HTTP on the gRPC port: the Connect protocol's JSON (unary and
//! streams), gRPC-Web, the same auth matrix as gRPC, the hostile inputs, CORS, the
//! security headers, and the README's curl examples run as written.

use crate::support::*;
use serde_json::{Value, json};
use toolgate::proto::v1 as pb;

/// An HTTP answer: status, headers, body.
struct Answer {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: bytes::Bytes,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(20))
        .build()
        .unwrap()
}

/// POSTs `body` to `path` with `content_type` and, when given, the bearer token.
async fn post(
    server: &TestServer,
    path: &str,
    token: Option<&str>,
    content_type: &str,
    body: impl Into<reqwest::Body>,
) -> Answer {
    let mut req = client()
        .post(format!("http://{}{path}", server.addr))
        .header("content-type", content_type)
        .body(body);
    if let Some(token) = token {
        req = req.bearer_auth(token);
    }
    let answer = req.send().await.expect("an HTTP answer");
    Answer {
        status: answer.status().as_u16(),
        headers: answer.headers().clone(),
        body: answer.bytes().await.unwrap(),
    }
}

/// A unary Connect call with a JSON body.
async fn call_json(server: &TestServer, method: &str, token: &str, body: Value) -> Answer {
    post(
        server,
        &format!("/toolgate.v1.{method}"),
        (!token.is_empty()).then_some(token),
        "application/json",
        body.to_string(),
    )
    .await
}

#[tokio::test]
async fn unary_json_calls_answer_json_with_the_grpc_auth() {
    let (server, _dir) = start().await;
    server
        .set_controls(pb::AutoRunControls {
            enabled: true,
            mcp_tool_allowlist: vec!["github:create_issue".into()],
            ..Default::default()
        })
        .await;
    server.yolo("alice").await;
    let answer = call_json(
        &server,
        "PolicyService/Evaluate",
        "alice-token",
        json!({
            "teamId": TEAM,
            "userId": "alice",
            "call": {"mcp": {"server": "github", "tool": "create_issue"}},
        }),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.json());
    assert_eq!(answer.header("content-type"), Some("application/json"));
    let decision = answer.json();
    assert_eq!(decision["outcome"], "OUTCOME_ALLOW", "{decision}");

    // proto field names are read too, as protobuf's JSON mapping says
    let answer = call_json(
        &server,
        "AdminService/GetTeamAdminSettings",
        "admin-token",
        json!({"team_id": TEAM}),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.json());
    let settings = answer.json();
    assert_eq!(settings["teamId"], TEAM);
    assert_eq!(
        settings["autoRunControls"]["mcpToolAllowlist"],
        json!(["github:create_issue"])
    );

    // refused as on gRPC, as Connect errors
    let answer = call_json(
        &server,
        "AdminService/GetTeamAdminSettings",
        "",
        json!({"teamId": TEAM}),
    )
    .await;
    assert_eq!(answer.status, 401);
    assert_eq!(answer.json()["code"], "unauthenticated");
    let answer = call_json(
        &server,
        "AdminService/GetTeamAdminSettings",
        "other-admin-token",
        json!({"teamId": TEAM}),
    )
    .await;
    assert_eq!(answer.status, 403);
    assert_eq!(answer.json()["code"], "permission_denied");
    server.stop().await;
}
