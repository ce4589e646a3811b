//! A simple command's effects, read from its words with the program table: the
//! commands it runs, the paths it writes or deletes, the directory it changes to,
//! the hosts it contacts. The checkers of programs with a language of their own
//! are in `checkers.rs`.

use super::Cd;
use super::checkers::{
    awk_read, cc, find_read, gdb_read, git_config, git_config_read, sed_read, split_read, ssh_read,
    tar_old_style, tar_read,
};
use super::grammar::{Grammar, Reading};
use super::programs::{Network, Operands, Program, Script, table};

/// A command another command runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Run {
    /// A command line (`bash -c`, `git rebase -x`, `env -S`), read in turn.
    Line(String),
    /// A command's words (after a wrapper, in `find -exec`); `unknown_args` when
    /// words the reader cannot see are added (`xargs`).
    Words {
        words: Vec<String>,
        unknown_args: bool,
    },
}

/// What [`effects`] found.
#[derive(Debug, Default)]
pub(super) struct Found {
    pub runs: Vec<Run>,
    pub writes: Vec<String>,
    pub deletes: Vec<String>,
    pub hosts: Vec<String>,
    pub cd: Option<Cd>,
    pub inline_code: bool,
    pub opaque: Option<String>,
    /// Every option and subcommand is in its row's read-only set.
    pub read_only: bool,
    /// The words a blocked or denied prefix is matched as, too (`git send-pack` as
    /// `git push`).
    pub equivalents: Vec<Vec<String>>,
}

impl Found {
    pub(super) fn opaque(&mut self, why: String) {
        self.opaque.get_or_insert(why);
    }
}

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

/// The options an argument list holds and its operands.
#[derive(Default)]
pub(super) struct Parsed<'a> {
    operands: Vec<&'a str>,
    /// Whether an option of `operands_when` was given.
    when: bool,
    /// A write option was given (`-o`, `-t`): the operands are not the output.
    wrote: bool,
    /// An option of `deletes_when` was given (tar --remove-files).
    deletes: bool,
    /// An option of `links_when` was given (cp -l/-s): every operand is written.
    links: bool,
}

/// One option spec against a word: `Some(Some(value))` when it takes a value found
/// glued or next, `Some(None)` when it matched without a value.
enum Hit<'a> {
    /// The spec ends with `=` and the word starts with it: the rest is the value.
    Glued(&'a str),
    /// The word is the option: its value is the next word.
    Next,
    /// The word is `--option=value`.
    Long(&'a str),
}

fn hit<'a>(spec: &str, word: &'a str) -> Option<Hit<'a>> {
    if spec.is_empty() {
        return None;
    }
    if spec.ends_with('=') {
        return word.strip_prefix(spec).map(Hit::Glued);
    }
    if word == spec {
        return Some(Hit::Next);
    }
    word.strip_prefix(spec)
        .and_then(|rest| rest.strip_prefix('='))
        .filter(|_| spec.starts_with("--"))
        .map(Hit::Long)
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
fn apply_read(
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
                // reader cannot follow (and `closed.rs` makes the command opaque)
                if super::closed::unsafe_assignment(word).is_some() {
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
            && !super::rules::SHELLS.contains(&super::programs::program_name(applet).as_str())
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

/// find's expression: `-exec … ;`, the write options, `-delete`.
fn expression(program: &Program, args: &[String], parsed: &mut Parsed<'_>, out: &mut Found) {
    let mut i = 0;
    while i < args.len() {
        let word = args[i].as_str();
        if program.exec_until.iter().any(|s| s == word) {
            let end = args[i + 1..]
                .iter()
                .position(|w| w == ";" || w == "+")
                .map_or(args.len(), |p| i + 1 + p);
            let command = args[i + 1..end].to_vec();
            if command.is_empty() {
                out.opaque(format!("{word} without a command"));
            } else {
                out.runs.push(Run::Words {
                    words: command,
                    unknown_args: false,
                });
            }
            i = end + 1;
            continue;
        }
        if program.write_options.iter().any(|s| s == word) {
            match args.get(i + 1) {
                Some(path) => out.writes.push(path.clone()),
                None => out.opaque(format!("{word} without a file")),
            }
            parsed.wrote = true;
            i += 2;
            continue;
        }
        if program.operands_when.iter().any(|s| s == word) {
            parsed.when = true;
        }
        i += 1;
    }
}

/// One option word (and its value, when it takes the next word): answers how many
/// words it took.
fn option<'a>(
    program: &Program,
    name: &str,
    word: &'a str,
    next: Option<&'a str>,
    parsed: &mut Parsed<'a>,
    out: &mut Found,
) -> usize {
    // the whole word first (`--output=x`, `-exec`, `-fprint`), then a cluster of
    // short options (`-xzf`, `-o/etc/x`, `-C/etc`)
    if let Some(taken) = whole(program, name, word, next, parsed, out) {
        return taken;
    }
    if word.starts_with("--") {
        return 1;
    }
    for (k, c) in word[1..].char_indices() {
        let spec = format!("-{c}");
        let rest = &word[1 + k + c.len_utf8()..];
        let value_taker = [
            &program.run_options,
            &program.inline_code,
            &program.write_options,
            &program.value_options,
        ]
        .iter()
        .any(|set| set.contains(&spec));
        if program.opaque_options.contains(&spec) {
            out.opaque(format!("{name} {word}: {}", program.about));
        }
        if program.operands_when.contains(&spec) {
            parsed.when = true;
            // sed's `-i.bak`: the rest is the suffix
            return 1;
        }
        if value_taker {
            let (value, taken) = if rest.is_empty() {
                (next, 2)
            } else {
                (Some(rest), 1)
            };
            value_effect(program, name, &spec, value, parsed, out);
            return taken;
        }
    }
    1
}

/// The whole word as one option; `None` when no spec names it.
fn whole<'a>(
    program: &Program,
    name: &str,
    word: &'a str,
    next: Option<&'a str>,
    parsed: &mut Parsed<'a>,
    out: &mut Found,
) -> Option<usize> {
    let mut taken = None;
    let value_of = |h: &Hit<'a>| match h {
        Hit::Glued(v) | Hit::Long(v) => (Some(*v), 1),
        Hit::Next => (next, 2),
    };
    if program
        .opaque_options
        .iter()
        .any(|s| hit(s, word).is_some())
    {
        out.opaque(format!("{name} {word}: {}", program.about));
        taken = Some(1);
    }
    if program.operands_when.iter().any(|s| hit(s, word).is_some()) {
        parsed.when = true;
        taken = Some(1);
    }
    for set in [
        &program.run_options,
        &program.inline_code,
        &program.write_options,
        &program.value_options,
    ] {
        if let Some(spec) = set.iter().find(|s| hit(s, word).is_some()) {
            let h = hit(spec, word)?;
            let (value, n) = value_of(&h);
            value_effect(program, name, spec, value, parsed, out);
            return Some(n);
        }
    }
    taken
}

/// What an option's value does, by the set that names the option.
fn value_effect(
    program: &Program,
    name: &str,
    spec: &str,
    value: Option<&str>,
    parsed: &mut Parsed<'_>,
    out: &mut Found,
) {
    let Some(value) = value else {
        if program.run_options.iter().any(|s| s == spec)
            || program.write_options.iter().any(|s| s == spec)
        {
            out.opaque(format!("{name} {spec} without its value"));
        }
        return;
    };
    if program.run_options.iter().any(|s| s == spec) {
        out.runs.push(Run::Line(value.to_owned()));
    } else if program.inline_code.iter().any(|s| s == spec) {
        out.inline_code = true;
    } else if program.write_options.iter().any(|s| s == spec) {
        out.writes.push(value.to_owned());
        parsed.wrote = true;
    } else if program.network == Network::Urls {
        host_of_url(value, out);
    }
}

fn operands(program: &Program, name: &str, args: &[String], parsed: &Parsed<'_>, out: &mut Found) {
    let parsed = Parsed {
        operands: parsed.operands.clone(),
        ..*parsed
    };
    match program.script {
        Some(Script::GitConfig) => git_config(args, &parsed.operands, out),
        Some(Script::Cc) => cc(name, args, out),
        Some(_) | None => {}
    }
    let script = program.script.filter(|s| matches!(s, Script::Cd));
    operands_of(program, name, script, &parsed, out);
}

/// The operands' effects by the row's fields (`operands`, `network`, `downloads`,
/// `write_prefixes`, `run_operands`, `equivalent`), and `cd`'s directory.
fn operands_of(
    program: &Program,
    name: &str,
    script: Option<Script>,
    parsed: &Parsed<'_>,
    out: &mut Found,
) {
    let files: Vec<&str> = parsed.operands.clone();
    if program.code_assignments && files.iter().any(|w| w.contains('=')) {
        // `make CC='sh -c …'`, `make SHELL=./x`: a variable of the Makefile's code
        out.inline_code = true;
    }
    if let Some(word) = files.iter().find(|w| {
        program
            .opaque_operands
            .iter()
            .any(|p| w.starts_with(p.as_str()))
    }) {
        out.opaque(format!("{name} {word:?}: {}", program.about));
    }
    if script == Some(Script::Cd) {
        out.cd = Some(cd(name, &files));
    }
    if let Some(max) = program.max_operands
        && files.len() > max
    {
        out.opaque(format!(
            "{name}: {} operands, more than its {max}: {}",
            files.len(),
            program.about
        ));
    }
    if let Some(default) = &program.default_write
        && files.is_empty()
    {
        out.writes.push(default.clone());
    }
    for word in &files {
        for prefix in &program.write_prefixes {
            if let Some(path) = word.strip_prefix(prefix.as_str()) {
                out.writes.push(path.to_owned());
            }
        }
    }
    if program.run_operands {
        if files.is_empty() {
            out.opaque(format!("{name} without a command"));
        } else {
            out.runs.push(Run::Line(files.join(" ")));
        }
    }
    match program.network {
        Network::None => {}
        Network::Urls => files.iter().for_each(|w| host_of_url(w, out)),
        Network::Host => {
            if let Some(host) = files.first() {
                out.hosts.push(strip_user(host).to_owned());
            }
        }
        Network::RemotePaths => {
            for w in &files {
                if let Some(host) = remote_host(w) {
                    out.hosts.push(host.to_owned());
                }
            }
        }
    }
    if program.downloads && !parsed.wrote {
        for w in &files {
            if let Some((_, rest)) = w.split_once("://") {
                let path = rest.split(['?', '#']).next().unwrap_or_default();
                let name = match path.split_once('/') {
                    Some((_, p)) => p.rsplit('/').next().unwrap_or_default(),
                    None => "",
                };
                out.writes.push(if name.is_empty() {
                    "index.html".to_owned()
                } else {
                    name.to_owned()
                });
            }
        }
    }
    let applies = program.operands_when.is_empty() || parsed.when;
    if applies && let Some(equivalent) = &program.equivalent {
        let mut words: Vec<String> = equivalent.split_whitespace().map(str::to_owned).collect();
        words.extend(files.iter().map(|w| (*w).to_owned()));
        out.equivalents.push(words);
    }
    if !applies {
        return;
    }
    // remote paths (host:path) are not written here
    let local: Vec<&str> = if program.network == Network::RemotePaths {
        files
            .iter()
            .copied()
            .filter(|w| remote_host(w).is_none())
            .collect()
    } else {
        files.clone()
    };
    let paths = |ws: &[&str]| ws.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>();
    match program.operands {
        Operands::None => {}
        Operands::Writes => out.writes.extend(paths(&local)),
        Operands::Deletes => {
            if local.is_empty() && program.expression {
                // find's start point defaults to the working directory
                out.deletes.push(".".to_owned());
            }
            out.deletes.extend(paths(&local));
        }
        Operands::WritesLast => {
            if !parsed.wrote
                && let Some(last) = local.last().filter(|_| files.len() > 1)
            {
                out.writes.push((*last).to_owned());
            }
        }
        Operands::Moves => {
            let (sources, dest) = if parsed.wrote {
                (&local[..], None)
            } else {
                match local.split_last() {
                    Some((last, rest)) => (rest, Some(*last)),
                    None => (&local[..], None),
                }
            };
            out.deletes.extend(paths(sources));
            out.writes.extend(dest.map(str::to_owned));
        }
        Operands::WritesAfterFirst => out.writes.extend(paths(local.get(1..).unwrap_or_default())),
        Operands::WritesFirst => out.writes.extend(local.first().map(|w| (*w).to_owned())),
    }
}

/// `user@host` → `host`.
fn strip_user(w: &str) -> &str {
    w.rsplit('@').next().unwrap_or(w)
}

/// `[user@]host:path` (scp, rsync, git's scp-like remotes): the host. A word with a
/// slash before the colon is a local path.
fn remote_host(w: &str) -> Option<&str> {
    if w.contains("://") {
        return None;
    }
    let (host, _) = w.split_once(':')?;
    let host = strip_user(host);
    (!host.is_empty() && !host.contains('/') && host.len() > 1).then_some(host)
}

fn host_of_url(w: &str, out: &mut Found) {
    if let Some((scheme, rest)) = w.split_once("://") {
        if scheme.is_empty()
            || !scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c))
        {
            return;
        }
        let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
        let host = strip_user(authority);
        let host = if host.starts_with('[') {
            host.split(']')
                .next()
                .map(|h| h.trim_start_matches('['))
                .unwrap_or(host)
        } else {
            host.split(':').next().unwrap_or(host)
        };
        if !host.is_empty() {
            out.hosts.push(host.to_lowercase());
        }
    } else if let Some(host) = remote_host(w).filter(|_| w.contains('@')) {
        out.hosts.push(host.to_lowercase());
    }
}

/// `cd DIR`, `pushd DIR`: the directory; `cd`, `cd ~`, `cd -`, `popd`: unknown.
fn cd(name: &str, operands: &[&str]) -> Cd {
    match (name, operands) {
        ("popd", _) | (_, []) => Cd::Unknown,
        (_, [dir]) if *dir != "-" && !dir.starts_with('~') && !dir.starts_with('+') => {
            Cd::To((*dir).to_owned())
        }
        _ => Cd::Unknown,
    }
}
