//! Storage: settings documents, per-team revisions, the change history and the audit trail.
//!
//! One trait, [`Store`], implemented once over SQL ([`SqlStore`]) for two backends
//! (SQLite and PostgreSQL); both run the same test suite (`tests/it/store_suite.rs`).
//!
//! Architecture invariant: a write is acknowledged only once it is durable, and the
//! document, the team revision, the change record and the audit record of one write
//! commit in one transaction.

mod approvals;
mod backend;
mod client_decisions;
mod decisions;
mod errors;
mod metered;
mod pins;
mod postgres;
mod reserve;
mod rows;
mod schema;
mod sign_ins;
mod sql;
mod sqlite;
mod tokens;

pub use approvals::{
    APPROVALS_NOTICE_PREFIX, AUDIT_APPROVAL_ABANDONED, AUDIT_APPROVAL_APPROVED,
    AUDIT_APPROVAL_DENIED, AUDIT_APPROVAL_EXPIRED, AUDIT_APPROVAL_REQUESTED, Answer, Answered,
    ApprovalCall, ApprovalDecision, ApprovalRecord, ApprovalState, McpCandidate, NewApproval,
    NewGrant, Original, ScopeKind,
};
pub use backend::Backend;
pub use client_decisions::ClientDecision;
pub use decisions::{
    DECISIONS_NOTICE_PREFIX, DecisionQuery, EFFECTS_UNKNOWN_SEPARATOR, EncodedDecisions,
    NewDecision, PRINCIPAL_TEXT, PackedDecision, Pruned, Retention, StoredDecision, TEAM_TEXT,
    TEXT_COUNT,
};
pub use metered::Metered;
pub use pins::{
    AUDIT_PIN_SETTINGS_UPDATED, AUDIT_TOOL_CHANGED, AUDIT_TOOL_PINNED, AUDIT_TOOL_REPINNED,
    PINS_NOTICE_PREFIX, PinSettings, PinWrite, PinnedText, SeenTool, StoredPin,
};
pub use postgres::{DEFAULT_HEARTBEAT, NOTIFY_CHANNEL, PostgresBackend, PostgresStore};
pub use reserve::{DiskReserve, RESERVE_FILE};
pub use sign_ins::SignIn;
pub use sql::SqlStore;
pub use sqlite::{SqliteBackend, SqliteStore};
pub use tokens::{
    AUDIT_TOKEN_CREATED, AUDIT_TOKEN_REVOKED, IssuedToken, NewToken, TOKENS_NOTICE, expiry_ms,
};

use crate::policy::{AdminControls, UserSettings};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// Errors of the storage layer.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// An expected revision did not match: someone else wrote first.
    #[error("expected revision {expected} but the settings are at revision {actual}")]
    Conflict { expected: u64, actual: u64 },
    /// The backend cannot be reached.
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// The connection was lost after the commit was sent: the write may or may not
    /// have committed, so it must not be retried blindly.
    #[error(
        "the connection to the store was lost after the commit was sent, so the write may have committed ({0}): read the revision before writing again"
    )]
    Indeterminate(String),
    /// A stored record that does not decode: the file or database was tampered with.
    #[error("corrupt record: {0}")]
    Corrupt(String),
    /// Any other database error (`From<sqlx::Error>` sorts them: see `errors::classify`).
    #[error("store error: {0}")]
    Backend(sqlx::Error),
}

/// A stored document with the revision at which it last changed.
#[derive(Debug, Clone, PartialEq)]
pub struct Versioned<T> {
    pub doc: T,
    /// The team revision of the write that produced this document; 0 if never written.
    pub revision: u64,
    /// Unix milliseconds of that write.
    pub updated_at_ms: i64,
    pub updated_by: String,
}

impl<T: Default> Versioned<T> {
    /// The document a team or user has before anything is written.
    pub fn unset() -> Self {
        Self {
            doc: T::default(),
            revision: 0,
            updated_at_ms: 0,
            updated_by: String::new(),
        }
    }
}

/// What one committed change changed.
// the admin controls are most changes' payload, moved once into the hub: boxing them
// would add an allocation per change to save a few bytes on the rarer ones
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ChangeDoc {
    Admin {
        controls: AdminControls,
    },
    User {
        user_id: String,
        settings: UserSettings,
    },
}

/// One committed change, as kept in the change history.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub team_id: String,
    pub revision: u64,
    pub doc: ChangeDoc,
    pub at_ms: i64,
    pub actor: String,
}

/// The changes after a revision, or word that the history no longer reaches back that far.
#[derive(Debug, Clone, PartialEq)]
pub enum History {
    Changes(Vec<Change>),
    /// The oldest change still kept is newer than the one asked for.
    Truncated,
}

/// What a session quota is counted by: the user is part of it, so one user
/// reusing another's `session_id` spends only their own quota.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuotaKey<'a> {
    pub team_id: &'a str,
    pub user_id: &'a str,
    pub session_id: &'a str,
    pub operation: &'a str,
}

/// An audit record to append.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewAuditEvent {
    pub team_id: String,
    pub revision: u64,
    pub actor: String,
    pub kind: String,
    pub detail: serde_json::Value,
}

/// An audit record as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditEvent {
    pub id: u64,
    pub team_id: String,
    pub revision: u64,
    pub actor: String,
    pub kind: String,
    pub at_ms: i64,
    pub detail_json: String,
}

/// Which audit events to list.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AuditFilter {
    pub team_id: Option<String>,
    pub after_id: u64,
    pub limit: u32,
    pub kind: Option<String>,
    pub actor: Option<String>,
    /// Unix milliseconds; only events at or after it.
    pub since_ms: Option<i64>,
}

/// Audit kinds written by the store itself.
pub const AUDIT_ADMIN_UPDATED: &str = "admin_settings_updated";
pub const AUDIT_USER_UPDATED: &str = "user_settings_updated";

/// What a store says when another process committed something.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// The team has new commits.
    Team(String),
    /// The issued tokens changed (one was created or revoked).
    Tokens,
    /// The team's approval requests changed (one was created or answered).
    Approvals(String),
    /// The team's tool pins or pin settings changed.
    Pins(String),
    /// Another replica committed decision-log records with ids `first..=last` (its
    /// writers are serialised, so one commit's records are the whole range).
    Decisions { first: u64, last: u64 },
    /// Notices may have been missed: everything must be re-read.
    Reconnected,
    /// The listener heard a ping this process sent at `sent`: every notice committed
    /// before then has been delivered.
    Heard { sent: tokio::time::Instant },
    /// Another replica's ping (its origin): it is live.
    Peer(u64),
    /// The listener lost its connection, or heard nothing for too long: notices are
    /// missed until [`Notice::Reconnected`].
    Lost,
}

pub type NoticeStream = std::pin::Pin<Box<dyn futures::Stream<Item = Notice> + Send>>;

/// The storage backend. No method has a default body, so every backend, the
/// metering decorator (`metered.rs`) and every test wrapper must say what each does:
/// a forgotten forward does not compile, and a backend without a feature answers
/// its own [`StoreError::Unavailable`].
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// The team's current revision (0 for a team never written).
    async fn team_revision(&self, team_id: &str) -> Result<u64, StoreError>;

    /// Every written team's current revision, in one read (for the replica-lag metric).
    async fn team_revisions(&self) -> Result<Vec<(String, u64)>, StoreError>;

    async fn get_admin(&self, team_id: &str) -> Result<Versioned<AdminControls>, StoreError>;

    /// Replaces the team's admin controls, allocating the next team revision. With
    /// `expected`, fails with [`StoreError::Conflict`] unless the settings are at it.
    async fn put_admin(
        &self,
        team_id: &str,
        controls: &AdminControls,
        expected: Option<u64>,
        actor: &str,
    ) -> Result<Versioned<AdminControls>, StoreError>;

    async fn get_user(
        &self,
        team_id: &str,
        user_id: &str,
    ) -> Result<Versioned<UserSettings>, StoreError>;

    /// Replaces a user's settings, as [`Store::put_admin`] does for the team's.
    async fn put_user(
        &self,
        team_id: &str,
        user_id: &str,
        settings: &UserSettings,
        expected: Option<u64>,
        actor: &str,
    ) -> Result<Versioned<UserSettings>, StoreError>;

    /// The team's changes with a revision above `after`, oldest first, at most `limit`.
    async fn changes_after(
        &self,
        team_id: &str,
        after: u64,
        limit: u32,
    ) -> Result<History, StoreError>;

    async fn append_audit(&self, events: &[NewAuditEvent]) -> Result<(), StoreError>;

    async fn list_audit(&self, filter: &AuditFilter) -> Result<Vec<AuditEvent>, StoreError>;

    /// Counts one call against seed 004's per-session quota `max`: true when the
    /// count was below it (the call is now counted), false when it is used up
    /// (nothing counted). Shared by every replica of the store and kept across
    /// restarts.
    async fn consume_quota(&self, key: &QuotaKey<'_>, max: u64) -> Result<bool, StoreError>;

    /// How many calls a quota has counted so far (0 when none).
    async fn quota_used(&self, key: &QuotaKey<'_>) -> Result<u64, StoreError>;

    /// Stores a token issued through the API (its digest only) with its audit record.
    async fn create_token(&self, token: &NewToken, actor: &str) -> Result<IssuedToken, StoreError>;

    /// Revokes an issued token with its audit record (once); `None` when no token has
    /// that id.
    async fn revoke_token(
        &self,
        token_id: &str,
        actor: &str,
    ) -> Result<Option<IssuedToken>, StoreError>;

    /// A team's issued tokens (every team's with `None`), newest first, at most
    /// `limit`; with `active_at`, only those neither revoked nor expired then.
    async fn list_tokens(
        &self,
        team_id: Option<&str>,
        active_at: Option<i64>,
        limit: u32,
    ) -> Result<Vec<IssuedToken>, StoreError>;

    /// The issued token with this id, revoked or not.
    async fn get_token(&self, token_id: &str) -> Result<Option<IssuedToken>, StoreError>;

    /// How many of the team's issued tokens are in force at `now_ms`.
    async fn active_token_count(&self, team_id: &str, now_ms: i64) -> Result<u64, StoreError>;

    /// Every issued token neither revoked nor expired at `now_ms`: what authenticates.
    async fn active_tokens(&self, now_ms: i64) -> Result<Vec<IssuedToken>, StoreError>;

    /// Records a user's sign-in through the identity provider: their one row,
    /// written again with the last time, groups and issuer (the first time kept).
    async fn record_sign_in(&self, sign_in: &SignIn) -> Result<(), StoreError>;

    /// A team's sign-ins (every team's with `None`), the latest first, at most `limit`.
    async fn list_sign_ins(
        &self,
        team_id: Option<&str>,
        limit: u32,
    ) -> Result<Vec<SignIn>, StoreError>;

    /// Keeps the agent clients' own decisions (one per team, user and call; a later
    /// report of a call replaces the earlier).
    async fn record_client_decisions(&self, rows: &[ClientDecision]) -> Result<(), StoreError>;

    /// The team's client decisions for the calls `tool_use_ids` name, of every user.
    async fn client_decisions(
        &self,
        team_id: &str,
        tool_use_ids: &[&str],
    ) -> Result<Vec<ClientDecision>, StoreError>;

    /// Appends audit records and decision-log records in one transaction; the
    /// decisions' ids in the order given. A store that keeps no decision log writes
    /// the audit records alone. By reference: the writer keeps its records until the
    /// store took them.
    async fn append_records(
        &self,
        audit: &[&NewAuditEvent],
        decisions: &EncodedDecisions,
    ) -> Result<Vec<u64>, StoreError>;

    /// One page of the decision log, newest first.
    async fn list_decisions(
        &self,
        query: &DecisionQuery,
    ) -> Result<Vec<StoredDecision>, StoreError>;

    /// Decision-log records with ids from `first` to `last`, oldest first, at most
    /// `limit`: what another replica's notice names.
    async fn decisions_between(
        &self,
        first: u64,
        last: u64,
        limit: u32,
    ) -> Result<Vec<StoredDecision>, StoreError>;

    /// One retention pass over the decision log and the audit trail's decision
    /// records (see [`Retention`]).
    async fn prune_decisions(&self, retention: &Retention) -> Result<Pruned, StoreError>;

    /// Whether the store's disk is full (its reserve released for the writes that
    /// matter): the decision log's writer holds its records meanwhile.
    fn disk_full(&self) -> bool;

    /// The latest time of a decision-log record, if any: what retention measures age
    /// from when the clock cannot be trusted.
    async fn newest_decision_at(&self) -> Result<Option<i64>, StoreError>;

    /// Stores an approval request with its audit record.
    async fn create_approval(&self, approval: &NewApproval) -> Result<(), StoreError>;

    /// Answers a pending request (once; with its grant and audit record).
    async fn answer_approval(
        &self,
        request_id: &str,
        answer: &Answer,
    ) -> Result<Answered, StoreError>;

    async fn get_approval(&self, request_id: &str) -> Result<Option<ApprovalRecord>, StoreError>;

    /// A team's requests, newest first, at most `limit`.
    async fn list_approvals(
        &self,
        team_id: &str,
        pending_only: bool,
        limit: u32,
    ) -> Result<Vec<ApprovalRecord>, StoreError>;

    /// Who granted, and until when, the latest grant covering this call at `now_ms`.
    async fn find_grant(
        &self,
        team_id: &str,
        user_id: &str,
        session_id: Option<&str>,
        call_key: &str,
        now_ms: i64,
    ) -> Result<Option<(String, i64)>, StoreError>;

    /// Writes pins of `team`'s `server` (see [`PinWrite`]), audited and announced;
    /// the pins of `tools` after it, in their order (a tool left unpinned is left out),
    /// and whether anything was written (and announced).
    async fn write_pins(
        &self,
        team_id: &str,
        server: &str,
        tools: &[SeenTool],
        how: PinWrite,
        actor: &str,
    ) -> Result<(Vec<StoredPin>, bool), StoreError>;

    /// Accepts the definition hashed `sha256` (the changed one, or the pinned one as
    /// reviewed); `None` when the tool has no definition with that hash.
    async fn accept_pin(
        &self,
        team_id: &str,
        server: &str,
        tool: &str,
        sha256: &str,
        actor: &str,
    ) -> Result<Option<StoredPin>, StoreError>;

    /// A team's pins (of one server or all), by server and tool, at most `limit`.
    async fn list_pins(
        &self,
        team_id: &str,
        server: Option<&str>,
        changed_only: bool,
        limit: u32,
    ) -> Result<Vec<StoredPin>, StoreError>;

    async fn get_pin_settings(&self, team_id: &str) -> Result<PinSettings, StoreError>;

    /// Replaces a team's pin settings, audited and announced.
    async fn put_pin_settings(
        &self,
        team_id: &str,
        settings: PinSettings,
        actor: &str,
    ) -> Result<(), StoreError>;

    /// Commits made by other processes, for backends shared between replicas;
    /// `None` for a backend only this process writes.
    async fn notices(&self) -> Result<Option<NoticeStream>, StoreError>;

    /// Whether writes can be trusted to last (e.g. the database file is still the
    /// one opened); asked on a timer. While it fails, writes fail with the same error.
    async fn check(&self) -> Result<(), StoreError>;
}

/// Revisions are `u64` in the domain and `BIGINT` (`i64`) in the databases.
fn to_u64(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// Documents are stored as JSON text: readable with any SQL client, and the same in
/// both backends.
fn to_json<T: Serialize>(v: &T) -> Result<String, StoreError> {
    serde_json::to_string(v).map_err(|e| StoreError::Corrupt(format!("cannot encode record: {e}")))
}

fn from_json<T: serde::de::DeserializeOwned>(what: &str, s: &str) -> Result<T, StoreError> {
    serde_json::from_str(s).map_err(|e| StoreError::Corrupt(format!("{what}: {e}")))
}

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests;
