//! The effects of a row without a grammar, by its option specs: one option word and
//! its value, find's expression.

use super::found::{Found, Parsed, Run};
use super::operands::host_of_url;
use crate::policy::shell::programs::{Network, Program};

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

/// find's expression: `-exec … ;`, the write options, `-delete`.
pub(super) fn expression(
    program: &Program,
    args: &[String],
    parsed: &mut Parsed<'_>,
    out: &mut Found,
) {
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
pub(super) fn option<'a>(
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
