//! The compiled form of an MCP list: hash lookups for every exact and wildcard form,
//! so a match costs the same with 10 or 100,000 entries. Globs are the exception:
//! they are grouped by their literal server, and only the globs of the call's server
//! (and those whose server is a wildcard or a glob) are tried.

use super::arena::{EntryText, Keys, Names, SpanTable, hash_name};
use super::builtin;
use super::entry::{Entry, SEPARATOR, Side};
use hashbrown::HashTable;
use std::sync::Arc;

/// A list's entries, compiled. Lookups answer the index of the first entry in list
/// order that matches, as seed 001's linear `some` would.
///
/// The entries as written are one text, end to end, and every exact name the tables
/// look up is a span of it (an entry's own text where it spells the key, else text
/// appended after the entries): one copy of each entry, in a few allocations.
#[derive(Debug, Clone)]
pub struct CompiledList {
    /// The entries as written, then the keys no entry spells as written (a built-in
    /// alias's canonical name, a preset's or a category's calls).
    text: Arc<str>,
    /// Where entry `i` ends in `text`; it starts where entry `i - 1` ends.
    ends: Box<[u32]>,
    /// `server:tool` → index.
    exact: SpanTable,
    /// `server:*` → index, keyed by the server.
    server_any: SpanTable,
    /// `*:tool` → index, keyed by the tool.
    tool_any: SpanTable,
    /// `*:*`.
    any: Option<usize>,
    /// Globs under an exact server: server → [(tool side, index)], hashed as the
    /// span tables' names are (a call's server is hashed once for both).
    server_globs: HashTable<ServerGlobs>,
    /// Entries whose server side is a glob, or `*` with a glob tool, and exact ones
    /// with a `:` in a name (only entries made without parsing have one).
    other_globs: Vec<(Entry, usize)>,
}

impl Default for CompiledList {
    fn default() -> Self {
        Self {
            text: Arc::from(""),
            ends: Box::default(),
            exact: SpanTable::new(Keys::Pairs),
            server_any: SpanTable::new(Keys::Names),
            tool_any: SpanTable::new(Keys::Names),
            any: None,
            server_globs: HashTable::new(),
            other_globs: Vec::new(),
        }
    }
}

fn keep_first(slot: &mut Option<usize>, i: usize) {
    if slot.is_none() {
        *slot = Some(i);
    }
}

/// A [`CompiledList`] being built, entry by entry: a caller parses an entry, adds it
/// and drops it before parsing the next, so compiling a long list leaves no trail of
/// per-entry allocations behind (they would stay in the allocator's arenas as
/// resident memory long after the compile).
pub(super) struct ListBuilder<'a> {
    raw: &'a [String],
    /// The entries as written, then keys no entry spells as written.
    text: String,
    /// Where each entry starts in `text`.
    starts: Vec<usize>,
    list: CompiledList,
}

impl<'a> ListBuilder<'a> {
    pub(super) fn new(raw: &'a [String]) -> Self {
        let mut text = String::with_capacity(raw.iter().map(String::len).sum());
        let mut starts = Vec::with_capacity(raw.len());
        for entry in raw {
            starts.push(text.len());
            text.push_str(entry);
        }
        let mut list = CompiledList::default();
        // most entries of a long list are exact: one table allocation, trimmed at the end
        list.exact.reserve(&text, raw.len());
        Self {
            raw,
            text,
            starts,
            list,
        }
    }

    /// Adds (part of) what `raw[i]` matches: an `@category` entry is one exact entry
    /// per call of the category.
    pub(super) fn add(&mut self, i: usize, entry: &Entry) {
        match entry {
            Entry::Preset(name) => {
                let tools = builtin::preset(name).map_or(&[][..], |(_, t)| t);
                for tool in tools {
                    self.pair(builtin::SERVER, tool, i);
                }
            }
            Entry::Pair { server, tool } => match (server, tool) {
                (Side::Exact(s), Side::Exact(t)) => self.pair(s, t, i),
                (Side::Exact(s), Side::Any) => self.name(Which::ServerAny, s, 0, i),
                (Side::Any, Side::Exact(t)) => {
                    let at = self.raw[i].len().saturating_sub(t.len());
                    self.name(Which::ToolAny, t, at, i);
                }
                (Side::Any, Side::Any) => keep_first(&mut self.list.any, i),
                (Side::Exact(s), glob @ Side::Glob(_)) => {
                    let globs = &mut self.list.server_globs;
                    let hash = hash_name(s.as_bytes());
                    match globs.find_mut(hash, |g| *g.server == **s) {
                        Some(g) => g.globs.push((glob.clone(), i)),
                        None => {
                            let g = ServerGlobs {
                                server: s.as_str().into(),
                                globs: vec![(glob.clone(), i)],
                            };
                            globs.insert_unique(hash, g, |g| hash_name(g.server.as_bytes()));
                        }
                    }
                }
                _ => self.list.other_globs.push((entry.clone(), i)),
            },
        }
    }

    /// Stores `server:tool` under `i` unless an earlier entry holds it.
    fn pair(&mut self, server: &str, tool: &str, i: usize) {
        if server.contains(SEPARATOR) || tool.contains(SEPARATOR) {
            // no key of the table: only an entry made without parsing has a `:` in a
            // name, and the linear path serves it (so a lookup need not look for one)
            let entry = Entry::Pair {
                server: Side::Exact(server.to_owned()),
                tool: Side::Exact(tool.to_owned()),
            };
            self.list.other_globs.push((entry, i));
            return;
        }
        if self.list.exact.pair(&self.text, server, tool).is_some() {
            return;
        }
        let written = &self.raw[i];
        let start = if written.len() == server.len() + 1 + tool.len()
            && written.starts_with(server)
            && written[server.len()..].starts_with(SEPARATOR)
            && written.ends_with(tool)
        {
            self.starts[i]
        } else {
            let start = self.text.len();
            self.text.push_str(server);
            self.text.push(SEPARATOR);
            self.text.push_str(tool);
            start
        };
        let len = server.len() + 1 + tool.len();
        self.list.exact.insert(&self.text, start, len, i);
    }

    /// Stores `name` under `i` unless an earlier entry holds it; `at` is where the
    /// entry as written would spell it (`0` for `server:*`, the end for `*:tool`).
    fn name(&mut self, which: Which, name: &str, at: usize, i: usize) {
        if table(&mut self.list, which)
            .name(&self.text, name)
            .is_some()
        {
            return;
        }
        let start = match self.raw[i].get(at..at + name.len()) {
            Some(written) if written == name => self.starts[i] + at,
            _ => {
                let start = self.text.len();
                self.text.push_str(name);
                start
            }
        };
        table(&mut self.list, which).insert(&self.text, start, name.len(), i);
    }

    pub(super) fn finish(self) -> CompiledList {
        let Self {
            raw,
            text,
            starts,
            mut list,
        } = self;
        list.exact.shrink_to_fit(&text);
        list.ends = raw
            .iter()
            .zip(&starts)
            .map(|(entry, start)| arena_offset(start + entry.len()))
            .collect();
        list.text = Arc::from(text);
        list
    }
}

/// The globs of one exact server, in list order.
#[derive(Debug, Clone)]
struct ServerGlobs {
    server: Box<str>,
    globs: Vec<(Side, usize)>,
}

/// The tables keyed by a name.
#[derive(Clone, Copy)]
enum Which {
    ServerAny,
    ToolAny,
}

fn table(list: &mut CompiledList, which: Which) -> &mut SpanTable {
    match which {
        Which::ServerAny => &mut list.server_any,
        Which::ToolAny => &mut list.tool_any,
    }
}

impl CompiledList {
    /// `entries[i]` is the parse of `raw[i]`.
    pub fn new(raw: &[String], entries: &[Entry]) -> Self {
        let mut b = ListBuilder::new(raw);
        for (i, entry) in entries.iter().enumerate() {
            b.add(i, entry);
        }
        b.finish()
    }

    /// Each `(i, entry)` is (part of) what `raw[i]` matches: an `@category` entry is
    /// one exact entry per call of the category, a `raw[i]` may have none.
    pub fn from_parts(raw: &[String], parts: &[(usize, Entry)]) -> Self {
        let mut b = ListBuilder::new(raw);
        for (i, entry) in parts {
            b.add(*i, entry);
        }
        b.finish()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    #[inline]
    fn span(&self, index: usize) -> (u32, u32) {
        let end = self.ends[index];
        let start = index.checked_sub(1).map_or(0, |i| self.ends[i]);
        (start, end)
    }

    /// The entry as written at `index`.
    pub fn raw(&self, index: usize) -> &str {
        let (start, end) = self.span(index);
        &self.text[start as usize..end as usize]
    }

    /// The entry as written at `index`, sharing the list's text.
    #[inline]
    /// True when `e` is one of this list's entries (a span of its text), not an
    /// equal text from another list.
    pub fn wrote(&self, e: &EntryText) -> bool {
        e.shares(&self.text)
    }

    pub fn entry(&self, index: usize) -> EntryText {
        let (start, end) = self.span(index);
        EntryText::span(&self.text, start, end)
    }

    /// The entries as written, in list order: the list as it was compiled.
    pub fn entries(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        (0..self.len()).map(|i| self.raw(i))
    }

    /// The first entry (in list order) matching the call, as its index. A built-in
    /// tool is looked up under each of its spellings (`read_file`, `Read`), so every
    /// entry form matches it however either is written.
    pub fn first_match(&self, server: &str, tool: &str) -> Option<usize> {
        // most lists a decision consults are empty (no blocklist, no access list)
        if self.ends.is_empty() {
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
        let text = &*self.text;
        let names = Names::new(server, tool);
        if !self.exact.is_empty() {
            consider(self.exact.call(text, &names));
        }
        if !self.server_any.is_empty() {
            consider(self.server_any.server(text, &names));
        }
        if !self.tool_any.is_empty() {
            consider(self.tool_any.tool(text, &names));
        }
        if let Some(g) = self
            .server_globs
            .find(names.server_hash, |g| *g.server == *server)
        {
            consider(
                g.globs
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
    pub fn matched(&self, server: &str, tool: &str) -> Option<EntryText> {
        self.first_match(server, tool).map(|i| self.entry(i))
    }
}

fn arena_offset(n: usize) -> u32 {
    // within the list limits a list's text is far under 4 GiB
    u32::try_from(n).expect("a compiled list's text is under 4 GiB")
}

/// Seed 001's matching as written: a linear scan with `f4c` over the list (each entry
/// tried under every spelling of a built-in tool). Kept as the reference the compiled
/// form is tested and benchmarked against.
pub fn reference_first_match(entries: &[Entry], server: &str, tool: &str) -> Option<usize> {
    entries.iter().position(|e| e.matches_call(server, tool))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exact(server: &str, tool: &str) -> Entry {
        Entry::Pair {
            server: Side::Exact(server.to_owned()),
            tool: Side::Exact(tool.to_owned()),
        }
    }

    /// Entries made without parsing may hold a `:` in a name; a call may too (the DENY
    /// rules look names up before they are validated). Where the `:` falls must never
    /// make a call match an entry it does not name.
    #[test]
    fn a_colon_in_a_name_matches_only_its_own_entry() {
        let entries = [
            exact("a", "b:c"),
            exact("a:b", "c"),
            exact("x", "y"),
            exact("p:", "q"),
            exact("p", ":q"),
            exact("", ""),
        ];
        let raw: Vec<String> = ["a:b:c", "a:b:c", "x:y", "p::q", "p::q", ":"]
            .map(str::to_owned)
            .to_vec();
        let list = CompiledList::new(&raw, &entries);
        let probes = [
            ("a", "b:c"),
            ("a:b", "c"),
            ("a", "b"),
            ("a:b:c", ""),
            ("", "a:b:c"),
            ("x", "y"),
            ("x:y", ""),
            ("", "x:y"),
            ("x:", "y"),
            ("p:", "q"),
            ("p", ":q"),
            ("p:", ":q"),
            ("", ""),
            (":", ""),
        ];
        for (server, tool) in probes {
            assert_eq!(
                list.first_match(server, tool),
                reference_first_match(&entries, server, tool),
                "{server:?} {tool:?}"
            );
        }
    }
}
