//! Seed 004's `evaluateAllowList`, default deny: the allow-list for (agent, context),
//! the operation's category, then every restriction on what the call touches.
//!
//! Nothing here is cached: the answer depends on the arguments (seed 004's cache key
//! leaves them out and would answer a second path with the first one's decision).

use super::compiled::{CompiledContext, CompiledRoles, Ports};
use super::net::Target;
use super::paths::{Located, Written, ancestors, components, extname, locate, windows_ancestors};
use super::restrictions::Directories;
use super::{Obligation, RoleCall, RoleVerdict};
use crate::policy::Reason;
use std::sync::Arc;

/// Seed 004's `evaluateAllowList` over what `call` touches.
pub fn evaluate(roles: &CompiledRoles, call: &RoleCall<'_>) -> RoleVerdict {
    let agent = &call.agent;
    let context = agent.context.or(roles.default_context.as_deref());
    let Some(ctx) = allow_list(roles, agent.id, agent.role, context) else {
        let who = match (agent.id, agent.role) {
            (Some(id), _) => format!("agent {id}"),
            (None, Some(role)) => format!("role {role}"),
            (None, None) => "no agent".to_owned(),
        };
        return RoleVerdict::deny(
            Reason::NoRoleAllowlist,
            None,
            format!(
                "No allow-list found for {who} in context {}",
                context.unwrap_or("(none)")
            ),
        );
    };
    let op = call.operation;
    match roles.category_of.get(op) {
        Some(category) if !ctx.allowed.contains(op) => {
            return RoleVerdict::deny(
                Reason::NotInRoleAllowlist,
                Some(category.clone()),
                format!("Operation {op} not in allow-list for {category}"),
            );
        }
        Some(_) => {}
        None => {
            return RoleVerdict::deny(
                Reason::NotInRoleAllowlist,
                None,
                format!("Operation {op} not in allow-list: no tool category lists it"),
            );
        }
    }
    restrictions(ctx, call)
}

/// Seed 004's `getAllowList`: the agent's own list, else its role's (the role that
/// names it, else the role the call claims, e.g. a subagent's type).
fn allow_list<'r>(
    roles: &'r CompiledRoles,
    id: Option<&str>,
    role: Option<&str>,
    context: Option<&str>,
) -> Option<&'r CompiledContext> {
    let list = match id.and_then(|id| roles.by_agent.get(id)) {
        Some(list) => list,
        None => {
            // an agent a role names never takes another role by claiming it
            let bound = id.and_then(|id| roles.role_of.get(id)).map(String::as_str);
            roles.by_role.get(bound.or(role)?)?
        }
    };
    roles.lists[*list].get(context?).map(Arc::as_ref)
}

/// Collects the first DENY, else the first ASK, over every restriction.
struct Outcome {
    deny: Option<RoleVerdict>,
    ask: Option<RoleVerdict>,
}

impl Outcome {
    fn deny(&mut self, restriction: &str, message: String) {
        if self.deny.is_none() {
            self.deny = Some(RoleVerdict::deny(
                Reason::Restricted,
                Some(restriction.into()),
                message,
            ));
        }
    }

    fn ask(&mut self, restriction: &str, message: String) {
        if self.ask.is_none() {
            self.ask = Some(RoleVerdict::Ask {
                entry: Some(restriction.into()),
                message,
            });
        }
    }
}

fn restrictions(ctx: &CompiledContext, call: &RoleCall<'_>) -> RoleVerdict {
    let t = call.touches;
    let op = call.operation;
    let mut out = Outcome {
        deny: None,
        ask: None,
    };
    if ctx.forbidden_operations.contains(op) {
        out.deny(
            "forbiddenOperations",
            format!("Operation {op} is forbidden by forbiddenOperations"),
        );
    }
    // seed 004's checks and messages, in its order
    if let (Some(max), Some(count)) = (ctx.max_components, t.component_count)
        && count >= max
    {
        out.deny(
            "maxComponentsPerSession",
            format!("Component limit {max} exceeded"),
        );
    }
    if let Some(kind) = &t.component_type {
        if ctx.forbidden_components.contains(&kind.to_lowercase()) {
            out.deny(
                "forbiddenComponents",
                format!("Component type {kind} is forbidden"),
            );
        }
        if let Some(allowed) = &ctx.component_types
            && !allowed.contains(kind)
        {
            out.deny(
                "allowedComponentTypes",
                format!("Component type {kind} not allowed by allowedComponentTypes"),
            );
        }
    }
    if !t.paths.is_empty()
        || !t.directories.is_empty()
        || !t.loose_paths.is_empty()
        || !t.names.is_empty()
    {
        let placed_cwd = call.cwd.map(|c| locate(c, None));
        let cwd = Cwd {
            raw: call.cwd,
            absolute: match &placed_cwd {
                Some(Located::Absolute(c, _)) => Some(c.as_ref()),
                _ => None,
            },
        };
        for path in &t.paths {
            check_path(ctx, path, PathKind::File, cwd, &mut out);
        }
        for dir in &t.directories {
            check_path(ctx, dir, PathKind::Directory, cwd, &mut out);
        }
        for path in &t.loose_paths {
            check_loose_path(ctx, path, cwd, &mut out);
        }
        for name in &t.names {
            check_path(ctx, name, PathKind::Name, cwd, &mut out);
        }
    }
    let mut extra: Vec<Obligation> = Vec::new();
    if let Some((max, text)) = &ctx.max_file_size {
        match t.file_size {
            Some(n) if n > *max => out.deny(
                "maxFileSize",
                format!("File size {n} bytes exceeds maxFileSize {text}"),
            ),
            Some(_) => {}
            None => extra.push(Obligation {
                name: "maxFileSize".to_owned(),
                value: text.clone(),
            }),
        }
    }
    for protocol in &t.protocols {
        check_protocol(ctx, protocol, &mut out);
    }
    for target in &t.targets {
        check_target(ctx, target, &mut out);
    }
    if let Some(allowed) = &ctx.databases {
        for db in t.databases.iter().filter(|d| !allowed.contains(*d)) {
            out.deny(
                "allowedDatabases",
                format!("Database {db} not allowed by allowedDatabases"),
            );
        }
    }
    if let Some(allowed) = &ctx.tables {
        for table in t.tables.iter().filter(|d| !allowed.contains(*d)) {
            out.deny(
                "allowedTables",
                format!("Table {table} not allowed by allowedTables"),
            );
        }
    }
    if let Some(why) = &t.unreadable
        && (ctx.directories.is_some()
            || ctx.forbidden_files.is_some()
            || ctx.file_types.is_some()
            || ctx.hosts.is_some()
            || ctx.endpoints.is_some()
            || ctx.protocols.is_some())
    {
        out.ask(
            "unreadable",
            format!("What the call touches cannot be read ({why}), and this context restricts paths or hosts"),
        );
    }
    let quota = ctx.quotas.get(op).map(|&max| super::Quota {
        operation: op.to_owned(),
        max,
    });
    if quota.is_some() && call.agent.session.is_none() {
        out.ask(
            "sessionQuotas",
            format!("Operation {op} has a session quota and the call names no session"),
        );
    }
    if let Some(deny) = out.deny {
        return deny;
    }
    if let Some(ask) = out.ask {
        return ask;
    }
    let obligations = if extra.is_empty() {
        ctx.obligations.clone()
    } else {
        ctx.obligations.iter().cloned().chain(extra).collect()
    };
    RoleVerdict::Allow { obligations, quota }
}

/// A path check's view of the call's working directory: as written, and normalised
/// once per call when absolute (a relative one places nothing).
#[derive(Clone, Copy)]
struct Cwd<'c> {
    raw: Option<&'c str>,
    absolute: Option<&'c str>,
}

/// Whether a touched path names a file or a directory (a directory has no file type).
#[derive(Clone, Copy, PartialEq, Eq)]
enum PathKind {
    File,
    Directory,
    /// A word that may name a file: only `forbiddenFiles` applies.
    Name,
}

fn check_path(ctx: &CompiledContext, path: &str, kind: PathKind, cwd: Cwd<'_>, out: &mut Outcome) {
    let located = locate(path, cwd.raw);
    let (shown, written) = match &located {
        Located::Absolute(p, w) | Located::Relative(p, w) => (p.as_ref(), *w),
        Located::Windows(p) => (p.as_str(), Written::Rewritten),
        Located::Escapes | Located::Unknown => (path, Written::Rewritten),
    };
    if let Some(files) = &ctx.forbidden_files {
        // a path written in normal form has no part its normal form lacks
        let raw_parts = (written == Written::Rewritten).then(|| components(path));
        let by_name = components(shown)
            .chain(raw_parts.into_iter().flatten())
            .find_map(|part| files.names.first_match(part));
        let by_path = if files.paths.is_empty() {
            None
        } else {
            let relative = relative_to(shown, cwd.absolute);
            [Some(shown), relative]
                .into_iter()
                .flatten()
                .find_map(|p| files.paths.matches(p).first().copied())
                .map(|i| files.path_index[i])
        };
        if let Some(i) = by_name.or(by_path) {
            out.deny(
                "forbiddenFiles",
                format!("File {path} matches forbiddenFiles {}", files.patterns[i]),
            );
        }
    }
    if let Some(types) = ctx.file_types.as_ref().filter(|_| kind == PathKind::File) {
        let ext = extname(shown);
        if !types.contains(ext) {
            // seed 004's message
            out.deny("allowedFileTypes", format!("File type {ext} not allowed"));
        }
    }
    let Some(dirs) = ctx.directories.as_ref().filter(|_| kind != PathKind::Name) else {
        return;
    };
    match placement(dirs, &located, cwd) {
        Placement::Inside => {}
        Placement::Escapes => out.deny(
            "allowedDirectories",
            format!("Path {path} escapes its directory (allowedDirectories)"),
        ),
        Placement::Unknown => out.ask(
            "allowedDirectories",
            format!("Path {path} cannot be placed with certainty (`~`, or a `\\` that is a separator on Windows only)"),
        ),
        Placement::NoCwd => out.ask(
            "allowedDirectories",
            format!("Path {path} cannot be placed against allowedDirectories without the working directory"),
        ),
        Placement::Outside => out.deny(
            "allowedDirectories",
            format!("Path {shown} is outside allowedDirectories"),
        ),
    }
}

/// Where a located path lies against `allowedDirectories`.
enum Placement {
    Inside,
    Outside,
    Escapes,
    /// `~`, or a `\` that only Windows reads as a separator.
    Unknown,
    /// Relative entries cannot place an absolute path without a working directory
    /// (nor absolute ones a relative path).
    NoCwd,
}

fn placement(dirs: &Directories, located: &Located<'_>, cwd: Cwd<'_>) -> Placement {
    let (inside, unsure) = match located {
        Located::Escapes => return Placement::Escapes,
        Located::Unknown => return Placement::Unknown,
        // outside every relative and POSIX directory; inside a Windows one it names
        Located::Windows(p) => (
            !dirs.windows.is_empty()
                && windows_ancestors(p).any(|a| dirs.windows.contains(&a.to_ascii_lowercase())),
            false,
        ),
        Located::Absolute(p, _) => {
            // O(depth): each ancestor is one hash lookup, whatever the number of rules
            let inside = ancestors(p).any(|a| dirs.absolute.contains(a))
                || (!dirs.relative.is_empty()
                    && relative_to(p, cwd.absolute)
                        .is_some_and(|r| ancestors(r).any(|a| dirs.relative.contains(a))));
            (inside, cwd.raw.is_none() && !dirs.relative.is_empty())
        }
        Located::Relative(p, _) => (
            ancestors(p).any(|a| dirs.relative.contains(a)),
            !dirs.absolute.is_empty(),
        ),
    };
    match (inside, unsure) {
        (true, _) => Placement::Inside,
        (false, true) => Placement::NoCwd,
        (false, false) => Placement::Outside,
    }
}

/// A string argument that looks like a path under a key that does not say so: only
/// `allowedDirectories` reads it, and outside them the call asks (it may be no path).
fn check_loose_path(ctx: &CompiledContext, path: &str, cwd: Cwd<'_>, out: &mut Outcome) {
    let Some(dirs) = &ctx.directories else {
        return;
    };
    if !matches!(
        placement(dirs, &locate(path, cwd.raw), cwd),
        Placement::Inside
    ) {
        out.ask(
            "allowedDirectories",
            format!("Argument {path:?} looks like a path outside allowedDirectories"),
        );
    }
}

/// `path` below the normalised absolute `cwd`, as a relative path (`.` for `cwd`
/// itself).
fn relative_to<'p>(path: &'p str, cwd: Option<&str>) -> Option<&'p str> {
    let cwd = cwd?;
    if path == cwd {
        return Some(".");
    }
    let rest = path.strip_prefix(cwd)?;
    if cwd == "/" {
        return Some(rest);
    }
    rest.strip_prefix('/')
}

fn check_protocol(ctx: &CompiledContext, protocol: &str, out: &mut Outcome) {
    if let Some(allowed) = &ctx.protocols
        && !allowed.contains(&protocol.to_lowercase())
    {
        out.deny(
            "allowedProtocols",
            format!("Protocol {protocol} not allowed by allowedProtocols"),
        );
    }
}

fn check_target(ctx: &CompiledContext, text: &str, out: &mut Outcome) {
    if ctx.hosts.is_none() && ctx.endpoints.is_none() && ctx.protocols.is_none() {
        return;
    }
    let target = match Target::read(text) {
        Ok(t) => t,
        Err(why) => {
            out.ask(
                "allowedNetworkHosts",
                format!("Network target {text:?} cannot be read with certainty: {why}"),
            );
            return;
        }
    };
    if let Some(scheme) = &target.scheme {
        check_protocol(ctx, scheme, out);
    }
    if let Some(hosts) = &ctx.hosts
        && !hosts.contains(&target.host)
    {
        out.deny(
            "allowedNetworkHosts",
            format!("Host {} not allowed by allowedNetworkHosts", target.host),
        );
    }
    let Some(endpoints) = &ctx.endpoints else {
        return;
    };
    let host = &target.host;
    let shown = match target.port {
        Some(port) if host.contains(':') => format!("[{host}]:{port}"),
        Some(port) => format!("{host}:{port}"),
        None => host.clone(),
    };
    match (endpoints.get(host), target.port) {
        (None, _) => out.deny(
            "allowedEndpoints",
            format!("Endpoint {shown} not allowed by allowedEndpoints"),
        ),
        (Some(Ports::Any), _) => {}
        (Some(Ports::Some(ports)), Some(port)) if ports.contains(&port) => {}
        (Some(Ports::Some(_)), Some(_)) => out.deny(
            "allowedEndpoints",
            format!("Endpoint {shown} not allowed by allowedEndpoints"),
        ),
        (Some(Ports::Some(_)), None) => out.ask(
            "allowedEndpoints",
            format!("Endpoint {shown} names no port, and allowedEndpoints admits only some"),
        ),
    }
}
