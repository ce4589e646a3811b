//! What a call touches, read from its arguments: seed 004's structured fields, the
//! agents' own tools (`Read`/`Edit`/`Write` `file_path`, `WebFetch` `url`) and a shell
//! line's path and host arguments (`cat`, `cp`, `mv`, `rm`, `curl`, `wget`,
//! redirections, and the effects the program table knows: written paths such as
//! `-o/etc/x`, hosts of `nc`/`ssh`/`scp`/`rsync`/`git`), so a forbidden path is
//! forbidden whichever tool touches it. Relative paths after a `cd` are joined to it.

mod command;
#[cfg(test)]
mod tests;

use super::Touches;
pub use command::touches_of_command;
use serde_json::Value;

/// The most paths and targets read from one call; past it the call is unreadable.
pub const MAX_TOUCHES: usize = 256;

/// Seed 004's operation for a built-in agent tool (canonical name, seed 002).
pub fn builtin_operation(canonical: &str) -> Option<&'static str> {
    Some(match canonical {
        "read_file" | "glob" | "grep" => "FILE_READ",
        "write_file" | "edit_file" | "notebook_edit" => "FILE_WRITE",
        "run_shell_command" => "PROCESS_EXECUTE",
        "web_fetch" | "web_search" => "NETWORK_REQUEST",
        _ => return None,
    })
}

/// The operation a tool call is when the call names none: a built-in tool's seed 004
/// operation (`Read` is `FILE_READ`), any other tool's `server:tool`.
pub fn tool_operation(server: &str, tool: &str) -> String {
    if server == crate::policy::BUILTIN_SERVER {
        let canonical = crate::policy::canonical_builtin(tool);
        if let Some(op) = builtin_operation(canonical) {
            return op.to_owned();
        }
    }
    format!("{server}:{tool}")
}

/// The calls [`tool_operation`] names `op`, as `(server, canonical tool)` pairs: its
/// inverse, so a tool category used as an `@category` allowlist entry matches exactly
/// the calls the roles count as its operations. A seed 004 operation (`FILE_READ`)
/// is its built-in tools; `server:tool` is that tool; anything else (a name with no
/// `:`, `builtin:Read` where the roles say `FILE_READ`) is no call.
pub fn calls_of_operation(op: &str) -> Vec<(String, String)> {
    use crate::policy::{BUILTIN_SERVER, BUILTIN_TOOLS, canonical_builtin};
    let builtins: Vec<(String, String)> = BUILTIN_TOOLS
        .iter()
        .filter(|(canonical, _)| builtin_operation(canonical) == Some(op))
        .map(|(canonical, _)| (BUILTIN_SERVER.to_owned(), (*canonical).to_owned()))
        .collect();
    if !builtins.is_empty() {
        return builtins;
    }
    let Some((server, tool)) = op.split_once(':') else {
        return Vec::new();
    };
    let valid = |name: &str| crate::policy::validate_call_name(name).is_ok();
    if !valid(server) || !valid(tool) {
        return Vec::new();
    }
    if server == BUILTIN_SERVER {
        // the roles name a built-in tool by its operation, or else canonically
        if canonical_builtin(tool) != tool || builtin_operation(tool).is_some() {
            return Vec::new();
        }
    }
    vec![(server.to_owned(), tool.to_owned())]
}

/// Commands whose arguments (other than options) are all files.
const FILE_COMMANDS: [&str; 24] = [
    "cat", "cp", "mv", "rm", "head", "tail", "less", "more", "touch", "mkdir", "rmdir", "ln",
    "chmod", "chown", "tee", "install", "rsync", "scp", "shred", "truncate", "unlink", "stat",
    "source", ".",
];

/// Commands whose arguments (other than options) are URLs or hosts.
const NET_COMMANDS: [&str; 2] = ["curl", "wget"];

/// Options of `curl` and `wget` whose value is a file.
const FILE_OPTIONS: [&str; 9] = [
    "-o",
    "--output",
    "-O",
    "--output-document",
    "-T",
    "--upload-file",
    "-K",
    "--config",
    "--input-file",
];

/// Argument keys whose value is a path or a list of paths, in any tool's arguments
/// (built-in or MCP), at any depth. A value holding `://` is read as a URL instead.
pub const PATH_KEYS: [&str; 24] = [
    "path",
    "paths",
    "file_path",
    "filePath",
    "file_paths",
    "filePaths",
    "notebook_path",
    "absolute_path",
    "source",
    "source_path",
    "destination",
    "destination_path",
    "src",
    "dst",
    "dest",
    "target",
    "target_path",
    "old_path",
    "new_path",
    "from_path",
    "to_path",
    "file",
    "files",
    "filename",
];

/// Argument keys whose value is a directory (or a list of them), at any depth.
pub const DIRECTORY_KEYS: [&str; 7] = [
    "dir",
    "dir_path",
    "directory",
    "root",
    "cwd",
    "workdir",
    "working_directory",
];

/// Argument keys whose value is a URL or a host.
const URL_KEYS: [&str; 4] = ["url", "uri", "endpoint", "host"];

/// Argument keys whose value is text, never read as a path however it looks (a
/// file's content that starts with `/`).
const TEXT_KEYS: [&str; 16] = [
    "content",
    "old_string",
    "new_string",
    "command",
    "cmd",
    "description",
    "prompt",
    "query",
    "pattern",
    "glob",
    "text",
    "body",
    "message",
    "code",
    "script",
    "new_source",
];

/// How deep the arguments are walked; deeper is unreadable.
const MAX_DEPTH: usize = 16;

/// Reads what a tool's input touches: `tool` is the canonical built-in name or any
/// other tool's name; `input` its arguments as the client sends them.
pub fn touches_of_tool_input(tool: &str, input: &Value) -> Touches {
    let mut t = Touches::default();
    let Some(fields) = input.as_object() else {
        return t;
    };
    let text = |key: &str| fields.get(key).and_then(Value::as_str);
    walk(input, 0, &mut t);
    if tool == "glob"
        && let Some(pattern) = text("pattern")
    {
        let dir = text("path").or(text("dir_path"));
        glob_touches(pattern, dir, &mut t);
    }
    if let Some(p) = text("protocol") {
        t.protocols.push(p.to_owned());
    }
    if let Some(d) = text("database") {
        t.databases.push(d.to_owned());
    }
    if let Some(table) = text("table") {
        t.tables.push(table.to_owned());
    }
    if let Some(tables) = fields.get("tables").and_then(Value::as_array) {
        for table in tables.iter().filter_map(Value::as_str) {
            add(&mut t.tables, table, &mut t.unreadable);
        }
    }
    t.component_type = text("componentType")
        .or(text("component_type"))
        .map(str::to_owned);
    t.component_count = fields
        .get("componentCount")
        .or(fields.get("component_count"))
        .and_then(Value::as_u64);
    t.file_size = fields
        .get("fileSize")
        .or(fields.get("file_size"))
        .and_then(Value::as_u64);
    if tool == "write_file"
        && let Some(content) = text("content")
    {
        t.file_size = Some(content.len() as u64);
    }
    if tool == "run_shell_command"
        && let Some(line) = text("command")
    {
        merge(&mut t, touches_of_command(line));
    }
    t
}

/// Every path-like argument: values of [`PATH_KEYS`] and [`URL_KEYS`] at any depth,
/// and any other string that looks like a path (but those of [`TEXT_KEYS`]).
fn walk(value: &Value, depth: usize, t: &mut Touches) {
    if depth > MAX_DEPTH {
        t.unreadable
            .get_or_insert_with(|| format!("the arguments nest deeper than {MAX_DEPTH}"));
        return;
    }
    match value {
        Value::Object(fields) => {
            for (key, v) in fields {
                let key = key.as_str();
                let dir_key = DIRECTORY_KEYS.contains(&key);
                let path_key = dir_key || PATH_KEYS.contains(&key);
                let url_key = URL_KEYS.contains(&key);
                for p in strings(v).into_iter().filter(|_| path_key || url_key) {
                    if url_key || p.contains("://") {
                        add(&mut t.targets, p, &mut t.unreadable);
                    } else if dir_key {
                        add(&mut t.directories, p, &mut t.unreadable);
                    } else {
                        add(&mut t.paths, p, &mut t.unreadable);
                    }
                }
                if TEXT_KEYS.contains(&key) {
                    continue;
                }
                match v {
                    // the strings were read above
                    Value::Array(items) if path_key || url_key => {
                        for item in items.iter().filter(|i| i.is_object() || i.is_array()) {
                            walk(item, depth + 1, t);
                        }
                    }
                    Value::String(_) if path_key || url_key => {}
                    _ => walk(v, depth + 1, t),
                }
            }
        }
        Value::Array(items) => {
            for v in items {
                walk(v, depth + 1, t);
            }
        }
        Value::String(s) if looks_like_path(s) => add(&mut t.loose_paths, s, &mut t.unreadable),
        _ => {}
    }
}

/// A string, or the strings of an array.
fn strings(v: &Value) -> Vec<&str> {
    match v {
        Value::String(s) => vec![s.as_str()],
        Value::Array(items) => items.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// A single-line string that starts the way only a path does: `/`, `~/`, `./`, `../`,
/// a drive letter, `\\`; no URL.
pub fn looks_like_path(s: &str) -> bool {
    if s.len() > 4096 || s.contains("://") || s.contains(char::is_whitespace) {
        return false;
    }
    let b = s.as_bytes();
    let drive =
        b.len() >= 3 && b[0].is_ascii_alphabetic() && b[1] == b':' && matches!(b[2], b'/' | b'\\');
    drive
        || s.starts_with(['/', '\\'])
        || s.starts_with("~/")
        || s.starts_with("./")
        || s.starts_with("../")
        || s == "~"
        || s == ".."
}

/// Seed 002's `glob`: the directory a pattern lists from (its part before the first
/// wildcard, under `dir` when relative) is a directory it touches; a pattern with no
/// wildcard names the path itself. A pattern that climbs
/// with `..` after a wildcard cannot be placed.
fn glob_touches(pattern: &str, dir: Option<&str>, t: &mut Touches) {
    let first = pattern.find(['*', '?', '[', '{']).unwrap_or(pattern.len());
    if pattern[first..].split(['/', '\\']).any(|part| part == "..") {
        t.unreadable.get_or_insert_with(|| {
            format!("the glob {pattern:?} climbs with `..` after a wildcard")
        });
        return;
    }
    let base = if first == pattern.len() {
        pattern
    } else {
        match pattern[..first].rfind(['/', '\\']) {
            Some(0) => &pattern[..1],
            // `C:\*`: the drive's root
            Some(2) if pattern.as_bytes()[1] == b':' => &pattern[..3],
            Some(i) => &pattern[..i],
            None => "",
        }
    };
    let absolute =
        base.starts_with(['/', '\\', '~']) || super::paths::windows_absolute(base).is_some();
    let placed = match (absolute, dir) {
        (true, _) | (false, None) if !base.is_empty() => base.to_owned(),
        (false, Some(d)) if !base.is_empty() => format!("{}/{base}", d.trim_end_matches('/')),
        (_, Some(d)) => d.to_owned(),
        (_, None) => ".".to_owned(),
    };
    add(&mut t.directories, &placed, &mut t.unreadable);
}

fn add(list: &mut Vec<String>, value: &str, unreadable: &mut Option<String>) {
    if list.iter().any(|v| v == value) {
        return;
    }
    if list.len() >= MAX_TOUCHES {
        unreadable.get_or_insert_with(|| format!("more than {MAX_TOUCHES} paths or hosts"));
    } else {
        list.push(value.to_owned());
    }
}

fn merge(into: &mut Touches, from: Touches) {
    for p in from.paths {
        add(&mut into.paths, &p, &mut into.unreadable);
    }
    for d in from.directories {
        add(&mut into.directories, &d, &mut into.unreadable);
    }
    for p in from.loose_paths {
        add(&mut into.loose_paths, &p, &mut into.unreadable);
    }
    for n in from.names {
        add(&mut into.names, &n, &mut into.unreadable);
    }
    for u in from.targets {
        add(&mut into.targets, &u, &mut into.unreadable);
    }
    if into.unreadable.is_none() {
        into.unreadable = from.unreadable;
    }
}
