//! Policy examples: a call and the answer a policy must give it, as a team policy's
//! `examples:` and `toolgate test` files write them, decided by the pure core exactly
//! as the server decides (the policy file's lists, the working directory, then the
//! roles for a call that names an agent).

use crate::hook::{self, ToolTable};
use crate::policy::groups::{GroupPolicies, GroupedAdmin, Origins, normalise_groups};
use crate::policy::roles::{self, AgentSpec, CallArgs};
use crate::policy::{
    AdminControls, Call, CompiledAdmin, CompiledUser, Decision, Outcome, Reason, ToolActionLists,
    UserSettings, explain_at,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt::Write as _;

/// Most examples one policy or one test file may hold.
pub const MAX_EXAMPLES: usize = 1000;
/// Longest name of an example.
pub const MAX_EXAMPLE_NAME: usize = 256;
/// Longest command line, path, tool name or working directory of an example (the
/// server's default `limits.max_command_bytes`).
pub const MAX_EXAMPLE_TEXT: usize = 64 * 1024;
/// Most bytes of an example's `input` once written as JSON.
pub const MAX_EXAMPLE_INPUT: usize = 64 * 1024;

/// One call and the answer the policy must give it. Exactly one of `mcp`, `shell`,
/// `delete_file` and `builtin` names the call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Example {
    /// What the example shows, printed when it fails (default: the call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// An MCP tool call, `server:tool` (or an internal name such as `mcp__server__tool`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp: Option<String>,
    /// A shell command line, as an agent's shell tool would run it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shell: Option<String>,
    /// The path of a file the agent deletes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete_file: Option<String>,
    /// A tool named as an agent client names it (Claude Code's `Bash` or `Write`,
    /// Codex's `shell`, Gemini CLI's `run_shell_command`), read as that client's hook
    /// reads it; a shell tool takes its command line from `input.command`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub builtin: Option<String>,
    /// Whose tool names `builtin` uses when clients differ (default: the first of
    /// claude-code, codex, gemini that knows the name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<ExampleClient>,
    /// The tool's arguments (`builtin`'s tool input; an MCP call's `action`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Map<String, Value>>,
    /// The working directory (absolute): where a command line's writes land.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The agent making the call; the team's roles decide only a call that names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<ExampleAgent>,
    /// The user's settings for this call (default: the file's, else the team's
    /// default user settings, else toolgate's defaults).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<UserSettings>,
    /// The caller's groups (default: the file's, else none): the team's group
    /// policies of these apply, combined with its controls as the server combines
    /// a member's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub groups: Option<Vec<String>>,
    /// The outcome the call must get.
    pub expect: Outcome,
    /// The reason it must get, when it matters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<Reason>,
    /// The entry that must decide it, as written in its list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matched_entry: Option<String>,
}

/// The agent clients whose tool names an example may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ExampleClient {
    ClaudeCode,
    Codex,
    Gemini,
}

impl ExampleClient {
    const ALL: [Self; 3] = [Self::ClaudeCode, Self::Codex, Self::Gemini];

    fn table(self) -> &'static ToolTable {
        match self {
            Self::ClaudeCode => &hook::CLAUDE,
            Self::Codex => &hook::CODEX,
            Self::Gemini => &hook::GEMINI,
        }
    }
}

/// The agent making an example's call (its agent id, role and context).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExampleAgent {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
}

/// An example that cannot be run as written: the field, the rule and the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", if field.is_empty() { String::new() } else { format!("{field}: ") })]
pub struct ExampleError {
    /// The field at fault, under the example (`shell`, `input.command`); empty when
    /// it is the example as a whole.
    pub field: String,
    pub message: String,
}

impl ExampleError {
    fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// The policy examples are decided under.
pub struct Under<'a> {
    /// The server policy file's `tool.action` lists (none for a team policy alone).
    pub files: &'a ToolActionLists,
    /// The team's controls, as written: combined with an example's groups.
    pub team: &'a AdminControls,
    /// The organisation's group policies, combined as the team's own are (`toolgate
    /// test --org`; none for a team policy alone).
    pub org: &'a GroupPolicies,
    /// `team`, compiled: what an example in no group is decided by.
    pub admin: &'a CompiledAdmin,
    /// The user's settings where an example names none.
    pub user: &'a CompiledUser,
}

/// What an example got, when it is not what it expects.
#[derive(Debug, Clone, PartialEq)]
pub struct Mismatch {
    pub decision: Decision,
    /// The call as decided (after a client's tool name was read).
    pub call: Call,
}

impl Mismatch {
    /// The decision's outcome, reason and entry, as an example would write them.
    pub fn got(&self) -> String {
        answer(
            self.decision.outcome,
            Some(self.decision.reason),
            self.decision.matched_entry.as_deref(),
        )
    }

    /// Why the policy decided so: its sentence, then each check made.
    pub fn why(&self) -> String {
        let mut out = self.decision.message(&self.call);
        for check in &self.decision.explanation {
            let _ = write!(out, "\n{}: {}", check.name, check.result);
        }
        out
    }
}

impl Example {
    /// What the example expects, as `ALLOW ALLOWLISTED (entry "github:*")`.
    pub fn expected(&self) -> String {
        answer(self.expect, self.reason, self.matched_entry.as_deref())
    }

    /// The name, or the call when it has none.
    pub fn title(&self) -> String {
        if let Some(name) = &self.name {
            return name.clone();
        }
        let (kind, text) = self.kind().unwrap_or(("call", ""));
        let short: String = text.chars().take(80).collect();
        let more = if short.len() < text.len() { "…" } else { "" };
        format!("{kind} {short}{more}")
    }

    fn kind(&self) -> Option<(&'static str, &str)> {
        [
            ("mcp", &self.mcp),
            ("shell", &self.shell),
            ("delete_file", &self.delete_file),
            ("builtin", &self.builtin),
        ]
        .into_iter()
        .find_map(|(k, v)| v.as_deref().map(|v| (k, v)))
    }

    /// Checks the example's shape and limits, before anything is decided.
    pub fn check(&self) -> Result<(), ExampleError> {
        self.groups()?;
        self.call().map(|_| ())
    }

    /// The caller's groups, each checked as a principal's are, sorted, once each.
    fn groups(&self) -> Result<Vec<String>, ExampleError> {
        normalise_groups(self.groups.iter().flatten().cloned())
            .map_err(|e| ExampleError::new("groups", e))
    }

    /// The call, what it touches and who makes it, as the hooks would send them.
    fn call(&self) -> Result<(Call, CallArgs, AgentSpec), ExampleError> {
        let named: Vec<&str> = [
            ("mcp", &self.mcp),
            ("shell", &self.shell),
            ("delete_file", &self.delete_file),
            ("builtin", &self.builtin),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.as_ref().map(|_| k))
        .collect();
        if named.len() != 1 {
            return Err(ExampleError::new(
                "",
                format!(
                    "names {} calls ({}): give exactly one of mcp, shell, delete_file, builtin",
                    named.len(),
                    named.join(", ")
                ),
            ));
        }
        if let Some(name) = &self.name {
            limit("name", name, MAX_EXAMPLE_NAME)?;
        }
        for (field, text) in [
            ("mcp", &self.mcp),
            ("shell", &self.shell),
            ("delete_file", &self.delete_file),
            ("builtin", &self.builtin),
            ("cwd", &self.cwd),
        ] {
            if let Some(text) = text {
                limit(field, text, MAX_EXAMPLE_TEXT)?;
            }
        }
        if let Some(cwd) = &self.cwd
            && !cwd.starts_with('/')
        {
            return Err(ExampleError::new(
                "cwd",
                format!("{cwd:?} is not absolute: give the working directory from /"),
            ));
        }
        let input = self.input.clone().map(Value::Object);
        if let Some(input) = &input {
            let bytes = serde_json::to_string(input).map_or(usize::MAX, |s| s.len());
            if bytes > MAX_EXAMPLE_INPUT {
                return Err(ExampleError::new(
                    "input",
                    format!(
                        "is {bytes} bytes as JSON, more than the limit of {MAX_EXAMPLE_INPUT}: give only the arguments that matter"
                    ),
                ));
            }
        }
        if self.client.is_some() && self.builtin.is_none() {
            return Err(ExampleError::new(
                "client",
                "names whose tool names `builtin` uses, and there is no builtin: remove it",
            ));
        }
        if self.input.is_some() && (self.shell.is_some() || self.delete_file.is_some()) {
            return Err(ExampleError::new(
                "input",
                "a shell line or a deletion takes no input: remove it, or name the tool with builtin",
            ));
        }
        let call = if let Some(entry) = &self.mcp {
            mcp_call(entry, input.as_ref())?
        } else if let Some(line) = &self.shell {
            Call::Shell(line.clone())
        } else if let Some(path) = &self.delete_file {
            Call::DeleteFile(path.clone())
        } else {
            let tool = self.builtin.as_deref().unwrap_or_default();
            self.builtin_call(tool, input.as_ref().unwrap_or(&Value::Null))?
        };
        let agent = self.agent.clone().unwrap_or_default();
        for (field, value) in [
            ("agent.id", &agent.id),
            ("agent.role", &agent.role),
            ("agent.context", &agent.context),
        ] {
            if let Some(value) = value {
                limit(field, value, MAX_EXAMPLE_NAME)?;
            }
        }
        let args = CallArgs {
            tool_input: input.filter(|_| self.builtin.is_some()),
            cwd: self.cwd.clone(),
            ..CallArgs::default()
        };
        let spec = AgentSpec {
            id: agent.id,
            role: agent.role,
            context: agent.context,
            session: None,
        };
        Ok((call, args, spec))
    }

    /// A client's tool name read through that client's hook table.
    fn builtin_call(&self, tool: &str, input: &Value) -> Result<Call, ExampleError> {
        let clients: Vec<ExampleClient> = match self.client {
            Some(client) => vec![client],
            None => ExampleClient::ALL.to_vec(),
        };
        let Some(client) = clients
            .into_iter()
            .find(|c| c.table().names().any(|name| name == tool))
        else {
            let whose = match self.client {
                Some(c) => format!("{c:?}'s"),
                None => "any client's".to_owned(),
            };
            return Err(ExampleError::new(
                "builtin",
                format!(
                    "{tool:?} is not {whose} tool name: write the name as the client sends it (Bash, Write, run_shell_command…), or use mcp: for an MCP tool"
                ),
            ));
        };
        hook::tool_call(tool, input, client.table())
            .map(|(call, _)| call)
            .map_err(|e| match e {
                hook::HookError::Field { field, detail } => ExampleError::new(
                    field.replace("tool_input", "input"),
                    format!("{detail}: give the tool's arguments under input"),
                ),
                other => ExampleError::new("input", other.to_string()),
            })
    }

    /// Decides the example's call; `Ok(None)` when it got what it expects.
    pub fn run(&self, under: &Under<'_>) -> Result<Option<Mismatch>, ExampleError> {
        let (call, args, agent) = self.call()?;
        let own;
        let user = match &self.user {
            Some(settings) => {
                own = CompiledUser::compile(settings)
                    .map_err(|e| ExampleError::new("user", format!("{e}: fix the entry")))?;
                &own
            }
            None => under.user,
        };
        // a member's calls are decided by the team's controls combined with its
        // groups' policies, the team's and the organisation's, and name where the
        // deciding entry came from, as on the server: only the groups with a policy
        // in either are combined, none of them leaves the team's controls alone
        let groups = self.groups()?;
        let saying: Vec<String> = groups
            .iter()
            .filter(|g| under.team.groups.contains_key(*g) || under.org.contains_key(*g))
            .cloned()
            .collect();
        let grouped = if saying.is_empty() {
            None
        } else {
            Some(
                GroupedAdmin::compile_in(under.team, under.org, &saying).map_err(|e| {
                    ExampleError::new(
                        "groups",
                        format!(
                            "the team's controls with these groups' policies do not combine: {e}"
                        ),
                    )
                })?,
            )
        };
        let admin = grouped.as_ref().map_or(under.admin, |g| &g.compiled);
        let mut decision = explain_at(under.files, admin, user, &call, args.cwd.as_deref());
        let no_origins = Origins::default();
        let origins = grouped.as_ref().map_or(&no_origins, |g| &g.origins);
        origins.name(admin, user, &call, &groups, &mut decision);
        // the service's order: the roles speak on a call that names an agent, unless
        // the admin already denied it (a session quota counts as not yet used)
        let compiled = admin.roles();
        if agent.is_named() && !compiled.is_empty() && decision.outcome != Outcome::Deny {
            let verdict = roles::judge(compiled, &agent, &call, &args);
            decision = roles::apply(decision, verdict);
        }
        let pass = decision.outcome == self.expect
            && self.reason.is_none_or(|r| r == decision.reason)
            && self
                .matched_entry
                .as_deref()
                .is_none_or(|e| decision.matched_entry.as_deref() == Some(e));
        Ok((!pass).then_some(Mismatch { decision, call }))
    }
}

/// `mcp: server:tool`, or an internal name; an `action` in the input is seed 000's.
fn mcp_call(entry: &str, input: Option<&Value>) -> Result<Call, ExampleError> {
    let action = input
        .and_then(|i| i.get("action"))
        .and_then(Value::as_str)
        .filter(|a| !a.is_empty());
    let (server, tool) = match entry.split_once(':') {
        Some(pair) => pair,
        None if entry.starts_with("mcp_") => {
            let (server, tool) = crate::policy::split_internal_name(entry, "");
            if action.is_none() {
                return Ok(Call::McpInternal {
                    name: entry.to_owned(),
                    fallback_server: String::new(),
                });
            }
            (server, tool)
        }
        None => {
            return Err(ExampleError::new(
                "mcp",
                format!(
                    "{entry:?} has no server: write server:tool (builtin:{entry} for a built-in tool)"
                ),
            ));
        }
    };
    Ok(match action {
        Some(action) => Call::McpAction {
            server: server.to_owned(),
            tool: tool.to_owned(),
            action: action.to_owned(),
        },
        None => Call::Mcp {
            server: server.to_owned(),
            tool: tool.to_owned(),
        },
    })
}

fn limit(field: &str, text: &str, max: usize) -> Result<(), ExampleError> {
    if text.len() > max {
        return Err(ExampleError::new(
            field,
            format!(
                "is {} bytes, more than the limit of {max}: shorten it",
                text.len()
            ),
        ));
    }
    Ok(())
}

fn answer(outcome: Outcome, reason: Option<Reason>, entry: Option<&str>) -> String {
    let mut out = format!("{outcome:?}").to_uppercase();
    if let Some(reason) = reason {
        let _ = write!(out, " {}", reason.as_str());
    }
    if let Some(entry) = entry {
        let _ = write!(out, " (entry {entry:?})");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::BUILTIN_SERVER;

    fn builtin(tool: &str) -> Call {
        Call::Mcp {
            server: BUILTIN_SERVER.to_owned(),
            tool: tool.to_owned(),
        }
    }

    fn example(yaml: serde_json::Value) -> Example {
        serde_json::from_value(yaml).unwrap()
    }

    fn under_run(team: &AdminControls, user: &UserSettings, ex: &Example) -> Option<Mismatch> {
        let admin = CompiledAdmin::compile(team).unwrap();
        let user = CompiledUser::compile(user).unwrap();
        let files = ToolActionLists::default();
        ex.run(&Under {
            files: &files,
            team,
            org: &GroupPolicies::new(),
            admin: &admin,
            user: &user,
        })
        .unwrap()
    }

    #[test]
    fn each_client_tool_name_is_read_as_its_hook_reads_it() {
        let cases = [
            (
                serde_json::json!({"builtin": "Bash", "input": {"command": "git status"}, "expect": "ASK"}),
                Call::Shell("git status".into()),
            ),
            (
                serde_json::json!({"builtin": "run_shell_command", "input": {"command": "ls"}, "expect": "ASK"}),
                Call::Shell("ls".into()),
            ),
            (
                serde_json::json!({"builtin": "Write", "input": {"file_path": "/r/a"}, "expect": "ASK"}),
                builtin("Write"),
            ),
            (
                serde_json::json!({"builtin": "replace", "client": "gemini", "expect": "ASK"}),
                builtin("edit_file"),
            ),
            (
                serde_json::json!({"mcp": "github:get_issue", "expect": "ASK"}),
                Call::Mcp {
                    server: "github".into(),
                    tool: "get_issue".into(),
                },
            ),
            (
                serde_json::json!({"mcp": "mcp__github__get_issue", "expect": "ASK"}),
                Call::McpInternal {
                    name: "mcp__github__get_issue".into(),
                    fallback_server: String::new(),
                },
            ),
        ];
        for (yaml, want) in cases {
            let ex = example(yaml.clone());
            assert_eq!(ex.call().unwrap().0, want, "{yaml}");
        }
    }

    #[test]
    fn a_malformed_example_names_the_field_and_the_fix() {
        let cases = [
            (serde_json::json!({"expect": "ALLOW"}), "", "exactly one"),
            (
                serde_json::json!({"shell": "ls", "mcp": "a:b", "expect": "ALLOW"}),
                "",
                "2 calls",
            ),
            (
                serde_json::json!({"mcp": "github", "expect": "ALLOW"}),
                "mcp",
                "no server",
            ),
            (
                serde_json::json!({"builtin": "Bsh", "expect": "ALLOW"}),
                "builtin",
                "not any client's",
            ),
            (
                serde_json::json!({"builtin": "Bash", "expect": "ALLOW"}),
                "input.command",
                "missing",
            ),
            (
                serde_json::json!({"shell": "ls", "cwd": "repo", "expect": "ALLOW"}),
                "cwd",
                "absolute",
            ),
            (
                serde_json::json!({"shell": "x".repeat(MAX_EXAMPLE_TEXT + 1), "expect": "ALLOW"}),
                "shell",
                "limit",
            ),
            (
                serde_json::json!({"shell": "ls", "client": "codex", "expect": "ALLOW"}),
                "client",
                "no builtin",
            ),
        ];
        for (yaml, field, words) in cases {
            let e = example(yaml.clone()).check().unwrap_err();
            assert_eq!(e.field, field, "{yaml}");
            assert!(e.message.contains(words), "{yaml}: {e}");
        }
    }

    #[test]
    fn an_example_passes_or_says_what_it_got_and_why() {
        let admin = AdminControls {
            enabled: true,
            mcp_tool_allowlist: vec!["github:get_*".into()],
            ..AdminControls::default()
        };
        let user = UserSettings {
            use_yolo_mode: true,
            ..UserSettings::default()
        };
        let pass = example(serde_json::json!({
            "mcp": "github:get_issue", "expect": "ALLOW", "reason": "ALLOWLISTED",
            "matched_entry": "github:get_*"
        }));
        assert_eq!(under_run(&admin, &user, &pass), None);
        let fail = example(serde_json::json!({"mcp": "github:delete_repo", "expect": "ALLOW"}));
        let got = under_run(&admin, &user, &fail).unwrap();
        assert_eq!(got.got(), "ASK NOT_IN_ADMIN_ALLOWLIST");
        assert!(got.why().contains("allowlist"), "{}", got.why());
        let wrong_entry = example(serde_json::json!({
            "mcp": "github:get_issue", "expect": "ALLOW", "matched_entry": "github:*"
        }));
        assert!(under_run(&admin, &user, &wrong_entry).is_some());
    }
}
