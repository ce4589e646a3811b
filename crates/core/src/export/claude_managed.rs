//! Claude Code's managed settings as its `policyHelper` prints them: the toolgate
//! hook as a managed hook, the export's permission rules, the MCP servers the policy
//! lets exist or refuses by name, command or URL, and the locks the team's `managed:` controls ask for.

use super::{Plan, claude};
use crate::hook::Client;
use crate::hook::install::{self, InstallScope};
use crate::policy::AdminControls;
use crate::policy::managed::ServerIdentity;
use crate::policy::managed::servers::server_rules;
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
        InstallScope::Managed,
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
    let rules = server_rules(admin, warnings);
    if let Some(allowed) = &rules.allowed {
        settings.insert("allowedMcpServers".into(), entries(allowed));
    }
    if !rules.denied.is_empty() {
        settings.insert("deniedMcpServers".into(), entries(&rules.denied));
    }
    json!({ "managedSettings": settings })
}

/// Claude Code's entries: each exactly one of `serverName`, `serverCommand`,
/// `serverUrl`.
fn entries(list: &[ServerIdentity]) -> Value {
    Value::Array(
        list.iter()
            .map(|i| match i {
                ServerIdentity::Name(n) => json!({ "serverName": n }),
                ServerIdentity::Command(words) => json!({ "serverCommand": words }),
                ServerIdentity::Url(u) => json!({ "serverUrl": u }),
            })
            .collect(),
    )
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
                ..ManagedControls::default()
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

    /// Servers by command and URL join the access allowlist's names in one list,
    /// each entry with exactly one of Claude Code's three keys.
    #[test]
    fn servers_by_identity_are_claude_codes_entries() {
        use crate::policy::managed::ServerIdentity;
        let (managed, _) = settings(&AdminControls {
            mcp_access_mode: AccessMode::Allowlist,
            mcp_access_allowlist: vec!["github:*".into()],
            mcp_tool_blocklist: vec!["evil:*".into()],
            managed: Some(Box::new(ManagedControls {
                allowed_mcp_servers: vec![
                    ServerIdentity::Url("https://mcp.example.com/*".into()),
                    ServerIdentity::Command(vec!["npx".into(), "server-github".into()]),
                ],
                denied_mcp_servers: vec![ServerIdentity::Url("https://*.evil.example/*".into())],
                ..ManagedControls::default()
            })),
            ..AdminControls::default()
        });
        assert_eq!(
            managed["allowedMcpServers"],
            json!([{"serverName": "github"}, {"serverCommand": ["npx", "server-github"]},
                {"serverUrl": "https://mcp.example.com/*"}])
        );
        assert_eq!(
            managed["deniedMcpServers"],
            json!([{"serverName": "evil"}, {"serverUrl": "https://*.evil.example/*"}])
        );
        // identities without the access allowlist: the list is theirs alone
        let (managed, _) = settings(&AdminControls {
            managed: Some(Box::new(ManagedControls {
                allowed_mcp_servers: vec![ServerIdentity::Name("jira".into())],
                ..ManagedControls::default()
            })),
            ..AdminControls::default()
        });
        assert_eq!(
            managed["allowedMcpServers"],
            json!([{"serverName": "jira"}])
        );
    }
}
