//! One list's text in one allocation, with hash tables keyed by spans of it: a list of
//! 100,000 entries is a handful of allocations rather than hundreds of thousands, and
//! no name is owned twice (issue 23's memory goal).

use hashbrown::HashTable;
use rustc_hash::FxHasher;
use std::hash::Hasher;
use std::sync::Arc;

/// An entry as written, sharing its list's text: a clone costs a reference count, as
/// the `Arc<str>` it replaces did, so a decision that names its entry allocates nothing.
/// Made on every decision an entry decides, so making it checks nothing: the span is
/// checked when it is read (`as_str`), which few decisions do.
#[derive(Clone)]
pub struct EntryText {
    text: Arc<str>,
    start: u32,
    end: u32,
}

impl EntryText {
    /// `text[start..end]`, where `start..end` is a whole entry of a compiled list (so on
    /// character boundaries); anything else reads as empty.
    #[inline]
    pub(super) fn span(text: &Arc<str>, start: u32, end: u32) -> Self {
        Self {
            text: text.clone(),
            start,
            end,
        }
    }

    /// True when this entry is a span of `text` (the same allocation).
    #[inline]
    pub(super) fn shares(&self, text: &Arc<str>) -> bool {
        Arc::ptr_eq(&self.text, text)
    }

    pub fn as_str(&self) -> &str {
        // a span of a compiled list is a whole entry; the check only keeps a bad span
        // from panicking
        self.text
            .get(self.start as usize..self.end as usize)
            .unwrap_or_default()
    }
}

impl std::ops::Deref for EntryText {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for EntryText {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl std::borrow::Borrow<str> for EntryText {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl std::fmt::Display for EntryText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Debug for EntryText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

impl PartialEq for EntryText {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for EntryText {}

impl PartialEq<str> for EntryText {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for EntryText {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl std::hash::Hash for EntryText {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl From<Arc<str>> for EntryText {
    fn from(text: Arc<str>) -> Self {
        // longer than a span can say: the text is cut (only a text made outside a
        // compiled list could be, and entries are limited far below 4 GiB)
        let end = u32::try_from(text.len()).unwrap_or(u32::MAX);
        Self {
            text,
            start: 0,
            end,
        }
    }
}

impl From<&str> for EntryText {
    fn from(text: &str) -> Self {
        Arc::<str>::from(text).into()
    }
}

impl From<String> for EntryText {
    fn from(text: String) -> Self {
        Arc::<str>::from(text).into()
    }
}

/// A key in the text: `len` bytes from `start`, standing for entry `index`. Offsets are
/// `u32`: a list within its limits (100,000 entries of two names of at most 256
/// characters) is far under 4 GiB of text.
#[derive(Debug, Clone, Copy)]
struct Slot {
    start: u32,
    len: u32,
    index: u32,
}

/// What a [`SpanTable`] is keyed by: a name (`server:*`, `*:tool`), or a pair whose
/// span spells `server:tool` (neither name holding a `:`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Keys {
    Names,
    Pairs,
}

/// Spans of one text found by what they spell, each with the index of the first entry
/// that put it there. The text is kept by the caller and passed to every call, so the
/// keys are not owned twice.
#[derive(Debug, Clone)]
pub(super) struct SpanTable {
    keys: Keys,
    slots: HashTable<Slot>,
}

// Every lookup of a decision goes through these: a call's two names are hashed once
// ([`Names`]) and every table probed with those hashes (issue 23: the decision as fast
// as before the one-text lists).

/// A name's hash in every table.
#[inline]
pub(super) fn hash_name(name: &[u8]) -> u64 {
    let mut h = FxHasher::default();
    h.write(name);
    h.finish()
}

/// A pair's hash, from its two names' hashes.
#[inline]
fn hash_pair(server: u64, tool: u64) -> u64 {
    let mut h = FxHasher::default();
    h.write_u64(server);
    h.write_u64(tool);
    h.finish()
}

/// A call's server and tool with their hashes: made once per lookup of a call, read by
/// every table.
#[derive(Clone, Copy)]
pub(super) struct Names<'a> {
    server: &'a [u8],
    tool: &'a [u8],
    pub(super) server_hash: u64,
    tool_hash: u64,
}

impl<'a> Names<'a> {
    #[inline]
    pub(super) fn new(server: &'a str, tool: &'a str) -> Self {
        let (server, tool) = (server.as_bytes(), tool.as_bytes());
        Self {
            server,
            tool,
            server_hash: hash_name(server),
            tool_hash: hash_name(tool),
        }
    }
}

/// The key's bytes: compared as bytes, a span needs no check of character boundaries.
#[inline]
fn span(text: &[u8], slot: Slot) -> &[u8] {
    let start = slot.start as usize;
    text.get(start..start + slot.len as usize)
        .unwrap_or_default()
}

/// `server:tool` split at its first `:`.
fn split_pair(key: &[u8]) -> (&[u8], &[u8]) {
    match key.iter().position(|&b| b == b':') {
        Some(at) => (&key[..at], &key[at + 1..]),
        None => (key, &[]),
    }
}

/// Whether `key` is `server`, `:`, `tool`, without joining them. A key holds one `:`,
/// so a server or tool with a `:` spells no key.
#[inline]
fn spells_pair(key: &[u8], server: &[u8], tool: &[u8]) -> bool {
    key.len() == server.len() + 1 + tool.len()
        && key[..server.len()] == *server
        && key[server.len()] == b':'
        && key[server.len() + 1..] == *tool
}

fn offset(n: usize) -> u32 {
    // within the list limits a list's text is far under 4 GiB (see `Slot`)
    u32::try_from(n).expect("a compiled list's text is under 4 GiB")
}

impl SpanTable {
    pub(super) fn new(keys: Keys) -> Self {
        Self {
            keys,
            slots: HashTable::new(),
        }
    }

    pub(super) fn reserve(&mut self, text: &str, additional: usize) {
        let keys = self.keys;
        self.slots
            .reserve(additional, |slot| Self::hash_slot(keys, text, *slot));
    }

    /// Gives back room reserved beyond what the table holds.
    pub(super) fn shrink_to_fit(&mut self, text: &str) {
        let keys = self.keys;
        self.slots
            .shrink_to_fit(|slot| Self::hash_slot(keys, text, *slot));
    }

    fn hash_slot(keys: Keys, text: &str, slot: Slot) -> u64 {
        let key = span(text.as_bytes(), slot);
        match keys {
            Keys::Names => hash_name(key),
            Keys::Pairs => {
                let (server, tool) = split_pair(key);
                hash_pair(hash_name(server), hash_name(tool))
            }
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.slots.len()
    }

    /// The index stored under `name` (a table of [`Keys::Names`]).
    pub(super) fn name(&self, text: &str, name: &str) -> Option<usize> {
        self.name_hashed(text, name.as_bytes(), hash_name(name.as_bytes()))
    }

    /// The index stored under the call's server (a table of [`Keys::Names`]).
    #[inline]
    pub(super) fn server(&self, text: &str, names: &Names<'_>) -> Option<usize> {
        self.name_hashed(text, names.server, names.server_hash)
    }

    /// The index stored under the call's tool (a table of [`Keys::Names`]).
    #[inline]
    pub(super) fn tool(&self, text: &str, names: &Names<'_>) -> Option<usize> {
        self.name_hashed(text, names.tool, names.tool_hash)
    }

    #[inline]
    fn name_hashed(&self, text: &str, name: &[u8], hash: u64) -> Option<usize> {
        debug_assert_eq!(self.keys, Keys::Names);
        let text = text.as_bytes();
        self.slots
            .find(hash, |slot| span(text, *slot) == name)
            .map(|slot| slot.index as usize)
    }

    /// The index stored under `server:tool` (a table of [`Keys::Pairs`]).
    pub(super) fn pair(&self, text: &str, server: &str, tool: &str) -> Option<usize> {
        self.call(text, &Names::new(server, tool))
    }

    /// The index stored under the call's `server:tool` (a table of [`Keys::Pairs`]).
    #[inline]
    pub(super) fn call(&self, text: &str, names: &Names<'_>) -> Option<usize> {
        debug_assert_eq!(self.keys, Keys::Pairs);
        let text = text.as_bytes();
        self.slots
            .find(hash_pair(names.server_hash, names.tool_hash), |slot| {
                spells_pair(span(text, *slot), names.server, names.tool)
            })
            .map(|slot| slot.index as usize)
    }

    /// Stores `text[start..start + len]` under `index`. The key must not be in the
    /// table yet (look it up first: the first entry in list order wins), and a pair's
    /// server and tool must hold no `:` (the key holds one, between them).
    pub(super) fn insert(&mut self, text: &str, start: usize, len: usize, index: usize) {
        let slot = Slot {
            start: offset(start),
            len: offset(len),
            index: offset(index),
        };
        let keys = self.keys;
        let hash = Self::hash_slot(keys, text, slot);
        self.slots
            .insert_unique(hash, slot, |slot| Self::hash_slot(keys, text, *slot));
    }

    /// Every key with its index, in no particular order.
    #[cfg(test)]
    pub(super) fn iter<'a>(&'a self, text: &'a str) -> impl Iterator<Item = (&'a str, usize)> {
        self.slots.iter().map(move |slot| {
            let start = slot.start as usize;
            (&text[start..start + slot.len as usize], slot.index as usize)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    /// Names from a small alphabet, so keys collide and repeat.
    fn name() -> impl Strategy<Value = String> {
        "[ab:é_]{0,4}"
    }

    proptest! {
        /// A table of spans answers as a `HashMap` of owned keys where the first
        /// insert wins, for keys present and absent.
        #[test]
        fn pairs_agree_with_a_hash_map(
            keys in proptest::collection::vec((name(), name()), 0..40),
            probes in proptest::collection::vec((name(), name()), 0..40),
        ) {
            let mut text = String::new();
            let mut table = SpanTable::new(Keys::Pairs);
            let mut model: HashMap<(String, String), usize> = HashMap::new();
            for (i, (server, tool)) in keys.iter().enumerate() {
                if server.contains(':') || tool.contains(':') {
                    continue; // the table's rule: the caller keeps such pairs elsewhere
                }
                model.entry((server.clone(), tool.clone())).or_insert(i);
                if table.pair(&text, server, tool).is_none() {
                    let start = text.len();
                    text.push_str(server);
                    text.push(':');
                    text.push_str(tool);
                    table.insert(&text, start, text.len() - start, i);
                }
            }
            prop_assert_eq!(table.len(), model.len());
            for (server, tool) in keys.iter().chain(&probes) {
                prop_assert_eq!(
                    table.pair(&text, server, tool),
                    model.get(&(server.clone(), tool.clone())).copied(),
                    "{}:{}", server, tool
                );
            }
        }

        #[test]
        fn names_agree_with_a_hash_map(
            keys in proptest::collection::vec(name(), 0..40),
            probes in proptest::collection::vec(name(), 0..40),
        ) {
            let mut text = String::new();
            let mut table = SpanTable::new(Keys::Names);
            let mut model: HashMap<String, usize> = HashMap::new();
            for (i, key) in keys.iter().enumerate() {
                model.entry(key.clone()).or_insert(i);
                if table.name(&text, key).is_none() {
                    let start = text.len();
                    text.push_str(key);
                    table.insert(&text, start, key.len(), i);
                }
            }
            let held: HashMap<String, usize> =
                table.iter(&text).map(|(k, i)| (k.to_owned(), i)).collect();
            prop_assert_eq!(&held, &model);
            for key in keys.iter().chain(&probes) {
                prop_assert_eq!(table.name(&text, key), model.get(key).copied());
            }
        }
    }

    #[test]
    fn an_entry_text_reads_as_its_span() {
        let text: Arc<str> = Arc::from("github:*srv:tool");
        let entry = EntryText::span(&text, 8, 16);
        assert_eq!(entry, "srv:tool");
        assert_eq!(entry.to_string(), "srv:tool");
        assert_eq!(format!("{entry:?}"), "\"srv:tool\"");
        assert_eq!(entry, EntryText::from("srv:tool"));
        assert_eq!(
            EntryText::span(&text, 8, 17),
            "",
            "past the end reads as empty"
        );
        let accented: Arc<str> = Arc::from("é:x");
        assert_eq!(
            EntryText::span(&accented, 1, 3),
            "",
            "inside a character reads as empty"
        );
    }
}
