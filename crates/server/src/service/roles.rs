//! Seed 004's roles in the service: the verdict on each call that names an agent,
//! the per-session quota counted in the store, `allow_list_updated` records, and
//! the optional log of every decision (`audit.decisions: all`).

use super::Service;
use crate::auth::Principal;
use crate::policy::roles::{self, AgentSpec, CallArgs, RoleVerdict};
use crate::policy::{AdminControls, Call, CompiledAdmin, Decision, Outcome};
use crate::store::{NewAuditEvent, QuotaKey};
use std::sync::atomic::Ordering;

/// The audit kind of a change to a team's roles document (seed 004's `ALLOW_LIST_UPDATE`).
pub const AUDIT_ALLOW_LIST_UPDATED: &str = "allow_list_updated";
/// The audit kind of an ALLOW or ASK, logged with `audit.decisions: all`.
pub const AUDIT_DECISION_MADE: &str = "decision_made";

impl Service {
    /// Logs every decision (seed 004's "audit every check"), not only DENYs.
    pub fn log_all_decisions(&self, on: bool) {
        self.log_all_decisions.store(on, Ordering::Relaxed);
    }

    /// Each decision once the roles have spoken: only for a call that names an agent
    /// or a role, in a team with an allow-list, and not already DENIED by the admin.
    /// A session quota is counted in the store, by team, user, session and
    /// operation, and only for a call that comes out ALLOWED: an ASK (which may never
    /// run) is not counted, but is refused once the quota is used up.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn apply_roles(
        &self,
        team: &str,
        user: &str,
        admin: &CompiledAdmin,
        agent: &AgentSpec,
        calls: &[Call],
        args: &[CallArgs],
        decisions: Vec<Decision>,
    ) -> Result<Vec<Decision>, super::ServiceError> {
        if !agent.is_named() || admin.roles().is_empty() {
            return Ok(decisions);
        }
        // boxed: only here is the store asked (the quotas), and every other
        // decision's future would carry that in its size
        Box::pin(async move {
            let compiled = admin.roles();
            let none = CallArgs::default();
            let mut out = Vec::with_capacity(decisions.len());
            for (i, (call, d)) in calls.iter().zip(decisions).enumerate() {
                if d.outcome == Outcome::Deny {
                    out.push(d);
                    continue;
                }
                let mut verdict = roles::judge(compiled, agent, call, args.get(i).unwrap_or(&none));
                if let (RoleVerdict::Allow { quota: Some(q), .. }, Some(session)) =
                    (&verdict, agent.session.as_deref())
                {
                    let key = QuotaKey {
                        team_id: team,
                        user_id: user,
                        session_id: session,
                        operation: &q.operation,
                    };
                    let store = &self.store;
                    // the roles allow it, so the call's outcome is the admin's and user's
                    let within = if d.outcome == Outcome::Allow {
                        store.consume_quota(&key, q.max).await?
                    } else {
                        store.quota_used(&key).await? < q.max
                    };
                    if !within {
                        verdict = RoleVerdict::quota_exhausted(q);
                    }
                }
                out.push(roles::apply(d, verdict));
            }
            Ok(out)
        })
        .await
    }

    /// Queues an ALLOW or ASK record when every decision is logged.
    pub(super) async fn audit_decision(
        &self,
        p: &Principal,
        team: &str,
        user: &str,
        revision: u64,
        call: &Call,
        d: &Decision,
    ) {
        if !self.log_all_decisions.load(Ordering::Relaxed) {
            return;
        }
        let mut detail = super::decision_log::record::deny_detail(user, call, d);
        detail["outcome"] = serde_json::json!(d.outcome.as_str());
        // boxed: the queue's wait is in no other decision's future
        Box::pin(self.audit.send(NewAuditEvent {
            team_id: team.to_owned(),
            revision,
            actor: p.name.clone(),
            kind: AUDIT_DECISION_MADE.into(),
            detail,
        }))
        .await;
    }

    /// One `allow_list_updated` record per allow-list context (and categories, roles)
    /// a write changed, at the write's revision.
    pub(super) async fn audit_roles_change(
        &self,
        actor: &str,
        team: &str,
        before: &AdminControls,
        after: &AdminControls,
        revision: u64,
    ) {
        for detail in roles::allow_list_changes(&before.roles, &after.roles) {
            self.audit
                .send(NewAuditEvent {
                    team_id: team.to_owned(),
                    revision,
                    actor: actor.to_owned(),
                    kind: AUDIT_ALLOW_LIST_UPDATED.into(),
                    detail,
                })
                .await;
        }
    }
}
