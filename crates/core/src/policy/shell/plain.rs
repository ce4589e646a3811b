//! The fast path of the reader: a line made only of plain words, quotes without
//! expansions, `&&`, `||`, `|`, `;`, descriptor redirections and a trailing comment
//! is split without the grammar. Anything else answers `None` and is read by
//! tree-sitter; a unit proptest holds the two to the same result on every line this
//! path accepts.

/// One simple command of a plain line: its text as written and its words as bash
/// reads them.
pub(super) struct PlainCommand<'a> {
    pub text: &'a str,
    pub words: Vec<String>,
}

/// Words that bash (or the grammar) reads as syntax in command position: reserved
/// words and the declaration builtins. A line holding one there is left to the
/// grammar.
const GRAMMAR_WORDS: [&str; 25] = [
    "if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until", "do",
    "done", "function", "time", "coproc", "in", "!", "export", "declare", "typeset", "local",
    "readonly", "unset", "unsetenv",
];

/// Unquoted bytes that are literal to bash wherever they stand in a word (no glob,
/// brace, tilde, history, comment or expansion meaning).
fn literal(b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || matches!(
            b,
            b'_' | b'-' | b'.' | b'/' | b':' | b',' | b'@' | b'+' | b'='
        )
}

/// Splits a plain line into its simple commands, or `None` when the line holds
/// anything this path does not prove plain (the grammar then reads it).
pub(super) fn split(line: &str) -> Option<Vec<PlainCommand<'_>>> {
    // a comment ends at a newline, and a quote in one can swallow the next line: lines
    // of several lines are the grammar's
    if line.contains('\n') {
        return None;
    }
    let b = line.as_bytes();
    let mut commands = Vec::new();
    let mut words: Vec<String> = Vec::new();
    // the first word's extent, and the command's
    let mut start = 0;
    let mut command_end = 0;
    let mut end = 0;
    let mut i = 0;
    // after a separator a command must follow (`a &&` and `;;` are the grammar's)
    let mut pending_separator = false;
    loop {
        while i < b.len() && matches!(b[i], b' ' | b'\t') {
            i += 1;
        }
        if i == b.len() {
            break;
        }
        let separator = match (b[i], b.get(i + 1)) {
            (b'&', Some(b'&')) | (b'|', Some(b'|')) => 2,
            (b'|', Some(b'&')) | (b';', Some(b';')) | (b';', Some(b'&')) => return None,
            (b'|' | b';', _) => 1,
            (b'&', _) => return None,
            _ => 0,
        };
        if separator > 0 {
            if words.is_empty() {
                return None;
            }
            commands.push(command(
                line,
                start..command_end,
                end,
                std::mem::take(&mut words),
            )?);
            pending_separator = true;
            i += separator;
            continue;
        }
        if b[i] == b'#' {
            // a comment runs to the end of the line (the line holds no newline)
            break;
        }
        if let Some(after) = redirect(b, i) {
            if words.is_empty() {
                // a redirection before the command word: leave it to the grammar
                return None;
            }
            i = after;
            end = after;
            continue;
        }
        let (word, after) = word(line, i)?;
        if words.is_empty() {
            start = i;
            command_end = after;
        }
        words.push(word);
        end = after;
        i = after;
        pending_separator = false;
    }
    if pending_separator {
        return None;
    }
    if !words.is_empty() {
        commands.push(command(line, start..command_end, end, words)?);
    }
    if commands.is_empty() {
        return None;
    }
    Some(commands)
}

fn command(
    line: &str,
    first_word: std::ops::Range<usize>,
    end: usize,
    words: Vec<String>,
) -> Option<PlainCommand<'_>> {
    let first = words.first()?;
    let start = first_word.start;
    let raw = &line[first_word];
    // the command word must be unquoted literal text (the grammar reads a keyword
    // glued to a quote, `function'x'`, as syntax), not an assignment or a word the
    // grammar reads as syntax
    // (and names a program: a command word of digits or signs is the grammar's too)
    if raw != first
        || !first.starts_with(|c: char| c.is_ascii_alphabetic() || matches!(c, '_' | '.' | '/'))
        || !first
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.' | b'/' | b'+'))
        || first.contains('=')
        || GRAMMAR_WORDS.contains(&first.as_str())
    {
        return None;
    }
    Some(PlainCommand {
        text: &line[start..end],
        words,
    })
}

/// One word from `i`: literal bytes, single quotes, and double quotes holding no
/// `$`, `` ` ``, `\` or `!`. Answers the word and where it ends.
fn word(line: &str, mut i: usize) -> Option<(String, usize)> {
    let b = line.as_bytes();
    let mut value = String::new();
    while i < b.len() {
        match b[i] {
            b' ' | b'\t' | b';' | b'&' | b'|' => break,
            b'\'' => {
                let close = i + 1 + line[i + 1..].find('\'')?;
                value.push_str(&line[i + 1..close]);
                i = close + 1;
            }
            b'"' => {
                let close = i + 1 + line[i + 1..].find('"')?;
                let inner = &line[i + 1..close];
                if inner.contains(['$', '`', '\\', '!']) {
                    return None;
                }
                value.push_str(inner);
                i = close + 1;
            }
            c if literal(c) => {
                value.push(c as char);
                i += 1;
            }
            _ => return None,
        }
    }
    Some((value, i))
}

/// A redirection that cannot write outside the working directory, at a word's start:
/// `N>&M` (a descriptor) or `N>/dev/null`, `N>>/dev/null`, with or without a blank
/// before the path. Answers where it ends.
fn redirect(b: &[u8], mut i: usize) -> Option<usize> {
    if b[i].is_ascii_digit() {
        i += 1;
    }
    if b.get(i) != Some(&b'>') {
        return None;
    }
    i += 1;
    let end = if b.get(i) == Some(&b'&') {
        let digits = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 {
            return None;
        }
        i + 1 + digits
    } else {
        if b.get(i) == Some(&b'>') {
            i += 1;
        }
        while b.get(i) == Some(&b' ') {
            i += 1;
        }
        let path = b"/dev/null";
        if !b[i..].starts_with(path) {
            return None;
        }
        i + path.len()
    };
    // the redirection must end where a word would
    match b.get(end) {
        None | Some(b' ' | b'\t') => Some(end),
        _ => None,
    }
}
