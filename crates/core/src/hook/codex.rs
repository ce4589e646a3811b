//! Codex CLI's `PreToolUse` hook: Claude Code's shape, but only `deny` is enforced
//! (`ask` and `allow` are reported unsupported, and unknown fields make the hook count
//! as failed, which lets the tool run), so anything but a denial prints nothing.

use super::mapping::{builtin, str_field, tool_call};
use super::{Answer, HookError, Parsed};
use serde_json::{Value, json};

/// Codex's names for its shell tool (it reports `Bash` to hooks; older builds the rest).
const SHELL_TOOLS: [&str; 5] = [
    "Bash",
    "shell",
    "exec_command",
    "local_shell",
    "unified_exec",
];

pub fn parse(v: &Value) -> Result<Parsed, HookError> {
    let tool = str_field(v, "tool_name")?;
    let input = v.get("tool_input").unwrap_or(&Value::Null);
    // apply_patch is Codex's file editor: the patch text is no command line
    let call = if tool == "apply_patch" {
        builtin("edit_file")
    } else {
        tool_call(tool, input, &SHELL_TOOLS)?
    };
    Ok(Parsed { call, note: None })
}

pub fn render(answer: &Answer) -> Option<Value> {
    match answer {
        // an ASK reaches here only as configured; Codex cannot ask, so it blocks
        Answer::Deny(reason) | Answer::Ask(reason) => Some(json!({"hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }})),
        Answer::Allow(_) | Answer::NoOpinion => None,
    }
}
