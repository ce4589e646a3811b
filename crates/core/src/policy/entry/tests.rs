//! Unit tests of names and entries (seed 001's `ihe`, `vOh`, `d4c`, `f4c`, `h4c`).

use super::*;

#[test]
fn validate_name_table() {
    let long = "x".repeat(256);
    let too_long = "x".repeat(257);
    let table: &[(&str, Result<(), Rule>)] = &[
        ("github", Ok(())),
        ("*", Ok(())),
        ("", Err(Rule::Empty)),
        (&long, Ok(())),
        (&too_long, Err(Rule::TooLong)),
        ("   ", Err(Rule::Whitespace)),
        ("\t", Err(Rule::Whitespace)),
        (" a ", Ok(())),
        ("a:b", Err(Rule::ReservedCharacter)),
        ("a*", Err(Rule::ReservedCharacter)),
        ("**", Err(Rule::ReservedCharacter)),
        (":", Err(Rule::ReservedCharacter)),
        ("é", Ok(())),
    ];
    for (name, want) in table {
        assert_eq!(validate_name(name), *want, "{name:?}");
    }
    // 256 UTF-16 code units (JavaScript's `.length`), not bytes or characters
    assert_eq!(validate_name(&"é".repeat(256)), Ok(()));
    assert_eq!(validate_name(&"é".repeat(257)), Err(Rule::TooLong));
    let units: &[(String, Result<(), Rule>)] = &[
        (format!("{}😀", "a".repeat(254)), Ok(())),
        (format!("{}😀", "a".repeat(255)), Err(Rule::TooLong)),
        ("😀".repeat(128), Ok(())),
        (format!("{}a", "😀".repeat(128)), Err(Rule::TooLong)),
        (format!("{}𝄞", "é".repeat(254)), Ok(())),
        (format!("{}𝄞", "é".repeat(255)), Err(Rule::TooLong)),
        ("中".repeat(256), Ok(())),
        ("中".repeat(257), Err(Rule::TooLong)),
    ];
    for (name, want) in units {
        assert_eq!(
            validate_name(name),
            *want,
            "{} units",
            name.encode_utf16().count()
        );
    }
    // JavaScript's trim: U+FEFF is whitespace, U+0085 is not
    let blanks: &[(&str, Result<(), Rule>)] = &[
        ("\u{feff}", Err(Rule::Whitespace)),
        (" \u{feff}\u{a0}\u{3000}\u{2028}", Err(Rule::Whitespace)),
        ("\u{85}", Ok(())),
        (" \u{85} ", Ok(())),
        ("\u{1c}", Ok(())),
    ];
    for (name, want) in blanks {
        assert_eq!(validate_name(name), *want, "{name:?}");
    }
    assert_eq!(
        Entry::parse("\u{feff}:x"),
        Err(Rule::Whitespace),
        "entry sides trim alike"
    );
    assert_eq!(validate_call_name("*"), Err(Rule::ReservedCharacter));
}

#[test]
fn format_and_parse_entry_round_trip() {
    assert_eq!(
        format_entry("github", "create_issue"),
        "github:create_issue"
    );
    let table: &[(&str, Result<Entry, Rule>)] = &[
        (
            "github:create_issue",
            Ok(Entry::Pair {
                server: Side::Exact("github".into()),
                tool: Side::Exact("create_issue".into()),
            }),
        ),
        (
            "github:*",
            Ok(Entry::Pair {
                server: Side::Exact("github".into()),
                tool: Side::Any,
            }),
        ),
        (
            "*:search",
            Ok(Entry::Pair {
                server: Side::Any,
                tool: Side::Exact("search".into()),
            }),
        ),
        (
            "*:*",
            Ok(Entry::Pair {
                server: Side::Any,
                tool: Side::Any,
            }),
        ),
        (
            "github:get_*",
            Ok(Entry::Pair {
                server: Side::Exact("github".into()),
                tool: Side::Glob("get_*".into()),
            }),
        ),
        (
            "builtin:Read",
            Ok(Entry::Pair {
                server: Side::Exact("builtin".into()),
                tool: Side::Exact("read_file".into()),
            }),
        ),
        ("@readonly", Ok(Entry::Preset("readonly"))),
        ("@nope", Err(Rule::UnknownPreset)),
        (
            "@acme:deploy",
            Ok(Entry::Pair {
                server: Side::Exact("@acme".into()),
                tool: Side::Exact("deploy".into()),
            }),
        ),
        ("github", Err(Rule::Separator)),
        ("a:b:c", Err(Rule::Separator)),
        (":tool", Err(Rule::Empty)),
        ("server:", Err(Rule::Empty)),
        ("  :tool", Err(Rule::Whitespace)),
        ("", Err(Rule::Separator)),
    ];
    for (raw, want) in table {
        assert_eq!(Entry::parse(raw), *want, "{raw:?}");
    }
    assert_eq!(
        Entry::parse(&format!("s:{}", "x".repeat(257))),
        Err(Rule::TooLong)
    );
    assert!(Entry::parse(&format!("s:{}", "x".repeat(256))).is_ok());
}

#[test]
fn matches_entry_every_form() {
    let m = |e: &str, s: &str, t: &str| Entry::parse(e).unwrap().matches(s, t);
    assert!(m("*:*", "any", "thing"));
    assert!(m("*:search", "brave", "search"));
    assert!(!m("*:search", "brave", "searchx"));
    assert!(m("github:*", "github", "x"));
    assert!(!m("github:*", "gitlab", "x"));
    assert!(m("github:create_issue", "github", "create_issue"));
    assert!(
        !m("github:create_issue", "GitHub", "create_issue"),
        "case-sensitive"
    );
    assert!(!m("github:create_issue", "github", "Create_issue"));
    assert!(m("github:get_*", "github", "get_issue"));
    assert!(m("github:get_*", "github", "get_"));
    assert!(!m("github:get_*", "github", "list_issues"));
    assert!(m("git*:*_pr", "gitlab", "merge_pr"));
    assert!(m("@readonly", "builtin", "read_file"));
    assert!(!m("@readonly", "builtin", "write_file"));
    assert!(!m("@readonly", "fs", "read_file"));
}

#[test]
fn globs() {
    let table: &[(&str, &str, bool)] = &[
        ("a*", "a", true),
        ("a*", "abc", true),
        ("*c", "abc", true),
        ("a*c", "ac", true),
        ("a*c", "abbc", true),
        ("a*c", "abcd", false),
        ("a*b*c", "aXbYc", true),
        ("a*b*c", "acb", false),
        ("*", "", true),
        ("ab*ba", "aba", false),
        ("[x]*", "[x]y", true),
    ];
    for (p, n, want) in table {
        assert_eq!(glob_match(p, n), *want, "{p} ~ {n}");
    }
}

#[test]
fn split_internal_name_table() {
    let table: &[(&str, &str, (&str, &str))] = &[
        ("mcp_github_create_issue", "fb", ("github", "create_issue")),
        ("mcp_github", "fb", ("fb", "mcp_github")),
        ("mcp_", "fb", ("fb", "mcp_")),
        ("mcp_a_", "fb", ("a", "")),
        ("read_file", "fs", ("fs", "read_file")),
        (
            "mcp__github__create_issue",
            "fb",
            ("github", "create_issue"),
        ),
        (
            "mcp__github__create__issue",
            "fb",
            ("github", "create__issue"),
        ),
        ("mcp__github", "fb", ("", "github")),
        ("MCP_github_x", "fb", ("fb", "MCP_github_x")),
    ];
    for (name, fallback, want) in table {
        assert_eq!(split_internal_name(name, fallback), *want, "{name}");
    }
}
