//! A decision as a sentence for people.

use crate::policy::{Call, Decision, Reason, qualified_name, shell, split_internal_name};

/// A sentence for people about `d`, a decision on `call`.
pub(in crate::policy) fn message(d: &Decision, call: &Call) -> String {
    if let (Reason::NotInFileAllowlist, Some(allowed)) = (d.reason, &d.allowed_tools) {
        // seed 000's error, word for word
        let name = match call {
            Call::McpAction { tool, action, .. } => qualified_name(tool, Some(action)),
            Call::Mcp { tool, .. } => tool.clone(),
            Call::McpInternal {
                name,
                fallback_server,
            } => split_internal_name(name, fallback_server).1.to_owned(),
            Call::Shell(_) | Call::DeleteFile(_) => String::new(),
        };
        return format!("{name} is not permitted. Allowed: {}", allowed.join(", "));
    }
    let subject = match call {
        Call::Mcp { server, tool } => format!("{server}:{tool}"),
        Call::McpAction {
            server,
            tool,
            action,
        } => format!("{server}:{tool} (action {action})"),
        Call::McpInternal { name, .. } => name.clone(),
        Call::Shell(line) => format!("command {line:?}"),
        Call::DeleteFile(path) => format!("deleting {path:?}"),
    };
    let entry = d.matched_entry.as_deref().unwrap_or("");
    let why = match d.reason {
        Reason::KillSwitch => "is denied: the team's kill switch is on".to_owned(),
        Reason::InvalidName => {
            "needs approval: its server, tool or path is not a valid name".to_owned()
        }
        Reason::BlockedByAdmin => format!("is denied by the admin blocklist entry {entry}"),
        Reason::NotInAccessAllowlist => {
            "is denied: the admin permits only listed tools, and it is not listed".to_owned()
        }
        Reason::AdminDisabled => "needs approval: the admin has disabled auto-run".to_owned(),
        Reason::ProtectionOn => "needs approval: tool protection is on".to_owned(),
        Reason::BrowserUnprotected => "may run: browser protection is off".to_owned(),
        Reason::RunEverything => "may run: run-everything mode is on".to_owned(),
        Reason::AutoRunOff => "needs approval: auto-run is off".to_owned(),
        Reason::Allowlisted => format!("may run: allowlisted by {entry}"),
        Reason::NotInAdminAllowlist => {
            "needs approval: it is not in the admin's allowlist".to_owned()
        }
        Reason::NotAllowlisted => {
            "needs approval: it is not in the allowlist (it can be added)".to_owned()
        }
        Reason::CommandAllowed => format!("may run: every command is allowed (first by {entry})"),
        Reason::CommandBlocked if entry.is_empty() => {
            let why = match call {
                Call::Shell(line) => shell::parse_command_line(line).opaque().map(str::to_owned),
                _ => None,
            };
            format!(
                "needs approval: what it runs cannot be read from the line ({}), so it never auto-runs",
                why.as_deref().unwrap_or("an opaque command")
            )
        }
        Reason::CommandBlocked => format!("needs approval: blocked by {entry}"),
        Reason::CommandDenied => format!("is denied: it matches the denied command {entry}"),
        Reason::CommandNotAllowlisted => {
            "needs approval: not every command is allowlisted".to_owned()
        }
        Reason::DeleteProtected => "needs approval: the admin protects file deletion".to_owned(),
        Reason::AutoRunOn => "may run: auto-run is on".to_owned(),
        Reason::NotInFileAllowlist => "is not permitted by the policy file".to_owned(),
        // written when the roles decide (Decision::detail); these stand in without one
        Reason::NoRoleAllowlist => {
            "is denied: no allow-list for the agent in this context".to_owned()
        }
        Reason::NotInRoleAllowlist => "is denied: not in the agent's allow-list".to_owned(),
        Reason::Restricted => "is restricted for the agent in this context".to_owned(),
    };
    format!("{subject} {why}")
}
