//! An approval that adds its call's entry to the allowlist that decides it: the
//! fewest entries that let the call by, through the normal settings write.

use crate::auth::Principal;
use crate::policy::{
    AddOutcome, Call, Candidate, CompiledAdmin, CompiledUser, Decision, Reason, decide_at,
};
use crate::secrets;
use crate::service::{Service, ServiceError};
use crate::store::{ApprovalCall, ApprovalRecord};

impl Service {
    /// Adds the entry the request's call would need to the allowlist that decides it
    /// (the team's while its admin controls decide, else the user's own), by seed
    /// 001's add rule, through the normal settings write; the entry and the revision.
    pub(super) async fn add_needed_entry(
        &self,
        p: &Principal,
        record: &ApprovalRecord,
        expected: Option<u64>,
    ) -> Result<(String, u64), ServiceError> {
        let team = &record.new.team_id;
        let user = &record.new.user_id;
        let d = &record.new.decision;
        let reason = d.reason;
        let mcp = d
            .candidates
            .first()
            .map(|c| (c.server.clone(), c.tool.clone()));
        let commands = &d.command_candidates;
        let call = &record.new.call.call;
        let cwd = record.new.call.cwd.as_deref();
        let id = record.new.request_id.as_str();
        // the admin's list where it decides (a NOT_IN_ADMIN_ALLOWLIST call names no
        // candidate: its server and tool are the entry)
        let admin_mcp = match (reason, call) {
            (
                Reason::NotInAdminAllowlist,
                Call::Mcp { server, tool } | Call::McpAction { server, tool, .. },
            ) => Some((server.clone(), tool.clone())),
            _ => None,
        };
        let admin = self.hub.admin(team).await?;
        let controlled = admin.head().enabled;
        for attempt in 0..3 {
            let admin = if attempt == 0 {
                admin.clone()
            } else {
                self.hub.admin(team).await?
            };
            let mut controls = admin.stored().doc;
            let revision = expected.unwrap_or(admin.revision());
            let entry = if let Some((server, tool)) = admin_mcp
                .clone()
                .or_else(|| mcp.clone().filter(|_| controlled))
            {
                let entry = crate::policy::format_entry(&server, &tool);
                match crate::policy::add_mcp_entry(&controls.mcp_tool_allowlist, &server, &tool)
                    .map_err(|e| ServiceError::entries("", e))?
                {
                    AddOutcome::Added(list) => controls.mcp_tool_allowlist = list,
                    AddOutcome::AlreadyPresent | AddOutcome::CoveredBy(_) => {
                        return Ok((entry, admin.revision()));
                    }
                }
                entry
            } else if let Some((server, tool)) = mcp.clone() {
                let change = self.add_to_allowlist(p, team, user, &server, &tool).await?;
                return Ok((
                    crate::policy::format_entry(&server, &tool),
                    change.settings.revision,
                ));
            } else if !commands.is_empty() && controlled {
                let eff = self.hub.effective(team, user).await?;
                let needed = needed_commands(id, commands, &record.new.call, |extra| {
                    let mut c = controls.clone();
                    c.allowed.extend(extra.iter().cloned());
                    let admin = CompiledAdmin::compile(&c).ok()?;
                    let files = &eff.tool_actions;
                    Some(decide_at(files, &admin, &eff.user.compiled, call, cwd))
                })?;
                for c in &needed {
                    if !controls.allowed.contains(c) {
                        controls.allowed.push(c.clone());
                    }
                }
                needed.join(", ")
            } else if !commands.is_empty() {
                let eff = self.hub.effective(team, user).await?;
                let mut settings = eff.user.stored.doc.clone();
                let needed = needed_commands(id, commands, &record.new.call, |extra| {
                    let mut s = settings.clone();
                    s.command_allowlist.extend(extra.iter().cloned());
                    let user = CompiledUser::compile(&s).ok()?;
                    let files = &eff.tool_actions;
                    Some(decide_at(files, &eff.admin.compiled, &user, call, cwd))
                })?;
                let commands = needed;
                for c in &commands {
                    if !settings.command_allowlist.contains(c) {
                        settings.command_allowlist.push(c.clone());
                    }
                }
                let stored = self
                    .update_user(
                        p,
                        team,
                        user,
                        settings,
                        expected.or(Some(eff.user.stored.revision)),
                    )
                    .await?;
                return Ok((commands.join(", "), stored.revision));
            } else {
                return Err(ServiceError::FailedPrecondition(format!(
                    "the call of request {} was asked about for {}, which no allowlist entry changes: approve it once, for the session or for a duration",
                    record.new.request_id,
                    reason.as_str()
                )));
            };
            match self.update_admin(p, team, controls, Some(revision)).await {
                Ok(stored) => return Ok((entry, stored.revision)),
                // a concurrent write: read again, unless the caller named the revision
                Err(ServiceError::Conflict { .. }) if expected.is_none() && attempt < 2 => {}
                Err(e) => return Err(e),
            }
        }
        Err(ServiceError::Unavailable(
            "the team's settings kept changing: approve again".into(),
        ))
    }
}

/// The fewest of a request's command candidates that, added in order, let its call
/// by: one an entry added before it already covers (`npm test`, run by `timeout 60
/// npm test`) is left out, so nothing broader than the call is allowed. `decide`
/// decides the call with the given entries added. A candidate holding a masked secret
/// (or a call kept masked that decides otherwise) names no real entry: refused.
pub(super) fn needed_commands(
    id: &str,
    candidates: &[String],
    stored_call: &ApprovalCall,
    decide: impl Fn(&[String]) -> Option<Decision>,
) -> Result<Vec<String>, ServiceError> {
    let masked = candidates.iter().any(|c| secrets::holds_marker(c))
        || stored_call
            .original
            .as_ref()
            .is_some_and(|o| !o.redecidable);
    if masked {
        return Err(ServiceError::FailedPrecondition(format!(
            "the call of request {id} holds a secret, which the request keeps masked, so the allowlist entry it needs cannot be written from it: approve it once, for the session or for a duration, or add the entry by hand"
        )));
    }
    let mut chosen: Vec<String> = Vec::new();
    for c in candidates {
        let needed = decide(&chosen).is_none_or(|d| {
            d.candidates
                .iter()
                .any(|k| matches!(k, Candidate::Command(t) if t == c))
        });
        if needed {
            chosen.push(c.clone());
        }
    }
    if chosen.is_empty() {
        return Err(ServiceError::FailedPrecondition(format!(
            "the call of request {id} needs no allowlist entry as the lists stand now: approve it once"
        )));
    }
    Ok(chosen)
}
