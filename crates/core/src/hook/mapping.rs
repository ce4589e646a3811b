//! The shared mapping from a client's tool call to toolgate's: each client's table of
//! shell tools (decided as a command line), known built-ins (`builtin:<name>`) and MCP
//! tools; a name in none of them is decided as a tool of no known server, which asks.

use super::HookError;
use crate::policy::roles::CallArgs;
use crate::policy::{BUILTIN_SERVER, Call, split_internal_name};
use serde_json::Value;

/// How one client's tools are decided. Every name here is decided by the hook, so the
/// install matcher covers it (`install::matcher`).
#[derive(Debug, Clone, Copy)]
pub struct ToolTable {
    /// Tools that run a command line (`tool_input.command`, `cmd` or `input`).
    pub shell: &'static [&'static str],
    /// Tools whose input is typed into a running shell session (Codex's `write_stdin`
    /// `chars`): a command line in all but name, decided as one.
    pub stdin: &'static [&'static str],
    /// Known built-ins: the client's name and the name decided as `builtin:<name>`
    /// (the server resolves seed 002's aliases: `Read` is `read_file`).
    pub builtins: &'static [(&'static str, &'static str)],
}

impl ToolTable {
    /// Every tool name the table decides.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.shell
            .iter()
            .chain(self.stdin)
            .copied()
            .chain(self.builtins.iter().map(|(name, _)| *name))
    }
}

/// Claude Code's built-in tools (its tool reference), each decided under its own
/// name but `MultiEdit`, which edits as `Edit` does.
pub const CLAUDE_BUILTINS: [(&str, &str); 31] = [
    ("Read", "Read"),
    ("Write", "Write"),
    ("Edit", "Edit"),
    ("MultiEdit", "edit_file"),
    ("NotebookEdit", "NotebookEdit"),
    ("NotebookRead", "read_file"),
    ("Glob", "Glob"),
    ("Grep", "Grep"),
    ("LS", "LS"),
    ("WebFetch", "WebFetch"),
    ("WebSearch", "WebSearch"),
    ("Agent", "Agent"),
    ("Task", "Task"),
    ("TaskOutput", "TaskOutput"),
    ("TaskStop", "TaskStop"),
    ("TaskCreate", "TaskCreate"),
    ("TaskGet", "TaskGet"),
    ("TaskUpdate", "TaskUpdate"),
    ("TaskList", "TaskList"),
    ("TodoWrite", "TodoWrite"),
    ("TodoRead", "TodoRead"),
    ("BashOutput", "BashOutput"),
    ("KillShell", "KillShell"),
    ("KillBash", "KillBash"),
    ("EnterPlanMode", "EnterPlanMode"),
    ("ExitPlanMode", "ExitPlanMode"),
    ("AskUserQuestion", "AskUserQuestion"),
    ("Skill", "Skill"),
    ("SlashCommand", "SlashCommand"),
    ("ListMcpResourcesTool", "ListMcpResourcesTool"),
    ("ReadMcpResourceTool", "ReadMcpResourceTool"),
];

/// Claude Code: `Bash` and `PowerShell` run command lines.
pub const CLAUDE: ToolTable = ToolTable {
    shell: &["Bash", "PowerShell"],
    stdin: &[],
    builtins: &CLAUDE_BUILTINS,
};

/// Codex CLI's own built-ins (0.169.0); it also reports Claude Code's names.
const CODEX_BUILTINS: [(&str, &str); 41] = {
    let own: [(&str, &str); 10] = [
        // Codex's file editor: the patch text is no command line
        ("apply_patch", "edit_file"),
        ("update_plan", "update_plan"),
        ("view_image", "view_image"),
        ("web_search", "web_search"),
        ("read_file", "read_file"),
        ("list_dir", "list_dir"),
        ("grep_files", "grep"),
        ("list_mcp_resources", "list_mcp_resources"),
        ("list_mcp_resource_templates", "list_mcp_resource_templates"),
        ("read_mcp_resource", "read_mcp_resource"),
    ];
    let mut all = [("", ""); 41];
    let mut i = 0;
    while i < own.len() {
        all[i] = own[i];
        i += 1;
    }
    while i < all.len() {
        all[i] = CLAUDE_BUILTINS[i - own.len()];
        i += 1;
    }
    all
};

/// Codex CLI: every tool name its binary carries that runs a command.
pub const CODEX: ToolTable = ToolTable {
    shell: &[
        "Bash",
        "shell",
        "shell_command",
        "exec_command",
        "unified_exec",
        "local_shell",
        "container.exec",
    ],
    stdin: &["write_stdin"],
    builtins: &CODEX_BUILTINS,
};

/// Gemini CLI: `run_shell_command`; its built-ins, seed 002's spellings where they
/// differ.
pub const GEMINI: ToolTable = ToolTable {
    shell: &["run_shell_command"],
    stdin: &[],
    builtins: &[
        ("read_file", "read_file"),
        ("read_many_files", "read_file"),
        ("write_file", "write_file"),
        ("replace", "edit_file"),
        ("edit", "edit_file"),
        ("glob", "glob"),
        ("search_file_content", "grep"),
        ("grep_search", "grep"),
        ("list_directory", "list_directory"),
        ("web_fetch", "web_fetch"),
        ("google_web_search", "web_search"),
        ("save_memory", "save_memory"),
        ("write_todos", "write_todos"),
    ],
};

/// The call for a tool named the Claude Code way (Claude Code, Codex, Gemini's
/// built-ins): the table's shell tools decide their command line; `mcp__…` names an
/// MCP tool; a known built-in is `builtin:<name>`; any other name is a tool of no
/// known server (it asks, and the note says why).
pub fn tool_call(
    tool: &str,
    input: &Value,
    table: &ToolTable,
) -> Result<(Call, Option<String>), HookError> {
    if tool.is_empty() {
        return Err(HookError::field("tool_name", "empty"));
    }
    if table.shell.contains(&tool) {
        return Ok((Call::Shell(shell_line(input)?), None));
    }
    if table.stdin.contains(&tool) {
        return Ok((Call::Shell(stdin_line(input)?), None));
    }
    if tool.starts_with("mcp__") {
        return Ok((mcp_internal(tool, input), None));
    }
    if let Some((_, decided)) = table.builtins.iter().find(|(name, _)| *name == tool) {
        return Ok((builtin(decided), None));
    }
    Ok((unknown(tool), Some(unknown_note(tool))))
}

/// A tool name in no table: an empty server is an invalid name, so the server's DENY
/// rules still match it literally (`*:tool`) and anything else asks.
pub(super) fn unknown(tool: &str) -> Call {
    Call::Mcp {
        server: String::new(),
        tool: tool.to_owned(),
    }
}

pub(super) fn unknown_note(tool: &str) -> String {
    format!("{tool:?} is neither a shell, a known built-in nor an MCP tool, so it needs approval")
}

pub(super) fn builtin(tool: &str) -> Call {
    Call::Mcp {
        server: BUILTIN_SERVER.to_owned(),
        tool: tool.to_owned(),
    }
}

/// The call's seed 000 action (`interact({action: "navigate"})`), when its arguments
/// name one as a string.
fn action_of(input: &Value) -> Option<&str> {
    input
        .get("action")
        .and_then(Value::as_str)
        .filter(|a| !a.is_empty())
}

/// An MCP tool of `server`, with its seed 000 action when the arguments name one.
pub(super) fn mcp(server: &str, tool: &str, input: &Value) -> Call {
    match action_of(input) {
        Some(action) => Call::McpAction {
            server: server.to_owned(),
            tool: tool.to_owned(),
            action: action.to_owned(),
        },
        None => Call::Mcp {
            server: server.to_owned(),
            tool: tool.to_owned(),
        },
    }
}

/// An internal name (`mcp__srv__tool`, `mcp_srv_tool`), with its action when the
/// arguments name one (the action needs the name split, as the server would).
pub(super) fn mcp_internal(name: &str, input: &Value) -> Call {
    if action_of(input).is_some() {
        let (server, tool) = split_internal_name(name, "");
        return mcp(server, tool, input);
    }
    Call::McpInternal {
        name: name.to_owned(),
        fallback_server: String::new(),
    }
}

/// `tool_input.command` (or Codex's `cmd`, `input`) as one command line: a string as it
/// is, an argv array joined with the quoting a shell would need.
pub fn shell_line(input: &Value) -> Result<String, HookError> {
    let command = ["command", "cmd", "input"]
        .into_iter()
        .find_map(|key| input.get(key));
    match command {
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

/// Codex's `write_stdin`: the characters typed, as a command line.
fn stdin_line(input: &Value) -> Result<String, HookError> {
    match input.get("chars").or_else(|| input.get("input")) {
        Some(Value::String(chars)) => Ok(chars.clone()),
        Some(other) => Err(HookError::field(
            "tool_input.chars",
            format!("expected a string, got {other}"),
        )),
        None => Err(HookError::field("tool_input.chars", "missing")),
    }
}

/// A word quoted so a shell reads it back as the same word.
pub(super) fn quote(word: &str) -> String {
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

/// The most bytes of a working directory taken from a payload; a longer one is left
/// out (the server then places nothing against it).
const MAX_CWD_BYTES: usize = 4096;

/// Keys of a tool's input that name the directory its command runs in. The model
/// writes them, so they are read as a `cd` on the line, never as the working
/// directory itself.
const DIRECTORY_KEYS: [&str; 6] = [
    "workdir",
    "dir_path",
    "directory",
    "cwd",
    "working_directory",
    "workingDirectory",
];

/// What the call touches as the payload says: its working directory (the payload's
/// `cwd`), and its arguments. A directory the tool's input names (`workdir`,
/// `dir_path`, …) is a `cd` on the line: one inside the working directory moves it
/// there (where a protected place is still protected); one outside it (or with no
/// working directory to hold it to) is put on a shell call's line as `cd DIR && …`,
/// where the reader finds every write outside.
pub(super) fn call_args(payload: &Value, tool_input: Option<&Value>, call: &mut Call) -> CallArgs {
    let text = |v: &Value, key: &str| {
        v.get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty() && s.len() <= MAX_CWD_BYTES)
            .map(str::to_owned)
    };
    let mut cwd = text(payload, "cwd");
    let dir = tool_input.and_then(|input| DIRECTORY_KEYS.into_iter().find_map(|k| text(input, k)));
    if let Some(dir) = dir {
        match inside(cwd.as_deref(), &dir) {
            Some(moved) => cwd = Some(moved),
            None => {
                if let Call::Shell(line) = call {
                    *line = format!("cd {} && {line}", quote(&dir));
                }
            }
        }
    }
    CallArgs {
        tool_input: tool_input.filter(|i| i.is_object()).cloned(),
        cwd,
        ..CallArgs::default()
    }
}

/// `dir` resolved against the working directory, when it stays inside it.
fn inside(cwd: Option<&str>, dir: &str) -> Option<String> {
    let base = cwd.filter(|c| c.starts_with('/'))?;
    if dir.starts_with('~') || dir.contains('\\') {
        return None;
    }
    let joined = if dir.starts_with('/') {
        dir.to_owned()
    } else {
        format!("{}/{dir}", base.trim_end_matches('/'))
    };
    let mut parts: Vec<&str> = Vec::new();
    for part in joined.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    let base_parts: Vec<&str> = base
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    if base_parts.contains(&"..") || !parts.starts_with(&base_parts) {
        return None;
    }
    Some(format!("/{}", parts.join("/")))
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
        assert_eq!(shell_line(&json!({"cmd": "ls"})).unwrap(), "ls");
    }

    #[test]
    fn the_codex_table_holds_claude_codes_built_ins() {
        assert_eq!(CODEX.builtins[0].0, "apply_patch");
        for b in CLAUDE_BUILTINS {
            assert!(CODEX.builtins.contains(&b), "{b:?}");
        }
    }

    #[test]
    fn a_shell_tools_workdir_is_a_cd() {
        let payload = json!({"cwd": "/home/dev/proj"});
        let ls = || Call::Shell("ls".to_owned());
        // inside: the working directory moves there
        for (dir, want) in [
            ("sub", "/home/dev/proj/sub"),
            ("./sub/../src", "/home/dev/proj/src"),
            ("/home/dev/proj/src", "/home/dev/proj/src"),
            (".git/hooks", "/home/dev/proj/.git/hooks"),
        ] {
            let mut call = ls();
            let args = call_args(
                &payload,
                Some(&json!({"command": "ls", "workdir": dir})),
                &mut call,
            );
            assert_eq!(args.cwd.as_deref(), Some(want), "{dir:?}");
            assert_eq!(call, ls(), "{dir:?}");
        }
        // outside: a cd on the line, from the working directory
        for (key, dir, line) in [
            ("workdir", "/tmp", "cd /tmp && ls"),
            ("dir_path", "..", "cd .. && ls"),
            ("directory", "~/.ssh", "cd '~/.ssh' && ls"),
            ("cwd", "/home/dev/projx", "cd /home/dev/projx && ls"),
            ("workdir", "sub/../../other", "cd sub/../../other && ls"),
        ] {
            let mut call = ls();
            let args = call_args(&payload, Some(&json!({ key: dir })), &mut call);
            assert_eq!(args.cwd.as_deref(), Some("/home/dev/proj"), "{dir:?}");
            assert_eq!(call, Call::Shell(line.to_owned()), "{dir:?}");
        }
        // no working directory to hold it to
        let mut call = ls();
        let args = call_args(&json!({}), Some(&json!({"workdir": "/srv"})), &mut call);
        assert_eq!(
            (args.cwd, call),
            (None, Call::Shell("cd /srv && ls".to_owned()))
        );
        let mut call = ls();
        assert_eq!(
            call_args(&payload, None, &mut call).cwd.as_deref(),
            Some("/home/dev/proj")
        );
    }
}
