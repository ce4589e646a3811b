//! Authentication (bearer tokens stored as SHA-256 hashes) and the authorization matrix.
//!
//! Architecture invariant: every RPC but health and reflection passes
//! [`Authenticator::authenticate`] and then [`authorize`]; there is no unauthenticated
//! path unless anonymous access is configured, and that only on loopback.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::Arc;

/// What a principal may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Acts on its own user within its team; reads its team's admin settings.
    Member,
    /// Reads and writes everything of its team.
    Admin,
    /// Evaluates, filters and reads for its team; writes nothing.
    Service,
    /// Everything, across teams (hosting).
    Operator,
}

/// Who is calling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub name: String,
    pub role: Role,
    /// None only for operators.
    pub team: Option<String>,
    /// The user a member acts as.
    pub user: Option<String>,
}

/// What a call wants to do, checked against the principal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action<'a> {
    /// Team admin settings.
    ReadTeam,
    WriteTeam,
    ReadAudit,
    ReadUser(&'a str),
    WriteUser(&'a str),
    /// Evaluate, filter and watch on behalf of a user.
    Evaluate(&'a str),
    /// The server's non-secret configuration.
    ReadServerInfo,
    /// Issue, list and revoke the team's tokens.
    ManageTokens,
    /// List and follow the decision log: the team's (`None`) or one user's records.
    ReadDecisions(Option<&'a str>),
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    #[error("{0}")]
    Unauthenticated(&'static str),
    #[error("{0}")]
    PermissionDenied(String),
}

/// The SHA-256 of a token: the only form in which tokens are kept.
pub fn token_digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// [`token_digest`] as hex, the form the configuration takes.
pub fn hash_token(token: &str) -> String {
    hex::encode(token_digest(token))
}

/// A fresh random token: 32 bytes, hex, prefixed so it is recognisable in a leak scan.
pub fn generate_token() -> String {
    let bytes: [u8; 32] = rand::random();
    format!("tg_{}", hex::encode(bytes))
}

/// What a client certificate is recognised by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CertMatch {
    /// The subject's common name (a subject with several is refused outright).
    SubjectCn(String),
    /// A subject alternative name of one type: a DNS SAN holding `spiffe://…` is
    /// not the URI SAN `spiffe://…`.
    San(SanKind, String),
}

/// The types of subject alternative name a mapping can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SanKind {
    Dns,
    Uri,
    Email,
}

impl CertMatch {
    /// A mapping's `san`: `dns:NAME`, `uri:URI` or `email:ADDRESS`. The type is
    /// required: an untyped value would match a SAN of another type holding the
    /// same text.
    pub fn san(text: &str) -> Result<Self, String> {
        let typed = [
            ("dns:", SanKind::Dns),
            ("uri:", SanKind::Uri),
            ("email:", SanKind::Email),
        ]
        .into_iter()
        .find_map(|(prefix, kind)| {
            text.get(..prefix.len())
                .filter(|p| p.eq_ignore_ascii_case(prefix))
                .map(|_| (kind, text[prefix.len()..].trim()))
        });
        match typed {
            Some((_, "")) => Err(format!(
                "{text:?} names no value after its type: write e.g. dns:client.example"
            )),
            Some((kind, value)) => Ok(Self::San(kind, value.to_owned())),
            None => Err(format!(
                "{text:?} does not say which type of name it is: write uri:{text}, dns:{text} or email:{text} (a certificate's names are matched by type)"
            )),
        }
    }
}

/// The principal-name prefix of JWT principals: static tokens and certificates may
/// not take a name in it, so no configured name can pose as (or share the stream
/// slots of) a JWT principal.
pub const JWT_NAME_PREFIX: &str = "jwt:";

/// Names the server gives principals and audit actors itself, each with what it
/// is: a configured name may not start with one of the prefixes (`file:` is the
/// policy file's actor in the audit trail) nor be one of the names.
const RESERVED_NAME_PREFIXES: &[(&str, &str)] = &[
    (JWT_NAME_PREFIX, "principals from JWTs"),
    ("file:", "the policy file's changes in the audit trail"),
];
const RESERVED_NAMES: &[(&str, &str)] = &[
    ("anonymous", "calls without a token"),
    (
        "bootstrap-operator",
        "the token written when none is configured",
    ),
];

/// Whether a name configured for a static token or a certificate stays out of the
/// names the server gives principals and audit actors itself.
pub fn check_principal_name(name: &str) -> Result<(), String> {
    let trimmed = name.trim();
    for (prefix, what) in RESERVED_NAME_PREFIXES {
        if trimmed
            .get(..prefix.len())
            .is_some_and(|p| p.eq_ignore_ascii_case(prefix))
        {
            return Err(format!(
                "{name:?} starts with {prefix:?}, which is reserved for {what}: choose another name"
            ));
        }
    }
    for (reserved, what) in RESERVED_NAMES {
        if trimmed.eq_ignore_ascii_case(reserved) {
            return Err(format!(
                "{name:?} is reserved for {what}: choose another name"
            ));
        }
    }
    Ok(())
}

/// Whether a team id is one no credential may name: `*` is the server-wide audit
/// bucket (and everywhere else reads as "any"), so any id holding a `*` is reserved.
pub fn is_reserved_team(team: &str) -> bool {
    team.contains('*')
}

/// The error for a credential naming a reserved team, the one wording for the
/// configuration and for JWT claims.
pub fn reserved_team_problem(team: &str) -> String {
    format!(
        "{team:?} is reserved (`*` stands for every team and the server-wide audit): name the credential's own team"
    )
}

/// Resolves `authorization` headers and client certificates to principals.
#[derive(Debug, Default, Clone)]
pub struct Authenticator {
    by_hash: HashMap<[u8; 32], Arc<Principal>>,
    anonymous: Option<Arc<Principal>>,
    certificates: Vec<(CertMatch, Arc<Principal>)>,
    jwt: Option<Arc<crate::jwt::JwtVerifier>>,
    /// Tokens issued through the API (the store's), consulted after the static ones.
    issued: Option<Arc<crate::issued::IssuedTokens>>,
}

impl Authenticator {
    /// `tokens` are (sha256 hex, principal) pairs, already validated.
    pub fn new(tokens: Vec<([u8; 32], Principal)>, anonymous: Option<Principal>) -> Self {
        Self {
            by_hash: tokens.into_iter().map(|(h, p)| (h, Arc::new(p))).collect(),
            anonymous: anonymous.map(Arc::new),
            certificates: Vec::new(),
            jwt: None,
            issued: None,
        }
    }

    /// Tokens issued through the API, beside the static tokens.
    pub fn with_issued(mut self, issued: Arc<crate::issued::IssuedTokens>) -> Self {
        self.issued = Some(issued);
        self
    }

    /// JWT bearer tokens, verified beside the static tokens.
    pub fn with_jwt(mut self, jwt: Option<Arc<crate::jwt::JwtVerifier>>) -> Self {
        self.jwt = jwt;
        self
    }

    /// Principals for client certificates (mTLS), first match wins.
    pub fn with_certificates(mut self, certificates: Vec<(CertMatch, Principal)>) -> Self {
        self.certificates = certificates
            .into_iter()
            .map(|(m, p)| (m, Arc::new(p)))
            .collect();
        self
    }

    /// The principal of a client certificate the TLS handshake verified (DER).
    pub fn authenticate_certificate(&self, der: &[u8]) -> Result<Arc<Principal>, AuthError> {
        use x509_parser::extensions::GeneralName;
        let (_, cert) = x509_parser::parse_x509_certificate(der)
            .map_err(|_| AuthError::Unauthenticated("the client certificate cannot be read"))?;
        // every CN attribute, readable or not: a subject `/CN=mallory/CN=ops` must not
        // pass as `ops` (nor as `mallory`)
        let cns: Vec<_> = cert.subject().iter_common_name().collect();
        if cns.len() > 1 {
            return Err(AuthError::Unauthenticated(
                "the client certificate's subject has several common names (CN): it is refused; issue it with one",
            ));
        }
        let cn = cns.first().and_then(|cn| cn.as_str().ok());
        let sans: Vec<(SanKind, &str)> = match cert.subject_alternative_name() {
            Ok(Some(ext)) => ext
                .value
                .general_names
                .iter()
                .filter_map(|n| match n {
                    GeneralName::DNSName(v) => Some((SanKind::Dns, *v)),
                    GeneralName::URI(v) => Some((SanKind::Uri, *v)),
                    GeneralName::RFC822Name(v) => Some((SanKind::Email, *v)),
                    _ => None,
                })
                .collect(),
            Ok(None) => Vec::new(),
            // e.g. the extension twice: which one counts is unclear, so none does
            Err(_) => {
                return Err(AuthError::Unauthenticated(
                    "the client certificate's subject alternative names cannot be read",
                ));
            }
        };
        self.certificates
            .iter()
            .find(|(m, _)| match m {
                CertMatch::SubjectCn(want) => cn == Some(want.as_str()),
                CertMatch::San(kind, want) => sans.iter().any(|(k, v)| {
                    k == kind
                        && match kind {
                            // DNS names are case-insensitive; URIs and mailboxes are not
                            SanKind::Dns => v.eq_ignore_ascii_case(want),
                            SanKind::Uri | SanKind::Email => v == want,
                        }
                }),
            })
            .map(|(_, p)| p.clone())
            .ok_or(AuthError::Unauthenticated(
                "the client certificate is not mapped to a principal: add its subject_cn or its san (dns:, uri: or email:) to auth.certificates, or send a bearer token",
            ))
    }

    /// `header` is the raw `authorization` metadata value, if any.
    pub fn authenticate(&self, header: Option<&str>) -> Result<Arc<Principal>, AuthError> {
        let Some(header) = header else {
            return self.anonymous.clone().ok_or(AuthError::Unauthenticated(
                "missing authorization: send `authorization: Bearer <token>`",
            ));
        };
        let token = header
            .strip_prefix("Bearer ")
            .or_else(|| header.strip_prefix("bearer "))
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or(AuthError::Unauthenticated(
                "malformed authorization: expected `Bearer <token>`",
            ))?;
        if let Some(jwt) = &self.jwt
            && crate::jwt::looks_like_jwt(token)
        {
            return jwt.verify(token);
        }
        // only the digest is compared, so the lookup time says nothing about the token
        let digest = token_digest(token);
        self.by_hash
            .get(&digest)
            .cloned()
            .or_else(|| {
                let issued = self.issued.as_ref()?;
                issued.lookup(&digest, crate::store::now_ms())
            })
            .ok_or(AuthError::Unauthenticated(
                "unknown token (revoked or expired tokens are unknown too): ask an admin for a new one",
            ))
    }
}

/// The authorization matrix: may `p` do `action` on `team`?
pub fn authorize(p: &Principal, team: &str, action: Action<'_>) -> Result<(), AuthError> {
    if p.role == Role::Operator || action == Action::ReadServerInfo {
        return Ok(());
    }
    // no credential is given a reserved team, and none acts on one as its own
    if p.team.as_deref() != Some(team) || is_reserved_team(team) {
        return Err(AuthError::PermissionDenied(format!(
            "principal {:?} belongs to team {:?}, not {team:?}",
            p.name,
            p.team.as_deref().unwrap_or("")
        )));
    }
    let allowed = match (p.role, action) {
        (Role::Admin, _) => true,
        (_, Action::ReadTeam) => true,
        (Role::Service, Action::ReadUser(_) | Action::Evaluate(_)) => true,
        (Role::Member, Action::ReadUser(u) | Action::WriteUser(u) | Action::Evaluate(u)) => {
            p.user.as_deref() == Some(u)
        }
        // a member sees the records of its own calls, nothing of the rest of the team
        (Role::Member, Action::ReadDecisions(Some(u))) => p.user.as_deref() == Some(u),
        _ => false,
    };
    if allowed {
        Ok(())
    } else {
        Err(AuthError::PermissionDenied(format!(
            "role {:?} of principal {:?} may not {}",
            p.role,
            p.name,
            describe(action)
        )))
    }
}

fn describe(action: Action<'_>) -> String {
    match action {
        Action::ReadTeam => "read the team's admin settings".into(),
        Action::WriteTeam => "write the team's admin settings".into(),
        Action::ReadAudit => "read the audit trail".into(),
        Action::ReadUser(u) => format!("read the settings of user {u:?}"),
        Action::WriteUser(u) => format!("write the settings of user {u:?}"),
        Action::Evaluate(u) => format!("evaluate or watch for user {u:?}"),
        Action::ReadServerInfo => "read the server configuration".into(),
        Action::ManageTokens => "issue, list or revoke the team's tokens".into(),
        Action::ReadDecisions(None) => "read the team's decision log".into(),
        Action::ReadDecisions(Some(u)) => format!("read the decision log of user {u:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(role: Role, team: Option<&str>, user: Option<&str>) -> Principal {
        Principal {
            name: "p".into(),
            role,
            team: team.map(Into::into),
            user: user.map(Into::into),
        }
    }

    #[test]
    fn matrix() {
        let member = p(Role::Member, Some("t"), Some("alice"));
        let admin = p(Role::Admin, Some("t"), None);
        let service = p(Role::Service, Some("t"), None);
        let operator = p(Role::Operator, None, None);
        let table: &[(&Principal, &str, Action<'_>, bool)] = &[
            (&member, "t", Action::ReadTeam, true),
            (&member, "t", Action::WriteTeam, false),
            (&member, "t", Action::ReadAudit, false),
            (&member, "t", Action::ReadUser("alice"), true),
            (&member, "t", Action::ReadUser("bob"), false),
            (&member, "t", Action::WriteUser("alice"), true),
            (&member, "t", Action::Evaluate("bob"), false),
            (&member, "other", Action::ReadTeam, false),
            (&admin, "t", Action::WriteTeam, true),
            (&admin, "t", Action::WriteUser("bob"), true),
            (&admin, "other", Action::ReadTeam, false),
            (&service, "t", Action::Evaluate("bob"), true),
            (&service, "t", Action::ReadUser("bob"), true),
            (&service, "t", Action::WriteUser("bob"), false),
            (&service, "t", Action::WriteTeam, false),
            (&service, "t", Action::ReadAudit, false),
            (&operator, "any", Action::WriteTeam, true),
            (&operator, "*", Action::ReadAudit, true),
            (
                &p(Role::Admin, Some("*"), None),
                "*",
                Action::ReadAudit,
                false,
            ),
            (
                &p(Role::Admin, Some("a*"), None),
                "a*",
                Action::ReadTeam,
                false,
            ),
            (&operator, "any", Action::ManageTokens, true),
            (&admin, "t", Action::ManageTokens, true),
            (&admin, "other", Action::ManageTokens, false),
            (&member, "t", Action::ManageTokens, false),
            (&service, "t", Action::ManageTokens, false),
            (&member, "t", Action::ReadDecisions(Some("alice")), true),
            (&member, "t", Action::ReadDecisions(Some("bob")), false),
            (&member, "t", Action::ReadDecisions(None), false),
            (
                &member,
                "other",
                Action::ReadDecisions(Some("alice")),
                false,
            ),
            (&admin, "t", Action::ReadDecisions(None), true),
            (&admin, "other", Action::ReadDecisions(None), false),
            (&service, "t", Action::ReadDecisions(None), false),
            (&service, "t", Action::ReadDecisions(Some("bob")), false),
            (&operator, "any", Action::ReadDecisions(None), true),
        ];
        for (principal, team, action, want) in table {
            assert_eq!(
                authorize(principal, team, *action).is_ok(),
                *want,
                "{principal:?} {team} {action:?}"
            );
        }
    }

    #[test]
    fn tokens_resolve_by_hash_only() {
        let token = generate_token();
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let auth = Authenticator::new(vec![(digest, p(Role::Admin, Some("t"), None))], None);
        assert!(auth.authenticate(Some(&format!("Bearer {token}"))).is_ok());
        assert!(auth.authenticate(Some("Bearer nope")).is_err());
        assert!(auth.authenticate(Some(&token)).is_err());
        assert!(auth.authenticate(None).is_err());
        assert_eq!(hash_token(&token), hex::encode(digest));
    }
}
