//! The closed world of what bash itself does with a simple command: builtins that
//! assign or evaluate, environment assignments outside a short harmless list, the
//! words a program that may run its arguments holds, and the literal scripts of
//! shells. What this module does not know to be harmless is opaque.

mod arguments;
mod unchecked;

use super::base_name;
pub(super) use arguments::{argument_commands, redirect_hosts};
pub use unchecked::{
    checked_beyond_prefix, literal_script, unchecked_program, unknown_prefix_program,
};

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
