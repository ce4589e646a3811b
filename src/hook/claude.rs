//! Claude Code's `PreToolUse` hook: `tool_name` and `tool_input` in,
//! `hookSpecificOutput.permissionDecision` out. Exit 2 with stderr always blocks.

use super::mapping::{str_field, tool_call};
use super::{Answer, HookError, Parsed};
use serde_json::{Value, json};

pub fn parse(v: &Value) -> Result<Parsed, HookError> {
    let tool = str_field(v, "tool_name")?;
    let input = v.get("tool_input").unwrap_or(&Value::Null);
    Ok(Parsed {
        call: tool_call(tool, input, &["Bash"])?,
        note: None,
    })
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
