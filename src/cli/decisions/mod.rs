//! `decisions list|tail`: the decision log; and the impact report `admin diff` and
//! `admin apply` print with `--impact`.

mod impact;
#[cfg(test)]
mod tests;

use super::args::{DecisionsArgs, DecisionsCommand, OutcomeArg};
use super::client::{Clients, rpc_error};
use super::output::Render;
use super::usage;
use crate::proto::v1 as pb;
pub use impact::ImpactReport;
pub(super) use impact::impact;
use serde::Serialize;
use std::fmt::Write as _;

/// An RFC 3339 time or a duration ago (`1h`, `7d`), for `--since` and `--until`.
fn parse_time(flag: &str, s: &str) -> anyhow::Result<prost_types::Timestamp> {
    let at = match humantime::parse_rfc3339_weak(s) {
        Ok(t) => t,
        Err(_) => {
            let ago = humantime::parse_duration(s).map_err(|_| {
                usage(format!(
                    "{flag} {s:?}: give an RFC 3339 time or a duration ago such as 1h or 7d"
                ))
            })?;
            std::time::SystemTime::now() - ago
        }
    };
    Ok(at.into())
}

/// `--impact 7d`: the window of logged calls to decide again.
pub(super) fn parse_window(s: &str) -> anyhow::Result<std::time::Duration> {
    humantime::parse_duration(s).map_err(|_| {
        usage(format!(
            "--impact {s:?}: give a duration such as 7d, 24h or 30m (at most 90d)"
        ))
    })
}

fn rfc3339(t: Option<prost_types::Timestamp>) -> String {
    t.and_then(|t| std::time::SystemTime::try_from(t).ok())
        .map(|when| humantime::format_rfc3339_millis(when).to_string())
        .unwrap_or_default()
}

/// A `Reason` or `Outcome` value's name without its enum's prefix.
fn short(name: &str, prefix: &str) -> String {
    name.strip_prefix(prefix).unwrap_or(name).to_owned()
}

fn filter(args: &DecisionsArgs) -> anyhow::Result<pb::DecisionFilter> {
    let reason = match &args.reason {
        Some(r) => {
            let name = format!("REASON_{}", r.to_ascii_uppercase());
            pb::Reason::from_str_name(&name)
                .ok_or_else(|| {
                    usage(format!(
                        "--reason {r:?} is not a reason: use one such as COMMAND_BLOCKED or NOT_ALLOWLISTED"
                    ))
                })? as i32
        }
        None => 0,
    };
    let outcome = match args.outcome {
        Some(OutcomeArg::Allow) => pb::Outcome::Allow,
        Some(OutcomeArg::Ask) => pb::Outcome::Ask,
        Some(OutcomeArg::Deny) => pb::Outcome::Deny,
        None => pb::Outcome::Unspecified,
    };
    Ok(pb::DecisionFilter {
        team_id: args.team.clone().unwrap_or_default(),
        user_id: args.user.clone().unwrap_or_default(),
        agent_id: args.agent.clone().unwrap_or_default(),
        outcome: outcome as i32,
        reason,
        tool_prefix: args.tool.clone().unwrap_or_default(),
        command_prefix: args.command.clone().unwrap_or_default(),
        since: args
            .since
            .as_deref()
            .map(|s| parse_time("--since", s))
            .transpose()?,
        until: args
            .until
            .as_deref()
            .map(|s| parse_time("--until", s))
            .transpose()?,
    })
}

/// One decision as the commands print it.
#[derive(Debug, Serialize)]
pub struct DecisionRow {
    pub id: String,
    /// RFC 3339 with milliseconds.
    pub at: String,
    pub team: String,
    pub user: String,
    pub principal: String,
    pub agent: String,
    pub role: String,
    pub client: String,
    /// evaluate, evaluate_batch or filter_tools.
    pub source: String,
    /// `server:tool`, `$ command excerpt` or `delete path excerpt`.
    pub call: String,
    /// The whole command's length and SHA-256, for a command or a path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command_bytes: Option<u64>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub command_sha256: String,
    pub outcome: String,
    pub reason: String,
    pub matched_entry: String,
    pub revision: u64,
    /// Identical DENYs the record stands for (its principal was past its budget):
    /// `at` is the last, `first_at` the first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_at: Option<String>,
    /// The groups whose policies the call was decided under.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// The programs an ALLOW rested on whose effects toolgate does not know.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub effects_unknown: Vec<String>,
    /// The client's own id for the call, when it sent one.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub tool_use_id: String,
    /// What the client did with the call, from its own telemetry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_decision: Option<ClientDecisionRow>,
}

/// A client's own decision about a call, as `decisions list` shows it.
#[derive(Debug, Clone, serde::Serialize, PartialEq, Eq)]
pub struct ClientDecisionRow {
    /// `accept` or `reject`.
    pub decision: String,
    /// `config`, `hook`, `user_permanent`, `user_temporary` or `user_reject`.
    pub source: String,
    pub tool_name: String,
    /// When toolgate received it.
    pub at: String,
}

impl From<&pb::DecisionRecord> for DecisionRow {
    fn from(r: &pb::DecisionRecord) -> Self {
        use pb::decided_call::Kind;
        let call = r.call.clone().unwrap_or_default();
        let (text, bytes) = match call.kind {
            Some(Kind::Mcp(m)) if m.action.is_empty() => (format!("{}:{}", m.server, m.tool), None),
            Some(Kind::Mcp(m)) => (format!("{}:{}.{}", m.server, m.tool, m.action), None),
            Some(Kind::ShellExcerpt(line)) => (format!("$ {line}"), Some(call.command_bytes)),
            Some(Kind::DeleteFileExcerpt(path)) => {
                (format!("delete {path}"), Some(call.command_bytes))
            }
            None => (String::new(), None),
        };
        Self {
            id: r.id.clone(),
            at: rfc3339(r.at),
            team: r.team_id.clone(),
            user: r.user_id.clone(),
            principal: r.principal.clone(),
            agent: r.agent_id.clone(),
            role: r.role.clone(),
            client: r.client.clone(),
            source: short(r.source().as_str_name(), "DECISION_SOURCE_").to_ascii_lowercase(),
            call: text,
            command_bytes: bytes,
            command_sha256: call.command_sha256,
            outcome: short(r.outcome().as_str_name(), "OUTCOME_"),
            reason: short(r.reason().as_str_name(), "REASON_"),
            matched_entry: r.matched_entry.clone(),
            revision: r.revision,
            count: (r.count > 1).then_some(r.count),
            first_at: (r.count > 1).then(|| rfc3339(r.first_at)),
            groups: r.groups.clone(),
            effects_unknown: r.effects_unknown.clone(),
            tool_use_id: r.tool_use_id.clone(),
            client_decision: r.client_decision.as_ref().map(|c| ClientDecisionRow {
                decision: c.decision.clone(),
                source: c.source.clone(),
                tool_name: c.tool_name.clone(),
                at: rfc3339(c.at),
            }),
        }
    }
}

/// At most `max` characters of `text`, one line, marked when cut.
fn clip(text: &str, max: usize) -> String {
    let line = text.replace(['\n', '\r', '\t'], " ");
    if line.chars().count() <= max {
        return line;
    }
    let kept: String = line.chars().take(max.saturating_sub(1)).collect();
    format!("{kept}…")
}

impl Render for DecisionRow {
    fn human(&self) -> String {
        let who = if self.agent.is_empty() {
            self.user.clone()
        } else {
            format!("{}/{}", self.user, self.agent)
        };
        let repeats = match (self.count, &self.first_at) {
            (Some(n), Some(first)) => format!("  ×{n} since {first}"),
            _ => String::new(),
        };
        let groups = if self.groups.is_empty() {
            String::new()
        } else {
            format!("  (groups {})", clip(&self.groups.join(", "), 60))
        };
        let unknown = if self.effects_unknown.is_empty() {
            String::new()
        } else {
            format!(
                "  (effects unknown: {})",
                clip(&self.effects_unknown.join(", "), 60)
            )
        };
        // what the client did with the answer, next to it
        let client = match &self.client_decision {
            Some(c) => format!(
                "  (client: {} by {})",
                clip(&c.decision, 16),
                clip(&c.source, 24)
            ),
            None => String::new(),
        };
        format!(
            "{}  {:<5} {:<24} {:<16} {:<12} {}{repeats}{groups}{unknown}{client}\n",
            self.at,
            self.outcome,
            self.reason,
            clip(&who, 16),
            clip(&self.client, 12),
            clip(&self.call, 80)
        )
    }
}

/// `decisions list`: the records, newest first.
#[derive(Debug, Serialize)]
pub struct DecisionList {
    pub decisions: Vec<DecisionRow>,
    /// Pass as `--page-token` for the records after these; empty when there are none.
    pub next_page_token: String,
}

impl Render for DecisionList {
    fn human(&self) -> String {
        let mut out: String = self.decisions.iter().map(DecisionRow::human).collect();
        if !self.next_page_token.is_empty() {
            let _ = writeln!(
                out,
                "(more: --page-token {} or a larger --limit)",
                self.next_page_token
            );
        }
        out
    }
}

/// Word that a tail missed records.
#[derive(Debug, Serialize)]
struct Lagged {
    lagged: u64,
}

impl Render for Lagged {
    fn human(&self) -> String {
        format!(
            "… {} records were not shown (this tail fell behind): list them with `toolgate decisions list`\n",
            self.lagged
        )
    }
}

pub(super) async fn decisions(c: &Clients, cmd: DecisionsCommand) -> anyhow::Result<i32> {
    match cmd {
        DecisionsCommand::List(args) => list(c, &args).await,
        DecisionsCommand::Tail(args) => tail(c, &args).await,
    }
}

async fn list(c: &Clients, args: &DecisionsArgs) -> anyhow::Result<i32> {
    let filter = filter(args)?;
    let mut rows = Vec::new();
    let mut page_token = args.page_token.clone().unwrap_or_default();
    let limit = args.limit.max(1) as usize;
    loop {
        let want = (limit - rows.len()).min(1000);
        let page = c
            .decisions()
            .list_decisions(pb::ListDecisionsRequest {
                filter: Some(filter.clone()),
                page_size: want as u32,
                page_token,
            })
            .await
            .map_err(rpc_error)?
            .into_inner();
        rows.extend(page.decisions.iter().map(DecisionRow::from));
        page_token = page.next_page_token;
        if page_token.is_empty() || rows.len() >= limit {
            break;
        }
    }
    c.out.print(&DecisionList {
        decisions: rows,
        next_page_token: page_token,
    });
    Ok(0)
}

async fn tail(c: &Clients, args: &DecisionsArgs) -> anyhow::Result<i32> {
    let mut stream = c
        .decisions()
        .watch_decisions(pb::WatchDecisionsRequest {
            filter: Some(filter(args)?),
        })
        .await
        .map_err(rpc_error)?
        .into_inner();
    while let Some(message) = stream.message().await.map_err(rpc_error)? {
        match message.event {
            Some(pb::watch_decisions_response::Event::Decision(r)) => {
                c.out.print(&DecisionRow::from(&r));
            }
            Some(pb::watch_decisions_response::Event::Lagged(n)) => {
                c.out.print(&Lagged { lagged: n });
            }
            Some(pb::watch_decisions_response::Event::ClientDecision(r)) => {
                c.out.print(&ClientReport::from(&r));
            }
            None => {}
        }
    }
    Ok(0)
}

/// A client's report of what it did with a call, as `decisions tail` prints it.
#[derive(Debug, Serialize)]
pub struct ClientReport {
    pub team: String,
    pub user: String,
    pub tool_use_id: String,
    pub client_decision: Option<ClientDecisionRow>,
}

impl From<&pb::ClientDecisionReport> for ClientReport {
    fn from(r: &pb::ClientDecisionReport) -> Self {
        Self {
            team: r.team_id.clone(),
            user: r.user_id.clone(),
            tool_use_id: r.tool_use_id.clone(),
            client_decision: r.decision.as_ref().map(|c| ClientDecisionRow {
                decision: c.decision.clone(),
                source: c.source.clone(),
                tool_name: c.tool_name.clone(),
                at: rfc3339(c.at),
            }),
        }
    }
}

impl Render for ClientReport {
    fn human(&self) -> String {
        let (at, said) = match &self.client_decision {
            Some(c) => (
                c.at.clone(),
                format!("{} by {}", clip(&c.decision, 16), clip(&c.source, 24)),
            ),
            None => (String::new(), String::new()),
        };
        format!(
            "{at}  client {said} for {} of {}\n",
            clip(&self.tool_use_id, 64),
            clip(&self.user, 16)
        )
    }
}
