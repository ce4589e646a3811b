//! The browser console: off unless configured; its assets built into the binary and
//! served with a strict content security policy; `GetPrincipal` for its sign-in; and
//! the console driven in a real Chromium (`tests/console/browser.py`), which runs
//! when TOOLGATE_TEST_BROWSER=1 and is required when CI=true.

use crate::support::*;
use std::path::PathBuf;
use toolgate::proto::v1 as pb;

async fn start_with_console() -> (TestServer, String, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path());
    config.console.listen = Some("127.0.0.1:0".into());
    let server = TestServer::start(config).await;
    let url = format!("http://{}", server.console.expect("the console's address"));
    (server, url, dir)
}

#[tokio::test]
async fn the_console_is_off_unless_configured() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(test_config(dir.path())).await;
    assert_eq!(server.console, None);
    server.stop().await;
}

#[tokio::test]
async fn assets_are_served_from_the_binary_with_a_strict_content_security_policy() {
    let (server, url, _dir) = start_with_console().await;
    let http = reqwest::Client::new();
    for (path, content_type) in [
        ("/", "text/html; charset=utf-8"),
        ("/app.js", "text/javascript; charset=utf-8"),
        ("/app.css", "text/css; charset=utf-8"),
        ("/favicon.ico", "image/x-icon"),
        ("/no-such-page", "text/plain; charset=utf-8"),
    ] {
        let response = http.get(format!("{url}{path}")).send().await.unwrap();
        let expected = if path == "/no-such-page" { 404 } else { 200 };
        assert_eq!(response.status().as_u16(), expected, "{path}");
        let headers = response.headers();
        assert_eq!(headers["content-type"], content_type, "{path}");
        for (name, value) in toolgate::console::SECURITY_HEADERS {
            assert_eq!(headers[name], value, "{path}: {name}");
        }
        let csp = headers["content-security-policy"].to_str().unwrap();
        for rule in [
            "default-src 'self'",
            "script-src 'self'",
            "frame-ancestors 'none'",
        ] {
            assert!(csp.contains(rule), "{path}: {csp}");
        }
        assert!(
            !csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"),
            "{csp}"
        );
    }
    let index = http
        .get(format!("{url}/"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    // nothing inline: every script is a file of this origin, and no element styles itself
    assert!(
        index.contains(r#"<script src="/app.js" defer></script>"#),
        "{index}"
    );
    assert_eq!(index.matches("<script").count(), 1, "{index}");
    assert!(!index.contains("style="), "{index}");
    let js = http
        .get(format!("{url}/app.js"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    // the token lives in sessionStorage only, and the bundle never evaluates strings
    assert!(
        js.contains("sessionStorage"),
        "the bundle keeps the token per tab"
    );
    assert!(
        !js.contains("localStorage"),
        "the bundle must not use localStorage"
    );
    assert!(!js.contains("eval("), "the bundle must not eval");
    // the gRPC port serves no page
    let grpc_port = http
        .get(format!("http://{}/", server.addr))
        .send()
        .await
        .unwrap();
    assert_ne!(grpc_port.status().as_u16(), 200);
    assert!(
        !grpc_port.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    server.stop().await;
}

#[tokio::test]
async fn get_principal_says_who_the_caller_is_and_which_teams_it_may_read() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(test_config(dir.path())).await;
    // a team with stored policy, which the operator's list then holds
    server.set_controls(pb::AutoRunControls::default()).await;
    let cases = [
        (
            "admin-token",
            pb::PrincipalRole::Admin,
            TEAM,
            "admin",
            vec![TEAM],
        ),
        (
            "alice-token",
            pb::PrincipalRole::Member,
            TEAM,
            "alice",
            vec![TEAM],
        ),
        (
            "service-token",
            pb::PrincipalRole::Service,
            TEAM,
            "service",
            vec![TEAM],
        ),
        (
            "operator-token",
            pb::PrincipalRole::Operator,
            "",
            "operator",
            vec![TEAM],
        ),
    ];
    for (token, role, team, user, teams) in cases {
        let got = pb::principal_service_client::PrincipalServiceClient::with_interceptor(
            server.channel.clone(),
            Auth::new(token),
        )
        .get_principal(pb::GetPrincipalRequest {})
        .await
        .unwrap()
        .into_inner();
        assert_eq!(got.role(), role, "{token}");
        assert_eq!(got.team_id, team, "{token}");
        assert_eq!(got.user_id, user, "{token}");
        assert_eq!(got.team_ids, teams, "{token}");
        assert_eq!(got.name, token.trim_end_matches("-token"), "{token}");
    }
    let refused = pb::principal_service_client::PrincipalServiceClient::with_interceptor(
        server.channel.clone(),
        Auth::new("no-such-token"),
    )
    .get_principal(pb::GetPrincipalRequest {})
    .await
    .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::Unauthenticated);
    server.stop().await;
}

/// The console in Debian's Chromium, driven by Playwright's Python package against the
/// real binary: sign-in, a refused and an applied edit, a live decision, the kill
/// switch's confirmation, a member without admin controls or an Approvals tab, a
/// file-managed team shown read only; every page of an admin and of a member at 1280
/// and 390 px with nothing wider than the screen; screenshots of each in
/// `target/console-screenshots/`.
#[test]
fn the_console_in_a_real_browser() {
    let ci = std::env::var("CI").as_deref() == Ok("true");
    if std::env::var("TOOLGATE_TEST_BROWSER").as_deref() != Ok("1") && !ci {
        eprintln!(
            "skipped: set TOOLGATE_TEST_BROWSER=1 (with chromium and python3's playwright installed) to drive the console in a browser"
        );
        return;
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let screenshots = root.join("target/console-screenshots");
    let status = std::process::Command::new("python3")
        .arg(root.join("tests/console/browser.py"))
        .arg("--toolgate")
        .arg(toolgate_binary())
        .arg("--screenshots")
        .arg(&screenshots)
        .env("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
        .status()
        .expect("run python3 tests/console/browser.py");
    assert!(
        status.success(),
        "the browser test failed: see its output above"
    );
}

/// The page's API calls go to its own origin: the same API, the same authentication,
/// and a page of another origin is refused.
#[tokio::test]
async fn the_api_answers_on_the_consoles_origin_with_the_same_authentication() {
    let (server, url, _dir) = start_with_console().await;
    let http = reqwest::Client::new();
    let call = |token: Option<&str>, origin: Option<String>| {
        let mut req = http
            .post(format!("{url}/toolgate.v1.PrincipalService/GetPrincipal"))
            .header("content-type", "application/json")
            .body("{}");
        if let Some(token) = token {
            req = req.bearer_auth(token);
        }
        if let Some(origin) = origin {
            req = req.header("origin", origin);
        }
        req.send()
    };
    let ok = call(Some("alice-token"), Some(url.clone())).await.unwrap();
    assert_eq!(ok.status().as_u16(), 200);
    let body: serde_json::Value = ok.json().await.unwrap();
    assert_eq!(body["role"], "PRINCIPAL_ROLE_MEMBER", "{body}");
    assert_eq!(body["userId"], "alice", "{body}");
    let anonymous = call(None, None).await.unwrap();
    assert_eq!(anonymous.status().as_u16(), 401);
    let elsewhere = call(Some("alice-token"), Some("https://evil.example".into()))
        .await
        .unwrap();
    assert_eq!(elsewhere.status().as_u16(), 403);
    // a member's token cannot write the team's policy through the console either
    let write = http
        .post(format!(
            "{url}/toolgate.v1.AdminService/UpdateTeamAdminSettings"
        ))
        .header("content-type", "application/json")
        .bearer_auth("alice-token")
        .body(r#"{"teamId":"acme","autoRunControls":{"killSwitch":true}}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(write.status().as_u16(), 403);
    server.stop().await;
}

/// What a visitor may try: only the console's own files are answered (they are in the
/// binary, so no path reaches the disk), and a `HEAD` gets the headers without a body.
#[tokio::test]
async fn only_the_consoles_own_files_are_answered() {
    let (server, url, _dir) = start_with_console().await;
    let http = reqwest::Client::new();
    for (path, status) in [
        ("/", 200),
        ("/app.js", 200),
        ("/app.css", 200),
        ("/favicon.ico", 200),
        ("/index.html", 404),
        ("/%2e%2e/Cargo.toml", 404),
        ("/..%2fCargo.toml", 404),
        ("//app.js", 404),
        ("/app.js/", 404),
        ("/APP.JS", 404),
        ("/app.js%00", 404),
        ("/console/dist/app.js", 404),
        ("/src/main.ts", 404),
        ("/.git/config", 404),
        ("/etc/passwd", 404),
        ("/toolgate.v1.AdminService/GetTeamAdminSettings", 404),
    ] {
        let response = http.get(format!("{url}{path}")).send().await.unwrap();
        assert_eq!(response.status().as_u16(), status, "GET {path}");
        assert_eq!(
            response.headers()["content-security-policy"],
            toolgate::console::CONTENT_SECURITY_POLICY,
            "GET {path}"
        );
        if status == 404 {
            let body = response.text().await.unwrap();
            assert!(!body.contains("<"), "GET {path}: {body}");
        }
    }
    let head = http.head(format!("{url}/app.js")).send().await.unwrap();
    assert_eq!(head.status().as_u16(), 200);
    assert_eq!(
        head.headers()["content-type"],
        "text/javascript; charset=utf-8"
    );
    assert!(head.bytes().await.unwrap().is_empty());
    server.stop().await;
}

/// The console's source, read as text.
fn console_source(file: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("console/src")
        .join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every reason the server decides with, and every reason the API has, is explained
/// in `console/src/reasons.ts`, so the decision log never says "No explanation is
/// known" for a reason of its own (the table is also typed by the generated `Reason`,
/// so `npm run check` fails the same way).
#[test]
fn every_reason_has_an_explanation_in_the_console() {
    let reasons = console_source("reasons.ts");
    let core = toolgate::policy::Reason::ALL
        .iter()
        .map(|r| format!("REASON_{}", r.as_str()));
    let api = (1..1024)
        .filter_map(|n| pb::Reason::try_from(n).ok())
        .map(|r| r.as_str_name().to_owned());
    let missing: std::collections::BTreeSet<String> = core
        .chain(api)
        .filter(|name| !reasons.contains(&format!("  {name}: \"")))
        .collect();
    assert!(
        missing.is_empty(),
        "console/src/reasons.ts has no explanation for {missing:?}: add a line `REASON_…: \"…\",` for each, then rebuild console/dist"
    );
}

/// The audit trail's kind filter offers every kind the API has: `console/src/kinds.ts`
/// takes them from the generated enum, which holds each of them.
#[test]
fn the_audit_filter_offers_every_audit_kind() {
    let kinds = console_source("kinds.ts");
    assert!(
        kinds.contains("import { AuditEventKind } from \"./proto\";"),
        "console/src/kinds.ts lists the audit kinds from the generated enum in ./proto, not by hand"
    );
    let generated = console_source("proto.ts");
    let missing: Vec<&str> = (1..1024)
        .filter_map(|n| pb::AuditEventKind::try_from(n).ok())
        .map(|k| k.as_str_name())
        .filter(|name| !generated.contains(&format!("  \"{name}\",")))
        .collect();
    assert!(
        missing.is_empty(),
        "console/src/proto.ts lacks the audit kinds {missing:?}: run UPDATE_CONSOLE=1 cargo test --test it console_proto::, then rebuild console/dist"
    );
}
