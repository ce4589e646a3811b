//! Who may call: static tokens, client certificates, JWT and the anonymous principal,
//! and the principals the server builds from them.

use super::Config;
use crate::auth::principal::{Principal, Role};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use toolgate_core::policy::groups::{check_group_name, normalise_groups};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuthConfig {
    pub tokens: Vec<TokenConfig>,
    /// Principals for client certificates (mTLS, `tls.client_ca`).
    pub certificates: Vec<CertificateConfig>,
    /// JWT bearer tokens from an identity provider, beside the static tokens.
    pub jwt: Option<JwtConfig>,
    /// Principal for calls without a token. Only allowed on a loopback listen address.
    pub anonymous: Option<AnonymousConfig>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenConfig {
    /// A name for logs and the audit trail.
    pub name: String,
    /// SHA-256 of the token, hex (`toolgate hash-token` prints it).
    pub sha256: String,
    pub role: Role,
    /// Required for every role but operator.
    #[serde(default)]
    pub team: Option<String>,
    /// The user a member acts as; defaults to `name`.
    #[serde(default)]
    pub user: Option<String>,
    /// The groups the holder is in (their policies in the team apply to them).
    #[serde(default)]
    pub groups: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnonymousConfig {
    pub role: Role,
    #[serde(default)]
    pub team: Option<String>,
    #[serde(default)]
    pub user: Option<String>,
}

/// JWT bearer tokens: whose keys verify them, what they must say, and which claims
/// name the principal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JwtConfig {
    /// The `iss` tokens must carry.
    pub issuer: String,
    /// The `aud` tokens must carry (one of theirs).
    pub audience: String,
    /// The issuer's keys as a JWKS file...
    #[serde(default)]
    pub jwks_file: Option<PathBuf>,
    /// ...or a URL serving them (e.g. `https://idp.example/.well-known/jwks.json`).
    #[serde(default)]
    pub jwks_url: Option<String>,
    /// Seconds between reads of the keys (rotated keys are taken at the next one).
    #[serde(default = "JwtConfig::default_refresh_secs")]
    pub refresh_secs: u64,
    /// Seconds of clock skew allowed on `exp` and `nbf`.
    #[serde(default = "JwtConfig::default_leeway_secs")]
    pub leeway_secs: u64,
    #[serde(default)]
    pub claims: JwtClaims,
    /// The role of a token without the role claim.
    #[serde(default = "JwtConfig::default_role")]
    pub default_role: Role,
    /// Whether a token may be an operator (every team, the server's settings). Off by
    /// default: a role claim the identity provider lets someone set must not reach
    /// past admin unless the operator of toolgate says so.
    #[serde(default)]
    pub allow_operator: bool,
    /// How developers sign in with `toolgate login --sso` (told by `GetSignIn`).
    #[serde(default)]
    pub sign_in: Option<SignInConfig>,
    /// Enrolment: the team of a token without the team claim, by its groups.
    #[serde(default)]
    pub team_by_group: Option<TeamByGroupConfig>,
    /// Where tokens say which groups the caller is in; unset: JWT principals are in
    /// no group.
    #[serde(default)]
    pub groups: Option<JwtGroupsConfig>,
}

/// What `toolgate login --sso` needs besides the issuer: the OAuth client it signs
/// in as, the scopes it asks for, the flows it may use and which token it sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignInConfig {
    /// The public OAuth client (no secret) registered at the issuer for toolgate.
    pub client_id: String,
    /// The scopes asked for; `offline_access` gets the refresh token.
    #[serde(default = "SignInConfig::default_scopes")]
    pub scopes: Vec<String>,
    /// The flows offered: `device` (RFC 8628) and `browser` (code with PKCE).
    #[serde(default = "SignInConfig::default_flows")]
    pub flows: Vec<SignInFlow>,
    /// The token sent to toolgate: `id_token` (its audience is the client id) or
    /// `access_token` (a JWT for `auth.jwt.audience`).
    #[serde(default)]
    pub bearer: SignInBearer,
    /// Lets the issuer be plain http on this machine (a test provider), never elsewhere.
    #[serde(default)]
    pub allow_loopback_http: bool,
}

impl SignInConfig {
    fn default_scopes() -> Vec<String> {
        ["openid", "profile", "email", "offline_access"]
            .map(String::from)
            .to_vec()
    }
    fn default_flows() -> Vec<SignInFlow> {
        vec![SignInFlow::Device, SignInFlow::Browser]
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SignInFlow {
    Device,
    Browser,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SignInBearer {
    #[default]
    IdToken,
    AccessToken,
}

/// A developer's team from the groups the identity provider gives them, for tokens
/// without the team claim: no admin enrols anyone by hand.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TeamByGroupConfig {
    /// The claim holding the groups, a dotted path read as `auth.jwt.groups.claim`
    /// is: a list, or names separated by spaces or commas.
    #[serde(default = "TeamByGroupConfig::default_claim")]
    pub claim: String,
    /// Identity-provider group → toolgate team. A user whose groups name two teams is
    /// refused: which one was meant cannot be guessed.
    pub teams: std::collections::BTreeMap<String, String>,
}

impl TeamByGroupConfig {
    fn default_claim() -> String {
        "groups".into()
    }
}

/// The groups claim of JWTs: where it is, which of its names count, and what they
/// are called in toolgate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JwtGroupsConfig {
    /// The claim, a dotted path into the token (`groups`, `realm_access.roles`): a
    /// list of names, or one string of names separated by spaces or commas.
    pub claim: String,
    /// Only names starting with this count, without it (`toolgate-`); empty: all.
    pub prefix: String,
    /// Names as the identity provider spells them (after the prefix) to toolgate
    /// group names.
    pub map: std::collections::BTreeMap<String, String>,
    /// Only the names `map` lists count; off: any other name counts as itself and
    /// must then be a group name, or the token is refused.
    pub mapped_only: bool,
}

#[cfg(test)]
impl JwtGroupsConfig {
    /// A section as a test writes it: the map as pairs.
    pub(crate) fn of(claim: &str, prefix: &str, map: &[(&str, &str)], mapped_only: bool) -> Self {
        Self {
            claim: claim.into(),
            prefix: prefix.into(),
            map: map
                .iter()
                .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
                .collect(),
            mapped_only,
        }
    }
}

impl Default for JwtGroupsConfig {
    fn default() -> Self {
        Self {
            claim: "groups".into(),
            prefix: String::new(),
            map: Default::default(),
            mapped_only: false,
        }
    }
}

impl JwtGroupsConfig {
    /// Every problem of the `auth.jwt.groups` section, each naming its key and the fix.
    pub fn problems(&self) -> Vec<String> {
        let c = self;
        let mut problems = Vec::new();
        if c.claim.split('.').any(|part| part.trim().is_empty()) {
            problems.push(format!(
                "auth.jwt.groups.claim: {:?} is not a claim path: name the claim (`groups`) or a dotted path into it (`realm_access.roles`)",
                c.claim
            ));
        }
        for (from, to) in &c.map {
            if from.is_empty() {
                problems.push(
                    "auth.jwt.groups.map: a key is empty: give the name as the identity provider spells it".into(),
                );
            }
            if let Err(e) = check_group_name(to) {
                problems.push(format!("auth.jwt.groups.map.{from}: {e}"));
            }
        }
        if c.mapped_only && c.map.is_empty() {
            problems.push(
                "auth.jwt.groups.mapped_only: with an empty map no name counts: list the names in auth.jwt.groups.map, or turn mapped_only off".into(),
            );
        }
        problems
    }
}

impl JwtConfig {
    fn default_refresh_secs() -> u64 {
        300
    }
    fn default_leeway_secs() -> u64 {
        30
    }
    fn default_role() -> Role {
        Role::Member
    }
}

/// Which claims name the team, the user and the role.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JwtClaims {
    pub team: String,
    pub user: String,
    pub role: String,
}

impl Default for JwtClaims {
    fn default() -> Self {
        Self {
            team: "team".into(),
            user: "sub".into(),
            role: "role".into(),
        }
    }
}

/// A principal for the holder of a client certificate (mTLS).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CertificateConfig {
    /// A name for logs and the audit trail.
    pub name: String,
    /// Matches a certificate whose subject common name (CN) is this.
    #[serde(default)]
    pub subject_cn: Option<String>,
    /// Matches a certificate with this subject alternative name, typed:
    /// `dns:NAME`, `uri:URI` (e.g. `uri:spiffe://acme/proxy`) or `email:ADDRESS`.
    #[serde(default)]
    pub san: Option<String>,
    pub role: Role,
    #[serde(default)]
    pub team: Option<String>,
    /// The user a member acts as; defaults to `name`.
    #[serde(default)]
    pub user: Option<String>,
    /// The groups the holder is in (their policies in the team apply to them).
    #[serde(default)]
    pub groups: Vec<String>,
}

impl Config {
    /// The configured token principals as (digest, principal) pairs.
    pub fn token_principals(&self) -> Vec<([u8; 32], Principal)> {
        self.auth
            .tokens
            .iter()
            .filter_map(|t| {
                Some((
                    parse_sha256(&t.sha256)?,
                    Principal {
                        name: t.name.clone(),
                        role: t.role,
                        team: t.team.as_deref().map(normalised),
                        user: Some(normalised(t.user.as_deref().unwrap_or(&t.name))),
                        // validated at load: a bad list never reaches here
                        groups: normalise_groups(t.groups.iter().cloned())
                            .unwrap_or_default()
                            .into(),
                    },
                ))
            })
            .collect()
    }

    /// The configured certificate principals, with what matches them.
    pub fn certificate_principals(&self) -> Vec<(crate::auth::principal::CertMatch, Principal)> {
        self.auth
            .certificates
            .iter()
            .filter_map(|c| {
                let matcher = match (&c.subject_cn, &c.san) {
                    (Some(cn), None) => crate::auth::principal::CertMatch::SubjectCn(cn.clone()),
                    (None, Some(san)) => crate::auth::principal::CertMatch::san(san).ok()?,
                    _ => return None,
                };
                Some((
                    matcher,
                    Principal {
                        name: c.name.clone(),
                        role: c.role,
                        team: c.team.as_deref().map(normalised),
                        user: Some(normalised(c.user.as_deref().unwrap_or(&c.name))),
                        groups: normalise_groups(c.groups.iter().cloned())
                            .unwrap_or_default()
                            .into(),
                    },
                ))
            })
            .collect()
    }

    /// The anonymous principal, if configured.
    pub fn anonymous_principal(&self) -> Option<Principal> {
        self.auth.anonymous.as_ref().map(|a| Principal {
            groups: Default::default(),
            name: "anonymous".into(),
            role: a.role,
            team: a.team.as_deref().map(normalised),
            user: a.user.as_deref().map(normalised),
        })
    }
}

/// An id from the configuration in the one spelling the service compares (NFC).
fn normalised(id: &str) -> String {
    crate::ids::check_id("id", id).map_or_else(|_| id.to_owned(), |id| id.into_owned())
}

pub(super) fn parse_sha256(s: &str) -> Option<[u8; 32]> {
    let bytes = hex::decode(s.trim()).ok()?;
    bytes.try_into().ok()
}
