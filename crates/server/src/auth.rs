//! Authentication (bearer tokens stored as SHA-256 hashes) and the authorization matrix.
//!
//! Architecture invariant: every RPC but health, reflection and `GetSignIn` (how to
//! sign in: nothing secret, asked before there is a token) passes
//! [`Authenticator::authenticate`] and then [`authorize`]; there is no other
//! unauthenticated path unless anonymous access is configured, and that only on loopback.

pub mod groups;
pub mod issued;
pub mod jwt;
pub mod principal;
pub mod sign_ins;

pub use principal::*;

use std::collections::HashMap;
use std::sync::Arc;

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

/// Resolves `authorization` headers and client certificates to principals.
#[derive(Debug, Default, Clone)]
pub struct Authenticator {
    by_hash: HashMap<[u8; 32], Arc<Principal>>,
    anonymous: Option<Arc<Principal>>,
    certificates: Vec<(CertMatch, Arc<Principal>)>,
    jwt: Option<Arc<crate::auth::jwt::JwtVerifier>>,
    /// Tokens issued through the API (the store's), consulted after the static ones.
    issued: Option<Arc<crate::auth::issued::IssuedTokens>>,
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
    pub fn with_issued(mut self, issued: Arc<crate::auth::issued::IssuedTokens>) -> Self {
        self.issued = Some(issued);
        self
    }

    /// JWT bearer tokens, verified beside the static tokens.
    pub fn with_jwt(mut self, jwt: Option<Arc<crate::auth::jwt::JwtVerifier>>) -> Self {
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
            && crate::auth::jwt::looks_like_jwt(token)
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
    if team == ORG_TEAM && action != Action::ReadServerInfo {
        return authorize_org(p, action);
    }
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

/// The organisation's group policies apply in every team, so only an operator
/// (whose reach is every team) reads, writes or audits them; nobody decides,
/// watches or holds tokens in the organisation's document.
fn authorize_org(p: &Principal, action: Action<'_>) -> Result<(), AuthError> {
    let org_action = matches!(
        action,
        Action::ReadTeam | Action::WriteTeam | Action::ReadAudit
    );
    if p.role == Role::Operator && org_action {
        return Ok(());
    }
    let why = if org_action {
        format!(
            "only an operator may read, write or audit team {ORG_TEAM:?}, the organisation's group policies (they apply in every team); principal {:?} has role {:?}: ask an operator, or write the group policy in your own team",
            p.name, p.role
        )
    } else {
        format!(
            "team {ORG_TEAM:?} holds the organisation's group policies only: nobody may {} in it",
            describe(action)
        )
    };
    Err(AuthError::PermissionDenied(why))
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
            groups: Default::default(),
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
        let digest: [u8; 32] = token_digest(&token);
        let auth = Authenticator::new(vec![(digest, p(Role::Admin, Some("t"), None))], None);
        assert!(auth.authenticate(Some(&format!("Bearer {token}"))).is_ok());
        assert!(auth.authenticate(Some("Bearer nope")).is_err());
        assert!(auth.authenticate(Some(&token)).is_err());
        assert!(auth.authenticate(None).is_err());
        assert_eq!(hash_token(&token), hex::encode(digest));
    }
}
