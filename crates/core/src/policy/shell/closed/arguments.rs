//! The commands a program's arguments may hold, when the program may run them,
//! and the hosts of `/dev/tcp` redirections.

use crate::policy::shell::programs::{Program, SHELLS, table};
use crate::policy::shell::{CommandOrigin, SimpleCommand, program_name};

/// Builtins and programs without a row that only read or print their arguments:
/// their arguments are never commands.
pub(super) const READS_ARGUMENTS: [&str; 13] = [
    "echo", "printf", "true", "false", "pwd", "type", "sleep", "date", "[", "test", "cd", "which",
    "set",
];

/// Words that open a statement bash reads as syntax: an opaque statement starting
/// with one is not a program's arguments.
pub(super) const KEYWORDS: [&str; 22] = [
    "if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until", "do",
    "done", "function", "time", "coproc", "declare", "typeset", "local", "export", "readonly",
    "unset",
];

/// Whether a program with no row of the table is known to run nothing its arguments
/// name: a builtin that only prints, or a program `@readonly` lists.
pub(super) fn reads_arguments(program: &str) -> bool {
    static READONLY: std::sync::LazyLock<Vec<String>> = std::sync::LazyLock::new(|| {
        table()
            .readonly
            .iter()
            .filter_map(|p| p.split_whitespace().next())
            .map(program_name)
            .collect()
    });
    READS_ARGUMENTS.contains(&program) || READONLY.iter().any(|p| p == program)
}

/// Whether a row's program runs commands its arguments name in ways the reader does
/// not follow word by word (what a wrapper, `find -exec` or a run option runs is
/// read as a command of the line already).
pub(super) fn runs_unread(row: &Program) -> bool {
    row.opaque
}

/// Whether a row's program may run commands its arguments name at all.
pub(super) fn may_run(row: &Program) -> bool {
    row.opaque
        || !row.inline_code.is_empty()
        || row.wrapper.is_some()
        || !row.run_options.is_empty()
        || !row.exec_until.is_empty()
        || row.run_operands
}

/// The words of an argument as a command line would split them, for blocked and
/// denied prefixes only (`-ex 'shell rm -rf /'` holds `rm -rf /`).
pub(super) fn split_words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_alphanumeric() || "_./@%+=:,~-".contains(c)))
        .filter(|w| !w.is_empty())
        .flat_map(|w| {
            // `--run=reboot` may run `reboot`; `of=/dev/sda` stays whole for `dd of=…`
            let parts = w
                .contains('=')
                .then(|| w.split('=').filter(|p| !p.is_empty()));
            std::iter::once(w).chain(parts.into_iter().flatten())
        })
}

/// For each command of a program not known to run nothing (no row and not known to
/// only read, a row whose runs the reader cannot follow, inline code, an opaque
/// command of a program that runs things), the words of its arguments as a command
/// blocked and denied prefixes are matched against: `fakeroot rm -rf /`,
/// `gdb -batch -ex 'shell rm -rf /'`.
pub(in crate::policy::shell) fn argument_commands(
    commands: &[SimpleCommand],
) -> Vec<SimpleCommand> {
    let mut out = Vec::new();
    for command in commands {
        if matches!(
            command.origin,
            CommandOrigin::Equivalent | CommandOrigin::Argument
        ) {
            continue;
        }
        let (program, args) = if command.words.is_empty() {
            // an opaque command keeps its text only; a statement of the grammar (a
            // group, a test, a declaration) names no program
            if !command
                .text
                .starts_with(|c: char| c.is_alphanumeric() || "_./".contains(c))
            {
                continue;
            }
            let text = without_redirections(&command.text);
            let mut tokens = split_words(&text).skip_while(|w| w.contains('='));
            let Some(first) = tokens.next() else {
                continue;
            };
            if KEYWORDS.contains(&first) {
                continue;
            }
            let program = program_name(first);
            let args: Vec<String> = tokens.map(str::to_owned).collect();
            push(&mut out, command, &program, args);
            continue;
        } else {
            let Some(first) = command.words.get(command.command_at) else {
                continue;
            };
            let args: Vec<&str> = command.words[command.command_at + 1..]
                .iter()
                .flat_map(|w| split_words(w))
                .collect();
            (program_name(first), args)
        };
        // a shell's literal command string is read as commands of the line already
        // a shell's literal command string is read as commands of the line already
        if args.is_empty() || SHELLS.contains(&program.as_str()) {
            continue;
        }
        let scan = match table().get(&program) {
            // a builtin that evaluates (`printf -v 'a[$(rm -rf /)]'`)
            _ if command.opaque.is_some() => true,
            None => !reads_arguments(&program),
            Some(row) => runs_unread(row) || command.effects.inline_code,
        };
        if scan {
            let args = args.into_iter().map(str::to_owned).collect();
            out.push(argument_command(command, args));
        }
    }
    out
}

/// An opaque command's words, when its program may run them.
pub(super) fn push(
    out: &mut Vec<SimpleCommand>,
    command: &SimpleCommand,
    program: &str,
    args: Vec<String>,
) {
    let scan = match table().get(program) {
        None => !reads_arguments(program),
        Some(row) => may_run(row),
    };
    if scan && !args.is_empty() {
        out.push(argument_command(command, args));
    }
}

pub(super) fn argument_command(command: &SimpleCommand, words: Vec<String>) -> SimpleCommand {
    let mut inner = SimpleCommand::opaque(&command.text, "");
    inner.opaque = None;
    inner.command_words = (0..words.len()).collect();
    inner.globs = vec![false; words.len()];
    inner.words = words;
    inner.origin = CommandOrigin::Argument;
    inner
}

/// A command's text without its redirections (`2>&1`, `> out`, `<in`): they name no
/// command.
pub(super) fn without_redirections(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '<' && c != '>' {
            out.push(c);
            continue;
        }
        // the descriptor before the operator
        let digits = out.len() - out.trim_end_matches(|d: char| d.is_ascii_digit()).len();
        let before = &out[..out.len() - digits];
        if digits > 0 && (before.is_empty() || before.ends_with(char::is_whitespace)) {
            out.truncate(before.len());
        }
        let mut duplicate = false;
        while let Some(&next) = chars.peek() {
            match next {
                '<' | '>' => {}
                '&' => duplicate = true,
                d if duplicate && (d.is_ascii_digit() || d == '-') => {}
                _ => break,
            }
            chars.next();
        }
        if !duplicate {
            // the file it reads or writes
            while chars.next_if(|c| c.is_whitespace()).is_some() {}
            while chars.next_if(|c| !c.is_whitespace()).is_some() {}
        }
        out.push(' ');
    }
    out
}

/// The hosts of `/dev/tcp/HOST/PORT` and `/dev/udp/HOST/PORT` redirections: bash
/// opens a connection for them.
pub(in crate::policy::shell) fn redirect_hosts(command: &SimpleCommand) -> Vec<String> {
    command
        .redirects
        .iter()
        .filter_map(|r| {
            r.strip_prefix("/dev/tcp/")
                .or_else(|| r.strip_prefix("/dev/udp/"))
        })
        .map(|rest| rest.split('/').next().unwrap_or_default().to_lowercase())
        .collect()
}
