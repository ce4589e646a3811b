//! Claude Code's managed settings as its `policyHelper` prints them: the toolgate
//! hook as a managed hook, the export's permission rules, the MCP servers the policy
//! lets exist or refuses by name, and the locks the team's `managed:` controls ask for.

use super::{Plan, claude};
use crate::hook::Client;
use crate::hook::install::{self, Scope};
use crate::policy::{AccessMode, AdminControls, BUILTIN_SERVER, Entry, Side};
use serde_json::{Map, Value, json};
use std::path::Path;

/// `{"managedSettings": {…}}` for `plan`, with `hook_command` as the managed hook.
pub fn render(
    plan: &Plan,
    admin: &AdminControls,
    hook_command: &str,
    warnings: &mut Vec<String>,
) -> Value {
    let locks = admin.managed.as_deref().cloned().unwrap_or_default();
    // the hook entry exactly as a managed install writes it
    let installed = install::merge(
        Client::ClaudeCode,
        Scope::Managed,
        Path::new("managed-settings.json"),
        None,
        hook_command,
    )
    .ok()
    .and_then(|text| serde_json::from_str::<Value>(&text).ok());
    let mut settings = match installed {
        Some(Value::Object(map)) => map,
        _ => Map::new(),
    };
    if locks.allow_user_hooks {
        settings.remove("allowManagedHooksOnly");
    }
    let mut permissions = claude::permissions(plan);
    if locks.disable_bypass_permissions_mode {
        permissions["disableBypassPermissionsMode"] = json!("disable");
    }
    settings.insert("permissions".into(), permissions);
    if locks.managed_permission_rules_only {
        settings.insert("allowManagedPermissionRulesOnly".into(), json!(true));
    }
    if !locks.claude_code_minimum_version.is_empty() {
        settings.insert(
            "requiredMinimumVersion".into(),
            json!(locks.claude_code_minimum_version),
        );
    }
    if let Some(allowed) = allowed_servers(plan, admin, warnings) {
        settings.insert("allowedMcpServers".into(), allowed);
    }
    let denied = denied_servers(admin, warnings);
    if !denied.is_empty() {
        settings.insert("deniedMcpServers".into(), Value::Array(denied));
    }
    json!({ "managedSettings": settings })
}

/// A server name Claude Code's `serverName` takes: letters, digits, `-` and `_`.
fn claude_server_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The MCP servers that may be configured at all: with the kill switch none, in the
/// access-allowlist mode the servers its entries name; otherwise no list (every
/// server may be configured, its tools decided by the hook).
fn allowed_servers(
    plan: &Plan,
    admin: &AdminControls,
    warnings: &mut Vec<String>,
) -> Option<Value> {
    if plan.deny_all {
        return Some(json!([]));
    }
    if admin.mcp_access_mode != AccessMode::Allowlist {
        return None;
    }
    let mut names = Vec::new();
    for raw in &admin.mcp_access_allowlist {
        match Entry::parse(raw) {
            Ok(Entry::Pair {
                server: Side::Exact(s),
                ..
            }) if s == BUILTIN_SERVER => {}
            Ok(Entry::Pair {
                server: Side::Exact(s),
                ..
            }) => {
                if claude_server_name(&s) {
                    names.push(s);
                } else {
                    warnings.push(format!(
                        "access allowlist entry {raw:?} names a server Claude Code cannot name in allowedMcpServers (letters, digits, - and _ only): that server is not allowed to be configured"
                    ));
                }
            }
            Ok(Entry::Preset(_)) => {}
            _ => {
                warnings.push(format!(
                    "access allowlist entry {raw:?} does not name one server: allowedMcpServers is left out and the hook decides every MCP call"
                ));
                return None;
            }
        }
    }
    names.sort();
    names.dedup();
    Some(Value::Array(
        names
            .into_iter()
            .map(|n| json!({ "serverName": n }))
            .collect(),
    ))
}

/// The MCP servers whose every tool the team blocks, by name.
fn denied_servers(admin: &AdminControls, warnings: &mut Vec<String>) -> Vec<Value> {
    let mut names = Vec::new();
    for raw in &admin.mcp_tool_blocklist {
        if let Ok(Entry::Pair {
            server: Side::Exact(s),
            tool: Side::Any,
        }) = Entry::parse(raw)
        {
            if s == BUILTIN_SERVER {
                continue;
            }
            if claude_server_name(&s) {
                names.push(s);
            } else {
                warnings.push(format!(
                    "blocklist entry {raw:?} names a server Claude Code cannot name in deniedMcpServers: the hook denies its tools instead"
                ));
            }
        }
    }
    names.sort();
    names.dedup();
    names
        .into_iter()
        .map(|n| json!({ "serverName": n }))
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::export::{Format, claude_managed, export};
    use crate::policy::managed::ManagedControls;
    use crate::policy::{AccessMode, AdminControls, UserSettings};
    use serde_json::{Value, json};

    fn settings(admin: &AdminControls) -> (Value, Vec<String>) {
        let out = claude_managed(
            admin,
            &UserSettings::default(),
            &[],
            "/bin/toolgate hook claude-code",
        )
        .unwrap();
        let doc: Value = serde_json::from_str(&out.text).unwrap();
        (doc["managedSettings"].clone(), out.warnings)
    }

    /// The permission rules are the export's, never more; the hook is the managed
    /// install's entry, and managed hooks only unless the team lets users' hooks run.
    #[test]
    fn the_rules_are_the_exports_and_the_hook_is_managed() {
        let admin = AdminControls {
            enabled: true,
            allowed: vec!["git status".into(), "sudo ls".into()],
            blocked: vec!["git push".into()],
            denied: vec!["rm -rf".into()],
            ..AdminControls::default()
        };
        let (managed, _) = settings(&admin);
        let exported: Value = serde_json::from_str(
            &export(Format::ClaudeCode, &admin, &UserSettings::default(), &[])
                .unwrap()
                .text,
        )
        .unwrap();
        assert_eq!(managed["permissions"], exported["permissions"]);
        assert_eq!(
            managed["hooks"]["PreToolUse"],
            json!([{"matcher": "*", "hooks": [{"type": "command",
                "command": "/bin/toolgate hook claude-code", "timeout": 10}]}])
        );
        assert_eq!(managed["allowManagedHooksOnly"], true);
        for absent in [
            "allowedMcpServers",
            "deniedMcpServers",
            "requiredMinimumVersion",
            "allowManagedPermissionRulesOnly",
        ] {
            assert!(managed.get(absent).is_none(), "{absent}: {managed}");
        }
        let (managed, _) = settings(&AdminControls {
            managed: Some(Box::new(ManagedControls {
                allow_user_hooks: true,
                disable_bypass_permissions_mode: true,
                managed_permission_rules_only: true,
                claude_code_minimum_version: "2.1.0".into(),
            })),
            ..admin
        });
        assert!(managed.get("allowManagedHooksOnly").is_none());
        assert_eq!(
            managed["permissions"]["disableBypassPermissionsMode"],
            "disable"
        );
        assert_eq!(managed["allowManagedPermissionRulesOnly"], true);
        assert_eq!(managed["requiredMinimumVersion"], "2.1.0");
    }

    /// MCP servers by name: (access mode, access allowlist, blocklist, the
    /// allowedMcpServers expected (none: left out), the deniedMcpServers names).
    #[test]
    fn mcp_servers_are_named_only_as_the_policy_says() {
        type Case = (
            AccessMode,
            &'static [&'static str],
            &'static [&'static str],
            Option<Value>,
            Value,
        );
        let table: &[Case] = &[
            (AccessMode::Blocklist, &[], &[], None, json!(null)),
            (
                AccessMode::Blocklist,
                &[],
                &["evil:*", "github:delete_repo", "builtin:*", "e*:*"],
                None,
                json!([{"serverName": "evil"}]),
            ),
            (
                AccessMode::Allowlist,
                &[],
                &[],
                Some(json!([])),
                json!(null),
            ),
            (
                AccessMode::Allowlist,
                &[
                    "github:get_issue",
                    "github:*",
                    "builtin:read_file",
                    "jira:search",
                ],
                &[],
                Some(json!([{"serverName": "github"}, {"serverName": "jira"}])),
                json!(null),
            ),
            // a server glob cannot be said by name: no list at all
            (
                AccessMode::Allowlist,
                &["git*:get_issue"],
                &[],
                None,
                json!(null),
            ),
            // a name Claude Code cannot say is left out (stricter), with a warning
            (
                AccessMode::Allowlist,
                &["my.server:tool"],
                &[],
                Some(json!([])),
                json!(null),
            ),
        ];
        for (mode, access, blocked, allowed, denied) in table {
            let admin = AdminControls {
                mcp_access_mode: *mode,
                mcp_access_allowlist: access.iter().map(|s| (*s).to_owned()).collect(),
                mcp_tool_blocklist: blocked.iter().map(|s| (*s).to_owned()).collect(),
                ..AdminControls::default()
            };
            let (managed, warnings) = settings(&admin);
            assert_eq!(
                managed.get("allowedMcpServers").cloned(),
                *allowed,
                "{access:?}"
            );
            assert_eq!(
                managed
                    .get("deniedMcpServers")
                    .cloned()
                    .unwrap_or(Value::Null),
                *denied,
                "{blocked:?}"
            );
            if access.contains(&"my.server:tool") || access.contains(&"git*:get_issue") {
                assert!(!warnings.is_empty(), "{access:?}");
            }
        }
        // the kill switch: no MCP server may be configured, every tool denied
        let (managed, _) = settings(&AdminControls {
            kill_switch: true,
            ..AdminControls::default()
        });
        assert_eq!(managed["allowedMcpServers"], json!([]));
        assert!(
            managed["permissions"]["deny"]
                .to_string()
                .contains("\"Bash\"")
        );
    }
}
