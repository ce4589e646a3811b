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
    let auth = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![("content-type", content_type)];
    if let Some(auth) = &auth {
        headers.push(("authorization", auth));
    }
    send(server, reqwest::Method::POST, path, &headers, body).await
}

/// Any request to the test server, with exactly these headers.
async fn send(
    server: &TestServer,
    method: reqwest::Method,
    path: &str,
    headers: &[(&str, &str)],
    body: impl Into<reqwest::Body>,
) -> Answer {
    let mut req = client()
        .request(method, format!("http://{}{path}", server.addr))
        .body(body);
    for (name, value) in headers {
        req = req.header(*name, *value);
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

/// A Connect error code's gRPC code, so the gRPC matrix's table reads both.
fn code_of(name: &str) -> tonic::Code {
    use tonic::Code;
    match name {
        "canceled" => Code::Cancelled,
        "invalid_argument" => Code::InvalidArgument,
        "deadline_exceeded" => Code::DeadlineExceeded,
        "not_found" => Code::NotFound,
        "already_exists" => Code::AlreadyExists,
        "permission_denied" => Code::PermissionDenied,
        "resource_exhausted" => Code::ResourceExhausted,
        "failed_precondition" => Code::FailedPrecondition,
        "aborted" => Code::Aborted,
        "out_of_range" => Code::OutOfRange,
        "unimplemented" => Code::Unimplemented,
        "internal" => Code::Internal,
        "unavailable" => Code::Unavailable,
        "data_loss" => Code::DataLoss,
        "unauthenticated" => Code::Unauthenticated,
        _ => Code::Unknown,
    }
}

/// One RPC of the role matrix as Connect JSON: its path and body.
fn matrix_request(rpc: &str) -> (&'static str, Value) {
    let who = json!({"teamId": TEAM, "userId": "alice"});
    let with = |extra: Value| {
        let mut body = who.clone();
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        body
    };
    let call = json!({"mcp": {"server": "github", "tool": "create_issue"}});
    match rpc {
        "GetTeamAdminSettings" => ("AdminService", json!({"teamId": TEAM})),
        "UpdateTeamAdminSettings" => (
            "AdminService",
            json!({"teamId": TEAM, "autoRunControls": {}}),
        ),
        "ListAuditEvents" => ("AdminService", json!({"teamId": TEAM})),
        "GetUserSettings" => ("UserSettingsService", who),
        "UpdateUserSettings" => ("UserSettingsService", json!({"settings": who})),
        "AddToAllowlist" => (
            "UserSettingsService",
            with(json!({"server": "github", "tool": "create_issue"})),
        ),
        "RemoveFromAllowlist" => (
            "UserSettingsService",
            with(json!({"entry": "github:create_issue"})),
        ),
        "Evaluate" => ("PolicyService", with(json!({"call": call}))),
        "EvaluateBatch" => ("PolicyService", with(json!({"calls": [call]}))),
        "FilterTools" => (
            "PolicyService",
            with(json!({"server": "github", "toolsJson": "[]"})),
        ),
        "GetEffectivePolicy" | "WatchPolicy" => ("PolicyService", who),
        "GetServerConfig" => ("ServerInfoService", json!({})),
        other => panic!("no HTTP request for {other}: add it here"),
    }
}

/// A Connect stream's envelopes as they arrive, each waited for with a deadline.
struct Envelopes {
    response: reqwest::Response,
    buf: Vec<u8>,
}

impl Envelopes {
    async fn open(server: &TestServer, path: &str, token: &str, body: &Value) -> Self {
        let payload = body.to_string();
        let mut enveloped = vec![0u8];
        enveloped.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        enveloped.extend_from_slice(payload.as_bytes());
        let mut req = reqwest::Client::new()
            .post(format!("http://{}{path}", server.addr))
            .header("content-type", "application/connect+json")
            .body(enveloped);
        if !token.is_empty() {
            req = req.bearer_auth(token);
        }
        let response = req.send().await.expect("an HTTP answer");
        assert_eq!(response.status(), 200, "Connect streams answer 200");
        assert_eq!(
            response.headers()["content-type"],
            "application/connect+json"
        );
        Self {
            response,
            buf: Vec::new(),
        }
    }

    /// The next envelope: (flags, JSON).
    async fn next(&mut self) -> (u8, Value) {
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            if self.buf.len() >= 5 {
                let len = u32::from_be_bytes(self.buf[1..5].try_into().unwrap()) as usize;
                if self.buf.len() >= 5 + len {
                    let flags = self.buf[0];
                    let json = serde_json::from_slice(&self.buf[5..5 + len]).unwrap();
                    self.buf.drain(..5 + len);
                    return (flags, json);
                }
            }
            let chunk = tokio::time::timeout_at(deadline, self.response.chunk())
                .await
                .expect("the next envelope within 20 s")
                .expect("the stream reads")
                .expect("the stream ended without an end-of-stream envelope");
            self.buf.extend_from_slice(&chunk);
        }
    }
}

/// The code of one call of the matrix over HTTP.
async fn call_over_http(server: &TestServer, token: &str, rpc: &str) -> tonic::Code {
    let (service, body) = matrix_request(rpc);
    let path = format!("/toolgate.v1.{service}/{rpc}");
    if rpc == "WatchPolicy" {
        let mut stream = Envelopes::open(server, &path, token, &body).await;
        return match stream.next().await {
            (0, _) => tonic::Code::Ok,
            (2, end) => code_of(end["error"]["code"].as_str().unwrap_or("")),
            (flags, _) => panic!("unexpected envelope flags {flags}"),
        };
    }
    let answer = post(
        server,
        &path,
        (!token.is_empty()).then_some(token),
        "application/json",
        body.to_string(),
    )
    .await;
    if answer.status == 200 {
        return tonic::Code::Ok;
    }
    let code = code_of(answer.json()["code"].as_str().unwrap_or(""));
    // the HTTP status is the one Connect gives the code
    let want = match code {
        tonic::Code::Unauthenticated => 401,
        tonic::Code::PermissionDenied => 403,
        _ => answer.status,
    };
    assert_eq!(answer.status, want, "{rpc} as {token:?}");
    code
}

/// The gRPC role matrix (`server.rs`), every cell, over HTTP JSON.
#[tokio::test]
async fn role_matrix_over_http() {
    let (server, _dir) = start().await;
    for (rpc, codes) in crate::server::ROLE_MATRIX {
        for (token, want) in crate::server::CALLERS.iter().zip(codes) {
            let got = call_over_http(&server, token, rpc).await;
            assert_eq!(got, *want, "{rpc} as {token:?} over HTTP");
        }
    }
    server.stop().await;
}

/// `WatchPolicy` over Connect: the snapshot first, then the change a write makes.
#[tokio::test]
async fn watch_policy_streams_a_snapshot_then_changes() {
    let (server, _dir) = start().await;
    let mut stream = Envelopes::open(
        &server,
        "/toolgate.v1.PolicyService/WatchPolicy",
        "alice-token",
        &json!({"teamId": TEAM, "userId": "alice"}),
    )
    .await;
    let (flags, first) = stream.next().await;
    assert_eq!(flags, 0);
    assert!(first.get("snapshot").is_some(), "{first}");
    let revision = server
        .set_controls(pb::AutoRunControls {
            enabled: true,
            mcp_tool_allowlist: vec!["github:*".into()],
            ..Default::default()
        })
        .await;
    // heartbeats may come first
    let change = loop {
        let (flags, event) = stream.next().await;
        assert_eq!(flags, 0, "{event}");
        if event.get("heartbeat").is_none() {
            break event;
        }
    };
    assert_eq!(change["revision"], revision.to_string(), "{change}");
    assert_eq!(
        change["adminSettings"]["autoRunControls"]["mcpToolAllowlist"],
        json!(["github:*"]),
        "{change}"
    );
    drop(stream);
    server.stop().await;
}

/// `data` in a gRPC(-Web) frame.
fn frame(flags: u8, data: &[u8]) -> Vec<u8> {
    let mut out = vec![flags];
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    out.extend_from_slice(data);
    out
}

/// A gRPC-Web answer's message and trailers.
fn read_grpc_web(mut body: &[u8]) -> (Vec<u8>, String) {
    let (mut message, mut trailers) = (Vec::new(), String::new());
    while body.len() >= 5 {
        let len = u32::from_be_bytes(body[1..5].try_into().unwrap()) as usize;
        let data = &body[5..5 + len];
        if body[0] & 0x80 != 0 {
            trailers = String::from_utf8(data.to_vec()).unwrap();
        } else {
            message = data.to_vec();
        }
        body = &body[5 + len..];
    }
    (message, trailers)
}

/// gRPC-Web, binary and text, as a browser's generated client sends it.
#[tokio::test]
async fn grpc_web_calls_work_binary_and_text() {
    use base64::Engine as _;
    use prost::Message as _;
    let (server, _dir) = start().await;
    let request = pb::GetTeamAdminSettingsRequest {
        team_id: TEAM.into(),
    }
    .encode_to_vec();
    let path = "/toolgate.v1.AdminService/GetTeamAdminSettings";
    let answer = post(
        &server,
        path,
        Some("admin-token"),
        "application/grpc-web+proto",
        frame(0, &request),
    )
    .await;
    assert_eq!(answer.status, 200);
    let (message, trailers) = read_grpc_web(&answer.body);
    assert!(trailers.contains("grpc-status:0"), "{trailers}");
    let settings = pb::TeamAdminSettings::decode(&message[..]).unwrap();
    assert_eq!(settings.team_id, TEAM);
    assert_eq!(answer.header("x-content-type-options"), Some("nosniff"));

    let b64 = base64::engine::general_purpose::STANDARD;
    let answer = send(
        &server,
        reqwest::Method::POST,
        path,
        &[
            ("content-type", "application/grpc-web-text"),
            ("accept", "application/grpc-web-text"),
            ("authorization", "Bearer admin-token"),
        ],
        b64.encode(frame(0, &request)),
    )
    .await;
    assert_eq!(answer.status, 200);
    // each chunk is base64 of its own, padding included
    let mut decoded = Vec::new();
    let mut rest = &answer.body[..];
    while !rest.is_empty() {
        let end = match rest.iter().position(|&b| b == b'=') {
            Some(i) => i + rest[i..].iter().take_while(|&&b| b == b'=').count(),
            None => rest.len(),
        };
        decoded.extend(b64.decode(&rest[..end]).unwrap());
        rest = &rest[end..];
    }
    let (message, trailers) = read_grpc_web(&decoded);
    assert!(trailers.contains("grpc-status:0"), "{trailers}");
    assert_eq!(
        pb::TeamAdminSettings::decode(&message[..]).unwrap().team_id,
        TEAM
    );

    // refused as on gRPC
    let answer = post(
        &server,
        path,
        Some("other-admin-token"),
        "application/grpc-web+proto",
        frame(0, &request),
    )
    .await;
    let status = answer
        .header("grpc-status")
        .map(str::to_owned)
        .unwrap_or_else(|| read_grpc_web(&answer.body).1);
    assert!(
        status == "7" || status.contains("grpc-status:7"),
        "permission denied: {status}"
    );
    server.stop().await;
}
