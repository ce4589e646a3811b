//! Seed 004's agent roles and contexts: allow-lists of operations by category, and
//! restrictions on what a call touches (paths, hosts, components, databases), default
//! deny. Applied after the kill switch and the admin's DENY rules, before the rest
//! of the decision (`super::decide`).

mod call;
mod changes;
mod compiled;
mod evaluate;
mod model;
mod net;
#[cfg(test)]
mod path_props;
mod paths;
mod problems;
mod restrictions;
mod touches;

pub use call::{AgentSpec, CallArgs, judge};
pub use changes::allow_list_changes;
pub use compiled::{CompiledContext, CompiledRoles, MAX_ROLE_ENTRIES, compile_roles};
pub use evaluate::evaluate;
pub use model::{
    AgentRole, AllowList, ContextAllowList, Restrictions, RolesDocument, ToolCategory,
};
pub use net::{MAX_TARGET_BYTES, Target, parse_size};
pub use paths::{Placed, extname, place};
pub use touches::{
    MAX_TOUCHES, builtin_operation, calls_of_operation, tool_operation, touches_of_command,
    touches_of_tool_input,
};

use super::{Decision, Outcome, Reason};
use std::sync::Arc;

/// Who makes a call, as seed 004's context names it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Agent<'a> {
    pub id: Option<&'a str>,
    /// The role the call claims (a Claude Code subagent's `agent_type`); an agent a
    /// role names keeps that role.
    pub role: Option<&'a str>,
    /// Seed 004's `contextType`.
    pub context: Option<&'a str>,
    /// What per-session quotas count by.
    pub session: Option<&'a str>,
}

impl Agent<'_> {
    /// True when the call names an agent or a role: only such calls are decided by
    /// roles; any other is decided exactly as before roles existed.
    pub fn is_named(&self) -> bool {
        self.id.is_some() || self.role.is_some()
    }
}

/// What a call touches, read from its arguments.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Touches {
    /// File paths as written (relative ones resolve against the working directory).
    pub paths: Vec<String>,
    /// Directories the call works in or lists (a shell tool's `workdir`, a glob's
    /// base): checked as paths, without a file type.
    pub directories: Vec<String>,
    /// Strings that look like paths under argument keys that do not say they are:
    /// read against `allowedDirectories` only, and outside them the call asks.
    pub loose_paths: Vec<String>,
    /// Other words of a shell line that may name a file (`base64 server.key`,
    /// `xxd .env`): read against `forbiddenFiles` only, since most are not files.
    pub names: Vec<String>,
    /// URLs or `host:port` as written.
    pub targets: Vec<String>,
    pub protocols: Vec<String>,
    pub databases: Vec<String>,
    pub tables: Vec<String>,
    pub component_type: Option<String>,
    /// Seed 004's `componentCount`, as the caller counts it.
    pub component_count: Option<u64>,
    /// Bytes the call reads or writes, when known (a `Write`'s content).
    pub file_size: Option<u64>,
    /// Why some of what the call touches cannot be read (an opaque shell command).
    pub unreadable: Option<String>,
}

/// One call as the roles see it.
#[derive(Debug, Clone, Copy)]
pub struct RoleCall<'a> {
    pub agent: Agent<'a>,
    /// Seed 004's operation (`CREATE_COMPONENT`, `FILE_READ`) or the tool's name.
    pub operation: &'a str,
    /// The call's working directory, absolute.
    pub cwd: Option<&'a str>,
    pub touches: &'a Touches,
}

/// A limit the caller must apply itself (`maxQueryTime`…); `value` is the text as
/// written, or JSON for a list or a number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Obligation {
    pub name: String,
    pub value: String,
}

/// A session quota the server must count before the call may run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quota {
    pub operation: String,
    pub max: u64,
}

/// What the roles say about a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RoleVerdict {
    /// Allowed here; the rest of the decision stands.
    Allow {
        obligations: Arc<[Obligation]>,
        quota: Option<Quota>,
    },
    /// Must not run.
    Deny {
        reason: Reason,
        /// The category or restriction that decided.
        entry: Option<Arc<str>>,
        message: String,
    },
    /// What the call touches cannot be checked with certainty: it needs approval.
    Ask {
        entry: Option<Arc<str>>,
        message: String,
    },
}

impl RoleVerdict {
    fn deny(reason: Reason, entry: Option<Arc<str>>, message: String) -> Self {
        Self::Deny {
            reason,
            entry,
            message,
        }
    }

    /// The verdict when the server found `quota` used up for the session.
    pub fn quota_exhausted(quota: &Quota) -> Self {
        Self::deny(
            Reason::Restricted,
            Some("sessionQuotas".into()),
            format!(
                "Session quota of {} calls to {} exhausted",
                quota.max, quota.operation
            ),
        )
    }
}

/// The decision once the roles have spoken: a DENY of the admin's (kill switch,
/// blocklist, access and file allowlists) stands; else a roles DENY or ASK replaces
/// the decision; else the decision stands, with the obligations.
pub fn apply(mut base: Decision, verdict: RoleVerdict) -> Decision {
    if base.outcome == Outcome::Deny {
        return base;
    }
    // an explained decision shows the roles' step too
    if !base.explanation.is_empty() {
        base.explanation.push(super::Check {
            name: "roles",
            result: match &verdict {
                RoleVerdict::Allow { .. } => "allowed by the agent's allow-list".to_owned(),
                RoleVerdict::Deny { message, .. } | RoleVerdict::Ask { message, .. } => {
                    message.clone()
                }
            },
        });
    }
    let (outcome, reason, entry, message) = match verdict {
        RoleVerdict::Allow { obligations, .. } => {
            return Decision {
                obligations: (!obligations.is_empty()).then_some(obligations),
                ..base
            };
        }
        RoleVerdict::Deny {
            reason,
            entry,
            message,
        } => (Outcome::Deny, reason, entry, message),
        RoleVerdict::Ask { entry, message } => (Outcome::Ask, Reason::Restricted, entry, message),
    };
    Decision {
        outcome,
        reason,
        matched_entry: entry.map(Into::into),
        candidates: Vec::new(),
        explanation: base.explanation,
        allowed_tools: None,
        detail: Some(message.into()),
        obligations: None,
        scope: base.scope,
        unchecked: super::Unchecked::default(),
        origin: None,
    }
}
