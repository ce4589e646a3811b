//! Claude Code `{"permissions": {"allow", "ask", "deny"}}`, checked deny → ask → allow.

use super::{Plan, Tool, claude_name};
use crate::policy::BUILTIN_TOOLS;
use serde_json::json;

/// Forms toolgate never lets auto-run (substitutions, process substitution): asked for
/// whatever allow rule they hide behind.
const OPAQUE: [&str; 5] = [
    "Bash(*$(*)",
    "Bash(*`*)",
    "Bash(*<(*)",
    "Bash(*>(*)",
    "Bash(*${*)",
];

pub fn render(plan: &Plan, _warnings: &mut Vec<String>) -> String {
    let doc = json!({"permissions": permissions(plan)});
    format!(
        "{}\n",
        serde_json::to_string_pretty(&doc).unwrap_or_default()
    )
}

/// The `permissions` object: `allow`, `ask` and `deny` rules.
pub fn permissions(plan: &Plan) -> serde_json::Value {
    let (mut allow, mut ask, mut deny) = (Vec::new(), Vec::new(), Vec::new());
    if plan.deny_all {
        deny.push("Bash".to_owned());
        deny.extend(BUILTIN_TOOLS.iter().map(|(_, cli)| (*cli).to_owned()));
    }
    for w in &plan.shell_allow {
        let p = w.join(" ");
        allow.push(format!("Bash({p})"));
        allow.push(format!("Bash({p} *)"));
    }
    if !plan.shell_allow.is_empty() {
        ask.extend(OPAQUE.iter().map(|s| (*s).to_owned()));
    }
    for w in &plan.shell_ask {
        let p = w.join(" ");
        ask.push(format!("Bash({p})"));
        ask.push(format!("Bash({p} *)"));
    }
    for w in &plan.shell_deny {
        let p = w.join(" ");
        deny.push(format!("Bash({p})"));
        deny.push(format!("Bash({p} *)"));
    }
    for t in &plan.tool_allow {
        if let Some(rule) = rule(t) {
            allow.push(rule);
        }
    }
    for t in &plan.tool_deny {
        if let Some(rule) = rule(t) {
            deny.push(rule);
        }
    }
    json!({"allow": allow, "ask": ask, "deny": deny})
}

fn rule(t: &Tool) -> Option<String> {
    match t {
        // the shell is governed by its command rules, never allowed whole
        Tool::Builtin(name) if name == "run_shell_command" => None,
        Tool::Builtin(name) => Some(claude_name(name)),
        Tool::Server(s) => Some(format!("mcp__{s}")),
        Tool::McpTool { server, tool } => Some(format!("mcp__{server}__{tool}")),
    }
}
