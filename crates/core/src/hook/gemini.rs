//! Gemini CLI's `BeforeTool` hook: `tool_name`, `tool_input` and, for MCP tools,
//! `mcp_context.server_name` in; `{"decision", "reason"}` out.

use super::mapping::{builtin, shell_line, str_field};
use super::{Answer, HookError, Parsed};
use crate::policy::Call;
use serde_json::{Value, json};

/// Gemini's spellings of tools seed 002 names otherwise.
const RENAMES: [(&str, &str); 5] = [
    ("replace", "edit_file"),
    ("google_web_search", "web_search"),
    ("search_file_content", "grep"),
    ("grep_search", "grep"),
    ("read_many_files", "read_file"),
];

pub fn parse(v: &Value) -> Result<Parsed, HookError> {
    let tool = str_field(v, "tool_name")?;
    let input = v.get("tool_input").unwrap_or(&Value::Null);
    let context = v.get("mcp_context");
    let server = context
        .and_then(|c| c.get("server_name"))
        .and_then(Value::as_str);
    let call = if let Some(server) = server {
        let tool = context
            .and_then(|c| c.get("tool_name"))
            .and_then(Value::as_str)
            .unwrap_or(tool);
        Call::Mcp {
            server: server.to_owned(),
            tool: tool.to_owned(),
        }
    } else if tool == "run_shell_command" {
        Call::Shell(shell_line(input)?)
    } else if tool.starts_with("mcp_") {
        Call::McpInternal {
            name: tool.to_owned(),
            fallback_server: String::new(),
        }
    } else if tool.is_empty() {
        return Err(HookError::field("tool_name", "empty"));
    } else {
        let canonical = RENAMES
            .iter()
            .find(|(from, _)| *from == tool)
            .map_or(tool, |(_, to)| to);
        builtin(canonical)
    };
    Ok(Parsed { call, note: None })
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
