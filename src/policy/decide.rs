//! The decision (DESIGN.md "The decision"; seed 001 `m4c` from step 4 on) for MCP and
//! built-in tool calls, shell command lines and file deletions, and `tools/list`
//! filtering (seed 003).

use super::builtin;
use super::entry::{split_internal_name, validate_call_name, validate_name};
use super::lists::{CompiledAdmin, CompiledUser};
use super::shell::{self, SimpleCommand};
use super::tool_actions::{ToolActionLists, qualified_name};
use super::{AccessMode, Call, Candidate, Check, Decision, Outcome, PolicyError, Reason};
use std::sync::Arc;

/// Records the checks of a decision, or not: the quiet form costs nothing.
trait Explain {
    fn check(&mut self, name: &'static str, result: impl FnOnce() -> String);
    fn take(self) -> Vec<Check>;
}

struct Quiet;

impl Explain for Quiet {
    #[inline]
    fn check(&mut self, _: &'static str, _: impl FnOnce() -> String) {}

    fn take(self) -> Vec<Check> {
        Vec::new()
    }
}

struct Record(Vec<Check>);

impl Explain for Record {
    fn check(&mut self, name: &'static str, result: impl FnOnce() -> String) {
        self.0.push(Check {
            name,
            result: result(),
        });
    }

    fn take(self) -> Vec<Check> {
        self.0
    }
}

fn on_off(b: bool) -> &'static str {
    if b { "on" } else { "off" }
}

/// Decides one call, with no policy-file lists. The explanation is left empty; see
/// [`explain`].
pub fn decide(admin: &CompiledAdmin, user: &CompiledUser, call: &Call) -> Decision {
    decide_with(&ToolActionLists::default(), admin, user, call, Quiet)
}

/// Decides one call and lists every check made, in order.
pub fn explain(admin: &CompiledAdmin, user: &CompiledUser, call: &Call) -> Decision {
    decide_with(
        &ToolActionLists::default(),
        admin,
        user,
        call,
        Record(Vec::new()),
    )
}

/// [`decide`] under the policy file's `tool.action` lists.
pub fn decide_in(
    files: &ToolActionLists,
    admin: &CompiledAdmin,
    user: &CompiledUser,
    call: &Call,
) -> Decision {
    decide_with(files, admin, user, call, Quiet)
}

/// [`explain`] under the policy file's `tool.action` lists.
pub fn explain_in(
    files: &ToolActionLists,
    admin: &CompiledAdmin,
    user: &CompiledUser,
    call: &Call,
) -> Decision {
    decide_with(files, admin, user, call, Record(Vec::new()))
}

/// The action a `tool.action` list is asked about.
#[derive(Clone, Copy)]
enum Action<'a> {
    /// The call names this action, or none.
    Given(Option<&'a str>),
    /// A `tools/list` entry: the tool stays if some action of it may run.
    Listing,
}

fn decide_with<E: Explain>(
    files: &ToolActionLists,
    admin: &CompiledAdmin,
    user: &CompiledUser,
    call: &Call,
    mut ex: E,
) -> Decision {
    let mut allowed_tools = None;
    let (outcome, reason, matched_entry, candidates) = match call {
        Call::Mcp { server, tool } => mcp(
            files,
            admin,
            user,
            (server, tool, Action::Given(None)),
            &mut allowed_tools,
            &mut ex,
        ),
        Call::McpAction {
            server,
            tool,
            action,
        } => mcp(
            files,
            admin,
            user,
            (server, tool, Action::Given(Some(action))),
            &mut allowed_tools,
            &mut ex,
        ),
        Call::McpInternal {
            name,
            fallback_server,
        } => {
            let (server, tool) = split_internal_name(name, fallback_server);
            ex.check("internal_name", || {
                format!("{name:?} is server {server:?}, tool {tool:?}")
            });
            mcp(
                files,
                admin,
                user,
                (server, tool, Action::Given(None)),
                &mut allowed_tools,
                &mut ex,
            )
        }
        Call::Shell(line) => command_line(admin, user, line, &mut ex),
        Call::DeleteFile(path) => delete(admin, user, path, &mut ex),
    };
    Decision {
        outcome,
        reason,
        matched_entry,
        candidates,
        explanation: ex.take(),
        allowed_tools,
        detail: None,
        obligations: None,
    }
}

type Parts = (Outcome, Reason, Option<Arc<str>>, Vec<Candidate>);

fn kill_switch<E: Explain>(admin: &CompiledAdmin, ex: &mut E) -> Option<Parts> {
    let on = admin.controls.kill_switch;
    ex.check("kill_switch", || on_off(on).to_owned());
    on.then(|| (Outcome::Deny, Reason::KillSwitch, None, Vec::new()))
}

/// The user's modes; both off when the admin disabled auto-run (seed 001 `shouldAutoRun_*`).
fn modes<E: Explain>(admin: &CompiledAdmin, user: &CompiledUser, ex: &mut E) -> (bool, bool) {
    let auto_run = user.settings.use_yolo_mode && !admin.disabled;
    let run_everything = auto_run && user.settings.yolo_enable_run_everything;
    ex.check("modes", || {
        format!(
            "auto-run {}, run-everything {}",
            on_off(auto_run),
            on_off(run_everything)
        )
    });
    (auto_run, run_everything)
}

fn mcp<E: Explain>(
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
        return (
            Outcome::Allow,
            Reason::Allowlisted,
            Some(entry.clone()),
            Vec::new(),
        );
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
            Some(entry.clone()),
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
        match admin.access.matched(server, tool) {
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

/// The first blocked prefix a command matches: the admin's `blocked` (when
/// admin-controlled) and the user's own `command_denylist` both count, a user may
/// always be stricter than the admin.
fn blocking(
    admin: &CompiledAdmin,
    user: &CompiledUser,
    command: &SimpleCommand,
) -> Option<Arc<str>> {
    let from_admin = admin
        .controlled()
        .then(|| {
            admin
                .blocked
                .first_blocking(command)
                .map(|i| admin.blocked.raw(i))
        })
        .flatten();
    from_admin
        .or_else(|| {
            user.denied
                .first_blocking(command)
                .map(|i| user.denied.raw(i))
        })
        .cloned()
}

/// The first allowed prefix a command starts with: the admin's `allowed` when
/// admin-controlled (then the user's too in union mode), else the user's own.
fn allowing<'a>(
    admin: &'a CompiledAdmin,
    user: &'a CompiledUser,
    command: &SimpleCommand,
) -> Option<&'a Arc<str>> {
    let from_user = || {
        user.allowed
            .first_allowing(command)
            .map(|i| user.allowed.raw(i))
    };
    if !admin.controlled() {
        return from_user();
    }
    let from_admin = admin
        .allowed
        .first_allowing(command)
        .map(|i| admin.allowed.raw(i));
    if from_admin.is_none() && admin.union() {
        from_user()
    } else {
        from_admin
    }
}

fn command_line<E: Explain>(
    admin: &CompiledAdmin,
    user: &CompiledUser,
    line: &str,
    ex: &mut E,
) -> Parts {
    if let Some(parts) = kill_switch(admin, ex) {
        return parts;
    }
    if admin.disabled {
        ex.check("admin_disabled", || {
            "the admin allows nothing to auto-run".to_owned()
        });
        return (Outcome::Ask, Reason::AdminDisabled, None, Vec::new());
    }
    let commands = shell::parse_command_line(line).commands;
    ex.check("read", || {
        format!(
            "{} simple command(s): {}",
            commands.len(),
            commands
                .iter()
                .map(|c| c.text.as_str())
                .collect::<Vec<_>>()
                .join(" | ")
        )
    });
    if commands.is_empty() {
        return (
            Outcome::Ask,
            Reason::CommandNotAllowlisted,
            None,
            Vec::new(),
        );
    }
    // blocked prefixes first, so the answer names the prefix when one matches
    for command in &commands {
        if let Some(prefix) = blocking(admin, user, command) {
            ex.check("blocked", || {
                format!("{:?} matches blocked prefix {prefix:?}", command.text)
            });
            return (
                Outcome::Ask,
                Reason::CommandBlocked,
                Some(prefix),
                Vec::new(),
            );
        }
    }
    if let Some(command) = commands.iter().find(|c| c.opaque.is_some()) {
        ex.check("blocked", || {
            format!(
                "{:?} is opaque: {}",
                command.text,
                command.opaque.as_deref().unwrap_or_default()
            )
        });
        return (Outcome::Ask, Reason::CommandBlocked, None, Vec::new());
    }
    ex.check("blocked", || {
        "no command matches a blocked prefix, none is opaque".to_owned()
    });
    let (auto_run, run_everything) = modes(admin, user, ex);
    if run_everything && (!admin.controlled() || admin.controls.enable_run_everything) {
        return (Outcome::Allow, Reason::RunEverything, None, Vec::new());
    }
    if !auto_run {
        return (Outcome::Ask, Reason::AutoRunOff, None, Vec::new());
    }
    let mut first_prefix = None;
    let mut unlisted = Vec::new();
    for command in &commands {
        match allowing(admin, user, command) {
            Some(p) => {
                first_prefix.get_or_insert_with(|| p.clone());
            }
            None => unlisted.push(Candidate::Command(command.text.clone())),
        }
    }
    if unlisted.is_empty() {
        ex.check("allowed", || {
            "every command matches an allowed prefix".to_owned()
        });
        return (
            Outcome::Allow,
            Reason::CommandAllowed,
            first_prefix,
            Vec::new(),
        );
    }
    ex.check("allowed", || {
        format!("{} command(s) match no allowed prefix", unlisted.len())
    });
    (Outcome::Ask, Reason::CommandNotAllowlisted, None, unlisted)
}

fn delete<E: Explain>(admin: &CompiledAdmin, user: &CompiledUser, path: &str, ex: &mut E) -> Parts {
    if let Some(parts) = kill_switch(admin, ex) {
        return parts;
    }
    if admin.disabled {
        ex.check("admin_disabled", || {
            "the admin allows nothing to auto-run".to_owned()
        });
        return (Outcome::Ask, Reason::AdminDisabled, None, Vec::new());
    }
    if path.trim().is_empty() {
        ex.check("path", || "empty".to_owned());
        return (Outcome::Ask, Reason::InvalidName, None, Vec::new());
    }
    let protected = admin.controlled() && admin.controls.delete_file_protection;
    ex.check("delete_file_protection", || on_off(protected).to_owned());
    if protected {
        return (Outcome::Ask, Reason::DeleteProtected, None, Vec::new());
    }
    let (auto_run, run_everything) = modes(admin, user, ex);
    if run_everything && (!admin.controlled() || admin.controls.enable_run_everything) {
        (Outcome::Allow, Reason::RunEverything, None, Vec::new())
    } else if auto_run {
        (Outcome::Allow, Reason::AutoRunOn, None, Vec::new())
    } else {
        (Outcome::Ask, Reason::AutoRunOff, None, Vec::new())
    }
}

/// A sentence for people about `d`, a decision on `call`.
pub(super) fn message(d: &Decision, call: &Call) -> String {
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

/// A `tools/list` result with the denied tools removed.
#[derive(Debug, Clone, PartialEq)]
pub struct FilteredTools {
    /// Same shape as given (`{"tools": [...]}` or the bare array).
    pub tools: serde_json::Value,
    /// Names of the tools removed because they are denied.
    pub removed: Vec<String>,
    /// Entries skipped because they are not an object with a string `name`.
    pub malformed_skipped: usize,
}

/// Keeps only the tools of `server` that are not DENIED (seed 003), skipping malformed
/// entries. Anything but `{"tools": [...]}` or an array is an error: the caller fails
/// closed on it.
pub fn filter_tools(
    admin: &CompiledAdmin,
    user: &CompiledUser,
    server: &str,
    tools: &serde_json::Value,
) -> Result<FilteredTools, PolicyError> {
    filter_tools_in(&ToolActionLists::default(), admin, user, server, tools)
}

/// [`filter_tools`] under the policy file's `tool.action` lists: a tool none of
/// whose actions the list allows is removed.
pub fn filter_tools_in(
    files: &ToolActionLists,
    admin: &CompiledAdmin,
    user: &CompiledUser,
    server: &str,
    tools: &serde_json::Value,
) -> Result<FilteredTools, PolicyError> {
    use serde_json::Value;
    // seed 003 fails closed: with no valid server there is nothing to filter by
    if let Err(rule) = validate_call_name(server) {
        return Err(PolicyError::InvalidEntries(vec![super::EntryProblem {
            field: "server".to_owned(),
            entry: server.to_owned(),
            rule,
            hint: "name the MCP server whose tools/list this is, as its calls name it".to_owned(),
        }]));
    }
    let list = match tools {
        Value::Array(list) => list,
        Value::Object(obj) => match obj.get("tools") {
            Some(Value::Array(list)) => list,
            _ => {
                return Err(PolicyError::InvalidToolsList(
                    "expected a \"tools\" array".into(),
                ));
            }
        },
        _ => {
            return Err(PolicyError::InvalidToolsList(
                "expected {\"tools\": [...]} or an array".into(),
            ));
        }
    };
    let mut kept = Vec::with_capacity(list.len());
    let mut removed = Vec::new();
    let mut malformed_skipped = 0;
    for tool in list {
        let Some(name) = tool
            .as_object()
            .and_then(|o| o.get("name"))
            .and_then(Value::as_str)
        else {
            malformed_skipped += 1;
            continue;
        };
        let mut unused = None;
        let (outcome, ..) = mcp(
            files,
            admin,
            user,
            (server, name, Action::Listing),
            &mut unused,
            &mut Quiet,
        );
        if outcome == Outcome::Deny {
            removed.push(name.to_owned());
        } else {
            kept.push(tool.clone());
        }
    }
    let tools = match tools {
        Value::Object(obj) => {
            let mut obj = obj.clone();
            obj.insert("tools".into(), Value::Array(kept));
            Value::Object(obj)
        }
        _ => Value::Array(kept),
    };
    Ok(FilteredTools {
        tools,
        removed,
        malformed_skipped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{AdminControls, ToolActionList, UserSettings};

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    fn files(patterns: &[&str]) -> ToolActionLists {
        let list =
            ToolActionList::compile("allowed_tools", "gasoline", &strings(patterns)).unwrap();
        ToolActionLists::new(vec![list]).unwrap()
    }

    fn action(tool: &str, action: &str) -> Call {
        Call::McpAction {
            server: "gasoline".into(),
            tool: tool.into(),
            action: action.into(),
        }
    }

    /// A user for whom everything else would ALLOW: only the file list can deny.
    fn setup(controls: AdminControls) -> (CompiledAdmin, CompiledUser) {
        let user = UserSettings {
            use_yolo_mode: true,
            yolo_enable_run_everything: true,
            ..UserSettings::default()
        };
        (
            CompiledAdmin::compile(&controls).unwrap(),
            CompiledUser::compile(&user).unwrap(),
        )
    }

    #[test]
    fn file_allowlist_denies_with_seed_000_message() {
        let (admin, user) = setup(AdminControls::default());
        let files = files(&["observe.*", "generate.*", "interact.navigate"]);
        let call = action("interact", "execute_js");
        let d = decide_in(&files, &admin, &user, &call);
        assert_eq!(
            (d.outcome, d.reason),
            (Outcome::Deny, Reason::NotInFileAllowlist)
        );
        assert_eq!(
            d.message(&call),
            "interact.execute_js is not permitted. Allowed: observe.*, generate.*, interact.navigate"
        );
        assert_eq!(
            d.allowed_tools.as_deref(),
            Some(&strings(&["observe.*", "generate.*", "interact.navigate"])[..])
        );
        // the same error every time (seed 000 edge case 4)
        assert_eq!(decide_in(&files, &admin, &user, &call), d);
        // a call without an action is named by its tool alone
        let bare = Call::Mcp {
            server: "gasoline".into(),
            tool: "interact".into(),
        };
        let d = decide_in(&files, &admin, &user, &bare);
        assert_eq!(d.reason, Reason::NotInFileAllowlist);
        assert!(
            d.message(&bare)
                .starts_with("interact is not permitted. Allowed: ")
        );
    }

    #[test]
    fn file_allowlist_table() {
        let (admin, user) = setup(AdminControls::default());
        type Case<'a> = (&'a [&'a str], &'a str, &'a str, bool);
        let table: &[Case<'_>] = &[
            (&["*"], "interact", "execute_js", true),
            (&[], "interact", "execute_js", true),
            (&["interact.*"], "interact", "execute_js", true),
            (&["interact.*"], "INTERACT", "Execute_JS", true),
            (&["Interact.Navigate"], "interact", "navigate", true),
            (&["interact.navigate"], "interact", "refresh", false),
            (&["interact.navigate"], "observe", "navigate", false),
            (&["observe.*"], "observer", "logs", false),
        ];
        for (patterns, tool, act, allowed) in table {
            let d = decide_in(&files(patterns), &admin, &user, &action(tool, act));
            let want = if *allowed {
                (Outcome::Allow, Reason::RunEverything)
            } else {
                (Outcome::Deny, Reason::NotInFileAllowlist)
            };
            assert_eq!((d.outcome, d.reason), want, "{patterns:?} {tool}.{act}");
        }
        // other servers are not restricted by gasoline's list
        let other = Call::McpAction {
            server: "other".into(),
            tool: "interact".into(),
            action: "execute_js".into(),
        };
        assert_eq!(
            decide_in(&files(&["observe.*"]), &admin, &user, &other).outcome,
            Outcome::Allow
        );
    }

    #[test]
    fn file_allowlist_comes_after_kill_switch_and_blocklist_before_names() {
        let files = files(&["observe.*"]);
        let call = action("interact", "execute_js");
        let (admin, user) = setup(AdminControls {
            kill_switch: true,
            ..AdminControls::default()
        });
        assert_eq!(
            decide_in(&files, &admin, &user, &call).reason,
            Reason::KillSwitch
        );
        let (admin, user) = setup(AdminControls {
            mcp_tool_blocklist: strings(&["gasoline:interact"]),
            ..AdminControls::default()
        });
        assert_eq!(
            decide_in(&files, &admin, &user, &call).reason,
            Reason::BlockedByAdmin
        );
        let (admin, user) = setup(AdminControls::default());
        // a malformed action of a denied tool stays DENIED; of an allowed one it asks
        assert_eq!(
            decide_in(&files, &admin, &user, &action("interact", "a:b")).reason,
            Reason::NotInFileAllowlist
        );
        assert_eq!(
            decide_in(&files, &admin, &user, &action("observe", "a:b")).reason,
            Reason::InvalidName
        );
        // `*` is a literal action name, allowed by `observe.*` like any other
        assert_eq!(
            decide_in(&files, &admin, &user, &action("observe", "*")).outcome,
            Outcome::Allow
        );
        let explained = explain_in(&files, &admin, &user, &call);
        let names: Vec<&str> = explained.explanation.iter().map(|c| c.name).collect();
        assert_eq!(names, ["kill_switch", "admin_blocklist", "file_allowlist"]);
        // without the file's lists nothing is denied
        assert_eq!(decide(&admin, &user, &call).outcome, Outcome::Allow);
    }

    #[test]
    fn filter_tools_hides_tools_with_no_allowed_action() {
        let (admin, user) = setup(AdminControls::default());
        let files = files(&["observe.*", "interact.navigate"]);
        let tools = serde_json::json!({"tools": [
            {"name": "observe"}, {"name": "interact"}, {"name": "generate"}
        ]});
        let out = filter_tools_in(&files, &admin, &user, "gasoline", &tools).unwrap();
        assert_eq!(out.removed, ["generate"]);
        let kept = filter_tools_in(&files, &admin, &user, "other", &tools).unwrap();
        assert!(kept.removed.is_empty());
    }
}
