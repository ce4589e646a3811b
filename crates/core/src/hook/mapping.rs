//! The shared mapping from a client's tool call to toolgate's: shell tools to a shell
//! decision, `mcp__<server>__<tool>` to an MCP decision, built-ins to `builtin:<name>`.

use super::HookError;
use crate::policy::{BUILTIN_SERVER, Call};
use serde_json::Value;

/// The call for a tool named the Claude Code way (Claude Code, Codex): `Bash` and the
/// shell tools decide their command line; `mcp__…` names an MCP tool; anything else is
/// a built-in, whose aliases (`Read`, `read_file`) the server resolves.
pub fn tool_call(tool: &str, input: &Value, shell_tools: &[&str]) -> Result<Call, HookError> {
    if tool.is_empty() {
        return Err(HookError::field("tool_name", "empty"));
    }
    if shell_tools.contains(&tool) {
        return Ok(Call::Shell(shell_line(input)?));
    }
    if tool.starts_with("mcp__") {
        return Ok(Call::McpInternal {
            name: tool.to_owned(),
            fallback_server: String::new(),
        });
    }
    Ok(builtin(tool))
}

pub(super) fn builtin(tool: &str) -> Call {
    Call::Mcp {
        server: BUILTIN_SERVER.to_owned(),
        tool: tool.to_owned(),
    }
}

/// `tool_input.command` as one command line: a string as it is, an argv array joined
/// with the quoting a shell would need.
pub fn shell_line(input: &Value) -> Result<String, HookError> {
    match input.get("command") {
        Some(Value::String(line)) => Ok(line.clone()),
        Some(Value::Array(argv)) if !argv.is_empty() => argv
            .iter()
            .map(|w| {
                w.as_str().map(quote).ok_or_else(|| {
                    HookError::field("tool_input.command", "an argv item is not a string")
                })
            })
            .collect::<Result<Vec<_>, _>>()
            .map(|words| words.join(" ")),
        Some(other) => Err(HookError::field(
            "tool_input.command",
            format!("expected a string or an argv array, got {other}"),
        )),
        None => Err(HookError::field("tool_input.command", "missing")),
    }
}

/// A word quoted so a shell reads it back as the same word.
fn quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// A string field of the payload, required.
pub(super) fn str_field<'a>(v: &'a Value, field: &'static str) -> Result<&'a str, HookError> {
    match v.get(field) {
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(HookError::field(
            field,
            format!("expected a string, got {other}"),
        )),
        None => Err(HookError::field(field, "missing")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn argv_is_joined_with_quotes() {
        let line = shell_line(&json!({"command": ["bash", "-lc", "git status && rm -rf '/'"]}));
        assert_eq!(line.unwrap(), r"bash -lc 'git status && rm -rf '\''/'\'''");
        assert!(shell_line(&json!({"command": 3})).is_err());
        assert!(shell_line(&json!({})).is_err());
    }
}
