//! A decision as a sentence for people, and for every decision that needs approval,
//! what would change the answer under this team's settings: an admin's list where
//! the admin's replaces the user's, the user's own setting where it is theirs.

use crate::policy::{
    Call, Candidate, Decision, ListMode, Outcome, Reason, Scope, Unchecked, qualified_name, shell,
    split_internal_name,
};
use std::fmt::Write as _;

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
    // one string, written in place: this runs for every decision, and the three
    // formatted pieces it was made of cost more than the decision itself
    let mut out = String::with_capacity(128);
    match call {
        Call::Mcp { server, tool } => {
            out.push_str(server);
            out.push(':');
            out.push_str(tool);
        }
        Call::McpAction {
            server,
            tool,
            action,
        } => {
            let _ = write!(out, "{server}:{tool} (action {action})");
        }
        Call::McpInternal { name, .. } => out.push_str(name),
        Call::Shell(line) => {
            let _ = write!(out, "command {line:?}");
        }
        Call::DeleteFile(path) => {
            let _ = write!(out, "deleting {path:?}");
        }
    }
    out.push(' ');
    let entry = d.matched_entry.as_deref().unwrap_or("");
    let (why, entry): (&str, &str) = match d.reason {
        Reason::KillSwitch => ("is denied: the team's kill switch is on", ""),
        Reason::InvalidName => (
            "needs approval: its server, tool or path is not a valid name",
            "",
        ),
        Reason::BlockedByAdmin => ("is denied by the admin blocklist entry ", entry),
        Reason::NotInAccessAllowlist => (
            "is denied: the admin permits only listed tools, and it is not listed",
            "",
        ),
        Reason::AdminDisabled => ("needs approval: the admin has disabled auto-run", ""),
        Reason::ProtectionOn => ("needs approval: tool protection is on", ""),
        Reason::BrowserUnprotected => ("may run: browser protection is off", ""),
        Reason::RunEverything => ("may run: run-everything mode is on", ""),
        Reason::AutoRunOff => ("needs approval: auto-run is off", ""),
        Reason::Allowlisted => ("may run: allowlisted by ", entry),
        Reason::NotInAdminAllowlist => ("needs approval: it is not in the admin's allowlist", ""),
        Reason::NotAllowlisted => (
            "needs approval: it is not in the allowlist (it can be added)",
            "",
        ),
        Reason::CommandAllowed => {
            let _ = write!(out, "may run: every command is allowed (first by {entry})");
            ("", "")
        }
        Reason::CommandBlocked if entry.is_empty() => {
            let why = match call {
                Call::Shell(line) => shell::parse_command_line(line).opaque().map(str::to_owned),
                _ => None,
            };
            let _ = write!(
                out,
                "needs approval: what it runs cannot be read from the line ({}), so it never auto-runs",
                why.as_deref().unwrap_or("an opaque command")
            );
            ("", "")
        }
        Reason::CommandBlocked => ("needs approval: blocked by ", entry),
        Reason::CommandDenied => ("is denied: it matches the denied command ", entry),
        Reason::CommandNotAllowlisted => ("needs approval: not every command is allowlisted", ""),
        Reason::DeleteProtected => ("needs approval: the admin protects file deletion", ""),
        Reason::AutoRunOn => ("may run: auto-run is on", ""),
        Reason::NotInFileAllowlist => ("is not permitted by the policy file", ""),
        // written when the roles decide (Decision::detail); these stand in without one
        Reason::NoRoleAllowlist => ("is denied: no allow-list for the agent in this context", ""),
        Reason::NotInRoleAllowlist => ("is denied: not in the agent's allow-list", ""),
        Reason::Restricted => ("is restricted for the agent in this context", ""),
        // written when the approval is answered (Decision::detail); these stand in without one
        Reason::Approved => ("may run: a person approved it", ""),
        Reason::ApprovalDenied => ("is denied: an approver refused it", ""),
        Reason::ApprovalExpired => (
            "is denied: nobody answered the approval request before its deadline",
            "",
        ),
        // written when the rate is checked (Decision::detail); this stands in without one
        Reason::RateLimited => ("is past one of the team's rates (calls per minute)", ""),
    };
    out.push_str(why);
    out.push_str(entry);
    if let Some(advice) = advice(d, call) {
        out.push_str("; ");
        out.push_str(&advice);
    }
    out
}

/// What would change the answer of a decision that is not ALLOW, in this team's
/// settings, or None where nothing a person can do would (or the sentence says it).
pub(in crate::policy) fn advice(d: &Decision, call: &Call) -> Option<String> {
    if d.outcome == Outcome::Allow {
        return None;
    }
    let Scope {
        admin_controlled,
        list_mode,
        browser,
    } = d.scope;
    let union = list_mode == ListMode::Union;
    let candidate = d.candidates.iter().find_map(|c| match c {
        Candidate::Mcp { server, tool } => Some(format!("{server}:{tool}")),
        Candidate::Command(_) => None,
    });
    // the advice names each command's narrowest prefix, never the whole line with its
    // options and operands (`git push`, not `git push --force origin main`)
    let mut commands: Vec<String> = Vec::new();
    for c in &d.candidates {
        if let Candidate::Command(command) = c
            && let Some(prefix) = shell::narrowest_prefix(command)
            && !commands.contains(&prefix)
        {
            commands.push(prefix);
        }
    }
    let commands = if commands.is_empty() {
        "the commands it runs".to_owned()
    } else {
        commands
            .iter()
            .map(|c| format!("`{c}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let text = match d.reason {
        Reason::KillSwitch => "an admin turns it off with `toolgate kill-switch off`".to_owned(),
        Reason::BlockedByAdmin => {
            "only an admin can lift it, by removing the entry from the team's blocklist".to_owned()
        }
        Reason::NotInAccessAllowlist => {
            "only an admin can permit it, by adding it to the team's access allowlist".to_owned()
        }
        Reason::InvalidName => {
            "such a name cannot be allowlisted, so each call needs an approval".to_owned()
        }
        Reason::AdminDisabled => "ask an admin to add it to the team's allowlist, or to allow run-everything".to_owned(),
        Reason::ProtectionOn => match (admin_controlled, browser) {
            (true, true) => "ask an admin to turn off the team's browser protection".to_owned(),
            (true, false) => {
                "ask an admin to turn off the team's MCP protection (disable_mcp_auto_run)"
                    .to_owned()
            }
            (false, true) => {
                "turn off browser protection in your settings: `toolgate user set --browser-protection off`".to_owned()
            }
            (false, false) => {
                "turn off MCP protection in your settings: `toolgate user set --mcp-protection off`".to_owned()
            }
        },
        Reason::AutoRunOff if admin_controlled && !union => {
            "turn auto-run on in your settings (`toolgate user set --auto-run on`): the team's allowlist then decides".to_owned()
        }
        Reason::AutoRunOff => {
            "turn auto-run on in your settings (`toolgate user set --auto-run on`), then allowlist what may run".to_owned()
        }
        Reason::NotInAdminAllowlist => {
            let entry = match call {
                Call::Mcp { server, tool } | Call::McpAction { server, tool, .. } => {
                    format!("{server}:{tool}")
                }
                _ => "it".to_owned(),
            };
            format!(
                "ask an admin to add {entry} to the team's allowlist (the team's list replaces yours, so adding it to your own changes nothing)"
            )
        }
        Reason::NotAllowlisted => {
            let entry = candidate.unwrap_or_else(|| "it".to_owned());
            let add = format!("add {entry} to your allowlist (`toolgate allowlist add {entry}`)");
            if admin_controlled {
                format!("{add}, or ask an admin to add it to the team's")
            } else {
                format!("{add}, or turn run-everything on")
            }
        }
        Reason::CommandBlocked if d.matched_entry.is_none() => return None,
        Reason::CommandBlocked => {
            "a blocked prefix wins over every allowed one: it is in the team's blocked list (an admin's to change) or your own command denylist".to_owned()
        }
        Reason::CommandNotAllowlisted if admin_controlled => {
            format!("ask an admin to add {commands} to the team's allowed commands")
        }
        Reason::CommandNotAllowlisted => {
            format!("add {commands} to your command allowlist (a longer prefix allows less)")
        }
        Reason::CommandDenied => {
            "a denied command never runs, whatever else allows it: only an admin can take it off the team's denied list".to_owned()
        }
        Reason::DeleteProtected => {
            "ask an admin to turn off the team's delete-file protection".to_owned()
        }
        Reason::NotInFileAllowlist => {
            "the server's policy file decides this: ask its operator".to_owned()
        }
        // the roles' reasons carry their own sentence (Decision::detail), the others
        // allow; a reason added later has no advice until it is given one here
        _ => return None,
    };
    Some(text)
}

/// What an ALLOW rests on that nobody checked, for people: the programs whose effects
/// are unknown and the paths that must stay inside the working directory.
pub(in crate::policy) fn unchecked(u: &Unchecked) -> String {
    let quoted = |items: &[String]| {
        items
            .iter()
            .map(|i| format!("{i:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut parts = Vec::with_capacity(2);
    if !u.effects_unknown.is_empty() {
        parts.push(format!(
            "effects unknown: what {} runs, writes or deletes is not checked (no row of the program table, or code the line does not show)",
            quoted(&u.effects_unknown)
        ));
    }
    if !u.stays_inside.is_empty() {
        parts.push(format!(
            "only if {} stays inside the working directory (no symbolic link out or into a protected place, no repository metadata on the way), which the client checks where the files are",
            quoted(&u.stays_inside)
        ));
    }
    parts.join("; ")
}
