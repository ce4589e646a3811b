//! Conversions of calls and decisions: a call and its agent context from protobuf,
//! a decision (its outcome and reason) to protobuf.

use crate::error::ConvertError;
use crate::v1 as pb;
use toolgate_core::policy::{self, Call, Candidate, Decision, Outcome, Reason};

/// `calls[i]`, the field of a batch's call in an error: formatted only when one is
/// reported, so a batch of valid calls builds no names.
pub struct BatchCall(pub usize);

impl std::fmt::Display for BatchCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "calls[{}]", self.0)
    }
}

pub fn call_from_pb(
    field: &dyn std::fmt::Display,
    call: Option<pb::ToolCall>,
) -> Result<Call, ConvertError> {
    use pb::tool_call::Kind;
    match call.and_then(|c| c.kind) {
        Some(Kind::Mcp(m)) if m.action.is_empty() => Ok(Call::Mcp {
            server: m.server,
            tool: m.tool,
        }),
        Some(Kind::Mcp(m)) => Ok(Call::McpAction {
            server: m.server,
            tool: m.tool,
            action: m.action,
        }),
        Some(Kind::McpInternal(m)) => Ok(Call::McpInternal {
            name: m.name,
            fallback_server: m.fallback_server,
        }),
        Some(Kind::Shell(line)) => Ok(Call::Shell(line)),
        Some(Kind::DeleteFile(path)) => Ok(Call::DeleteFile(path)),
        None => Err(ConvertError {
            field: field.to_string(),
            message: "must be set to one of mcp, mcp_internal, shell or delete_file".into(),
        }),
    }
}

/// A call as its message (no arguments).
pub fn call_to_pb(call: &Call) -> pb::ToolCall {
    use pb::tool_call::Kind;
    let kind = match call.clone() {
        Call::Mcp { server, tool } => Kind::Mcp(pb::McpCall {
            server,
            tool,
            action: String::new(),
        }),
        Call::McpAction {
            server,
            tool,
            action,
        } => Kind::Mcp(pb::McpCall {
            server,
            tool,
            action,
        }),
        Call::McpInternal {
            name,
            fallback_server,
        } => Kind::McpInternal(pb::McpInternalCall {
            name,
            fallback_server,
        }),
        Call::Shell(line) => Kind::Shell(line),
        Call::DeleteFile(path) => Kind::DeleteFile(path),
    };
    pb::ToolCall {
        kind: Some(kind),
        arguments: None,
    }
}

pub fn outcome_to_pb(o: Outcome) -> pb::Outcome {
    match o {
        Outcome::Allow => pb::Outcome::Allow,
        Outcome::Ask => pb::Outcome::Ask,
        Outcome::Deny => pb::Outcome::Deny,
    }
}

pub fn reason_to_pb(r: Reason) -> pb::Reason {
    match r {
        Reason::KillSwitch => pb::Reason::KillSwitch,
        Reason::InvalidName => pb::Reason::InvalidName,
        Reason::BlockedByAdmin => pb::Reason::BlockedByAdmin,
        Reason::NotInAccessAllowlist => pb::Reason::NotInAccessAllowlist,
        Reason::AdminDisabled => pb::Reason::AdminDisabled,
        Reason::ProtectionOn => pb::Reason::ProtectionOn,
        Reason::BrowserUnprotected => pb::Reason::BrowserUnprotected,
        Reason::RunEverything => pb::Reason::RunEverything,
        Reason::AutoRunOff => pb::Reason::AutoRunOff,
        Reason::Allowlisted => pb::Reason::Allowlisted,
        Reason::NotInAdminAllowlist => pb::Reason::NotInAdminAllowlist,
        Reason::NotAllowlisted => pb::Reason::NotAllowlisted,
        Reason::CommandAllowed => pb::Reason::CommandAllowed,
        Reason::CommandBlocked => pb::Reason::CommandBlocked,
        Reason::CommandNotAllowlisted => pb::Reason::CommandNotAllowlisted,
        Reason::DeleteProtected => pb::Reason::DeleteProtected,
        Reason::AutoRunOn => pb::Reason::AutoRunOn,
        Reason::NotInFileAllowlist => pb::Reason::NotInFileAllowlist,
        Reason::NoRoleAllowlist => pb::Reason::NoRoleAllowlist,
        Reason::NotInRoleAllowlist => pb::Reason::NotInRoleAllowlist,
        Reason::Restricted => pb::Reason::Restricted,
        Reason::CommandDenied => pb::Reason::CommandDenied,
        Reason::Approved => pb::Reason::Approved,
        Reason::ApprovalDenied => pb::Reason::ApprovalDenied,
        Reason::ApprovalExpired => pb::Reason::ApprovalExpired,
        Reason::RateLimited => pb::Reason::RateLimited,
    }
}

pub fn decision_to_pb(d: Decision, call: &Call, revision: u64) -> pb::Decision {
    let message = d.message(call);
    let mut candidates = Vec::new();
    let mut commands = Vec::new();
    for c in d.candidates {
        match c {
            Candidate::Mcp { server, tool } => {
                candidates.push(pb::AllowlistCandidate { server, tool })
            }
            Candidate::Command(c) => commands.push(c),
        }
    }
    pb::Decision {
        outcome: outcome_to_pb(d.outcome) as i32,
        need_approval: d.outcome != Outcome::Allow,
        reason: reason_to_pb(d.reason) as i32,
        message,
        matched_entry: d.matched_entry.as_deref().unwrap_or_default().to_owned(),
        candidates_for_allowlist: candidates,
        command_candidates: commands,
        revision,
        explanation: d
            .explanation
            .into_iter()
            .map(|c| pb::Check {
                name: c.name.to_owned(),
                result: c.result,
            })
            .collect(),
        allowed_tools: d.allowed_tools.map(|a| a.to_vec()).unwrap_or_default(),
        obligations: d
            .obligations
            .iter()
            .flat_map(|o| o.iter())
            .map(|o| pb::Obligation {
                name: o.name.clone(),
                value: o.value.clone(),
            })
            .collect(),
        effects_unknown: d.unchecked.effects_unknown,
        paths_stay_inside: d.unchecked.stays_inside,
        origin: d.origin.as_deref().unwrap_or_default().to_owned(),
        approval: None,
    }
}

/// Seed 004's agent of a request; empty strings are absent.
pub fn agent_from_pb(a: Option<pb::AgentContext>) -> policy::roles::AgentSpec {
    let a = a.unwrap_or_default();
    let some = |s: String| (!s.is_empty()).then_some(s);
    policy::roles::AgentSpec {
        id: some(a.agent_id),
        role: some(a.role),
        context: some(a.context_type),
        session: some(a.session_id),
    }
}

/// What a call touches, as its request says.
pub fn arguments_from_pb(
    a: Option<pb::CallArguments>,
    field: &dyn std::fmt::Display,
) -> Result<policy::roles::CallArgs, ConvertError> {
    let a = a.unwrap_or_default();
    let some = |s: String| (!s.is_empty()).then_some(s);
    let tool_input = a
        .tool_input
        .as_ref()
        .map(|s| {
            crate::json::object_from_pb(s, &format!("{field}.arguments.tool_input"))
                .map(serde_json::Value::Object)
        })
        .transpose()?;
    Ok(policy::roles::CallArgs {
        operation: some(a.operation),
        file_path: some(a.file_path),
        component_type: some(a.component_type),
        component_count: a.component_count,
        tool_input,
        cwd: some(a.cwd),
    })
}
