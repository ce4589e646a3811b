//! `toolgate hook install <client> --scope user|project|managed`: the client's hook
//! configuration, merged into the settings file already there without touching its
//! other keys. Pure: the caller reads the old file and writes the new text.

use super::Client;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// Whose configuration is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The user's own settings (`~/.claude/settings.json`, …).
    User,
    /// The project's settings, in the current directory.
    Project,
    /// What an admin deploys, which no project can switch off.
    Managed,
}

/// The matcher of Claude Code's and Codex's `PreToolUse` entry: every tool of the
/// client's table (its shells, its known built-ins) and every MCP tool. An unanchored
/// regex (it holds `.`), so `mcp__.*` covers all servers.
pub fn matcher(client: Client) -> String {
    let table = match client {
        Client::Codex => &super::CODEX,
        Client::Gemini => return GEMINI_MATCHER.to_owned(),
        Client::ClaudeCode | Client::Cursor => &super::CLAUDE,
    };
    let mut names: Vec<&str> = Vec::new();
    for name in table.names() {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names.push("mcp__.*");
    names.join("|")
}

/// Gemini CLI: every tool (its policy engine covers the rest).
pub const GEMINI_MATCHER: &str = ".*";

/// Seconds Claude Code and Codex give the hook before they give up on it.
pub const TIMEOUT_SECS: u64 = 10;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InstallError {
    #[error("{path} is not a {kind} document: {detail}; fix or move it, then install again")]
    Unreadable {
        path: String,
        kind: &'static str,
        detail: String,
    },
}

/// The file to write for `client` at `scope`. `base` is the home directory (user), the
/// project directory (project) or the root of the file system (managed).
pub fn target(client: Client, scope: Scope, base: &Path) -> PathBuf {
    let relative = match (client, scope) {
        (Client::ClaudeCode, Scope::User | Scope::Project) => ".claude/settings.json",
        (Client::ClaudeCode, Scope::Managed) => "etc/claude-code/managed-settings.json",
        (Client::Codex, Scope::User | Scope::Project) => ".codex/hooks.json",
        (Client::Codex, Scope::Managed) => "etc/codex/requirements.toml",
        (Client::Cursor, Scope::User | Scope::Project) => ".cursor/hooks.json",
        (Client::Cursor, Scope::Managed) => "etc/cursor/hooks.json",
        (Client::Gemini, Scope::User | Scope::Project) => ".gemini/settings.json",
        (Client::Gemini, Scope::Managed) => "etc/gemini-cli/settings.json",
    };
    base.join(relative)
}

/// The new text of the file at `path`, given its current text (if any): the hook
/// entry running `command`, replacing an earlier toolgate entry and nothing else.
pub fn merge(
    client: Client,
    scope: Scope,
    path: &Path,
    existing: Option<&str>,
    command: &str,
) -> Result<String, InstallError> {
    merge_with_timeout(client, scope, path, existing, command, TIMEOUT_SECS)
}

/// [`merge`] with the client's hook timeout set to `timeout_secs` (where the client
/// takes one): longer than the hook may wait for a person's answer to an ASK the team
/// sends to its approvers, since a client whose hook times out runs the call.
pub fn merge_with_timeout(
    client: Client,
    scope: Scope,
    path: &Path,
    existing: Option<&str>,
    command: &str,
    timeout_secs: u64,
) -> Result<String, InstallError> {
    if client == Client::Codex && scope == Scope::Managed {
        return merge_codex_requirements(path, existing, command, timeout_secs);
    }
    let mut doc = match existing.map(str::trim).filter(|t| !t.is_empty()) {
        None => json!({}),
        Some(text) => serde_json::from_str::<Value>(text)
            .ok()
            .filter(Value::is_object)
            .ok_or_else(|| InstallError::Unreadable {
                path: path.display().to_string(),
                kind: "JSON object",
                detail: "it does not parse as one".into(),
            })?,
    };
    match client {
        Client::ClaudeCode | Client::Codex => {
            let entry = json!({"matcher": matcher(client), "hooks": [
                {"type": "command", "command": command, "timeout": timeout_secs}]});
            put_entry(&mut doc, "PreToolUse", entry, command);
            if client == Client::ClaudeCode && scope == Scope::Managed {
                // no user or project hook (nor a project's disableAllHooks) displaces it
                doc["allowManagedHooksOnly"] = json!(true);
            }
        }
        Client::Cursor => {
            doc["version"] = json!(1);
            for event in ["beforeShellExecution", "beforeMCPExecution"] {
                put_entry(
                    &mut doc,
                    event,
                    json!({"command": command, "failClosed": true}),
                    command,
                );
            }
        }
        Client::Gemini => {
            if !doc["hooksConfig"].is_object() {
                doc["hooksConfig"] = json!({});
            }
            doc["hooksConfig"]["enabled"] = json!(true);
            let entry = json!({"matcher": GEMINI_MATCHER, "hooks": [
                {"type": "command", "command": command, "timeout": timeout_secs * 1000}]});
            put_entry(&mut doc, "BeforeTool", entry, command);
        }
    }
    Ok(format!(
        "{}\n",
        serde_json::to_string_pretty(&doc).unwrap_or_default()
    ))
}

/// Claude Code's settings text with `vars` set in its `env` object, which Claude Code
/// passes on to every hook it runs; other keys of `env` are kept. Only what is not a
/// secret belongs there (the settings file is commonly world-readable).
pub fn with_env(path: &Path, text: &str, vars: &[(&str, String)]) -> Result<String, InstallError> {
    let mut doc = serde_json::from_str::<Value>(text)
        .ok()
        .filter(Value::is_object)
        .ok_or_else(|| InstallError::Unreadable {
            path: path.display().to_string(),
            kind: "JSON object",
            detail: "it does not parse as one".into(),
        })?;
    if !vars.is_empty() && !doc["env"].is_object() {
        doc["env"] = json!({});
    }
    for (name, value) in vars {
        doc["env"][*name] = json!(value);
    }
    Ok(format!(
        "{}\n",
        serde_json::to_string_pretty(&doc).unwrap_or_default()
    ))
}

/// `doc.hooks[event]` gets `entry`, after any entry that runs a toolgate hook is
/// removed (so installing twice leaves one).
fn put_entry(doc: &mut Value, event: &str, entry: Value, command: &str) {
    if !doc["hooks"].is_object() {
        doc["hooks"] = json!({});
    }
    let list = &mut doc["hooks"][event];
    if !list.is_array() {
        *list = json!([]);
    }
    if let Some(items) = list.as_array_mut() {
        items.retain(|item| !runs_toolgate(item, command));
        items.push(entry);
    }
}

fn runs_toolgate(item: &Value, command: &str) -> bool {
    let is_ours = |c: &Value| {
        c.as_str()
            .is_some_and(|c| c == command || c.contains("toolgate hook "))
    };
    is_ours(&item["command"])
        || item["hooks"]
            .as_array()
            .is_some_and(|hooks| hooks.iter().any(|h| is_ours(&h["command"])))
}

/// Codex's admin file: managed hooks only, and toolgate's `PreToolUse` hook.
fn merge_codex_requirements(
    path: &Path,
    existing: Option<&str>,
    command: &str,
    timeout_secs: u64,
) -> Result<String, InstallError> {
    let mut doc: toml::Table = match existing {
        None => toml::Table::new(),
        Some(text) => text
            .parse()
            .map_err(|e: toml::de::Error| InstallError::Unreadable {
                path: path.display().to_string(),
                kind: "TOML",
                detail: e.message().to_owned(),
            })?,
    };
    doc.insert(
        "allow_managed_hooks_only".into(),
        toml::Value::Boolean(true),
    );
    let hooks = doc
        .entry("hooks")
        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    if !hooks.is_table() {
        *hooks = toml::Value::Table(toml::Table::new());
    }
    let entry: toml::Value =
        toml::Value::try_from(json!({"matcher": matcher(Client::Codex), "hooks": [
        {"type": "command", "command": command, "timeout": timeout_secs}]}))
        .unwrap_or(toml::Value::Table(toml::Table::new()));
    if let Some(hooks) = hooks.as_table_mut() {
        let list = hooks
            .entry("PreToolUse")
            .or_insert_with(|| toml::Value::Array(Vec::new()));
        if !list.is_array() {
            *list = toml::Value::Array(Vec::new());
        }
        if let Some(items) = list.as_array_mut() {
            items.retain(|item| {
                let as_json = serde_json::to_value(item).unwrap_or(Value::Null);
                !runs_toolgate(&as_json, command)
            });
            items.push(entry);
        }
    }
    Ok(toml::to_string(&doc).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Claude Code and Codex read the matcher as an unanchored regex: every tool the
    /// hook decides (the shells above all) must reach it.
    #[test]
    fn matchers_cover_every_tool_the_hook_decides() {
        for (client, table) in [
            (Client::ClaudeCode, super::super::CLAUDE),
            (Client::Codex, super::super::CODEX),
        ] {
            let m = matcher(client);
            let alternatives: Vec<&str> = m.split('|').collect();
            for name in table.names().chain(["mcp__github__delete_repo"]) {
                // `.` in an alternative matches any character, `.*` anything after
                let covered = alternatives.iter().any(|alt| {
                    let (head, any_tail) = alt
                        .strip_suffix(".*")
                        .map_or((*alt, false), |head| (head, true));
                    let fits = |n: &str| {
                        n.len() >= head.len()
                            && head
                                .bytes()
                                .zip(n.bytes())
                                .all(|(p, c)| p == b'.' || p == c)
                    };
                    (0..name.len()).any(|at| {
                        let rest = &name[at..];
                        fits(rest) && (any_tail || rest.len() >= head.len())
                    })
                });
                assert!(covered, "{client:?}: {name} is not matched by {m}");
            }
        }
        let codex = matcher(Client::Codex);
        for tool in [
            "apply_patch",
            "shell_command",
            "container.exec",
            "write_stdin",
        ] {
            assert!(codex.split('|').any(|a| a == tool), "{tool}");
        }
    }

    #[test]
    fn merging_keeps_other_keys_and_replaces_our_entry() {
        let path = Path::new(".claude/settings.json");
        let old = r#"{"model": "x", "hooks": {"PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "other"}]},
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "/old/toolgate hook claude-code"}]}]}}"#;
        let new = merge(
            Client::ClaudeCode,
            Scope::User,
            path,
            Some(old),
            "toolgate hook claude-code",
        )
        .unwrap();
        let v: Value = serde_json::from_str(&new).unwrap();
        assert_eq!(v["model"], "x");
        let entries = v["hooks"]["PreToolUse"].as_array().unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0]["hooks"][0]["command"], "other");
        assert_eq!(entries[1]["matcher"], matcher(Client::ClaudeCode));
        let again = merge(
            Client::ClaudeCode,
            Scope::User,
            path,
            Some(&new),
            "toolgate hook claude-code",
        )
        .unwrap();
        assert_eq!(again, new);
        assert!(merge(Client::ClaudeCode, Scope::User, path, Some("[1]"), "t").is_err());
    }

    #[test]
    fn managed_forms() {
        let claude = merge(
            Client::ClaudeCode,
            Scope::Managed,
            Path::new("m"),
            None,
            "toolgate hook claude-code",
        )
        .unwrap();
        assert!(claude.contains("\"allowManagedHooksOnly\": true"));
        let codex = merge(
            Client::Codex,
            Scope::Managed,
            Path::new("r"),
            Some("allowed_sandbox_modes = [\"read-only\"]\n"),
            "toolgate hook codex",
        )
        .unwrap();
        let t: toml::Table = codex.parse().unwrap();
        assert_eq!(t["allow_managed_hooks_only"].as_bool(), Some(true));
        assert!(t["allowed_sandbox_modes"].is_array());
        assert_eq!(
            t["hooks"]["PreToolUse"][0]["hooks"][0]["command"].as_str(),
            Some("toolgate hook codex")
        );
    }
}
