//! The size and nesting limits, checked before any YAML parser sees a text.

use super::{MAX_NESTING, MAX_POLICY_BYTES, PolicyFileError};

/// Refuses a text past the size or nesting limits before any YAML parser sees it.
/// The nesting is over-estimated, never under: flow brackets outside quotes and
/// comments, plus the open block levels (distinct indentations, and the `- `, `? `
/// indicators that open a level within a line).
pub(super) fn check_limits(file: &str, text: &str) -> Result<(), Vec<PolicyFileError>> {
    let error = |line: usize, message: String| {
        vec![PolicyFileError {
            file: file.to_owned(),
            line,
            message,
        }]
    };
    if text.len() > MAX_POLICY_BYTES {
        return Err(error(
            0,
            format!(
                "the text is {} bytes, more than the limit of {MAX_POLICY_BYTES}: split the policy",
                text.len()
            ),
        ));
    }
    match nesting_depth(text) {
        Some(line) => Err(error(
            line,
            format!("nested more than {MAX_NESTING} levels deep: a policy needs no more than 5"),
        )),
        None => Ok(()),
    }
}

/// The 1-based line where nesting first goes past [`MAX_NESTING`], if it does.
pub fn nesting_depth(text: &str) -> Option<usize> {
    let mut flow = 0usize;
    let mut quote: Option<char> = None;
    // indentations of the open block levels
    let mut indents: Vec<usize> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let mut chars = line.char_indices().peekable();
        let mut inline_levels = 0;
        if quote.is_none() && flow == 0 {
            let indent = line.len() - line.trim_start_matches([' ', '\t']).len();
            let rest = &line[indent..];
            if !rest.is_empty() && !rest.starts_with('#') {
                while indents.last().is_some_and(|&top| top >= indent) {
                    indents.pop();
                }
                indents.push(indent);
            }
        }
        let mut prev = ' ';
        let mut at_start = true;
        while let Some((_, c)) = chars.next() {
            match quote {
                Some('"') if c == '\\' => {
                    chars.next();
                }
                Some(q) if c == q => quote = None,
                Some(_) => {}
                None => match c {
                    '#' if prev == ' ' || prev == '\t' => break,
                    '"' | '\'' => quote = Some(c),
                    '[' | '{' => {
                        flow += 1;
                        // checked as it opens: the line may close it again
                        if flow + indents.len() + inline_levels > MAX_NESTING {
                            return Some(n + 1);
                        }
                    }
                    ']' | '}' => flow = flow.saturating_sub(1),
                    '-' | '?' | ':' if at_start && chars.peek().is_none_or(|(_, n)| *n == ' ') => {
                        inline_levels += 1
                    }
                    ' ' | '\t' => {}
                    _ => at_start = false,
                },
            }
            prev = c;
        }
        if flow + indents.len() + inline_levels > MAX_NESTING {
            return Some(n + 1);
        }
    }
    None
}
