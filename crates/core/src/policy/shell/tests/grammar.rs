//! The option grammars against the real parsers: every getopt row's reading of
//! generated argument lists (each option, its abbreviations, bundles, `--`, values
//! attached and separate) agrees with util-linux `getopt` given the row's own spec,
//! or toolgate is opaque; and git rows against `git rev-parse --parseopt`.

use crate::policy::shell::grammar::{Grammar, Item, Takes};
use crate::policy::shell::programs::{Parser, Program, table};
use std::process::Command;

/// Every row with a grammar, by name (subcommands as `git commit`).
fn rows() -> Vec<(String, &'static Program)> {
    fn walk(name: String, p: &'static Program, out: &mut Vec<(String, &'static Program)>) {
        if p.grammar.is_some() {
            out.push((name.clone(), p));
        }
        for (sub, row) in &p.subcommands {
            walk(format!("{name} {sub}"), row, out);
        }
    }
    let mut out = Vec::new();
    for p in table().programs() {
        walk(p.names[0].clone(), p, &mut out);
    }
    out
}

/// Argument lists that exercise every option of a grammar.
fn cases(g: &Grammar) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    let v = |xs: &[&str]| xs.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let mut flags = Vec::new();
    for (c, takes) in g.shorts() {
        match takes {
            Takes::No => {
                out.push(v(&[&format!("-{c}"), "op"]));
                flags.push(c);
            }
            Takes::Required => {
                out.push(v(&[&format!("-{c}"), "val", "op"]));
                out.push(v(&[&format!("-{c}val"), "op"]));
                out.push(v(&[&format!("-{c}")]));
            }
            Takes::Optional => {
                out.push(v(&[&format!("-{c}"), "op"]));
                out.push(v(&[&format!("-{c}val"), "op"]));
            }
        }
    }
    for pair in flags.windows(2) {
        out.push(v(&[&format!("-{}{}", pair[0], pair[1]), "op"]));
    }
    for (name, takes) in g.longs() {
        // every prefix up to four letters, and the whole name
        for len in (1..=name.len().min(4)).chain([name.len()]) {
            let given = &name[..len];
            out.push(v(&[&format!("--{given}"), "op"]));
            out.push(v(&[&format!("--{given}=val"), "op"]));
            if takes == Takes::Required {
                out.push(v(&[&format!("--{given}"), "val", "op"]));
            }
        }
    }
    out.push(v(&["op", "--", "-x"]));
    out.push(v(&["--", "op"]));
    out.push(v(&["op1", "op2"]));
    out
}

/// getopt's normalised output as words (`-a 'v' -- 'op'`), or `None` when it refused.
fn getopt(short: &str, long: &[String], args: &[String]) -> Option<Vec<String>> {
    let long: Vec<String> = long
        .iter()
        .map(|l| l.trim_start_matches('!').to_owned())
        .collect();
    let mut cmd = Command::new("/usr/bin/getopt");
    cmd.arg("-o").arg(short);
    if !long.is_empty() {
        cmd.arg("-l").arg(long.join(","));
    }
    cmd.arg("--")
        .args(args)
        .env_remove("POSIXLY_CORRECT")
        .env_remove("GETOPT_COMPATIBLE");
    let out = cmd.output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    let mut words = Vec::new();
    let mut cur = String::new();
    let (mut quoted, mut any) = (false, false);
    for c in text.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                any = true;
            }
            c if c.is_whitespace() && !quoted => {
                if any || !cur.is_empty() {
                    words.push(std::mem::take(&mut cur));
                }
                any = false;
            }
            c => cur.push(c),
        }
    }
    if any || !cur.is_empty() {
        words.push(cur);
    }
    Some(words)
}

/// toolgate's reading in getopt's normalised form.
fn ours(g: &Grammar, args: &[String]) -> Option<Vec<String>> {
    let reading = g.read(args).ok()?;
    let mut words = Vec::new();
    let mut operands = Vec::new();
    for item in &reading.items {
        match item {
            Item::Option { name, value } => {
                words.push(name.clone());
                match value {
                    Some(v) => words.push((*v).to_owned()),
                    None => {
                        // getopt writes an absent optional value as ''
                        let takes_optional = name
                            .strip_prefix("--")
                            .map(|n| g.longs().any(|(l, t)| l == n && t == Takes::Optional))
                            .unwrap_or_else(|| {
                                g.shorts()
                                    .any(|(c, t)| name[1..].starts_with(c) && t == Takes::Optional)
                            });
                        if takes_optional {
                            words.push(String::new());
                        }
                    }
                }
            }
            Item::Operand(w) => operands.push((*w).to_owned()),
        }
    }
    words.push("--".to_owned());
    words.extend(operands);
    Some(words)
}

#[test]
fn getopt_rows_read_as_util_linux_getopt_reads_them() {
    if !std::path::Path::new("/usr/bin/getopt").exists() {
        println!("skipped: /usr/bin/getopt is not installed");
        return;
    }
    let (mut agreed, mut opaque, mut refused, mut checked) = (0, 0, 0, 0);
    let mut disagreements = Vec::new();
    for (name, row) in rows() {
        // pflag rows (docker, kubectl) too: they take no abbreviation, so where
        // getopt takes one they are opaque
        if !matches!(row.parser, Some(Parser::Getopt | Parser::Pflag)) {
            continue;
        }
        let g = row.grammar.as_ref().unwrap();
        for args in cases(g) {
            checked += 1;
            let Some(mine) = ours(g, &args) else {
                opaque += 1;
                continue;
            };
            let theirs = getopt(&row.short, &row.long, &args);
            match theirs {
                // getopt refuses it: the program stops with a usage error
                None => refused += 1,
                Some(theirs) if mine == theirs => agreed += 1,
                Some(theirs) => disagreements.push(format!(
                    "{name} {args:?}: toolgate {mine:?}, getopt {theirs:?}"
                )),
            }
        }
        let _ = g.in_order();
    }
    println!(
        "{checked} argument lists: {agreed} read alike, {opaque} opaque to toolgate, {refused} refused by the parser"
    );
    assert!(checked > 1000, "{checked}");
    // the table's own rows agree with getopt wherever toolgate reads them
    assert!(
        disagreements.is_empty(),
        "{} disagreements:\n{}",
        disagreements.len(),
        disagreements[..disagreements.len().min(40)].join("\n")
    );
}

/// The spec `git rev-parse --parseopt` reads for a git row: each short and long
/// option on its own line (the row does not pair them), `!` where no `--no-` form.
fn parseopt_spec(row: &Program) -> String {
    let g = row.grammar.as_ref().unwrap();
    let mut spec = String::from("git-row\n--\n");
    let flag = |t: Takes| match t {
        Takes::No => "",
        Takes::Required => "=",
        Takes::Optional => "?",
    };
    for (c, t) in g.shorts() {
        spec.push_str(&format!("{c}{} x\n", flag(t)));
    }
    for raw in &row.long {
        let bang = if raw.starts_with('!') { "!" } else { "" };
        let name = raw.trim_start_matches('!').trim_end_matches(':');
        let (_, t) = g.longs().find(|(l, _)| *l == name).unwrap();
        spec.push_str(&format!("{name}{bang}{} x\n", flag(t)));
    }
    spec
}

/// git's normalised output (`set -- -m 'x' --no-quiet -- 'op'`) as words.
fn parseopt(spec: &str, in_order: bool, args: &[String]) -> Option<Vec<String>> {
    use std::io::Write;
    // a `+` grammar stops at the first operand, as the subcommand's parser is told to
    let stop: &[&str] = if in_order {
        &["--stop-at-non-option"]
    } else {
        &[]
    };
    let mut child = Command::new("git")
        .args(["rev-parse", "--parseopt"])
        .args(stop)
        .arg("--")
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    child.stdin.take()?.write_all(spec.as_bytes()).ok()?;
    let out = child.wait_with_output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    let text = text.trim().strip_prefix("set -- ")?;
    // `--no-no-verify` is the positive form of a `no-verify` option: `--verify`
    Some(
        split_quoted(text)
            .into_iter()
            .map(|w| match w.strip_prefix("--no-no-") {
                Some(positive) => format!("--{positive}"),
                None => w,
            })
            .collect(),
    )
}

fn split_quoted(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let (mut quoted, mut any) = (false, false);
    for c in text.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                any = true;
            }
            c if c.is_whitespace() && !quoted => {
                if any || !cur.is_empty() {
                    words.push(std::mem::take(&mut cur));
                }
                any = false;
            }
            c => cur.push(c),
        }
    }
    if any || !cur.is_empty() {
        words.push(cur);
    }
    words
}

/// toolgate's reading of a git row as parseopt prints it.
fn ours_git(row: &Program, args: &[String]) -> Option<Vec<String>> {
    let g = row.grammar.as_ref().unwrap();
    let reading = g.read(args).ok()?;
    let declared = |n: &str| g.longs().any(|(l, _)| l == n);
    let mut words = Vec::new();
    let mut operands = Vec::new();
    for item in &reading.items {
        match item {
            // git's revision parser reads `-3` as `-n 3`; parseopt, given `3` as a
            // letter, prints it back as `-3`
            Item::Option { name, value } if name == "-NUM" => {
                words.push(format!("-{}", value.unwrap_or_default()));
            }
            Item::Option { name, value } => {
                let _ = declared;
                words.push(name.clone());
                words.extend(value.map(str::to_owned));
            }
            Item::Operand(w) => operands.push((*w).to_owned()),
        }
    }
    words.push("--".to_owned());
    words.extend(operands);
    Some(words)
}

#[test]
fn git_rows_read_as_git_parse_options_reads_them() {
    if Command::new("git").arg("--version").output().is_err() {
        println!("skipped: git is not installed");
        return;
    }
    let (mut agreed, mut opaque, mut refused, mut checked) = (0, 0, 0, 0);
    let mut disagreements = Vec::new();
    for (name, row) in rows() {
        // exact rows (git log's revision and diff options) too: they take no
        // abbreviation, so where parse-options takes one they are opaque
        if !matches!(row.parser, Some(Parser::Git | Parser::GitExact)) || name == "git" {
            continue;
        }
        let g = row.grammar.as_ref().unwrap();
        let spec = parseopt_spec(row);
        let mut lists = cases(g);
        for (long, _) in g.longs() {
            lists.push(vec![format!("--no-{long}"), "op".to_owned()]);
            lists.push(vec![format!("--no-{}", &long[..long.len().min(3)])]);
        }
        for args in lists {
            checked += 1;
            // an opaque reading needs no comparison: the parser is not asked
            let Some(mine) = ours_git(row, &args) else {
                opaque += 1;
                continue;
            };
            let theirs = parseopt(&spec, g.in_order(), &args);
            match theirs {
                // git refuses it: the command stops with a usage error
                None => refused += 1,
                Some(theirs) if mine == theirs => agreed += 1,
                Some(theirs) => disagreements.push(format!(
                    "{name} {args:?}: toolgate {mine:?}, git {theirs:?}"
                )),
            }
        }
    }
    println!(
        "{checked} argument lists: {agreed} read alike, {opaque} opaque to toolgate, {refused} refused by the parser"
    );
    assert!(checked > 1000, "{checked}");
    assert!(
        disagreements.is_empty(),
        "{} disagreements:\n{}",
        disagreements.len(),
        disagreements[..disagreements.len().min(40)].join("\n")
    );
}

/// The engine on hostile spellings: each is read as the parser would, or refused.
#[test]
fn hostile_spellings_are_read_or_refused() {
    let long = |xs: &[&str]| xs.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let sort = Grammar::new(
        crate::policy::shell::grammar::Style::Getopt,
        "mo:S:",
        &long(&["output:", "compress-program:", "check::", "merge"]),
        false,
    )
    .unwrap();
    let read = |args: &[&str]| {
        let args = long(args);
        sort.read(&args).map(|r| {
            r.items
                .iter()
                .map(|i| match i {
                    Item::Option { name, value } => format!("{name}={}", value.unwrap_or("")),
                    Item::Operand(w) => (*w).to_owned(),
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
    };
    let cases: [(&[&str], Result<&str, ()>); 16] = [
        (&["--out=x", "f"], Ok("--output=x f")),
        (&["--o", "x"], Ok("--output=x")),
        (&["-mox"], Ok("-m= -o=x")),
        (&["-m", "-o", "x"], Ok("-m= -o=x")),
        (&["f", "-ox"], Ok("f -o=x")),
        (&["--", "-ox"], Ok("-ox")),
        (&["--c", "f"], Err(())),
        (&["--check"], Ok("--check=")),
        (&["--check", "x"], Ok("--check= x")),
        (&["--merge=x"], Err(())),
        (&["--x"], Err(())),
        (&["-z"], Err(())),
        (&["-o"], Err(())),
        (&["--output"], Err(())),
        (&["-"], Ok("-")),
        (&["-mé"], Err(())),
    ];
    for (args, want) in cases {
        assert_eq!(
            read(args).map_err(|_| ()),
            want.map(str::to_owned),
            "{args:?}"
        );
    }
    // a long list is read in one pass
    let many: Vec<String> = (0..20_000)
        .map(|i| format!("-m{}", if i % 2 == 0 { "" } else { "m" }))
        .collect();
    assert_eq!(sort.read(&many).unwrap().items.len(), 30_000);
}

/// tree's own parser (`separate`): each letter of a bundle that takes a value takes
/// the next word, never the bundle's rest. The file the real tree writes with `-o`
/// is the one toolgate reads as `-o`'s value, or toolgate refuses the words.
#[test]
fn tree_writes_the_file_toolgate_reads() {
    if !std::path::Path::new("/usr/bin/tree").exists() {
        println!("skipped: /usr/bin/tree is not installed");
        return;
    }
    let row = table().get("tree").unwrap();
    assert_eq!(row.parser, Some(Parser::Separate));
    let g = row.grammar.as_ref().unwrap();
    let dir = std::env::temp_dir().join(format!("toolgate-tree-{}", std::process::id()));
    let cases: [&[&str]; 8] = [
        &["-oL", "out", "1"],
        &["-Lo", "1", "out"],
        &["-o", "out"],
        &["-aoL", "out", "1"],
        &["-LoI", "1", "out", "x*"],
        &["--charset=ascii", "-o", "out"],
        &["--charset", "ascii", "-o", "out", "--noreport"],
        &["-o", "first", "-o", "out"],
    ];
    for args in cases {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        let words: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
        let reading = g.read(&words).unwrap_or_else(|e| panic!("{args:?}: {e}"));
        let ours = reading
            .options()
            .filter(|(o, _)| *o == "-o")
            .last()
            .and_then(|(_, v)| v)
            .unwrap();
        let status = Command::new("/usr/bin/tree")
            .args(args)
            .arg(".")
            .current_dir(&dir)
            .output()
            .unwrap()
            .status;
        assert!(status.success(), "{args:?}");
        assert!(
            dir.join(ours).is_file(),
            "{args:?}: tree did not write {ours:?}"
        );
        for other in ["L", "1", "I", "oL", "ascii"] {
            assert!(!dir.join(other).exists(), "{args:?}: tree wrote {other:?}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    // what tree refuses or reads apart, toolgate refuses: an attached value, an
    // abbreviation, a letter tree does not have
    for args in [
        &["-L1"][..],
        &["--dirsf"],
        &["-oX/x"],
        &["-o"],
        &["--charset"],
    ] {
        let words: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
        assert!(g.read(&words).is_err(), "{args:?}");
    }
}
