//! Tokens issued through the API: who may issue which role, the expiry's bounds, the
//! per-team limit, and the table the authenticator reads refreshed before a create or
//! revoke is answered (so both apply to the next call on this replica).

use super::{Service, ServiceError, check_id};
use crate::auth::issued::{MAX_TOKENS_PER_TEAM, parse_role, role_name};
use crate::auth::{Action, Principal, Role, authorize, generate_token, hash_token};
use crate::store::{IssuedToken, NewToken, expiry_ms, now_ms};
use std::time::Duration;

/// The expiry of a token created without one.
pub const DEFAULT_TOKEN_TTL: Duration = Duration::from_secs(90 * 24 * 3600);
/// The longest expiry a token may be given.
pub const MAX_TOKEN_TTL: Duration = Duration::from_secs(366 * 24 * 3600);
/// Most tokens one list returns.
const MAX_LISTED: u32 = 1_000;

/// A token just issued: the secret is in this value only.
#[derive(Debug, Clone)]
pub struct CreatedToken {
    pub token: IssuedToken,
    pub secret: String,
}

/// How far a role reaches, for "no one issues a role above their own".
fn rank(role: Role) -> u8 {
    match role {
        Role::Member | Role::Service => 1,
        Role::Admin => 2,
        Role::Operator => 3,
    }
}

/// May `p` issue a token of `role` for `team`? Operators for any team; a team's
/// admins for their own team, no role above their own; members and services never.
pub fn may_issue(p: &Principal, team: &str, role: Role) -> Result<(), ServiceError> {
    if role == Role::Operator {
        return Err(ServiceError::invalid(
            "role",
            "operator tokens are not issued through the API: configure them in the server's auth.tokens",
        ));
    }
    authorize(p, team, Action::ManageTokens)?;
    if rank(role) > rank(p.role) {
        return Err(ServiceError::PermissionDenied(format!(
            "principal {:?} ({}) may not issue a token with the higher role {}",
            p.name,
            role_name(p.role),
            role_name(role)
        )));
    }
    Ok(())
}

impl Service {
    /// Issues a token for `user` of `team`, stored as its digest, audited, and in force
    /// on this replica before this returns.
    pub async fn create_token(
        &self,
        p: &Principal,
        team: &str,
        user: &str,
        role: Role,
        ttl: Option<Duration>,
        groups: &[String],
    ) -> Result<CreatedToken, ServiceError> {
        let team: &str = &check_id("team_id", team)?;
        let user: &str = &check_id("user_id", user)?;
        // checked as every credential's groups are: names, at most 64, sorted, once
        let groups = crate::policy::groups::normalise_groups(groups.iter().cloned())
            .map_err(|e| ServiceError::invalid("groups", e))?;
        // the user's name becomes the token's principal: none the server gives itself
        // (`bootstrap-operator`, `anonymous`, `jwt:…`, `file:…`), or the audit trail
        // would show the token as that principal
        crate::auth::principal::check_principal_name(user)
            .map_err(|e| ServiceError::invalid("user_id", e))?;
        // the same rule as every configured credential: no token acts for `*`
        if crate::auth::is_reserved_team(team) {
            return Err(ServiceError::invalid(
                "team_id",
                crate::auth::reserved_team_problem(team),
            ));
        }
        may_issue(p, team, role)?;
        let ttl = ttl.unwrap_or(DEFAULT_TOKEN_TTL);
        if ttl > MAX_TOKEN_TTL {
            return Err(ServiceError::invalid(
                "expires_in_seconds",
                format!(
                    "{} is past the longest expiry, {} seconds (366 days): issue a shorter-lived token and renew it",
                    ttl.as_secs(),
                    MAX_TOKEN_TTL.as_secs()
                ),
            ));
        }
        let store = &self.store;
        let now = now_ms();
        // counted before the write, so concurrent creates may pass the limit by a few:
        // it bounds memory, it is not a quota
        let active = store.active_token_count(team, now).await?;
        if active >= MAX_TOKENS_PER_TEAM {
            return Err(ServiceError::FailedPrecondition(format!(
                "team {team} has {active} tokens in force, the most allowed: revoke unused ones (`toolgate token list`, `toolgate token revoke`)"
            )));
        }
        let secret = generate_token();
        let id_bytes: [u8; 8] = rand::random();
        let new = NewToken {
            token_id: format!("tok_{}", hex::encode(id_bytes)),
            token_hash: hash_token(&secret),
            team_id: team.to_owned(),
            user_id: user.to_owned(),
            role: role_name(role).to_owned(),
            expires_at_ms: expiry_ms(now, ttl),
            groups,
        };
        let token = store.create_token(&new, &p.name).await?;
        self.refresh_tokens().await?;
        Ok(CreatedToken { token, secret })
    }

    /// The tokens of `team` (every team's for an operator naming none), newest first.
    pub async fn list_tokens(
        &self,
        p: &Principal,
        team: &str,
        include_inactive: bool,
    ) -> Result<Vec<IssuedToken>, ServiceError> {
        let team = match (team.is_empty(), p.role, p.team.as_deref()) {
            (true, Role::Operator, _) => None,
            (true, _, Some(own)) => Some(own.to_owned()),
            _ => Some(check_id("team_id", team)?.into_owned()),
        };
        if let Some(team) = &team {
            authorize(p, team, Action::ManageTokens)?;
        }
        let active_at = (!include_inactive).then(now_ms);
        Ok(self
            .store
            .list_tokens(team.as_deref(), active_at, MAX_LISTED)
            .await?)
    }

    /// Revokes a token: it authenticates no one from the next call on this replica,
    /// and on the others once they are notified. A token of another team is
    /// reported as unknown, so ids of other teams cannot be probed.
    pub async fn revoke_token(
        &self,
        p: &Principal,
        token_id: &str,
    ) -> Result<(IssuedToken, bool), ServiceError> {
        // ids are `tok_` and hex: anything else (a NUL PostgreSQL would refuse
        // included) names no token, and is said so before the store is asked
        let well_formed = token_id.len() <= 64
            && token_id.strip_prefix("tok_").is_some_and(|rest| {
                !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_alphanumeric())
            });
        if !well_formed {
            return Err(ServiceError::invalid(
                "token_id",
                "must be a token id as `toolgate token list` shows it (tok_…)",
            ));
        }
        let store = &self.store;
        let unknown = || {
            ServiceError::invalid(
                "token_id",
                format!("no token {token_id} of a team you manage: see `toolgate token list`"),
            )
        };
        // authorized against the token's own team before anything changes
        let token = store.get_token(token_id).await?.ok_or_else(unknown)?;
        if authorize(p, &token.team_id, Action::ManageTokens).is_err() {
            return Err(unknown());
        }
        // an admin may not revoke what they could not have issued
        if let Some(role) = parse_role(&token.role) {
            may_issue(p, &token.team_id, role)?;
        }
        let Some(after) = store.revoke_token(token_id, &p.name).await? else {
            return Err(unknown());
        };
        let revoked = token.revoked_at_ms.is_none() && after.revoked_at_ms.is_some();
        self.refresh_tokens().await?;
        Ok((after, revoked))
    }

    /// Re-reads the issued tokens into the table the authenticator reads. A re-read
    /// that fails after the commit is retried by the hub's monitor; the caller is told
    /// the change is durable but not yet in force here.
    async fn refresh_tokens(&self) -> Result<(), ServiceError> {
        self.hub.reload_tokens_or_mark().await.map_err(|e| {
            ServiceError::Unavailable(format!(
                "the token change is committed but not yet in force on this replica ({e}): it applies when the store reads again"
            ))
        })
    }
}
