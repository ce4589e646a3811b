//! The tokens issued through the API, as the hub holds them: re-read whole from the
//! store when they change, here or on another replica.

use super::Hub;
use crate::auth::Principal;
use crate::auth::issued::{ActiveToken, IssuedTokens, parse_role, principal_name};
use crate::store::StoreError;
use std::sync::Arc;
use std::sync::atomic::Ordering;

impl Hub {
    /// The tokens issued through the API that authenticate, as last read.
    pub fn issued_tokens(&self) -> Arc<IssuedTokens> {
        self.issued.clone()
    }

    /// Re-reads the issued tokens in force from the store: after a local create or
    /// revoke, on another replica's notice, after a reconnect, and at start. A row
    /// that does not read as a token is left out (it authenticates no one) and logged.
    pub async fn reload_tokens(&self) -> Result<(), StoreError> {
        let rows = self.store.active_tokens(crate::store::now_ms()).await?;
        let active = rows.into_iter().filter_map(|t| {
            let digest = hex::decode(&t.token_hash)
                .ok()
                .and_then(|d| <[u8; 32]>::try_from(d).ok());
            let role = parse_role(&t.role);
            let (Some(digest), Some(role)) = (digest, role) else {
                tracing::error!(token_id = %t.token_id, "stored token unreadable: ignored");
                return None;
            };
            Some(ActiveToken {
                digest,
                principal: Principal {
                    groups: t.groups.into(),
                    name: principal_name(&t.user_id, &t.token_id),
                    role,
                    team: Some(t.team_id),
                    user: Some(t.user_id),
                },
                expires_at_ms: t.expires_at_ms,
            })
        });
        self.issued.replace(active);
        self.tokens_stale.store(false, Ordering::Release);
        Ok(())
    }

    /// Re-reads the issued tokens, or marks them stale for the monitor to retry.
    pub(crate) async fn reload_tokens_or_mark(&self) -> Result<(), StoreError> {
        let result = self.reload_tokens().await;
        if let Err(e) = &result {
            self.tokens_stale.store(true, Ordering::Release);
            tracing::warn!(error = %e, "issued tokens not re-read: retried by the monitor");
        }
        result
    }

    /// Whether the issued tokens wait for a re-read that failed.
    pub fn tokens_stale(&self) -> bool {
        self.tokens_stale.load(Ordering::Acquire)
    }
}
