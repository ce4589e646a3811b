//! The agent's own write tools (`Write`, `Edit`, `MultiEdit`, `NotebookEdit`,
//! Codex's `apply_patch`, Gemini's `write_file` and `replace`) held to the places a
//! shell write is: a path outside the working directory or in a protected place
//! (`.git/hooks/`, `~/.bashrc`, CI files) never auto-runs, whatever the policy allows.

use super::Parsed;
use crate::policy::{
    BUILTIN_SERVER, Call, Place, is_write_tool, parse_command_line, place_of, tool_written_files,
    touches,
};
use serde_json::Value;

/// The client's tools that write files; each is decided as a built-in write tool,
/// whose files the server reads from the same input (the hook holds them too, for a
/// server that does not).
const WRITE_TOOLS: [&str; 8] = [
    "Write",
    "Edit",
    "MultiEdit",
    "NotebookEdit",
    "write_file",
    "replace",
    "edit",
    "apply_patch",
];

/// Why a write tool's call must not auto-run, or `None` (or not a write tool).
pub(super) fn held(tool: &str, input: &Value, cwd: Option<&str>) -> Option<String> {
    if !WRITE_TOOLS.contains(&tool) {
        return None;
    }
    let paths = match tool_written_files(input) {
        Ok(paths) => paths,
        Err(why) => return Some(format!("{tool}: {why}")),
    };
    paths.iter().find_map(|path| match place_of(path, cwd) {
        Place::Inside(_) => None,
        Place::Outside(why) => Some(format!("{tool} writes {path:?}: {why}")),
        Place::Protected(name) => {
            Some(format!("{tool} writes {path:?}: a protected path ({name})"))
        }
    })
}

/// The absolute paths a call writes or deletes inside its working directory, which
/// the hook (where the files are) checks for symbolic links and nested repository
/// metadata before an ALLOW stands: those the decision names (`stays_inside`, what
/// the server's ALLOW rests on), and the hook's own reading of the call (a shell
/// line's writes as the reader places them, a write tool's files), so a server that
/// names none is checked all the same. Empty without an absolute working directory.
pub fn written_paths(
    parsed: &Parsed,
    tool_input: Option<&Value>,
    stays_inside: &[String],
) -> Vec<String> {
    let Some(cwd) = parsed.args.cwd.as_deref().filter(|c| c.starts_with('/')) else {
        return Vec::new();
    };
    let join = |rel: &str| format!("{}/{rel}", cwd.trim_end_matches('/'));
    let mut paths: Vec<String> = stays_inside
        .iter()
        .map(|p| {
            if p.starts_with('/') {
                p.clone()
            } else {
                join(p)
            }
        })
        .collect();
    let own: Vec<String> = match &parsed.call {
        Call::Shell(line) => {
            let read = parse_command_line(line);
            touches(&read.commands, Some(cwd))
                .into_iter()
                .filter_map(|t| match t.place {
                    Place::Inside(rel) => Some(join(&rel)),
                    _ => None,
                })
                .collect()
        }
        Call::Mcp { server, tool } if server == BUILTIN_SERVER && is_write_tool(tool) => {
            let files = tool_input.and_then(|input| tool_written_files(input).ok());
            files
                .unwrap_or_default()
                .into_iter()
                .filter_map(|p| match place_of(&p, Some(cwd)) {
                    Place::Inside(rel) => Some(join(&rel)),
                    _ => None,
                })
                .collect()
        }
        _ => Vec::new(),
    };
    for path in own {
        if !paths.contains(&path) {
            paths.push(path);
        }
    }
    paths
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn writes_to_protected_or_outside_places_are_held() {
        let cwd = Some("/home/dev/proj");
        let table = [
            (
                "Write",
                json!({"file_path": "/home/dev/proj/src/a.rs"}),
                false,
            ),
            (
                "Write",
                json!({"file_path": "/home/dev/proj/.git/hooks/pre-commit"}),
                true,
            ),
            ("Edit", json!({"file_path": "/home/dev/.bashrc"}), true),
            (
                "MultiEdit",
                json!({"file_path": "/home/dev/proj/.github/workflows/ci.yml"}),
                true,
            ),
            (
                "NotebookEdit",
                json!({"notebook_path": "/home/dev/proj/n.ipynb"}),
                false,
            ),
            (
                "write_file",
                json!({"file_path": ".cargo/config.toml"}),
                true,
            ),
            ("replace", json!({"file_path": "src/lib.rs"}), false),
            ("Write", json!({"content": "x"}), true),
            (
                "apply_patch",
                json!({"input": "*** Begin Patch\n*** Update File: src/a.rs\n@@\n-a\n+b\n*** End Patch"}),
                false,
            ),
            (
                "apply_patch",
                json!({"input": "*** Begin Patch\n*** Add File: .git/hooks/pre-commit\n+x\n*** End Patch"}),
                true,
            ),
            (
                "apply_patch",
                json!({"input": "*** Begin Patch\n*** Update File: a.rs\n*** Move to: ../outside.rs\n*** End Patch"}),
                true,
            ),
            (
                "apply_patch",
                json!({"command": ["apply_patch", "*** Begin Patch\n*** Add File: .envrc\n+x\n*** End Patch"]}),
                true,
            ),
            ("apply_patch", json!({}), true),
            ("Read", json!({"file_path": "/etc/passwd"}), false),
        ];
        for (tool, input, want) in table {
            assert_eq!(held(tool, &input, cwd).is_some(), want, "{tool} {input}");
        }
    }
}
