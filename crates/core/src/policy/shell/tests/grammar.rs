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
    let (mut agreed, mut opaque, mut checked) = (0, 0, 0);
    let mut disagreements = Vec::new();
    for (name, row) in rows() {
        if row.parser != Some(Parser::Getopt) {
            continue;
        }
        let g = row.grammar.as_ref().unwrap();
        for args in cases(g) {
            checked += 1;
            let theirs = getopt(&row.short, &row.long, &args);
            match ours(g, &args) {
                None => opaque += 1,
                Some(mine) if theirs.as_ref() == Some(&mine) => agreed += 1,
                Some(mine) => disagreements.push(format!(
                    "{name} {args:?}: toolgate {mine:?}, getopt {theirs:?}"
                )),
            }
        }
        let _ = g.in_order();
    }
    println!("{checked} argument lists: {agreed} read alike, {opaque} opaque to toolgate");
    assert!(checked > 1000, "{checked}");
    // the table's own rows agree with getopt wherever toolgate reads them
    assert!(
        disagreements.is_empty(),
        "{} disagreements:\n{}",
        disagreements.len(),
        disagreements[..disagreements.len().min(40)].join("\n")
    );
}
