//! Cursor's hooks: `beforeShellExecution` (a command line), `beforeMCPExecution` (a
//! bare tool name and the server's URL or command, no server name) and
//! `beforeReadFile`; the answer is `{"permission", "user_message", "agent_message"}`.

use super::mapping::{builtin, mcp, str_field};
use super::{Answer, HookError, Parsed};
use crate::policy::Call;
use crate::policy::roles::CallArgs;
use serde_json::{Value, json};

/// Who named a server, most trusted first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Trust {
    /// toolgate's own `URL_OR_COMMAND=NAME` mapping, set where the hook is installed.
    Mapping,
    /// The user's `~/.cursor/mcp.json` (or an admin's file).
    User,
    /// A workspace's `.cursor/mcp.json`: a file in the repository, which an agent or a
    /// pull request can write. It may add servers, never rename one.
    Workspace,
}

impl Trust {
    fn describe(self) -> &'static str {
        match self {
            Self::Mapping => "toolgate's --mcp-server mapping",
            Self::User => "the user's ~/.cursor/mcp.json",
            Self::Workspace => "the workspace's .cursor/mcp.json",
        }
    }
}

/// The most servers read from Cursor's files; past it the rest are left out.
const MAX_ENTRIES: usize = 1024;

/// One way a server is named: where it runs and the name, and who said so.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    at: String,
    name: String,
    trust: Trust,
}

/// Names MCP servers by where they run, from Cursor's `mcp.json` files and toolgate's
/// own `URL_OR_COMMAND=NAME` mapping. A name given by a more trusted source stands;
/// where one source gives a location two names, each is decided and the stricter
/// answer stands.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct McpDirectory {
    entries: Vec<Entry>,
}

/// The names a location resolves to, most trusted first, and what to say about them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resolved {
    /// Empty: no configuration names the location. An empty name is a reading as a
    /// server of no known name (it asks).
    pub names: Vec<String>,
    pub note: Option<String>,
}

impl McpDirectory {
    /// Adds the servers of the user's `mcp.json` text.
    pub fn add_mcp_json(&mut self, text: &str) {
        self.add_mcp_json_as(text, Trust::User);
    }

    /// Adds the servers of an `mcp.json` text (`{"mcpServers": {name: {url | command,
    /// args}}}`) as named by `trust`; a file that is not that shape adds nothing.
    pub fn add_mcp_json_as(&mut self, text: &str, trust: Trust) {
        let Ok(v) = serde_json::from_str::<Value>(text) else {
            return;
        };
        let Some(servers) = v.get("mcpServers").and_then(Value::as_object) else {
            return;
        };
        for (name, server) in servers {
            for key in ["url", "serverUrl"] {
                if let Some(url) = server.get(key).and_then(Value::as_str) {
                    self.push(url, name, trust);
                }
            }
            if let Some(command) = server.get("command").and_then(Value::as_str) {
                let args: Vec<&str> = server
                    .get("args")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                if !args.is_empty() {
                    self.push(&format!("{command} {}", args.join(" ")), name, trust);
                }
                self.push(command, name, trust);
            }
        }
    }

    /// Adds `where=name` pairs: the most trusted names.
    pub fn add_mapping(&mut self, pairs: &[(String, String)]) {
        for (at, name) in pairs {
            self.push(at, name, Trust::Mapping);
        }
    }

    fn push(&mut self, at: &str, name: &str, trust: Trust) {
        if self.entries.len() < MAX_ENTRIES {
            self.entries.push(Entry {
                at: location_key(at),
                name: name.to_owned(),
                trust,
            });
        }
    }

    /// The server's name for a URL or a command, if exactly one is known (the most
    /// trusted source's).
    pub fn resolve(&self, location: &str) -> Option<String> {
        match self.resolve_all(location).names.as_slice() {
            [one] if !one.is_empty() => Some(one.clone()),
            _ => None,
        }
    }

    /// Every name the location may be decided under, most trusted first.
    pub fn resolve_all(&self, location: &str) -> Resolved {
        let wanted = location_key(location);
        let here: Vec<&Entry> = self.entries.iter().filter(|e| e.at == wanted).collect();
        let Some(top) = here.iter().map(|e| e.trust).min() else {
            return Resolved::default();
        };
        let mut names: Vec<String> = Vec::new();
        for e in here.iter().filter(|e| e.trust == top) {
            if !names.contains(&e.name) {
                names.push(e.name.clone());
            }
        }
        let mut notes: Vec<String> = Vec::new();
        if names.len() > 1 {
            notes.push(format!(
                "{} names the server at {location:?} {}: decided under the stricter",
                top.describe(),
                quoted(&names)
            ));
        }
        // a lower source may not rename what a higher one names
        let ignored: Vec<String> = here
            .iter()
            .filter(|e| e.trust > top && !names.contains(&e.name))
            .map(|e| e.name.clone())
            .collect();
        if !ignored.is_empty() {
            notes.push(format!(
                "the server at {location:?} is named {} by {}; the name {} from a less trusted file is ignored (a workspace file cannot rename a server)",
                quoted(&names),
                top.describe(),
                quoted(&ignored)
            ));
        }
        if top == Trust::Workspace {
            // a workspace name that a trusted source gives a server elsewhere claims
            // that server's allowances: decided as an unknown server too
            let claimed: Vec<&Entry> = self
                .entries
                .iter()
                .filter(|e| e.trust < Trust::Workspace && names.contains(&e.name))
                .collect();
            if let Some(e) = claimed.first() {
                notes.push(format!(
                    "the workspace's .cursor/mcp.json names the server at {location:?} {:?}, which {} gives to {:?}: decided under the stricter of {:?} and an unknown server",
                    e.name,
                    e.trust.describe(),
                    e.at,
                    e.name
                ));
                names.push(String::new());
            }
        }
        Resolved {
            names,
            note: (!notes.is_empty()).then(|| notes.join("; ")),
        }
    }
}

fn quoted(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("{n:?}"))
        .collect::<Vec<_>>()
        .join(" and ")
}

/// A location as compared: a URL as WHATWG serialises it (scheme and host
/// lowercase), without a trailing `/`; a command with its spaces collapsed.
fn location_key(at: &str) -> String {
    let at = at.trim();
    if at.contains("://")
        && let Ok(url) = url::Url::parse(at)
    {
        return url.as_str().trim_end_matches('/').to_owned();
    }
    at.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .trim_end_matches('/')
        .to_owned()
}

/// `tool_input`: documented as a JSON string; an object is accepted too.
fn tool_input(v: &Value) -> Value {
    match v.get("tool_input") {
        Some(Value::String(text)) => serde_json::from_str(text).unwrap_or(Value::Null),
        Some(other) => other.clone(),
        None => Value::Null,
    }
}

/// The working directory: the payload's `cwd`, else its only workspace root.
fn call_args(v: &Value, input: &Value) -> CallArgs {
    let cwd = v
        .get("cwd")
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty())
        .map(str::to_owned)
        .or_else(
            || match v.get("workspace_roots").and_then(Value::as_array) {
                Some(roots) if roots.len() == 1 => roots[0].as_str().map(str::to_owned),
                _ => None,
            },
        );
    CallArgs {
        tool_input: input.is_object().then(|| input.clone()),
        cwd,
        ..CallArgs::default()
    }
}

pub fn parse(v: &Value, directory: &McpDirectory) -> Result<Parsed, HookError> {
    let input = tool_input(v);
    let mut parsed = match str_field(v, "hook_event_name")? {
        "beforeShellExecution" => {
            Parsed::new(Call::Shell(str_field(v, "command")?.to_owned()), None)
        }
        "beforeReadFile" => {
            let mut p = Parsed::new(builtin("read_file"), None);
            if let Some(path) = v.get("file_path").and_then(Value::as_str) {
                p.args.tool_input = Some(json!({ "file_path": path }));
            }
            p.args.cwd = call_args(v, &Value::Null).cwd;
            return Ok(p);
        }
        "beforeMCPExecution" => {
            let tool = str_field(v, "tool_name")?;
            let location = ["url", "command"]
                .into_iter()
                .find_map(|k| v.get(k).and_then(Value::as_str).filter(|s| !s.is_empty()));
            let resolved = location
                .map(|at| directory.resolve_all(at))
                .unwrap_or_default();
            let mut names = resolved.names.into_iter();
            match names.next() {
                Some(first) => {
                    let mut p = Parsed::new(mcp(&first, tool, &input), resolved.note);
                    p.also = names.map(|name| mcp(&name, tool, &input)).collect();
                    p
                }
                // an empty server name is invalid: the server's DENY rules still match
                // literally (`*:tool`), and anything else needs approval
                None => Parsed::new(
                    mcp("", tool, &input),
                    Some(format!(
                        "the MCP server at {:?} is in no mcp.json: map it with --mcp-server URL_OR_COMMAND=NAME",
                        location.unwrap_or("")
                    )),
                ),
            }
        }
        other => {
            return Err(HookError::field(
                "hook_event_name",
                format!(
                    "{other:?} is not beforeShellExecution, beforeMCPExecution or beforeReadFile"
                ),
            ));
        }
    };
    parsed.args = call_args(v, &input);
    Ok(parsed)
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
