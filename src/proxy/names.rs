//! The upstream's tool names and descriptions as the proxy shows them: a name that
//! breaks the name rules or reads as another is hidden, a long description is cut.

/// Whether an upstream server's tool name may be shown and called: seed 001's name
/// rules, and nothing a glob, a log or a person would read otherwise than the
/// upstream meant (`get_a/../delete_repo` under `github:get_*`, `dеlete_repo` with a
/// Cyrillic `е`): no control, invisible or bidirectional character, no `/`, no
/// surrounding whitespace, no Latin letters mixed with Cyrillic or Greek ones. `Err`
/// says which rule it breaks.
pub fn check_upstream_name(name: &str) -> Result<(), &'static str> {
    use crate::policy::Rule;
    match crate::policy::validate_call_name(name) {
        Ok(()) => {}
        Err(Rule::Empty) => return Err("is empty"),
        Err(Rule::TooLong) => return Err("is longer than 256 characters"),
        Err(Rule::Whitespace) => return Err("is only whitespace"),
        Err(_) => return Err("holds `:` or `*`, or is the wildcard"),
    }
    if name.chars().any(char::is_control) {
        return Err("holds a control character");
    }
    if name.contains('/') {
        return Err("holds a `/`");
    }
    if name.trim() != name {
        return Err("starts or ends with whitespace");
    }
    if name.chars().any(is_bidi) {
        return Err("holds a bidirectional control character");
    }
    if name.chars().any(is_invisible) {
        return Err("holds an invisible character");
    }
    if mixes_scripts(name) {
        return Err("mixes Latin letters with Cyrillic or Greek ones");
    }
    Ok(())
}

/// Bidirectional embeddings, overrides, isolates and marks: they reorder what a
/// person reads.
fn is_bidi(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{61c}')
}

/// Characters that take no room: two names that read the same are different names.
fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{ad}' | '\u{34f}' | '\u{115f}' | '\u{1160}' | '\u{17b4}' | '\u{17b5}' | '\u{180b}'..='\u{180f}'
        | '\u{200b}'..='\u{200d}' | '\u{2060}'..='\u{2064}' | '\u{3164}' | '\u{fe00}'..='\u{fe0f}'
        | '\u{feff}' | '\u{ffa0}' | '\u{e0000}'..='\u{e007f}')
}

/// The scripts whose letters pass for Latin ones.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Script {
    Latin,
    Cyrillic,
    Greek,
}

fn script(c: char) -> Option<Script> {
    match c {
        'a'..='z' | 'A'..='Z' | '\u{c0}'..='\u{24f}' | '\u{1e00}'..='\u{1eff}' => {
            Some(Script::Latin)
        }
        '\u{400}'..='\u{52f}'
        | '\u{1c80}'..='\u{1c8f}'
        | '\u{2de0}'..='\u{2dff}'
        | '\u{a640}'..='\u{a69f}' => Some(Script::Cyrillic),
        '\u{370}'..='\u{3ff}' | '\u{1f00}'..='\u{1fff}' => Some(Script::Greek),
        _ => None,
    }
}

/// Whether `name` holds Latin letters and Cyrillic or Greek ones (a name wholly in
/// one script passes).
fn mixes_scripts(name: &str) -> bool {
    let mut seen: Option<Script> = None;
    for s in name.chars().filter_map(script) {
        match seen {
            None => seen = Some(s),
            Some(first) if first != s => return true,
            Some(_) => {}
        }
    }
    false
}

/// A tool description longer than `max` bytes, cut at a character boundary with a
/// marker saying so: an upstream's instructions to the model are bounded.
pub fn cap_description(text: &str, max: usize) -> Option<String> {
    if text.len() <= max {
        return None;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Some(format!(
        "{}… [cut by toolgate: the description is {} bytes, more than the proxy's {max}]",
        &text[..end],
        text.len()
    ))
}

/// The longest tool description the proxy passes on by default.
pub const DEFAULT_MAX_DESCRIPTION_BYTES: usize = 4096;

#[cfg(test)]
mod tests {
    use super::{cap_description, check_upstream_name};

    #[test]
    fn long_descriptions_are_cut_with_a_marker() {
        assert_eq!(cap_description("short", 10), None);
        let cut = cap_description(&"é".repeat(100), 11).unwrap();
        assert!(cut.starts_with("ééééé…"), "{cut}");
        assert!(cut.contains("200 bytes, more than the proxy's 11"), "{cut}");
    }

    /// A lying upstream: names that globs would read as something else, or that seed
    /// 001 refuses, are hidden and refused; honest names pass.
    #[test]
    fn upstream_names_are_checked() {
        let refused = [
            "get_a/../delete_repo",
            "get_a\0",
            "get_issue ",
            " get_issue",
            "get\nissue",
            "get\u{7f}issue",
            "",
            "   ",
            "*",
            "a:b",
            "get_*",
            "dele\u{200b}te_repo",
            "get_issue\u{feff}",
            "get_\u{202e}txt.exe",
            "get_\u{2066}x\u{2069}",
            "get\u{200e}issue",
            "d\u{435}lete_repo",
            "\u{3b1}pi_call",
            "get_\u{ad}issue",
        ];
        for name in refused {
            assert!(check_upstream_name(name).is_err(), "{name:?}");
        }
        assert!(check_upstream_name(&"x".repeat(257)).is_err());
        for name in [
            "get_issue",
            "create-issue",
            "interact",
            "é",
            "get issue",
            "a.b",
            "найти_задачу",
            "λόγος",
            "créer_ticket",
            "获取问题",
        ] {
            assert_eq!(check_upstream_name(name), Ok(()), "{name:?}");
        }
    }
}
