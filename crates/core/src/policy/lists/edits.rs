//! The list edits: seed 001's `Yro` (add an entry unless the list already covers
//! it), remove, and normalise.

use crate::policy::entry::{self, Entry, Side, validate_name};
use crate::policy::{EntryProblem, PolicyError};

/// What adding an entry did (seed 001 `Yro`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AddOutcome {
    /// The new list, with the entry appended.
    Added(Vec<String>),
    /// The exact entry is already there.
    AlreadyPresent,
    /// A wildcard entry of the list already covers it (the entry named).
    CoveredBy(String),
}

/// Adds `server:tool` to a list. Seed 001's `Yro`: both names valid (else an error),
/// no duplicate, nothing `server:*` already covers. Generalising `Yro`, an entry that
/// `*:*`, `*:tool`, a glob or a preset of the list covers is not added either.
pub fn add_mcp_entry(list: &[String], server: &str, tool: &str) -> Result<AddOutcome, PolicyError> {
    let mut problems = Vec::new();
    for (field, name) in [("server", server), ("tool", tool)] {
        if let Err(rule) = validate_name(name) {
            problems.push(EntryProblem {
                field: field.to_owned(),
                entry: name.to_owned(),
                rule,
                hint: entry::hint(rule).to_owned(),
            });
        }
    }
    if !problems.is_empty() {
        return Err(PolicyError::InvalidEntries(problems));
    }
    let new_entry = entry::format_entry(server, tool);
    if list.contains(&new_entry) {
        return Ok(AddOutcome::AlreadyPresent);
    }
    let server_wildcard = entry::format_entry(server, entry::WILDCARD);
    if list.contains(&server_wildcard) {
        return Ok(AddOutcome::CoveredBy(server_wildcard));
    }
    let parsed: Vec<Option<Entry>> = list.iter().map(|e| Entry::parse(e).ok()).collect();
    let new = Entry::parse(&new_entry).map_err(|rule| {
        PolicyError::InvalidEntries(vec![EntryProblem {
            field: "entry".into(),
            entry: new_entry.clone(),
            rule,
            hint: entry::hint(rule).to_owned(),
        }])
    })?;
    if let Some(i) = parsed
        .iter()
        .position(|e| e.as_ref().is_some_and(|e| covers(e, &new)))
    {
        return Ok(AddOutcome::CoveredBy(list[i].clone()));
    }
    let mut out = list.to_vec();
    out.push(new_entry);
    Ok(AddOutcome::Added(out))
}

/// Whether every call `inner` matches, `outer` matches too (decided conservatively:
/// `false` when unsure).
fn covers(outer: &Entry, inner: &Entry) -> bool {
    if outer == inner {
        return true;
    }
    match inner {
        Entry::Pair {
            server: Side::Exact(s),
            tool: Side::Exact(t),
        } => outer.matches(s, t),
        Entry::Pair { server, tool } => match outer {
            Entry::Pair {
                server: os,
                tool: ot,
            } => side_covers(os, server) && side_covers(ot, tool),
            Entry::Preset(_) => false,
        },
        Entry::Preset(name) => {
            let tools = crate::policy::builtin::preset(name).map_or(&[][..], |(_, t)| t);
            tools
                .iter()
                .all(|t| outer.matches(crate::policy::builtin::SERVER, t))
        }
    }
}

fn side_covers(outer: &Side, inner: &Side) -> bool {
    match (outer, inner) {
        (Side::Any, _) => true,
        (_, Side::Any) => false,
        (o, Side::Exact(name)) => o.matches(name),
        (Side::Glob(o), Side::Glob(i)) => o == i,
        (Side::Exact(_), Side::Glob(_)) => false,
    }
}

/// Removes every copy of `entry`; `None` when it is not in the list.
pub fn remove_entry(list: &[String], entry: &str) -> Option<Vec<String>> {
    list.iter()
        .any(|e| e == entry)
        .then(|| list.iter().filter(|e| *e != entry).cloned().collect())
}

/// Drops duplicates, invalid entries, and entries another kept entry of the same list
/// covers. Decisions (outcome and reason) are unchanged; the entry reported as
/// matched may become the covering one.
pub fn normalise(list: &[String]) -> Vec<String> {
    let mut kept: Vec<(String, Entry)> = Vec::new();
    for raw in list {
        let Ok(parsed) = Entry::parse(raw) else {
            continue;
        };
        if kept.iter().any(|(_, k)| covers(k, &parsed)) {
            continue;
        }
        kept.retain(|(_, k)| !covers(&parsed, k));
        kept.push((raw.clone(), parsed));
    }
    kept.into_iter().map(|(raw, _)| raw).collect()
}
