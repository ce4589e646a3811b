//! Command prefixes and their compiled lists: allowed prefixes in a trie of words
//! (a command's cost is its own length, whatever the list's), blocked prefixes
//! indexed by their command word.

use super::words::UNKNOWN;
use super::{READONLY, SimpleCommand, parse_command_line, program_name};
use rustc_hash::{FxHashMap, FxHashSet};
use std::sync::Arc;

/// A configured prefix, as words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prefix {
    pub raw: String,
    pub words: Vec<String>,
}

impl Prefix {
    /// The prefix's words as bash reads them; `None` for a prefix with no words. A
    /// prefix the reader finds opaque is split on blanks (it is a list entry, never
    /// run).
    pub fn parse(raw: &str) -> Option<Self> {
        let plain = raw
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || " \t_./:=,@%+-".contains(c));
        let words = if plain {
            raw.split_whitespace().map(str::to_owned).collect()
        } else {
            let mut read = parse_command_line(raw).commands;
            match read.pop() {
                Some(command) if read.is_empty() && command.opaque.is_none() => command.words,
                _ => raw.split_whitespace().map(str::to_owned).collect(),
            }
        };
        (!words.is_empty()).then(|| Self {
            raw: raw.to_owned(),
            words,
        })
    }

    /// Whether the command starts with this prefix's words: `git status` matches
    /// `git status -s`, not `git statusx`.
    pub fn matches(&self, command: &SimpleCommand) -> bool {
        command.opaque.is_none() && command.words.starts_with(&self.words)
    }
}

/// A trie of words; each node keeps the lowest list index of a prefix ending there.
#[derive(Debug, Clone, Default)]
struct Trie {
    end: Option<u32>,
    next: FxHashMap<String, Trie>,
}

/// A list of prefixes, compiled for matching whose cost does not grow with the list.
#[derive(Debug, Clone, Default)]
pub struct PrefixList {
    raw: Vec<Arc<str>>,
    words: Vec<Vec<String>>,
    /// Allowed matching: the words from the first.
    trie: Trie,
    /// Blocked matching: the file name of the first word → list indexes, ascending.
    by_command: FxHashMap<String, Vec<u32>>,
    /// Whether the prefix at each index stands for `@readonly`: an explicit prefix
    /// that matches comes first, so the order of the list never changes a decision.
    curated: Vec<bool>,
}

impl PrefixList {
    pub fn new(prefixes: Vec<Prefix>) -> Self {
        let mut list = Self::default();
        for (i, prefix) in prefixes.into_iter().enumerate() {
            let index = u32::try_from(i).unwrap_or(u32::MAX);
            list.curated.push(prefix.raw == READONLY);
            let mut node = &mut list.trie;
            for word in &prefix.words {
                node = node.next.entry(word.clone()).or_default();
            }
            let rank = |i: u32| (list.curated[i as usize], i);
            node.end = Some(match node.end {
                Some(end) if rank(end) <= rank(index) => end,
                _ => index,
            });
            if let Some(first) = prefix.words.first() {
                list.by_command
                    .entry(program_name(first))
                    .or_default()
                    .push(index);
            }
            list.raw.push(Arc::from(prefix.raw));
            list.words.push(prefix.words);
        }
        list
    }

    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }

    pub fn len(&self) -> usize {
        self.raw.len()
    }

    /// The words of the prefix at `index`.
    pub fn words(&self, index: usize) -> &[String] {
        &self.words[index]
    }

    /// The prefix as written at `index`.
    pub fn raw(&self, index: usize) -> &Arc<str> {
        &self.raw[index]
    }

    /// The first prefix the command starts with: an explicit prefix before one
    /// `@readonly` stands for, then in list order (so the list's order never changes
    /// whether a command is allowed). The command's words are tried from the first
    /// and from the command word: what an opaque command does not have, its
    /// assignments are harmless (`LANG=C ls` is `ls`). An opaque command starts with
    /// none.
    pub fn first_allowing(&self, command: &SimpleCommand) -> Option<usize> {
        if command.opaque.is_some() || self.raw.is_empty() {
            return None;
        }
        let rank = |i: u32| (self.curated[i as usize], i);
        let mut best = None::<u32>;
        let starts: &[usize] = if command.command_at > 0 {
            &[0, command.command_at]
        } else {
            &[0]
        };
        for &start in starts {
            let mut node = &self.trie;
            for word in command.words.get(start..).unwrap_or_default() {
                match node.next.get(word.as_str()) {
                    Some(next) => node = next,
                    None => break,
                }
                if let Some(end) = node.end
                    && best.is_none_or(|b| rank(end) < rank(b))
                {
                    best = Some(end);
                }
            }
        }
        best.map(|i| i as usize)
    }

    /// The first prefix (in list order) that blocks the command: its first word is
    /// the file name of a command word (any word after a wrapper), and its other
    /// words follow in order, other words between them allowed (`git -C . push`
    /// matches `git push`). `find -delete` is matched by any prefix of `rm`.
    pub fn first_blocking(&self, command: &SimpleCommand) -> Option<usize> {
        if self.by_command.is_empty() {
            return None;
        }
        let words = &command.words;
        let mut best = None::<u32>;
        let mut seen = FxHashSet::default();
        let mut positions = None;
        for &at in &command.command_words {
            let name = program_name(&words[at]);
            let Some(bucket) = self.by_command.get(&name) else {
                continue;
            };
            // the earliest place of a command word leaves the most words after it
            if command.command_words.len() > 1 && !seen.insert(name) {
                continue;
            }
            for &index in bucket {
                if best.is_some_and(|b| b <= index) {
                    break;
                }
                let rest = &self.words[index as usize][1..];
                if follows_in_order(rest, words, at + 1, &mut positions) {
                    best = Some(index);
                    break;
                }
            }
        }
        if command.deletes
            && let Some(&index) = self.by_command.get("rm").and_then(|b| b.first())
        {
            best = Some(best.map_or(index, |b| b.min(index)));
        }
        best.map(|i| i as usize)
    }
}

/// Where each word of a command stands, built once per command when a prefix of
/// several words is tried against a long command.
type Positions<'a> = FxHashMap<&'a str, Vec<u32>>;

/// Whether `rest` occurs in order within `words[from..]`.
fn follows_in_order<'a>(
    rest: &[String],
    words: &'a [String],
    from: usize,
    positions: &mut Option<Positions<'a>>,
) -> bool {
    if rest.is_empty() {
        return true;
    }
    // short commands: a scan; long ones: an index, so many prefixes stay linear. A
    // word a substitution yields may be any word: it matches (blocked prefixes err
    // towards matching)
    let unknown = |w: &String| w.contains(UNKNOWN);
    if words.len() - from <= 32 || words[from..].iter().any(unknown) {
        let mut it = words[from..].iter();
        return rest.iter().all(|r| it.any(|w| w == r || unknown(w)));
    }
    let positions = positions.get_or_insert_with(|| {
        let mut map: Positions<'a> = FxHashMap::default();
        for (i, w) in words.iter().enumerate() {
            map.entry(w.as_str()).or_default().push(i as u32);
        }
        map
    });
    let mut next = from as u32;
    for r in rest {
        let Some(at) = positions.get(r.as_str()) else {
            return false;
        };
        let k = at.partition_point(|&p| p < next);
        match at.get(k) {
            Some(&p) => next = p + 1,
            None => return false,
        }
    }
    true
}
