//! The agent's own write tools (`Write`, `Edit`, `MultiEdit`, `NotebookEdit`, Codex's
//! `apply_patch`, Gemini's `write_file` and `replace`) held to the places a shell
//! write is: given the tool's input, a file outside the working directory or in a
//! protected place (`.git/hooks/`, `~/.bashrc`, CI files) never auto-runs, whatever
//! the policy allows; a file inside is a condition the ALLOW carries.

use super::{Parts, Site};
use crate::policy::{Outcome, Place, Reason, builtin, place_of};
use serde_json::Value;

/// The most bytes of a patch read for the files it names; a longer one is held.
pub const MAX_PATCH_BYTES: usize = 1 << 20;

/// The most files one call's input may name; more are held (each is placed and
/// carried in the decision).
pub const MAX_WRITTEN_FILES: usize = 256;

/// Built-in tools that write the files their input names, by canonical name and by
/// the names clients send when they do not map them (`MultiEdit`, `apply_patch`,
/// Gemini's `replace` and `edit`).
const WRITE_TOOLS: [&str; 7] = [
    "write_file",
    "edit_file",
    "notebook_edit",
    "MultiEdit",
    "apply_patch",
    "replace",
    "edit",
];

/// Whether a built-in tool (any spelling) writes the files its input names.
pub fn is_write_tool(tool: &str) -> bool {
    WRITE_TOOLS.contains(&builtin::canonical(tool))
}

/// The files a write tool's input names (`file_path`, `notebook_path`, `path`, and
/// the files an `apply_patch` patch adds, updates, deletes or moves to), or why they
/// cannot be read. None named is an error too: a write of no known file is held.
pub fn tool_written_files(input: &Value) -> Result<Vec<String>, String> {
    let mut files: Vec<String> = ["file_path", "notebook_path", "path"]
        .iter()
        .filter_map(|k| input.get(*k).and_then(Value::as_str))
        .map(str::to_owned)
        .collect();
    if let Some(patch) = patch_text(input) {
        if patch.len() > MAX_PATCH_BYTES {
            return Err(format!(
                "the patch is {} bytes, more than the {MAX_PATCH_BYTES} read for the files it writes",
                patch.len()
            ));
        }
        files.extend(patch_paths(patch));
    }
    if files.is_empty() {
        return Err(
            "no file it writes is named (file_path, notebook_path, path or a patch's files)"
                .to_owned(),
        );
    }
    if files.len() > MAX_WRITTEN_FILES {
        return Err(format!(
            "it names {} files, more than the {MAX_WRITTEN_FILES} checked",
            files.len()
        ));
    }
    Ok(files)
}

/// Codex's `apply_patch` input: the patch text under one of its keys, or the
/// word of an argv that holds it (`["apply_patch", "*** Begin Patch…"]`).
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
fn patch_paths(patch: &str) -> impl Iterator<Item = String> + '_ {
    patch.lines().filter_map(|line| {
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
}

/// A path placed inside the working directory, as a decision carries it: absolute
/// under a known working directory, else relative to it.
pub(super) fn inside_path(cwd: Option<&str>, rel: &str) -> String {
    match cwd.filter(|c| c.starts_with('/')) {
        Some(cwd) => format!("{}/{rel}", cwd.trim_end_matches('/')),
        None => rel.to_owned(),
    }
}

/// A write tool's ALLOW held to the places its files land: `Err` with the ASK and
/// why when one is outside or protected (or none can be read), else the files it
/// writes, which the ALLOW depends on staying inside.
pub(super) fn hold(tool: &str, site: &Site<'_>) -> Result<Vec<String>, (Parts, String)> {
    let Some(input) = site.tool_input.filter(|_| is_write_tool(tool)) else {
        return Ok(Vec::new());
    };
    let held = |why: String| {
        (
            (Outcome::Ask, Reason::CommandBlocked, None, Vec::new()),
            format!("{tool} {why}, where no write auto-runs"),
        )
    };
    let files =
        tool_written_files(input).map_err(|why| held(format!("cannot be placed: {why}")))?;
    let mut inside = Vec::with_capacity(files.len());
    for path in &files {
        match place_of(path, site.cwd) {
            Place::Inside(rel) => inside.push(inside_path(site.cwd, &rel)),
            Place::Outside(why) => return Err(held(format!("writes {path:?}: {why}"))),
            Place::Protected(name) => {
                return Err(held(format!("writes {path:?}: a protected path ({name})")));
            }
        }
    }
    Ok(inside)
}
