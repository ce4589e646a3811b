//! JWT bearer tokens through the real server: a token of the issuer's, for this
//! audience and not expired, is its principal; an expired, wrongly signed,
//! wrong-audience or unknown-key token is refused with why; a rotated key is accepted
//! once the JWKS holds it (a token naming an unknown key has the keys read again,
//! without waiting for the refresh period); static tokens keep working beside them;
//! the role operator is refused unless allowed, and the bootstrap token is written
//! only when no JWT may be an operator.

use crate::support;

use base64::Engine as _;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use rcgen::KeyPair;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use support::*;
use toolgate::config::{JwtClaims, JwtConfig};
use toolgate::proto::v1 as pb;

const ISSUER: &str = "https://idp.test";
const AUDIENCE: &str = "toolgate";

/// An ES256 signing key and its public JWK.
struct Key {
    kid: String,
    pair: KeyPair,
}

impl Key {
    fn new(kid: &str) -> Self {
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

    fn sign(&self, claims: serde_json::Value) -> String {
        self.sign_as(&self.kid.clone(), claims)
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn claims(user: &str, audience: &str, exp: u64) -> serde_json::Value {
    serde_json::json!({
        "iss": ISSUER, "aud": audience, "exp": exp, "sub": user, "team": TEAM,
        "role": "member",
    })
}

fn write_jwks(path: &Path, keys: &[&Key]) {
    let jwks = serde_json::json!({ "keys": keys.iter().map(|k| k.jwk()).collect::<Vec<_>>() });
    let temp = path.with_extension("tmp");
    std::fs::write(&temp, jwks.to_string()).unwrap();
    std::fs::rename(&temp, path).unwrap();
}

async fn evaluate(server: &TestServer, token: &str, user: &str) -> Result<(), tonic::Status> {
    server
        .policy(token)
        .evaluate(pb::EvaluateRequest {
            team_id: TEAM.into(),
            user_id: user.into(),
            call: Some(mcp("github", "get_issue")),
            explain: false,
            agent: None,
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
            issuer: ISSUER.into(),
            audience: AUDIENCE.into(),
            jwks_file: Some(jwks),
            jwks_url: None,
            refresh_secs: 3600,
            leeway_secs: 0,
            claims: JwtClaims::default(),
            default_role: toolgate::auth::Role::Member,
            allow_operator,
        });
        let app = toolgate::server::App::build(config).await.unwrap();
        assert_eq!(
            app.bootstrap_token_path.is_some(),
            !allow_operator,
            "allow_operator: {allow_operator}"
        );
    }
}
