//! The size and nesting limits, checked before any YAML parser sees a text.

use super::{MAX_NESTING, MAX_POLICY_BYTES, PolicyFileError};

/// Refuses a text past the size or nesting limits before any YAML parser sees it.
/// The nesting is over-estimated, never under: flow brackets outside quotes, comments
/// and block scalars, plus the open block levels (distinct indentations, and the
/// `- `, `? ` indicators that open a level within a line).
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
    // the indentation of the line that opened a block scalar (`key: |`): lines
    // indented deeper are its text, which opens no level whatever it holds
    let mut scalar_under: Option<usize> = None;
    for (n, line) in text.lines().enumerate() {
        let mut chars = line.char_indices().peekable();
        let mut inline_levels = 0;
        let indent = line.len() - line.trim_start_matches([' ', '\t']).len();
        if let Some(base) = scalar_under {
            if indent > base || line.trim().is_empty() {
                continue;
            }
            scalar_under = None;
        }
        if quote.is_none() && flow == 0 {
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
        // whether a token may begin here: a quote opens a string only there, and in
        // block context a bracket opens a flow collection only there (elsewhere both
        // are text of a plain scalar, as `to_yaml` prints `git {x}` or `it's`)
        let mut token_start = true;
        // inside a tag or an anchor (`!t`, `&a`): a node follows it, so brackets count
        let mut property = false;
        // where the line's content ends (before a comment), outside quotes
        let mut end = line.len();
        while let Some((at, c)) = chars.next() {
            match quote {
                Some('"') if c == '\\' => {
                    chars.next();
                }
                // `''` is a quote inside a single-quoted scalar, which goes on
                Some('\'') if c == '\'' && chars.peek().is_some_and(|(_, n)| *n == '\'') => {
                    chars.next();
                }
                Some(q) if c == q => {
                    quote = None;
                    token_start = false;
                }
                Some(_) => {}
                None => match c {
                    '#' if prev == ' ' || prev == '\t' => {
                        end = at;
                        break;
                    }
                    // content: a `- `, `? ` or `: ` after it opens no block level
                    '"' | '\'' if token_start => {
                        quote = Some(c);
                        at_start = false;
                    }
                    '[' | '{' if flow > 0 || token_start || property => {
                        flow += 1;
                        token_start = true;
                        at_start = false;
                        // checked as it opens: the line may close it again
                        if flow + indents.len() + inline_levels > MAX_NESTING {
                            return Some(n + 1);
                        }
                    }
                    ']' | '}' if flow > 0 => {
                        flow -= 1;
                        token_start = false;
                    }
                    '-' | '?' | ':' if at_start && chars.peek().is_none_or(|(_, n)| *n == ' ') => {
                        inline_levels += 1;
                        token_start = true;
                    }
                    // a value follows `: ` (and in flow context any `:` or `,`)
                    ':' if flow > 0
                        || chars.peek().is_none_or(|(_, n)| *n == ' ' || *n == '\t') =>
                    {
                        at_start = false;
                        token_start = true;
                    }
                    ',' if flow > 0 => token_start = true,
                    '!' | '&' if token_start => {
                        at_start = false;
                        token_start = false;
                        property = true;
                    }
                    ' ' | '\t' => {
                        if property {
                            property = false;
                            token_start = true;
                        }
                    }
                    _ => {
                        at_start = false;
                        token_start = false;
                    }
                },
            }
            prev = c;
        }
        if flow + indents.len() + inline_levels > MAX_NESTING {
            return Some(n + 1);
        }
        if quote.is_none() && flow == 0 {
            scalar_under = block_scalar_base(&line[..end]);
        }
    }
    None
}

/// If a line (without its comment) ends in a block scalar's header (`|` or `>` with
/// optional chomping and indentation indicators, as the whole value of a key or of a
/// sequence entry, or alone: `key: |-`, `- >`, `|2`), the column of the node holding
/// the scalar: lines indented deeper are its text. That is the key's column (after
/// the line's leading `- ` and `? ` indicators), or the last indicator's when the
/// entry itself is the scalar; never less than YAML's, so structure is never taken
/// for text. A header this does not recognise (a tag or an anchor before it) leaves
/// its text counted, which over-estimates.
fn block_scalar_base(line: &str) -> Option<usize> {
    let value = line
        .trim_end()
        .trim_end_matches(['-', '+', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9']);
    let before = value.strip_suffix(['|', '>'])?;
    let spaced = before.trim_end_matches([' ', '\t']);
    if spaced.len() == before.len() && !before.is_empty() {
        // `a|`: part of a plain scalar, not a header
        return None;
    }
    let head = spaced.trim_start();
    let header = head.is_empty() || head.ends_with(':') || head == "-" || head.ends_with(" -");
    if !header {
        return None;
    }
    let mut rest = line.trim_start_matches(' ');
    let mut base = line.len() - rest.len();
    while let Some(after) = rest.strip_prefix("- ").or_else(|| rest.strip_prefix("? ")) {
        let next = after.trim_start_matches(' ');
        if next.starts_with(['|', '>']) {
            // the entry itself is the scalar: its text is indented past the indicator
            break;
        }
        base += rest.len() - next.len();
        rest = next;
    }
    Some(base)
}

#[cfg(test)]
mod tests {
    use super::{MAX_NESTING, nesting_depth};

    /// `''` inside a single-quoted scalar is a quote that does not end it: the
    /// brackets after it are text (a fuzz finding: `to_yaml` prints `it's: [x` as
    /// `'it''s: [x'`, and the scan took the `[` for a flow collection left open,
    /// counting every later `{` of a plain entry as a level).
    #[test]
    fn a_doubled_single_quote_stays_inside_the_scalar() {
        let braces = "{".repeat(MAX_NESTING + 8);
        let text = format!("allowed:\n- 'it''s: [x'\n- cargo t{braces}\n");
        assert_eq!(nesting_depth(&text), None);
        let policy = format!(
            "team: t\nauto_run_controls:\n  allowed:\n  - \"it's: [x\"\n  - cargo t{braces}\n"
        );
        let parsed = crate::policy_file::parse_team_policy("t.yaml", &policy).unwrap();
        let printed = crate::policy_file::to_yaml(&parsed);
        assert_eq!(nesting_depth(&printed), None, "{printed}");
        // real nesting after such a scalar is still counted
        let deep = "[".repeat(MAX_NESTING + 1);
        assert_eq!(nesting_depth(&format!("a: 'it''s'\nb: {deep}\n")), Some(2));
        assert_eq!(nesting_depth(&format!("a: ['it''s', {deep}\n")), Some(1));
    }

    /// A document written as JSON on one line (valid YAML) is as deep as its
    /// brackets: each `": "` after a quoted key is no block indicator.
    #[test]
    fn one_line_json_counts_its_brackets_only() {
        let keys: Vec<String> = (0..MAX_NESTING + 8)
            .map(|i| format!("\"k{i}\": 1"))
            .collect();
        let map = format!("{{{}}}", keys.join(", "));
        assert_eq!(nesting_depth(&map), None);
        let list = format!(
            "[{}]",
            vec![r#"{"shell": "x", "expect": "ALLOW"}"#; 40].join(", ")
        );
        assert_eq!(nesting_depth(&list), None);
        let deep = format!(
            "{}{}",
            r#"{"a": "#.repeat(MAX_NESTING + 1),
            "}".repeat(MAX_NESTING + 1)
        );
        assert_eq!(nesting_depth(&deep), Some(1));
        // block indicators at the start of a line still count
        let block = format!("{}x\n", "- ".repeat(MAX_NESTING + 1));
        assert_eq!(nesting_depth(&block), Some(1));
    }
}
