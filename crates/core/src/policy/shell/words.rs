//! What makes a word plain: literal text, quotes and escapes as bash reads them, and
//! the expansion that makes a word unknowable named.

use tree_sitter::Node;

/// The source text of a node of `line`.
pub(super) fn text<'a>(line: &'a str, node: Node<'_>) -> &'a str {
    &line[node.byte_range()]
}

/// Stands in a word's value for what a substitution yields: such a word is unknown
/// (blocked prefixes match it as any word, allowed ones as none). The reader
/// refuses lines holding control characters, so no word of a line holds it.
pub const UNKNOWN: char = '\u{1}';

/// A word as bash reads it, or why it cannot be known.
pub(super) struct Word {
    pub(super) value: String,
    /// Holds an unquoted `*`, `?` or `[`: bash replaces it by file names.
    pub(super) glob: bool,
    /// The command lines of the substitutions in it (`$(…)`, `` `…` ``, `<(…)`):
    /// its value holds [`UNKNOWN`] where they stand.
    pub(super) substitutions: Vec<String>,
}

/// [`word`], where a substitution cannot stand (a redirection's target, an
/// assignment, a here-string): one makes it an error.
pub(super) fn plain_word(line: &str, node: Node<'_>) -> Result<Word, String> {
    let w = word(line, node)?;
    if w.substitutions.is_empty() {
        Ok(w)
    } else {
        Err("a command substitution".to_owned())
    }
}

/// `NAME=value`: the value must be plain, as any word.
pub(super) fn assignment(line: &str, node: Node<'_>) -> Result<Word, String> {
    match node.child_by_field_name("value") {
        None => Ok(Word {
            value: text(line, node).to_owned(),
            glob: false,
            substitutions: Vec::new(),
        }),
        Some(value) => {
            let head = &line[node.start_byte()..value.start_byte()];
            let value = plain_word(line, value)?;
            Ok(Word {
                value: format!("{head}{}", value.value),
                glob: false,
                substitutions: Vec::new(),
            })
        }
    }
}

/// A word as bash reads it: literal text, single quotes, double quotes holding no
/// expansion, and concatenations of those. Anything else is an error naming it.
pub(super) fn word(line: &str, node: Node<'_>) -> Result<Word, String> {
    // `shape` keeps unquoted text and stands `x` for quoted parts, to see brace
    // expansion across parts (`{push,}`, `{"push",}`)
    let mut value = String::new();
    let mut shape = String::new();
    let mut glob = false;
    let mut substitutions = Vec::new();
    let mut parts = vec![node];
    let mut i = 0;
    while i < parts.len() {
        let part = parts[i];
        i += 1;
        match part.kind() {
            "concatenation" if part == node => {
                let mut cursor = part.walk();
                for child in part.children(&mut cursor) {
                    if !child.is_named() {
                        return Err(format!("{:?} inside a word", child.kind()));
                    }
                    parts.push(child);
                }
            }
            "word" | "number" if part.child_count() == 0 => {
                let raw = text(line, part);
                if raw.contains(['$', '`']) {
                    return Err(format!("{raw:?} holds an expansion"));
                }
                glob |= unescape_unquoted(raw, &mut value);
                shape.push_str(raw);
            }
            "raw_string" => {
                let raw = text(line, part);
                value.push_str(&raw[1..raw.len() - 1]);
                shape.push('x');
            }
            "string" => {
                // the grammar leaves some literal text in no content node: blanks
                // before the closing quote are inside its token (`" "` is `"` and
                // ` "`), and text may lie between children; both are the string's
                // content, else `" "` would read as ""
                let mut at = part.start_byte();
                let mut cursor = part.walk();
                for child in part.children(&mut cursor) {
                    let literal = |raw: &str, value: &mut String| {
                        if raw.contains(['$', '`']) {
                            return Err(format!("{:?} holds an expansion", text(line, part)));
                        }
                        unescape_double(raw, value);
                        Ok(())
                    };
                    literal(&line[at..child.start_byte()], &mut value)?;
                    at = child.end_byte();
                    match child.kind() {
                        "\"" if child.start_byte() == part.start_byte() => {
                            let raw = text(line, child);
                            literal(raw.strip_prefix('"').unwrap_or(raw), &mut value)?;
                        }
                        "\"" => {
                            let raw = text(line, child);
                            literal(raw.strip_suffix('"').unwrap_or(raw), &mut value)?;
                        }
                        "string_content" => unescape_double(text(line, child), &mut value),
                        "command_substitution" => {
                            // inside quotes the grammar starts the node at the blanks
                            // before `$(`: they are the string's text
                            let raw = text(line, child);
                            value.push_str(&raw[..raw.len() - raw.trim_start().len()]);
                            substitutions.push(substitution(line, child)?);
                            value.push(UNKNOWN);
                        }
                        other => return Err(expansion_name(other)),
                    }
                }
                shape.push('x');
            }
            "command_substitution" | "process_substitution" => {
                substitutions.push(substitution(line, part)?);
                value.push(UNKNOWN);
                shape.push('x');
            }
            other => return Err(expansion_name(other)),
        }
    }
    if brace_expansion(&shape) {
        return Err(format!("{:?} is a brace expansion", text(line, node)));
    }
    Ok(Word {
        value,
        glob,
        substitutions,
    })
}

/// The command line inside a substitution: `$(…)`, `<(…)`, `>(…)`, or backticks
/// holding no backslash (inside them a backslash is read twice).
fn substitution(line: &str, node: Node<'_>) -> Result<String, String> {
    // inside double quotes the node starts at the blanks before `$(` (the grammar's
    // token holds them): without them, `" $(date)"` ran `(date`
    let raw = text(line, node).trim_start();
    let inner = if let Some(rest) = raw.strip_prefix('`') {
        let inner = rest.strip_suffix('`').ok_or("an unclosed backtick")?;
        if inner.contains('\\') {
            return Err("a backslash inside backticks".to_owned());
        }
        inner
    } else {
        raw.get(2..raw.len().saturating_sub(1))
            .filter(|_| raw.len() >= 3 && raw.ends_with(')'))
            .ok_or_else(|| expansion_name(node.kind()))?
    };
    Ok(inner.to_owned())
}

fn expansion_name(kind: &str) -> String {
    match kind {
        "simple_expansion" | "expansion" => "a parameter expansion".to_owned(),
        "command_substitution" => "a command substitution".to_owned(),
        "process_substitution" => "a process substitution".to_owned(),
        "arithmetic_expansion" => "an arithmetic expansion".to_owned(),
        "ansi_c_string" => "$'…' quoting".to_owned(),
        "translated_string" => "$\"…\" quoting".to_owned(),
        "brace_expression" => "a brace expansion".to_owned(),
        other => format!("a {other} in a word"),
    }
}

/// Removes quoting backslashes from unquoted text (`r\m` is `rm`, `\<newline>`
/// vanishes); answers whether an unescaped glob character is left.
fn unescape_unquoted(raw: &str, out: &mut String) -> bool {
    let mut glob = false;
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('\n') | None => {}
                Some(next) => out.push(next),
            },
            '*' | '?' | '[' => {
                glob = true;
                out.push(c);
            }
            c => out.push(c),
        }
    }
    glob
}

/// Inside double quotes a backslash quotes only `$`, `` ` ``, `"`, `\` and a newline.
fn unescape_double(raw: &str, out: &mut String) {
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\'
            && let Some(&next) = chars.peek()
            && matches!(next, '$' | '`' | '"' | '\\' | '\n')
        {
            chars.next();
            if next != '\n' {
                out.push(next);
            }
            continue;
        }
        out.push(c);
    }
}

/// An unquoted `{…}` holding a `,` or `..`: bash expands it into several words.
fn brace_expansion(shape: &str) -> bool {
    let Some(open) = shape.find('{') else {
        return false;
    };
    let rest = &shape[open + 1..];
    rest.find('}')
        .is_some_and(|close| rest[..close].contains(',') || rest[..close].contains(".."))
        || rest.contains('{')
}
