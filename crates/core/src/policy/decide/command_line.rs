//! Shell command lines: blocked prefixes first, then allowed ones, every command of
//! the line.

use super::{Explain, Parts, kill_switch, modes};
use crate::policy::lists::{CompiledAdmin, CompiledUser};
use crate::policy::shell::{self, SimpleCommand};
use crate::policy::{Candidate, Outcome, Reason};
use std::sync::Arc;

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

pub(super) fn command_line<E: Explain>(
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
