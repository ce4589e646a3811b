//! Built-in agent tools (seed 002): canonical names under the server id `builtin`,
//! every client's spelling of them, and presets.

/// The server id built-in tools live under, so one policy covers them and MCP tools.
pub const SERVER: &str = "builtin";

/// Canonical name and the CLI SDK name (seed 002's table).
pub const TOOLS: [(&str, &str); 20] = [
    ("read_file", "Read"),
    ("write_file", "Write"),
    ("edit_file", "Edit"),
    ("notebook_edit", "NotebookEdit"),
    ("glob", "Glob"),
    ("grep", "Grep"),
    ("run_shell_command", "Bash"),
    ("task", "Task"),
    ("task_output", "TaskOutput"),
    ("task_stop", "TaskStop"),
    ("enter_plan_mode", "EnterPlanMode"),
    ("exit_plan_mode", "ExitPlanMode"),
    ("ask_user_question", "AskUserQuestion"),
    ("skill", "Skill"),
    ("task_create", "TaskCreate"),
    ("task_get", "TaskGet"),
    ("task_update", "TaskUpdate"),
    ("task_list", "TaskList"),
    ("web_fetch", "WebFetch"),
    ("web_search", "WebSearch"),
];

/// Seed 002 `READONLY_TOOLS`.
pub const READONLY: [&str; 7] = [
    "read_file",
    "glob",
    "grep",
    "task",
    "task_output",
    "web_fetch",
    "web_search",
];

/// The canonical name of a built-in tool spelled any known way; unknown names are
/// returned as they are (a plain MCP-style name under `builtin`).
pub fn canonical(name: &str) -> &str {
    TOOLS
        .iter()
        .find(|(_, alias)| *alias == name)
        .map_or(name, |(canonical, _)| canonical)
}

/// The CLI SDK name of a canonical tool name, if it has one (seed 002 `CANONICAL_TO_CLI`).
pub fn cli_name(canonical: &str) -> Option<&'static str> {
    TOOLS
        .iter()
        .find(|(c, _)| *c == canonical)
        .map(|(_, alias)| *alias)
}

/// Every spelling of a call's tool: for a built-in tool its canonical name and its
/// CLI SDK name (seed 002's two columns), otherwise the name as given.
pub fn spellings<'a>(server: &str, tool: &'a str) -> [Option<&'a str>; 2] {
    if server != SERVER {
        return [Some(tool), None];
    }
    let canonical = canonical(tool);
    [Some(canonical), cli_name(canonical)]
}

/// A preset by name (without the `@`): its static name and canonical tools.
pub fn preset(name: &str) -> Option<(&'static str, &'static [&'static str])> {
    match name {
        "readonly" => Some(("readonly", &READONLY)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_resolve_both_ways() {
        assert_eq!(canonical("Read"), "read_file");
        assert_eq!(canonical("Bash"), "run_shell_command");
        assert_eq!(canonical("read_file"), "read_file");
        assert_eq!(canonical("custom_tool"), "custom_tool");
        assert_eq!(cli_name("web_search"), Some("WebSearch"));
        for (canonical_name, alias) in TOOLS {
            assert_eq!(canonical(alias), canonical_name);
            assert_eq!(cli_name(canonical_name), Some(alias));
        }
        for tool in READONLY {
            assert!(
                TOOLS.iter().any(|(c, _)| *c == tool),
                "{tool} is a known tool"
            );
        }
    }
}
