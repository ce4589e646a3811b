//! A decision's record: the call as every record shows it (its secrets masked,
//! [`Shown`]), whole up to `decision_log.max_stored_command_bytes` or cut, ALLOWs
//! sampled, and handed to the writer off the decision path (a DENY's with its audit
//! record, never shed).

use super::origin::{RequestOrigin, outcome_name};
use crate::auth::Principal;
use crate::config::DecisionLogConfig;
use crate::policy::roles::AgentSpec;
use crate::policy::{self, Call, Outcome, Reason};
use crate::secrets;
use crate::service::Service;
use crate::service::decision_log::record::Record;
use crate::service::principal::caller_groups;
use crate::store::{EFFECTS_UNKNOWN_SEPARATOR, PackedDecision, TEXT_COUNT};
use std::borrow::Cow;

impl Service {
    /// The decision log's settings.
    pub fn decision_log(&self) -> &DecisionLogConfig {
        &self.decision_log
    }

    /// The record of one decision, or `None` when the log is off or an ALLOW is not
    /// sampled.
    #[allow(clippy::too_many_arguments)]
    pub(in crate::service) fn decision_record<'a>(
        &self,
        p: &'a Principal,
        team: &'a str,
        user: &'a str,
        agent: &'a AgentSpec,
        origin: &'a RequestOrigin,
        revision: u64,
        call: &'a Shown<'a>,
        (outcome, reason, matched): (Outcome, Reason, Option<&'a str>),
    ) -> Option<DecisionRecord<'a>> {
        let log = &self.decision_log;
        if !log.enabled {
            return None;
        }
        if outcome == Outcome::Allow
            && log.allow_sample_rate < 1.0
            && rand::random::<f64>() >= log.allow_sample_rate
        {
            return None;
        }
        Some(DecisionRecord {
            at_ms: crate::service::now_ms(),
            revision,
            team,
            user,
            principal: &p.name,
            agent_id: agent.id.as_deref().unwrap_or_default(),
            role: agent.role.as_deref().unwrap_or_default(),
            client: &origin.client,
            source: origin.source.as_str(),
            described: describe_call(call, log.max_stored_command_bytes),
            outcome: outcome_name(outcome),
            reason: reason.as_str(),
            matched: matched.unwrap_or_default(),
            // the groups the call was decided under (no allocation for none)
            groups: caller_groups(p, team, user).join(","),
            effects_unknown: String::new(),
            cwd: "",
            tool_use_id: &origin.tool_use_id,
        })
    }

    /// Hands a decision's record to the writer: a DENY's waits for room with its
    /// audit record (never shed), an ALLOW's or ASK's is offered and shed when the
    /// log's queue is full.
    pub(in crate::service) async fn log_decision(&self, record: DecisionRecord<'_>, deny: bool) {
        if deny {
            self.record_denies(vec![Record::Decision {
                decision: record.packed(),
            }])
            .await;
        } else {
            self.offer_decision(record);
        }
    }

    /// Offers an ALLOW's or ASK's record, shed past its budget or when the log's
    /// queue is full (never waited for).
    pub(in crate::service) fn offer_decision(&self, record: DecisionRecord<'_>) {
        self.audit.offer(
            record.at_ms,
            record.texts(),
            record.described.subject_bytes,
            record.revision,
        );
    }

    /// One record per tool a `tools/list` decided.
    #[allow(clippy::too_many_arguments)]
    pub(in crate::service) async fn log_listing(
        &self,
        p: &Principal,
        team: &str,
        user: &str,
        origin: &RequestOrigin,
        revision: u64,
        server: &str,
        decided: &[policy::ListedTool],
    ) {
        // the listing's DENY records are journaled together: one wait, not one a tool
        let mut denied = Vec::new();
        for tool in decided {
            let call = Call::Mcp {
                server: server.to_owned(),
                tool: tool.name.clone(),
            };
            let call = Shown::of(&call);
            let agent = AgentSpec::default();
            let decided = (tool.outcome, tool.reason, tool.matched_entry.as_deref());
            let Some(record) =
                self.decision_record(p, team, user, &agent, origin, revision, &call, decided)
            else {
                continue;
            };
            if tool.outcome == Outcome::Deny {
                denied.push(Record::Decision {
                    decision: record.packed(),
                });
            } else {
                self.offer_decision(record);
            }
        }
        if !denied.is_empty() {
            self.audit.record_deny(denied).await;
        }
    }
}

/// The call's part of a record.
pub(super) struct DescribedCall<'a> {
    pub(super) kind: &'static str,
    pub(super) server: &'a str,
    pub(super) tool: &'a str,
    pub(super) action: &'a str,
    /// `server:tool` for MCP; the command line or path, whole up to the log's
    /// `max_stored_command_bytes`, else cut.
    pub(super) subject: Cow<'a, str>,
    pub(super) subject_bytes: u64,
    /// Hex; empty for MCP.
    pub(super) subject_sha256: String,
}

/// One decision's record, borrowed from the decision: a DENY's is packed for the
/// writer's waiting queue, an ALLOW's or ASK's written straight into the log's queue.
pub(in crate::service) struct DecisionRecord<'a> {
    at_ms: i64,
    revision: u64,
    team: &'a str,
    user: &'a str,
    principal: &'a str,
    agent_id: &'a str,
    role: &'a str,
    client: &'a str,
    source: &'static str,
    described: DescribedCall<'a>,
    outcome: &'static str,
    reason: &'static str,
    matched: &'a str,
    /// The caller's groups applied to the decision, joined by `,`.
    groups: String,
    /// The programs an ALLOW rests on whose effects are unknown, one a line.
    effects_unknown: String,
    /// The client's working directory for a command line or a deletion.
    cwd: &'a str,
    tool_use_id: &'a str,
}

impl<'a> DecisionRecord<'a> {
    /// The texts in the store's order (`PackedDecision::texts`).
    fn texts(&self) -> [&str; TEXT_COUNT] {
        let d = &self.described;
        [
            self.team,
            self.user,
            self.principal,
            self.agent_id,
            self.role,
            self.client,
            self.source,
            d.kind,
            d.server,
            d.tool,
            d.action,
            &d.subject,
            &d.subject_sha256,
            self.outcome,
            self.reason,
            self.matched,
            &self.groups,
            &self.effects_unknown,
            self.cwd,
            self.tool_use_id,
        ]
    }

    pub(in crate::service) fn packed(&self) -> PackedDecision {
        PackedDecision::new(
            self.at_ms,
            self.texts(),
            self.described.subject_bytes,
            self.revision,
        )
    }

    /// Keeps the programs whose effects the decision could not check (an ALLOW's
    /// `effects_unknown`), masked as the call is and bounded: they come from the
    /// line, which the record may keep only the start of.
    pub(in crate::service) fn with_effects_unknown(mut self, programs: &[String]) -> Self {
        self.effects_unknown = effects_unknown_text(programs);
        self
    }

    /// Keeps the client's working directory of a command line or a deletion, so the
    /// impact preview places its writes where they were; none past the size the
    /// approvals take, or holding a control character (the preview then decides
    /// without one).
    pub(in crate::service) fn with_cwd(mut self, cwd: Option<&'a str>) -> Self {
        let placed = matches!(self.described.kind, "shell" | "delete_file");
        self.cwd = cwd
            .filter(|c| placed && c.len() <= MAX_CWD_BYTES && !c.chars().any(char::is_control))
            .unwrap_or_default();
        self
    }
}

/// Bytes of a working directory a record keeps (as an approval request does).
const MAX_CWD_BYTES: usize = 4096;

/// Bytes of program names a record keeps; the names past it are counted instead.
pub(super) const MAX_EFFECTS_UNKNOWN_BYTES: usize = 1024;

/// `programs` as a record's `effects_unknown` text: one a line, their secrets masked,
/// the names past [`MAX_EFFECTS_UNKNOWN_BYTES`] left out and counted (`(3 more)`).
pub(super) fn effects_unknown_text(programs: &[String]) -> String {
    let mut text = String::new();
    for (i, program) in programs.iter().enumerate() {
        let program = secrets::mask(program);
        if text.len() + program.len() + 1 > MAX_EFFECTS_UNKNOWN_BYTES {
            text.push_str(&format!("({} more)", programs.len() - i));
            break;
        }
        text.push_str(&program);
        text.push(EFFECTS_UNKNOWN_SEPARATOR);
    }
    if text.ends_with(EFFECTS_UNKNOWN_SEPARATOR) {
        text.pop();
    }
    text
}

/// A call as every record shows it: with its secrets masked (`toolgate_core::secrets`),
/// while its SHA-256 stays the original's, so identical calls still group.
pub(in crate::service) struct Shown<'a> {
    pub(in crate::service) masked: secrets::MaskedCall<'a>,
    /// Hex SHA-256 of the original command line or path; empty for MCP.
    pub(in crate::service) sha256: String,
    /// The original's length in bytes.
    pub(in crate::service) bytes: usize,
}

impl<'a> Shown<'a> {
    /// Masks `call`: the one place a record's call is taken from the call as sent.
    pub(in crate::service) fn of(call: &'a Call) -> Self {
        let (sha256, bytes) = match call {
            Call::Shell(text) | Call::DeleteFile(text) => {
                use sha2::Digest as _;
                (
                    hex::encode(sha2::Sha256::digest(text.as_bytes())),
                    text.len(),
                )
            }
            _ => (String::new(), 0),
        };
        Self {
            masked: secrets::mask_call(call),
            sha256,
            bytes,
        }
    }

    /// A call kept masked (an approval request's), with the original's digest and
    /// length as kept beside it.
    pub(in crate::service) fn kept(
        masked: &'a Call,
        redecidable: bool,
        sha256: String,
        bytes: usize,
    ) -> Self {
        Self {
            masked: secrets::MaskedCall {
                call: Cow::Borrowed(masked),
                redecidable,
            },
            sha256,
            bytes,
        }
    }

    pub(in crate::service) fn call(&self) -> &Call {
        &self.masked.call
    }
}

/// Describes a call for its record: MCP calls by server and tool, a command line or
/// path (masked) whole up to `max_stored` bytes, else cut, with its SHA-256. The
/// length is the stored text's when it is whole and decides as the original, else
/// one the stored text is shorter than, so the preview never decides it again.
pub(super) fn describe_call<'a>(shown: &'a Shown<'a>, max_stored: usize) -> DescribedCall<'a> {
    let call = shown.call();
    fn mcp<'a>(server: &'a str, tool: &'a str, action: &'a str) -> DescribedCall<'a> {
        let subject = format!("{server}:{tool}");
        DescribedCall {
            kind: "mcp",
            server,
            tool,
            action,
            subject_bytes: subject.len() as u64,
            subject: Cow::Owned(subject),
            subject_sha256: String::new(),
        }
    }
    let (kind, text) = match call {
        Call::Mcp { server, tool } => return mcp(server, tool, ""),
        Call::McpAction {
            server,
            tool,
            action,
        } => return mcp(server, tool, action),
        Call::McpInternal {
            name,
            fallback_server,
        } => {
            let (server, tool) = policy::split_internal_name(name, fallback_server);
            return mcp(server, tool, "");
        }
        Call::Shell(line) => ("shell", line),
        Call::DeleteFile(path) => ("delete_file", path),
    };
    let subject = cut(text, max_stored);
    let whole = subject.len() == text.len() && shown.masked.redecidable;
    let subject_bytes = if whole {
        subject.len()
    } else {
        shown.bytes.max(subject.len() + 1)
    };
    DescribedCall {
        kind,
        server: "",
        tool: "",
        action: "",
        subject: Cow::Borrowed(subject),
        subject_bytes: subject_bytes as u64,
        subject_sha256: shown.sha256.clone(),
    }
}

/// The first `max` bytes of `text`, cut at a character boundary.
fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let end = (0..=max)
        .rev()
        .find(|&n| text.is_char_boundary(n))
        .unwrap_or(0);
    &text[..end]
}
