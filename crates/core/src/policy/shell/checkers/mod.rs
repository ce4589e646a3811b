//! The checkers of programs whose arguments are a language of their own (sed
//! scripts, awk programs, tar's modes, `git config`, split's names, gdb's commands,
//! C compilers' options, find's expression): what they run and write, into a command's effects.

use super::effects::found::{Found, Parsed, Run};
use super::grammar::{Grammar, Item, Reading, Takes};
use super::programs::Program;

/// Why a sed script runs or writes something (`e`, `s///e`, `w`, `W`, or a command
/// the checker does not know), or `None`.
pub(super) fn sed_script(script: &str) -> Option<&'static str> {
    let b: Vec<char> = script.chars().collect();
    let mut i = 0;
    let skip_to_end = |i: &mut usize| {
        while *i < b.len() && b[*i] != '\n' {
            *i += 1;
        }
    };
    let regex = |i: &mut usize, delim: char| -> bool {
        while *i < b.len() {
            match b[*i] {
                '\\' => *i += 2,
                c if c == delim => {
                    *i += 1;
                    return true;
                }
                _ => *i += 1,
            }
        }
        false
    };
    loop {
        while i < b.len() && (b[i].is_whitespace() || b[i] == ';') {
            i += 1;
        }
        if i >= b.len() {
            return None;
        }
        // addresses: numbers, `$`, `first~step`, `/re/`, `\cREc`, `+N`, a second after `,`
        for _ in 0..2 {
            while i < b.len() && (b[i].is_ascii_digit() || matches!(b[i], '$' | '~' | '+')) {
                i += 1;
            }
            if i < b.len() && (b[i] == '/' || b[i] == '\\') {
                let delim = if b[i] == '\\' {
                    i += 1;
                    *b.get(i)?
                } else {
                    '/'
                };
                i += 1;
                if !regex(&mut i, delim) {
                    return Some("does not parse");
                }
                while i < b.len() && matches!(b[i], 'I' | 'M') {
                    i += 1;
                }
            }
            if i < b.len() && b[i] == ',' {
                i += 1;
                continue;
            }
            break;
        }
        while i < b.len() && (b[i].is_whitespace() || b[i] == '!') {
            i += 1;
        }
        let &c = b.get(i)?;
        i += 1;
        match c {
            '{' | '}' | '=' | 'd' | 'D' | 'g' | 'G' | 'h' | 'H' | 'n' | 'N' | 'p' | 'P' | 'x'
            | 'z' | 'F' | 'l' | 'q' | 'Q' => {
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
            }
            '#' | 'a' | 'i' | 'c' | 'r' | 'R' => skip_to_end(&mut i),
            ':' | 'b' | 't' | 'T' | 'v' => {
                while i < b.len() && b[i] != '\n' && b[i] != ';' {
                    i += 1;
                }
            }
            'e' => return Some("runs a command (the e command)"),
            'w' | 'W' => return Some("writes a file (the w command)"),
            's' | 'y' => {
                let delim = *b.get(i)?;
                if delim == '\\' || delim == '\n' {
                    return Some("does not parse");
                }
                i += 1;
                if !regex(&mut i, delim) || !regex(&mut i, delim) {
                    return Some("does not parse");
                }
                if c == 's' {
                    while i < b.len() && !matches!(b[i], ';' | '\n' | '}') {
                        match b[i] {
                            'e' => return Some("runs a command (the s///e flag)"),
                            'w' | 'W' => return Some("writes a file (the s///w flag)"),
                            'g' | 'p' | 'i' | 'I' | 'm' | 'M' | ' ' | '\t' => {}
                            d if d.is_ascii_digit() => {}
                            _ => return Some("holds a flag the checker does not know"),
                        }
                        i += 1;
                    }
                }
            }
            _ => return Some("holds a command the checker does not know"),
        }
    }
}

/// awk: the program (the first operand) must not run commands (`system`, pipes)
/// nor write files (`print > f`); answers the file operands.
pub(super) fn awk<'a>(name: &str, mut files: Vec<&'a str>, out: &mut Found) -> Vec<&'a str> {
    if files.is_empty() {
        return files;
    }
    let program = files.remove(0);
    let why = if program.contains("system") {
        Some("calls system()")
    } else if program.contains('|') {
        Some("pipes to or from a command")
    } else if program.contains('>') && program.contains("print") {
        Some("may print into a file")
    } else if program.contains('@') {
        Some("loads an extension or a file")
    } else {
        None
    };
    if let Some(why) = why {
        out.opaque(format!("{name}'s program {program:?} {why}"));
    }
    files
}

/// `git config`: writes `.git/config` (or `--global`'s `~/.gitconfig`, `-f`'s
/// file) unless it only reads.
pub(super) fn git_config(args: &[String], operands: &[&str], out: &mut Found) {
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

/// sed with a grammar: the scripts are `-e`/`--expression`'s values, else the first
/// operand; answers the file operands.
pub(super) fn sed_read<'a>(
    name: &str,
    reading: &Reading<'a>,
    mut files: Vec<&'a str>,
    out: &mut Found,
) -> Vec<&'a str> {
    let mut scripts: Vec<&str> = reading
        .options()
        .filter(|(o, _)| matches!(*o, "-e" | "--expression"))
        .filter_map(|(_, v)| v)
        .collect();
    if scripts.is_empty() && !files.is_empty() {
        let script = files.remove(0);
        if script.is_empty() {
            // BSD sed's `-i ''`: its script is the next word, which GNU would write
            out.opaque(format!(
                "{name}'s script is empty: BSD sed reads `-i ''` as a suffix and the next word as the script"
            ));
        }
        scripts.push(script);
    }
    // `@readonly` takes only what Codex's known-safe model takes: line ranges printed
    if !reading.has("-n") && !reading.has("--quiet") && !reading.has("--silent")
        || !scripts.iter().all(|s| prints_lines(s))
    {
        out.read_only = false;
    }
    for script in scripts {
        if let Some(why) = sed_script(script) {
            out.opaque(format!("{name}'s script {script:?} {why}"));
        }
    }
    files
}

/// `N p` or `N,M p`: a script that prints lines by number.
fn prints_lines(script: &str) -> bool {
    let Some(range) = script.strip_suffix('p') else {
        return false;
    };
    let number = |n: &str| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit());
    match range.split_once(',') {
        Some((a, b)) => number(a) && number(b),
        None => number(range),
    }
}

/// mawk's `-W` values that only change how it reads or prints; any other (`exec`,
/// a future one) is opaque.
const AWK_HARMLESS_W: [&str; 6] = [
    "version",
    "usage",
    "help",
    "posix_space",
    "interactive",
    "sprintf",
];

/// awk with a grammar: the program is the first operand unless `-f` gave one.
pub(super) fn awk_read<'a>(
    name: &str,
    reading: &Reading<'a>,
    files: Vec<&'a str>,
    out: &mut Found,
) -> Vec<&'a str> {
    for (option, value) in reading.options() {
        if option == "-W" {
            let value = value.unwrap_or_default();
            let known = value.split(',').all(|v| {
                AWK_HARMLESS_W
                    .iter()
                    .any(|h| h.starts_with(v.split('=').next().unwrap_or(v)) && !v.is_empty())
            });
            if !known {
                out.opaque(format!("{name} -W {value}: an implementation option that may run a file (mawk's -W exec)"));
            }
        }
    }
    awk(name, files, out)
}

/// GNU tar's old style (`tar czf a.tgz src`): the first word's letters are short
/// options, each value taken from the next words in turn. `None`: not old style.
pub(super) fn tar_old_style(grammar: &Grammar, args: &[String]) -> Option<Vec<String>> {
    let first = args
        .first()
        .filter(|w| !w.starts_with('-') && !w.is_empty())?;
    let mut out = Vec::new();
    let mut values = args[1..].iter();
    for c in first.chars() {
        out.push(format!("-{c}"));
        let takes = grammar.shorts().find(|(s, _)| *s == c).map(|(_, t)| t);
        if takes == Some(Takes::Required) {
            out.push(values.next()?.clone());
        }
    }
    out.extend(values.cloned());
    Some(out)
}

/// tar with a grammar: extraction writes names the archive holds (opaque);
/// creation writes the `-f` archive.
pub(super) fn tar_read(name: &str, reading: &Reading<'_>, _parsed: &Parsed<'_>, out: &mut Found) {
    let mut extract = false;
    let mut create = false;
    let mut file = None;
    for (option, value) in reading.options() {
        match option {
            "-x" | "--extract" | "--get" => extract = true,
            "-c" | "-r" | "-u" | "-A" | "--create" | "--append" | "--update" | "--catenate"
            | "--concatenate" | "--delete" => create = true,
            "-f" | "--file" => file = value,
            _ => {}
        }
    }
    if extract {
        out.opaque(format!(
            "{name} -x writes the names the archive holds (they may land in .git/ or outside)"
        ));
    }
    if create {
        match file {
            Some("-") => {}
            Some(f) => out.writes.push(f.to_owned()),
            None => out.opaque(format!("{name} writes an archive the reader cannot name")),
        }
    }
}

/// `git config` with a grammar: writes `.git/config` (or `--global`'s
/// `~/.gitconfig`, `--system`'s, `-f`'s file) unless it only reads.
pub(super) fn git_config_read(reading: &Reading<'_>, operands: &[&str], out: &mut Found) {
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

/// split: writes files named PREFIX + a suffix (the second operand, `x` by default);
/// a suffix of its letters can complete a protected name (`.bas` + `h` + `rc`), so a
/// prefix whose file name starts with a dot, or an extra suffix, is opaque.
pub(super) fn split_read(name: &str, reading: &Reading<'_>, operands: &[&str], out: &mut Found) {
    let prefix = operands.get(1).copied().unwrap_or("x");
    let base = prefix.rsplit('/').next().unwrap_or(prefix);
    if base.starts_with('.') || base.is_empty() || reading.has("--additional-suffix") {
        out.opaque(format!(
            "{name} writes files named {prefix:?} and a suffix, which may complete a protected name"
        ));
        return;
    }
    out.writes.push(prefix.to_owned());
}

/// gdb's `-ex`/`-iex` values are gdb commands: `shell CMD` and `!CMD` run a command
/// line; any other may run code in gdb's languages (python, pipes), so it is code.
pub(super) fn gdb_read(_name: &str, reading: &Reading<'_>, out: &mut Found) {
    for (option, value) in reading.options() {
        if !matches!(
            option,
            "--eval-command" | "--init-eval-command" | "--ex" | "--iex"
        ) {
            continue;
        }
        let command = value.unwrap_or_default().trim_start();
        let line = command.strip_prefix('!').or_else(|| {
            command
                .strip_prefix("shell ")
                .or_else(|| command.strip_prefix("she "))
        });
        match line {
            Some(line) => out.runs.push(Run::Line(line.to_owned())),
            None => out.inline_code = true,
        }
    }
}

/// C compilers (gcc, cc, clang): `-o`/`--output`/`-MF` write; plugins, wrappers,
/// other program directories, spec files and response files run or load what the
/// line does not show.
pub(super) fn cc(name: &str, args: &[String], out: &mut Found) {
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        let next = args.get(i + 1).map(String::as_str);
        let opaque = a.starts_with('@')
            || a.starts_with("-B")
            || a.starts_with("-fplugin")
            || a.starts_with("-wrapper")
            || a.starts_with("-specs")
            || a.starts_with("--specs")
            || a.starts_with("-fuse-ld")
            || a.starts_with("--ld-path")
            || a.starts_with("-Xclang")
            || a.starts_with("-fpass-plugin")
            || a.starts_with("-load")
            || a.starts_with("-no-canonical-prefixes")
            || a.starts_with("--sysroot")
            || a.starts_with("-iplugindir")
            || a.contains("plugin");
        if opaque {
            out.opaque(format!(
                "{name} {a}: loads or runs a program the line does not show"
            ));
            return;
        }
        match a {
            "-o" | "--output" | "-MF" | "-MT" | "-MQ" | "-Xlinker" | "-x" | "-include" | "-I"
            | "-L" | "-l" | "-D" | "-U" | "-isystem" | "-imacros" | "-idirafter" | "-iprefix" => {
                if matches!(a, "-o" | "--output" | "-MF") {
                    match next {
                        Some(path) => out.writes.push(path.to_owned()),
                        None => out.opaque(format!("{name} {a} without its value")),
                    }
                }
                if a == "-Xlinker" && next.is_some_and(|n| n.contains("plugin")) {
                    out.opaque(format!("{name} -Xlinker: loads a linker plugin"));
                    return;
                }
                i += 2;
                continue;
            }
            _ => {}
        }
        if let Some(path) = a
            .strip_prefix("--output=")
            .or_else(|| a.strip_prefix("-MF"))
        {
            out.writes.push(path.to_owned());
        } else if let Some(path) = a.strip_prefix("-o").filter(|p| !p.is_empty()) {
            out.writes.push(path.to_owned());
        }
        i += 1;
    }
}

/// find's primaries that take no value (GNU findutils 4.9.0, find(1)); with the
/// operators, the leading options and the effect primaries of its row, the whole
/// language: a primary not listed (BSD's `-E`, `-x`, `-Bmin`, `-flags`) is opaque.
const FIND_FLAGS: &[&str] = &[
    "-depth",
    "-d",
    "-mount",
    "-xdev",
    "-noleaf",
    "-ignore_readdir_race",
    "-noignore_readdir_race",
    "-daystart",
    "-follow",
    "-warn",
    "-nowarn",
    "-true",
    "-false",
    "-empty",
    "-executable",
    "-readable",
    "-writable",
    "-nouser",
    "-nogroup",
    "-prune",
    "-quit",
    "-print",
    "-print0",
    "-ls",
    "-help",
    "--help",
    "-version",
    "--version",
    "-not",
    "-a",
    "-and",
    "-o",
    "-or",
    "(",
    ")",
    "!",
    ",",
];

/// find's primaries that take one value (a name, a number, a format, a file it reads).
const FIND_VALUES: &[&str] = &[
    "-maxdepth",
    "-mindepth",
    "-regextype",
    "-files0-from",
    "-amin",
    "-anewer",
    "-atime",
    "-cmin",
    "-cnewer",
    "-ctime",
    "-mmin",
    "-mtime",
    "-newer",
    "-fstype",
    "-gid",
    "-group",
    "-ilname",
    "-iname",
    "-inum",
    "-ipath",
    "-iregex",
    "-iwholename",
    "-links",
    "-lname",
    "-name",
    "-path",
    "-perm",
    "-regex",
    "-samefile",
    "-size",
    "-type",
    "-uid",
    "-used",
    "-user",
    "-wholename",
    "-xtype",
    "-context",
    "-printf",
];

/// find's command line: leading options, start points, then the expression read
/// against the closed list of primaries. The row names the effect primaries
/// (`exec_until` run a command up to `;` or `+`, `write_options` write their file,
/// `-fprintf` its file then a format, `operands_when` delete the start points).
pub(super) fn find_read(program: &Program, name: &str, args: &[String], out: &mut Found) {
    let mut i = 0;
    while let Some(word) = args.get(i).map(String::as_str) {
        match word {
            "-H" | "-L" | "-P" => i += 1,
            "-D" => i += 2,
            _ if word.len() > 2 && word.starts_with("-O") => i += 1,
            _ => break,
        }
    }
    let starts: Vec<&str> = args[i.min(args.len())..]
        .iter()
        .map(String::as_str)
        .take_while(|w| !w.starts_with('-') && !matches!(*w, "(" | "!" | ","))
        .collect();
    i += starts.len();
    let (mut deletes, mut starts_unknown) = (false, false);
    while let Some(word) = args.get(i).map(String::as_str) {
        let value = args.get(i + 1);
        let newer_xy = word.len() == 8
            && word.starts_with("-newer")
            && word[6..].chars().all(|c| "aBcmt".contains(c));
        if program.exec_until.iter().any(|s| s == word) {
            let Some(end) = args[i + 1..].iter().position(|w| w == ";" || w == "+") else {
                out.opaque(format!("{name} {word}: no `;` or `+` ends its command"));
                return;
            };
            if end == 0 {
                out.opaque(format!("{name} {word} without a command"));
                return;
            }
            out.runs.push(Run::Words {
                words: args[i + 1..i + 1 + end].to_vec(),
                unknown_args: false,
            });
            // what it runs is decided as a command of the line in its own right
            i += end + 2;
        } else if program.write_options.iter().any(|s| s == word) {
            let Some(path) = value else {
                out.opaque(format!("{name} {word} without its file"));
                return;
            };
            out.writes.push(path.clone());
            out.read_only = false;
            // -fprintf FILE FORMAT
            i += if word == "-fprintf" { 3 } else { 2 };
        } else if program.operands_when.iter().any(|s| s == word) {
            deletes = true;
            out.read_only = false;
            i += 1;
        } else if FIND_FLAGS.contains(&word) {
            i += 1;
        } else if FIND_VALUES.contains(&word) || newer_xy {
            if value.is_none() {
                out.opaque(format!("{name} {word} without its value"));
                return;
            }
            starts_unknown |= word == "-files0-from";
            i += 2;
        } else {
            out.opaque(format!(
                "{name} {word}: a primary the reader does not know (another find's, or none)"
            ));
            return;
        }
    }
    if deletes {
        if starts_unknown {
            out.opaque(format!("{name} -delete deletes names read from a file"));
            return;
        }
        let deleted: Vec<String> = if starts.is_empty() {
            // the start point defaults to the working directory
            vec![".".to_owned()]
        } else {
            starts.iter().map(|w| (*w).to_owned()).collect()
        };
        if let Some(equivalent) = &program.equivalent {
            let mut words: Vec<String> = equivalent.split_whitespace().map(str::to_owned).collect();
            words.extend(deleted.iter().cloned());
            out.equivalents.push(words);
        }
        out.deletes.extend(deleted);
    }
}

/// ssh's arguments as ssh reads them: its options (BSD getopt, which stops at the
/// first operand), the host, its options again up to the next operand (unless `--`
/// ended the first ones), and then the remote command, which runs on the host and
/// is never read as options (`ssh host git log --oneline`, but `ssh host -o …`).
pub(super) fn ssh_read<'a>(grammar: &Grammar, args: &'a [String]) -> Result<Reading<'a>, String> {
    let first = grammar.read(args)?;
    let Some(host_at) = first.rest.filter(|&at| at < args.len()) else {
        return Ok(first);
    };
    if host_at > 0 && args[host_at - 1] == "--" {
        return Ok(first);
    }
    let again = grammar.read(&args[host_at + 1..])?;
    let mut items: Vec<Item<'a>> = first
        .items
        .into_iter()
        .filter(|i| matches!(i, Item::Option { .. }))
        .collect();
    items.push(Item::Operand(args[host_at].as_str()));
    items.extend(again.items);
    Ok(Reading {
        items,
        rest: Some(host_at),
    })
}
