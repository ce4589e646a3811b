//! `evaluate`: one decision, with the checks that made it.

use super::args::EvaluateArgs;
use super::client::{Clients, rpc_error};
use super::output::Render;
use super::{EXIT_ASK, EXIT_DENY, usage};
use crate::proto::v1 as pb;
use serde::Serialize;

pub(super) async fn evaluate(c: &Clients, a: EvaluateArgs) -> anyhow::Result<i32> {
    use pb::tool_call::Kind;
    let kind = if let Some(m) = a.mcp {
        let Some((server, tool)) = m.split_once(':') else {
            return Err(usage(format!(
                "--mcp {m:?} is not server:tool: write e.g. github:create_issue"
            )));
        };
        Kind::Mcp(pb::McpCall {
            server: server.into(),
            tool: tool.into(),
            action: a.action.unwrap_or_default(),
        })
    } else if let Some(name) = a.internal {
        Kind::McpInternal(pb::McpInternalCall {
            name,
            fallback_server: a.fallback_server,
        })
    } else if let Some(line) = a.shell {
        Kind::Shell(line)
    } else if let Some(path) = a.delete {
        Kind::DeleteFile(path)
    } else if let Some(name) = a.builtin {
        // the server reads every client's spelling of a built-in tool
        Kind::Mcp(pb::McpCall {
            server: "builtin".into(),
            tool: name,
            action: String::new(),
        })
    } else {
        return Err(usage(
            "give the call: --mcp SERVER:TOOL [--action A], --builtin NAME, --internal NAME, --shell LINE or --delete PATH"
                .into(),
        ));
    };
    if let Some(input) = &a.tool_input {
        let parsed: Result<serde_json::Value, _> = serde_json::from_str(input);
        if !parsed.as_ref().is_ok_and(serde_json::Value::is_object) {
            return Err(usage(format!(
                "--tool-input {input:?} is not a JSON object: write e.g. '{{\"file_path\": \"src/main.rs\"}}'"
            )));
        }
    }
    let text = |v: Option<String>| v.unwrap_or_default();
    let tool_input = match a.tool_input.as_deref().map(serde_json::from_str) {
        None => None,
        Some(Ok(serde_json::Value::Object(map))) => Some(toolgate_proto::json::object_to_pb(&map)),
        Some(Ok(_)) => {
            return Err(usage(
                "--tool-input is not a JSON object: give the tool's arguments as {\"name\": value, …}"
                    .to_owned(),
            ));
        }
        Some(Err(e)) => {
            return Err(usage(format!(
                "--tool-input is not JSON ({e}): give the tool's arguments as a JSON object"
            )));
        }
    };
    let arguments = (a.cwd.is_some()
        || a.operation.is_some()
        || a.file_path.is_some()
        || a.tool_input.is_some())
    .then(|| pb::CallArguments {
        operation: text(a.operation),
        file_path: text(a.file_path),
        tool_input,
        cwd: text(a.cwd),
        ..Default::default()
    });
    let agent =
        (a.agent.is_some() || a.role.is_some() || a.context.is_some() || a.session.is_some()).then(
            || pb::AgentContext {
                agent_id: text(a.agent),
                role: text(a.role),
                context_type: text(a.context),
                session_id: text(a.session),
            },
        );
    let d = c
        .policy()
        .evaluate(pb::EvaluateRequest {
            team_id: a.team.clone(),
            user_id: a.user,
            call: Some(pb::ToolCall {
                kind: Some(kind),
                arguments,
            }),
            explain: true,
            agent,
            // asked by a person at the command line, not an agent
            client: "cli".into(),
            // a person at the terminal reads the answer: no request is made
            approval: None,
            tool_use_id: String::new(),
        })
        .await
        .map_err(rpc_error)?
        .into_inner()
        .decision
        .unwrap_or_default();
    let outcome = pb::Outcome::try_from(d.outcome).unwrap_or_default();
    let reason = pb::Reason::try_from(d.reason).unwrap_or_default();
    // nothing was ever written for the team: most likely a misspelt id
    if d.revision == 0 {
        eprintln!("{}", super::agent::no_settings(&a.team));
    }
    c.out.print(&EvaluateReport::from_pb(&d, outcome, reason));
    Ok(match (a.exit_code, outcome) {
        (true, pb::Outcome::Ask) => EXIT_ASK,
        (true, pb::Outcome::Deny) => EXIT_DENY,
        _ => 0,
    })
}

/// A decision as the command prints it: enum names without their prefixes.
#[derive(Debug, Serialize)]
pub struct EvaluateReport {
    pub outcome: String,
    pub need_approval: bool,
    pub reason: String,
    pub message: String,
    pub matched_entry: String,
    pub candidates_for_allowlist: Vec<Candidate>,
    pub command_candidates: Vec<String>,
    pub allowed_tools: Vec<String>,
    pub revision: u64,
    pub explanation: Vec<Check>,
}

#[derive(Debug, Serialize)]
pub struct Candidate {
    pub server: String,
    pub tool: String,
}

/// One check of the explanation, in the order the decision made them.
#[derive(Debug, Serialize)]
pub struct Check {
    pub check: String,
    pub result: String,
}

impl EvaluateReport {
    fn from_pb(d: &pb::Decision, outcome: pb::Outcome, reason: pb::Reason) -> Self {
        let short = |s: &str, prefix: &str| s.strip_prefix(prefix).unwrap_or(s).to_owned();
        Self {
            outcome: short(outcome.as_str_name(), "OUTCOME_"),
            need_approval: d.need_approval,
            reason: short(reason.as_str_name(), "REASON_"),
            message: d.message.clone(),
            matched_entry: d.matched_entry.clone(),
            candidates_for_allowlist: d
                .candidates_for_allowlist
                .iter()
                .map(|c| Candidate {
                    server: c.server.clone(),
                    tool: c.tool.clone(),
                })
                .collect(),
            command_candidates: d.command_candidates.clone(),
            allowed_tools: d.allowed_tools.clone(),
            revision: d.revision,
            explanation: d
                .explanation
                .iter()
                .map(|c| Check {
                    check: c.name.clone(),
                    result: c.result.clone(),
                })
                .collect(),
        }
    }
}

impl Render for EvaluateReport {
    fn human(&self) -> String {
        let mut out = format!(
            "{} ({}) at revision {}: {}\n",
            self.outcome, self.reason, self.revision, self.message
        );
        if !self.matched_entry.is_empty() {
            out.push_str(&format!("matched: {}\n", self.matched_entry));
        }
        for cand in &self.candidates_for_allowlist {
            out.push_str(&format!("could allowlist: {}:{}\n", cand.server, cand.tool));
        }
        for cand in &self.command_candidates {
            out.push_str(&format!("could allowlist command: {cand}\n"));
        }
        out.push_str("why:\n");
        for (i, check) in self.explanation.iter().enumerate() {
            out.push_str(&format!("  {}. {}: {}\n", i + 1, check.check, check.result));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_decision_renders_outcome_candidates_and_numbered_checks() {
        let d = pb::Decision {
            outcome: pb::Outcome::Ask as i32,
            reason: pb::Reason::NotInAdminAllowlist as i32,
            message: "not allowlisted".into(),
            revision: 4,
            candidates_for_allowlist: vec![pb::AllowlistCandidate {
                server: "github".into(),
                tool: "create_issue".into(),
            }],
            explanation: vec![pb::Check {
                name: "kill_switch".into(),
                result: "off".into(),
            }],
            ..pb::Decision::default()
        };
        let report = EvaluateReport::from_pb(&d, pb::Outcome::Ask, pb::Reason::NotInAdminAllowlist);
        assert_eq!(
            report.human(),
            "ASK (NOT_IN_ADMIN_ALLOWLIST) at revision 4: not allowlisted\n\
             could allowlist: github:create_issue\nwhy:\n  1. kill_switch: off\n"
        );
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["outcome"], "ASK");
        assert_eq!(json["explanation"][0]["check"], "kill_switch");
    }
}
