//! `toolgate export <client>`: a user's effective policy in an agent client's own
//! permission format, for teams that want the client to enforce it natively.
//!
//! Pure. The rule every format obeys: an export never allows what toolgate would not.
//! What a format cannot express is left to the client's default (it asks) and listed
//! in [`Export::warnings`], never dropped silently.

mod claude;
mod claude_managed;
mod codex;
mod cursor;
mod gemini;

use crate::policy::{
    AccessMode, AdminControls, BUILTIN_SERVER, Call, CompiledAdmin, CompiledUser, Entry, Outcome,
    Prefix, Side, UserSettings, builtin_cli_name, canonical_builtin, decide,
};

/// The formats toolgate exports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Claude Code `{"permissions": {"allow", "ask", "deny"}}`.
    ClaudeCode,
    /// Codex `.rules` (Starlark `prefix_rule`).
    CodexRules,
    /// Codex `requirements.toml` `[rules]` (admin-enforced; no `allow`).
    CodexRequirements,
    /// Gemini CLI policy TOML.
    Gemini,
    /// Cursor CLI `{"permissions": {"allow", "deny"}}`.
    CursorCli,
    /// Cursor's `permissions.json` allowlists (`terminalAllowlist`, `mcpAllowlist`).
    CursorAllowlists,
}

/// An export: the file's text and what it could not say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Export {
    pub text: String,
    pub warnings: Vec<String>,
}

/// A tool a native rule names.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tool {
    /// A built-in tool, by canonical name (`read_file`).
    Builtin(String),
    /// Every tool of an MCP server.
    Server(String),
    McpTool {
        server: String,
        tool: String,
    },
}

/// What toolgate's policy says, in the terms native formats share.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Command prefixes (as words) that may run natively without asking.
    pub shell_allow: Vec<Vec<String>>,
    /// Command prefixes that must ask (toolgate's blocked prefixes).
    pub shell_ask: Vec<Vec<String>>,
    /// Command prefixes that must never run (toolgate's denied prefixes).
    pub shell_deny: Vec<Vec<String>>,
    /// Every shell command is denied (the kill switch).
    pub shell_deny_all: bool,
    pub tool_allow: Vec<Tool>,
    pub tool_deny: Vec<Tool>,
    /// Every tool is denied (the kill switch).
    pub deny_all: bool,
    pub warnings: Vec<String>,
}

/// Words a shell command may start with that run another command: an allowed prefix
/// led by one would let the command it runs through natively.
const WRAPPERS: [&str; 16] = [
    "env", "command", "exec", "nohup", "time", "timeout", "sudo", "doas", "xargs", "find", "bash",
    "sh", "zsh", "eval", "nice", "builtin",
];

/// A probe name no real tool has, to ask the policy core about "any other tool".
const PROBE: &str = "toolgate-export-probe";

/// The policy toolgate would apply to a user, turned into native terms.
pub fn plan(
    admin: &AdminControls,
    user: &UserSettings,
    files: &[(String, Vec<String>)],
) -> Result<Plan, String> {
    let compiled_admin = CompiledAdmin::compile(admin).map_err(|e| e.to_string())?;
    let compiled_user = CompiledUser::compile(user).map_err(|e| e.to_string())?;
    // servers the policy file lists are never allowed natively, so its lists need not
    // be consulted here
    let decide = |call: &Call| decide(&compiled_admin, &compiled_user, call).outcome;
    let mut plan = Plan::default();

    if admin.kill_switch {
        plan.deny_all = true;
        plan.shell_deny_all = true;
        plan.warnings.push(
            "the kill switch is on: every tool is denied; MCP servers the policy does not name cannot be denied by name in every format".into(),
        );
        return Ok(plan);
    }

    shell(admin, user, &decide, &mut plan);
    mcp(admin, user, files, &decide, &mut plan);
    plan.tool_allow.sort();
    plan.tool_allow.dedup();
    plan.tool_deny.sort();
    plan.tool_deny.dedup();
    Ok(plan)
}

fn shell(
    admin: &AdminControls,
    user: &UserSettings,
    decide: &impl Fn(&Call) -> Outcome,
    plan: &mut Plan,
) {
    let blocked: Vec<Vec<String>> = admin
        .blocked
        .iter()
        .chain(&user.command_denylist)
        .map(|p| words(p))
        .filter(|w| !w.is_empty())
        .collect();
    plan.shell_ask = blocked.clone();
    plan.shell_deny = admin
        .denied
        .iter()
        .map(|p| words(p))
        .filter(|w| !w.is_empty())
        .collect();
    if !plan.shell_deny.is_empty() {
        plan.warnings.push(
            "denied prefixes are exported as native deny rules: toolgate also denies them through wrappers, by file name and without case; a native client denies fewer of those".into(),
        );
    }
    let allowed = if admin.enabled {
        &admin.allowed
    } else {
        &user.command_allowlist
    };
    if !blocked.is_empty() {
        plan.warnings.push(
            "blocked prefixes are exported as prefixes: toolgate also catches them through wrappers (sudo, env, xargs, …), by file name (/bin/rm) and with options between their words (git -C . push); a native client asks for fewer of those (allowed prefixes that could reach them are left out)".into(),
        );
    }
    for prefix in allowed {
        let w = words(prefix);
        if w.is_empty() {
            continue;
        }
        let first = base_name(&w[0]);
        if WRAPPERS.contains(&first) {
            plan.warnings.push(format!(
                "allowed prefix {prefix:?} is not exported: it starts with {first:?}, which runs other commands that toolgate checks and a native prefix rule would not"
            ));
            continue;
        }
        // what the reader decides by its options and operands (sed -i, tar -x,
        // git status --paginate) a native prefix rule would allow in every spelling
        if crate::policy::checked_beyond_prefix(&w) {
            plan.warnings.push(format!(
                "allowed prefix {prefix:?} is not exported: toolgate reads its options and operands (what it runs, writes, deletes or contacts), which a native prefix rule cannot, so the client asks for it"
            ));
            continue;
        }
        // `git status` stays beside a blocked `git push`: no command a native
        // `git status` rule allows is one toolgate blocks or denies; `git` alone would
        // allow `git -C . push`, which only toolgate sees as the blocked prefix
        if let Some(b) = blocked
            .iter()
            .chain(&plan.shell_deny)
            .find(|b| could_reach(&w, b))
            .map(|b| b.join(" "))
        {
            plan.warnings.push(format!(
                "allowed prefix {prefix:?} is not exported: it could start a command the blocked or denied prefix {b:?} catches (toolgate sees options between its words, which native prefix rules do not)"
            ));
            continue;
        }
        // the policy core decides: only a prefix toolgate itself allows is exported
        if decide(&Call::Shell(w.join(" "))) != Outcome::Allow {
            plan.warnings.push(format!(
                "allowed prefix {prefix:?} is not exported: toolgate does not let it auto-run for this user (auto-run off, or the admin's controls)"
            ));
            continue;
        }
        plan.shell_allow.push(w);
    }
    let everything = user.use_yolo_mode
        && user.yolo_enable_run_everything
        && (!admin.enabled || admin.enable_run_everything);
    if everything && decide(&Call::Shell(PROBE.into())) == Outcome::Allow {
        plan.warnings.push(
            "run-everything is on: toolgate lets any plain command run, but no native format can exclude substitutions and blocked prefixes from a blanket allow, so it is not exported (the client asks)".into(),
        );
    }
}

fn mcp(
    admin: &AdminControls,
    user: &UserSettings,
    files: &[(String, Vec<String>)],
    decide: &impl Fn(&Call) -> Outcome,
    plan: &mut Plan,
) {
    let mut deny_servers_side = Vec::new();
    for raw in &admin.mcp_tool_blocklist {
        match Entry::parse(raw) {
            Ok(Entry::Pair {
                server: Side::Exact(s),
                tool: Side::Exact(t),
            }) => plan.tool_deny.push(tool_ref(&s, &t)),
            Ok(Entry::Pair {
                server: Side::Exact(s),
                tool: Side::Any,
            }) if s != BUILTIN_SERVER => {
                deny_servers_side.push(s.clone());
                plan.tool_deny.push(Tool::Server(s));
            }
            Ok(Entry::Preset(name)) => {
                for t in crate::policy::READONLY_TOOLS
                    .iter()
                    .filter(|_| name == "readonly")
                {
                    plan.tool_deny.push(Tool::Builtin((*t).to_owned()));
                }
            }
            _ => plan.warnings.push(format!(
                "blocklist entry {raw:?} cannot be expressed natively ({}): the client asks for those tools instead of refusing them",
                why_inexpressible(raw)
            )),
        }
    }
    if admin.mcp_access_mode == AccessMode::Allowlist {
        plan.warnings.push(
            "the admin permits only listed MCP tools: native formats cannot deny every other tool, so the client asks for them instead".into(),
        );
    }
    for (server, _) in files {
        plan.warnings.push(format!(
            "the policy file limits server {server:?} to tool.action names, which native formats cannot express: none of its tools is allowed natively"
        ));
    }

    let list: Vec<&String> = if admin.enabled {
        let mut l: Vec<&String> = admin.mcp_tool_allowlist.iter().collect();
        if admin.list_mode == crate::policy::ListMode::Union {
            l.extend(&user.mcp_allowed_tools);
        }
        l
    } else {
        user.mcp_allowed_tools.iter().collect()
    };
    let has_file_list = |s: &str| files.iter().any(|(f, _)| f == s);
    for raw in list {
        let candidates: Vec<(String, Option<String>)> = match Entry::parse(raw) {
            Ok(Entry::Pair {
                server: Side::Exact(s),
                tool: Side::Exact(t),
            }) => vec![(s, Some(t))],
            Ok(Entry::Pair {
                server: Side::Exact(s),
                tool: Side::Any,
            }) if s != BUILTIN_SERVER => vec![(s, None)],
            Ok(Entry::Preset(name)) => crate::policy::READONLY_TOOLS
                .iter()
                .filter(|_| name == "readonly")
                .map(|t| (BUILTIN_SERVER.to_owned(), Some((*t).to_owned())))
                .collect(),
            _ => {
                plan.warnings.push(format!(
                    "allowlist entry {raw:?} cannot be expressed natively ({}): the client asks for those tools",
                    why_inexpressible(raw)
                ));
                continue;
            }
        };
        for (server, tool) in candidates {
            let probe = tool.clone().unwrap_or_else(|| PROBE.to_owned());
            let allowed = decide(&Call::Mcp {
                server: server.clone(),
                tool: probe,
            }) == Outcome::Allow;
            if !allowed || has_file_list(&server) {
                plan.warnings.push(format!(
                    "allowlist entry {raw:?} is not exported for {server}: toolgate does not let it auto-run for this user"
                ));
                continue;
            }
            match tool {
                Some(t) => plan.tool_allow.push(tool_ref(&server, &t)),
                None => {
                    // a whole server is allowed natively only if every blocklist entry
                    // that can touch it is exported as a deny, which wins over allow
                    let shadowed = admin.mcp_tool_blocklist.iter().any(|b| {
                        Entry::parse(b).is_ok_and(|e| match e {
                            // exact entries are exported as denies, which win
                            Entry::Pair {
                                server: Side::Exact(_),
                                tool: Side::Exact(_) | Side::Any,
                            } => false,
                            Entry::Pair { server: s, .. } => s.matches(&server),
                            Entry::Preset(_) => false,
                        })
                    });
                    if shadowed || admin.mcp_access_mode == AccessMode::Allowlist {
                        plan.warnings.push(format!(
                            "allowlist entry {raw:?} is not exported: toolgate denies or asks for some of its tools in ways a native rule cannot say"
                        ));
                    } else {
                        plan.tool_allow.push(Tool::Server(server));
                    }
                }
            }
        }
    }
    // a denied tool is never also allowed
    let denied = plan.tool_deny.clone();
    plan.tool_allow.retain(|t| !denied.contains(t));
}

fn tool_ref(server: &str, tool: &str) -> Tool {
    if server == BUILTIN_SERVER {
        Tool::Builtin(canonical_builtin(tool).to_owned())
    } else {
        Tool::McpTool {
            server: server.to_owned(),
            tool: tool.to_owned(),
        }
    }
}

/// The words of a prefix as toolgate reads them.
fn words(prefix: &str) -> Vec<String> {
    Prefix::parse(prefix).map(|p| p.words).unwrap_or_default()
}

/// Whether a command starting with the `allowed` words could be one the `blocked`
/// prefix catches. Options aside (toolgate skips them between a blocked prefix's
/// words), the two must agree word for word as far as both go: `git` and `git push`
/// do, `git status` and `git push` do not, `git push origin` and `git push` do.
pub fn could_reach(allowed: &[String], blocked: &[String]) -> bool {
    let plain = |words: &[String]| -> Vec<String> {
        words
            .iter()
            .enumerate()
            .filter(|(i, w)| *i == 0 || !w.starts_with('-'))
            .map(|(i, w)| {
                if i == 0 {
                    base_name(w).to_owned()
                } else {
                    w.clone()
                }
            })
            .collect()
    };
    let (a, b) = (plain(allowed), plain(blocked));
    let n = a.len().min(b.len());
    n > 0 && a[..n] == b[..n]
}

fn base_name(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// A built-in's Claude Code name (`Read`), falling back to the canonical name.
pub(crate) fn claude_name(canonical: &str) -> String {
    builtin_cli_name(canonical).map_or_else(|| canonical.to_owned(), str::to_owned)
}

/// The effective policy of one user in `format`.
pub fn export(
    format: Format,
    admin: &AdminControls,
    user: &UserSettings,
    files: &[(String, Vec<String>)],
) -> Result<Export, String> {
    let plan = plan(admin, user, files)?;
    let mut warnings = plan.warnings.clone();
    let text = match format {
        Format::ClaudeCode => claude::render(&plan, &mut warnings),
        Format::CodexRules => codex::rules(&plan, &mut warnings),
        Format::CodexRequirements => codex::requirements(&plan, &mut warnings),
        Format::Gemini => gemini::render(&plan, &mut warnings),
        Format::CursorCli => cursor::cli(&plan, &mut warnings),
        Format::CursorAllowlists => cursor::allowlists(&plan, &mut warnings),
    };
    if format != Format::ClaudeCode
        && crate::policy::managed::servers::ServerRules::by_identity(admin)
    {
        warnings.push(unexpressed_servers(format).into());
    }
    Ok(Export { text, warnings })
}

/// Why `format` leaves the team's MCP servers by identity (`managed.allowed_mcp_servers`,
/// `denied_mcp_servers`) to the hook and `toolgate proxy`.
fn unexpressed_servers(format: Format) -> &'static str {
    match format {
        Format::CodexRules | Format::CodexRequirements => {
            "MCP servers by identity are not exported to Codex: requirements.toml's mcp_servers only allows servers it names, each with one command or URL, and has no denied list; `toolgate proxy` refuses a denied upstream and the hook decides every MCP call"
        }
        Format::Gemini => {
            "MCP servers by identity are not exported to Gemini CLI: its settings name servers (mcp.allowed, mcp.excluded) but not their commands or URLs; `toolgate proxy` refuses a denied upstream and the hook decides every MCP call"
        }
        Format::CursorCli | Format::CursorAllowlists | Format::ClaudeCode => {
            "MCP servers by identity are not exported to this format: `toolgate proxy` refuses a denied upstream and the hook decides every MCP call"
        }
    }
}

/// Claude Code's managed settings for one user, as its `policyHelper` prints them
/// (`{"managedSettings": {…}}`): `hook_command` as a managed hook, the permission
/// rules of [`Format::ClaudeCode`], the MCP servers by name and the team's locks.
pub fn claude_managed(
    admin: &AdminControls,
    user: &UserSettings,
    files: &[(String, Vec<String>)],
    hook_command: &str,
) -> Result<Export, String> {
    let plan = plan(admin, user, files)?;
    let mut warnings = plan.warnings.clone();
    let doc = claude_managed::render(&plan, admin, hook_command, &mut warnings);
    let text = serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?;
    Ok(Export {
        text: format!("{text}\n"),
        warnings,
    })
}

/// Why a list entry has no native form, for its warning: a team's tool category
/// (`@name`, defined in its seed 004 `toolCategories`), or a wildcard server or glob.
fn why_inexpressible(raw: &str) -> &'static str {
    if raw.starts_with('@') && !raw.contains(':') {
        "a tool category of the team's toolCategories, which no client format can name"
    } else {
        "wildcard server or glob"
    }
}
