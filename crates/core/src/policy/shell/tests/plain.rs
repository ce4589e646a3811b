//! The plain fast path: the same result as the grammar, on tables and on generated
//! lines.

use crate::policy::shell::*;

/// Lines agents commonly run are read without the grammar, to the same result.
#[test]
fn plain_lines_take_the_fast_path() {
    let table = [
        "git status",
        "cargo test --lib 2>&1",
        "ls -la >/dev/null",
        "bash -c 'git push origin main'",
        "env FOO=bar git push",
        "grep -rn 'fn main' src",
        "npm test -- --runInBand --silent; ls -la src | wc -l && echo \"done\" # ok",
    ];
    for line in table {
        assert!(
            crate::policy::shell::plain::split(line).is_some(),
            "{line:?}"
        );
        assert_eq!(
            crate::policy::shell::read::read_line(line, true),
            crate::policy::shell::read::read_line(line, false),
            "{line:?}"
        );
    }
}

/// tree-sitter-bash reads a redirection after `a | b && c` as applying to the whole
/// list (so the grammar path finds the line opaque); bash applies it to `c` alone, as
/// the fast path does.
#[test]
fn a_descriptor_redirection_applies_to_its_own_command() {
    let line = "ls -la src | wc -l && cargo build --release 2>&1 | tail -n 20";
    let read = parse_command_line(line);
    assert_eq!(read.opaque(), None, "{read:?}");
    let texts: Vec<_> = read.commands.iter().map(|c| c.text.as_str()).collect();
    assert_eq!(
        texts,
        [
            "ls -la src",
            "wc -l",
            "cargo build --release 2>&1",
            "tail -n 20"
        ]
    );
    // the grammar hangs the redirection on the list; the reader gives it to its
    // command, as bash does, and agrees with the fast path
    assert_eq!(crate::policy::shell::read::read_line(line, false), read);
}

/// Blanks inside double quotes are the word's text on both paths: tree-sitter-bash
/// leaves a string of blanks, and the blanks beside a substitution, in no child node,
/// and the grammar path once read `" "` as an empty word.
#[test]
fn blanks_in_double_quotes_are_read_on_both_paths() {
    // (line, the words of its first command)
    let table: &[(&str, &[&str])] = &[
        ("env \" \"", &["env", " "]),
        ("echo \"  \" x", &["echo", "  ", "x"]),
        ("echo \"\t\"", &["echo", "\t"]),
        ("echo \" a \"", &["echo", " a "]),
        ("rm \" \" -rf", &["rm", " ", "-rf"]),
    ];
    for (line, words) in table {
        for fast in [true, false] {
            let read = crate::policy::shell::read::read_line(line, fast);
            assert_eq!(read.opaque(), None, "{line:?} (fast path: {fast})");
            assert_eq!(
                read.commands[0].words, *words,
                "{line:?} (fast path: {fast})"
            );
        }
    }
    // a redirection's text inside quotes is a word's text on both paths (found by
    // the proptest below, whose reference dropped it from inside the quotes)
    let line = "git \" git 2>&1  \"";
    let (fast, grammar) = (
        crate::policy::shell::read::read_line(line, true),
        crate::policy::shell::read::read_line(line, false),
    );
    assert_eq!(fast, grammar, "{line:?}");
    assert_eq!(fast.commands[0].words, ["git", " git 2>&1  "], "{line:?}");
    // the blanks before a substitution are the word's too, and the substitution's
    // command is read whole (the grammar's node starts at the blanks)
    for line in ["echo \" $(git status) \"", "echo \"a  $(git status)\""] {
        let read = parse_command_line(line);
        assert_eq!(read.opaque(), None, "{line:?}: {read:?}");
        let words: Vec<_> = read.commands.iter().map(|c| c.words.clone()).collect();
        assert!(
            words.contains(&vec!["git".to_owned(), "status".to_owned()]),
            "{line:?}: {words:?}"
        );
    }
    let read = parse_command_line("echo \" $(date) \"");
    assert_eq!(
        read.commands[0].words[1],
        format!(" {} ", crate::policy::shell::UNKNOWN)
    );
}

mod plain_agrees_with_the_grammar {
    use crate::policy::shell::{CommandLine, plain, read::read_line};
    use proptest::prelude::*;

    const PIECES: &[&str] = &[
        "git",
        "push",
        "status",
        "rm",
        "-rf",
        "x",
        "a=b",
        "--x=y",
        "1",
        "2",
        "/usr/bin/rm",
        ".",
        "%",
        "@a",
        "+",
        ",",
        ":",
        "bash",
        "sh",
        "-c",
        "env",
        "sudo",
        "find",
        "-exec",
        "-delete",
        "xargs",
        "eval",
        "if",
        "then",
        "time",
        "in",
        "do",
        "done",
        "function",
        "export",
        "declare",
        "local",
        "unset",
        "readonly",
        "typeset",
        "let",
        "select",
        "until",
        "case",
        "esac",
        "elif",
        "coproc",
        "[[",
        "]]",
        "test",
        "[",
        "]",
        "'a b'",
        "'git push'",
        "\"x y\"",
        "''",
        "\"\"",
        "'rm -rf /'",
        "\"$x\"",
        "'a;b'",
        "\"a|b\"",
        "'é'",
        "\"ü\"",
        "\"a'b\"",
        "'a\"b'",
        "$x",
        "~",
        "*",
        "?",
        "[a]",
        "{a,b}",
        "{",
        "}",
        "#",
        "a#b",
        "\\",
        "\\ ",
        "(",
        ")",
        "<",
        ">",
        "2>",
        ">&",
        "&1",
        "=x",
        "x=",
        "!x",
        "!",
        "é",
        "'",
        "\"",
        "-",
        "--",
        "-C",
        "--no-pager",
        "-c",
        "alias.x=y",
        "%1",
        "/dev/null",
    ];
    const SEPARATORS: &[&str] = &[
        " ", "  ", "\t", " && ", "&&", " || ", "||", "|", " | ", "; ", ";", " & ", "&", " # c ",
        "\n", ";;", "|&",
    ];
    /// Redirections the fast path drops (they cannot write outside the working
    /// directory); the reference is the grammar's reading of the line without them.
    const REDIRECTS: &[&str] = &[
        " 2>&1 ",
        " >/dev/null ",
        " 2> /dev/null ",
        " >>/dev/null ",
        " >&2 ",
        " 1>&2",
    ];

    fn word() -> impl Strategy<Value = String> {
        prop::collection::vec(prop::sample::select(PIECES), 1..4).prop_map(|p| p.concat())
    }

    /// A line, and the same line without its redirections.
    fn line() -> impl Strategy<Value = (String, String)> {
        let part = (
            word(),
            prop::option::weighted(0.2, prop::sample::select(REDIRECTS)),
            prop::sample::select(SEPARATORS),
        );
        (prop::collection::vec(part, 1..8), prop::bool::ANY).prop_map(|(parts, trailing)| {
            let (mut with, mut without) = (String::new(), String::new());
            let n = parts.len();
            for (i, (w, redirect, sep)) in parts.into_iter().enumerate() {
                with.push_str(&w);
                without.push_str(&w);
                if let Some(r) = redirect {
                    with.push_str(r);
                    without.push(' ');
                }
                if i + 1 < n || trailing {
                    with.push_str(sep);
                    without.push_str(sep);
                }
            }
            (with, without)
        })
    }

    /// The reading without the texts (a dropped redirection shortens a text).
    fn words_only(mut line: CommandLine) -> CommandLine {
        for c in &mut line.commands {
            c.text.clear();
        }
        line
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 4096, ..ProptestConfig::default() })]

        /// Wherever the fast path accepts a line, it reads it as the grammar reads it:
        /// exactly, when the grammar can read the line; else as the grammar reads the
        /// line without its redirections to descriptors or `/dev/null`.
        #[test]
        fn on_every_line_it_accepts((with, without) in line()) {
            if plain::split(&with).is_some() {
                let fast = read_line(&with, true);
                let grammar = read_line(&with, false);
                // exact agreement settles it (a redirection's text inside quotes is
                // no redirection, so the line without it is no reference then)
                if fast == grammar || grammar.opaque().is_none() || with == without {
                    prop_assert_eq!(fast, grammar, "{:?}", with);
                } else {
                    prop_assert_eq!(
                        words_only(fast),
                        words_only(read_line(&without, false)),
                        "{:?} against {:?}", with, without
                    );
                }
            }
        }
    }
}
