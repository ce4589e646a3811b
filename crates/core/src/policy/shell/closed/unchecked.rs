//! Shells' literal scripts, and the programs whose effects the reader does not know
//! or check (no row, a code runner, a prefix decided by its program alone).

use super::ASSIGNING;
use super::arguments::reads_arguments;
use crate::policy::shell::programs::{SHELLS, table};
use crate::policy::shell::{CommandOrigin, SimpleCommand, program_name};

/// Shells whose `-c` string the reader reads as the commands of the line.
pub(super) const SCRIPT_SHELLS: [&str; 7] = ["bash", "sh", "zsh", "dash", "ksh", "mksh", "ash"];

/// Whether a command is a shell given a literal script (`bash -lc 'ls'`, `sh -c …`,
/// Codex's `["bash", "-lc", "…"]`): the script's commands are commands of the line
/// (read and decided each), so the shell itself needs no allowed prefix. Only the
/// options that change nothing the script does (`-l` reads the user's own start-up
/// files, which no write may touch unapproved; `-e`, `-u`, `-x`, `-v`) keep it so;
/// nor may the shell command itself write.
pub fn literal_script(command: &SimpleCommand) -> bool {
    if command.opaque.is_some()
        || command.origin == CommandOrigin::Equivalent
        || command.origin == CommandOrigin::Argument
        || !command.effects.writes.is_empty()
        || !command.effects.deletes.is_empty()
        || !command.redirects.is_empty()
    {
        return false;
    }
    let Some(first) = command.words.get(command.command_at) else {
        return false;
    };
    if command.command_at > 0 || !SCRIPT_SHELLS.contains(&program_name(first).as_str()) {
        return false;
    }
    let mut has_c = false;
    for arg in &command.words[command.command_at + 1..] {
        if has_c {
            // the script: the rest are its $0 and parameters, which only expansions read
            return true;
        }
        match arg.as_str() {
            "--login" | "--noprofile" | "--norc" => {}
            a if a.len() > 1
                && a.starts_with('-')
                && a[1..].chars().all(|c| "lceuxv".contains(c)) =>
            {
                has_c = a.contains('c');
            }
            _ => return false,
        }
    }
    false
}

/// The program of a command whose effects the reader does not know: it has no row
/// of the program table and is not known to only read (`terraform`, `zip`,
/// `fakeroot`). An allowed prefix that names one is the admin's explicit choice,
/// but what it runs and writes cannot be checked.
pub(super) fn unknown_program(words: &[String], command_at: usize) -> Option<String> {
    let program = program_name(words.get(command_at)?);
    (table().get(&program).is_none()
        && !reads_arguments(&program)
        && !SHELLS.contains(&program.as_str())
        && !ASSIGNING.contains(&program.as_str()))
    .then_some(program)
}

/// The program of an allowed command whose effects the reader does not check: one
/// with no row ([`unknown_program`]), a code runner of the table (`python`, `make`,
/// `npm run`) or a shell not given a literal script, which run code the line does
/// not show. Every ALLOW of such a command says "effects unknown".
pub fn unchecked_program(command: &SimpleCommand) -> Option<String> {
    let program = program_name(command.words.get(command.command_at)?);
    let unchecked = match table().named(&program) {
        None => {
            !reads_arguments(&program)
                && !SHELLS.contains(&program.as_str())
                && !ASSIGNING.contains(&program.as_str())
        }
        Some(row) => {
            let args = &command.words[command.command_at + 1..];
            // the subcommand: the first operand where a grammar reads the options
            // before it (`npm --json test`), else the next word
            let sub = match &row.grammar {
                Some(grammar) if !row.subcommands.is_empty() => grammar
                    .read(args)
                    .ok()
                    .and_then(|r| r.operands().next().map(str::to_owned)),
                _ => args.first().cloned(),
            };
            let code = row.code_runner
                || sub
                    .and_then(|s| row.subcommands.get(s.as_str()))
                    .is_some_and(|s| s.code_runner);
            code || (SCRIPT_SHELLS.contains(&program.as_str()) && !literal_script(command))
        }
    };
    unchecked.then_some(program)
}

/// [`unknown_program`] for a configured prefix (its assignments skipped).
pub fn unknown_prefix_program(prefix: &str) -> Option<String> {
    let words: Vec<String> = prefix
        .split_whitespace()
        .skip_while(|w| w.contains('='))
        .map(str::to_owned)
        .collect();
    if words.first().is_none_or(|w| w.starts_with('@')) {
        return None;
    }
    unknown_program(&words, 0)
}

/// Whether the reader decides a command that starts with these words by more than
/// its prefix: the row of its program (or of the subcommand the words name) reads
/// options or operands that run, write, delete, contact a host or are opaque (`sed`,
/// `tar`, `cp`, `find`, `git status --paginate`). A native prefix rule of a client
/// would allow every such spelling, so an export leaves the prefix to ask.
pub fn checked_beyond_prefix(words: &[String]) -> bool {
    let Some(first) = words.first() else {
        return false;
    };
    let Some(mut row) = table().get(first) else {
        return false;
    };
    let mut rest = &words[1..];
    while let Some((word, after)) = rest.split_first() {
        match row.subcommands.get(word.as_str()) {
            Some(sub) => {
                row = sub;
                rest = after;
            }
            None => break,
        }
    }
    let own = row.wrapper.is_some()
        || !row.run_options.is_empty()
        || !row.exec_until.is_empty()
        || row.run_operands
        || !row.opaque_options.is_empty()
        || row.opaque
        || !row.inline_code.is_empty()
        || !row.write_options.is_empty()
        || !row.write_prefixes.is_empty()
        || row.operands != crate::policy::shell::programs::Operands::None
        || row.network != crate::policy::shell::programs::Network::None
        || row.downloads
        || row.script.is_some()
        || !row.deletes_when.is_empty()
        || !row.links_when.is_empty()
        || !row.opaque_unless.is_empty()
        || !row.opaque_operands.is_empty()
        || row.code_assignments
        || row.default_write.is_some()
        || row.max_operands.is_some();
    // with no operand fixed by the prefix, every subcommand is within reach
    own || (rest.is_empty() && row.subcommands.values().any(|s| s.acts()))
}
