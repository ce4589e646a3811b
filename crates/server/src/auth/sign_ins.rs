//! Sign-ins the authenticator sees: a principal's first call with an identity
//! provider's token it had not used before (a sign-in, or a refresh), handed over a
//! bounded channel to whoever records them. Each principal's last token is
//! remembered by its expiry, so a call with a token already seen costs one lookup
//! and records nothing: the record follows tokens, never calls.

use super::principal::Principal;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// Most principals whose last token is remembered: past it the memory starts again
/// (the next call of each records one sign-in more), so it never grows unbounded.
pub const MAX_REMEMBERED: usize = 100_000;

/// A principal came with a new token.
#[derive(Debug, Clone)]
pub struct SignedIn {
    pub principal: Arc<Principal>,
    /// The identity provider's issuer.
    pub issuer: String,
    /// Unix milliseconds.
    pub at_ms: i64,
}

/// The sign-ins being handed over, and each principal's last token.
#[derive(Debug)]
pub struct SignIns {
    tx: mpsc::Sender<SignedIn>,
    /// Principal name → the expiry of its last token seen.
    seen: Mutex<HashMap<String, i64>>,
}

impl SignIns {
    /// A hand-over holding at most `capacity` sign-ins not yet taken.
    pub fn channel(capacity: usize) -> (Self, mpsc::Receiver<SignedIn>) {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        (
            Self {
                tx,
                seen: Mutex::new(HashMap::new()),
            },
            rx,
        )
    }

    /// Hands `principal`'s sign-in over when its token (named by `expires`, the
    /// token's `exp`) is not the last one seen. A full hand-over drops it unseen, so
    /// its next call tries again. Principals without a team (operators) are not
    /// team members and are not recorded.
    pub fn note(&self, principal: &Arc<Principal>, issuer: &str, expires: i64) {
        if principal.team.is_none() || principal.user.is_none() {
            return;
        }
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        if seen.get(&principal.name) == Some(&expires) {
            return;
        }
        let at_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        let handed = self.tx.try_send(SignedIn {
            principal: principal.clone(),
            issuer: issuer.to_owned(),
            at_ms,
        });
        if handed.is_ok() {
            if seen.len() >= MAX_REMEMBERED {
                seen.clear();
            }
            seen.insert(principal.name.clone(), expires);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::Role;

    fn principal(name: &str, team: Option<&str>) -> Arc<Principal> {
        Arc::new(Principal {
            groups: vec!["contractors".into()].into(),
            name: name.into(),
            role: Role::Member,
            team: team.map(str::to_owned),
            user: Some("alice".into()),
        })
    }

    #[test]
    fn a_sign_in_is_handed_over_once_per_token_and_never_blocks() {
        let (sign_ins, mut rx) = SignIns::channel(2);
        let alice = principal("jwt:acme/alice@i", Some("acme"));
        for _ in 0..5 {
            sign_ins.note(&alice, "i", 100);
        }
        assert_eq!(rx.try_recv().unwrap().principal.name, "jwt:acme/alice@i");
        assert!(rx.try_recv().is_err(), "the same token is one sign-in");
        // a refreshed token is a new sign-in
        sign_ins.note(&alice, "i", 200);
        assert!(rx.try_recv().is_ok());
        // an operator has no team: nothing
        sign_ins.note(&principal("jwt:/op@i", None), "i", 1);
        assert!(rx.try_recv().is_err());
        // a full hand-over drops, and the next call tries again
        let bob = principal("jwt:acme/bob@i", Some("acme"));
        let carol = principal("jwt:acme/carol@i", Some("acme"));
        let dave = principal("jwt:acme/dave@i", Some("acme"));
        sign_ins.note(&bob, "i", 1);
        sign_ins.note(&carol, "i", 1);
        sign_ins.note(&dave, "i", 1);
        assert_eq!(rx.try_recv().unwrap().principal.name, "jwt:acme/bob@i");
        assert_eq!(rx.try_recv().unwrap().principal.name, "jwt:acme/carol@i");
        assert!(rx.try_recv().is_err());
        sign_ins.note(&dave, "i", 1);
        assert_eq!(rx.try_recv().unwrap().principal.name, "jwt:acme/dave@i");
    }
}
