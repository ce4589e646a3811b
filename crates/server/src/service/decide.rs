//! Decisions: each call of a batch decided against one view of the policy (then by
//! seed 004's roles when it names an agent; DENYs to the audit trail), and
//! `tools/list` filtering.

use super::decisions::{DecisionSource, RequestOrigin, Shown, check_client, check_tool_use_id};
use super::principal::caller_groups;
use super::{Service, ServiceError, check_id, own_subject};
use crate::auth::{Action, Principal, authorize};
use crate::hub::Effective;
use crate::policy::group_set::GroupSet;
use crate::policy::groups::Origins;
use crate::policy::roles::{AgentSpec, CallArgs};
use crate::policy::{self, Call, Decision, FilteredTools, Outcome, PolicyError, Site};
use crate::secrets;
use std::borrow::Cow;

impl Service {
    /// The user's effective policy, to show a client (`GetEffectivePolicy`, an
    /// export, a `tools/list` filter): refused `UNAVAILABLE` while it cannot be shown
    /// current, since a client acts on what it is shown.
    pub async fn effective(
        &self,
        p: &Principal,
        team: &str,
        user: &str,
    ) -> Result<Effective, ServiceError> {
        let (team, user) = own_subject(p, team, user);
        let team: &str = &check_id("team_id", team)?;
        let user: &str = &check_id("user_id", user)?;
        authorize(p, team, Action::Evaluate(user))?;
        let eff = self.current_effective(team, user).await?;
        with_groups(eff, caller_groups(p, team, user))
    }

    /// The hub's view of `team` and `user`, refused `UNAVAILABLE` when it cannot be
    /// shown current (the message names how stale it is and the bound).
    pub(super) async fn current_effective(
        &self,
        team: &str,
        user: &str,
    ) -> Result<Effective, ServiceError> {
        let eff = self.hub.effective(team, user).await?;
        match &eff.unconfirmed {
            Some(why) => Err(ServiceError::Unavailable(why.to_string())),
            None => Ok(eff),
        }
    }

    /// [`Service::effective`] to decide calls with: it may be unconfirmed (see
    /// [`refuse_unconfirmed`]) rather than wait on a store that does not answer.
    async fn effective_to_decide(
        &self,
        p: &Principal,
        team: &str,
        user: &str,
    ) -> Result<Effective, ServiceError> {
        let (team, user) = own_subject(p, team, user);
        let team: &str = &check_id("team_id", team)?;
        let user: &str = &check_id("user_id", user)?;
        authorize(p, team, Action::Evaluate(user))?;
        let eff = self.hub.effective_to_decide(team, user).await?;
        with_groups(eff, caller_groups(p, team, user))
    }

    /// Decides each call against one view of the policy; DENYs go to the audit trail.
    pub async fn evaluate(
        &self,
        p: &Principal,
        team: &str,
        user: &str,
        calls: &[Call],
        explain: bool,
    ) -> Result<(Vec<Decision>, u64), ServiceError> {
        self.evaluate_as(p, team, user, calls, explain, &AgentSpec::default(), &[])
            .await
    }

    /// [`Service::evaluate`] for calls made by `agent` (seed 004), with what each
    /// call touches (`args[i]` for `calls[i]`).
    #[allow(clippy::too_many_arguments)]
    pub async fn evaluate_as(
        &self,
        p: &Principal,
        team: &str,
        user: &str,
        calls: &[Call],
        explain: bool,
        agent: &AgentSpec,
        args: &[CallArgs],
    ) -> Result<(Vec<Decision>, u64), ServiceError> {
        let source = if calls.len() == 1 {
            DecisionSource::Evaluate
        } else {
            DecisionSource::EvaluateBatch
        };
        let origin = RequestOrigin {
            source,
            client: String::new(),
            tool_use_id: String::new(),
        };
        self.evaluate_from(p, team, user, calls, explain, agent, args, &origin)
            .await
    }

    /// [`Service::evaluate_as`] for a request from `origin`, which the decision log
    /// records with each decision.
    #[allow(clippy::too_many_arguments)]
    pub async fn evaluate_from(
        &self,
        p: &Principal,
        team: &str,
        user: &str,
        calls: &[Call],
        explain: bool,
        agent: &AgentSpec,
        args: &[CallArgs],
        origin: &RequestOrigin,
    ) -> Result<(Vec<Decision>, u64), ServiceError> {
        check_client(&origin.client)?;
        check_tool_use_id(&origin.tool_use_id)?;
        let (team, user) = own_subject(p, team, user);
        // normalised here too: the audit records below name them
        let team: &str = &check_id("team_id", team)?;
        let user: &str = &check_id("user_id", user)?;
        // a session id keys the quotas in the store: bounded and printable like an id
        if let Some(session) = agent.session.as_deref() {
            check_id("agent.session_id", session)?;
        }
        if calls.len() > self.limits.max_batch_calls {
            return Err(ServiceError::invalid(
                "calls",
                format!(
                    "{} calls is more than the limit of {}: split the batch",
                    calls.len(),
                    self.limits.max_batch_calls
                ),
            ));
        }
        for (i, call) in calls.iter().enumerate() {
            self.check_call_size(calls.len(), i, call)?;
        }
        let eff = self.effective_to_decide(p, team, user).await?;
        let groups = caller_groups(p, team, user);
        let admin = eff.admin_compiled();
        let no_origins = Origins::default();
        let origins = eff.grouped.as_deref().map_or(&no_origins, |g| &g.origins);
        let decide = if explain {
            policy::explain_at
        } else {
            policy::decide_at
        };
        // a command line's writes are placed against the client's working directory,
        // and a write tool's files (read from its input) the same way
        let decisions: Vec<Decision> = calls
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let site = args.get(i).map_or_else(Site::default, |a| Site {
                    cwd: a.cwd.as_deref(),
                    tool_input: a.tool_input.as_ref(),
                });
                decide(&eff.tool_actions, admin, &eff.user.compiled, c, site)
            })
            .collect();
        refuse_unconfirmed(&eff, &decisions)?;
        let mut decisions = self
            .apply_roles(team, user, admin, agent, calls, args, decisions)
            .await?;
        for (call, d) in calls.iter().zip(&mut decisions) {
            origins.name(admin, &eff.user.compiled, call, groups, d);
        }
        // a team without rates takes no lock here; an installation's check is no call
        if let Some(rates) = admin.rates()
            && !origin.is_check()
        {
            let replicas = self.hub.live_replicas();
            self.rates
                .apply(team, user, rates, replicas, calls, &mut decisions, explain);
        }
        // a batch's DENY records are journaled together: one wait for the disk; its
        // other records are offered after them, so the writer takes them in the order
        // it always did (the DENYs of a batch first). Without a DENY they are offered
        // as they come (nothing is held for a single ALLOW).
        let any_denied = decisions.iter().any(|d| d.outcome == Outcome::Deny);
        let mut denied = Vec::new();
        let mut others = Vec::new();
        // every record of a call is built from it masked: secrets are never kept (the
        // masked calls outlive the loop, since the records offered after it borrow them)
        let shown_calls: Vec<Shown<'_>> = calls.iter().map(Shown::of).collect();
        for (i, (shown, d)) in shown_calls.iter().zip(&decisions).enumerate() {
            let decided = (d.outcome, d.reason, d.matched_entry.as_deref());
            let cwd = args.get(i).and_then(|a| a.cwd.as_deref());
            let logged = self
                .decision_record(p, team, user, agent, origin, eff.revision, shown, decided)
                .map(|r| {
                    r.with_effects_unknown(&d.unchecked.effects_unknown)
                        .with_cwd(cwd)
                });
            let shown_d = if shown.masked.masked() {
                secrets::mask_decision(d)
            } else {
                Cow::Borrowed(d)
            };
            if d.outcome == Outcome::Deny {
                self.deny_records(
                    p,
                    team,
                    user,
                    eff.revision,
                    shown.call(),
                    &shown_d,
                    logged,
                    &mut denied,
                );
            } else if !origin.is_check() {
                self.audit_decision(p, team, user, eff.revision, shown.call(), &shown_d)
                    .await;
                match logged {
                    Some(record) if !any_denied => self.offer_decision(record),
                    logged => others.extend(logged),
                }
            }
        }
        if !denied.is_empty() {
            self.record_denies(denied).await;
        }
        for record in others {
            self.offer_decision(record);
        }
        Ok((decisions, eff.revision))
    }

    /// A shell command or a path past `limits.max_command_bytes` is refused before
    /// anything looks at it. The field is `call.…` for one call, `calls[i].…` in a batch.
    fn check_call_size(&self, calls: usize, i: usize, call: &Call) -> Result<(), ServiceError> {
        let (kind, text) = match call {
            Call::Shell(line) => ("shell", line),
            Call::DeleteFile(path) => ("delete_file", path),
            _ => return Ok(()),
        };
        let max = self.limits.max_command_bytes;
        if text.len() <= max {
            return Ok(());
        }
        let field = if calls == 1 {
            format!("call.{kind}")
        } else {
            format!("calls[{i}].{kind}")
        };
        Err(ServiceError::invalid(
            &field,
            format!(
                "is {} bytes, more than the limit of {max} (limits.max_command_bytes): send a shorter command",
                text.len()
            ),
        ))
    }
    pub async fn filter_tools(
        &self,
        p: &Principal,
        team: &str,
        user: &str,
        server: &str,
        tools_json: &str,
    ) -> Result<(FilteredTools, u64), ServiceError> {
        self.filter_tools_from(p, team, user, server, tools_json, "")
            .await
    }

    /// [`Service::filter_tools`] for a request from the agent client `client`; each
    /// tool decided is recorded in the decision log.
    pub async fn filter_tools_from(
        &self,
        p: &Principal,
        team: &str,
        user: &str,
        server: &str,
        tools_json: &str,
        client: &str,
    ) -> Result<(FilteredTools, u64), ServiceError> {
        check_client(client)?;
        // a listing shows what may be called: nothing from a view not shown current
        let eff = self.effective(p, team, user).await?;
        let value: serde_json::Value = serde_json::from_str(tools_json).map_err(|e| {
            ServiceError::invalid(
                "tools_json",
                format!("is not JSON ({e}): pass the tools/list result"),
            )
        })?;
        // normalised as the effective policy's lookup was: the records name them
        let (team, user) = own_subject(p, team, user);
        let team: &str = &check_id("team_id", team)?;
        let user: &str = &check_id("user_id", user)?;
        let filtered = policy::filter_tools_in(
            &eff.tool_actions,
            eff.admin_compiled(),
            &eff.user.compiled,
            server,
            &value,
        )
        .map_err(|e| match e {
            PolicyError::InvalidToolsList(_) => ServiceError::entries("tools_json.", e),
            other => ServiceError::entries("", other),
        })?;
        let origin = RequestOrigin {
            source: DecisionSource::FilterTools,
            client: client.to_owned(),
            tool_use_id: String::new(),
        };
        self.log_listing(
            p,
            team,
            user,
            &origin,
            eff.revision,
            server,
            &filtered.decided,
        )
        .await;
        Ok((filtered, eff.revision))
    }
}

/// `eff` with the team's controls combined with `groups`' policies: the one way a
/// view is made for a principal, whether it decides, filters, exports or is sent as
/// a snapshot. A combination that does not compile (its lists past a limit together)
/// refuses the request: deciding or exporting without a group's denies would fail
/// open.
pub(super) fn with_groups(
    mut eff: Effective,
    groups: &GroupSet,
) -> Result<Effective, ServiceError> {
    eff.grouped = eff.admin.compiled.for_groups(&eff.org, groups).map_err(|e| {
        ServiceError::FailedPrecondition(format!(
            "the team's controls with the policies of groups {} do not combine ({e}): an admin must shorten the group policies' lists",
            groups.join(", ")
        ))
    })?;
    Ok(eff)
}

/// A view of the policy that cannot be shown current answers only DENYs: an ALLOW or
/// an ASK from it could go against a kill switch set on another replica. The whole
/// request is refused, `UNAVAILABLE`, so a hook blocks the call and a client retries
/// on another replica; nothing is recorded, since nothing was answered.
fn refuse_unconfirmed(eff: &Effective, decisions: &[Decision]) -> Result<(), ServiceError> {
    match &eff.unconfirmed {
        Some(why) if decisions.iter().any(|d| d.outcome != Outcome::Deny) => {
            Err(ServiceError::Unavailable(why.to_string()))
        }
        _ => Ok(()),
    }
}
