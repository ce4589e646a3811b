//! Secrets masked out of calls before anything is stored, logged, shown or sent:
//! known token formats, credential headers, URL user info, password options and
//! `NAME=value` assignments whose name says key, token, secret or password, each
//! replaced by a marker of its kind. The rules are data (`rules.toml`, read once).
//!
//! A masked command line must decide as the original does (the impact preview decides
//! stored lines again), so a secret is replaced only within its shell word and by a
//! marker bash reads as literal text; [`mask_call`] reads both lines and says when the
//! words came out differently, and such a line is kept but not decided again.

mod quotes;
#[cfg(test)]
mod tests;

use crate::policy::{
    Call, Candidate, CommandLine, CommandOrigin, Decision, SimpleCommand, parse_command_line,
};
use quotes::{Quote, Quotes};
use regex::{Regex, RegexSet};
use serde::Deserialize;
use std::borrow::Cow;
use std::sync::{Arc, LazyLock};

/// The most bytes of a text that are read for secrets; past it the rest, from the
/// start of the word the bound falls in, is replaced by one marker
/// (`__masked:too-long__`), since it could not be read.
pub const MAX_MASKED_BYTES: usize = 256 * 1024;

/// What every marker starts with.
pub const MARKER_PREFIX: &str = "__masked:";

/// The marker of a kind: `__masked:github-token__`.
pub fn marker(kind: &str) -> String {
    format!("{MARKER_PREFIX}{kind}__")
}

/// Whether a text holds a marker (an entry made from it would name no real call).
pub fn holds_marker(text: &str) -> bool {
    text.contains(MARKER_PREFIX)
}

/// What of a match is the secret (`rules.toml` explains each).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Extent {
    Token,
    Word,
    Rest,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleRow {
    kind: String,
    pattern: String,
    secret: Extent,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleFile {
    rule: Vec<RuleRow>,
}

struct Rule {
    marker: String,
    regex: Regex,
    extent: Extent,
}

/// The compiled table: one set to tell quickly that a text holds nothing, and each
/// rule's own expression to find where.
pub(crate) struct Rules {
    set: RegexSet,
    rules: Vec<Rule>,
}

impl Rules {
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let file: RuleFile = toml::from_str(text).map_err(|e| e.to_string())?;
        let mut rules = Vec::with_capacity(file.rule.len());
        for row in &file.rule {
            let kind_ok = !row.kind.is_empty()
                && row
                    .kind
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
            if !kind_ok {
                return Err(format!(
                    "kind {:?}: use lowercase letters, digits and `-`",
                    row.kind
                ));
            }
            let regex = Regex::new(&row.pattern).map_err(|e| format!("{}: {e}", row.kind))?;
            rules.push(Rule {
                marker: marker(&row.kind),
                regex,
                extent: row.secret,
            });
        }
        let set = RegexSet::new(file.rule.iter().map(|r| &r.pattern)).map_err(|e| e.to_string())?;
        Ok(Self { set, rules })
    }

    /// Whether `word` is, whole, the marker of a rule that masks whatever follows a
    /// name (a `NAME=` value, a password option's word): the word it stands for may
    /// be any word, a program's name included, unlike a token of a known shape or a
    /// word that keeps its own text around the marker (`-p__masked:password__`).
    fn is_free_form_marker(&self, word: &str) -> bool {
        self.rules
            .iter()
            .any(|r| r.extent != Extent::Token && word == r.marker)
    }

    /// The kinds the table masks, in its order, each once.
    pub(crate) fn kinds(&self) -> Vec<&str> {
        let mut kinds: Vec<&str> = Vec::new();
        for r in &self.rules {
            let kind = &r.marker[MARKER_PREFIX.len()..r.marker.len() - 2];
            if !kinds.contains(&kind) {
                kinds.push(kind);
            }
        }
        kinds
    }
}

pub(crate) static RULES: LazyLock<Rules> = LazyLock::new(|| {
    Rules::parse(include_str!("rules.toml")).unwrap_or_else(|e| {
        // the table is compiled in and checked by the unit tests
        panic!("rules.toml is not a valid table of secrets: {e}")
    })
});

/// The kinds of secret the table knows, each once (the markers' names).
pub fn kinds() -> Vec<&'static str> {
    RULES.kinds()
}

/// One secret found: the bytes it covers and its marker.
#[derive(Debug, Clone, Copy)]
struct Span<'r> {
    start: usize,
    end: usize,
    marker: &'r str,
    order: usize,
}

/// `text` with every secret the table knows replaced by its kind's marker; borrowed
/// when it holds none. Linear in the text: each rule is a finite automaton, the
/// quoting is read once, and at most [`MAX_MASKED_BYTES`] are read.
pub fn mask(text: &str) -> Cow<'_, str> {
    mask_with(&RULES, text)
}

pub(crate) fn mask_with<'a>(rules: &Rules, text: &'a str) -> Cow<'a, str> {
    let (head, cut) = if text.len() > MAX_MASKED_BYTES {
        (readable_head(text), true)
    } else {
        (text, false)
    };
    let Some(mut out) = mask_pass(rules, head) else {
        return if cut {
            Cow::Owned(format!("{head}{}", marker("too-long")))
        } else {
            Cow::Borrowed(text)
        };
    };
    // a marker put in may make a new match with what is around it (a `:` after it
    // reads as a URL's password): masked again until nothing more is found, so a
    // masked text masks as itself; a text that keeps changing is hidden whole
    let mut settled = false;
    for _ in 0..MAX_PASSES {
        match mask_pass(rules, &out) {
            Some(next) => out = next,
            None => {
                settled = true;
                break;
            }
        }
    }
    if !settled {
        out = marker("unreadable");
    }
    if cut {
        out.push_str(&marker("too-long"));
    }
    Cow::Owned(out)
}

/// What is read of a text longer than [`MAX_MASKED_BYTES`]: up to the bound, less the
/// word the bound falls in. A token cut short may no longer match its rule (a Google
/// API key is `AIza` and 35 characters), and the part kept would show nearly all of it.
fn readable_head(text: &str) -> &str {
    let end = (0..=MAX_MASKED_BYTES)
        .rev()
        .find(|&n| text.is_char_boundary(n))
        .unwrap_or(0);
    if text[end..].starts_with(char::is_whitespace) {
        return &text[..end];
    }
    // one word throughout: none of it is kept
    text[..end]
        .rfind(char::is_whitespace)
        .map_or("", |space| &text[..space])
}

/// The passes after the first that a text may take before it is hidden whole (each
/// one a new match a marker made; real lines settle after one).
const MAX_PASSES: usize = 4;

/// One pass of the table over `head`: the text with each secret found replaced by its
/// marker, `None` when none is found.
fn mask_pass(rules: &Rules, head: &str) -> Option<String> {
    let matched = rules.set.matches(head);
    if !matched.matched_any() {
        return None;
    }
    let quotes = Quotes::read(head);
    let mut spans = Vec::new();
    for i in matched.iter() {
        let rule = &rules.rules[i];
        for caps in rule.regex.captures_iter(head) {
            let Some(whole) = caps.get(0) else { continue };
            if !matches_without_markers(&rule.regex, whole.as_str()) {
                continue;
            }
            let found = match rule.extent {
                Extent::Token => {
                    let secret = caps.name("secret").unwrap_or(whole);
                    token_span(head, secret.start(), secret.end())
                }
                Extent::Word | Extent::Rest => {
                    value_span(head, &quotes, whole.end(), rule.extent == Extent::Rest)
                }
            };
            // a marker is never masked again
            let found = found.filter(|&(start, _)| !head[start..].starts_with(MARKER_PREFIX));
            if let Some((start, end)) = found {
                spans.push(Span {
                    start,
                    end,
                    marker: &rule.marker,
                    order: i,
                });
            }
        }
    }
    if spans.is_empty() {
        return None;
    }
    // the earliest first, the longer of two at one place, then the table's order;
    // overlapping secrets are masked as one
    spans.sort_by_key(|s| (s.start, std::cmp::Reverse(s.end), s.order));
    let mut out = String::with_capacity(head.len());
    let mut at = 0;
    let mut current: Option<Span<'_>> = None;
    for s in spans {
        match &mut current {
            Some(c) if s.start < c.end => c.end = c.end.max(s.end),
            _ => {
                if let Some(c) = current.take() {
                    out.push_str(&head[at..c.start]);
                    out.push_str(c.marker);
                    at = c.end;
                }
                current = Some(s);
            }
        }
    }
    if let Some(c) = current {
        out.push_str(&head[at..c.start]);
        out.push_str(c.marker);
        at = c.end;
    }
    out.push_str(&head[at..]);
    Some(out)
}

/// Whether `found` (a rule's whole match) still matches with each marker in it read
/// as plain letters: a match the marker's own `:` or kind name made (`x;__masked:k__@`
/// read as a URL's `user:password@`) is no secret, so a masked text masks no further.
fn matches_without_markers(regex: &Regex, found: &str) -> bool {
    if !found.contains(MARKER_PREFIX) {
        return true;
    }
    static MARKER: LazyLock<Regex> = LazyLock::new(|| {
        let pattern = format!("{}[a-z0-9-]+__", regex::escape(MARKER_PREFIX));
        Regex::new(&pattern).unwrap_or_else(|e| panic!("marker pattern: {e}"))
    });
    let plain = MARKER.replace_all(found, |m: &regex::Captures<'_>| "X".repeat(m[0].len()));
    regex.is_match(&plain)
}

/// A token as found, unless it is a variable's name (`$ghp_…`, `${ghp_…}`).
fn token_span(text: &str, start: usize, end: usize) -> Option<(usize, usize)> {
    let before = &text.as_bytes()[..start];
    let named = before.ends_with(b"$") || before.ends_with(b"${");
    (start < end && !named).then_some((start, end))
}

/// The value that starts at `start`: the rest of its shell word (through quotes),
/// or inside quotes up to a blank (`rest`: up to the closing quote). `None` when it
/// is empty, starts an option (`--token --verbose`), or holds an expansion.
fn value_span(text: &str, quotes: &Quotes, start: usize, rest: bool) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    if start >= b.len() {
        return None;
    }
    let end = match quotes.at(start) {
        Quote::Single | Quote::Double => {
            let mut i = start;
            while i < b.len() && quotes.at(i) != Quote::None {
                let c = b[i];
                let closing = quotes.closes(i);
                if closing || (!rest && matches!(c, b' ' | b'\t' | b'\n')) {
                    break;
                }
                if quotes.at(i) == Quote::Double && matches!(c, b'$' | b'`') {
                    return None;
                }
                i += 1;
            }
            i
        }
        Quote::None => {
            if b[start] == b'-' {
                return None;
            }
            let mut i = start;
            while i < b.len() {
                let c = b[i];
                match quotes.at(i) {
                    Quote::None => {
                        if matches!(
                            c,
                            b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'(' | b')' | b'<' | b'>'
                        ) {
                            break;
                        }
                        if matches!(c, b'$' | b'`') {
                            return None;
                        }
                        // an escape keeps the next character in the word
                        i += if c == b'\\' { 2 } else { 1 };
                    }
                    Quote::Double if matches!(c, b'$' | b'`') => return None,
                    _ => i += 1,
                }
            }
            i.min(b.len())
        }
    };
    (end > start).then_some((start, end))
}

/// A call with its secrets masked, and whether it still decides as the original.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MaskedCall<'a> {
    pub call: Cow<'a, Call>,
    /// False when masking changed how the line reads (its words, their number, what
    /// they touch): the masked call is shown but never decided again.
    pub redecidable: bool,
}

impl MaskedCall<'_> {
    /// Whether anything was masked.
    pub fn masked(&self) -> bool {
        matches!(self.call, Cow::Owned(_))
    }
}

/// `call` with its secrets masked: a command line or a path (MCP names are
/// identifiers, never masked).
pub fn mask_call(call: &Call) -> MaskedCall<'_> {
    let unchanged = MaskedCall {
        call: Cow::Borrowed(call),
        redecidable: true,
    };
    match call {
        Call::Shell(line) => match mask(line) {
            Cow::Borrowed(_) => unchanged,
            Cow::Owned(masked) => {
                let redecidable = reads_alike(line, &masked);
                MaskedCall {
                    call: Cow::Owned(Call::Shell(masked)),
                    redecidable,
                }
            }
        },
        // a path's secret would change where it points: shown, not decided again
        Call::DeleteFile(path) => match mask(path) {
            Cow::Borrowed(_) => unchanged,
            Cow::Owned(masked) => MaskedCall {
                call: Cow::Owned(Call::DeleteFile(masked)),
                redecidable: false,
            },
        },
        Call::Mcp { .. } | Call::McpAction { .. } | Call::McpInternal { .. } => unchanged,
    }
}

/// A decision about a masked call, for its records: the candidates and the detail
/// it would show with the secrets masked (what the policy decided is unchanged).
pub fn mask_decision(d: &Decision) -> Cow<'_, Decision> {
    let detail = d.detail.as_deref().map(mask);
    let candidates: Vec<Cow<'_, str>> = d
        .candidates
        .iter()
        .map(|c| match c {
            Candidate::Command(text) => mask(text),
            Candidate::Mcp { .. } => Cow::Borrowed(""),
        })
        .collect();
    // the paths an ALLOW depends on come from the line, secrets and all
    let paths: Vec<Cow<'_, str>> = d.unchecked.stays_inside.iter().map(|p| mask(p)).collect();
    let changed = matches!(detail, Some(Cow::Owned(_)))
        || candidates.iter().any(|c| matches!(c, Cow::Owned(_)))
        || paths.iter().any(|p| matches!(p, Cow::Owned(_)));
    if !changed {
        return Cow::Borrowed(d);
    }
    let mut out = d.clone();
    out.detail = detail.map(|t| Arc::from(t.as_ref()));
    out.unchecked.stays_inside = paths.into_iter().map(Cow::into_owned).collect();
    for (c, masked) in out.candidates.iter_mut().zip(candidates) {
        if let Candidate::Command(text) = c {
            *text = masked.into_owned();
        }
    }
    Cow::Owned(out)
}

/// Whether two lines read as the same commands with the same words, but for the
/// words that hold a marker (whose values may differ, never their number or place).
fn reads_alike(original: &str, masked: &str) -> bool {
    let (a, b) = (parse_command_line(original), parse_command_line(masked));
    same_shape(&a, &b)
}

fn same_shape(a: &CommandLine, b: &CommandLine) -> bool {
    let alike = |x: &str, y: &str| x == y || holds_marker(y);
    let lists = |x: &[String], y: &[String]| {
        x.len() == y.len() && x.iter().zip(y).all(|(x, y)| alike(x, y))
    };
    // the words found inside an unknown program's arguments only feed blocked and
    // denied prefixes, and a secret split there reads as other words by nature: they
    // are compared apart, by the programs they name: a marker may stand for one
    // unless it is the whole word and stands for free-form text, which may have been
    // a denied program's name (`foo TOKEN=curl` with `curl` denied)
    let read = |l: &CommandLine, argument: bool| -> Vec<_> {
        l.commands
            .iter()
            .filter(|c| (c.origin == CommandOrigin::Argument) == argument)
            .cloned()
            .collect()
    };
    // each word a prefix is tried at (`command_words`: after a wrapper, every word)
    let programs = |x: &SimpleCommand, y: &SimpleCommand| {
        x.command_words == y.command_words
            && x.command_words.iter().all(|&i| {
                let (x, y) = (x.words.get(i), y.words.get(i));
                x == y || y.is_some_and(|y| holds_marker(y) && !RULES.is_free_form_marker(y))
            })
    };
    let (aa, ba) = (read(a, true), read(b, true));
    let arguments_alike = aa.len() == ba.len() && aa.iter().zip(&ba).all(|(x, y)| programs(x, y));
    let (ac, bc) = (read(a, false), read(b, false));
    arguments_alike
        && ac.len() == bc.len()
        && ac.iter().zip(&bc).all(|(x, y)| {
            x.opaque.is_some() == y.opaque.is_some()
                && lists(&x.words, &y.words)
                && x.command_at == y.command_at
                && x.command_words == y.command_words
                && x.deletes == y.deletes
                && x.globs == y.globs
                && x.origin == y.origin
                && x.run_by == y.run_by
                && lists(&x.redirects, &y.redirects)
                && lists(&x.effects.writes, &y.effects.writes)
                && lists(&x.effects.deletes, &y.effects.deletes)
                && lists(&x.effects.hosts, &y.effects.hosts)
                && x.effects.cd == y.effects.cd
                && x.effects.inline_code == y.effects.inline_code
        })
}
