//! The restriction lists of a context compiled for lookups: allowed directories by
//! anchor, forbidden-file patterns (hash lookups for plain names and `*.suffix`, a glob
//! set for the rest), allowed hosts and endpoints with their ports.

use super::net::{normalise_host, split_host_port};
use super::paths::{Placed, place};
use super::problems::Problems;
use crate::policy::Rule;
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use rustc_hash::{FxHashMap, FxHashSet};

/// Which ports an allowed endpoint admits.
#[derive(Debug, Clone)]
pub(super) enum Ports {
    Any,
    Some(FxHashSet<u16>),
}

/// `allowedDirectories`, split by how each entry is anchored.
#[derive(Debug, Clone, Default)]
pub(super) struct Directories {
    pub absolute: FxHashSet<String>,
    /// Resolved against the call's working directory.
    pub relative: FxHashSet<String>,
    /// Windows absolute directories (`C:/proj`), ASCII-lowercased: Windows compares
    /// names without case.
    pub windows: FxHashSet<String>,
}

/// `forbiddenFiles` patterns without `/`, matched against each part of a path.
///
/// globset matches case-insensitive globs only through its regex set, whose cost grows
/// with the patterns; the two common shapes are hash lookups instead: a plain name
/// (`id_rsa`) and `*` followed by a plain suffix starting with `.` (`*.pem`,
/// `*.tar.gz`), keyed ASCII-lowercased (globset's case-insensitivity is ASCII only).
#[derive(Debug, Clone)]
pub(super) struct NameGlobs {
    /// Plain name → the first pattern that is it.
    exact: FxHashMap<Box<[u8]>, usize>,
    /// Suffix with its leading `.` → the first `*<suffix>` pattern.
    suffix: FxHashMap<Box<[u8]>, usize>,
    /// Every other pattern, and the pattern index of each.
    rest: GlobSet,
    rest_index: Vec<usize>,
}

impl NameGlobs {
    /// The first pattern (by index in `forbiddenFiles`) matching the part `name`.
    pub fn first_match(&self, name: &str) -> Option<usize> {
        let from_rest = if self.rest.is_empty() {
            None
        } else {
            self.rest.matches(name).first().map(|&i| self.rest_index[i])
        };
        if self.exact.is_empty() && self.suffix.is_empty() {
            return from_rest;
        }
        with_ascii_lowercase(name, |lower| {
            let exact = self.exact.get(lower).copied();
            let suffix = lower
                .iter()
                .enumerate()
                .filter(|(_, b)| **b == b'.')
                .filter_map(|(i, _)| self.suffix.get(&lower[i..]).copied())
                .min();
            [from_rest, exact, suffix].into_iter().flatten().min()
        })
    }
}

/// Calls `f` with `text` ASCII-lowercased, on the stack when it is short.
fn with_ascii_lowercase<R>(text: &str, f: impl FnOnce(&[u8]) -> R) -> R {
    let mut buf = [0u8; 256];
    match buf.get_mut(..text.len()) {
        Some(short) => {
            short.copy_from_slice(text.as_bytes());
            short.make_ascii_lowercase();
            f(short)
        }
        None => f(&text.to_ascii_lowercase().into_bytes()),
    }
}

/// What a name pattern is, when it is a hash lookup.
enum NameShape<'a> {
    Exact(&'a str),
    Suffix(&'a str),
    Glob,
}

fn name_shape(pattern: &str) -> NameShape<'_> {
    let plain = |s: &str| !s.contains(['*', '?', '[', ']', '{', '}', '\\']);
    match pattern.strip_prefix('*') {
        Some(suffix) if suffix.starts_with('.') && plain(suffix) => NameShape::Suffix(suffix),
        _ if plain(pattern) => NameShape::Exact(pattern),
        _ => NameShape::Glob,
    }
}

/// `forbiddenFiles`, compiled.
#[derive(Debug, Clone)]
pub(super) struct ForbiddenFiles {
    /// Patterns without `/`, matched against each part of a path.
    pub names: NameGlobs,
    /// Patterns with `/`, matched against the whole path.
    pub paths: GlobSet,
    pub patterns: Vec<String>,
    pub path_index: Vec<usize>,
}

pub(super) fn directories(field: &str, list: &[String], p: &mut Problems) -> Directories {
    p.len(field, list.len());
    let mut out = Directories::default();
    for (i, raw) in list.iter().enumerate() {
        let field = format!("{field}[{i}]");
        let trimmed = raw.strip_suffix("/**").unwrap_or(raw);
        if trimmed.contains(['*', '?', '[', '{']) {
            p.push(
                field,
                raw,
                Rule::Malformed,
                "a directory, not a glob: write `src/` (or `src/**`)".to_owned(),
            );
            continue;
        }
        match place(trimmed, None) {
            Placed::Absolute(a) => {
                out.absolute.insert(a);
            }
            Placed::Relative(r) => {
                out.relative.insert(r);
            }
            Placed::Windows(w) => {
                out.windows.insert(w.to_ascii_lowercase());
            }
            Placed::Escapes | Placed::Unknown => p.push(
                field,
                raw,
                Rule::Malformed,
                "a directory below the working directory (`design/`) or an absolute one (`/srv/x/`); no `..` above it, no `~`"
                    .to_owned(),
            ),
        }
    }
    out
}

pub(super) fn forbidden_files(field: &str, list: &[String], p: &mut Problems) -> ForbiddenFiles {
    p.len(field, list.len());
    let mut names = NameGlobs {
        exact: FxHashMap::default(),
        suffix: FxHashMap::default(),
        rest: GlobSet::empty(),
        rest_index: Vec::new(),
    };
    let mut rest = GlobSetBuilder::new();
    let mut paths = GlobSetBuilder::new();
    let mut path_index = Vec::new();
    for (i, raw) in list.iter().enumerate() {
        let glob = GlobBuilder::new(raw.trim_start_matches("./"))
            .case_insensitive(true)
            .literal_separator(true)
            .build();
        match glob {
            Ok(g) if raw.contains('/') => {
                paths.add(g);
                path_index.push(i);
            }
            Ok(g) => {
                let key = |s: &str| s.to_ascii_lowercase().into_bytes().into_boxed_slice();
                // the first pattern keeps its key: the lowest index is the one named
                match name_shape(raw) {
                    NameShape::Exact(name) => {
                        names.exact.entry(key(name)).or_insert(i);
                    }
                    NameShape::Suffix(suffix) => {
                        names.suffix.entry(key(suffix)).or_insert(i);
                    }
                    NameShape::Glob => {
                        rest.add(g);
                        names.rest_index.push(i);
                    }
                }
            }
            Err(e) => p.push(
                format!("{field}[{i}]"),
                raw,
                Rule::Malformed,
                format!("not a glob ({e}): e.g. `*.pem`, `secrets/**`"),
            ),
        }
    }
    let build = |b: GlobSetBuilder| b.build().unwrap_or_else(|_| GlobSet::empty());
    names.rest = build(rest);
    ForbiddenFiles {
        names,
        paths: build(paths),
        patterns: list.to_vec(),
        path_index,
    }
}

pub(super) fn hosts(field: &str, list: &[String], p: &mut Problems) -> FxHashSet<String> {
    p.len(field, list.len());
    let mut out = FxHashSet::default();
    for (i, raw) in list.iter().enumerate() {
        match split_host_port(raw) {
            None => bad_host(p, format!("{field}[{i}]"), raw),
            Some((h, None)) => match normalise_host(h) {
                Some(h) => {
                    out.insert(h);
                }
                None => bad_host(p, format!("{field}[{i}]"), raw),
            },
            Some((_, Some(_))) => p.push(
                format!("{field}[{i}]"),
                raw,
                Rule::Malformed,
                "a host without a port (`localhost`, `::1`): ports go in allowedEndpoints"
                    .to_owned(),
            ),
        }
    }
    out
}

fn bad_host(p: &mut Problems, field: String, raw: &str) {
    p.push(
        field,
        raw,
        Rule::Malformed,
        "not a host: write a name (`api.example.com`) or an address (`127.0.0.1`, `[::1]`)"
            .to_owned(),
    );
}

pub(super) fn endpoints(
    field: &str,
    list: &[String],
    p: &mut Problems,
) -> FxHashMap<String, Ports> {
    p.len(field, list.len());
    let mut out: FxHashMap<String, Ports> = FxHashMap::default();
    for (i, raw) in list.iter().enumerate() {
        let field = format!("{field}[{i}]");
        let Some((host, port)) = split_host_port(raw) else {
            bad_host(p, field, raw);
            continue;
        };
        let Some(host) = normalise_host(host) else {
            bad_host(p, field, raw);
            continue;
        };
        let port = match port {
            None | Some("*") => None,
            Some(n) => match n.parse::<u16>() {
                Ok(n) => Some(n),
                Err(_) => {
                    p.push(
                        field,
                        raw,
                        Rule::Malformed,
                        "a port is a number up to 65535, or `*` for any".to_owned(),
                    );
                    continue;
                }
            },
        };
        let entry = out
            .entry(host)
            .or_insert_with(|| Ports::Some(FxHashSet::default()));
        match (entry, port) {
            (Ports::Any, _) => {}
            (e, None) => *e = Ports::Any,
            (Ports::Some(set), Some(n)) => {
                set.insert(n);
            }
        }
    }
    out
}
