//! Codex CLI's `PreToolUse` hook: Claude Code's shape, but only `deny` is enforced
//! (`ask` and `allow` are reported unsupported, and unknown fields make the hook count
//! as failed, which lets the tool run), so anything but a denial prints nothing.

use super::mapping::{CODEX, call_args, str_field, tool_call};
use super::{Answer, HookError, Parsed};
use serde_json::{Value, json};

/// Codex's tools are in [`CODEX`]: every name that runs a command is decided as a
/// command line (`write_stdin`'s characters too), `apply_patch` as a file edit.
pub fn parse(v: &Value) -> Result<Parsed, HookError> {
    let tool = str_field(v, "tool_name")?;
    let input = v.get("tool_input").unwrap_or(&Value::Null);
    let (call, note) = tool_call(tool, input, &CODEX)?;
    let mut parsed = Parsed::new(call, note);
    parsed.args = call_args(v, v.get("tool_input"), &mut parsed.call);
    parsed.hold = super::writes::held(tool, input, parsed.args.cwd.as_deref());
    Ok(parsed)
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
