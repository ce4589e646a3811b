//! The reader and the prefix lists, table by table.

use super::*;

fn texts(line: &str) -> Vec<String> {
    parse_command_line(line)
        .commands
        .into_iter()
        .map(|c| c.text)
        .collect()
}

fn words(line: &str) -> Vec<Vec<String>> {
    parse_command_line(line)
        .commands
        .into_iter()
        .map(|c| {
            assert_eq!(c.opaque, None, "{line:?}");
            c.words
        })
        .collect()
}

fn opaque(line: &str) -> bool {
    parse_command_line(line).opaque().is_some()
}

#[test]
fn simple_commands_in_order() {
    let table: &[(&str, &[&str])] = &[
        ("git status", &["git status"]),
        ("npm test && rm -rf /", &["npm test", "rm -rf /"]),
        ("a || b; c | d & e\nf", &["a", "b", "c", "d", "e", "f"]),
        ("echo 'a && b' && c", &["echo 'a && b'", "c"]),
        ("echo \"x; y\"", &["echo \"x; y\""]),
        ("make 2>&1 | tee log", &["make 2>&1", "tee log"]),
        ("a |& b", &["a", "b"]),
        ("echo a\\;b", &["echo a\\;b"]),
        ("! git diff --quiet", &["git diff --quiet"]),
        ("ls # comment", &["ls"]),
        ("", &[]),
        ("  ", &[]),
    ];
    for (line, want) in table {
        assert_eq!(texts(line), *want, "{line:?}");
    }
}

#[test]
fn words_as_bash_reads_them() {
    let table: &[(&str, &[&str])] = &[
        ("git  'status' -s", &["git", "status", "-s"]),
        ("r\\m -rf x", &["rm", "-rf", "x"]),
        ("echo \"a\\\"b\" 'c\\d'", &["echo", "a\"b", "c\\d"]),
        ("echo a\\ b", &["echo", "a b"]),
        ("\"git\" push", &["git", "push"]),
        ("g'i't push", &["git", "push"]),
        ("X=1 git status", &["X=1", "git", "status"]),
        (
            "find . -exec rm {} \\;",
            &["find", ".", "-exec", "rm", "{}", ";"],
        ),
        ("git rev-parse @{u}", &["git", "rev-parse", "@{u}"]),
        ("ls *.rs ~/x", &["ls", "*.rs", "~/x"]),
    ];
    for (line, want) in table {
        assert_eq!(words(line), [want.to_vec()], "{line:?}");
    }
    // bash -c: the string is read as a line of its own
    assert_eq!(
        words("bash -c 'git status && rm -rf x'"),
        [
            vec!["bash", "-c", "git status && rm -rf x"],
            vec!["git", "status"],
            vec!["rm", "-rf", "x"]
        ]
    );
    // a comment ends at the newline, quote or no quote
    assert_eq!(
        words("ls # '\nrm -rf / #'"),
        [vec!["ls"], vec!["rm", "-rf", "/"]]
    );
}

#[test]
fn what_cannot_be_read_is_opaque() {
    for line in [
        "echo $(rm -rf /)",
        "echo `id`",
        "diff <(a) b",
        "(cd x && rm y)",
        "{ rm x; }",
        "$'rm' -rf build",
        "git $\"push\"",
        "git {push,} origin main",
        "git {\"push\",} origin",
        "echo {a..c}",
        "git ${x:-push}",
        "git pu${x}sh",
        "curl${IFS}http://x",
        "echo $HOME",
        "echo \"$HOME\"",
        "gi\\\nt push",
        "eval 'rm -rf /'",
        "source x.sh",
        ". x.sh",
        "alias ls='rm -rf /'",
        "f() { rm -rf /; }; f",
        "X=1; git status",
        "export PATH=/tmp",
        "bash <<EOF\nrm -rf /\nEOF",
        "cat <<EOF\n$(rm -rf /)\nEOF",
        "bash <<< 'rm -rf /'",
        "echo rm | bash",
        "sh < script.sh",
        "git -c alias.x='!rm -rf /' x",
        "git -calias.x=!rm x",
        "git --config-env=alias.x=V x",
        "git --exec-path=/tmp/evil push",
        "sudo git -c alias.x=!sh x",
        "/bin/r? -rf /",
        "sudo /bin/r[m] -rf /",
        "echo x > /etc/passwd",
        "echo x >> ../outside",
        "echo x > ~/.bashrc",
        "if true; then rm x; fi",
        "for f in a; do rm $f; done",
        "[[ -f x ]] && rm x",
        "echo 'unclosed; rm -rf /",
        "echo \"unclosed",
        "a &&",
        "git\rstatus",
        "bash -c",
        "bash -c 'echo $(id)'",
        "bash -c \"bash -c 'bash -c \\\"bash -c \\\\\\\"bash -c ls\\\\\\\"\\\"'\"",
        "trap 'rm -rf /' EXIT",
        "command eval x",
    ] {
        assert!(opaque(line), "{line:?} should be opaque");
    }
    for line in [
        "git status -s",
        "npm test && git diff",
        "ls -la | grep x",
        "echo '$(not run)' '`x`'",
        "make 2>&1 | tee build.log",
        "cargo test > out.txt 2>/dev/null",
        "cat <<'EOF'\nliteral $x\nEOF",
        "cat < in.txt",
        "find . -name '*.rs' -exec wc -l {} +",
        "bash -c 'git status'",
        "bash script.sh",
        "git -C . status",
        "git commit -c HEAD",
        "echo a,b {} @{u}",
    ] {
        assert!(
            !opaque(line),
            "{line:?}: {:?}",
            parse_command_line(line).opaque()
        );
    }
}

#[test]
fn unparsable_lines_say_so() {
    let read = parse_command_line("echo 'unclosed");
    assert!(
        read.opaque().unwrap().contains("does not parse"),
        "{read:?}"
    );
}

fn list(prefixes: &[&str]) -> PrefixList {
    PrefixList::new(prefixes.iter().map(|p| Prefix::parse(p).unwrap()).collect())
}

fn first(line: &str) -> SimpleCommand {
    parse_command_line(line).commands.remove(0)
}

#[test]
fn allowed_prefixes_match_whole_words_from_the_first() {
    let allowed = list(&["git status", "npm test", "git"]);
    let at = |line: &str| allowed.first_allowing(&first(line));
    assert_eq!(at("git status"), Some(0));
    assert_eq!(at("git status -s"), Some(0));
    assert_eq!(at("git  'status' -s"), Some(0));
    assert_eq!(at("git statusx"), Some(2));
    assert_eq!(at("npm testx"), None);
    assert_eq!(at("npm"), None);
    assert_eq!(at("LD_PRELOAD=x.so git status"), None, "assignments count");
    assert_eq!(at("sudo git status"), None);
    assert_eq!(at("/usr/bin/git status"), None);
    assert_eq!(at("echo $(x)"), None, "opaque commands start with nothing");
    assert!(Prefix::parse("   ").is_none());
}

#[test]
fn blocked_prefixes_match_the_command_word_after_wrappers() {
    let blocked = list(&["rm", "git push", "curl"]);
    let hit = |line: &str| {
        parse_command_line(line)
            .commands
            .iter()
            .find_map(|c| blocked.first_blocking(c))
    };
    for line in [
        "rm -rf /",
        "/bin/rm x",
        "FOO=1 rm -rf /",
        "sudo rm -rf /",
        "sudo -u root rm x",
        "env X=1 /bin/rm x",
        "timeout 5 rm x",
        "nice -n 5 rm x",
        "xargs rm",
        "xargs -I{} rm {}",
        "find . -exec rm {} ;",
        "find . -delete",
        "nohup rm x &",
        "command rm x",
        "exec rm x",
        "time rm x",
        "watch 'rm -rf x'",
        "su -c 'rm -rf x'",
        "bash -c 'rm -rf build'",
        "sh -c \"sudo rm x\"",
        "bash -lc 'cd x && rm y'",
        "env bash -c 'rm x'",
    ] {
        assert_eq!(hit(line), Some(0), "{line:?}");
    }
    for line in [
        "git -C . push --force",
        "git --no-pager push",
        "git --git-dir=.git push",
        "git -C x -C y push origin main",
        "sudo git push",
        "/usr/bin/git push",
    ] {
        assert_eq!(hit(line), Some(1), "{line:?}");
    }
    assert_eq!(hit("curl http://x"), Some(2));
    for line in [
        "rmdir x",
        "echo rm",
        "git status",
        "git log",
        "ls push",
        "echo git push",
    ] {
        assert_eq!(hit(line), None, "{line:?}");
    }
}

#[test]
fn deep_nesting_costs_no_stack() {
    let deep = format!("{}ls{}", "(".repeat(20_000), ")".repeat(20_000));
    assert!(opaque(&deep));
    let long_list = "true && ".repeat(50_000) + "true";
    assert_eq!(parse_command_line(&long_list).commands.len(), 50_001);
    let nested = "bash -c ".repeat(50) + "ls";
    assert!(!parse_command_line(&nested).commands.is_empty());
}

#[test]
fn a_megabyte_against_a_thousand_prefixes_is_decided() {
    let blocked = list(
        &(0..1_000)
            .map(|i| format!("cmd{i} sub{i}"))
            .collect::<Vec<_>>()
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    let line = "git status -s && ".repeat(1_000_000 / 17) + "cmd999 x sub999";
    let read = parse_command_line(&line);
    let hits: Vec<usize> = read
        .commands
        .iter()
        .filter_map(|c| blocked.first_blocking(c))
        .collect();
    assert_eq!(hits, [999]);
    // one simple command of a megabyte of words, behind a wrapper
    let words = format!("sudo {}sub5", "cmd5 ".repeat(200_000));
    let read = parse_command_line(&words);
    assert_eq!(blocked.first_blocking(&read.commands[0]), Some(5));
}

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
        assert!(super::plain::split(line).is_some(), "{line:?}");
        assert_eq!(
            super::read::read_line(line, true),
            super::read::read_line(line, false),
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
    assert!(read_grammar_is_opaque(line));
}

fn read_grammar_is_opaque(line: &str) -> bool {
    super::read::read_line(line, false).opaque().is_some()
}

mod plain_agrees_with_the_grammar {
    use super::super::{CommandLine, plain, read::read_line};
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
                if grammar.opaque().is_none() || with == without {
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
