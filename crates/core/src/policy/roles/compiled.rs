//! A roles document checked and compiled for decisions: hash lookups for agents,
//! operations, directories (looked up by a path's ancestors) and hosts, and hash
//! lookups or one glob set per forbidden-file list, so a check costs the same with
//! ten rules or a thousand.

use super::Obligation;
use super::model::{ContextAllowList, Restrictions, RolesDocument};
use super::net::parse_size;
use super::problems::Problems;
pub(super) use super::restrictions::{Directories, ForbiddenFiles, Ports};
use super::restrictions::{directories, endpoints, forbidden_files, hosts};
use crate::policy::{PolicyError, Rule};
use rustc_hash::{FxHashMap, FxHashSet};
use std::sync::Arc;

pub use super::problems::MAX_ROLE_ENTRIES;

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
        max_components: r.max_components_per_session.map(u64::from),
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
            .map(|(op, n)| (op.clone(), u64::from(*n)))
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
