//! The allowed and blocked prefix lists matched against what the reader found.

use crate::policy::shell::*;

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
    assert_eq!(at("git stage x"), Some(2));
    assert_eq!(
        at("git statusx"),
        None,
        "a git subcommand the table does not know is opaque"
    );
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
    // the table's equivalents: rmdir, unlink and shred delete as rm does
    for line in [
        "rmdir x",
        "unlink x",
        "RM x",
        "/BIN/RM x",
        "rm.exe x",
        "busybox rm x",
    ] {
        assert_eq!(hit(line), Some(0), "{line:?}");
    }
    assert_eq!(hit("git send-pack origin main"), Some(1));
    for line in [
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
