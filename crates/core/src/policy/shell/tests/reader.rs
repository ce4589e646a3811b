//! The reader: commands in order, words as bash reads them, and what is opaque.

use crate::policy::shell::*;

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
fn a_substitution_in_an_argument_is_a_command_of_the_line() {
    use crate::policy::shell::CommandOrigin;
    for (line, inner) in [
        ("echo $(rm -rf /)", "rm -rf /"),
        ("echo `id`", "id"),
        ("bash -c 'echo $(id)'", "id"),
        ("diff <(git log) x", "git log"),
        ("echo \"$(git log)\"", "git log"),
    ] {
        let read = parse_command_line(line);
        assert!(read.opaque().is_none(), "{line:?}: {read:?}");
        assert!(
            read.commands
                .iter()
                .any(|c| c.origin == CommandOrigin::Substitution && c.text == inner),
            "{line:?}: {read:?}"
        );
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
        ("LC_ALL=C git status", &["LC_ALL=C", "git", "status"]),
        ("git rev-parse @{u}", &["git", "rev-parse", "@{u}"]),
        ("ls *.rs ~/x", &["ls", "*.rs", "~/x"]),
    ];
    for (line, want) in table {
        assert_eq!(words(line), [want.to_vec()], "{line:?}");
    }
    // what a command runs is a command of the line too
    assert_eq!(
        words("find . -exec rm {} \\;"),
        [
            vec!["find", ".", "-exec", "rm", "{}", ";"],
            vec!["rm", "{}"]
        ]
    );
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
        "$(echo rm) -rf /",
        "X=$(id) ls",
        "ls > $(echo x)",
        "echo `i\\d`",
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
        "if true; then rm x; fi",
        "for f in a; do rm $f; done",
        "[[ -f x ]] && rm x",
        "echo 'unclosed; rm -rf /",
        "echo \"unclosed",
        "a &&",
        "git\rstatus",
        "bash -c",
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

#[test]
fn deep_nesting_costs_no_stack() {
    let deep = format!("{}ls{}", "(".repeat(20_000), ")".repeat(20_000));
    assert!(opaque(&deep));
    let long_list = "true && ".repeat(50_000) + "true";
    assert_eq!(parse_command_line(&long_list).commands.len(), 50_001);
    let nested = "bash -c ".repeat(50) + "ls";
    assert!(!parse_command_line(&nested).commands.is_empty());
}
