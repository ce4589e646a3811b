//! `git config`: the configuration file it writes unless it only reads.

use crate::policy::shell::effects::found::Found;
use crate::policy::shell::grammar::Reading;

/// `git config`: writes `.git/config` (or `--global`'s `~/.gitconfig`, `-f`'s
/// file) unless it only reads.
pub(in crate::policy::shell) fn git_config(args: &[String], operands: &[&str], out: &mut Found) {
    const READS: [&str; 9] = [
        "--get",
        "--get-all",
        "--get-regexp",
        "--get-urlmatch",
        "--list",
        "-l",
        "--get-color",
        "--get-colorbool",
        "--show-origin",
    ];
    let reads = args.iter().any(|a| READS.contains(&a.as_str()))
        || matches!(operands.first(), Some(&"get" | &"list"))
        || operands.len() <= 1;
    if reads {
        return;
    }
    let mut path = ".git/config".to_owned();
    for (i, a) in args.iter().enumerate() {
        match a.as_str() {
            "--global" => path = "~/.gitconfig".to_owned(),
            "--system" => path = "/etc/gitconfig".to_owned(),
            "-f" | "--file" => path = args.get(i + 1).cloned().unwrap_or_default(),
            other => {
                if let Some(f) = other.strip_prefix("--file=") {
                    path = f.to_owned();
                }
            }
        }
    }
    out.writes.push(path);
}

/// `git config` with a grammar: writes `.git/config` (or `--global`'s
/// `~/.gitconfig`, `--system`'s, `-f`'s file) unless it only reads.
pub(in crate::policy::shell) fn git_config_read(
    reading: &Reading<'_>,
    operands: &[&str],
    out: &mut Found,
) {
    const READS: [&str; 9] = [
        "--get",
        "--get-all",
        "--get-regexp",
        "--get-urlmatch",
        "--list",
        "-l",
        "--get-color",
        "--get-colorbool",
        "--show-origin",
    ];
    // these change the file whatever else the line says (`--unset NAME` has one operand)
    const WRITES: [&str; 6] = [
        "--add",
        "--replace-all",
        "--unset",
        "--unset-all",
        "--rename-section",
        "--remove-section",
    ];
    if operands.first() == Some(&"edit") {
        out.opaque("git config edit runs an editor".to_owned());
        return;
    }
    let writes = reading.options().any(|(o, _)| WRITES.contains(&o))
        || matches!(
            operands.first(),
            Some(&"set" | &"unset" | &"rename-section" | &"remove-section")
        );
    let reads = reading.options().any(|(o, _)| READS.contains(&o))
        || matches!(operands.first(), Some(&"get" | &"list"))
        || operands.len() <= 1;
    if reads && !writes {
        return;
    }
    let mut path = ".git/config".to_owned();
    for (option, value) in reading.options() {
        match option {
            "--global" => path = "~/.gitconfig".to_owned(),
            "--system" => path = "/etc/gitconfig".to_owned(),
            "--worktree" => path = ".git/config.worktree".to_owned(),
            "-f" | "--file" => path = value.unwrap_or_default().to_owned(),
            _ => {}
        }
    }
    out.writes.push(path);
}
