//! The decision log's record types: one decision to record (and its packed form on
//! the writer's queue), a record read back with its id, and a listing's query.

use serde::{Deserialize, Serialize};

/// Starts the payload of a replica's notice that it committed decision-log records:
/// then the replica's origin (hex), `:`, and the ids as `first-last`.
pub const DECISIONS_NOTICE_PREFIX: char = '\u{2}';

/// One decision to record. Strings are as the service wrote them: `outcome` is
/// `ALLOW`, `ASK` or `DENY`, `reason` the stable reason name, `kind` `mcp`, `shell`
/// or `delete_file`, `source` `evaluate`, `evaluate_batch` or `filter_tools`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewDecision {
    /// Unix milliseconds of the decision.
    pub at_ms: i64,
    pub team_id: String,
    pub user_id: String,
    pub principal: String,
    pub agent_id: String,
    pub role: String,
    pub client: String,
    pub source: String,
    pub kind: String,
    pub server: String,
    pub tool: String,
    pub action: String,
    /// `server:tool` for an MCP call; the command line or path, whole when it was no
    /// longer than the log keeps, else its first bytes.
    pub subject: String,
    /// The whole command line's or path's length (of `server:tool` for MCP).
    pub subject_bytes: u64,
    /// The SHA-256 of the whole command line or path, hex; empty for MCP.
    pub subject_sha256: String,
    pub outcome: String,
    pub reason: String,
    pub matched_entry: String,
    pub revision: u64,
    /// Identical DENYs this record stands for: more than 1 when a principal past its
    /// budget repeated the call (the service's `budget.rs`), then `at_ms` is the last.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub count: u64,
    /// Unix milliseconds of the first of `count` identical DENYs (`at_ms` when 1).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub first_at_ms: i64,
    /// The groups whose policies the decision was made under (the caller's own, when
    /// it decided its own call), by name, joined by `,` (no group name holds one);
    /// empty for none. The impact preview combines them again with the proposal.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub groups: String,
    /// The programs an ALLOW of a command line rests on whose effects nobody checked
    /// (the decision's `effects_unknown`), one a line ([`EFFECTS_UNKNOWN_SEPARATOR`]);
    /// empty for none.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub effects_unknown: String,
    /// The client's working directory for a command line or a deletion (absolute),
    /// against which the impact preview places its writes again; empty when the
    /// client sent none.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cwd: String,
    /// The client's own id for the call (Claude Code's `tool_use_id`), which its
    /// telemetry names too: the client's decision is joined to the record by it.
    /// Empty when the client sent none.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tool_use_id: String,
}

/// Joins the programs of a record's `effects_unknown`: a newline, which a program's
/// name almost never holds (one that does reads as two names, still both unknown).
pub const EFFECTS_UNKNOWN_SEPARATOR: char = '\n';

fn one() -> u64 {
    1
}

fn is_one(n: &u64) -> bool {
    *n == 1
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

impl NewDecision {
    /// Whether `subject` is the whole command line or path (the call can be decided
    /// again from the record).
    pub fn complete(&self) -> bool {
        self.subject.len() as u64 == self.subject_bytes
    }

    /// The programs of `effects_unknown`, in the order the decision named them.
    pub fn unknown_effects(&self) -> impl Iterator<Item = &str> {
        self.effects_unknown
            .split(EFFECTS_UNKNOWN_SEPARATOR)
            .filter(|p| !p.is_empty())
    }
}

/// One decision on its way to the log through the writer's waiting queue (a DENY's):
/// [`NewDecision`] with its texts in one allocation, where its strings were
/// as many, each freed by the writer on another thread. ALLOW and ASK records skip
/// it: they are encoded straight into [`EncodedDecisions`](super::EncodedDecisions). The DENY journal holds its
/// JSON, which is [`NewDecision`]'s.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "NewDecision", into = "NewDecision")]
pub struct PackedDecision {
    pub at_ms: i64,
    pub subject_bytes: u64,
    pub revision: u64,
    /// Identical DENYs it stands for, and the first one's time (see [`NewDecision`]).
    pub count: u64,
    pub first_at_ms: i64,
    /// The texts in the store's order, one after the other.
    text: Box<str>,
    /// Where each text ends in `text`.
    ends: [u32; TEXT_COUNT],
}

impl PackedDecision {
    /// A record of `texts` in the store's order (as [`PackedDecision::texts`] gives
    /// them back). A text past 4 GiB in all cannot be: the service keeps at most
    /// `max_stored_command_bytes` of a command, and names are short.
    pub fn new(at_ms: i64, texts: [&str; TEXT_COUNT], subject_bytes: u64, revision: u64) -> Self {
        let mut text = String::with_capacity(texts.iter().map(|t| t.len()).sum());
        let mut ends = [0; TEXT_COUNT];
        for (end, t) in ends.iter_mut().zip(texts) {
            text.push_str(t);
            *end = u32::try_from(text.len()).unwrap_or(u32::MAX);
        }
        Self {
            at_ms,
            subject_bytes,
            revision,
            count: 1,
            first_at_ms: at_ms,
            text: text.into_boxed_str(),
            ends,
        }
    }

    /// What makes two records the same call by the same principal with the same
    /// outcome: every text (the time, revision and count aside).
    pub fn same_call_key(&self) -> (&str, &[u32; TEXT_COUNT]) {
        (&self.text, &self.ends)
    }

    /// The texts, in the store's order: team, user, principal, agent, role, client,
    /// source, kind, server, tool, action, subject, subject_sha256, outcome, reason,
    /// matched_entry, then the optional ones: groups, effects_unknown, cwd, tool_use_id.
    pub fn texts(&self) -> [&str; TEXT_COUNT] {
        let mut start = 0;
        self.ends.map(|end| {
            let end = end as usize;
            let t = self.text.get(start..end).unwrap_or_default();
            start = end;
            t
        })
    }

    /// The record with a string per text.
    pub fn unpack(&self) -> NewDecision {
        let mut d = NewDecision::from_texts(
            self.at_ms,
            self.texts().map(str::to_owned),
            self.subject_bytes,
            self.revision,
        );
        d.count = self.count;
        d.first_at_ms = self.first_at_ms;
        d
    }
}

impl NewDecision {
    /// A record of its texts in the store's order.
    pub(super) fn from_texts(
        at_ms: i64,
        texts: [String; TEXT_COUNT],
        subject_bytes: u64,
        revision: u64,
    ) -> Self {
        let [
            team_id,
            user_id,
            principal,
            agent_id,
            role,
            client,
            source,
            kind,
            server,
            tool,
            action,
            subject,
            subject_sha256,
            outcome,
            reason,
            matched_entry,
            groups,
            effects_unknown,
            cwd,
            tool_use_id,
        ] = texts;
        NewDecision {
            at_ms,
            team_id,
            user_id,
            principal,
            agent_id,
            role,
            client,
            source,
            kind,
            server,
            tool,
            action,
            subject,
            subject_bytes,
            subject_sha256,
            outcome,
            reason,
            matched_entry,
            revision,
            count: 1,
            first_at_ms: at_ms,
            groups,
            effects_unknown,
            cwd,
            tool_use_id,
        }
    }
}

impl From<&NewDecision> for PackedDecision {
    fn from(d: &NewDecision) -> Self {
        let mut packed = Self::new(d.at_ms, texts(d), d.subject_bytes, d.revision);
        packed.count = d.count.max(1);
        packed.first_at_ms = if d.first_at_ms == 0 {
            d.at_ms
        } else {
            d.first_at_ms
        };
        packed
    }
}

impl From<NewDecision> for PackedDecision {
    fn from(d: NewDecision) -> Self {
        Self::from(&d)
    }
}

impl From<PackedDecision> for NewDecision {
    fn from(d: PackedDecision) -> Self {
        d.unpack()
    }
}

/// A recorded decision with its id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredDecision {
    pub id: u64,
    pub decision: NewDecision,
}

/// Which records to list; every set field must match.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DecisionQuery {
    pub team_id: Option<String>,
    pub user_id: Option<String>,
    pub agent_id: Option<String>,
    pub outcome: Option<String>,
    pub reason: Option<String>,
    /// An MCP call's `server:tool` starts with it.
    pub tool_prefix: Option<String>,
    /// A command line or path starts with it.
    pub command_prefix: Option<String>,
    /// Unix milliseconds: at or after.
    pub since_ms: Option<i64>,
    /// Unix milliseconds: before.
    pub until_ms: Option<i64>,
    /// Only records older than this (time, id): the keyset of the next page.
    pub before: Option<(i64, u64)>,
    pub limit: u32,
}

/// A record's texts.
pub const TEXT_COUNT: usize = 20;
/// Where the optional texts start among a record's texts (the groups, the unknown
/// effects, the working directory, the client's id for the call): each was added after the first sixteen, and the JSON form
/// leaves out those that are empty at its end, so older records read as they were.
pub(super) const OPTIONAL: usize = 16;
/// Where the outcome is among a record's texts.
pub(super) const OUTCOME: usize = 13;
/// Where the team and the principal are among a record's texts (the budgets are kept
/// per team and principal).
pub const TEAM_TEXT: usize = 0;
pub const PRINCIPAL_TEXT: usize = 2;

impl DecisionQuery {
    /// Whether a record matches every filter set, the page's keyset aside (the
    /// listing's filter, and a watch's).
    pub fn matches(&self, d: &NewDecision) -> bool {
        let eq = |want: &Option<String>, have: &str| want.as_deref().is_none_or(|w| w == have);
        let prefix = |want: &Option<String>, mcp: bool| {
            want.as_deref()
                .is_none_or(|w| (d.kind == "mcp") == mcp && d.subject.starts_with(w))
        };
        eq(&self.team_id, &d.team_id)
            && eq(&self.user_id, &d.user_id)
            && eq(&self.agent_id, &d.agent_id)
            && eq(&self.outcome, &d.outcome)
            && eq(&self.reason, &d.reason)
            && prefix(&self.tool_prefix, true)
            && prefix(&self.command_prefix, false)
            && self.since_ms.is_none_or(|s| d.at_ms >= s)
            && self.until_ms.is_none_or(|u| d.at_ms < u)
    }
}

/// A record's texts, in the order of its JSON form (after its id and time, before
/// `subject_bytes` and `revision`).
pub(super) fn texts(d: &NewDecision) -> [&str; TEXT_COUNT] {
    [
        &d.team_id,
        &d.user_id,
        &d.principal,
        &d.agent_id,
        &d.role,
        &d.client,
        &d.source,
        &d.kind,
        &d.server,
        &d.tool,
        &d.action,
        &d.subject,
        &d.subject_sha256,
        &d.outcome,
        &d.reason,
        &d.matched_entry,
        &d.groups,
        &d.effects_unknown,
        &d.cwd,
        &d.tool_use_id,
    ]
}
