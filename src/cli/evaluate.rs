//! `evaluate`: one decision, with the checks that made it.

use super::args::EvaluateArgs;
use super::client::{Clients, rpc_error};
use super::{EXIT_ASK, EXIT_DENY, usage};
use crate::proto::v1 as pb;
use serde_json::json;

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
    } else {
        return Err(usage(
            "give the call: --mcp SERVER:TOOL [--action A], --internal NAME, --shell LINE or --delete PATH"
                .into(),
        ));
    };
    let d = c
        .policy()
        .evaluate(pb::EvaluateRequest {
            team_id: a.team,
            user_id: a.user,
            call: Some(pb::ToolCall { kind: Some(kind) }),
            explain: true,
        })
        .await
        .map_err(rpc_error)?
        .into_inner();
    let outcome = pb::Outcome::try_from(d.outcome).unwrap_or_default();
    let reason = pb::Reason::try_from(d.reason).unwrap_or_default();
    let short = |s: &str, prefix: &str| s.strip_prefix(prefix).unwrap_or(s).to_owned();
    if c.json() {
        println!(
            "{}",
            json!({
                "outcome": short(outcome.as_str_name(), "OUTCOME_"),
                "need_approval": d.need_approval,
                "reason": short(reason.as_str_name(), "REASON_"),
                "message": d.message,
                "matched_entry": d.matched_entry,
                "candidates_for_allowlist": d.candidates_for_allowlist.iter()
                    .map(|c| json!({"server": c.server, "tool": c.tool})).collect::<Vec<_>>(),
                "command_candidates": d.command_candidates,
                "allowed_tools": d.allowed_tools,
                "revision": d.revision,
                "explanation": d.explanation.iter().map(|c| json!({"check": c.name, "result": c.result})).collect::<Vec<_>>(),
            })
        );
    } else {
        println!(
            "{} ({}) at revision {}: {}",
            short(outcome.as_str_name(), "OUTCOME_"),
            short(reason.as_str_name(), "REASON_"),
            d.revision,
            d.message
        );
        if !d.matched_entry.is_empty() {
            println!("matched: {}", d.matched_entry);
        }
        for cand in &d.candidates_for_allowlist {
            println!("could allowlist: {}:{}", cand.server, cand.tool);
        }
        for cand in &d.command_candidates {
            println!("could allowlist command: {cand}");
        }
        println!("why:");
        for (i, check) in d.explanation.iter().enumerate() {
            println!("  {}. {}: {}", i + 1, check.name, check.result);
        }
    }
    Ok(match (a.exit_code, outcome) {
        (true, pb::Outcome::Ask) => EXIT_ASK,
        (true, pb::Outcome::Deny) => EXIT_DENY,
        _ => 0,
    })
}
