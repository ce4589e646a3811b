//! Claude Code's `PreToolUse` hook: `tool_name` and `tool_input` in,
//! `hookSpecificOutput.permissionDecision` out. Exit 2 with stderr always blocks.

use super::mapping::{str_field, tool_call};
use super::{Answer, HookError, Parsed};
use crate::policy::roles::{AgentSpec, CallArgs};
use serde_json::{Value, json};

pub fn parse(v: &Value) -> Result<Parsed, HookError> {
    let tool = str_field(v, "tool_name")?;
    let input = v.get("tool_input").unwrap_or(&Value::Null);
    Ok(Parsed {
        call: tool_call(tool, input, &["Bash"])?,
        note: None,
    })
}

/// Inside a subagent, Claude Code adds `agent_id` and `agent_type`: the subagent is
/// seed 004's agent and its type is its role; the session, the working directory
/// and `tool_input` go with it, so the roles see what the call touches. `None`
/// outside subagents: such calls are decided as before roles existed.
pub fn agent(v: &Value) -> Option<(AgentSpec, CallArgs)> {
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
    if !agent.is_named() {
        return None;
    }
    let args = CallArgs {
        tool_input: v.get("tool_input").filter(|i| i.is_object()).cloned(),
        cwd: text("cwd"),
        ..CallArgs::default()
    };
    Some((agent, args))
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
