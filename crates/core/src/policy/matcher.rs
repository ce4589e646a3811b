//! The compiled form of an MCP list: hash lookups for every exact and wildcard form,
//! so a match costs the same with 10 or 100,000 entries. Globs are the exception:
//! they are grouped by their literal server, and only the globs of the call's server
//! (and those whose server is a wildcard or a glob) are tried.

use super::builtin;
use super::entry::{Entry, Side};
use rustc_hash::FxHashMap;
use std::sync::Arc;

/// A list's entries, compiled. Lookups answer the index of the first entry in list
/// order that matches, as seed 001's linear `some` would.
#[derive(Debug, Clone, Default)]
pub struct CompiledList {
    /// The entries as written, for reporting the one that matched.
    raw: Vec<Arc<str>>,
    /// `server:tool` → index.
    exact: FxHashMap<String, FxHashMap<String, usize>>,
    /// `server:*` → index.
    server_any: FxHashMap<String, usize>,
    /// `*:tool` → index.
    tool_any: FxHashMap<String, usize>,
    /// `*:*`.
    any: Option<usize>,
    /// Globs under an exact server: server → [(tool side, index)].
    server_globs: FxHashMap<String, Vec<(Side, usize)>>,
    /// Entries whose server side is a glob, or `*` with a glob tool.
    other_globs: Vec<(Entry, usize)>,
}

fn keep_first(slot: &mut Option<usize>, i: usize) {
    if slot.is_none() {
        *slot = Some(i);
    }
}

impl CompiledList {
    /// `entries[i]` is the parse of `raw[i]`.
    pub fn new(raw: &[String], entries: &[Entry]) -> Self {
        let parts: Vec<(usize, Entry)> = entries.iter().cloned().enumerate().collect();
        Self::from_parts(raw, &parts)
    }

    /// Each `(i, entry)` is (part of) what `raw[i]` matches: an `@category` entry is
    /// one exact entry per call of the category, a `raw[i]` may have none.
    pub fn from_parts(raw: &[String], parts: &[(usize, Entry)]) -> Self {
        let mut list = Self {
            raw: raw.iter().map(|s| Arc::from(s.as_str())).collect(),
            ..Self::default()
        };
        for (i, entry) in parts {
            let i = *i;
            match entry {
                Entry::Preset(name) => {
                    let tools = builtin::preset(name).map_or(&[][..], |(_, t)| t);
                    let by_tool = list.exact.entry(builtin::SERVER.to_owned()).or_default();
                    for tool in tools {
                        by_tool.entry((*tool).to_owned()).or_insert(i);
                    }
                }
                Entry::Pair { server, tool } => match (server, tool) {
                    (Side::Exact(s), Side::Exact(t)) => {
                        list.exact
                            .entry(s.clone())
                            .or_default()
                            .entry(t.clone())
                            .or_insert(i);
                    }
                    (Side::Exact(s), Side::Any) => {
                        list.server_any.entry(s.clone()).or_insert(i);
                    }
                    (Side::Any, Side::Exact(t)) => {
                        list.tool_any.entry(t.clone()).or_insert(i);
                    }
                    (Side::Any, Side::Any) => keep_first(&mut list.any, i),
                    (Side::Exact(s), glob @ Side::Glob(_)) => {
                        list.server_globs
                            .entry(s.clone())
                            .or_default()
                            .push((glob.clone(), i));
                    }
                    _ => list.other_globs.push((entry.clone(), i)),
                },
            }
        }
        list
    }

    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }

    pub fn len(&self) -> usize {
        self.raw.len()
    }

    /// The entry as written at `index`.
    pub fn raw(&self, index: usize) -> &Arc<str> {
        &self.raw[index]
    }

    /// The first entry (in list order) matching the call, as its index. A built-in
    /// tool is looked up under each of its spellings (`read_file`, `Read`), so every
    /// entry form matches it however either is written.
    pub fn first_match(&self, server: &str, tool: &str) -> Option<usize> {
        // most lists a decision consults are empty (no blocklist, no access list)
        if self.raw.is_empty() {
            return None;
        }
        let [first, second] = builtin::spellings(server, tool);
        let a = first.and_then(|t| self.first_literal(server, t));
        let b = second.and_then(|t| self.first_literal(server, t));
        match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The first entry matching one spelling of the call, literally.
    fn first_literal(&self, server: &str, tool: &str) -> Option<usize> {
        let mut best = self.any;
        let mut consider = |i: Option<usize>| {
            if let Some(i) = i
                && best.is_none_or(|b| i < b)
            {
                best = Some(i);
            }
        };
        consider(self.exact.get(server).and_then(|m| m.get(tool)).copied());
        consider(self.server_any.get(server).copied());
        consider(self.tool_any.get(tool).copied());
        if let Some(globs) = self.server_globs.get(server) {
            consider(
                globs
                    .iter()
                    .find(|(side, _)| side.matches(tool))
                    .map(|(_, i)| *i),
            );
        }
        consider(
            self.other_globs
                .iter()
                .find(|(e, _)| e.matches(server, tool))
                .map(|(_, i)| *i),
        );
        best
    }

    /// The first matching entry as written.
    pub fn matched(&self, server: &str, tool: &str) -> Option<&Arc<str>> {
        self.first_match(server, tool).map(|i| &self.raw[i])
    }
}

/// Seed 001's matching as written: a linear scan with `f4c` over the list (each entry
/// tried under every spelling of a built-in tool). Kept as the reference the compiled
/// form is tested and benchmarked against.
pub fn reference_first_match(entries: &[Entry], server: &str, tool: &str) -> Option<usize> {
    entries.iter().position(|e| e.matches_call(server, tool))
}
