//! Cursor's hooks: `beforeShellExecution` (a command line), `beforeMCPExecution` (a
//! bare tool name and the server's URL or command, no server name) and
//! `beforeReadFile`; the answer is `{"permission", "user_message", "agent_message"}`.

use super::mapping::{builtin, str_field};
use super::{Answer, HookError, Parsed};
use crate::policy::Call;
use serde_json::{Value, json};

/// Names MCP servers by where they run, from Cursor's `mcp.json` files and toolgate's
/// own `URL_OR_COMMAND=NAME` mapping (which wins).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct McpDirectory {
    /// (where, name): a URL, a command, or a command with its arguments.
    entries: Vec<(String, String)>,
}

impl McpDirectory {
    /// Adds the servers of an `mcp.json` text (`{"mcpServers": {name: {url | command,
    /// args}}}`); a file that is not that shape adds nothing.
    pub fn add_mcp_json(&mut self, text: &str) {
        let Ok(v) = serde_json::from_str::<Value>(text) else {
            return;
        };
        let Some(servers) = v.get("mcpServers").and_then(Value::as_object) else {
            return;
        };
        for (name, server) in servers {
            for key in ["url", "serverUrl"] {
                if let Some(url) = server.get(key).and_then(Value::as_str) {
                    self.entries.push((url.to_owned(), name.clone()));
                }
            }
            if let Some(command) = server.get("command").and_then(Value::as_str) {
                let args: Vec<&str> = server
                    .get("args")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                if !args.is_empty() {
                    self.entries
                        .push((format!("{command} {}", args.join(" ")), name.clone()));
                }
                self.entries.push((command.to_owned(), name.clone()));
            }
        }
    }

    /// Adds `where=name` pairs; they are looked at before any `mcp.json` entry.
    pub fn add_mapping(&mut self, pairs: &[(String, String)]) {
        let mut mapped: Vec<(String, String)> = pairs.to_vec();
        mapped.append(&mut self.entries);
        self.entries = mapped;
    }

    /// The server's name for a URL or a command, if one is known.
    pub fn resolve(&self, location: &str) -> Option<&str> {
        let wanted = location.trim().trim_end_matches('/');
        self.entries
            .iter()
            .find(|(at, _)| at.trim().trim_end_matches('/') == wanted)
            .map(|(_, name)| name.as_str())
    }
}

pub fn parse(v: &Value, mcp: &McpDirectory) -> Result<Parsed, HookError> {
    match str_field(v, "hook_event_name")? {
        "beforeShellExecution" => Ok(Parsed {
            call: Call::Shell(str_field(v, "command")?.to_owned()),
            note: None,
        }),
        "beforeReadFile" => Ok(Parsed {
            call: builtin("read_file"),
            note: None,
        }),
        "beforeMCPExecution" => {
            let tool = str_field(v, "tool_name")?.to_owned();
            let location = ["url", "command"]
                .into_iter()
                .find_map(|k| v.get(k).and_then(Value::as_str).filter(|s| !s.is_empty()));
            match location.and_then(|at| mcp.resolve(at)) {
                Some(server) => Ok(Parsed {
                    call: Call::Mcp {
                        server: server.to_owned(),
                        tool,
                    },
                    note: None,
                }),
                // an empty server name is invalid: the server's DENY rules still match
                // literally (`*:tool`), and anything else needs approval
                None => Ok(Parsed {
                    call: Call::Mcp {
                        server: String::new(),
                        tool,
                    },
                    note: Some(format!(
                        "the MCP server at {:?} is in no mcp.json: map it with --mcp-server URL_OR_COMMAND=NAME",
                        location.unwrap_or("")
                    )),
                }),
            }
        }
        other => Err(HookError::field(
            "hook_event_name",
            format!("{other:?} is not beforeShellExecution, beforeMCPExecution or beforeReadFile"),
        )),
    }
}

/// `{}` is no opinion: Cursor's own rules apply.
pub fn render(answer: &Answer) -> Option<Value> {
    let (permission, message) = match answer {
        Answer::Allow(m) => ("allow", m),
        Answer::Ask(m) => ("ask", m),
        Answer::Deny(m) => ("deny", m),
        Answer::NoOpinion => return Some(json!({})),
    };
    Some(json!({"permission": permission, "user_message": message, "agent_message": message}))
}
