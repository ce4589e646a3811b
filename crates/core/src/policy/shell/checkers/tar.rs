//! tar: its old-style letters read as options, what extraction and creation write.

use crate::policy::shell::effects::found::{Found, Parsed};
use crate::policy::shell::grammar::{Grammar, Reading, Takes};

/// GNU tar's old style (`tar czf a.tgz src`): the first word's letters are short
/// options, each value taken from the next words in turn. `None`: not old style.
pub(in crate::policy::shell) fn tar_old_style(
    grammar: &Grammar,
    args: &[String],
) -> Option<Vec<String>> {
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
pub(in crate::policy::shell) fn tar_read(
    name: &str,
    reading: &Reading<'_>,
    _parsed: &Parsed<'_>,
    out: &mut Found,
) {
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
