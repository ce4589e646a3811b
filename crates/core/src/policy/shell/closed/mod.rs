//! The closed world of what bash itself does with a simple command: builtins that
//! assign or evaluate, environment assignments outside a short harmless list, the
//! words a program that may run its arguments holds, and the literal scripts of
//! shells. What this module does not know to be harmless is opaque.

use super::programs::{Program, SHELLS, table};
use super::{Origin, SimpleCommand, base_name, program_name};

/// Builtins that assign a variable (its name may hold an array subscript bash
/// evaluates, `a[$(cmd)]`), evaluate arithmetic or change what later words mean:
/// never read-only, always opaque.
const ASSIGNING: [&str; 14] = [
    "read",
    "declare",
    "typeset",
    "local",
    "export",
    "readonly",
    "unset",
    "mapfile",
    "readarray",
    "let",
    "getopts",
    // `hash -p ./x ls` makes the next `ls` run ./x
    "hash",
    // `shopt -s expand_aliases`, `extdebug`: the commands after it mean other things
    "shopt",
    // `compgen -C cmd` runs cmd
    "compgen",
];

/// `set` options that change nothing a later command does beyond stopping or
/// tracing it (`set -euo pipefail`); any other makes `set` opaque (`set -k` turns
/// later `NAME=value` arguments into environment assignments).
const SET_LETTERS: &str = "euxvfnC";
const SET_NAMES: [&str; 7] = [
    "pipefail",
    "errexit",
    "nounset",
    "xtrace",
    "verbose",
    "noglob",
    "noclobber",
];

/// Why a command is opaque for what bash does before its program runs: a builtin
/// that assigns or evaluates, or an environment assignment off the harmless list.
/// `words[command_at]` is the command word, the words before it its assignments.
pub(super) fn opaque(words: &[String], command_at: usize) -> Option<String> {
    for assignment in &words[..command_at] {
        if let Some(why) = unsafe_assignment(assignment) {
            return Some(why);
        }
    }
    let command = words.get(command_at)?;
    let name = base_name(command);
    let args = &words[command_at + 1..];
    if ASSIGNING.contains(&name) {
        return Some(format!(
            "{name} assigns or evaluates shell variables (a name's subscript runs code)"
        ));
    }
    match name {
        "printf" if options(args).any(|o| o.contains('v')) => Some(
            "printf -v assigns a variable (a name's subscript runs code, PATH changes what runs)"
                .to_owned(),
        ),
        "test" | "[" if args.iter().any(|a| a == "-v" || a == "-R") => Some(format!(
            "{name} -v evaluates a variable name (a subscript runs code)"
        )),
        "wait" if options(args).any(|o| o.contains('p')) => {
            Some("wait -p assigns a variable".to_owned())
        }
        "set" => set(args),
        "env" => env(args),
        "exec" if options(args).any(|o| o.contains('a')) => {
            Some("exec -a runs a program under another name".to_owned())
        }
        _ => None,
    }
}

/// The option words at the start of `args`, up to `--` or the first operand.
fn options(args: &[String]) -> impl Iterator<Item = &str> {
    args.iter()
        .map(String::as_str)
        .take_while(|a| a.starts_with('-') && *a != "--" && *a != "-")
}

fn set(args: &[String]) -> Option<String> {
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        if arg == "--" || !(arg.starts_with('-') || arg.starts_with('+')) {
            // the rest are positional parameters, which only expansions read
            return None;
        }
        let letters = &arg[1..];
        if letters == "o" {
            match args.get(i + 1) {
                Some(name) if SET_NAMES.contains(&name.as_str()) => i += 2,
                _ => return Some(format!("set {arg} with an option the reader does not know")),
            }
            continue;
        }
        let (letters, takes_name) = match letters.strip_suffix('o') {
            Some(rest) => (rest, true),
            None => (letters, false),
        };
        if letters.is_empty() || !letters.chars().all(|c| SET_LETTERS.contains(c)) {
            return Some(format!(
                "set {arg} changes what later commands do (only -{SET_LETTERS} and -o {} are read)",
                SET_NAMES.join("/")
            ));
        }
        if takes_name {
            match args.get(i + 1) {
                Some(name) if SET_NAMES.contains(&name.as_str()) => i += 2,
                _ => return Some(format!("set {arg} with an option the reader does not know")),
            }
        } else {
            i += 1;
        }
    }
    None
}

/// `env`'s own words before its command: the assignments held to the harmless list,
/// as a plain `NAME=value cmd`'s; options that change the directory or the name the
/// program runs under are opaque.
fn env(args: &[String]) -> Option<String> {
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        let arg = arg.as_str();
        if arg == "--" || arg == "-" {
            i += 1;
            continue;
        }
        if let Some(long) = arg.strip_prefix("--") {
            let name = long.split('=').next().unwrap_or_default();
            // getopt_long takes any unique prefix: resolve it as env does
            let known = [
                "ignore-environment",
                "null",
                "unset",
                "chdir",
                "split-string",
                "block-signal",
                "default-signal",
                "ignore-signal",
                "list-signal-handling",
                "debug",
                "argv0",
                "help",
                "version",
            ];
            let hits: Vec<&str> = known
                .iter()
                .copied()
                .filter(|k| k.starts_with(name) && !name.is_empty())
                .collect();
            let exact = known.contains(&name);
            let option = match (exact, hits.as_slice()) {
                (true, _) => name,
                (false, [one]) => one,
                _ => {
                    return Some(format!(
                        "env {arg}: an option env does not know or cannot tell apart"
                    ));
                }
            };
            match option {
                "ignore-environment" | "null" | "debug" | "list-signal-handling" => i += 1,
                "unset" => i += if long.contains('=') { 1 } else { 2 },
                // the command string is read as the command (the program table)
                "split-string" => return None,
                "chdir" => {
                    return Some(
                        "env --chdir runs its command in another directory, where its writes land unseen"
                            .to_owned(),
                    );
                }
                "argv0" => {
                    return Some("env --argv0 runs a program under another name".to_owned());
                }
                _ => return Some(format!("env {arg} changes how its command runs")),
            }
            continue;
        }
        if let Some(cluster) = arg.strip_prefix('-') {
            let mut taken = 1;
            for (k, c) in cluster.char_indices() {
                match c {
                    'i' | '0' | 'v' => {}
                    'u' => {
                        if cluster[k + 1..].is_empty() {
                            taken = 2;
                        }
                        break;
                    }
                    'S' => return None,
                    'C' => {
                        return Some(
                            "env -C runs its command in another directory, where its writes land unseen"
                                .to_owned(),
                        );
                    }
                    'a' => return Some("env -a runs a program under another name".to_owned()),
                    _ => return Some(format!("env -{c}: an option the reader does not know")),
                }
            }
            i += taken;
            continue;
        }
        if is_assignment(arg) {
            if let Some(why) = unsafe_assignment(arg) {
                return Some(why);
            }
            i += 1;
            continue;
        }
        // the command
        return None;
    }
    None
}

/// Whether a word is `NAME=value` with a name bash would take as an assignment
/// (or one holding a subscript, which env passes and bash evaluates).
fn is_assignment(word: &str) -> bool {
    word.split_once('=')
        .is_some_and(|(name, _)| !name.is_empty() && !name.starts_with('-'))
}

/// Why `NAME=value` in a command's environment is not known to be harmless, or
/// `None`. The harmless list, and why each is:
/// - `LANG`, `LANGUAGE`, `LC_*`: pick an installed locale (a value holding `/`
///   names a locale directory, so it is not on the list);
/// - `TZ`: a time zone (at most a time zone file is read);
/// - `TERM`, `COLUMNS`, `LINES`: the terminal's type and size;
/// - `NO_COLOR`, `FORCE_COLOR`, `CLICOLOR`, `CLICOLOR_FORCE`: colour.
///
/// Any other variable may make a program run or load what the line does not show
/// (`PATH`, `LD_PRELOAD`, `GIT_*`, `BASH_ENV`, `PYTHONPATH`, …).
pub(super) fn unsafe_assignment(word: &str) -> Option<String> {
    let (name, value) = word.split_once('=').unwrap_or((word, ""));
    let harmless = match name {
        "LANG" | "LANGUAGE" => locale(value),
        _ if name.starts_with("LC_") && is_identifier(name) => locale(value),
        "TZ" | "TERM" | "COLUMNS" | "LINES" | "NO_COLOR" | "FORCE_COLOR" | "CLICOLOR"
        | "CLICOLOR_FORCE" => true,
        _ => false,
    };
    (!harmless).then(|| {
        format!(
            "{name}= in the environment of a command is not on the harmless list (LANG, LC_*, TZ, TERM, COLUMNS, LINES, colour switches): it may change what runs"
        )
    })
}

fn locale(value: &str) -> bool {
    value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "_.@:-".contains(c))
}

fn is_identifier(name: &str) -> bool {
    name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Builtins and programs without a row that only read or print their arguments:
/// their arguments are never commands.
const READS_ARGUMENTS: [&str; 13] = [
    "echo", "printf", "true", "false", "pwd", "type", "sleep", "date", "[", "test", "cd", "which",
    "set",
];

/// Words that open a statement bash reads as syntax: an opaque statement starting
/// with one is not a program's arguments.
const KEYWORDS: [&str; 22] = [
    "if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until", "do",
    "done", "function", "time", "coproc", "declare", "typeset", "local", "export", "readonly",
    "unset",
];

/// Whether a program with no row of the table is known to run nothing its arguments
/// name: a builtin that only prints, or a program `@readonly` lists.
fn reads_arguments(program: &str) -> bool {
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
fn runs_unread(row: &Program) -> bool {
    row.opaque
}

/// Whether a row's program may run commands its arguments name at all.
fn may_run(row: &Program) -> bool {
    row.opaque
        || !row.inline_code.is_empty()
        || row.wrapper.is_some()
        || !row.run_options.is_empty()
        || !row.exec_until.is_empty()
        || row.run_operands
}

/// The words of an argument as a command line would split them, for blocked and
/// denied prefixes only (`-ex 'shell rm -rf /'` holds `rm -rf /`).
fn split_words(text: &str) -> impl Iterator<Item = &str> {
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
pub(super) fn argument_commands(commands: &[SimpleCommand]) -> Vec<SimpleCommand> {
    let mut out = Vec::new();
    for command in commands {
        if matches!(command.origin, Origin::Equivalent | Origin::Argument) {
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
fn push(out: &mut Vec<SimpleCommand>, command: &SimpleCommand, program: &str, args: Vec<String>) {
    let scan = match table().get(program) {
        None => !reads_arguments(program),
        Some(row) => may_run(row),
    };
    if scan && !args.is_empty() {
        out.push(argument_command(command, args));
    }
}

fn argument_command(command: &SimpleCommand, words: Vec<String>) -> SimpleCommand {
    let mut inner = SimpleCommand::opaque(&command.text, "");
    inner.opaque = None;
    inner.command_words = (0..words.len()).collect();
    inner.globs = vec![false; words.len()];
    inner.words = words;
    inner.origin = Origin::Argument;
    inner
}

/// A command's text without its redirections (`2>&1`, `> out`, `<in`): they name no
/// command.
fn without_redirections(text: &str) -> String {
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
pub(super) fn redirect_hosts(command: &SimpleCommand) -> Vec<String> {
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

/// Shells whose `-c` string the reader reads as the commands of the line.
const SCRIPT_SHELLS: [&str; 7] = ["bash", "sh", "zsh", "dash", "ksh", "mksh", "ash"];

/// Whether a command is a shell given a literal script (`bash -lc 'ls'`, `sh -c …`,
/// Codex's `["bash", "-lc", "…"]`): the script's commands are commands of the line
/// (read and decided each), so the shell itself needs no allowed prefix. Only the
/// options that change nothing the script does (`-l` reads the user's own start-up
/// files, which no write may touch unapproved; `-e`, `-u`, `-x`, `-v`) keep it so;
/// nor may the shell command itself write.
pub fn literal_script(command: &SimpleCommand) -> bool {
    if command.opaque.is_some()
        || command.origin == Origin::Equivalent
        || command.origin == Origin::Argument
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
fn unknown_program(words: &[String], command_at: usize) -> Option<String> {
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
        || row.operands != super::programs::Operands::None
        || row.network != super::programs::Network::None
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
