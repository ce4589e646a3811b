//! The agent's own write tools (`Write`, `Edit`, `MultiEdit`, `NotebookEdit`,
//! Codex's `apply_patch`, Gemini's `write_file` and `replace`) held to the places a
//! shell write is: a path outside the working directory or in a protected place
//! (`.git/hooks/`, `~/.bashrc`, CI files) never auto-runs, whatever the policy allows.

use super::Parsed;
use crate::policy::{BUILTIN_SERVER, Call, Place, parse_command_line, place_of, touches};
use serde_json::Value;

/// The tools that write files, and the keys of their input that name the file.
const WRITE_TOOLS: [(&str, &[&str]); 8] = [
    ("Write", &["file_path"]),
    ("Edit", &["file_path"]),
    ("MultiEdit", &["file_path"]),
    ("NotebookEdit", &["notebook_path"]),
    ("write_file", &["file_path", "path"]),
    ("replace", &["file_path", "path"]),
    ("edit", &["file_path", "path"]),
    ("apply_patch", &[]),
];

/// The most bytes of a patch read for the files it names; a longer one is held.
const MAX_PATCH_BYTES: usize = 1 << 20;

/// Why a write tool's call must not auto-run, or `None` (or not a write tool).
pub(super) fn held(tool: &str, input: &Value, cwd: Option<&str>) -> Option<String> {
    let (_, keys) = WRITE_TOOLS.iter().find(|(name, _)| *name == tool)?;
    let paths: Vec<String> = if tool == "apply_patch" {
        match patch_text(input) {
            Some(patch) if patch.len() <= MAX_PATCH_BYTES => patch_paths(patch),
            _ => {
                return Some(format!(
                    "{tool}: the patch cannot be read for the files it writes"
                ));
            }
        }
    } else {
        keys.iter()
            .filter_map(|k| input.get(*k).and_then(Value::as_str))
            .map(str::to_owned)
            .collect()
    };
    if paths.is_empty() {
        return Some(format!("{tool}: no file it writes is named"));
    }
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
/// metadata before an ALLOW stands: a shell line's writes as the reader places them,
/// a write tool's files. Empty without an absolute working directory.
pub fn written_paths(parsed: &Parsed, tool_input: Option<&Value>) -> Vec<String> {
    let Some(cwd) = parsed.args.cwd.as_deref().filter(|c| c.starts_with('/')) else {
        return Vec::new();
    };
    let join = |rel: &str| format!("{}/{rel}", cwd.trim_end_matches('/'));
    match &parsed.call {
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
        Call::Mcp { server, tool }
            if server == BUILTIN_SERVER && DECIDED_AS_WRITES.contains(&tool.as_str()) =>
        {
            let Some(input) = tool_input else {
                return Vec::new();
            };
            let mut paths: Vec<String> = ["file_path", "notebook_path", "path"]
                .iter()
                .filter_map(|k| input.get(*k).and_then(Value::as_str))
                .map(str::to_owned)
                .collect();
            if let Some(patch) = patch_text(input).filter(|p| p.len() <= MAX_PATCH_BYTES) {
                paths.extend(patch_paths(patch));
            }
            paths
                .into_iter()
                .filter_map(|p| match place_of(&p, Some(cwd)) {
                    Place::Inside(rel) => Some(join(&rel)),
                    _ => None,
                })
                .collect()
        }
        _ => Vec::new(),
    }
}

/// The built-in names the write tools are decided as (`MultiEdit` and
/// `apply_patch` as `edit_file`).
const DECIDED_AS_WRITES: [&str; 7] = [
    "Write",
    "Edit",
    "edit_file",
    "NotebookEdit",
    "write_file",
    "replace",
    "edit",
];

/// Codex's `apply_patch` input: the patch text under one of its keys, or the
/// second word of an argv (`["apply_patch", "*** Begin Patch…"]`).
fn patch_text(input: &Value) -> Option<&str> {
    for key in ["input", "patch", "command", "cmd"] {
        match input.get(key) {
            Some(Value::String(s)) => return Some(s),
            Some(Value::Array(argv)) => {
                return argv
                    .iter()
                    .filter_map(Value::as_str)
                    .find(|s| s.contains("***"));
            }
            _ => {}
        }
    }
    input.as_str()
}

/// The files a patch adds, updates, deletes or moves to.
fn patch_paths(patch: &str) -> Vec<String> {
    patch
        .lines()
        .filter_map(|line| {
            let line = line.trim_start();
            [
                "*** Add File:",
                "*** Update File:",
                "*** Delete File:",
                "*** Move to:",
            ]
            .iter()
            .find_map(|head| line.strip_prefix(head))
            .map(|p| p.trim().to_owned())
        })
        .collect()
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
