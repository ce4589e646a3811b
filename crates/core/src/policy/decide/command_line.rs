//! Shell command lines (ARCHITECTURE.md, the shell reader): denied prefixes,
//! then blocked ones and opaque parts, then the effects (writes and deletions
//! placed and decided as the file calls they are), then allowed prefixes, every
//! command of the line, those it runs included. Every answer names the part and the
//! effect that decided it.

use super::deletion::delete;
use super::mcp::mcp;
use super::{Action, Explain, Parts, Quiet, kill_switch, modes};
use crate::policy::lists::{CompiledAdmin, CompiledUser};
use crate::policy::shell::{self, CommandOrigin, Place, READONLY, SimpleCommand};
use crate::policy::tool_actions::ToolActionLists;
use crate::policy::{Candidate, EntryText, Outcome, Reason, Unchecked, builtin};
use std::sync::Arc;

/// A decision on a line, and the sentence that names the part and effect behind it.
pub(super) type Decided = (Parts, Option<Arc<str>>);

fn with(parts: Parts, detail: String) -> Decided {
    (parts, Some(Arc::from(detail)))
}

/// The first denied prefix a command matches (the admin's, whether or not admin
/// controls are on: a hard deny is never softened).
fn denying(admin: &CompiledAdmin, command: &SimpleCommand) -> Option<Arc<str>> {
    admin
        .denied
        .first_blocking(command)
        .map(|i| admin.denied.raw(i).clone())
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

/// The first allowed prefix a command starts with, and its length in words: the
/// admin's `allowed` when admin-controlled (then the user's too in union mode), else
/// the user's own.
fn allowing_words<'a>(
    admin: &'a CompiledAdmin,
    user: &'a CompiledUser,
    command: &SimpleCommand,
) -> Option<(&'a Arc<str>, usize)> {
    let from_user = || {
        user.allowed
            .first_allowing(command)
            .map(|i| (user.allowed.raw(i), user.allowed.words(i).len()))
    };
    if !admin.controlled() {
        return from_user();
    }
    let from_admin = admin
        .allowed
        .first_allowing(command)
        .map(|i| (admin.allowed.raw(i), admin.allowed.words(i).len()));
    if from_admin.is_none() && admin.union() {
        from_user()
    } else {
        from_admin
    }
}

/// The allowed prefix that covers a command of the line: its own, or for a command
/// another runs, the runner's when that prefix reaches into its words (`sudo apt`
/// covers `sudo apt install x`'s `apt install x`).
fn allowing<'a>(
    admin: &'a CompiledAdmin,
    user: &'a CompiledUser,
    commands: &[SimpleCommand],
    command: &SimpleCommand,
) -> Option<&'a Arc<str>> {
    if let Some((prefix, _)) = allowing_words(admin, user, command) {
        return Some(prefix);
    }
    let (parent, offset) = command.run_by?;
    let runner = commands.get(parent)?;
    match allowing_words(admin, user, runner) {
        // a prefix that does not spell the runner's (harmless) assignments starts at
        // its command word
        Some((prefix, len)) if len + skipped(runner, prefix) > offset => Some(prefix),
        _ => None,
    }
}

/// How many of a command's words before `prefix`'s first: its assignments, when the
/// prefix does not spell them.
fn skipped(command: &SimpleCommand, prefix: &str) -> usize {
    let spells_assignment = prefix
        .split_whitespace()
        .next()
        .is_some_and(|first| first.contains('='));
    if spells_assignment {
        0
    } else {
        command.command_at
    }
}

/// The part of the line a command is, for people.
fn part(command: &SimpleCommand) -> String {
    let what = match command.origin {
        CommandOrigin::Line => "",
        CommandOrigin::Run => " (run by another command of the line)",
        CommandOrigin::Substitution => " (inside a substitution)",
        CommandOrigin::Equivalent => " (an equivalent spelling)",
        CommandOrigin::Argument => " (words in the arguments of a program that may run them)",
    };
    format!("{:?}{what}", command.text)
}

/// The file call a write or deletion is, decided in the same context.
fn file_call(
    files: &ToolActionLists,
    admin: &CompiledAdmin,
    user: &CompiledUser,
    path: &str,
    deletes: bool,
) -> Parts {
    if deletes {
        delete(admin, user, path, &mut Quiet)
    } else {
        mcp(
            files,
            admin,
            user,
            (builtin::SERVER, "write_file", Action::Given(None)),
            &mut None,
            &mut Quiet,
        )
    }
}

pub(super) fn command_line<E: Explain>(
    files: &ToolActionLists,
    admin: &CompiledAdmin,
    user: &CompiledUser,
    (line, cwd): (&str, Option<&str>),
    (unchecked, ex): (&mut Unchecked, &mut E),
) -> Decided {
    if let Some(parts) = kill_switch(admin, ex) {
        return (parts, None);
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
    // a hard deny comes before everything that could soften it
    for command in &commands {
        if let Some(prefix) = denying(admin, command) {
            let detail = format!("{} matches denied prefix {prefix:?}", part(command));
            ex.check("denied", || detail.clone());
            return with(
                (
                    Outcome::Deny,
                    Reason::CommandDenied,
                    Some(prefix.into()),
                    Vec::new(),
                ),
                detail,
            );
        }
    }
    if admin.disabled {
        ex.check("admin_disabled", || {
            "the admin allows nothing to auto-run".to_owned()
        });
        return (
            (Outcome::Ask, Reason::AdminDisabled, None, Vec::new()),
            None,
        );
    }
    let blocked = || {
        (
            Outcome::Ask,
            Reason::CommandBlocked,
            None::<EntryText>,
            Vec::new(),
        )
    };
    if commands.is_empty() {
        return (
            (
                Outcome::Ask,
                Reason::CommandNotAllowlisted,
                None,
                Vec::new(),
            ),
            None,
        );
    }
    // blocked prefixes first, so the answer names the prefix when one matches
    for command in &commands {
        if let Some(prefix) = blocking(admin, user, command) {
            // the sentence names the prefix, and the advice says whose list holds it
            ex.check("blocked", || {
                format!("{} matches blocked prefix {prefix:?}", part(command))
            });
            return (
                (
                    Outcome::Ask,
                    Reason::CommandBlocked,
                    Some(prefix.into()),
                    Vec::new(),
                ),
                None,
            );
        }
    }
    if let Some(command) = commands.iter().find(|c| c.opaque.is_some()) {
        let detail = format!(
            "{} is opaque: {}",
            part(command),
            command.opaque.as_deref().unwrap_or_default()
        );
        ex.check("blocked", || detail.clone());
        return with(blocked(), detail);
    }
    // inline code cannot be shown to avoid a blocked or denied command
    let restricted = !admin.denied.is_empty()
        || !user.denied.is_empty()
        || (admin.controlled() && !admin.blocked.is_empty());
    if restricted && let Some(command) = commands.iter().find(|c| c.effects.inline_code) {
        let detail = format!(
            "{} runs inline code, which cannot be shown to avoid the blocked and denied commands",
            part(command)
        );
        ex.check("blocked", || detail.clone());
        return with(blocked(), detail);
    }
    // a substitution's commands run only where an allowed prefix allows them
    if let Some(command) = commands.iter().find(|c| {
        c.origin == CommandOrigin::Substitution && allowing(admin, user, &commands, c).is_none()
    }) {
        let detail = format!(
            "{} is not allowed by an allowed prefix, so what the substitution yields cannot be known",
            part(command)
        );
        ex.check("blocked", || detail.clone());
        return with(blocked(), detail);
    }
    let touches = shell::touches(&commands, cwd);
    for touch in &touches {
        let verb = if touch.delete { "deletes" } else { "writes" };
        let why = match &touch.place {
            Place::Inside(_) => continue,
            Place::Outside(why) => why.clone(),
            Place::Protected(name) => format!("a protected path ({name})"),
        };
        let detail = format!("{} {verb} {:?}: {why}", part(touch.command), touch.path);
        ex.check("effects", || detail.clone());
        return with(blocked(), detail);
    }
    ex.check("blocked", || {
        "no command matches a blocked prefix, none is opaque, every write stays inside".to_owned()
    });
    // an ALLOW holds only while each write lands where the line says: the client,
    // where the files are, checks that
    let stays_inside = || {
        touches
            .iter()
            .filter_map(|t| match &t.place {
                Place::Inside(rel) => Some(super::write_tools::inside_path(cwd, rel)),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    // each write and deletion is the file call it is, in the same context
    let file_calls = || {
        for touch in &touches {
            let Place::Inside(path) = &touch.place else {
                continue;
            };
            let parts = file_call(files, admin, user, path, touch.delete);
            if parts.0 != Outcome::Allow {
                let what = if touch.delete {
                    "delete_file"
                } else {
                    "builtin:write_file"
                };
                let verb = if touch.delete { "deletes" } else { "writes" };
                let detail = format!(
                    "{} {verb} {:?}, and the {what} call that is would need approval ({})",
                    part(touch.command),
                    touch.path,
                    parts.1.as_str()
                );
                return Some(with((Outcome::Ask, parts.1, None, Vec::new()), detail));
            }
        }
        None
    };
    let (auto_run, run_everything) = modes(admin, user, ex);
    if run_everything && (!admin.controlled() || admin.controls.enable_run_everything) {
        if let Some(decided) = file_calls() {
            ex.check("effects", || {
                decided.1.as_deref().unwrap_or_default().to_owned()
            });
            return decided;
        }
        unchecked.stays_inside = stays_inside();
        return (
            (Outcome::Allow, Reason::RunEverything, None, Vec::new()),
            None,
        );
    }
    if !auto_run {
        return ((Outcome::Ask, Reason::AutoRunOff, None, Vec::new()), None);
    }
    let mut first_prefix = None;
    let mut unlisted = Vec::new();
    let mut unknown: Vec<String> = Vec::new();
    for command in commands.iter().filter(|c| {
        !matches!(
            c.origin,
            CommandOrigin::Equivalent | CommandOrigin::Argument
        )
    }) {
        match allowing(admin, user, &commands, command) {
            Some(p)
                if &**p == READONLY
                    && !(command.effects.read_only
                        && command.effects.writes.is_empty()
                        && command.effects.deletes.is_empty()
                        && command.effects.hosts.is_empty()) =>
            {
                let detail = format!(
                    "{} writes, deletes, contacts a host or takes an option or subcommand that is not read-only, which {READONLY} does not allow",
                    part(command)
                );
                ex.check("allowed", || detail.clone());
                unlisted.push(Candidate::Command(command.text.clone()));
            }
            Some(p) => {
                if let Some(program) = shell::unchecked_program(command) {
                    ex.check("effects", || {
                        format!(
                            "{} is allowed by {p:?}, but its effects are unknown: {program:?} has no row of the program table or runs code the line does not show, so what it runs, writes or deletes is not checked",
                            part(command)
                        )
                    });
                    if !unknown.contains(&program) {
                        unknown.push(program);
                    }
                }
                first_prefix.get_or_insert_with(|| p.clone());
            }
            // its script's commands are decided each, as commands of the line
            None if shell::literal_script(command) => {}
            None => {
                if !unlisted.contains(&Candidate::Command(command.text.clone())) {
                    unlisted.push(Candidate::Command(command.text.clone()));
                }
            }
        }
    }
    if unlisted.is_empty() {
        if let Some(decided) = file_calls() {
            ex.check("effects", || {
                decided.1.as_deref().unwrap_or_default().to_owned()
            });
            return decided;
        }
        ex.check("allowed", || {
            "every command matches an allowed prefix, and every write may auto-run".to_owned()
        });
        unchecked.effects_unknown = unknown;
        unchecked.stays_inside = stays_inside();
        return (
            (
                Outcome::Allow,
                Reason::CommandAllowed,
                first_prefix.map(EntryText::from),
                Vec::new(),
            ),
            None,
        );
    }
    let detail = format!(
        "{} command(s) match no allowed prefix: {}",
        unlisted.len(),
        unlisted
            .iter()
            .map(|c| match c {
                Candidate::Command(t) => format!("{t:?}"),
                Candidate::Mcp { server, tool } => format!("{server}:{tool}"),
            })
            .collect::<Vec<_>>()
            .join(", ")
    );
    ex.check("allowed", || detail.clone());
    (
        (Outcome::Ask, Reason::CommandNotAllowlisted, None, unlisted),
        None,
    )
}
