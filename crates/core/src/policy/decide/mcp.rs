//! MCP and built-in tool calls: the kill switch, the DENY rules, name validation,
//! protection, modes and the allowlists.

use super::super::entry::{validate_call_name, validate_name};
use super::super::tool_actions::qualified_name;
use super::{Action, Explain, Parts, kill_switch, modes, on_off};
use crate::policy::builtin;
use crate::policy::lists::{CompiledAdmin, CompiledUser};
use crate::policy::tool_actions::ToolActionLists;
use crate::policy::{AccessMode, Candidate, Outcome, Reason};
use std::sync::Arc;

pub(super) fn mcp<E: Explain>(
    files: &ToolActionLists,
    admin: &CompiledAdmin,
    user: &CompiledUser,
    (server, tool, action): (&str, &str, Action<'_>),
    allowed_tools: &mut Option<std::sync::Arc<[String]>>,
    ex: &mut E,
) -> Parts {
    if let Some(parts) = kill_switch(admin, ex) {
        return parts;
    }
    // the DENY rules come before name validation: they match names literally, so a
    // malformed name cannot turn a DENY into an approvable ASK
    if let Some(parts) = deny_rules(files, admin, (server, tool, action), allowed_tools, ex) {
        return parts;
    }
    // an action is a name too, but `*` is a literal action name there (seed 000)
    let action_valid = match action {
        Action::Given(Some(a)) => validate_name(a),
        _ => Ok(()),
    };
    if let Err(rule) = validate_call_name(server)
        .and_then(|()| validate_call_name(tool))
        .and(action_valid)
    {
        ex.check("names", || {
            format!("server {server:?}, tool {tool:?} or its action breaks rule {rule:?}")
        });
        return (Outcome::Ask, Reason::InvalidName, None, Vec::new());
    }
    // one spelling per built-in tool in candidates; the lists match every spelling
    let tool = if server == builtin::SERVER {
        builtin::canonical(tool)
    } else {
        tool
    };
    ex.check("names", || format!("valid: {server}:{tool}"));

    let controlled = admin.controlled();
    let browser = admin.is_browser(server);
    let protection = match (controlled, browser) {
        (true, true) => admin.controls.browser_protection,
        (true, false) => admin.controls.disable_mcp_auto_run,
        (false, true) => user.settings.playwright_protection,
        (false, false) => user.settings.yolo_mcp_tools_disabled,
    };
    ex.check("admin_controls", || {
        if controlled {
            "enabled: the admin's values stand in for the user's"
        } else {
            "not enabled"
        }
        .to_owned()
    });
    if admin.disabled {
        ex.check("admin_disabled", || {
            "the admin allows nothing to auto-run".to_owned()
        });
        return (Outcome::Ask, Reason::AdminDisabled, None, Vec::new());
    }
    ex.check("protection", || {
        let kind = if browser {
            "browser protection"
        } else {
            "mcp tool protection"
        };
        format!("{kind} {}", on_off(protection))
    });
    if protection {
        return (Outcome::Ask, Reason::ProtectionOn, None, Vec::new());
    }
    if browser {
        ex.check("browser", || {
            format!("{server} is a browser server and its protection is off")
        });
        return (Outcome::Allow, Reason::BrowserUnprotected, None, Vec::new());
    }

    let (auto_run, run_everything) = modes(admin, user, ex);
    if run_everything && !controlled {
        return (Outcome::Allow, Reason::RunEverything, None, Vec::new());
    }
    if !auto_run {
        return (Outcome::Ask, Reason::AutoRunOff, None, Vec::new());
    }
    let matched = if controlled {
        let from_admin = admin.allowlist.matched(server, tool);
        if from_admin.is_none() && admin.union() {
            user.allowlist.matched(server, tool)
        } else {
            from_admin
        }
    } else {
        user.allowlist.matched(server, tool)
    };
    if let Some(entry) = matched {
        ex.check("allowlist", || format!("{entry} matches"));
        return (Outcome::Allow, Reason::Allowlisted, Some(entry), Vec::new());
    }
    ex.check("allowlist", || {
        let which = match (controlled, admin.union()) {
            (true, false) => "the admin's list",
            (true, true) => "the admin's list or the user's",
            (false, _) => "the user's list",
        };
        format!("no entry of {which} matches")
    });
    if controlled && run_everything && admin.controls.enable_run_everything {
        ex.check("admin_run_everything", || {
            "the admin permits run-everything".to_owned()
        });
        return (Outcome::Allow, Reason::RunEverything, None, Vec::new());
    }
    if controlled && !admin.union() {
        return (Outcome::Ask, Reason::NotInAdminAllowlist, None, Vec::new());
    }
    let candidate = Candidate::Mcp {
        server: server.to_owned(),
        tool: tool.to_owned(),
    };
    (Outcome::Ask, Reason::NotAllowlisted, None, vec![candidate])
}

/// Every DENY rule, in order: the admin blocklist, the policy file's `tool.action`
/// lists, the admin's access allowlist. Names are matched as given, valid or not.
fn deny_rules<E: Explain>(
    files: &ToolActionLists,
    admin: &CompiledAdmin,
    (server, tool, action): (&str, &str, Action<'_>),
    allowed_tools: &mut Option<Arc<[String]>>,
    ex: &mut E,
) -> Option<Parts> {
    if let Some(entry) = admin.blocklist.matched(server, tool) {
        ex.check("admin_blocklist", || format!("{entry} matches"));
        return Some((
            Outcome::Deny,
            Reason::BlockedByAdmin,
            Some(entry),
            Vec::new(),
        ));
    }
    ex.check("admin_blocklist", || "no entry matches".to_owned());
    if let Some(list) = files.get(server) {
        let (allowed, name) = match action {
            Action::Given(action) => (list.allows(tool, action), qualified_name(tool, action)),
            Action::Listing => (list.allows_some_action(tool), format!("{tool}.*")),
        };
        if !allowed {
            ex.check("file_allowlist", || {
                format!("{name} matches no pattern of the policy file's list for {server}")
            });
            *allowed_tools = Some(list.allowed_tools().clone());
            return Some((Outcome::Deny, Reason::NotInFileAllowlist, None, Vec::new()));
        }
        ex.check("file_allowlist", || {
            format!("{name} is allowed by the policy file's list for {server}")
        });
    }
    if admin.controls.mcp_access_mode == AccessMode::Allowlist {
        // only named in the explanation: no reference to the list is taken
        let access = &admin.access;
        match access.first_match(server, tool).map(|i| access.raw(i)) {
            Some(entry) => ex.check("admin_access_allowlist", || format!("{entry} matches")),
            None => {
                ex.check("admin_access_allowlist", || {
                    "no entry matches: the tool is not permitted".to_owned()
                });
                return Some((
                    Outcome::Deny,
                    Reason::NotInAccessAllowlist,
                    None,
                    Vec::new(),
                ));
            }
        }
    }
    None
}
