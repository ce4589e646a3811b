//! Cursor CLI permissions (`{"permissions": {"allow", "deny"}}`, deny wins; it has no
//! ask, so a blocked prefix is denied) and the IDE's `permissions.json` allowlists.

use super::{Plan, Tool};
use serde_json::json;

fn tool_rules(tools: &[Tool]) -> Vec<String> {
    tools
        .iter()
        .filter_map(|t| match t {
            Tool::Builtin(n) if n == "read_file" => Some("Read(**)".to_owned()),
            Tool::Builtin(n) if n == "write_file" || n == "edit_file" => {
                Some("Write(**)".to_owned())
            }
            Tool::Builtin(_) => None,
            Tool::Server(s) => Some(format!("Mcp({s}:*)")),
            Tool::McpTool { server, tool } => Some(format!("Mcp({server}:{tool})")),
        })
        .collect()
}

fn unexpressed(plan: &Plan, warnings: &mut Vec<String>) {
    let skipped: Vec<String> = plan
        .tool_allow
        .iter()
        .chain(&plan.tool_deny)
        .filter_map(|t| match t {
            Tool::Builtin(n) if !["read_file", "write_file", "edit_file"].contains(&n.as_str()) => {
                Some(n.clone())
            }
            _ => None,
        })
        .collect();
    if !skipped.is_empty() {
        warnings.push(format!(
            "cursor permissions name no such tools: {} not exported",
            skipped.join(", ")
        ));
    }
}

pub fn cli(plan: &Plan, warnings: &mut Vec<String>) -> String {
    unexpressed(plan, warnings);
    let mut allow = Vec::new();
    let mut deny = Vec::new();
    if plan.deny_all {
        deny.extend(["Shell(*)", "Read(**)", "Write(**)", "Mcp(*:*)"].map(str::to_owned));
    }
    for w in &plan.shell_allow {
        // Cursor matches a command's first word: a longer prefix would allow more
        if w.len() == 1 {
            allow.push(format!("Shell({})", w[0]));
        } else {
            warnings.push(format!(
                "allowed prefix {:?} is not exported: Cursor's Shell() rules name a command, not a prefix of its arguments",
                w.join(" ")
            ));
        }
    }
    // Shell() names a command, not a prefix: a one-word blocked prefix is denied (Cursor
    // cannot ask); a longer one (`git push`) is left to Cursor's own approval prompt,
    // which a command no allow rule names gets, so the rest of git is not refused
    let (whole, partial): (Vec<_>, Vec<_>) = plan.shell_ask.iter().partition(|w| w.len() == 1);
    if !whole.is_empty() {
        warnings.push(
            "Cursor permissions cannot ask: one-word blocked prefixes are exported as deny".into(),
        );
    }
    // denied prefixes are denied by their command: stricter than toolgate for a
    // longer one (`terraform destroy` denies all of terraform), never looser
    for w in whole.into_iter().chain(&plan.shell_deny) {
        deny.push(format!("Shell({})", w[0]));
    }
    if !partial.is_empty() {
        let named: Vec<String> = partial.iter().map(|w| w.join(" ")).collect();
        warnings.push(format!(
            "blocked prefixes {} are not exported: Cursor's Shell() rules name a command, not its arguments; no allow rule names their command, so Cursor asks for them",
            named.join(", ")
        ));
        allow.retain(|rule| !partial.iter().any(|w| *rule == format!("Shell({})", w[0])));
    }
    allow.extend(tool_rules(&plan.tool_allow));
    deny.extend(tool_rules(&plan.tool_deny));
    deny.dedup();
    let doc = json!({"permissions": {"allow": allow, "deny": deny}});
    format!(
        "{}\n",
        serde_json::to_string_pretty(&doc).unwrap_or_default()
    )
}

pub fn allowlists(plan: &Plan, warnings: &mut Vec<String>) -> String {
    if !plan.shell_ask.is_empty()
        || !plan.shell_deny.is_empty()
        || !plan.tool_deny.is_empty()
        || plan.deny_all
    {
        warnings.push(
            "permissions.json holds allowlists only: blocked prefixes and denied tools are not in it (use the hook, or the CLI permissions)".into(),
        );
    }
    let terminal: Vec<String> = plan.shell_allow.iter().map(|w| w.join(" ")).collect();
    let mcp: Vec<String> = plan
        .tool_allow
        .iter()
        .filter_map(|t| match t {
            Tool::Server(s) => Some(format!("{s}:*")),
            Tool::McpTool { server, tool } => Some(format!("{server}:{tool}")),
            Tool::Builtin(_) => None,
        })
        .collect();
    let doc = json!({"terminalAllowlist": terminal, "mcpAllowlist": mcp});
    format!(
        "{}\n",
        serde_json::to_string_pretty(&doc).unwrap_or_default()
    )
}
