//! Sign-ins through the identity provider: recorded off the request path as the
//! authenticator hands them over (a row per user, written again at each new token),
//! and listed for a team's admins.

use super::{Service, ServiceError, check_id};
use crate::auth::sign_ins::SignedIn;
use crate::auth::{Action, Principal, Role, authorize};
use crate::store::SignIn;
use std::sync::Arc;
use tokio::sync::mpsc;
use tracing::warn;

/// Most sign-ins one list returns.
const MAX_LISTED: u32 = 1_000;

impl Service {
    /// Records each sign-in handed over until shutdown. A write that fails is logged
    /// and let go: the user's next token records it again.
    pub async fn record_sign_ins(self: Arc<Self>, mut rx: mpsc::Receiver<SignedIn>) {
        loop {
            let signed = tokio::select! {
                () = self.shutdown.cancelled() => return,
                signed = rx.recv() => signed,
            };
            let Some(signed) = signed else { return };
            let p = &signed.principal;
            let (Some(team), Some(user)) = (&p.team, &p.user) else {
                continue;
            };
            let record = SignIn {
                team_id: team.clone(),
                user_id: user.clone(),
                principal: p.name.clone(),
                issuer: signed.issuer.clone(),
                groups: p.groups.to_vec(),
                first_at_ms: signed.at_ms,
                last_at_ms: signed.at_ms,
            };
            if let Err(e) = self.store.record_sign_in(&record).await {
                warn!(error = %e, team = %team, user = %user, "sign-in not recorded");
            }
        }
    }

    /// Who signed in through the identity provider: `team`'s users (the caller's
    /// own team when empty; every team's for an operator naming none), the latest
    /// first. A team's admins and operators only.
    pub async fn list_sign_ins(
        &self,
        p: &Principal,
        team: &str,
    ) -> Result<Vec<SignIn>, ServiceError> {
        let team = match (team.is_empty(), p.role, p.team.as_deref()) {
            (true, Role::Operator, _) => None,
            (true, _, Some(own)) => Some(own.to_owned()),
            _ => Some(check_id("team_id", team)?.into_owned()),
        };
        match &team {
            Some(team) => authorize(p, team, Action::ReadAudit)?,
            None => authorize(p, "*", Action::ReadAudit)?,
        }
        Ok(self
            .store
            .list_sign_ins(team.as_deref(), MAX_LISTED)
            .await?)
    }
}
