//! JWT bearer tokens from an identity provider, verified against its published keys
//! (a JWKS file, followed by the server's one file poller, or a URL; looked at again
//! every `auth.jwt.refresh_secs` and, within 10 s, when a token names a key the set
//! does not hold: a rotated key is taken once the provider publishes it):
//! signature, issuer, audience, expiry and not-before
//! checked, then claims mapped to team, user and role by configuration; the
//! principal is named by issuer, team and user ([`principal_name`]).
//!
//! Symmetric keys (`HS*`, `oct`) are refused: a key every verifier holds could sign too.

use super::principal::{AuthError, Principal, Role};
use crate::config::JwtConfig;
use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, JwkSet};
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey, Validation};
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use toolgate_files::{ReadError, poll};
use tracing::{info, warn};

/// Largest JWKS document read, in bytes.
pub const MAX_JWKS_BYTES: usize = 1024 * 1024;
/// Largest token looked at, in bytes.
const MAX_TOKEN_BYTES: usize = 16 * 1024;
/// A token signed with a key the set does not hold fetches the keys again early, at
/// most this often (so unknown-kid tokens cannot make the server hammer the issuer).
const MIN_REFRESH_GAP: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum JwtError {
    #[error("auth.jwt: cannot read the keys from {source_name}: {message}")]
    Keys {
        source_name: String,
        message: String,
    },
}

/// Whether a bearer value is a JWT rather than a static token (three base64url parts).
pub fn looks_like_jwt(token: &str) -> bool {
    token.starts_with("eyJ") && token.bytes().filter(|b| *b == b'.').count() == 2
}

/// Verifies tokens against the current keys.
#[derive(Debug)]
pub struct JwtVerifier {
    config: JwtConfig,
    keys: RwLock<Arc<JwkSet>>,
    /// Woken by a token whose key is unknown: the issuer may have rotated.
    wake: Arc<tokio::sync::Notify>,
    /// Where each principal's first call with a new token is handed, once someone
    /// records sign-ins ([`JwtVerifier::follow_sign_ins`]).
    sign_ins: OnceLock<super::sign_ins::SignIns>,
}

/// Where the keys come from, and when they are looked at again.
enum Source {
    File(poll::Poller),
    Url {
        /// One client for every refresh: its connections and TLS sessions are reused.
        http: reqwest::Client,
        schedule: poll::Schedule,
    },
}

impl JwtVerifier {
    /// Reads the keys (a failure stops the start) and refreshes them every
    /// `refresh_secs` until `stop`.
    pub async fn start(config: &JwtConfig, stop: CancellationToken) -> Result<Arc<Self>, JwtError> {
        let wake = Arc::new(tokio::sync::Notify::new());
        let schedule = poll::Schedule::new(Duration::from_secs(config.refresh_secs), stop)
            .wake_on(wake.clone(), MIN_REFRESH_GAP);
        let (keys, source) = match &config.jwks_file {
            Some(file) => {
                let options = poll::Options {
                    settle: 1,
                    max_bytes: MAX_JWKS_BYTES,
                };
                let mut poller = poll::Poller::new(vec![file.clone()], options, schedule);
                let keys = parse_file(config, poller.read(0))?;
                (keys, Source::File(poller))
            }
            None => {
                // no redirects: the URL checked to be https (or loopback http) is
                // where the keys come from, not wherever it points on
                let http = reqwest::Client::builder()
                    .timeout(Duration::from_secs(10))
                    .redirect(reqwest::redirect::Policy::none())
                    .build()
                    .map_err(|e| keys_error(config, e.to_string()))?;
                let keys = fetch(config, &http).await?;
                (keys, Source::Url { http, schedule })
            }
        };
        info!(keys = keys.keys.len(), source = %source_name(config), "jwt keys loaded");
        let verifier = Arc::new(Self {
            config: config.clone(),
            keys: RwLock::new(Arc::new(keys)),
            wake,
            sign_ins: OnceLock::new(),
        });
        tokio::spawn(verifier.clone().refresh(source));
        Ok(verifier)
    }

    /// Takes the keys each look finds until stopped.
    async fn refresh(self: Arc<Self>, source: Source) {
        match source {
            Source::File(mut poller) => {
                while let Some(reports) = poller.next().await {
                    for report in reports {
                        self.take(parse_file(&self.config, report.read));
                    }
                }
            }
            Source::Url { http, mut schedule } => {
                while schedule.wait().await {
                    self.take(fetch(&self.config, &http).await);
                }
            }
        }
    }

    /// Puts keys read again in force when they differ; a failure keeps the ones in
    /// force.
    fn take(&self, read: Result<JwkSet, JwtError>) {
        match read {
            Ok(keys) => {
                if *self.current() != keys {
                    info!(
                        keys = keys.keys.len(),
                        "jwt keys changed: rotated keys in force"
                    );
                    *self.keys.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(keys);
                }
            }
            Err(e) => warn!(error = %e, "jwt keys not refreshed: keeping the ones in force"),
        }
    }

    /// The sign-ins from now on (a principal's first call with each new token),
    /// at most `capacity` waiting; None when someone follows them already.
    pub fn follow_sign_ins(
        &self,
        capacity: usize,
    ) -> Option<tokio::sync::mpsc::Receiver<super::sign_ins::SignedIn>> {
        let (sign_ins, rx) = super::sign_ins::SignIns::channel(capacity);
        self.sign_ins.set(sign_ins).ok().map(|()| rx)
    }

    fn current(&self) -> Arc<JwkSet> {
        self.keys.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The principal a valid token names.
    pub fn verify(&self, token: &str) -> Result<Arc<Principal>, AuthError> {
        if token.len() > MAX_TOKEN_BYTES {
            return Err(AuthError::Unauthenticated("jwt longer than 16 KiB"));
        }
        let header = jsonwebtoken::decode_header(token)
            .map_err(|_| AuthError::Unauthenticated("malformed jwt header"))?;
        let keys = self.current();
        let jwk = match &header.kid {
            Some(kid) => keys.find(kid),
            // without a kid, only a one-key set is unambiguous
            None if keys.keys.len() == 1 => keys.keys.first(),
            None => None,
        }
        .ok_or_else(|| {
            // the issuer may have rotated: read its keys again soon
            self.wake.notify_one();
            AuthError::Unauthenticated("jwt signed with a key the issuer's JWKS does not hold")
        })?;
        check_algorithm(jwk, header.alg)?;
        let key = DecodingKey::from_jwk(jwk)
            .map_err(|_| AuthError::Unauthenticated("the issuer's key cannot be used"))?;
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[&self.config.issuer]);
        validation.set_audience(&[&self.config.audience]);
        validation.leeway = self.config.leeway_secs;
        // a token not valid yet is refused like an expired one, with the same leeway
        validation.validate_nbf = true;
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        let data = jsonwebtoken::decode::<serde_json::Map<String, serde_json::Value>>(
            token,
            &key,
            &validation,
        )
        .map_err(|e| {
            use jsonwebtoken::errors::ErrorKind;
            AuthError::Unauthenticated(match e.kind() {
                ErrorKind::ExpiredSignature => "jwt expired",
                ErrorKind::ImmatureSignature => "jwt not valid yet (nbf)",
                ErrorKind::InvalidAudience => "jwt not meant for this server (audience)",
                ErrorKind::InvalidIssuer => "jwt from another issuer",
                ErrorKind::InvalidSignature => "jwt signature does not verify",
                ErrorKind::MissingRequiredClaim(_) => "jwt lacks exp, iss or aud",
                _ => "jwt refused",
            })
        })?;
        let principal = Arc::new(self.principal(&data.claims)?);
        if let Some(sign_ins) = self.sign_ins.get() {
            // `exp` is required and checked: it names the token among the principal's
            let expires = data.claims.get("exp").and_then(serde_json::Value::as_i64);
            sign_ins.note(&principal, &self.config.issuer, expires.unwrap_or(0));
        }
        Ok(principal)
    }

    fn principal(
        &self,
        claims: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<Principal, AuthError> {
        let text = |name: &str| {
            claims
                .get(name)
                .and_then(|v| v.as_str())
                .filter(|v| !v.trim().is_empty())
        };
        let map = &self.config.claims;
        let user = text(&map.user).ok_or(AuthError::Unauthenticated(
            "jwt lacks the user claim (auth.jwt.claims.user)",
        ))?;
        let role = match text(&map.role) {
            Some(value) => serde_json::from_value::<Role>(serde_json::Value::String(value.into()))
                .map_err(|_| {
                    AuthError::Unauthenticated(
                        "jwt role claim is none of member, admin, service, operator",
                    )
                })?,
            None => self.config.default_role,
        };
        if role == Role::Operator && !self.config.allow_operator {
            return Err(AuthError::Unauthenticated(
                "jwt role operator is not allowed: set auth.jwt.allow_operator to let tokens be operators",
            ));
        }
        let team = match text(&map.team) {
            Some(team) => Some(team),
            None => team_by_group(self.config.team_by_group.as_ref(), claims)?,
        };
        let team = match (role, team) {
            (Role::Operator, _) => None,
            (_, Some(team)) if super::principal::is_reserved_team(team) => {
                return Err(AuthError::Unauthenticated(
                    "jwt team claim names a reserved team (`*` stands for every team): the identity provider must name the user's own team",
                ));
            }
            (_, Some(team)) => Some(
                crate::ids::check_id("team", team)
                    .map_err(|_| AuthError::Unauthenticated("jwt team claim is not a valid id"))?
                    .into_owned(),
            ),
            (_, None) => {
                return Err(AuthError::Unauthenticated(
                    "jwt lacks the team claim (auth.jwt.claims.team) and no group of it is mapped to a team (auth.jwt.team_by_group)",
                ));
            }
        };
        let user = crate::ids::check_id("user", user)
            .map_err(|_| AuthError::Unauthenticated("jwt user claim is not a valid id"))?
            .into_owned();
        let groups = match &self.config.groups {
            Some(config) => super::groups::from_claims(config, claims)?,
            None => Vec::new(),
        };
        Ok(Principal {
            groups: groups.into(),
            name: principal_name(&self.config.issuer, team.as_deref(), &user),
            role,
            team,
            user: Some(user),
        })
    }
}

/// The team `auth.jwt.team_by_group` gives the token's groups: none when no group is
/// mapped, refused when two groups name different teams (which was meant cannot be
/// guessed) or the claim is not a list of names.
fn team_by_group<'c>(
    config: Option<&'c crate::config::TeamByGroupConfig>,
    claims: &serde_json::Map<String, serde_json::Value>,
) -> Result<Option<&'c str>, AuthError> {
    let Some(config) = config else {
        return Ok(None);
    };
    // read as the groups are, by the one reader (a dotted path, a list or a string)
    use super::groups::{ClaimProblem, claim_names};
    let groups = claim_names(claims, &config.claim).map_err(|p| {
        AuthError::Unauthenticated(match p {
            ClaimProblem::NotNames => {
                "jwt groups claim (auth.jwt.team_by_group.claim) holds something other than names"
            }
            ClaimProblem::NotAList => {
                "jwt groups claim (auth.jwt.team_by_group.claim) is neither a list nor a string of names"
            }
            ClaimProblem::TooLarge => {
                "jwt groups claim holds more than 1024 groups (or a name past 1024 bytes)"
            }
        })
    })?;
    let Some(groups) = groups else {
        return Ok(None);
    };
    let mut team = None;
    for group in groups {
        match (team, config.teams.get(group)) {
            (_, None) => {}
            (None, Some(t)) => team = Some(t.as_str()),
            (Some(seen), Some(t)) if seen == t => {}
            (Some(_), Some(_)) => {
                return Err(AuthError::Unauthenticated(
                    "jwt groups map to two teams (auth.jwt.team_by_group.teams): a user belongs to one team; the identity provider must put them in one mapped group",
                ));
            }
        }
    }
    Ok(team)
}

/// A JWT principal's name, `jwt:TEAM/USER@ISSUER` (`jwt:/USER@ISSUER` for an
/// operator, who has no team): unique per issuer, team and user, so `alice` of
/// another team holds her own stream slots and audit name. `%`, `/` and `@` in the
/// team and user are percent-encoded so no two triples share a name; static names
/// cannot start with `jwt:` ([`super::principal::check_principal_name`]).
pub fn principal_name(issuer: &str, team: Option<&str>, user: &str) -> String {
    fn escape(id: &str) -> String {
        id.replace('%', "%25")
            .replace('/', "%2F")
            .replace('@', "%40")
    }
    format!(
        "{}{}/{}@{issuer}",
        super::principal::JWT_NAME_PREFIX,
        escape(team.unwrap_or("")),
        escape(user)
    )
}

/// The token's algorithm must be the key's: its `alg` when the JWKS names one, else
/// one of its family; never a symmetric one.
fn check_algorithm(jwk: &Jwk, alg: Algorithm) -> Result<(), AuthError> {
    let family = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => AlgorithmFamily::Rsa,
        AlgorithmParameters::EllipticCurve(_) => AlgorithmFamily::Ec,
        AlgorithmParameters::OctetKeyPair(_) => AlgorithmFamily::Ed,
        _ => {
            return Err(AuthError::Unauthenticated(
                "the issuer's key type is not supported",
            ));
        }
    };
    let fits = match jwk.common.key_algorithm {
        Some(named) => Algorithm::try_from(named).ok() == Some(alg),
        None => true,
    };
    if fits && alg.family() == family {
        Ok(())
    } else {
        Err(AuthError::Unauthenticated(
            "jwt algorithm does not fit the key",
        ))
    }
}

fn source_name(config: &JwtConfig) -> String {
    match (&config.jwks_file, &config.jwks_url) {
        (Some(file), _) => file.display().to_string(),
        (None, Some(url)) => crate::config::redact_url(url),
        (None, None) => "(no source)".into(),
    }
}

fn keys_error(config: &JwtConfig, message: String) -> JwtError {
    JwtError::Keys {
        source_name: source_name(config),
        message,
    }
}

fn too_large(config: &JwtConfig) -> JwtError {
    keys_error(config, format!("larger than {} MiB", MAX_JWKS_BYTES >> 20))
}

/// The keys of the JWKS file as the poller read it (at most [`MAX_JWKS_BYTES`]).
fn parse_file(
    config: &JwtConfig,
    read: Result<poll::Content, ReadError>,
) -> Result<JwkSet, JwtError> {
    match read {
        Ok(content) => parse(config, &content.bytes),
        Err(ReadError::TooLarge(_)) => Err(too_large(config)),
        Err(e) => Err(keys_error(config, e.to_string())),
    }
}

/// The keys at the JWKS URL.
async fn fetch(config: &JwtConfig, http: &reqwest::Client) -> Result<JwkSet, JwtError> {
    let err = |e: reqwest::Error| keys_error(config, e.to_string());
    let Some(url) = &config.jwks_url else {
        return Err(keys_error(
            config,
            "set auth.jwt.jwks_file or auth.jwt.jwks_url".into(),
        ));
    };
    let mut answer = http
        .get(url)
        .send()
        .await
        .and_then(|a| a.error_for_status())
        .map_err(err)?;
    if answer.status().is_redirection() {
        let to = answer
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|l| l.to_str().ok())
            .unwrap_or("(no location)");
        return Err(keys_error(
            config,
            format!(
                "answered {} with a redirect to {:?}, which is not followed: set auth.jwt.jwks_url to where the keys are",
                answer.status(),
                crate::config::redact_url(to)
            ),
        ));
    }
    if answer.content_length().unwrap_or(0) > MAX_JWKS_BYTES as u64 {
        return Err(too_large(config));
    }
    // read chunk by chunk and stop at the cap: a body sent without a length (or with
    // a false one) cannot make the server buffer without bound
    let mut bytes = Vec::new();
    while let Some(chunk) = answer.chunk().await.map_err(err)? {
        if bytes.len() + chunk.len() > MAX_JWKS_BYTES {
            return Err(too_large(config));
        }
        bytes.extend_from_slice(&chunk);
    }
    parse(config, &bytes)
}

fn parse(config: &JwtConfig, bytes: &[u8]) -> Result<JwkSet, JwtError> {
    serde_json::from_slice(bytes).map_err(|e| {
        keys_error(
            config,
            format!("not a JWKS document ({e}): give {{\"keys\": [...]}}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Hostile and ordinary groups claims against one mapping.
    #[test]
    fn team_by_group_reads_the_claim_and_fails_closed() {
        let config = crate::config::TeamByGroupConfig {
            claim: "groups".into(),
            teams: [
                ("eng-platform", "platform"),
                ("sre", "platform"),
                ("data", "data"),
            ]
            .map(|(g, t)| (g.to_owned(), t.to_owned()))
            .into(),
        };
        let many: Vec<String> = (0..=super::super::groups::MAX_CLAIM_NAMES)
            .map(|i| format!("g{i}"))
            .collect();
        // (case, the claims, the team or a part of the refusal)
        type Row = (
            &'static str,
            serde_json::Value,
            Result<Option<&'static str>, &'static str>,
        );
        let table: Vec<Row> = vec![
            ("no claim", json!({}), Ok(None)),
            (
                "a list",
                json!({"groups": ["x", "eng-platform"]}),
                Ok(Some("platform")),
            ),
            (
                "a spaced string",
                json!({"groups": "x sre"}),
                Ok(Some("platform")),
            ),
            (
                "a comma string",
                json!({"groups": "data,x"}),
                Ok(Some("data")),
            ),
            (
                "two groups, one team",
                json!({"groups": ["sre", "eng-platform"]}),
                Ok(Some("platform")),
            ),
            (
                "two teams",
                json!({"groups": ["data", "sre"]}),
                Err("two teams"),
            ),
            ("none mapped", json!({"groups": ["x"]}), Ok(None)),
            ("case differs", json!({"groups": ["SRE"]}), Ok(None)),
            (
                "not names",
                json!({"groups": ["sre", 1]}),
                Err("other than names"),
            ),
            (
                "an object",
                json!({"groups": {"sre": true}}),
                Err("neither a list"),
            ),
            ("too many", json!({"groups": many}), Err("more than 1024")),
            (
                "a name past 1 KiB",
                json!({"groups": ["x".repeat(1025)]}),
                Err("more than 1024"),
            ),
            ("null", json!({"groups": null}), Ok(None)),
        ];
        for (case, claims, want) in table {
            let claims = claims.as_object().unwrap().clone();
            let got = team_by_group(Some(&config), &claims);
            match (got, want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{case}"),
                (Err(AuthError::Unauthenticated(got)), Err(want)) => {
                    assert!(got.contains(want), "{case}: {got}")
                }
                (got, want) => panic!("{case}: got {got:?}, want {want:?}"),
            }
        }
        let claims = json!({"groups": ["sre"]}).as_object().unwrap().clone();
        assert_eq!(team_by_group(None, &claims).unwrap(), None, "no mapping");
        // a dotted path, as the groups claim takes one: the same reader
        let nested = crate::config::TeamByGroupConfig {
            claim: "realm_access.roles".into(),
            ..config
        };
        let claims = json!({"realm_access": {"roles": ["data"]}});
        let claims = claims.as_object().unwrap().clone();
        assert_eq!(team_by_group(Some(&nested), &claims).unwrap(), Some("data"));
    }
}
