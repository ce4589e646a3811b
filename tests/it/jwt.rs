//! JWT bearer tokens through the real server: a token of the issuer's, for this
//! audience, valid now (`exp`, `nbf`) and of an ordinary team, is its principal,
//! named by team, user and issuer; an expired, not yet valid, wrongly signed,
//! wrong-audience, unknown-key or `*`-team token is refused with why; a rotated key is accepted
//! once the JWKS holds it (a token naming an unknown key has the keys read again,
//! without waiting for the refresh period); static tokens keep working beside them;
//! the role operator is refused unless allowed, and the bootstrap token is written
//! only when no JWT may be an operator. The JWKS download is capped without a length
//! and its refreshes reuse one client.

use crate::support;

use base64::Engine as _;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use rcgen::KeyPair;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use support::*;
use toolgate::config::{JwtClaims, JwtConfig};
use toolgate::proto::v1 as pb;

pub(crate) const ISSUER: &str = "https://idp.test";
pub(crate) const AUDIENCE: &str = "toolgate";

/// An ES256 signing key and its public JWK.
pub(crate) struct Key {
    kid: String,
    pair: KeyPair,
}

impl Key {
    pub(crate) fn new(kid: &str) -> Self {
        Self {
            kid: kid.into(),
            pair: KeyPair::generate().unwrap(),
        }
    }

    fn jwk(&self) -> serde_json::Value {
        // the uncompressed point: 0x04, x, y
        let point = self.pair.public_key_raw();
        let b64 = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
        serde_json::json!({
            "kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256", "kid": self.kid,
            "x": b64(&point[1..33]), "y": b64(&point[33..65]),
        })
    }

    /// A token with `claims`, signed by this key but naming `kid`.
    fn sign_as(&self, kid: &str, claims: serde_json::Value) -> String {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(kid.into());
        let key = EncodingKey::from_ec_pem(self.pair.serialize_pem().as_bytes()).unwrap();
        jsonwebtoken::encode(&header, &claims, &key).unwrap()
    }

    pub(crate) fn sign(&self, claims: serde_json::Value) -> String {
        self.sign_as(&self.kid.clone(), claims)
    }
}

pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

pub(crate) fn claims(user: &str, audience: &str, exp: u64) -> serde_json::Value {
    serde_json::json!({
        "iss": ISSUER, "aud": audience, "exp": exp, "sub": user, "team": TEAM,
        "role": "member",
    })
}

pub(crate) fn write_jwks(path: &Path, keys: &[&Key]) {
    let jwks = serde_json::json!({ "keys": keys.iter().map(|k| k.jwk()).collect::<Vec<_>>() });
    // atomically: the server never reads half a file
    toolgate::files::write_atomic(
        path,
        toolgate::files::Mode::KeepTarget,
        jwks.to_string().as_bytes(),
    )
    .unwrap();
}

async fn evaluate(server: &TestServer, token: &str, user: &str) -> Result<(), tonic::Status> {
    server
        .policy(token)
        .evaluate(pb::EvaluateRequest {
            approval: None,
            team_id: TEAM.into(),
            user_id: user.into(),
            call: Some(mcp("github", "get_issue")),
            explain: false,
            agent: None,
            client: String::new(),
            tool_use_id: String::new(),
        })
        .await
        .map(drop)
}

#[tokio::test]
async fn jwts_are_verified_refused_with_why_and_rotated_keys_are_taken() {
    let dir = tempfile::tempdir().unwrap();
    let jwks = dir.path().join("jwks.json");
    let first = Key::new("k1");
    write_jwks(&jwks, &[&first]);
    let mut config = test_config(&dir.path().join("data"));
    config.auth.jwt = Some(JwtConfig {
        groups: None,
        issuer: ISSUER.into(),
        audience: AUDIENCE.into(),
        jwks_file: Some(jwks.clone()),
        jwks_url: None,
        // long: the rotation below is taken because a token names the new key
        refresh_secs: 3600,
        leeway_secs: 0,
        claims: JwtClaims::default(),
        default_role: toolgate::auth::Role::Member,
        allow_operator: false,
        sign_in: None,
        team_by_group: None,
    });
    let server = TestServer::start(config).await;
    let hour = now() + 3600;

    // the issuer's token is alice, a member of acme: her own calls, not bob's
    let alice = first.sign(claims("alice", AUDIENCE, hour));
    evaluate(&server, &alice, "alice").await.unwrap();
    let denied = evaluate(&server, &alice, "bob").await.unwrap_err();
    assert_eq!(denied.code(), tonic::Code::PermissionDenied, "{denied:?}");

    let stranger = Key::new("k1");
    let table = [
        ("expired", first.sign(claims("alice", AUDIENCE, now() - 60)), "jwt expired"),
        (
            "wrongly signed",
            stranger.sign_as("k1", claims("alice", AUDIENCE, hour)),
            "signature does not verify",
        ),
        (
            "wrong audience",
            first.sign(claims("alice", "another-service", hour)),
            "audience",
        ),
        (
            "unknown key",
            stranger.sign_as("k9", claims("alice", AUDIENCE, hour)),
            "does not hold",
        ),
        (
            "no team",
            first.sign(serde_json::json!({"iss": ISSUER, "aud": AUDIENCE, "exp": hour, "sub": "alice"})),
            "team claim",
        ),
        (
            "operator not allowed",
            first.sign(serde_json::json!({"iss": ISSUER, "aud": AUDIENCE, "exp": hour, "sub": "alice", "team": TEAM, "role": "operator"})),
            "auth.jwt.allow_operator",
        ),
        (
            "not valid until tomorrow",
            first.sign(serde_json::json!({"iss": ISSUER, "aud": AUDIENCE, "exp": hour + 86400, "nbf": now() + 86400, "sub": "alice", "team": TEAM})),
            "jwt not valid yet (nbf)",
        ),
        (
            "the server-wide team",
            first.sign(serde_json::json!({"iss": ISSUER, "aud": AUDIENCE, "exp": hour, "sub": "alice", "team": "*", "role": "admin"})),
            "reserved team",
        ),
        (
            "another issuer",
            first.sign(serde_json::json!({"iss": "https://evil.test", "aud": AUDIENCE, "exp": hour, "sub": "alice", "team": TEAM})),
            "another issuer",
        ),
    ];
    for (case, token, why) in table {
        let refused = evaluate(&server, &token, "alice").await.unwrap_err();
        assert_eq!(
            refused.code(),
            tonic::Code::Unauthenticated,
            "{case}: {refused:?}"
        );
        assert!(refused.message().contains(why), "{case}: {refused:?}");
    }
    // static tokens keep working beside them
    evaluate(&server, "alice-token", "alice").await.unwrap();

    // the issuer rotates to k2: refused until the JWKS holds it, then accepted
    let second = Key::new("k2");
    let rotated = second.sign(claims("alice", AUDIENCE, hour));
    let before = evaluate(&server, &rotated, "alice").await.unwrap_err();
    assert_eq!(before.code(), tonic::Code::Unauthenticated);
    write_jwks(&jwks, &[&second]);
    let taken = tokio::time::timeout(Duration::from_secs(40), async {
        // polled: the refresh is the server's own timer, nothing to wait on
        while evaluate(&server, &rotated, "alice").await.is_err() {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    assert!(taken.is_ok(), "the rotated key was not taken within 40 s");
    // and the retired key is gone with the old JWKS
    let retired = evaluate(&server, &alice, "alice").await.unwrap_err();
    assert!(retired.message().contains("does not hold"), "{retired:?}");
    server.stop().await;
}

/// With JWT the only way in, the bootstrap operator token is written unless JWTs may
/// be operators (by default they may not, so it is the only operator).
#[tokio::test]
async fn bootstrap_token_is_written_unless_jwts_may_be_operators() {
    for allow_operator in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let jwks = dir.path().join("jwks.json");
        write_jwks(&jwks, &[&Key::new("k1")]);
        let mut config = test_config(&dir.path().join("data"));
        config.auth.tokens.clear();
        config.auth.jwt = Some(JwtConfig {
            groups: None,
            issuer: ISSUER.into(),
            audience: AUDIENCE.into(),
            jwks_file: Some(jwks),
            jwks_url: None,
            refresh_secs: 3600,
            leeway_secs: 0,
            claims: JwtClaims::default(),
            default_role: toolgate::auth::Role::Member,
            allow_operator,
            sign_in: None,
            team_by_group: None,
        });
        let app = toolgate::server::App::build(config).await.unwrap();
        assert_eq!(
            app.bootstrap_token_path.is_some(),
            !allow_operator,
            "allow_operator: {allow_operator}"
        );
    }
}

pub(crate) fn jwt_config(jwks: &Path, leeway_secs: u64) -> JwtConfig {
    JwtConfig {
        groups: None,
        issuer: ISSUER.into(),
        audience: AUDIENCE.into(),
        jwks_file: Some(jwks.to_owned()),
        jwks_url: None,
        refresh_secs: 3600,
        leeway_secs,
        claims: JwtClaims::default(),
        default_role: toolgate::auth::Role::Member,
        allow_operator: true,
        sign_in: None,
        team_by_group: None,
    }
}

fn claims_of(team: &str, user: &str, extra: serde_json::Value) -> serde_json::Value {
    let mut claims = serde_json::json!({
        "iss": ISSUER, "aud": AUDIENCE, "exp": now() + 3600, "sub": user, "team": team,
    });
    for (k, v) in extra.as_object().unwrap() {
        claims[k] = v.clone();
    }
    claims
}

/// Issue 25: a token not valid yet is refused (with the leeway `exp` has), a team
/// claim holding `*` is refused, and principals are named by team, user and issuer,
/// so no two of them (nor a static token) share a name.
#[tokio::test]
async fn nbf_reserved_teams_and_principal_names() {
    let dir = tempfile::tempdir().unwrap();
    let jwks = dir.path().join("jwks.json");
    let key = Key::new("k1");
    write_jwks(&jwks, &[&key]);
    let stop = tokio_util::sync::CancellationToken::new();
    let verifier = toolgate::jwt::JwtVerifier::start(&jwt_config(&jwks, 30), stop.clone())
        .await
        .unwrap();
    let t = now();
    let day = 24 * 3600;
    // (case, claims, the principal's name, or a part of the refusal)
    let table: Vec<(&str, serde_json::Value, Result<&str, &str>)> = vec![
        (
            "nbf tomorrow",
            claims_of(TEAM, "alice", serde_json::json!({"nbf": t + day})),
            Err("not valid yet"),
        ),
        (
            "nbf past the leeway",
            claims_of(TEAM, "alice", serde_json::json!({"nbf": t + 90})),
            Err("not valid yet"),
        ),
        (
            "nbf not a number",
            claims_of(TEAM, "alice", serde_json::json!({"nbf": "tomorrow"})),
            Err("jwt refused"),
        ),
        (
            "nbf within the leeway",
            claims_of(TEAM, "alice", serde_json::json!({"nbf": t + 5})),
            Ok("jwt:acme/alice@https://idp.test"),
        ),
        (
            "nbf past",
            claims_of(TEAM, "alice", serde_json::json!({"nbf": t - day})),
            Ok("jwt:acme/alice@https://idp.test"),
        ),
        (
            "no nbf",
            claims_of(TEAM, "alice", serde_json::json!({})),
            Ok("jwt:acme/alice@https://idp.test"),
        ),
        (
            "team *",
            claims_of("*", "alice", serde_json::json!({})),
            Err("reserved team"),
        ),
        (
            "team acme*",
            claims_of("acme*", "alice", serde_json::json!({})),
            Err("reserved team"),
        ),
        (
            "team * as admin",
            claims_of("*", "alice", serde_json::json!({"role": "admin"})),
            Err("reserved team"),
        ),
        (
            "alice of another team",
            claims_of(OTHER_TEAM, "alice", serde_json::json!({})),
            Ok("jwt:globex/alice@https://idp.test"),
        ),
        (
            "bob, whom a static token named jwt:bob would have been",
            claims_of(TEAM, "bob", serde_json::json!({})),
            Ok("jwt:acme/bob@https://idp.test"),
        ),
        // separators in the ids are escaped: team a/b user c is not team a user b/c
        (
            "a slash in the team",
            claims_of("a/b", "c", serde_json::json!({})),
            Ok("jwt:a%2Fb/c@https://idp.test"),
        ),
        (
            "a slash in the user",
            claims_of("a", "b/c", serde_json::json!({})),
            Ok("jwt:a/b%2Fc@https://idp.test"),
        ),
        (
            "an at sign in the user",
            claims_of("a", "b@https://evil.test", serde_json::json!({})),
            Ok("jwt:a/b%40https:%2F%2Fevil.test@https://idp.test"),
        ),
        (
            "an operator has no team",
            claims_of("ignored", "root", serde_json::json!({"role": "operator"})),
            Ok("jwt:/root@https://idp.test"),
        ),
    ];
    for (case, claims, want) in table {
        match (want, verifier.verify(&key.sign(claims))) {
            (Ok(name), Ok(p)) => assert_eq!(p.name, name, "{case}"),
            (Err(why), Err(e)) => assert!(e.to_string().contains(why), "{case}: {e}"),
            (want, got) => panic!("{case}: wanted {want:?}, got {got:?}"),
        }
    }
    // with no leeway, a second ahead is too early
    let strict = toolgate::jwt::JwtVerifier::start(&jwt_config(&jwks, 0), stop.clone())
        .await
        .unwrap();
    let early = strict.verify(&key.sign(claims_of(
        TEAM,
        "alice",
        serde_json::json!({"nbf": now() + 60}),
    )));
    assert!(early.unwrap_err().to_string().contains("not valid yet"));
    stop.cancel();
}

/// Issue 25: `alice` of another team does not share `alice`'s watch stream slots.
#[tokio::test]
async fn namesakes_of_two_teams_hold_their_own_stream_slots() {
    let dir = tempfile::tempdir().unwrap();
    let jwks = dir.path().join("jwks.json");
    let key = Key::new("k1");
    write_jwks(&jwks, &[&key]);
    let mut config = test_config(&dir.path().join("data"));
    config.auth.jwt = Some(jwt_config(&jwks, 0));
    config.limits.max_streams_per_principal = 1;
    let server = TestServer::start(config).await;
    let watch = |team: &'static str| {
        let token = key.sign(claims_of(
            team,
            "alice",
            serde_json::json!({"role": "member"}),
        ));
        let server = &server;
        async move {
            server
                .policy(&token)
                .watch_policy(pb::WatchPolicyRequest {
                    team_id: team.into(),
                    user_id: "alice".into(),
                    after_revision: None,
                })
                .await
        }
    };
    let held = watch(TEAM).await.expect("alice of acme watches");
    let other = watch(OTHER_TEAM)
        .await
        .expect("alice of globex has slots of her own");
    // the limit still holds for each
    let refused = watch(TEAM).await.unwrap_err();
    assert_eq!(
        refused.code(),
        tonic::Code::ResourceExhausted,
        "{refused:?}"
    );
    assert!(refused.message().contains("jwt:acme/alice@"), "{refused:?}");
    drop((held, other));
    server.stop().await;
}

/// A local JWKS endpoint answering every request with `body` in chunks, without a
/// length (`Transfer-Encoding: chunked`); `forever` keeps sending chunks until the
/// client hangs up.
async fn chunked_jwks_server(
    body: Vec<u8>,
    forever: bool,
) -> (String, tokio::task::JoinHandle<()>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/jwks.json", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            let body = body.clone();
            tokio::spawn(async move {
                let mut request = [0u8; 4096];
                let _ = conn.read(&mut request).await;
                let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n";
                if conn.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                loop {
                    for chunk in body.chunks(16 * 1024) {
                        let framed = [
                            format!("{:x}\r\n", chunk.len()).into_bytes(),
                            chunk.to_vec(),
                            b"\r\n".to_vec(),
                        ]
                        .concat();
                        if conn.write_all(&framed).await.is_err() {
                            return;
                        }
                    }
                    if !forever {
                        let _ = conn.write_all(b"0\r\n\r\n").await;
                        return;
                    }
                }
            });
        }
    });
    (url, task)
}

/// Issue 25: the JWKS download stops at 1 MiB even when the server sends no
/// length (an endless chunked body included); a document under the cap, chunked,
/// is read.
#[tokio::test]
async fn the_jwks_download_is_capped_without_a_length() {
    let key = Key::new("k1");
    let honest = serde_json::json!({ "keys": [key.jwk()] })
        .to_string()
        .into_bytes();
    let mut padded = serde_json::json!({ "keys": [key.jwk()], "pad": "" }).to_string();
    padded.insert_str(padded.len() - 2, &"x".repeat(900 * 1024));
    let huge = vec![b' '; 2 * 1024 * 1024];
    // (case, body, forever, a part of the refusal or None)
    let table: Vec<(&str, Vec<u8>, bool, Option<&str>)> = vec![
        ("a chunked document", honest, false, None),
        (
            "a chunked document near the cap",
            padded.into_bytes(),
            false,
            None,
        ),
        (
            "2 MiB chunked",
            huge.clone(),
            false,
            Some("larger than 1 MiB"),
        ),
        (
            "an endless chunked body",
            huge,
            true,
            Some("larger than 1 MiB"),
        ),
    ];
    for (case, body, forever, want) in table {
        let (url, server) = chunked_jwks_server(body, forever).await;
        let config = JwtConfig {
            jwks_file: None,
            jwks_url: Some(url),
            ..jwt_config(Path::new("unused"), 0)
        };
        let stop = tokio_util::sync::CancellationToken::new();
        let started = tokio::time::timeout(
            Duration::from_secs(30),
            toolgate::jwt::JwtVerifier::start(&config, stop.clone()),
        )
        .await
        .unwrap_or_else(|_| panic!("{case}: the download did not stop within 30 s"));
        match (started, want) {
            (Ok(verifier), None) => {
                let p = verifier
                    .verify(&key.sign(claims_of(TEAM, "alice", serde_json::json!({}))))
                    .unwrap();
                assert_eq!(p.user.as_deref(), Some("alice"), "{case}");
            }
            (Err(e), Some(why)) => assert!(e.to_string().contains(why), "{case}: {e}"),
            (got, want) => panic!("{case}: wanted {want:?}, got {:?}", got.map(drop)),
        }
        stop.cancel();
        server.abort();
    }
}

/// A JWKS URL that answers with a redirect is refused, not followed: the URL checked
/// to be https (or loopback http) is where the keys must come from, and a redirect
/// could send the fetch to plain http elsewhere, where anyone on the path could put
/// their own keys.
#[tokio::test]
async fn a_jwks_redirect_is_refused_not_followed() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let key = Key::new("k1");
    // where the redirect points: real keys, so following it would have worked
    let (keys_url, keys_server) = chunked_jwks_server(
        serde_json::json!({ "keys": [key.jwk()] })
            .to_string()
            .into_bytes(),
        false,
    )
    .await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/jwks.json", listener.local_addr().unwrap());
    let redirects = tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            let location = keys_url.clone();
            tokio::spawn(async move {
                let mut request = [0u8; 4096];
                let _ = conn.read(&mut request).await;
                let answer = format!(
                    "HTTP/1.1 302 Found\r\nlocation: {location}\r\ncontent-length: 0\r\n\r\n"
                );
                let _ = conn.write_all(answer.as_bytes()).await;
            });
        }
    });
    let config = JwtConfig {
        jwks_file: None,
        jwks_url: Some(url),
        ..jwt_config(Path::new("unused"), 0)
    };
    let stop = tokio_util::sync::CancellationToken::new();
    let started = tokio::time::timeout(
        Duration::from_secs(30),
        toolgate::jwt::JwtVerifier::start(&config, stop.clone()),
    )
    .await
    .expect("the fetch ends within 30 s");
    let err = started.map(drop).expect_err("a redirect is not followed");
    let text = err.to_string();
    assert!(
        text.contains("redirect") && text.contains("auth.jwt.jwks_url"),
        "{text}"
    );
    stop.cancel();
    redirects.abort();
    keys_server.abort();
}

/// Issue 25: the keys are read again with one HTTP client, so the refreshes reuse
/// its connection rather than opening one each (a client built per refresh would).
#[tokio::test]
async fn jwks_refreshes_reuse_one_client() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let key = Key::new("k1");
    let body = serde_json::json!({ "keys": [key.jwk()] }).to_string();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/jwks.json", listener.local_addr().unwrap());
    let connections = Arc::new(AtomicUsize::new(0));
    let (requests, mut served) = tokio::sync::mpsc::unbounded_channel::<()>();
    let counted = connections.clone();
    let server = tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            let (body, requests) = (body.clone(), requests.clone());
            tokio::spawn(async move {
                // one answer per request head, as long as the client keeps the connection
                let mut pending = Vec::new();
                let mut buf = [0u8; 4096];
                loop {
                    while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                        pending.drain(..end + 4);
                        let answer = format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                            body.len()
                        );
                        if conn.write_all(answer.as_bytes()).await.is_err() {
                            return;
                        }
                        let _ = requests.send(());
                    }
                    match conn.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => pending.extend_from_slice(&buf[..n]),
                    }
                }
            });
        }
    });
    let config = JwtConfig {
        jwks_file: None,
        jwks_url: Some(url),
        refresh_secs: 1,
        ..jwt_config(Path::new("unused"), 0)
    };
    let stop = tokio_util::sync::CancellationToken::new();
    let _verifier = toolgate::jwt::JwtVerifier::start(&config, stop.clone())
        .await
        .unwrap();
    // the first read and two refreshes
    for _ in 0..3 {
        tokio::time::timeout(Duration::from_secs(30), served.recv())
            .await
            .expect("the keys are read again within 30 s")
            .unwrap();
    }
    assert_eq!(
        connections.load(Ordering::SeqCst),
        1,
        "one client, one connection"
    );
    stop.cancel();
    server.abort();
}

/// The console signs in with whatever bearer token it is given: an identity
/// provider's JWT, pasted, is asked about on the console's own origin as an API token
/// is, and the answer names its team, user and role.
#[tokio::test]
async fn a_jwt_signs_in_to_the_console_as_a_token_does() {
    let dir = tempfile::tempdir().unwrap();
    let jwks = dir.path().join("jwks.json");
    let key = Key::new("k1");
    write_jwks(&jwks, &[&key]);
    let mut config = test_config(&dir.path().join("data"));
    config.auth.jwt = Some(jwt_config(&jwks, 0));
    config.console.listen = Some("127.0.0.1:0".into());
    let server = TestServer::start(config).await;
    let console = server.console.expect("the console's address");
    let http = reqwest::Client::new();
    let ask = |token: String| {
        http.post(format!(
            "http://{console}/toolgate.v1.PrincipalService/GetPrincipal"
        ))
        .header("content-type", "application/json")
        .bearer_auth(token)
        .body("{}")
        .send()
    };
    let jwt = key.sign(claims_of(TEAM, "alice", serde_json::json!({})));
    let answer = ask(jwt).await.unwrap();
    assert_eq!(answer.status().as_u16(), 200);
    let who: serde_json::Value = answer.json().await.unwrap();
    assert_eq!(who["name"], "jwt:acme/alice@https://idp.test", "{who}");
    assert_eq!(who["role"], "PRINCIPAL_ROLE_MEMBER", "{who}");
    assert_eq!(who["teamId"], TEAM, "{who}");
    assert_eq!(who["userId"], "alice", "{who}");
    let stranger = Key::new("k1").sign(claims_of(TEAM, "alice", serde_json::json!({})));
    assert_eq!(ask(stranger).await.unwrap().status().as_u16(), 401);
    server.stop().await;
}
