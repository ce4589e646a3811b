//! The decision log's records: appended in batches (with any audit records of the
//! same batch, in one transaction), listed newest first by a keyset on (time, id) so
//! pages stay put while records are written, and pruned by age and by count per team.
//!
//! A batch's records are stored as blocks, a row per team and batch holding its
//! records as one JSON array (`decision_blocks`), with the block's team, its time
//! range and its id range in columns of their own. A row per record cost the
//! database about 22,000 instructions (a B-tree insert into the table and one into
//! the (team, time) index, twenty columns each), more than the decision it recorded;
//! a block costs that once for thousands of records. Listing reads the blocks that
//! can hold a page's records (by team and time, through indexes), filters their
//! records and merges them newest first; pruning removes whole blocks and rewrites
//! the one or two that straddle a limit.

use super::backend::Backend;
use super::sql::{INSERT_AUDIT, SqlStore};
use super::{NewAuditEvent, StoreError, to_i64, to_u64};
use serde::{Deserialize, Serialize};
use sqlx::{ColumnIndex, Connection as _, Database, Decode, Encode, Executor, IntoArguments, Type};

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
/// it: they are encoded straight into [`EncodedDecisions`]. The DENY journal holds its
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
    fn from_texts(
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

/// Decision-log records encoded for the store, in one buffer: each record's team,
/// then its JSON form after the id (`at, the texts…, subject_bytes, revision]`, see
/// a block's records). The log's queue of ALLOW and ASK records is a few of these, so an
/// offered record costs no allocation, queue slot or free of its own; the store reads
/// a batch from one.
#[derive(Debug, Default, Clone)]
pub struct EncodedDecisions {
    text: Vec<u8>,
    records: Vec<Encoded>,
}

/// Where one record lies in [`EncodedDecisions::text`].
#[derive(Debug, Clone, Copy)]
struct Encoded {
    at_ms: i64,
    start: usize,
    team_end: usize,
    /// The principal's JSON string (quoted, escaped as stored).
    principal: (usize, usize),
    end: usize,
    /// A DENY's record: stored in blocks of DENY records only, which have a retention
    /// of their own.
    deny: bool,
}

impl EncodedDecisions {
    /// Appends a record of `texts` in the store's order.
    pub fn push(
        &mut self,
        at_ms: i64,
        texts: [&str; TEXT_COUNT],
        subject_bytes: u64,
        revision: u64,
    ) {
        self.push_counted(at_ms, texts, subject_bytes, revision, (1, at_ms));
    }

    /// Appends a record that stands for `count` identical ones since `first_at_ms`.
    fn push_counted(
        &mut self,
        at_ms: i64,
        texts: [&str; TEXT_COUNT],
        subject_bytes: u64,
        revision: u64,
        (count, first_at_ms): (u64, i64),
    ) {
        use std::io::Write as _;
        let start = self.text.len();
        self.text.extend_from_slice(texts[0].as_bytes());
        let team_end = self.text.len();
        // writing to a Vec cannot fail; a &str always serialises
        let _ = write!(self.text, "{at_ms}");
        let mut principal = (0, 0);
        // the optional texts are written up to the last one not empty, so a record
        // without them keeps the form older versions read
        let written = texts[OPTIONAL..]
            .iter()
            .rposition(|t| !t.is_empty())
            .map_or(OPTIONAL, |last| OPTIONAL + last + 1);
        for (k, text) in texts.into_iter().enumerate().take(written) {
            self.text.push(b',');
            if k == PRINCIPAL {
                principal.0 = self.text.len();
            }
            // most texts need no escape: copied as they are (what serde_json writes
            // for them too), the rest through serde_json
            if text.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
                let _ = serde_json::to_writer(&mut self.text, text);
            } else {
                self.text.push(b'"');
                self.text.extend_from_slice(text.as_bytes());
                self.text.push(b'"');
            }
            if k == PRINCIPAL {
                principal.1 = self.text.len();
            }
        }
        // a single record's form stays the one older versions read
        if count > 1 {
            let _ = write!(
                self.text,
                ",{subject_bytes},{revision},{count},{first_at_ms}]"
            );
        } else {
            let _ = write!(self.text, ",{subject_bytes},{revision}]");
        }
        self.records.push(Encoded {
            at_ms,
            start,
            team_end,
            principal,
            end: self.text.len(),
            deny: texts[OUTCOME] == "DENY",
        });
    }

    /// Appends a packed record.
    pub fn push_packed(&mut self, d: &PackedDecision) {
        self.push_counted(
            d.at_ms,
            d.texts(),
            d.subject_bytes,
            d.revision,
            (d.count, d.first_at_ms),
        );
    }

    /// Appends every record of `other`.
    pub fn append(&mut self, other: &EncodedDecisions) {
        let shift = self.text.len();
        self.text.extend_from_slice(&other.text);
        self.records.extend(other.records.iter().map(|r| Encoded {
            at_ms: r.at_ms,
            start: r.start + shift,
            team_end: r.team_end + shift,
            principal: (r.principal.0 + shift, r.principal.1 + shift),
            end: r.end + shift,
            deny: r.deny,
        }));
    }

    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Empties it, keeping its room.
    pub fn clear(&mut self) {
        self.text.clear();
        self.records.clear();
    }

    /// Keeps the records `keep` says yes to, given each one's team, principal (as a
    /// JSON string) and size in bytes; the count of those let go.
    pub fn retain(&mut self, mut keep: impl FnMut(&[u8], &[u8], usize) -> bool) -> usize {
        let kept: Vec<bool> = (0..self.records.len())
            .map(|i| {
                let r = &self.records[i];
                keep(
                    self.team(i),
                    &self.text[r.principal.0..r.principal.1],
                    r.end - r.start,
                )
            })
            .collect();
        let dropped = kept.iter().filter(|k| !**k).count();
        if dropped == 0 {
            return 0;
        }
        let mut out = EncodedDecisions {
            text: Vec::with_capacity(self.text.len()),
            records: Vec::with_capacity(self.records.len() - dropped),
        };
        for (r, _) in self.records.iter().zip(&kept).filter(|(_, k)| **k) {
            let shift = out.text.len() as isize - r.start as isize;
            let moved = |at: usize| (at as isize + shift) as usize;
            out.text.extend_from_slice(&self.text[r.start..r.end]);
            out.records.push(Encoded {
                at_ms: r.at_ms,
                start: moved(r.start),
                team_end: moved(r.team_end),
                principal: (moved(r.principal.0), moved(r.principal.1)),
                end: moved(r.end),
                deny: r.deny,
            });
        }
        *self = out;
        dropped
    }

    fn team(&self, i: usize) -> &[u8] {
        let r = &self.records[i];
        &self.text[r.start..r.team_end]
    }

    /// Record `i`'s JSON form after `[id,`.
    fn tail(&self, i: usize) -> &[u8] {
        let r = &self.records[i];
        &self.text[r.team_end..r.end]
    }

    /// Record `i` as read back, with the id it was given.
    pub fn decode(&self, i: usize, id: u64) -> Result<StoredDecision, StoreError> {
        let mut json = format!("[[{id},").into_bytes();
        json.extend_from_slice(self.tail(i));
        json.push(b']');
        let text = String::from_utf8(json)
            .map_err(|e| StoreError::Corrupt(format!("a decision record is not UTF-8: {e}")))?;
        decode(&text)?
            .pop()
            .ok_or_else(|| StoreError::Corrupt("a decision record is missing".into()))
    }
}

impl From<&[&PackedDecision]> for EncodedDecisions {
    fn from(records: &[&PackedDecision]) -> Self {
        let mut encoded = EncodedDecisions::default();
        for d in records {
            encoded.push_packed(d);
        }
        encoded
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
const OPTIONAL: usize = 16;
/// Where the outcome is among a record's texts.
const OUTCOME: usize = 13;
/// Where the principal is among a record's texts.
const PRINCIPAL: usize = 2;
/// Records a block holds at most, and the size past which it takes no more: a
/// batch of more is stored as several, so a listing never decodes much more than a
/// page (a record keeps up to `max_stored_command_bytes` of a command).
const BLOCK_RECORDS: usize = 4096;
const BLOCK_BYTES: usize = 1024 * 1024;
/// Blocks a listing reads per statement.
const BLOCKS_PER_READ: i64 = 32;

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

/// The columns of a block a listing or pruning reads.
const BLOCK_COLUMNS: &str = "id, max_at, records, body";

/// One block as read: its records are decoded when a listing needs them.
struct Block {
    id: i64,
    max_at: i64,
    records: i64,
    body: String,
}

fn block<R: sqlx::Row>(row: &R) -> Result<Block, StoreError>
where
    for<'r> &'r str: ColumnIndex<R>,
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
{
    Ok(Block {
        id: row.try_get("id")?,
        max_at: row.try_get("max_at")?,
        records: row.try_get("records")?,
        body: row.try_get("body")?,
    })
}

/// A record's JSON form in a block: `[id, at, the texts…, subject_bytes, revision]`
/// (migration 8 writes the same from the rows it moves), then `count, first_at` for
/// a record that stands for identical DENYs of a principal past its budget. The
/// optional texts (groups, effects_unknown, cwd, tool_use_id) end where the last one not empty does
/// (a record of an older version has none).
struct JsonRecord(StoredDecision);

impl<'de> Deserialize<'de> for JsonRecord {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = JsonRecord;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(
                    f,
                    "a decision record: [id, at, {OPTIONAL} texts, up to {} optional texts, subject_bytes, revision] and optionally count, first_at",
                    TEXT_COUNT - OPTIONAL
                )
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<JsonRecord, A::Error> {
                fn next<'de, A: serde::de::SeqAccess<'de>, T: Deserialize<'de>>(
                    seq: &mut A,
                    read: &mut usize,
                ) -> Result<T, A::Error> {
                    *read += 1;
                    seq.next_element()?
                        .ok_or_else(|| serde::de::Error::invalid_length(*read - 1, &Visitor))
                }
                let mut read = 0;
                let id: u64 = next(&mut seq, &mut read)?;
                let at_ms: i64 = next(&mut seq, &mut read)?;
                let mut texts: [String; TEXT_COUNT] = Default::default();
                for text in &mut texts[..OPTIONAL] {
                    *text = next(&mut seq, &mut read)?;
                }
                let mut optional = texts[OPTIONAL..].iter_mut();
                let subject_bytes: u64 = loop {
                    match next(&mut seq, &mut read)? {
                        TextOrNumber::Text(t) => match optional.next() {
                            Some(text) => *text = t,
                            None => {
                                return Err(serde::de::Error::invalid_type(
                                    serde::de::Unexpected::Str(&t),
                                    &"the record's size after its last optional text",
                                ));
                            }
                        },
                        TextOrNumber::Number(n) => break n,
                    }
                };
                let revision: u64 = next(&mut seq, &mut read)?;
                let mut decision = NewDecision::from_texts(at_ms, texts, subject_bytes, revision);
                if let Some(count) = seq.next_element::<u64>()? {
                    read += 1;
                    decision.count = count;
                    decision.first_at_ms = next(&mut seq, &mut read)?;
                    if count < 2 || decision.first_at_ms > at_ms {
                        return Err(serde::de::Error::custom(
                            "a counted decision record needs a count of at least 2 and a first time not after its last",
                        ));
                    }
                }
                if seq.next_element::<serde::de::IgnoredAny>()?.is_some() {
                    return Err(serde::de::Error::invalid_length(read + 1, &self));
                }
                Ok(JsonRecord(StoredDecision { id, decision }))
            }
        }
        deserializer.deserialize_seq(Visitor)
    }
}

/// An element after a record's first texts: an optional text, or (no more) its size.
#[derive(Deserialize)]
#[serde(untagged)]
enum TextOrNumber {
    Text(String),
    Number(u64),
}

/// A block's records, by id.
fn decode(body: &str) -> Result<Vec<StoredDecision>, StoreError> {
    let records: Vec<JsonRecord> = serde_json::from_str(body)
        .map_err(|e| StoreError::Corrupt(format!("a decision-log block is unreadable: {e}")))?;
    Ok(records.into_iter().map(|r| r.0).collect())
}

/// A block's body from stored records (a block rewritten by pruning).
fn encode_stored(records: &[StoredDecision]) -> String {
    use std::io::Write as _;
    let mut encoded = EncodedDecisions::default();
    for r in records {
        encoded.push_packed(&PackedDecision::from(&r.decision));
    }
    let mut body = vec![b'['];
    for (i, r) in records.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        let _ = write!(body, "[{},", r.id);
        body.extend_from_slice(encoded.tail(i));
    }
    body.push(b']');
    String::from_utf8(body).unwrap_or_default()
}

/// Whether a record passes a listing's filters, the page's keyset included.
fn selected(q: &DecisionQuery, r: &StoredDecision) -> bool {
    q.matches(&r.decision) && q.before.is_none_or(|b| (r.decision.at_ms, r.id) < b)
}

/// Newest first: by time, then id.
fn newest_first(a: &StoredDecision, b: &StoredDecision) -> std::cmp::Ordering {
    (b.decision.at_ms, b.id).cmp(&(a.decision.at_ms, a.id))
}

/// A statement's parameters, for statements whose conditions depend on the query.
enum Param<'a> {
    Text(&'a str),
    Int(i64),
}

impl<B: Backend> SqlStore<B>
where
    for<'c> &'c mut <B::Db as Database>::Connection: Executor<'c, Database = B::Db>,
    for<'q> <B::Db as Database>::Arguments<'q>: IntoArguments<'q, B::Db>,
    for<'r> &'r str:
        ColumnIndex<<B::Db as Database>::Row> + Encode<'r, B::Db> + Decode<'r, B::Db> + Type<B::Db>,
    for<'r> i64: Encode<'r, B::Db> + Decode<'r, B::Db> + Type<B::Db>,
    for<'r> String: Encode<'r, B::Db> + Decode<'r, B::Db> + Type<B::Db>,
    for<'r> Option<&'r str>: Encode<'r, B::Db>,
    Option<i64>: for<'r> Encode<'r, B::Db> + for<'r> Decode<'r, B::Db> + Type<B::Db>,
    usize: ColumnIndex<<B::Db as Database>::Row>,
{
    /// Appends the audit records and the decisions in one transaction; the decisions'
    /// ids, in the order given.
    pub(super) async fn insert_records(
        &self,
        audit: &[&NewAuditEvent],
        decisions: &EncodedDecisions,
    ) -> Result<Vec<u64>, StoreError> {
        let mut conn = self.begin_write().await?;
        let result = async {
            let now = super::now_ms();
            let mut tx = conn.begin_with(B::BEGIN_WRITE).await?;
            for e in audit {
                sqlx::query(INSERT_AUDIT)
                    .bind(&e.team_id)
                    .bind(to_i64(e.revision))
                    .bind(&e.actor)
                    .bind(&e.kind)
                    .bind(now)
                    .bind(e.detail.to_string())
                    .execute(&mut *tx)
                    .await?;
            }
            if decisions.is_empty() {
                tx.commit().await?;
                return Ok(Vec::new());
            }
            // The writers are serialised (SQLite's one write connection, PostgreSQL's
            // lock), so this transaction's records take the ids from `next` on.
            self.backend.lock_decisions(&mut tx).await?;
            let next: i64 = sqlx::query_scalar("SELECT next_id FROM decision_ids")
                .fetch_one(&mut *tx)
                .await?;
            let first = to_u64(next);
            // a block per team: the records of each team in the order given, the
            // teams in the order they first appear
            // (and a team's DENY records in blocks of their own, kept by their own
            // retention)
            let mut order: Vec<usize> = (0..decisions.len()).collect();
            let mut teams: Vec<(&[u8], bool)> = Vec::new();
            for i in 0..decisions.len() {
                let key = (decisions.team(i), decisions.records[i].deny);
                if !teams.contains(&key) {
                    teams.push(key);
                }
            }
            if teams.len() > 1 {
                order.sort_by_key(|&i| {
                    let key = (decisions.team(i), decisions.records[i].deny);
                    teams.iter().position(|&t| t == key)
                });
            }
            let mut ids = vec![0; decisions.len()];
            let mut id = first;
            let mut start = 0;
            while start < order.len() {
                let team = decisions.team(order[start]);
                let deny = decisions.records[order[start]].deny;
                let block_id = id;
                let (mut min_at, mut max_at) = (i64::MAX, i64::MIN);
                let mut body = Vec::with_capacity(64 * 1024);
                body.push(b'[');
                // the team's records from `start`, until the block is full
                let mut end = start;
                while end < order.len()
                    && decisions.team(order[end]) == team
                    && decisions.records[order[end]].deny == deny
                    && end - start < BLOCK_RECORDS
                    && body.len() < BLOCK_BYTES
                {
                    use std::io::Write as _;
                    let i = order[end];
                    if end > start {
                        body.push(b',');
                    }
                    let _ = write!(body, "[{id},");
                    body.extend_from_slice(decisions.tail(i));
                    let at = decisions.records[i].at_ms;
                    min_at = min_at.min(at);
                    max_at = max_at.max(at);
                    ids[i] = id;
                    id += 1;
                    end += 1;
                }
                body.push(b']');
                let body = String::from_utf8(body).map_err(|e| {
                    StoreError::Corrupt(format!("a decision-log block is not UTF-8: {e}"))
                })?;
                let team = std::str::from_utf8(team).map_err(|e| {
                    StoreError::Corrupt(format!("a decision record's team is not UTF-8: {e}"))
                })?;
                sqlx::query(
                    "INSERT INTO decision_blocks (id, max_id, team_id, min_at, max_at, records, body, deny)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                )
                .bind(to_i64(block_id))
                .bind(to_i64(id - 1))
                .bind(team)
                .bind(min_at)
                .bind(max_at)
                .bind((end - start) as i64)
                .bind(body)
                .bind(if deny { DENY_BLOCK } else { OTHER_BLOCK })
                .execute(&mut *tx)
                .await?;
                start = end;
            }
            sqlx::query("UPDATE decision_ids SET next_id = $1")
                .bind(to_i64(id))
                .execute(&mut *tx)
                .await?;
            self.backend
                .announce_decisions(&mut tx, first, id - 1)
                .await?;
            tx.commit().await?;
            Ok(ids)
        }
        .await;
        self.end_write(conn, result)
    }

    /// One page of records, newest first.
    pub(super) async fn select_decisions(
        &self,
        q: &DecisionQuery,
    ) -> Result<Vec<StoredDecision>, StoreError> {
        let limit = q.limit as usize;
        if limit == 0 {
            return Ok(Vec::new());
        }
        let mut conn = self.backend.read().await?;
        // Blocks newest first by their latest record: once the page is full and its
        // oldest record is newer than a block's latest, no block from there on can
        // hold a record of the page.
        let mut page: Vec<StoredDecision> = Vec::new();
        let mut after: Option<(i64, i64)> = None;
        loop {
            // only the conditions the query sets, so each can use an index
            let mut conditions: Vec<(&str, Param<'_>)> = Vec::new();
            if let Some(team) = q.team_id.as_deref() {
                conditions.push(("team_id = ?", Param::Text(team)));
            }
            if let Some(since) = q.since_ms {
                conditions.push(("max_at >= ?", Param::Int(since)));
            }
            if let Some(until) = q.until_ms {
                conditions.push(("min_at < ?", Param::Int(until)));
            }
            if let Some((at, _)) = q.before {
                conditions.push(("min_at <= ?", Param::Int(at)));
            }
            if let Some((max_at, id)) = after {
                conditions.push(("(max_at < ?", Param::Int(max_at)));
                conditions.push(("(max_at = ?", Param::Int(max_at)));
                conditions.push(("id < ?))", Param::Int(id)));
            }
            let mut sql = format!("SELECT {BLOCK_COLUMNS} FROM decision_blocks WHERE 1 = 1");
            for (i, (condition, _)) in conditions.iter().enumerate() {
                // the keyset's three parts read "(a OR (b AND c))"
                let joiner = if condition.starts_with("(max_at = ") {
                    " OR "
                } else {
                    " AND "
                };
                sql.push_str(joiner);
                sql.push_str(&condition.replace('?', &format!("${}", i + 1)));
            }
            sql.push_str(&format!(
                " ORDER BY max_at DESC, id DESC LIMIT {BLOCKS_PER_READ}"
            ));
            let mut query = sqlx::query(&sql);
            for (_, p) in &conditions {
                query = match *p {
                    Param::Text(t) => query.bind(t),
                    Param::Int(n) => query.bind(n),
                };
            }
            let rows = query.fetch_all(&mut *conn).await?;
            let read = rows.len();
            for row in &rows {
                let b = block(row)?;
                after = Some((b.max_at, b.id));
                if page.len() >= limit {
                    page.sort_by(newest_first);
                    page.truncate(limit);
                    if page[limit - 1].decision.at_ms > b.max_at {
                        return Ok(page);
                    }
                }
                page.extend(decode(&b.body)?.into_iter().filter(|r| selected(q, r)));
            }
            if read < BLOCKS_PER_READ as usize {
                page.sort_by(newest_first);
                page.truncate(limit);
                return Ok(page);
            }
        }
    }

    /// Records with ids from `first` to `last`, oldest first, at most `limit`.
    pub(super) async fn select_decisions_between(
        &self,
        first: u64,
        last: u64,
        limit: u32,
    ) -> Result<Vec<StoredDecision>, StoreError> {
        let mut conn = self.backend.read().await?;
        // the blocks' id ranges do not overlap: the last block to start at or before
        // `first`, and those that start after it up to `last`
        let rows = sqlx::query(&format!(
            "SELECT {BLOCK_COLUMNS} FROM decision_blocks
             WHERE id <= $2 AND id >= (SELECT COALESCE(MAX(id), 0) FROM decision_blocks WHERE id <= $1)
             ORDER BY id"
        ))
        .bind(to_i64(first))
        .bind(to_i64(last))
        .fetch_all(&mut *conn)
        .await?;
        let mut out = Vec::new();
        for row in &rows {
            let b = block(row)?;
            out.extend(
                decode(&b.body)?
                    .into_iter()
                    .filter(|r| (first..=last).contains(&r.id)),
            );
            if out.len() >= limit as usize {
                break;
            }
        }
        out.sort_by_key(|r| r.id);
        out.truncate(limit as usize);
        Ok(out)
    }

    /// The latest time of a record stored, if any.
    pub(super) async fn select_newest_decision_at(&self) -> Result<Option<i64>, StoreError> {
        let mut conn = self.backend.read().await?;
        Ok(
            sqlx::query_scalar("SELECT MAX(max_at) FROM decision_blocks")
                .fetch_one(&mut *conn)
                .await?,
        )
    }

    /// One retention pass in one transaction: ALLOW and ASK records by their limits,
    /// DENY records (and the audit trail's decision records) by theirs, at most
    /// `max_removed` of each by age.
    pub(super) async fn delete_old_decisions(&self, r: &Retention) -> Result<Pruned, StoreError> {
        let mut conn = self.begin_write().await?;
        let result = async {
            let mut tx = conn.begin_with(B::BEGIN_WRITE).await?;
            let mut pruned = Pruned::default();
            for (class, older_than, max_per_team) in [
                (OTHER_CLASS, r.older_than_ms, r.max_per_team),
                (DENY_CLASS, r.deny_older_than_ms, r.deny_max_per_team),
            ] {
                let (removed, capped) =
                    prune_class::<B::Db>(&mut tx, class, older_than, max_per_team, r.max_removed)
                        .await?;
                pruned.removed += removed;
                pruned.capped |= capped;
            }
            for (kinds, older_than, max_per_team) in [
                (DECISION_AUDIT, r.deny_older_than_ms, r.deny_max_per_team),
                (OTHER_AUDIT, r.audit_older_than_ms, r.audit_max_per_team),
            ] {
                let (removed, capped) =
                    prune_audit::<B::Db>(&mut tx, kinds, older_than, max_per_team, r.max_removed)
                        .await?;
                pruned.audit_removed += removed;
                pruned.capped |= capped;
            }
            // the clients' own decisions go with the longest kept of the records
            // they annotate
            sqlx::query("DELETE FROM client_decisions WHERE at < $1")
                .bind(r.older_than_ms.min(r.deny_older_than_ms))
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(pruned)
        }
        .await;
        self.end_write(conn, result)
    }
}

/// What a retention pass removes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// ALLOW and ASK records older than this (Unix milliseconds) go, then each team's
    /// oldest past `max_per_team`.
    pub older_than_ms: i64,
    pub max_per_team: u64,
    /// DENY records, and the audit trail's decision records, by limits of their own.
    pub deny_older_than_ms: i64,
    pub deny_max_per_team: u64,
    /// The audit trail's other records (settings changes, tokens, approvals, policy
    /// file reloads), by limits of their own.
    pub audit_older_than_ms: i64,
    pub audit_max_per_team: u64,
    /// Most records of each kind one pass removes by age; the rest wait for later
    /// passes.
    pub max_removed: u64,
}

/// What a retention pass removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pruned {
    /// Decision-log records.
    pub removed: u64,
    /// The audit trail's records.
    pub audit_removed: u64,
    /// More was due by age than `max_removed`: left for the next pass.
    pub capped: bool,
}

/// A block's `deny` column: its records are ALLOW and ASK ones, DENY ones, or both (a
/// block written before DENY records had blocks of their own: kept as long as DENY
/// records are).
const OTHER_BLOCK: i64 = 0;
const DENY_BLOCK: i64 = 1;
/// The conditions that select each retention class's blocks.
const OTHER_CLASS: &str = "deny = 0";
const DENY_CLASS: &str = "deny <> 0";
/// The audit kinds of decisions, which retention removes (settings changes, tokens
/// and approvals are kept).
const DECISION_AUDIT: &str = "kind IN ('decision_denied', 'decision_made', 'decisions_shed')";
/// The audit trail's other kinds, which have a retention of their own.
const OTHER_AUDIT: &str = "kind NOT IN ('decision_denied', 'decision_made', 'decisions_shed')";

/// Removes a class's blocks past the age (at most `max_removed` records of whole
/// blocks, oldest first; a block that straddles the age is rewritten only when the
/// pass was not cut short), then each team's oldest past `max_per_team`.
async fn prune_class<Db>(
    tx: &mut Db::Connection,
    class: &str,
    older_than_ms: i64,
    max_per_team: u64,
    max_removed: u64,
) -> Result<(u64, bool), StoreError>
where
    Db: Database,
    for<'c> &'c mut Db::Connection: Executor<'c, Database = Db>,
    for<'q> Db::Arguments<'q>: IntoArguments<'q, Db>,
    for<'r> &'r str: ColumnIndex<Db::Row> + Encode<'r, Db> + Decode<'r, Db> + Type<Db>,
    for<'r> i64: Encode<'r, Db> + Decode<'r, Db> + Type<Db>,
    for<'r> String: Encode<'r, Db> + Decode<'r, Db> + Type<Db>,
{
    use sqlx::Row as _;
    let mut count = 0u64;
    let mut capped = false;
    let expired = sqlx::query(&format!(
        "SELECT id, records FROM decision_blocks WHERE {class} AND max_at < $1 ORDER BY max_at, id"
    ))
    .bind(older_than_ms)
    .fetch_all(&mut *tx)
    .await?;
    for row in &expired {
        let records = to_u64(row.try_get("records")?);
        if count + records > max_removed {
            capped = true;
            break;
        }
        let id: i64 = row.try_get("id")?;
        rewrite_block::<Db>(&mut *tx, id, &[]).await?;
        count += records;
    }
    if !capped {
        let straddling = sqlx::query(&format!(
            "SELECT {BLOCK_COLUMNS} FROM decision_blocks WHERE {class} AND min_at < $1"
        ))
        .bind(older_than_ms)
        .fetch_all(&mut *tx)
        .await?;
        for row in &straddling {
            let b = block(row)?;
            let mut records = decode(&b.body)?;
            let before = records.len();
            records.retain(|r| r.decision.at_ms >= older_than_ms);
            count += (before - records.len()) as u64;
            rewrite_block::<Db>(&mut *tx, b.id, &records).await?;
        }
    }
    // then each team's oldest past the count: its blocks oldest first
    let over = sqlx::query(&format!(
        "SELECT team_id, CAST(SUM(records) AS BIGINT) AS n FROM decision_blocks WHERE {class}
         GROUP BY team_id HAVING SUM(records) > $1"
    ))
    .bind(to_i64(max_per_team))
    .fetch_all(&mut *tx)
    .await?;
    for row in over {
        let team: String = row.try_get("team_id")?;
        let n: i64 = row.try_get("n")?;
        let mut excess = n - to_i64(max_per_team);
        count += to_u64(excess);
        let blocks = sqlx::query(&format!(
            "SELECT {BLOCK_COLUMNS} FROM decision_blocks WHERE {class} AND team_id = $1
             ORDER BY max_at, id"
        ))
        .bind(&team)
        .fetch_all(&mut *tx)
        .await?;
        for row in &blocks {
            if excess <= 0 {
                break;
            }
            let b = block(row)?;
            if b.records <= excess {
                excess -= b.records;
                rewrite_block::<Db>(&mut *tx, b.id, &[]).await?;
            } else {
                let mut records = decode(&b.body)?;
                records.sort_by(|a, b| newest_first(b, a));
                records.drain(..excess as usize);
                records.sort_by_key(|r| r.id);
                excess = 0;
                rewrite_block::<Db>(&mut *tx, b.id, &records).await?;
            }
        }
    }
    Ok((count, capped))
}

/// Removes the audit trail's records of `kinds` (a condition) past the age (at most
/// `max_removed`, oldest first), then each team's oldest past `max_per_team`.
async fn prune_audit<Db>(
    tx: &mut Db::Connection,
    kinds: &str,
    older_than_ms: i64,
    max_per_team: u64,
    max_removed: u64,
) -> Result<(u64, bool), StoreError>
where
    Db: Database,
    for<'c> &'c mut Db::Connection: Executor<'c, Database = Db>,
    for<'q> Db::Arguments<'q>: IntoArguments<'q, Db>,
    for<'r> &'r str: ColumnIndex<Db::Row> + Encode<'r, Db> + Decode<'r, Db> + Type<Db>,
    for<'r> i64: Encode<'r, Db> + Decode<'r, Db> + Type<Db>,
    for<'r> String: Encode<'r, Db> + Decode<'r, Db> + Type<Db>,
    usize: ColumnIndex<Db::Row>,
{
    use sqlx::Row as _;
    let due: i64 = sqlx::query_scalar(&format!(
        "SELECT COUNT(*) FROM audit WHERE {kinds} AND at < $1"
    ))
    .bind(older_than_ms)
    .fetch_one(&mut *tx)
    .await?;
    let capped = to_u64(due) > max_removed;
    let mut count = to_u64(due).min(max_removed);
    if count > 0 {
        sqlx::query(&format!(
            "DELETE FROM audit WHERE id IN (SELECT id FROM audit WHERE {kinds} AND at < $1
             ORDER BY id LIMIT $2)"
        ))
        .bind(older_than_ms)
        .bind(to_i64(count))
        .execute(&mut *tx)
        .await?;
    }
    let over = sqlx::query(&format!(
        "SELECT team_id, COUNT(*) AS n FROM audit WHERE {kinds}
         GROUP BY team_id HAVING COUNT(*) > $1"
    ))
    .bind(to_i64(max_per_team))
    .fetch_all(&mut *tx)
    .await?;
    for row in over {
        let team: String = row.try_get("team_id")?;
        let n: i64 = row.try_get("n")?;
        let excess = n - to_i64(max_per_team);
        count += to_u64(excess);
        sqlx::query(&format!(
            "DELETE FROM audit WHERE id IN (SELECT id FROM audit WHERE {kinds}
             AND team_id = $1 ORDER BY id LIMIT $2)"
        ))
        .bind(&team)
        .bind(excess)
        .execute(&mut *tx)
        .await?;
    }
    Ok((count, capped))
}

/// A block after pruning: removed when no record is left, else its records and time
/// range written anew (its id stays: the first id it was given).
async fn rewrite_block<Db>(
    tx: &mut Db::Connection,
    id: i64,
    records: &[StoredDecision],
) -> Result<(), StoreError>
where
    Db: Database,
    for<'c> &'c mut Db::Connection: Executor<'c, Database = Db>,
    for<'q> Db::Arguments<'q>: IntoArguments<'q, Db>,
    for<'r> i64: Encode<'r, Db> + Type<Db>,
    for<'r> String: Encode<'r, Db> + Type<Db>,
{
    let (Some(min_at), Some(max_at)) = (
        records.iter().map(|r| r.decision.at_ms).min(),
        records.iter().map(|r| r.decision.at_ms).max(),
    ) else {
        sqlx::query("DELETE FROM decision_blocks WHERE id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        return Ok(());
    };
    sqlx::query(
        "UPDATE decision_blocks SET min_at = $1, max_at = $2, records = $3, body = $4 WHERE id = $5",
    )
    .bind(min_at)
    .bind(max_at)
    .bind(records.len() as i64)
    .bind(encode_stored(records))
    .bind(id)
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// A record's texts, in the order of its JSON form (after its id and time, before
/// `subject_bytes` and `revision`).
fn texts(d: &NewDecision) -> [&str; TEXT_COUNT] {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn record(at_ms: i64, texts: [&str; TEXT_COUNT]) -> PackedDecision {
        PackedDecision::new(at_ms, texts, 7, u64::MAX >> 2)
    }

    /// Texts that JSON escapes, and the largest numbers, read back as written.
    #[test]
    fn a_block_reads_back_what_was_encoded() {
        let hostile = [
            "t",
            "\"quoted\"",
            "back\\slash",
            "nul\0byte",
            "line\nbreak\r\t",
            "\u{1}\u{1f}\u{7f}",
            "é ü 中文 🙂",
            "</script>",
            "",
            "a:b",
            "[1,2]",
            "{\"k\":1}",
            "\u{2028}\u{2029}",
            "x".repeat(300).leak(),
            "ALLOW",
            "",
            "contractors,pii",
            "zip\nfake root",
            "/home/dev/proj",
            "toolu_01\"id\"",
        ];
        let mut counted = record(i64::MAX, hostile);
        counted.count = u64::MAX;
        counted.first_at_ms = i64::MIN;
        let records = [record(i64::MIN, hostile), counted];
        let encoded = EncodedDecisions::from(&[&records[0], &records[1]][..]);
        let ids = [u64::MAX >> 1, 0];
        let mut read = Vec::new();
        for (i, id) in ids.into_iter().enumerate() {
            let r = encoded.decode(i, id).unwrap();
            assert_eq!(r.id, id);
            assert_eq!(PackedDecision::from(&r.decision), records[i]);
            assert_eq!(encoded.team(i), b"t");
            read.push(r);
        }
        let body = encode_stored(&read);
        assert_eq!(decode(&body).unwrap(), read);
    }

    #[test]
    fn an_unreadable_block_is_an_error_not_an_empty_page() {
        // a record made in no group has the older form: no groups text
        let texts = vec!["\"\""; OPTIONAL].join(",");
        let whole = format!("[[1,2,{texts},3,4]]");
        assert_eq!(decode(&whole).unwrap()[0].decision.revision, 4);
        let grouped = format!("[[1,2,{texts},\"a,b\",3,4,5,1]]");
        let read = decode(&grouped).unwrap();
        assert_eq!(
            (read[0].decision.groups.as_str(), read[0].decision.count),
            ("a,b", 5)
        );
        let mut none = read[0].decision.clone();
        none.groups.clear();
        let encoded = EncodedDecisions::from(&[&PackedDecision::from(&none)][..]);
        let tail = String::from_utf8(encoded.tail(0).to_vec()).unwrap();
        assert_eq!(tail.matches("\"\"").count(), OPTIONAL, "{tail}");
        // unknown effects without groups: the groups written empty before them
        none.effects_unknown = "zip".into();
        let encoded = EncodedDecisions::from(&[&PackedDecision::from(&none)][..]);
        let tail = String::from_utf8(encoded.tail(0).to_vec()).unwrap();
        assert!(tail.ends_with(",\"\",\"zip\",3,4,5,1]"), "{tail}");
        let read = encoded.decode(0, 1).unwrap().decision;
        assert_eq!(
            (read.groups.as_str(), read.effects_unknown.as_str()),
            ("", "zip")
        );
        // the client's id alone: the three optional texts before it written empty
        let mut id_only = none.clone();
        id_only.effects_unknown.clear();
        id_only.tool_use_id = "toolu_1".into();
        let encoded = EncodedDecisions::from(&[&PackedDecision::from(&id_only)][..]);
        let tail = String::from_utf8(encoded.tail(0).to_vec()).unwrap();
        assert!(tail.contains(",\"\",\"\",\"\",\"toolu_1\","), "{tail}");
        assert_eq!(encoded.decode(0, 1).unwrap().decision, id_only);
        let counted = format!("[[1,2,{texts},3,4,5,1]]");
        let read = decode(&counted).unwrap();
        assert_eq!(
            (read[0].decision.count, read[0].decision.first_at_ms),
            (5, 1)
        );
        let long = format!("[[1,2,{texts},3,4,5]]");
        let longer = format!("[[1,2,{texts},3,4,5,1,0]]");
        let count_of_one = format!("[[1,2,{texts},3,4,1,1]]");
        let first_after_last = format!("[[1,2,{texts},3,4,5,9]]");
        let short = format!("[[1,2,{texts},3]]");
        let negative = format!("[[-1,2,{texts},3,4]]");
        let too_many_texts = format!("[[1,2,{texts},\"a\",\"b\",\"c\",\"d\",\"e\",3,4]]");
        for bad in [
            "",
            "[",
            "[[1]]",
            "{}",
            "[[1,2,\"a\"]]",
            &long,
            &longer,
            &count_of_one,
            &first_after_last,
            &short,
            &negative,
            &too_many_texts,
        ] {
            assert!(decode(bad).is_err(), "{bad:?}");
        }
        assert!(decode("[]").unwrap().is_empty());
    }

    /// Retaining keeps the chosen records whole, readable, in order, and sees each
    /// one's principal as its JSON string.
    #[test]
    fn retained_records_read_back() {
        let mut encoded = EncodedDecisions::default();
        for i in 0..6 {
            let principal = format!("p\"{}", i % 2);
            let mut texts: [&str; TEXT_COUNT] = ["x"; TEXT_COUNT];
            texts[PRINCIPAL] = &principal;
            encoded.push(i, texts, 1, 2);
        }
        let mut seen = Vec::new();
        let dropped = encoded.retain(|team, principal, bytes| {
            assert_eq!(team, b"x");
            assert!(bytes > 16 * 3);
            seen.push(principal.to_vec());
            principal == br#""p\"1""#
        });
        assert_eq!((dropped, encoded.len()), (3, 3));
        assert_eq!(seen.len(), 6);
        for i in 0..3 {
            let r = encoded.decode(i, 0).unwrap().decision;
            assert_eq!((r.at_ms, r.principal.as_str()), (2 * i as i64 + 1, "p\"1"));
        }
    }

    #[test]
    fn packed_records_unpack_to_their_texts() {
        let texts: [&str; TEXT_COUNT] = std::array::from_fn(|i| ["", "a", "bc", "é"][i % 4]);
        let d = record(5, texts);
        assert_eq!(d.texts(), texts);
        assert_eq!(PackedDecision::from(d.unpack()), d);
    }
}
