//! Claude Code's `PreToolUse` hook: `tool_name` and `tool_input` in,
//! `hookSpecificOutput.permissionDecision` out. Exit 2 with stderr always blocks.

use super::mapping::{CLAUDE, call_args, str_field, tool_call};
use super::{Answer, HookError, Parsed};
use crate::policy::Call;
use crate::policy::roles::AgentSpec;
use serde_json::{Value, json};

pub fn parse(v: &Value) -> Result<Parsed, HookError> {
    let tool = str_field(v, "tool_name")?;
    let input = v.get("tool_input").unwrap_or(&Value::Null);
    let (call, note) = tool_call(tool, input, &CLAUDE)?;
    let mut parsed = Parsed::new(call, note);
    // PowerShell's line is read as PowerShell too (its aliases of rm, its switches)
    if tool == "PowerShell"
        && let Call::Shell(line) = &parsed.call
    {
        parsed
            .also
            .push(Call::Shell(super::powershell::as_bash(line)));
    }
    parsed.agent = agent(v);
    parsed.args = call_args(v, v.get("tool_input"), &mut parsed.call);
    parsed.hold = super::writes::held(tool, input, parsed.args.cwd.as_deref());
    Ok(parsed)
}

/// Inside a subagent, Claude Code adds `agent_id` and `agent_type`: the subagent is
/// seed 004's agent and its type is its role; the session goes with it. Unnamed
/// outside subagents: such calls are decided as before roles existed.
pub fn agent(v: &Value) -> AgentSpec {
    let text = |key: &str| {
        v.get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    let agent = AgentSpec {
        id: text("agent_id"),
        role: text("agent_type"),
        context: None,
        session: text("session_id"),
    };
    if agent.is_named() {
        agent
    } else {
        AgentSpec::default()
    }
}

/// `deny` and `ask` carry the reason to the model; `systemMessage` shows a denial to
/// the user as well.
pub fn render(answer: &Answer) -> Option<Value> {
    let (decision, reason) = match answer {
        Answer::Allow(r) => ("allow", r),
        Answer::Ask(r) => ("ask", r),
        Answer::Deny(r) => ("deny", r),
        Answer::NoOpinion => return None,
    };
    let mut out = json!({"hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": decision,
        "permissionDecisionReason": reason,
    }});
    if decision == "deny" {
        out["systemMessage"] = json!(reason);
    }
    Some(out)
}
