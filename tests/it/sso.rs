//! `toolgate login --sso` against a real OpenID provider (the npm package
//! `oidc-provider`, started by `tests/oidc/provider.mjs` with test users and groups):
//! the device flow approved by script, the hook deciding as the user in the team
//! their group maps to, a group changed at the provider taking effect at the next
//! refresh, and a revoked refresh token failing closed; and the browser sign-in
//! (authorization code with PKCE on a loopback redirect) against the same provider
//! requiring PKCE, its browser side driven by an HTTP client; and a running
//! `toolgate proxy` process that keeps deciding past its tokens' end and fails
//! closed once the provider refuses its refresh.
//!
//! Needs `TOOLGATE_TEST_OIDC`: the npm prefix holding `oidc-provider` (`.ci/run`
//! installs it). Without it the test says so and passes, unless CI=true.

use crate::support::{TestServer, test_config};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use toolgate::config::{
    JwtClaims, JwtConfig, SignInBearer, SignInConfig, SignInFlow, TeamByGroupConfig,
};

const CLIENT_ID: &str = "toolgate-cli";
/// Every wait on the provider or the binary ends by then.
const DEADLINE: Duration = Duration::from_secs(60);

fn oidc_prefix() -> Option<PathBuf> {
    match std::env::var_os("TOOLGATE_TEST_OIDC") {
        Some(p) => Some(PathBuf::from(p)),
        None if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("CI=true but TOOLGATE_TEST_OIDC is not set: .ci/run installs oidc-provider")
        }
        None => {
            eprintln!(
                "skipped: set TOOLGATE_TEST_OIDC to the npm prefix holding oidc-provider (npm install --prefix DIR oidc-provider@9.13.3)"
            );
            None
        }
    }
}

/// The provider's process, stopped when dropped (its stdin closes).
struct Provider {
    _child: tokio::process::Child,
    issuer: String,
    http: reqwest::Client,
}

impl Provider {
    async fn start(prefix: &Path) -> Self {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oidc/provider.mjs");
        let mut child = tokio::process::Command::new("node")
            .arg(script)
            .arg(CLIENT_ID)
            .env("NODE_PATH", prefix.join("node_modules"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("node runs the provider");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let issuer = tokio::time::timeout(DEADLINE, async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if let Some(issuer) = line.strip_prefix("listening ") {
                    return issuer.to_owned();
                }
            }
            panic!("the provider stopped before it listened")
        })
        .await
        .expect("the provider listens within the deadline");
        // its later notices are read (and dropped): a closed pipe would stop it
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Self {
            _child: child,
            issuer,
            http: reqwest::Client::new(),
        }
    }

    /// Posts to one of the script's test routes.
    async fn test_route(&self, route: &str, body: serde_json::Value) {
        let answer = self
            .http
            .post(format!("{}/test/{route}", self.issuer))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        let status = answer.status();
        assert!(
            status.is_success(),
            "{route}: {}",
            answer.text().await.unwrap()
        );
    }

    /// Revokes a refresh token at the provider's revocation endpoint.
    async fn revoke(&self, refresh_token: &str) {
        let answer = self
            .http
            .post(format!("{}/token/revocation", self.issuer))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!(
                "token={refresh_token}&token_type_hint=refresh_token&client_id={CLIENT_ID}"
            ))
            .send()
            .await
            .unwrap();
        assert!(
            answer.status().is_success(),
            "{}",
            answer.text().await.unwrap()
        );
    }
}

fn jwt_config(issuer: &str) -> JwtConfig {
    JwtConfig {
        issuer: issuer.to_owned(),
        audience: CLIENT_ID.into(),
        jwks_file: None,
        jwks_url: Some(format!("{issuer}/jwks")),
        refresh_secs: 300,
        leeway_secs: 5,
        claims: JwtClaims::default(),
        default_role: toolgate::auth::Role::Member,
        allow_operator: false,
        sign_in: Some(SignInConfig {
            client_id: CLIENT_ID.into(),
            scopes: ["openid", "offline_access", "groups"]
                .map(String::from)
                .to_vec(),
            flows: vec![SignInFlow::Device],
            bearer: SignInBearer::IdToken,
            allow_loopback_http: true,
        }),
        team_by_group: Some(TeamByGroupConfig {
            claim: "groups".into(),
            teams: [("eng-platform", "platform"), ("data", "data")]
                .map(|(g, t)| (g.to_owned(), t.to_owned()))
                .into(),
        }),
        groups: None,
    }
}

/// The binary with the profile at `profile` and no `TOOLGATE_*` of the test's own.
fn toolgate(profile: &Path) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolgate"));
    for (key, _) in std::env::vars().filter(|(k, _)| k.starts_with("TOOLGATE_")) {
        cmd.env_remove(key);
    }
    cmd.env("TOOLGATE_PROFILE", profile)
        .env("HOME", profile.parent().unwrap())
        .kill_on_drop(true);
    cmd
}

/// `toolgate login --sso`, the device code approved as `account` once it is shown.
async fn login(provider: &Provider, server: &str, profile: &Path, account: &str) -> String {
    let mut child = toolgate(profile)
        .args(["login", "--sso", "--server", server])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    let code = tokio::time::timeout(DEADLINE, async {
        while let Some(line) = stderr.next_line().await.unwrap() {
            if let Some((_, code)) = line.split_once("enter the code ") {
                return code.trim_end_matches(')').trim().to_owned();
            }
        }
        panic!("login ended without showing a code")
    })
    .await
    .expect("login shows the code within the deadline");
    provider
        .test_route(
            "approve",
            serde_json::json!({"user_code": code, "account": account}),
        )
        .await;
    let out = tokio::time::timeout(DEADLINE, child.wait_with_output())
        .await
        .expect("login ends within the deadline")
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "login failed: {stdout}");
    stdout
}

/// The Claude Code hook's answer to a shell call, as the profile's signed-in user.
async fn hook(server: &str, profile: &Path) -> (String, String) {
    let mut child = toolgate(profile)
        .args([
            "hook",
            "claude-code",
            "--server",
            server,
            "--timeout-ms",
            "30000",
        ])
        .arg("--profile")
        .arg(profile)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let payload = serde_json::json!({
        "session_id": "s1", "cwd": "/tmp", "hook_event_name": "PreToolUse",
        "tool_name": "Bash", "tool_input": {"command": "ls"}
    });
    let mut input = child.stdin.take().unwrap();
    input
        .write_all(payload.to_string().as_bytes())
        .await
        .unwrap();
    drop(input);
    let out = tokio::time::timeout(DEADLINE, child.wait_with_output())
        .await
        .expect("the hook answers within the deadline")
        .unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn device_sign_in_decides_as_the_user_and_follows_the_provider() {
    let Some(prefix) = oidc_prefix() else {
        return;
    };
    let provider = Provider::start(&prefix).await;
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(&dir.path().join("data"));
    config.auth.jwt = Some(jwt_config(&provider.issuer));
    let server = TestServer::start(config).await;
    let address = format!("http://{}", server.addr);
    // team platform's kill switch is on: its members' calls are denied; team data
    // has settings of its own, without the kill switch
    for (team, kill_switch) in [("platform", true), ("data", false)] {
        server
            .admin("operator-token")
            .update_team_admin_settings(toolgate::proto::v1::UpdateTeamAdminSettingsRequest {
                team_id: team.into(),
                auto_run_controls: Some(toolgate::proto::v1::AutoRunControls {
                    kill_switch,
                    ..Default::default()
                }),
                expected_revision: None,
            })
            .await
            .expect("the team's controls written");
    }

    let profile = dir.path().join("home/client.toml");
    let said = login(&provider, &address, &profile, "alice").await;
    assert!(said.contains("team platform, user alice"), "{said}");
    let kept = std::fs::read_to_string(&profile).unwrap();
    assert!(
        kept.contains("[sso]") && kept.contains("refresh_token"),
        "{kept}"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&profile).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    // alice's group maps to platform: the kill switch decides
    let (stdout, stderr) = hook(&address, &profile).await;
    assert!(
        stdout.contains("\"deny\"") && stdout.contains("kill switch"),
        "{stdout}\n{stderr}"
    );

    // moved to data at the provider: the next refresh puts her there
    provider
        .test_route(
            "groups",
            serde_json::json!({"account": "alice", "groups": ["data"]}),
        )
        .await;
    let (stdout, stderr) = hook(&address, &profile).await;
    assert!(stdout.contains("\"ask\""), "{stdout}\n{stderr}");
    assert!(
        !stdout.contains("kill switch") && !stdout.contains("has no settings"),
        "team data's own settings decide: {stdout}\n{stderr}"
    );

    // the sign-in revoked at the provider: the refresh is refused and the hook fails closed
    let kept = toolgate::cli::profile::load_from(&profile).unwrap();
    let refresh_token = kept.sso.unwrap().refresh_token.unwrap();
    provider.revoke(&refresh_token).await;
    let (stdout, stderr) = hook(&address, &profile).await;
    let all = format!("{stdout}\n{stderr}");
    assert!(all.contains("toolgate login --sso"), "{all}");
    assert!(!stdout.contains("\"allow\""), "{all}");
}

/// Follows the browser's side of an authorization request from `url` as a browser
/// would (redirects, the provider's cookies), without running a page's script: the
/// provider's interaction signs in as the account `/test/login` named. Ends at the
/// first answer that is no redirect (the loopback callback's page, or an error).
async fn browse(url: &str) -> (reqwest::StatusCode, String, reqwest::Url) {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let mut cookies: std::collections::BTreeMap<String, String> = Default::default();
    let mut at = reqwest::Url::parse(url).expect("the sign-in page is a URL");
    for _ in 0..20 {
        let cookie = cookies
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("; ");
        let answer = tokio::time::timeout(
            DEADLINE,
            http.get(at.clone()).header("cookie", cookie).send(),
        )
        .await
        .expect("an answer within the deadline")
        .expect("the page answers");
        for set in answer.headers().get_all("set-cookie") {
            let set = set.to_str().unwrap();
            if let Some((name, rest)) = set.split_once('=') {
                let value = rest.split(';').next().unwrap_or("");
                cookies.insert(name.to_owned(), value.to_owned());
            }
        }
        let status = answer.status();
        if !status.is_redirection() {
            return (status, answer.text().await.unwrap_or_default(), at);
        }
        let location = answer.headers()["location"].to_str().unwrap().to_owned();
        at = at.join(&location).unwrap();
        // the provider's answer to a refused request comes back on the redirect
        if at.query_pairs().any(|(k, _)| k == "error") {
            return (status, String::new(), at);
        }
    }
    panic!("more than 20 redirects from {url}")
}

/// `toolgate login --sso --browser`: the authorization code flow with PKCE on a
/// loopback redirect, against a provider that refuses a request without an S256
/// challenge (shown first) and checks the verifier at the token endpoint. The
/// browser's side is driven by an HTTP client; the sign-in then decides as the user.
#[tokio::test]
async fn browser_sign_in_with_pkce_on_a_loopback_redirect() {
    let Some(prefix) = oidc_prefix() else {
        return;
    };
    let provider = Provider::start(&prefix).await;
    // the provider requires PKCE: a request without a challenge is refused
    let (_, _, refused) = browse(&format!(
        "{}/auth?client_id={CLIENT_ID}&response_type=code&scope=openid&redirect_uri=http%3A%2F%2F127.0.0.1%3A9%2Fcallback&state=s",
        provider.issuer
    ))
    .await;
    let error: Vec<(String, String)> = refused.query_pairs().into_owned().collect();
    assert!(
        error
            .iter()
            .any(|(k, v)| k == "error_description" && v.contains("PKCE")),
        "{refused}"
    );

    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(&dir.path().join("data"));
    let mut jwt = jwt_config(&provider.issuer);
    if let Some(sign_in) = jwt.sign_in.as_mut() {
        sign_in.flows.push(SignInFlow::Browser);
    }
    config.auth.jwt = Some(jwt);
    let server = TestServer::start(config).await;
    let address = format!("http://{}", server.addr);
    server
        .admin("operator-token")
        .update_team_admin_settings(toolgate::proto::v1::UpdateTeamAdminSettingsRequest {
            team_id: "platform".into(),
            auto_run_controls: Some(toolgate::proto::v1::AutoRunControls {
                kill_switch: true,
                ..Default::default()
            }),
            expected_revision: None,
        })
        .await
        .expect("the team's controls written");
    provider
        .test_route("login", serde_json::json!({"account": "alice"}))
        .await;

    let profile = dir.path().join("home/client.toml");
    // no desktop opener on the PATH: the test is the browser
    let no_opener = dir.path().join("bin");
    std::fs::create_dir_all(&no_opener).unwrap();
    let mut child = toolgate(&profile)
        .args(["login", "--sso", "--browser", "--server", &address])
        .env("PATH", &no_opener)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    let page = tokio::time::timeout(DEADLINE, async {
        while let Some(line) = stderr.next_line().await.unwrap() {
            if let Some(url) = line
                .trim()
                .strip_prefix(&format!("{}/auth?", provider.issuer))
            {
                return format!("{}/auth?{url}", provider.issuer);
            }
        }
        panic!("login ended without showing the sign-in page")
    })
    .await
    .expect("login shows the page within the deadline");
    let challenge: Vec<(String, String)> = reqwest::Url::parse(&page)
        .unwrap()
        .query_pairs()
        .into_owned()
        .collect();
    let param = |name: &str| {
        challenge
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(
        param("code_challenge_method").as_deref(),
        Some("S256"),
        "{page}"
    );
    assert!(param("code_challenge").is_some(), "{page}");
    let redirect = param("redirect_uri").expect("a redirect");
    assert!(
        redirect.starts_with("http://127.0.0.1:") && redirect.ends_with("/callback"),
        "{redirect}"
    );

    let (status, _, ended) = browse(&page).await;
    assert!(
        status.is_success(),
        "the loopback page answers: {status} {ended}"
    );
    assert!(ended.as_str().starts_with(&redirect), "{ended}");
    let rest = async {
        let mut all = String::new();
        while let Ok(Some(line)) = stderr.next_line().await {
            all.push_str(&line);
            all.push('\n');
        }
        all
    };
    let (out, rest) = tokio::time::timeout(DEADLINE, async {
        tokio::join!(child.wait_with_output(), rest)
    })
    .await
    .expect("login ends within the deadline");
    let out = out.unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "login failed: {said}\n{rest}");
    assert!(said.contains("team platform, user alice"), "{said}");
    let kept = std::fs::read_to_string(&profile).unwrap();
    assert!(kept.contains("refresh_token"), "{kept}");
    let (stdout, stderr) = hook(&address, &profile).await;
    assert!(
        stdout.contains("\"deny\"") && stdout.contains("kill switch"),
        "{stdout}\n{stderr}"
    );
}

/// The client's bearer can be swapped while it runs (what `toolgate proxy` does at
/// each refresh of its sign-in): a stub made before the swap sends the new token at
/// its next call, and a cleared one sends none, which the server refuses.
#[tokio::test]
async fn a_client_s_bearer_is_swapped_under_its_stubs() {
    use toolgate::grpc::client::{Client, ClientConfig, SharedBearer};
    use toolgate::proto::v1 as pb;
    let (server, _dir) = crate::support::start().await;
    let bearer = SharedBearer::default();
    let client = Client::connect(ClientConfig {
        server: format!("http://{}", server.addr),
        token: Some("alice-token".into()),
        deadline: DEADLINE,
        bearer: Some(bearer.clone()),
        ..ClientConfig::default()
    })
    .await
    .expect("connects");
    let mut stub = client.principal_service();
    let who = |r: tonic::Response<pb::GetPrincipalResponse>| r.into_inner().user_id;
    let first = stub
        .get_principal(pb::GetPrincipalRequest {})
        .await
        .unwrap();
    assert_eq!(who(first), "alice");
    bearer.set("bob-token").unwrap();
    let then = stub
        .get_principal(pb::GetPrincipalRequest {})
        .await
        .unwrap();
    assert_eq!(who(then), "bob", "the same stub sends the new token");
    assert!(
        bearer.set("bad\ntoken").is_err(),
        "a token that is no header value"
    );
    bearer.clear();
    let refused = stub
        .get_principal(pb::GetPrincipalRequest {})
        .await
        .expect_err("no token, no answer");
    assert_eq!(refused.code(), tonic::Code::Unauthenticated);
    server.stop().await;
}

/// A long-running client (as `toolgate proxy` runs) keeps its sign-in fresh: the
/// refresh runs before the token's end, writes the profile, and the client's next
/// call carries the new token, so a change at the provider (alice moved to the
/// group of team data) reaches the server without a new login.
#[tokio::test]
async fn a_long_running_client_refreshes_its_sign_in_and_sends_the_new_token() {
    use toolgate::grpc::client::{Client, ClientConfig, SharedBearer};
    use toolgate::proto::v1 as pb;
    let Some(prefix) = oidc_prefix() else {
        return;
    };
    let provider = Provider::start(&prefix).await;
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(&dir.path().join("data"));
    config.auth.jwt = Some(jwt_config(&provider.issuer));
    let server = TestServer::start(config).await;
    let address = format!("http://{}", server.addr);
    let profile = dir.path().join("home/client.toml");
    login(&provider, &address, &profile, "alice").await;
    let session = toolgate::cli::profile::load_from(&profile)
        .unwrap()
        .sso
        .expect("signed in");
    let bearer = SharedBearer::default();
    let client = Client::connect(ClientConfig {
        server: address.clone(),
        token: Some(session.token.clone()),
        deadline: DEADLINE,
        bearer: Some(bearer.clone()),
        ..ClientConfig::default()
    })
    .await
    .expect("connects");
    let mut stub = client.principal_service();
    let team = |r: tonic::Response<pb::GetPrincipalResponse>| r.into_inner().team_id;
    let first = stub
        .get_principal(pb::GetPrincipalRequest {})
        .await
        .unwrap();
    assert_eq!(team(first), "platform");

    provider
        .test_route(
            "groups",
            serde_json::json!({"account": "alice", "groups": ["data"]}),
        )
        .await;
    let refresher = tokio::spawn(toolgate::cli::login_refresh::keep_fresh(
        profile.clone(),
        session.clone(),
        bearer,
    ));
    // the provider's tokens live 30 s: the refresh comes within the deadline
    tokio::time::timeout(DEADLINE, async {
        loop {
            let now = stub.get_principal(pb::GetPrincipalRequest {}).await;
            if now.is_ok_and(|r| team(r) == "data") {
                return;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    })
    .await
    .expect("the refreshed token reaches the server within the deadline");
    let kept = toolgate::cli::profile::load_from(&profile)
        .unwrap()
        .sso
        .unwrap();
    assert_ne!(kept.token, session.token, "the profile holds the new token");
    refresher.abort();
    server.stop().await;
}

/// A running `toolgate proxy` (stdio, the profile signed in by the device flow) with
/// the provider's 30-second tokens: one JSON-RPC exchange with it, answering the
/// response to `id`.
struct StdioProxy {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    next_id: u64,
}

impl StdioProxy {
    fn start(profile: &Path) -> Self {
        let upstream = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/mcp_upstream.py");
        let mut child = toolgate(profile)
            .args([
                "proxy",
                "--server-id",
                "demo",
                "--team",
                "platform",
                "--user",
                "alice",
                "--",
                "python3",
            ])
            .arg(upstream)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the proxy starts");
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Self {
            child,
            stdin,
            lines,
            next_id: 1,
        }
    }

    /// Sends `method` and waits (within the deadline) for its response.
    async fn request(&mut self, method: &str, params: serde_json::Value) -> serde_json::Value {
        let id = self.next_id;
        self.next_id += 1;
        let message =
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.stdin
            .write_all(format!("{message}\n").as_bytes())
            .await
            .unwrap();
        tokio::time::timeout(DEADLINE, async {
            while let Some(line) = self.lines.next_line().await.unwrap() {
                let answer: serde_json::Value = serde_json::from_str(&line).expect("JSON-RPC");
                if answer["id"] == id {
                    return answer;
                }
            }
            panic!("the proxy stopped before answering {method}")
        })
        .await
        .unwrap_or_else(|_| panic!("{method}: no answer within {DEADLINE:?}"))
    }

    async fn initialize(&mut self) {
        let answer = self
            .request(
                "initialize",
                serde_json::json!({
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "sso-test", "version": "1"}
                }),
            )
            .await;
        assert!(answer.get("result").is_some(), "{answer}");
        let done = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        self.stdin
            .write_all(format!("{done}\n").as_bytes())
            .await
            .unwrap();
        // the proxy knows a tool once it has listed it
        let listed = self.request("tools/list", serde_json::json!({})).await;
        assert!(
            listed["result"]["tools"]
                .as_array()
                .is_some_and(|t| t.iter().any(|t| t["name"] == "echo")),
            "{listed}"
        );
    }

    /// Calls the upstream's `echo`: true when its text came back (the call was
    /// allowed), false when the proxy refused it.
    async fn echo(&mut self, text: &str) -> (bool, serde_json::Value) {
        let answer = self
            .request(
                "tools/call",
                serde_json::json!({"name": "echo", "arguments": {"text": text}}),
            )
            .await;
        let allowed =
            answer["result"]["isError"] != true && answer["result"]["content"][0]["text"] == text;
        (allowed, answer)
    }
}

/// The seconds since the epoch.
fn epoch_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// A running `toolgate proxy` signed in by SSO keeps deciding past the end of every
/// token it started with (it refreshes them itself and sends the new one), and once
/// the provider refuses the refresh it fails closed: after the token in hand ends,
/// no call is let through.
#[tokio::test]
async fn a_running_proxy_refreshes_its_sign_in_and_fails_closed_when_refused() {
    use toolgate::proto::v1 as pb;
    let Some(prefix) = oidc_prefix() else {
        return;
    };
    if !crate::proxy::python_has_mcp() {
        return;
    }
    let provider = Provider::start(&prefix).await;
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(&dir.path().join("data"));
    config.auth.jwt = Some(jwt_config(&provider.issuer));
    let server = TestServer::start(config).await;
    let address = format!("http://{}", server.addr);
    // team platform (alice's, by her group) lets her echo run
    server
        .admin("operator-token")
        .update_team_admin_settings(pb::UpdateTeamAdminSettingsRequest {
            team_id: "platform".into(),
            auto_run_controls: Some(pb::AutoRunControls {
                enabled: true,
                mcp_tool_allowlist: vec!["demo:echo".into()],
                ..Default::default()
            }),
            expected_revision: None,
        })
        .await
        .expect("the team's controls");
    server
        .users("operator-token")
        .update_user_settings(pb::UpdateUserSettingsRequest {
            settings: Some(pb::UserSettings {
                use_yolo_mode: true,
                ..crate::support::user_settings("platform", "alice")
            }),
            expected_revision: None,
            update_mask: None,
        })
        .await
        .expect("alice's settings");
    let profile = dir.path().join("home/client.toml");
    login(&provider, &address, &profile, "alice").await;

    let mut proxy = StdioProxy::start(&profile);
    proxy.initialize().await;
    let (allowed, answer) = proxy.echo("first").await;
    assert!(allowed, "{answer}");
    let session = || {
        toolgate::cli::profile::load_from(&profile)
            .unwrap()
            .sso
            .expect("signed in")
    };
    // every token issued before this call ends by then, the server's leeway
    // (`leeway_secs`) past it included
    let ends = session().expires_at + jwt_config(&provider.issuer).leeway_secs + 1;
    let first_token = session().token;
    tokio::time::timeout(DEADLINE, async {
        while epoch_now() <= ends {
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    })
    .await
    .expect("the token's end passes within the deadline");
    let (allowed, answer) = proxy.echo("past the first token").await;
    assert!(allowed, "the proxy sends a token it refreshed: {answer}");
    assert_ne!(
        session().token,
        first_token,
        "the refresh is kept in the profile"
    );

    // the provider refuses every refresh from now on: once the token in hand ends,
    // the proxy sends none, and the server refuses what it asks
    provider
        .test_route("forget", serde_json::json!({"account": "alice"}))
        .await;
    let refused = tokio::time::timeout(DEADLINE * 2, async {
        loop {
            let (allowed, answer) = proxy.echo("after the refusal").await;
            if !allowed {
                return answer;
            }
            // let through while the token in hand lasts
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    })
    .await
    .expect("the proxy refuses within the deadline");
    assert!(
        refused.get("error").is_some() || refused["result"]["isError"] == true,
        "{refused}"
    );
    // and stays closed: nothing is let through without a token
    let (allowed, answer) = proxy.echo("still refused").await;
    assert!(!allowed, "{answer}");
    drop(proxy.stdin);
    let _ = tokio::time::timeout(DEADLINE, proxy.child.wait()).await;
    server.stop().await;
}
