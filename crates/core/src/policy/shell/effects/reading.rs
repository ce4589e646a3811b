//! The effects of a row with a grammar: its arguments read as its parser reads them,
//! then each resolved option's effect, its subcommand or wrapped command, its operands.

use super::apply;
use super::found::{Found, Parsed, Run};
use super::operands::{host_of_url, operands_of};
use crate::policy::shell::checkers::{
    awk_read, gdb_read, git_config_read, sed_read, split_read, ssh_read, tar_old_style, tar_read,
};
use crate::policy::shell::grammar::{Grammar, Reading};
use crate::policy::shell::programs::{Network, Program, SHELLS, Script, program_name, table};

/// Whether an option spec of an effect field names the resolved option: `-o` and
/// `--output` by name, `--checkpoint-action=exec=` by name and a value starting so.
/// Answers the value the effect applies to.
fn spec_hit<'a>(spec: &str, name: &str, value: Option<&'a str>) -> Option<Option<&'a str>> {
    match spec.split_once('=') {
        Some((option, prefix)) => {
            if option != name {
                return None;
            }
            value.and_then(|v| v.strip_prefix(prefix)).map(Some)
        }
        None => (spec == name).then_some(value),
    }
}

/// A row with a grammar: its arguments read as its parser reads them, then each
/// resolved option's effect, its subcommand or wrapped command, its operands.
/// Answers whether this level is read-only.
pub(super) fn apply_read(
    program: &Program,
    grammar: &Grammar,
    head: &[String],
    args: &[String],
    out: &mut Found,
) -> bool {
    let name = head.join(" ");
    let old_style;
    let args = match program.script {
        Some(Script::Tar) => {
            old_style = tar_old_style(grammar, args);
            old_style.as_deref().unwrap_or(args)
        }
        _ => args,
    };
    let read = match program.script {
        Some(Script::Ssh) => ssh_read(grammar, args),
        _ => grammar.read(args),
    };
    let reading = match read {
        Ok(reading) => reading,
        Err(why) => {
            out.opaque(format!("{name}: {why}"));
            return false;
        }
    };
    let mut parsed = Parsed::default();
    let mut read_only = !program.readonly_options.is_empty();
    for (option, value) in reading.options() {
        // `*` is every option no effect field names
        let listed = program.readonly_options.iter().any(|r| r == option)
            || (program.readonly_options.iter().any(|r| r == "*") && !acts_option(program, option));
        if !listed {
            read_only = false;
        }
        option_effect(program, &name, option, value, &mut parsed, out);
    }
    if !program.opaque_unless.is_empty() && !program.opaque_unless.iter().any(|o| reading.has(o)) {
        out.opaque(format!("{name}: {}", program.about));
        return false;
    }
    let operands: Vec<&str> = reading.operands().collect();
    if !program.subcommands.is_empty()
        && let Some(first) = operands.first()
    {
        let Some(sub) = program.subcommands.get(*first) else {
            out.opaque(format!(
                "{name} {first}: a subcommand the reader does not know (it may be an alias, which can run anything)"
            ));
            return false;
        };
        let Some(at) = reading
            .rest
            .filter(|&at| args.get(at).map(String::as_str) == Some(first))
        else {
            out.opaque(format!(
                "{name}: options after {first:?} the reader cannot place"
            ));
            return false;
        };
        let mut head = head.to_vec();
        head.push((*first).to_owned());
        apply(sub, &head, &args[at + 1..], out);
        // a subcommand that runs code with no read-only option of its own is never
        // a read (`npm -v install`: the top level's -v is)
        return read_only && !(sub.code_runner && sub.readonly_options.is_empty());
    }
    if let Some(wrapper) = &program.wrapper {
        if wrapper.reads_when.iter().any(|o| reading.has(o)) {
            // `command -v ls`: the operands are names it looks up, nothing runs
            return read_only;
        }
        let mut start = reading.rest.unwrap_or(args.len());
        if wrapper.assignments {
            while let Some(word) = args
                .get(start)
                .filter(|w| w.contains('=') && !w.starts_with('='))
            {
                let var = word.split('=').next().unwrap_or_default();
                if table().env_runs(var) {
                    out.opaque(format!(
                        "{name} sets {var}, which names a program or code that runs"
                    ));
                }
                // an assignment off the harmless list is no read: what it changes the
                // reader cannot follow (and `closed/` makes the command opaque)
                if crate::policy::shell::closed::unsafe_assignment(word).is_some() {
                    read_only = false;
                }
                start += 1;
            }
        }
        let start = start + wrapper.skip;
        if let Some(word) = args.get(start).filter(|w| wrapper.line_options.contains(w)) {
            match args.get(start + 1) {
                Some(line) if args.len() == start + 2 => out.runs.push(Run::Line(line.clone())),
                _ => out.opaque(format!("{name} {word} takes one command line")),
            }
            return read_only;
        }
        if let Some(word) = args.get(start).filter(|w| w.starts_with('-')) {
            out.opaque(format!(
                "{name}: {word:?} after its operands is an option the reader cannot place"
            ));
            return false;
        }
        if let Some(applet) = args.get(start)
            && wrapper.known_only
            && table().get(applet).is_none()
            && !SHELLS.contains(&program_name(applet).as_str())
        {
            out.opaque(format!(
                "{name} {applet}: an applet the program table has no row for (its options and effects are unknown)"
            ));
            return false;
        }
        if start < args.len() {
            out.runs.push(Run::Words {
                words: args[start..].to_vec(),
                unknown_args: wrapper.stdin_args,
            });
        }
        return read_only;
    }
    if let Some(max) = program.readonly_max_operands
        && operands.len() > max
    {
        read_only = false;
    }
    parsed.operands = operands;
    operands_read(program, &name, &reading, &parsed, out);
    read_only
}

/// Whether an effect field names the option (whatever its value).
fn acts_option(program: &Program, option: &str) -> bool {
    program
        .effect_options()
        .filter(|spec| {
            // opaque_unless names the options that make it safe, not effects
            !program.value_options.iter().any(|v| v == spec)
                && !program.opaque_unless.iter().any(|v| v == spec)
        })
        .any(|spec| spec.split_once('=').map_or(spec, |(o, _)| o) == option)
}

/// What a resolved option does, by the effect fields that name it.
fn option_effect<'a>(
    program: &Program,
    name: &str,
    option: &str,
    value: Option<&'a str>,
    parsed: &mut Parsed<'a>,
    out: &mut Found,
) {
    let shown = match value {
        Some(v) => format!("{option} {v:?}"),
        None => option.to_owned(),
    };
    if program
        .opaque_options
        .iter()
        .any(|s| spec_hit(s, option, value).is_some())
    {
        out.opaque(format!("{name} {shown}: {}", program.about));
    }
    if program
        .operands_when
        .iter()
        .any(|s| spec_hit(s, option, value).is_some())
    {
        parsed.when = true;
    }
    if program
        .deletes_when
        .iter()
        .any(|s| spec_hit(s, option, value).is_some())
    {
        parsed.deletes = true;
    }
    if program
        .links_when
        .iter()
        .any(|s| spec_hit(s, option, value).is_some())
    {
        parsed.links = true;
    }
    let hit = |set: &[String]| set.iter().find_map(|s| spec_hit(s, option, value));
    if let Some(v) = hit(&program.run_options) {
        match v {
            Some(line) => out.runs.push(Run::Line(line.to_owned())),
            None => out.opaque(format!("{name} {option} without its value")),
        }
    } else if hit(&program.inline_code).is_some() {
        out.inline_code = true;
    } else if let Some(v) = hit(&program.write_options) {
        match v {
            Some(path) => out.writes.push(path.to_owned()),
            None => out.opaque(format!("{name} {option} without its value")),
        }
        parsed.wrote = true;
    } else if let (Some(v), Network::Urls) = (value, program.network) {
        host_of_url(v, out);
    }
}

/// The operands of a row with a grammar, and its checker's verdict.
fn operands_read(
    program: &Program,
    name: &str,
    reading: &Reading<'_>,
    parsed: &Parsed<'_>,
    out: &mut Found,
) {
    let mut parsed = Parsed {
        operands: parsed.operands.clone(),
        ..*parsed
    };
    match program.script {
        Some(Script::Sed) => parsed.operands = sed_read(name, reading, parsed.operands, out),
        Some(Script::Awk) => parsed.operands = awk_read(name, reading, parsed.operands, out),
        Some(Script::Tar) => tar_read(name, reading, &parsed, out),
        Some(Script::GitConfig) => git_config_read(reading, &parsed.operands, out),
        Some(Script::Split) => split_read(name, reading, &parsed.operands, out),
        Some(Script::Gdb) => gdb_read(name, reading, out),
        Some(Script::Cd | Script::Cc | Script::Find | Script::Ssh) | None => {}
    }
    if parsed.deletes {
        out.deletes
            .extend(parsed.operands.iter().map(|w| (*w).to_owned()));
    }
    if parsed.links {
        // a link is written at its destination, and its target is written through it
        out.writes
            .extend(parsed.operands.iter().map(|w| (*w).to_owned()));
    }
    let script = program.script.filter(|s| matches!(s, Script::Cd));
    operands_of(program, name, script, &parsed, out);
}
