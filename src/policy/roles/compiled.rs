//! A roles document checked and compiled for decisions: hash lookups for agents,
//! operations, directories (looked up by a path's ancestors) and hosts, and hash
//! lookups or one glob set per forbidden-file list, so a check costs the same with
//! ten rules or a thousand.

use super::Obligation;
use super::model::{ContextAllowList, Restrictions, RolesDocument};
use super::net::{normalise_host, parse_size, split_host_port};
use super::paths::{Placed, place};
use crate::policy::{EntryProblem, PolicyError, Rule};
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use rustc_hash::{FxHashMap, FxHashSet};
use std::sync::Arc;

/// The most entries of any one list of a roles document.
pub const MAX_ROLE_ENTRIES: usize = 100_000;

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

/// One context's allow-list, compiled.
#[derive(Debug, Clone)]
pub struct CompiledContext {
    pub(super) allowed: FxHashSet<String>,
    pub(super) max_components: Option<u64>,
    pub(super) forbidden_components: FxHashSet<String>,
    pub(super) component_types: Option<FxHashSet<String>>,
    pub(super) file_types: Option<FxHashSet<String>>,
    pub(super) directories: Option<Directories>,
    pub(super) forbidden_files: Option<ForbiddenFiles>,
    pub(super) max_file_size: Option<(u64, String)>,
    pub(super) hosts: Option<FxHashSet<String>>,
    pub(super) endpoints: Option<FxHashMap<String, Ports>>,
    pub(super) protocols: Option<FxHashSet<String>>,
    pub(super) databases: Option<FxHashSet<String>>,
    pub(super) tables: Option<FxHashSet<String>>,
    pub(super) forbidden_operations: FxHashSet<String>,
    pub(super) quotas: FxHashMap<String, u64>,
    pub(super) obligations: Arc<[Obligation]>,
}

/// A team's roles document compiled for decisions.
#[derive(Debug, Clone, Default)]
pub struct CompiledRoles {
    pub(super) category_of: FxHashMap<String, Arc<str>>,
    /// Agent id → its own allow-list's contexts.
    pub(super) by_agent: FxHashMap<String, usize>,
    /// Role id → the role's allow-list's contexts.
    pub(super) by_role: FxHashMap<String, usize>,
    /// Agent id → its role.
    pub(super) role_of: FxHashMap<String, String>,
    pub(super) lists: Vec<FxHashMap<String, Arc<CompiledContext>>>,
    pub(super) default_context: Option<String>,
}

impl CompiledRoles {
    /// True when the document has no allow-list: roles are not in use for the team,
    /// and calls are decided as if they named no agent.
    pub fn is_empty(&self) -> bool {
        self.lists.is_empty()
    }
}

/// Inserts unless `key` is there already; returns what was there.
fn keep_first<V: Clone>(map: &mut FxHashMap<String, V>, key: &str, value: V) -> Option<V> {
    match map.get(key) {
        Some(v) => Some(v.clone()),
        None => {
            map.insert(key.to_owned(), value);
            None
        }
    }
}

struct Problems(Vec<EntryProblem>);

impl Problems {
    fn push(&mut self, field: String, entry: impl Into<String>, rule: Rule, hint: String) {
        self.0.push(EntryProblem {
            field,
            entry: entry.into(),
            rule,
            hint,
        });
    }

    fn name(&mut self, field: String, name: &str) {
        if name.trim().is_empty() {
            self.push(field, name, Rule::Empty, "write a name".to_owned());
        } else if name.len() > 256 {
            self.push(
                field,
                format!("{}…", name.chars().take(64).collect::<String>()),
                Rule::TooLong,
                "a name is at most 256 bytes".to_owned(),
            );
        }
    }

    fn len(&mut self, field: &str, n: usize) -> bool {
        if n > MAX_ROLE_ENTRIES {
            self.push(
                field.to_owned(),
                format!("{n} entries"),
                Rule::TooMany,
                format!("at most {MAX_ROLE_ENTRIES} entries"),
            );
            return false;
        }
        true
    }
}

/// Checks a roles document and compiles it, reporting every problem at once.
pub fn compile_roles(doc: &RolesDocument) -> Result<CompiledRoles, PolicyError> {
    let mut p = Problems(Vec::new());
    let mut out = CompiledRoles {
        default_context: doc.default_context.clone(),
        ..CompiledRoles::default()
    };
    for (name, category) in &doc.tool_categories {
        let field = format!("toolCategories.{name}");
        p.name(field.clone(), name);
        // `@name` in an allowlist is a preset or a category: never both
        if crate::policy::builtin::preset(name).is_some() {
            p.push(
                field.clone(),
                name,
                Rule::Duplicate,
                format!("{name} is a built-in preset (@{name}): name the category otherwise"),
            );
        }
        p.len(&field, category.tools.len());
        for (i, op) in category.tools.iter().enumerate() {
            p.name(format!("{field}.tools[{i}]"), op);
            let name: Arc<str> = name.as_str().into();
            // the first category keeps the operation; the second is the problem
            if let Some(other) = keep_first(&mut out.category_of, op, name) {
                p.push(
                    format!("{field}.tools[{i}]"),
                    op,
                    Rule::Duplicate,
                    format!("already in category {other}: an operation belongs to one category"),
                );
            }
        }
    }
    for (role, def) in &doc.agent_roles {
        p.name(format!("agentRoles.{role}"), role);
        for (i, agent) in def.agent_ids.iter().enumerate() {
            let field = format!("agentRoles.{role}.agentIds[{i}]");
            p.name(field.clone(), agent);
            if let Some(other) = keep_first(&mut out.role_of, agent, role.clone()) {
                p.push(
                    field,
                    agent,
                    Rule::Duplicate,
                    format!("already has role {other}: an agent has one role"),
                );
            }
        }
    }
    for (key, list) in &doc.allow_lists {
        let field = format!("allowLists.{key}");
        let index = out.lists.len();
        match (&list.agent_id, &list.role_id) {
            (Some(agent), _) => {
                if keep_first(&mut out.by_agent, agent, index).is_some() {
                    p.push(
                        format!("{field}.agentId"),
                        agent,
                        Rule::Duplicate,
                        "another allow-list is for this agent: merge their contexts".to_owned(),
                    );
                }
            }
            (None, Some(role)) => {
                if keep_first(&mut out.by_role, role, index).is_some() {
                    p.push(
                        format!("{field}.roleId"),
                        role,
                        Rule::Duplicate,
                        "another allow-list is for this role: merge their contexts".to_owned(),
                    );
                }
            }
            (None, None) => p.push(
                field.clone(),
                key,
                Rule::Empty,
                "name the agent (agentId) or the role (roleId) this allow-list is for".to_owned(),
            ),
        }
        if let Some(role) = &list.role_id
            && !doc.agent_roles.contains_key(role)
        {
            p.push(
                format!("{field}.roleId"),
                role,
                Rule::UnknownName,
                "no such role in agentRoles: define it or fix the name".to_owned(),
            );
        }
        let mut contexts = FxHashMap::default();
        for (context, allow) in &list.contexts {
            let field = format!("{field}.contexts.{context}");
            p.name(field.clone(), context);
            let compiled = compile_context(&field, allow, &out.category_of, &mut p);
            contexts.insert(context.clone(), Arc::new(compiled));
        }
        out.lists.push(contexts);
    }
    if p.0.is_empty() {
        Ok(out)
    } else {
        Err(PolicyError::InvalidEntries(p.0))
    }
}

fn set(field: &str, list: &[String], lower: bool, p: &mut Problems) -> FxHashSet<String> {
    p.len(field, list.len());
    list.iter()
        .enumerate()
        .map(|(i, s)| {
            p.name(format!("{field}[{i}]"), s);
            if lower { s.to_lowercase() } else { s.clone() }
        })
        .collect()
}

fn compile_context(
    field: &str,
    allow: &ContextAllowList,
    category_of: &FxHashMap<String, Arc<str>>,
    p: &mut Problems,
) -> CompiledContext {
    let mut allowed = FxHashSet::default();
    for (category, ops) in &allow.allowed_tools {
        let field = format!("{field}.allowedTools.{category}");
        p.len(&field, ops.len());
        for (i, op) in ops.iter().enumerate() {
            match category_of.get(op) {
                Some(c) if **c == **category => {
                    allowed.insert(op.clone());
                }
                Some(c) => p.push(
                    format!("{field}[{i}]"),
                    op,
                    Rule::UnknownName,
                    format!("the operation is in category {c}: list it there"),
                ),
                None => p.push(
                    format!("{field}[{i}]"),
                    op,
                    Rule::UnknownName,
                    format!("no tool category lists this operation: add it to {category}"),
                ),
            }
        }
    }
    let r = &allow.restrictions;
    let field = format!("{field}.restrictions");
    let f = |name: &str| format!("{field}.{name}");
    CompiledContext {
        allowed,
        max_components: r.max_components_per_session,
        forbidden_components: set(&f("forbiddenComponents"), &r.forbidden_components, true, p),
        component_types: r
            .allowed_component_types
            .as_ref()
            .map(|l| set(&f("allowedComponentTypes"), l, false, p)),
        file_types: r
            .allowed_file_types
            .as_ref()
            .map(|l| set(&f("allowedFileTypes"), l, false, p)),
        directories: r
            .allowed_directories
            .as_ref()
            .map(|l| directories(&f("allowedDirectories"), l, p)),
        forbidden_files: (!r.forbidden_files.is_empty())
            .then(|| forbidden_files(&f("forbiddenFiles"), &r.forbidden_files, p)),
        max_file_size: r.max_file_size.as_ref().and_then(|s| match parse_size(s) {
            Some(n) => Some((n, s.clone())),
            None => {
                p.push(
                    f("maxFileSize"),
                    s,
                    Rule::Malformed,
                    "a size is a number and a unit: 512, 10KB, 10MB, 1GB".to_owned(),
                );
                None
            }
        }),
        hosts: r
            .allowed_network_hosts
            .as_ref()
            .map(|l| hosts(&f("allowedNetworkHosts"), l, p)),
        endpoints: r
            .allowed_endpoints
            .as_ref()
            .map(|l| endpoints(&f("allowedEndpoints"), l, p)),
        protocols: r
            .allowed_protocols
            .as_ref()
            .map(|l| set(&f("allowedProtocols"), l, true, p)),
        databases: r
            .allowed_databases
            .as_ref()
            .map(|l| set(&f("allowedDatabases"), l, false, p)),
        tables: r
            .allowed_tables
            .as_ref()
            .map(|l| set(&f("allowedTables"), l, false, p)),
        forbidden_operations: set(&f("forbiddenOperations"), &r.forbidden_operations, false, p),
        quotas: r
            .session_quotas
            .iter()
            .map(|(op, n)| (op.clone(), *n))
            .collect(),
        obligations: obligations(r).into(),
    }
}

fn obligations(r: &Restrictions) -> Vec<Obligation> {
    r.obligations()
        .into_iter()
        .map(|(name, value)| Obligation {
            name,
            value: match value {
                serde_json::Value::String(s) => s,
                other => other.to_string(),
            },
        })
        .collect()
}

fn directories(field: &str, list: &[String], p: &mut Problems) -> Directories {
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

fn forbidden_files(field: &str, list: &[String], p: &mut Problems) -> ForbiddenFiles {
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

fn hosts(field: &str, list: &[String], p: &mut Problems) -> FxHashSet<String> {
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

fn endpoints(field: &str, list: &[String], p: &mut Problems) -> FxHashMap<String, Ports> {
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
