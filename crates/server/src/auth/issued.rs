//! The tokens issued through the API, as the authenticator consults them: every
//! active token's digest and principal in memory, swapped whole when the store's
//! tokens change (a local create or revoke, another replica's notice), so a lookup
//! takes no lock and a revocation applies to the next call.

use super::principal::{Principal, Role};
use arc_swap::ArcSwap;
use std::collections::HashMap;
use std::sync::Arc;

/// Most tokens issued and in force per team: creation past it is refused, which
/// bounds the table every replica holds.
pub const MAX_TOKENS_PER_TEAM: u64 = 1_000;

/// One active token: who it speaks for and until when.
#[derive(Debug, Clone)]
struct Active {
    principal: Arc<Principal>,
    expires_at_ms: i64,
}

/// The active issued tokens by SHA-256.
#[derive(Debug, Default)]
pub struct IssuedTokens {
    by_hash: ArcSwap<HashMap<[u8; 32], Active>>,
}

/// One active token to hold: its digest, principal and expiry.
#[derive(Debug, Clone)]
pub struct ActiveToken {
    pub digest: [u8; 32],
    pub principal: Principal,
    pub expires_at_ms: i64,
}

impl IssuedTokens {
    /// The principal of a token digest, unless it expired by `now_ms`.
    pub fn lookup(&self, digest: &[u8; 32], now_ms: i64) -> Option<Arc<Principal>> {
        self.by_hash
            .load()
            .get(digest)
            .filter(|a| a.expires_at_ms > now_ms)
            .map(|a| a.principal.clone())
    }

    /// Replaces the whole table.
    pub fn replace(&self, tokens: impl IntoIterator<Item = ActiveToken>) {
        let map = tokens
            .into_iter()
            .map(|t| {
                (
                    t.digest,
                    Active {
                        principal: Arc::new(t.principal),
                        expires_at_ms: t.expires_at_ms,
                    },
                )
            })
            .collect();
        self.by_hash.store(Arc::new(map));
    }

    /// How many tokens are held.
    pub fn len(&self) -> usize {
        self.by_hash.load().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The roles a token may be issued with, by name.
pub fn parse_role(role: &str) -> Option<Role> {
    match role {
        "member" => Some(Role::Member),
        "admin" => Some(Role::Admin),
        "service" => Some(Role::Service),
        _ => None,
    }
}

/// The stored name of an issuable role.
pub fn role_name(role: Role) -> &'static str {
    match role {
        Role::Member => "member",
        Role::Admin => "admin",
        Role::Service => "service",
        Role::Operator => "operator",
    }
}

/// The principal name of an issued token: the user, and the token that speaks for
/// them, so the audit trail says both.
pub fn principal_name(user_id: &str, token_id: &str) -> String {
    format!("{user_id} (token {token_id})")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn active(expires_at_ms: i64) -> ActiveToken {
        ActiveToken {
            digest: [7; 32],
            principal: Principal {
                groups: Default::default(),
                name: "alice".into(),
                role: Role::Member,
                team: Some("t".into()),
                user: Some("alice".into()),
            },
            expires_at_ms,
        }
    }

    #[test]
    fn an_expired_token_speaks_for_no_one() {
        let table = IssuedTokens::default();
        table.replace([active(1_000)]);
        assert!(table.lookup(&[7; 32], 999).is_some());
        assert!(table.lookup(&[7; 32], 1_000).is_none());
        assert!(table.lookup(&[8; 32], 0).is_none());
        table.replace([]);
        assert!(table.lookup(&[7; 32], 0).is_none());
    }

    #[test]
    fn only_team_roles_are_issued() {
        for role in ["member", "admin", "service"] {
            assert_eq!(role_name(parse_role(role).unwrap()), role);
        }
        assert_eq!(parse_role("operator"), None);
        assert_eq!(parse_role("Admin"), None);
    }
}
