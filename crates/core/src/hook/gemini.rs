//! Gemini CLI's `BeforeTool` hook: `tool_name`, `tool_input` and, for MCP tools,
//! `mcp_context.server_name` in; `{"decision", "reason"}` out.

use super::mapping::{GEMINI, call_args, mcp, mcp_internal, str_field, tool_call};
use super::{Answer, HookError, Parsed};
use serde_json::{Value, json};

pub fn parse(v: &Value) -> Result<Parsed, HookError> {
    let tool = str_field(v, "tool_name")?;
    let input = v.get("tool_input").unwrap_or(&Value::Null);
    let context = v.get("mcp_context");
    let server = context
        .and_then(|c| c.get("server_name"))
        .and_then(Value::as_str);
    let (call, note) = if let Some(server) = server {
        let tool = context
            .and_then(|c| c.get("tool_name"))
            .and_then(Value::as_str)
            .unwrap_or(tool);
        (mcp(server, tool, input), None)
    } else if tool.starts_with("mcp_") && !tool.starts_with("mcp__") {
        (mcp_internal(tool, input), None)
    } else {
        tool_call(tool, input, &GEMINI)?
    };
    let mut parsed = Parsed::new(call, note);
    parsed.args = call_args(v, v.get("tool_input"), &mut parsed.call);
    parsed.hold = super::writes::held(tool, input, parsed.args.cwd.as_deref());
    Ok(parsed)
}

/// `{}` is no opinion: Gemini's own policy applies.
pub fn render(answer: &Answer) -> Option<Value> {
    Some(match answer {
        Answer::Allow(r) => json!({"decision": "allow", "reason": r}),
        Answer::Ask(r) => json!({"decision": "ask", "reason": r}),
        Answer::Deny(r) => json!({"decision": "deny", "reason": r, "systemMessage": r}),
        Answer::NoOpinion => json!({}),
    })
}
