//! `toolgate hook install <client> --scope user|project|managed`: the client's hook
//! configuration, merged into the settings file already there without touching its
//! other keys. Pure: the caller reads the old file and writes the new text.

use super::Client;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// Whose configuration is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InstallScope {
    /// The user's own settings (`~/.claude/settings.json`, …).
    User,
    /// The project's settings, in the current directory.
    Project,
    /// What an admin deploys, which no project can switch off.
    Managed,
}

/// The matcher of the client's tool hook entry: every tool, so a tool the client adds
/// later (or one no table names) reaches the hook and asks. Claude Code reads `*` as
/// every tool; Codex and Gemini CLI read the matcher as a regex, where `.*` is.
pub fn matcher(client: Client) -> &'static str {
    match client {
        Client::ClaudeCode => "*",
        Client::Codex | Client::Gemini | Client::Cursor => ".*",
    }
}

/// Whether `matcher` covers every tool in `client`'s reading of it (an empty or absent
/// matcher does, for the clients with matchers).
pub fn matches_every_tool(client: Client, matcher: Option<&str>) -> bool {
    match matcher.map(str::trim) {
        None | Some("") => true,
        Some("*") => client == Client::ClaudeCode,
        Some(".*" | "^.*$" | ".+" | "^.+$") => true,
        Some(_) => false,
    }
}

/// The `env` keys an install before toolgate's hooks took their settings from flags
/// wrote into Claude Code's settings: a project's settings can set the same keys, so
/// the hook now ignores them and `hook install` removes them.
pub const OLD_INSTALL_VARS: &[&str] = &[
    "TOOLGATE_SERVER",
    "TOOLGATE_TOKEN_FILE",
    "TOOLGATE_TEAM",
    "TOOLGATE_USER",
    "TOOLGATE_HOOK_WAIT_MS",
];

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
pub fn target(client: Client, scope: InstallScope, base: &Path) -> PathBuf {
    let relative = match (client, scope) {
        (Client::ClaudeCode, InstallScope::User | InstallScope::Project) => ".claude/settings.json",
        (Client::ClaudeCode, InstallScope::Managed) => "etc/claude-code/managed-settings.json",
        (Client::Codex, InstallScope::User | InstallScope::Project) => ".codex/hooks.json",
        (Client::Codex, InstallScope::Managed) => "etc/codex/requirements.toml",
        (Client::Cursor, InstallScope::User | InstallScope::Project) => ".cursor/hooks.json",
        (Client::Cursor, InstallScope::Managed) => "etc/cursor/hooks.json",
        (Client::Gemini, InstallScope::User | InstallScope::Project) => ".gemini/settings.json",
        (Client::Gemini, InstallScope::Managed) => "etc/gemini-cli/settings.json",
    };
    base.join(relative)
}

/// The new text of the file at `path`, given its current text (if any): the hook
/// entry running `command`, replacing an earlier toolgate entry and nothing else.
pub fn merge(
    client: Client,
    scope: InstallScope,
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
    scope: InstallScope,
    path: &Path,
    existing: Option<&str>,
    command: &str,
    timeout_secs: u64,
) -> Result<String, InstallError> {
    if client == Client::Codex && scope == InstallScope::Managed {
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
            if client == Client::ClaudeCode {
                remove_old_vars(&mut doc);
            }
            if client == Client::ClaudeCode && scope == InstallScope::Managed {
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
            let entry = json!({"matcher": matcher(client), "hooks": [
                {"type": "command", "command": command, "timeout": timeout_secs * 1000}]});
            put_entry(&mut doc, "BeforeTool", entry, command);
        }
    }
    Ok(format!(
        "{}\n",
        serde_json::to_string_pretty(&doc).unwrap_or_default()
    ))
}

/// The `env` keys `hook install --telemetry` sets in Claude Code's settings, so its
/// OpenTelemetry logs (`claude_code.tool_decision` among them) go to toolgate.
pub const TELEMETRY_VARS: &[&str] = &[
    "CLAUDE_CODE_ENABLE_TELEMETRY",
    "OTEL_LOGS_EXPORTER",
    "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL",
    "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
];

/// Claude Code's settings `text` set up to send its telemetry's logs to `endpoint`
/// (OTLP/HTTP protobuf), with `helper` (`toolgate hook otel-headers …`) as its
/// `otelHeadersHelper`, which prints the Authorization header: no token is written.
/// Its other telemetry (metrics) is left as it was.
pub fn with_telemetry(text: &str, endpoint: &str, helper: &str) -> Result<String, InstallError> {
    let mut doc: Value = serde_json::from_str(text).map_err(|e| InstallError::Unreadable {
        path: "the merged settings".into(),
        kind: "JSON",
        detail: e.to_string(),
    })?;
    if !doc["env"].is_object() {
        doc["env"] = json!({});
    }
    for (name, value) in TELEMETRY_VARS
        .iter()
        .zip(["1", "otlp", "http/protobuf", endpoint])
    {
        doc["env"][*name] = json!(value);
    }
    doc["otelHeadersHelper"] = json!(helper);
    Ok(format!(
        "{}\n",
        serde_json::to_string_pretty(&doc).unwrap_or_default()
    ))
}

/// Drops the `env` keys an earlier install wrote ([`OLD_INSTALL_VARS`]), and `env`
/// itself when nothing else is left in it.
fn remove_old_vars(doc: &mut Value) {
    if let Some(env) = doc.get_mut("env").and_then(Value::as_object_mut) {
        for name in OLD_INSTALL_VARS {
            env.remove(*name);
        }
        if env.is_empty()
            && let Some(top) = doc.as_object_mut()
        {
            top.remove("env");
        }
    }
}

/// What is wrong with an installed toolgate entry in a client's settings (`doc`, a
/// TOML file read as JSON) running `command`, in words for `hook check`: empty when
/// it is current.
pub fn outdated(client: Client, doc: &Value, command: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let event = match client {
        Client::ClaudeCode | Client::Codex => "PreToolUse",
        Client::Gemini => "BeforeTool",
        Client::Cursor => {
            for event in ["beforeShellExecution", "beforeMCPExecution"] {
                let present = doc["hooks"][event]
                    .as_array()
                    .is_some_and(|items| items.iter().any(|item| runs_toolgate(item, command)));
                if !present {
                    problems.push(format!(
                        "no toolgate hook on {event}: those calls never reach it"
                    ));
                }
            }
            return problems;
        }
    };
    for item in doc["hooks"][event].as_array().into_iter().flatten() {
        if runs_toolgate(item, command) && !matches_every_tool(client, item["matcher"].as_str()) {
            problems.push(format!(
                "its matcher {} names some tools only: any other tool runs without asking toolgate",
                item["matcher"]
            ));
        }
    }
    let old: Vec<&str> = OLD_INSTALL_VARS
        .iter()
        .copied()
        .filter(|name| doc["env"].get(*name).is_some())
        .collect();
    if !old.is_empty() {
        problems.push(format!(
            "its settings pass {} in `env`, which the hook ignores (a project's settings can set the same keys)",
            old.join(", ")
        ));
    }
    problems
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
            .is_some_and(|c| (!command.is_empty() && c == command) || c.contains("toolgate hook "))
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

    /// `--telemetry` points Claude Code's logs at toolgate, keeps what the settings
    /// had, and writes a command for the header, never a token.
    #[test]
    fn telemetry_sets_the_exporter_and_the_header_helper() {
        let old = r#"{"env": {"OTHER": "1", "OTEL_LOGS_EXPORTER": "console"}, "model": "x"}"#;
        let merged = merge(
            Client::ClaudeCode,
            InstallScope::User,
            Path::new("s"),
            Some(old),
            "tg hook claude-code --token-file /t",
        )
        .unwrap();
        let text = with_telemetry(
            &merged,
            "https://tg.example/v1/logs",
            "tg hook otel-headers --token-file /t",
        )
        .unwrap();
        let doc: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(doc["env"]["OTHER"], "1");
        assert_eq!(doc["model"], "x");
        assert_eq!(doc["env"]["OTEL_LOGS_EXPORTER"], "otlp");
        assert_eq!(doc["env"]["CLAUDE_CODE_ENABLE_TELEMETRY"], "1");
        assert_eq!(
            doc["env"]["OTEL_EXPORTER_OTLP_LOGS_PROTOCOL"],
            "http/protobuf"
        );
        assert_eq!(
            doc["env"]["OTEL_EXPORTER_OTLP_LOGS_ENDPOINT"],
            "https://tg.example/v1/logs"
        );
        assert_eq!(
            doc["otelHeadersHelper"],
            "tg hook otel-headers --token-file /t"
        );
        assert!(doc["env"].get("OTEL_EXPORTER_OTLP_HEADERS").is_none());
        assert!(with_telemetry("not json", "e", "h").is_err());
    }

    /// Every client's entry matches every tool, so a tool no table names still
    /// reaches the hook (and asks).
    #[test]
    fn every_install_matches_every_tool() {
        for client in [Client::ClaudeCode, Client::Codex, Client::Gemini] {
            let text = merge(
                client,
                InstallScope::User,
                Path::new("s"),
                None,
                "toolgate hook x",
            )
            .unwrap();
            let doc: Value = serde_json::from_str(&text).unwrap();
            let event = if client == Client::Gemini {
                "BeforeTool"
            } else {
                "PreToolUse"
            };
            let m = doc["hooks"][event][0]["matcher"].as_str();
            assert!(matches_every_tool(client, m), "{client:?}: {m:?}");
            assert_eq!(
                outdated(client, &doc, "toolgate hook x"),
                Vec::<String>::new()
            );
        }
        let cursor = merge(
            Client::Cursor,
            InstallScope::User,
            Path::new("s"),
            None,
            "toolgate hook cursor",
        );
        let doc: Value = serde_json::from_str(&cursor.unwrap()).unwrap();
        assert_eq!(outdated(Client::Cursor, &doc, ""), Vec::<String>::new());
        for (client, m, every) in [
            (Client::ClaudeCode, Some("Bash|Read|mcp__.*"), false),
            (Client::ClaudeCode, Some("*"), true),
            (Client::Codex, Some("*"), false),
            (Client::Codex, None, true),
            (Client::Gemini, Some("run_shell_command"), false),
        ] {
            assert_eq!(matches_every_tool(client, m), every, "{client:?} {m:?}");
        }
    }

    /// An install written the old way (a list of tools, the settings in `env`) is
    /// reported, and installing again rewrites it.
    #[test]
    fn an_old_install_is_reported_and_rewritten() {
        let old = r#"{"env": {"TOOLGATE_SERVER": "http://s", "TOOLGATE_TEAM": "t", "OTHER": "1"},
            "hooks": {"PreToolUse": [{"matcher": "Bash|Read|mcp__.*",
              "hooks": [{"type": "command", "command": "/bin/toolgate hook claude-code"}]}]}}"#;
        let doc: Value = serde_json::from_str(old).unwrap();
        let problems = outdated(Client::ClaudeCode, &doc, "/bin/toolgate hook claude-code");
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("matcher"), "{problems:?}");
        assert!(
            problems[1].contains("TOOLGATE_SERVER, TOOLGATE_TEAM"),
            "{problems:?}"
        );
        let command = "/bin/toolgate hook claude-code --server http://s";
        let new = merge(
            Client::ClaudeCode,
            InstallScope::User,
            Path::new("s"),
            Some(old),
            command,
        );
        let doc: Value = serde_json::from_str(&new.unwrap()).unwrap();
        assert_eq!(doc["env"], serde_json::json!({"OTHER": "1"}));
        assert_eq!(doc["hooks"]["PreToolUse"].as_array().unwrap().len(), 1);
        assert_eq!(
            outdated(Client::ClaudeCode, &doc, command),
            Vec::<String>::new()
        );
        let only_ours = r#"{"env": {"TOOLGATE_USER": "u"}}"#;
        let new = merge(
            Client::ClaudeCode,
            InstallScope::User,
            Path::new("s"),
            Some(only_ours),
            command,
        );
        assert!(!new.unwrap().contains("\"env\""));
    }

    #[test]
    fn merging_keeps_other_keys_and_replaces_our_entry() {
        let path = Path::new(".claude/settings.json");
        let old = r#"{"model": "x", "hooks": {"PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "other"}]},
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "/old/toolgate hook claude-code"}]}]}}"#;
        let new = merge(
            Client::ClaudeCode,
            InstallScope::User,
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
            InstallScope::User,
            path,
            Some(&new),
            "toolgate hook claude-code",
        )
        .unwrap();
        assert_eq!(again, new);
        assert!(
            merge(
                Client::ClaudeCode,
                InstallScope::User,
                path,
                Some("[1]"),
                "t"
            )
            .is_err()
        );
    }

    #[test]
    fn managed_forms() {
        let claude = merge(
            Client::ClaudeCode,
            InstallScope::Managed,
            Path::new("m"),
            None,
            "toolgate hook claude-code",
        )
        .unwrap();
        assert!(claude.contains("\"allowManagedHooksOnly\": true"));
        let codex = merge(
            Client::Codex,
            InstallScope::Managed,
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
