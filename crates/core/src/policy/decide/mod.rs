//! The decision (seed 001 `m4c` from step 4 on) for MCP and
//! built-in tool calls, shell command lines and file deletions, and `tools/list`
//! filtering (seed 003). `mcp.rs` MCP and built-in tool calls and the DENY rules,
//! `command_line.rs` command lines, `deletion.rs` file deletions, `message.rs` the sentence
//! for people, `tools_list.rs` `tools/list` filtering.

use super::entry::split_internal_name;
use super::lists::{CompiledAdmin, CompiledUser};
use super::tool_actions::ToolActionLists;
use super::{Call, Candidate, Check, Decision, EntryText, Outcome, Reason, Scope, Unchecked};
use serde_json::Value;
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
    decide_with(
        &ToolActionLists::default(),
        admin,
        user,
        (call, Site::default()),
        Quiet,
    )
}

/// Decides one call and lists every check made, in order.
pub fn explain(admin: &CompiledAdmin, user: &CompiledUser, call: &Call) -> Decision {
    decide_with(
        &ToolActionLists::default(),
        admin,
        user,
        (call, Site::default()),
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
    decide_with(files, admin, user, (call, Site::default()), Quiet)
}

/// [`explain`] under the policy file's `tool.action` lists.
pub fn explain_in(
    files: &ToolActionLists,
    admin: &CompiledAdmin,
    user: &CompiledUser,
    call: &Call,
) -> Decision {
    decide_with(
        files,
        admin,
        user,
        (call, Site::default()),
        Record(Vec::new()),
    )
}

/// Where a call is made and what it was given, beyond the call itself: the working
/// directory (absolute) a command line's writes are placed against, and a tool's
/// input, from which a write tool's files are read.
#[derive(Debug, Clone, Copy, Default)]
pub struct Site<'a> {
    pub cwd: Option<&'a str>,
    pub tool_input: Option<&'a Value>,
}

impl<'a> Site<'a> {
    /// A call made in `cwd`, with no tool input.
    pub fn at(cwd: Option<&'a str>) -> Self {
        Self {
            cwd,
            tool_input: None,
        }
    }
}

impl<'a> From<Option<&'a str>> for Site<'a> {
    fn from(cwd: Option<&'a str>) -> Self {
        Self::at(cwd)
    }
}

/// [`decide_in`] for a call made at `site`: a command line's writes under its
/// working directory are inside, and a write tool's files are held to the same
/// places.
pub fn decide_at<'a>(
    files: &ToolActionLists,
    admin: &CompiledAdmin,
    user: &CompiledUser,
    call: &Call,
    site: impl Into<Site<'a>>,
) -> Decision {
    decide_with(files, admin, user, (call, site.into()), Quiet)
}

/// [`explain_in`] for a call made at `site`.
pub fn explain_at<'a>(
    files: &ToolActionLists,
    admin: &CompiledAdmin,
    user: &CompiledUser,
    call: &Call,
    site: impl Into<Site<'a>>,
) -> Decision {
    decide_with(files, admin, user, (call, site.into()), Record(Vec::new()))
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
    (call, site): (&Call, Site<'_>),
    mut ex: E,
) -> Decision {
    let mut allowed_tools = None;
    let mut detail = None;
    let mut unchecked = Unchecked::default();
    let (outcome, reason, matched_entry, candidates) = match call {
        Call::Mcp { server, tool } => {
            let parts = mcp(
                files,
                admin,
                user,
                (server, tool, Action::Given(None)),
                &mut allowed_tools,
                &mut ex,
            );
            if parts.0 == Outcome::Allow && server == super::builtin::SERVER {
                match write_tools::hold(tool, &site) {
                    Ok(inside) => unchecked.stays_inside = inside,
                    Err((held, why)) => {
                        ex.check("places", || why.clone());
                        detail = Some(Arc::from(why));
                        return finish(call, held, (allowed_tools, detail, unchecked), admin, ex);
                    }
                }
            }
            parts
        }
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
        Call::Shell(line) => {
            let (parts, why) = command_line(
                files,
                admin,
                user,
                (line, site.cwd),
                (&mut unchecked, &mut ex),
            );
            detail = why.map(|why| {
                let verdict = match parts.0 {
                    Outcome::Deny => "is denied",
                    Outcome::Ask => "needs approval",
                    Outcome::Allow => "may run",
                };
                Arc::from(format!("command {line:?} {verdict}: {why}"))
            });
            parts
        }
        Call::DeleteFile(path) => delete(admin, user, path, &mut ex),
    };
    if !unchecked.is_empty() {
        ex.check("unchecked", || message::unchecked(&unchecked));
    }
    finish(
        call,
        (outcome, reason, matched_entry, candidates),
        (allowed_tools, detail, unchecked),
        admin,
        ex,
    )
}

/// What a decision says beside its parts: the policy file's patterns, the sentence
/// written when it was made, what an ALLOW rests on.
type Beyond = (Option<Arc<[String]>>, Option<Arc<str>>, Unchecked);

/// The decision from its parts.
fn finish<E: Explain>(
    call: &Call,
    (outcome, reason, matched_entry, candidates): Parts,
    (allowed_tools, detail, unchecked): Beyond,
    admin: &CompiledAdmin,
    ex: E,
) -> Decision {
    // only what the advice of a decision that is not ALLOW reads: an allowed call
    // pays for none of it
    let scope = if outcome == Outcome::Allow {
        Scope::default()
    } else {
        Scope {
            admin_controlled: admin.controlled(),
            list_mode: admin.controls.list_mode,
            browser: match call {
                Call::Mcp { server, .. } | Call::McpAction { server, .. } => {
                    admin.is_browser(server)
                }
                Call::McpInternal {
                    name,
                    fallback_server,
                } => admin.is_browser(split_internal_name(name, fallback_server).0),
                Call::Shell(_) | Call::DeleteFile(_) => false,
            },
        }
    };
    Decision {
        outcome,
        reason,
        matched_entry,
        candidates,
        explanation: ex.take(),
        allowed_tools,
        detail,
        obligations: None,
        scope,
        // only an ALLOW rests on what it could not check
        unchecked: if outcome == Outcome::Allow {
            unchecked
        } else {
            Unchecked::default()
        },
        origin: None,
    }
}

type Parts = (Outcome, Reason, Option<EntryText>, Vec<Candidate>);

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

mod command_line;
mod deletion;
mod mcp;
mod message;
#[cfg(test)]
mod tests;
mod tools_list;
mod write_tools;

use command_line::command_line;
use deletion::delete;
use mcp::mcp;
pub(super) use message::{advice, message, unchecked};
pub use tools_list::{FilteredTools, ListedTool, decide_listing, filter_tools, filter_tools_in};
pub use write_tools::{is_write_tool, tool_written_files};
