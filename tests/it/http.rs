//! Every RPC over HTTP on the gRPC port: the Connect protocol's JSON (unary and
//! streams), gRPC-Web, the same auth matrix as gRPC, the hostile inputs, CORS, the
//! security headers, and docs/api.md's curl examples run as written.

use crate::support::*;
use serde_json::{Value, json};
use toolgate::proto::v1 as pb;

/// An HTTP answer: status, headers, body.
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) headers: reqwest::header::HeaderMap,
    pub(crate) body: bytes::Bytes,
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
pub(crate) async fn send(
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
    let decision = &answer.json()["decision"];
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
    let settings = &answer.json()["settings"];
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
        "ValidateTeamAdminSettings" => (
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
            with(json!({"server": "github", "tools": []})),
        ),
        "GetEffectivePolicy" | "WatchPolicy" => ("PolicyService", who),
        "ReportTampering" => (
            "PolicyService",
            with(json!({"file": "MANAGED_FILE_CODEX_REQUIREMENTS",
                "path": "/etc/codex/requirements.toml", "restored": true})),
        ),
        "GetServerConfig" | "GetSignIn" => ("ServerInfoService", json!({})),
        "GetPrincipal" => ("PrincipalService", json!({})),
        "ListSignIns" => ("PrincipalService", json!({"teamId": TEAM})),
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
    let settings = pb::GetTeamAdminSettingsResponse::decode(&message[..])
        .unwrap()
        .settings
        .unwrap();
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
    let settings = pb::GetTeamAdminSettingsResponse::decode(&message[..])
        .unwrap()
        .settings
        .unwrap();
    assert_eq!(settings.team_id, TEAM);

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

/// The headers every HTTP answer carries, whatever it says.
fn assert_secure(answer: &Answer, case: &str) {
    let csp = answer.header("content-security-policy").unwrap_or("");
    assert!(csp.contains("default-src 'none'"), "{case}: csp {csp:?}");
    assert_eq!(
        answer.header("x-content-type-options"),
        Some("nosniff"),
        "{case}"
    );
    assert_eq!(
        answer.header("referrer-policy"),
        Some("no-referrer"),
        "{case}"
    );
    assert_eq!(answer.header("cache-control"), Some("no-store"), "{case}");
}

/// A hostile request: (case, method, path, headers, body, HTTP status, Connect code,
/// what the message says).
type Hostile<'a> = (
    &'a str,
    reqwest::Method,
    &'a str,
    Vec<(&'a str, &'a str)>,
    String,
    u16,
    &'a str,
    &'a str,
);

/// Hostile and malformed requests: each refused with the status, the Connect code
/// and a message naming the problem, before any service sees it.
#[tokio::test]
async fn hostile_requests_are_refused_with_their_reason() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path());
    config.limits.max_request_bytes = 64 * 1024;
    config.http.cors_allowed_origins = vec!["https://console.example.com".into()];
    let server = TestServer::start(config).await;
    let evaluate = "/toolgate.v1.PolicyService/Evaluate";
    let settings = "/toolgate.v1.AdminService/GetTeamAdminSettings";
    let team = json!({"teamId": TEAM}).to_string();
    let big = format!(r#"{{"teamId":"{}"}}"#, "a".repeat(100 * 1024));
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let json = "application/json";
    let bearer = "Bearer admin-token";
    use reqwest::Method;
    let table: Vec<Hostile> = vec![
        (
            "oversize body",
            Method::POST,
            settings,
            vec![("content-type", json), ("authorization", bearer)],
            big.clone(),
            413,
            "resource_exhausted",
            "limits.max_request_bytes (65536 bytes)",
        ),
        (
            "deep JSON",
            Method::POST,
            evaluate,
            vec![("content-type", json), ("authorization", bearer)],
            deep,
            400,
            "invalid_argument",
            "nests deeper than 32 levels",
        ),
        (
            "not JSON at all",
            Method::POST,
            settings,
            vec![("content-type", json), ("authorization", bearer)],
            "{teamId: acme".into(),
            400,
            "invalid_argument",
            "body: ",
        ),
        (
            "unknown field",
            Method::POST,
            settings,
            vec![("content-type", json), ("authorization", bearer)],
            r#"{"teamId":"acme","team":"x"}"#.into(),
            400,
            "invalid_argument",
            "team: no such field in toolgate.v1.GetTeamAdminSettingsRequest",
        ),
        (
            "a field of the wrong type, inside",
            Method::POST,
            evaluate,
            vec![("content-type", json), ("authorization", bearer)],
            r#"{"teamId":"acme","userId":"alice","call":{"mcp":{"tool":["x"]}}}"#.into(),
            400,
            "invalid_argument",
            "call.mcp.tool: invalid type",
        ),
        (
            "wrong content type",
            Method::POST,
            settings,
            vec![("content-type", "text/plain"), ("authorization", bearer)],
            team.clone(),
            415,
            "invalid_argument",
            "send application/json",
        ),
        (
            "no content type",
            Method::POST,
            settings,
            vec![("authorization", bearer)],
            team.clone(),
            415,
            "invalid_argument",
            "content-type \"\" is not taken",
        ),
        (
            "a stream's content type on a unary method",
            Method::POST,
            settings,
            vec![
                ("content-type", "application/connect+json"),
                ("authorization", bearer),
            ],
            team.clone(),
            415,
            "invalid_argument",
            "send application/json",
        ),
        (
            "compressed body",
            Method::POST,
            settings,
            vec![
                ("content-type", json),
                ("content-encoding", "gzip"),
                ("authorization", bearer),
            ],
            team.clone(),
            415,
            "invalid_argument",
            "send the body uncompressed",
        ),
        (
            "unknown method",
            Method::POST,
            "/toolgate.v1.AdminService/DropAllTeams",
            vec![("content-type", json), ("authorization", bearer)],
            team.clone(),
            404,
            "unimplemented",
            "no method /toolgate.v1.AdminService/DropAllTeams",
        ),
        (
            "unknown service",
            Method::POST,
            "/toolgate.v9.Nothing/Here",
            vec![("content-type", json), ("authorization", bearer)],
            team.clone(),
            404,
            "unimplemented",
            "no method",
        ),
        (
            "the root",
            Method::GET,
            "/",
            vec![],
            String::new(),
            404,
            "unimplemented",
            "no method /",
        ),
        (
            "GET on a method",
            Method::GET,
            settings,
            vec![("authorization", bearer)],
            String::new(),
            405,
            "unimplemented",
            "call /toolgate.v1.AdminService/GetTeamAdminSettings with POST",
        ),
        (
            "token in the query string",
            Method::POST,
            "/toolgate.v1.AdminService/GetTeamAdminSettings?access_token=admin-token",
            vec![("content-type", json)],
            team.clone(),
            400,
            "invalid_argument",
            "token in the Authorization header",
        ),
        (
            "token in the query string of a gRPC-Web call",
            Method::POST,
            "/toolgate.v1.AdminService/GetTeamAdminSettings?token=admin-token",
            vec![("content-type", "application/grpc-web+proto")],
            String::new(),
            400,
            "invalid_argument",
            "token in the Authorization header",
        ),
        (
            "gRPC over HTTP/1.1 (only a page's fetch sends that)",
            Method::POST,
            settings,
            vec![
                ("content-type", "application/grpc"),
                ("authorization", bearer),
            ],
            String::new(),
            400,
            "invalid_argument",
            "gRPC needs HTTP/2",
        ),
        (
            "a cookie is not a credential",
            Method::POST,
            settings,
            vec![
                ("content-type", json),
                ("cookie", "authorization=Bearer admin-token"),
            ],
            team.clone(),
            401,
            "unauthenticated",
            "",
        ),
        (
            "a token not in the Bearer form",
            Method::POST,
            settings,
            vec![("content-type", json), ("authorization", "admin-token")],
            team.clone(),
            401,
            "unauthenticated",
            "",
        ),
        (
            "a call from another origin's page",
            Method::POST,
            settings,
            vec![
                ("content-type", json),
                ("authorization", bearer),
                ("origin", "https://evil.example"),
            ],
            team.clone(),
            403,
            "permission_denied",
            "add it to http.cors_allowed_origins",
        ),
        (
            "a bad timeout",
            Method::POST,
            settings,
            vec![
                ("content-type", json),
                ("authorization", bearer),
                ("connect-timeout-ms", "soon"),
            ],
            team.clone(),
            400,
            "invalid_argument",
            "connect-timeout-ms",
        ),
    ];
    for (case, method, path, headers, body, status, code, says) in table {
        let answer = send(&server, method, path, &headers, body).await;
        assert_eq!(answer.status, status, "{case}: {:?}", answer.body);
        let error = answer.json();
        assert_eq!(error["code"], code, "{case}: {error}");
        let message = error["message"].as_str().unwrap_or("");
        assert!(message.contains(says), "{case}: {message}");
        assert_secure(&answer, case);
        assert!(
            answer.header("access-control-allow-origin").is_none(),
            "{case}"
        );
    }

    // a bad entry: the field violations readable in the details
    let answer = call_json(
        &server,
        "AdminService/UpdateTeamAdminSettings",
        "admin-token",
        json!({"teamId": TEAM, "autoRunControls": {"mcpToolAllowlist": ["no colon"]}}),
    )
    .await;
    assert_eq!(answer.status, 400);
    let error = answer.json();
    assert_eq!(
        error["details"][0]["type"], "google.rpc.BadRequest",
        "{error}"
    );
    let violation = &error["details"][0]["debug"]["fieldViolations"][0];
    assert!(
        violation["field"]
            .as_str()
            .is_some_and(|f| f.contains("mcp_tool_allowlist")),
        "{error}"
    );
    // and nothing was applied
    let answer = call_json(
        &server,
        "AdminService/GetTeamAdminSettings",
        "admin-token",
        json!({"teamId": TEAM}),
    )
    .await;
    assert!(
        answer.json()["settings"].get("revision").is_none(),
        "{}",
        answer.json()
    );
    server.stop().await;
}

/// CORS: an allowed origin's preflight and call carry the CORS headers (never `*`,
/// never credentials); another origin's preflight gets none and its call is refused.
#[tokio::test]
async fn cors_is_off_unless_the_origin_is_configured() {
    use reqwest::Method;
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path());
    config.http.cors_allowed_origins = vec!["https://console.example.com".into()];
    let server = TestServer::start(config).await;
    let path = "/toolgate.v1.AdminService/GetTeamAdminSettings";
    let preflight = |origin: &'static str| {
        vec![
            ("origin", origin),
            ("access-control-request-method", "POST"),
            (
                "access-control-request-headers",
                "authorization, content-type",
            ),
        ]
    };
    let allowed = send(
        &server,
        Method::OPTIONS,
        path,
        &preflight("https://console.example.com"),
        "",
    )
    .await;
    assert_eq!(allowed.status, 204);
    assert_eq!(
        allowed.header("access-control-allow-origin"),
        Some("https://console.example.com")
    );
    assert!(
        allowed
            .header("access-control-allow-headers")
            .is_some_and(|h| h.contains("authorization"))
    );
    assert!(allowed.header("access-control-allow-credentials").is_none());
    assert_secure(&allowed, "allowed preflight");

    for origin in [
        "https://evil.example",
        "null",
        "https://console.example.com.evil.example",
    ] {
        let refused = send(&server, Method::OPTIONS, path, &preflight(origin), "").await;
        assert_ne!(refused.status / 100, 2, "{origin}");
        for (name, _) in refused.headers.iter() {
            assert!(
                !name.as_str().starts_with("access-control-"),
                "{origin}: {name}"
            );
        }
    }

    let call = send(
        &server,
        Method::POST,
        path,
        &[
            ("origin", "https://console.example.com"),
            ("content-type", "application/json"),
            ("authorization", "Bearer admin-token"),
        ],
        json!({"teamId": TEAM}).to_string(),
    )
    .await;
    assert_eq!(call.status, 200);
    assert_eq!(
        call.header("access-control-allow-origin"),
        Some("https://console.example.com")
    );
    assert_secure(&call, "allowed call");

    // without the setting, no origin but the server's own
    let (plain, _dir) = start().await;
    let answer = send(
        &plain,
        Method::OPTIONS,
        path,
        &preflight("https://console.example.com"),
        "",
    )
    .await;
    assert!(answer.header("access-control-allow-origin").is_none());
    let own = format!("http://{}", plain.addr);
    let answer = send(
        &plain,
        Method::POST,
        path,
        &[
            ("origin", own.as_str()),
            ("content-type", "application/json"),
            ("authorization", "Bearer admin-token"),
        ],
        json!({"teamId": TEAM}).to_string(),
    )
    .await;
    assert_eq!(
        answer.status, 200,
        "the server's own origin: {:?}",
        answer.body
    );
    plain.stop().await;
    server.stop().await;
}

/// Every method of the API is served over HTTP: called without a token, each is
/// refused by the auth interceptor (which only a served method reaches; an unserved
/// one would be `unimplemented`), at once, whatever it does when allowed (a long
/// poll, a live stream). So a service added to the proto files and registered with
/// the server needs nothing more.
#[tokio::test]
async fn every_method_is_reachable_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let config = test_config(dir.path());
    let methods = toolgate::http::HttpLayer::new(&config.http, &config.limits)
        .unwrap()
        .methods();
    let server = TestServer::start(config).await;
    for (path, streams) in methods {
        if path.starts_with("/grpc.health.") {
            continue;
        }
        if path == "/toolgate.v1.ServerInfoService/GetSignIn" {
            // asked before there is a token: answered to anyone
            let answer = post(&server, &path, None, "application/json", "{}").await;
            assert_eq!(answer.status, 200, "{path}: {:?}", answer.body);
            continue;
        }
        let error = if streams {
            let mut stream = Envelopes::open(&server, &path, "", &json!({})).await;
            let (flags, end) = stream.next().await;
            assert_eq!(flags, 2, "{path}: {end}");
            end["error"].clone()
        } else {
            let answer = post(&server, &path, None, "application/json", "{}").await;
            assert_eq!(answer.status, 401, "{path}: {:?}", answer.body);
            answer.json()
        };
        assert_eq!(error["code"], "unauthenticated", "{path}: {error}");
    }
    // health too, for a load balancer that speaks only HTTP
    let answer = post(
        &server,
        "/grpc.health.v1.Health/Check",
        None,
        "application/json",
        "{}",
    )
    .await;
    assert_eq!(answer.json()["status"], "SERVING", "{}", answer.json());
    server.stop().await;
}

/// Runs `app` on a fresh listener; (address, stop, task).
async fn run_app(
    app: toolgate::server::App,
) -> (
    std::net::SocketAddr,
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<Result<(), toolgate::server::ServerError>>,
) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(toolgate::server::run(listener, app, async {
        let _ = stopped.await;
    }));
    (addr, stop, task)
}

/// `http.listen` serves the same API (JSON and gRPC) on a second address, closed with
/// the first at shutdown, and `http.enabled: false` leaves the port gRPC-only.
#[tokio::test]
async fn a_second_address_and_the_off_switch() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path());
    config.http.listen = Some("127.0.0.1:0".into());
    let app = toolgate::server::App::build(config).await.unwrap();
    let second = app.http_addr.expect("http.listen bound");
    let (_, stop, task) = run_app(app).await;
    let answer = client()
        .post(format!(
            "http://{second}/toolgate.v1.AdminService/GetTeamAdminSettings"
        ))
        .bearer_auth("admin-token")
        .header("content-type", "application/json")
        .body(json!({"teamId": TEAM}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    let channel = tonic::transport::Channel::from_shared(format!("http://{second}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut admin = AdminServiceClient::with_interceptor(channel, Auth::new("admin-token"));
    admin
        .get_team_admin_settings(pb::GetTeamAdminSettingsRequest {
            team_id: TEAM.into(),
        })
        .await
        .expect("gRPC on the second address");
    stop.send(()).unwrap();
    task.await.unwrap().unwrap();
    // the second listener drained and closed before the server's run returned
    assert!(
        tokio::net::TcpStream::connect(second).await.is_err(),
        "http.listen still accepts after the server stopped"
    );

    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path());
    config.http.enabled = false;
    let server = TestServer::start(config).await;
    let refused = client()
        .post(format!(
            "http://{}/toolgate.v1.AdminService/GetTeamAdminSettings",
            server.addr
        ))
        .bearer_auth("admin-token")
        .header("content-type", "application/json")
        .body(json!({"teamId": TEAM}).to_string())
        .send()
        .await;
    assert!(
        refused.is_err(),
        "HTTP/1.1 is not spoken with http.enabled false: {refused:?}"
    );
    server
        .admin("admin-token")
        .get_team_admin_settings(pb::GetTeamAdminSettingsRequest {
            team_id: TEAM.into(),
        })
        .await
        .expect("gRPC still");
    server.stop().await;
}

/// TLS and client certificates apply to HTTP as to gRPC (same listener): curl over
/// HTTP/1.1 and HTTP/2 with a token, and with alice's certificate and no token, which
/// authenticates as alice and only as alice.
#[tokio::test]
async fn tls_and_client_certificates_apply_over_http() {
    use crate::tls::{Ca, write};
    let dir = tempfile::tempdir().unwrap();
    let files = dir.path();
    let ca = Ca::new("toolgate http test ca");
    let (cert, key) = ca.issue("localhost", &["localhost"]);
    let clients = Ca::new("toolgate http test clients");
    let (alice_cert, alice_key) = clients.issue("alice", &["alice.acme.example"]);
    let mut config = test_config(&files.join("data"));
    config.tls.cert = Some(write(files, "server.pem", &cert));
    config.tls.key = Some(write(files, "server.key", &key));
    config.tls.client_ca = Some(write(files, "clients.pem", &clients.pem()));
    config.tls.require_client_cert = false;
    config.auth.certificates = vec![toolgate::config::CertificateConfig {
        groups: Vec::new(),
        name: "alice-cert".into(),
        subject_cn: None,
        san: Some("dns:alice.acme.example".into()),
        role: toolgate::auth::Role::Member,
        team: Some(TEAM.into()),
        user: Some("alice".into()),
    }];
    let ca_pem = write(files, "ca.pem", &ca.pem());
    let alice = (
        write(files, "alice.pem", &alice_cert),
        write(files, "alice.key", &alice_key),
    );
    let app = toolgate::server::App::build(config).await.unwrap();
    let (addr, stop, task) = run_app(app).await;
    let curl = |version: &'static str, auth: Vec<String>, user: &'static str| {
        let url = format!(
            "https://localhost:{}/toolgate.v1.UserSettingsService/GetUserSettings",
            addr.port()
        );
        let mut command = tokio::process::Command::new("curl");
        command
            .args(["-sS", version, "--max-time", "20", "--resolve"])
            .arg(format!("localhost:{}:127.0.0.1", addr.port()))
            .arg("--cacert")
            .arg(&ca_pem)
            .args(auth)
            .args(["-H", "content-type: application/json", "-d"])
            .arg(json!({"teamId": TEAM, "userId": user}).to_string())
            .arg(url);
        async move {
            let output = command.output().await.expect("curl runs");
            assert!(output.status.success(), "{output:?}");
            serde_json::from_slice::<Value>(&output.stdout)
                .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&output.stdout)))
        }
    };
    let token = || {
        vec![
            "-H".to_owned(),
            "authorization: Bearer admin-token".to_owned(),
        ]
    };
    let certificate = || {
        vec![
            "--cert".to_owned(),
            alice.0.display().to_string(),
            "--key".to_owned(),
            alice.1.display().to_string(),
        ]
    };
    for version in ["--http1.1", "--http2"] {
        let answer = curl(version, token(), "bob").await;
        assert_eq!(answer["settings"]["userId"], "bob", "{version}: {answer}");
        let answer = curl(version, certificate(), "alice").await;
        assert_eq!(answer["settings"]["userId"], "alice", "{version}: {answer}");
        let answer = curl(version, certificate(), "bob").await;
        assert_eq!(answer["code"], "permission_denied", "{version}: {answer}");
        let answer = curl(version, vec![], "alice").await;
        assert_eq!(answer["code"], "unauthenticated", "{version}: {answer}");
    }
    stop.send(()).unwrap();
    task.await.unwrap().unwrap();
}

/// With anonymous access configured (loopback tools), a web page still gets nothing
/// without a token, even one that looks same-origin (as a DNS-rebinding page does).
#[tokio::test]
async fn web_pages_are_never_anonymous() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path());
    config.auth.anonymous = Some(toolgate::config::AnonymousConfig {
        role: toolgate::auth::Role::Member,
        team: Some(TEAM.into()),
        user: Some("alice".into()),
    });
    let server = TestServer::start(config).await;
    let path = "/toolgate.v1.UserSettingsService/GetUserSettings";
    let body = json!({"teamId": TEAM, "userId": "alice"}).to_string();
    let tool = post(&server, path, None, "application/json", body.clone()).await;
    assert_eq!(
        tool.status, 200,
        "a local tool is anonymous: {:?}",
        tool.body
    );
    let own = format!("http://{}", server.addr);
    let page = send(
        &server,
        reqwest::Method::POST,
        path,
        &[("content-type", "application/json"), ("origin", &own)],
        body.clone(),
    )
    .await;
    assert_eq!(page.status, 401, "{:?}", page.body);
    assert!(
        page.json()["message"]
            .as_str()
            .is_some_and(|m| m.contains("Authorization header")),
        "{}",
        page.json()
    );
    let page = send(
        &server,
        reqwest::Method::POST,
        path,
        &[
            ("content-type", "application/json"),
            ("origin", &own),
            ("authorization", "Bearer alice-token"),
        ],
        body,
    )
    .await;
    assert_eq!(page.status, 200, "with a token it may: {:?}", page.body);
    // nor by saying gRPC: a page's fetch is HTTP/1.1
    let page = send(
        &server,
        reqwest::Method::POST,
        path,
        &[("content-type", "application/grpc"), ("origin", &own)],
        vec![0u8; 5],
    )
    .await;
    assert_eq!(page.status, 401, "{:?}", page.body);
    server.stop().await;
}

/// A body that never finishes arriving is answered `deadline_exceeded` at
/// `limits.request_timeout_secs`, naming it, rather than held open.
#[tokio::test]
async fn a_body_that_never_arrives_is_cut_off() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path());
    config.limits.request_timeout_secs = 1;
    let server = TestServer::start(config).await;
    let mut tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    tcp.write_all(
        b"POST /toolgate.v1.AdminService/GetTeamAdminSettings HTTP/1.1\r\n\
          host: toolgate\r\ncontent-type: application/json\r\n\
          authorization: Bearer admin-token\r\ncontent-length: 100\r\n\r\n{\"teamId\"",
    )
    .await
    .unwrap();
    let mut answer = Vec::new();
    let read = async {
        let mut buf = [0u8; 4096];
        while !String::from_utf8_lossy(&answer).contains("limits.request_timeout_secs") {
            let n = tcp.read(&mut buf).await.unwrap();
            assert!(n > 0, "closed without an answer");
            answer.extend_from_slice(&buf[..n]);
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(20), read)
        .await
        .expect("an answer within 20 s");
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 504"), "{text}");
    assert!(text.contains("deadline_exceeded"), "{text}");
    server.stop().await;
}

/// Bodies being read count against `limits.max_concurrent_requests` as gRPC calls
/// do: with one place, a body still arriving leaves none for another call, which is
/// refused at once naming the setting.
#[tokio::test]
async fn bodies_being_read_are_bounded() {
    use tokio::io::AsyncWriteExt;
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path());
    config.limits.max_concurrent_requests = 1;
    let server = TestServer::start(config).await;
    let mut slow = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    slow.write_all(
        b"POST /toolgate.v1.AdminService/GetTeamAdminSettings HTTP/1.1\r\n\
          host: toolgate\r\ncontent-type: application/json\r\n\
          authorization: Bearer admin-token\r\ncontent-length: 100\r\n\r\n{",
    )
    .await
    .unwrap();
    // until the server is reading the slow body, calls still pass
    let refused = async {
        loop {
            let answer = call_json(
                &server,
                "AdminService/GetTeamAdminSettings",
                "admin-token",
                json!({"teamId": TEAM}),
            )
            .await;
            if answer.status != 200 {
                break answer;
            }
            tokio::task::yield_now().await;
        }
    };
    let answer = tokio::time::timeout(std::time::Duration::from_secs(20), refused)
        .await
        .expect("refused within 20 s");
    assert_eq!(answer.status, 429, "{:?}", answer.body);
    let error = answer.json();
    assert_eq!(error["code"], "resource_exhausted");
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("limits.max_concurrent_requests (1)")),
        "{error}"
    );
    drop(slow);
    server.stop().await;
}

/// A JWT from the identity provider is a bearer token over HTTP as over gRPC: its
/// principal, its rights, and an expired one refused with why.
#[tokio::test]
async fn identity_provider_tokens_work_over_http() {
    use crate::jwt::{AUDIENCE, Key, claims, jwt_config, now, write_jwks};
    let dir = tempfile::tempdir().unwrap();
    let jwks = dir.path().join("jwks.json");
    let key = Key::new("k1");
    write_jwks(&jwks, &[&key]);
    let mut config = test_config(&dir.path().join("data"));
    config.auth.jwt = Some(jwt_config(&jwks, 0));
    let server = TestServer::start(config).await;
    let alice = key.sign(claims("alice", AUDIENCE, now() + 3600));
    let path = "UserSettingsService/GetUserSettings";
    let answer = call_json(
        &server,
        path,
        &alice,
        json!({"teamId": TEAM, "userId": "alice"}),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.json());
    assert_eq!(answer.json()["settings"]["userId"], "alice");
    let answer = call_json(
        &server,
        path,
        &alice,
        json!({"teamId": TEAM, "userId": "bob"}),
    )
    .await;
    assert_eq!(answer.status, 403, "{}", answer.json());
    let expired = key.sign(claims("alice", AUDIENCE, now() - 60));
    let answer = call_json(
        &server,
        path,
        &expired,
        json!({"teamId": TEAM, "userId": "alice"}),
    )
    .await;
    assert_eq!(answer.status, 401);
    assert!(
        answer.json()["message"]
            .as_str()
            .is_some_and(|m| m.contains("expired")),
        "{}",
        answer.json()
    );
    server.stop().await;
}
