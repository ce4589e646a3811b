//! A simple command's effects, read from its words with the program table: the
//! commands it runs, the paths it writes or deletes, the directory it changes to,
//! the hosts it contacts. The checkers of programs with a language of their own
//! are in `checkers/`; the
//! rows read by a grammar in `reading.rs`, by their option specs in `options.rs`.

pub(super) mod found;
mod operands;
mod options;
mod reading;

use super::checkers::find_read;
use super::programs::{Program, Script, table};
use found::{Found, Parsed};
use operands::operands;
use options::{expression, option};
use reading::apply_read;

pub(super) use found::Run;

/// The effects of a simple command: `words[command_at]` is its command word, the
/// words before it its assignments. `unknown_args`: words the reader cannot see
/// are added to it.
pub(super) fn effects(words: &[String], command_at: usize, unknown_args: bool) -> Found {
    let mut out = Found::default();
    let programs = table();
    for assignment in &words[..command_at] {
        let name = assignment.split('=').next().unwrap_or_default();
        if programs.env_runs(name) {
            out.opaque(format!(
                "{name} in the environment names a program or code that runs"
            ));
        }
    }
    let Some(command) = words.get(command_at) else {
        return out;
    };
    if command == "{}" {
        out.opaque("runs a found file ({}), which the reader cannot know".to_owned());
        return out;
    }
    let Some(program) = programs.get(command) else {
        return out;
    };
    out.read_only = true;
    if unknown_args && program.acts() {
        out.opaque(format!(
            "{command} takes words the reader cannot see, and some words make it run or write"
        ));
        return out;
    }
    apply(
        program,
        &words[command_at..command_at + 1],
        &words[command_at + 1..],
        &mut out,
    );
    out
}

fn apply(program: &Program, head: &[String], args: &[String], out: &mut Found) {
    let name = head.join(" ");
    if program.opaque {
        out.opaque(format!("{name}: {}", program.about));
        return;
    }
    if program.script == Some(Script::Find) {
        find_read(program, &name, args, out);
        return;
    }
    if let Some(grammar) = &program.grammar {
        let level = apply_read(program, grammar, head, args, out);
        read_only_and(out, level);
        return;
    }
    if !program.readonly_options.is_empty() {
        let level = exact_read_only(program, args);
        read_only_and(out, level);
    }
    let mut parsed = Parsed::default();
    let mut i = 0;
    let mut options_end = false;
    while i < args.len() {
        let word = args[i].as_str();
        let next = args.get(i + 1).map(String::as_str);
        if options_end || !word.starts_with('-') || word == "-" {
            if program.expression && !options_end && (word == "(" || word == "!") {
                // find's expression starts without a dash too
                expression(program, &args[i..], &mut parsed, out);
                break;
            }
            if parsed.operands.is_empty()
                && let Some(sub) = program.subcommands.get(word)
            {
                let mut head = head.to_vec();
                head.push(word.to_owned());
                apply(sub, &head, &args[i + 1..], out);
                return;
            }
            if let Some(wrapper) = &program.wrapper {
                if wrapper.assignments && word.contains('=') && !word.starts_with('=') {
                    let var = word.split('=').next().unwrap_or_default();
                    if table().env_runs(var) {
                        out.opaque(format!(
                            "{name} sets {var}, which names a program or code that runs"
                        ));
                    }
                    i += 1;
                    continue;
                }
                let start = i + wrapper.skip;
                if start < args.len() {
                    out.runs.push(Run::Words {
                        words: args[start..].to_vec(),
                        unknown_args: wrapper.stdin_args,
                    });
                } else if wrapper.stdin_args {
                    // xargs alone runs echo; busybox alone lists its applets
                }
                break;
            }
            parsed.operands.push(word);
            i += 1;
            continue;
        }
        if word == "--" {
            options_end = true;
            i += 1;
            if let Some(wrapper) = &program.wrapper
                && i + wrapper.skip < args.len()
            {
                out.runs.push(Run::Words {
                    words: args[i + wrapper.skip..].to_vec(),
                    unknown_args: wrapper.stdin_args,
                });
                break;
            }
            continue;
        }
        if !program.subcommands.is_empty() && !parsed.operands.is_empty() {
            // options after a subcommand the table does not list are its own
            i += 1;
            continue;
        }
        if program.expression {
            expression(program, &args[i..], &mut parsed, out);
            break;
        }
        i += option(program, &name, word, next, &mut parsed, out);
    }
    operands(program, &name, args, &parsed, out);
}

/// A row without a grammar (git's revision parser takes no abbreviation): each
/// option word must be one of its read-only options exactly, `--name=value`, or a
/// listed `-x*` with its value attached.
fn exact_read_only(program: &Program, args: &[String]) -> bool {
    for word in args {
        if word == "--" {
            break;
        }
        if !word.starts_with('-') || word == "-" {
            continue;
        }
        let listed = program.readonly_options.iter().any(|spec| {
            if let Some(short) = spec.strip_suffix('*') {
                return word.starts_with(short);
            }
            if spec == "-NUM" {
                return word.len() > 1 && word[1..].bytes().all(|b| b.is_ascii_digit());
            }
            word == spec
                || (spec.starts_with("--")
                    && word
                        .strip_prefix(spec.as_str())
                        .is_some_and(|rest| rest.starts_with('=')))
        });
        if !listed {
            return false;
        }
    }
    true
}

/// Lowers `out.read_only` when a level of the command is not read-only.
fn read_only_and(out: &mut Found, level: bool) {
    out.read_only &= level;
}
