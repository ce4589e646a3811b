//! Approval requests and the grants their answers leave: created, answered (once,
//! by a conditional update every replica races fairly for) and audited in one
//! transaction each, and announced to the other replicas (a notice whose payload is
//! [`APPROVALS_NOTICE_PREFIX`] and the team id) so their watchers and waiters hear
//! of it at once.

mod record;

use super::backend::Backend;
use super::sql::{INSERT_AUDIT, SqlStore};
use super::{StoreError, to_i64, to_u64};
pub use record::{ApprovalCall, ApprovalDecision, McpCandidate, Original};
use serde_json::json;
use sqlx::{
    ColumnIndex, Connection as _, Database, Decode, Encode, Executor, IntoArguments, Row, Type,
};

/// A notice about a team's approvals is this character and the team id: ids hold no
/// control characters, so no team's notice can be read as one (and older replicas
/// take it for a team they do not hold).
pub const APPROVALS_NOTICE_PREFIX: char = '\u{1}';

/// Audit kinds of the approvals (team-scoped).
pub const AUDIT_APPROVAL_REQUESTED: &str = "approval_requested";
pub const AUDIT_APPROVAL_APPROVED: &str = "approval_approved";
pub const AUDIT_APPROVAL_DENIED: &str = "approval_denied";
pub const AUDIT_APPROVAL_EXPIRED: &str = "approval_expired";
pub const AUDIT_APPROVAL_ABANDONED: &str = "approval_abandoned";

/// Where a request stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::IntoStaticStr, strum::EnumString)]
#[strum(serialize_all = "snake_case")]
pub enum ApprovalState {
    Pending,
    Approved,
    Denied,
    Expired,
    /// The call that waited for it went away before anyone answered: it never runs.
    Abandoned,
}

impl ApprovalState {
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    fn audit_kind(self) -> &'static str {
        match self {
            Self::Pending => AUDIT_APPROVAL_REQUESTED,
            Self::Approved => AUDIT_APPROVAL_APPROVED,
            Self::Denied => AUDIT_APPROVAL_DENIED,
            Self::Expired => AUDIT_APPROVAL_EXPIRED,
            Self::Abandoned => AUDIT_APPROVAL_ABANDONED,
        }
    }
}

/// How far an approval reaches, as its record keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::IntoStaticStr, strum::EnumString)]
#[strum(serialize_all = "snake_case")]
pub enum ScopeKind {
    /// This call only.
    Once,
    /// The rest of the asking session (a grant bound to it).
    Session,
    /// Until a time (a grant).
    Duration,
    /// For good: the entry the call needed was added to an allowlist.
    Allowlist,
}

impl ScopeKind {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// A request to store.
#[derive(Debug, Clone, PartialEq)]
pub struct NewApproval {
    pub request_id: String,
    pub team_id: String,
    pub user_id: String,
    pub principal: String,
    pub agent_id: String,
    pub client: String,
    pub session_id: String,
    pub call: ApprovalCall,
    pub call_key: String,
    pub summary: String,
    /// The ASK that made the request.
    pub decision: ApprovalDecision,
    pub created_at_ms: i64,
    pub deadline_ms: i64,
}

/// A request as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalRecord {
    pub new: NewApproval,
    pub state: ApprovalState,
    pub answered_by: Option<String>,
    pub answered_at_ms: Option<i64>,
    /// Set for an approval.
    pub scope: Option<ScopeKind>,
    pub grant_expires_at_ms: Option<i64>,
    pub answer_reason: Option<String>,
    pub allowlist_entry: Option<String>,
    pub allowlist_revision: Option<u64>,
}

/// A grant an approval leaves behind (for the session or for a time).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewGrant {
    /// Set for a session grant.
    pub session_id: Option<String>,
    pub expires_at_ms: i64,
}

/// An answer to a pending request.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// Approved, Denied or Expired.
    pub state: ApprovalState,
    pub by: String,
    pub at_ms: i64,
    pub scope: Option<ScopeKind>,
    pub grant: Option<NewGrant>,
    pub reason: Option<String>,
    pub allowlist_entry: Option<String>,
    pub allowlist_revision: Option<u64>,
}

/// What became of an answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Answered {
    /// It was the answer: the request as it now stands.
    Now(ApprovalRecord),
    /// The request was no longer pending (or, for an approval or denial, its
    /// deadline had passed): as it stands, unchanged.
    Already(ApprovalRecord),
    /// No request has that id.
    Missing,
}

const COLUMNS: &str = "request_id, team_id, user_id, principal, agent_id, client, session_id,
     call, call_key, summary, decision, created_at, deadline, state, answered_by, answered_at,
     scope, grant_expires_at, answer_reason, allowlist_entry, allowlist_revision";

/// A column of request `id` that does not hold what this version writes: refused (a
/// request read wrongly could be answered or shown as something it is not).
fn corrupt(id: &str, column: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(format!(
        "approval request {id:?}: its `{column}` column does not parse ({e}); the request cannot be read or answered"
    ))
}

/// `column` of request `id`, as JSON of its type.
fn parse_json<T: serde::de::DeserializeOwned>(
    id: &str,
    column: &str,
    text: &str,
) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|e| corrupt(id, column, e))
}

fn record<R: Row>(row: &R) -> Result<ApprovalRecord, StoreError>
where
    for<'r> &'r str: ColumnIndex<R>,
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> Option<i64>: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> Option<String>: Decode<'r, R::Database> + Type<R::Database>,
{
    let id: String = row.try_get("request_id")?;
    let call: String = row.try_get("call")?;
    let decision: String = row.try_get("decision")?;
    let state: String = row.try_get("state")?;
    let scope: Option<String> = row.try_get("scope")?;
    let revision: Option<i64> = row.try_get("allowlist_revision")?;
    let state = state
        .parse()
        .map_err(|_| corrupt(&id, "state", format!("{state:?} is no state")))?;
    let scope = scope
        .map(|s| {
            s.parse()
                .map_err(|_| corrupt(&id, "scope", format!("{s:?} is no scope")))
        })
        .transpose()?;
    Ok(ApprovalRecord {
        new: NewApproval {
            call: parse_json(&id, "call", &call)?,
            decision: parse_json(&id, "decision", &decision)?,
            team_id: row.try_get("team_id")?,
            user_id: row.try_get("user_id")?,
            principal: row.try_get("principal")?,
            agent_id: row.try_get("agent_id")?,
            client: row.try_get("client")?,
            session_id: row.try_get("session_id")?,
            call_key: row.try_get("call_key")?,
            summary: row.try_get("summary")?,
            created_at_ms: row.try_get("created_at")?,
            deadline_ms: row.try_get("deadline")?,
            request_id: id,
        },
        state,
        answered_by: row.try_get("answered_by")?,
        answered_at_ms: row.try_get("answered_at")?,
        scope,
        grant_expires_at_ms: row.try_get("grant_expires_at")?,
        answer_reason: row.try_get("answer_reason")?,
        allowlist_entry: row.try_get("allowlist_entry")?,
        allowlist_revision: revision.map(to_u64),
    })
}

/// The notice payload announcing a change of `team`'s approvals.
pub fn approvals_notice(team: &str) -> String {
    format!("{APPROVALS_NOTICE_PREFIX}{team}")
}

impl<B: Backend> SqlStore<B>
where
    for<'e> &'e mut <B::Db as Database>::Connection: Executor<'e, Database = B::Db>,
    for<'q> <B::Db as Database>::Arguments<'q>: IntoArguments<'q, B::Db>,
    for<'r> &'r str:
        ColumnIndex<<B::Db as Database>::Row> + Encode<'r, B::Db> + Decode<'r, B::Db> + Type<B::Db>,
    for<'r> i64: Encode<'r, B::Db> + Decode<'r, B::Db> + Type<B::Db>,
    for<'r> String: Encode<'r, B::Db> + Decode<'r, B::Db> + Type<B::Db>,
    for<'r> Option<&'r str>: Encode<'r, B::Db>,
    Option<i64>: for<'r> Encode<'r, B::Db> + for<'r> Decode<'r, B::Db> + Type<B::Db>,
    Option<String>: for<'r> Decode<'r, B::Db> + Type<B::Db>,
    usize: ColumnIndex<<B::Db as Database>::Row>,
{
    pub(super) async fn insert_approval(&self, a: &NewApproval) -> Result<(), StoreError> {
        let mut conn = self.begin_write().await?;
        let result = async {
            let mut tx = conn.begin_with(B::BEGIN_WRITE).await?;
            sqlx::query(
                "INSERT INTO approvals (request_id, team_id, user_id, principal, agent_id, client,
                   session_id, call, call_key, summary, decision, created_at, deadline, state)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, 'pending')",
            )
            .bind(&a.request_id)
            .bind(&a.team_id)
            .bind(&a.user_id)
            .bind(&a.principal)
            .bind(&a.agent_id)
            .bind(&a.client)
            .bind(&a.session_id)
            .bind(super::to_json(&a.call)?)
            .bind(&a.call_key)
            .bind(&a.summary)
            .bind(super::to_json(&a.decision)?)
            .bind(a.created_at_ms)
            .bind(a.deadline_ms)
            .execute(&mut *tx)
            .await?;
            let detail = json!({
                "request_id": a.request_id,
                "user_id": a.user_id,
                "client": a.client,
                "summary": a.summary,
                "reason": a.decision.reason,
                "deadline_ms": a.deadline_ms,
            });
            sqlx::query(INSERT_AUDIT)
                .bind(&a.team_id)
                .bind(to_i64(a.decision.revision))
                .bind(&a.principal)
                .bind(AUDIT_APPROVAL_REQUESTED)
                .bind(a.created_at_ms)
                .bind(detail.to_string())
                .execute(&mut *tx)
                .await?;
            self.backend
                .announce(&mut *tx, &approvals_notice(&a.team_id))
                .await?;
            super::sql::commit(tx).await?;
            Ok(())
        }
        .await;
        self.end_write(conn, result)
    }

    /// Answers a pending request once: the conditional update is the one place two
    /// approvers (on any replicas) race, and exactly one wins.
    pub(super) async fn update_approval(
        &self,
        request_id: &str,
        answer: &Answer,
    ) -> Result<Answered, StoreError> {
        let mut conn = self.begin_write().await?;
        let result = async {
            let mut tx = conn.begin_with(B::BEGIN_WRITE).await?;
            // an approval or denial must come before the deadline, an expiry at or after it
            let timely = if answer.state == ApprovalState::Expired {
                "deadline <= $9"
            } else {
                "deadline > $9"
            };
            let won: Option<String> = sqlx::query_scalar(&format!(
                "UPDATE approvals SET state = $1, answered_by = $2, answered_at = $3, scope = $4,
                   grant_expires_at = $5, answer_reason = $6, allowlist_entry = $7,
                   allowlist_revision = $8
                 WHERE request_id = $10 AND state = 'pending' AND {timely}
                 RETURNING request_id"
            ))
            .bind(answer.state.as_str())
            .bind(&answer.by)
            .bind(answer.at_ms)
            .bind(answer.scope.map(ScopeKind::as_str))
            .bind(answer.grant.as_ref().map(|g| g.expires_at_ms))
            .bind(answer.reason.as_deref())
            .bind(answer.allowlist_entry.as_deref())
            .bind(answer.allowlist_revision.map(to_i64))
            .bind(answer.at_ms)
            .bind(request_id)
            .fetch_optional(&mut *tx)
            .await?;
            let row = sqlx::query(&format!(
                "SELECT {COLUMNS} FROM approvals WHERE request_id = $1"
            ))
            .bind(request_id)
            .fetch_optional(&mut *tx)
            .await?;
            let Some(record) = row.as_ref().map(record).transpose()? else {
                return Ok(Answered::Missing);
            };
            if won.is_none() {
                return Ok(Answered::Already(record));
            }
            if let Some(grant) = &answer.grant {
                sqlx::query(
                    "INSERT INTO approval_grants (request_id, team_id, user_id, session_id,
                       call_key, expires_at, created_by, created_at)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                )
                .bind(request_id)
                .bind(&record.new.team_id)
                .bind(&record.new.user_id)
                .bind(grant.session_id.as_deref())
                .bind(&record.new.call_key)
                .bind(grant.expires_at_ms)
                .bind(&answer.by)
                .bind(answer.at_ms)
                .execute(&mut *tx)
                .await?;
            }
            let detail = json!({
                "request_id": request_id,
                "user_id": record.new.user_id,
                "summary": record.new.summary,
                "scope": answer.scope.map(ScopeKind::as_str),
                "grant_expires_at_ms": answer.grant.as_ref().map(|g| g.expires_at_ms),
                "reason": answer.reason,
                "allowlist_entry": answer.allowlist_entry,
            });
            sqlx::query(INSERT_AUDIT)
                .bind(&record.new.team_id)
                .bind(answer.allowlist_revision.map_or(0, to_i64))
                .bind(&answer.by)
                .bind(answer.state.audit_kind())
                .bind(answer.at_ms)
                .bind(detail.to_string())
                .execute(&mut *tx)
                .await?;
            self.backend
                .announce(&mut *tx, &approvals_notice(&record.new.team_id))
                .await?;
            super::sql::commit(tx).await?;
            Ok(Answered::Now(record))
        }
        .await;
        self.end_write(conn, result)
    }

    pub(super) async fn select_approval(
        &self,
        request_id: &str,
    ) -> Result<Option<ApprovalRecord>, StoreError> {
        let mut conn = self.backend.read().await?;
        let row = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM approvals WHERE request_id = $1"
        ))
        .bind(request_id)
        .fetch_optional(&mut *conn)
        .await?;
        row.as_ref().map(record).transpose()
    }

    pub(super) async fn select_approvals(
        &self,
        team_id: &str,
        pending_only: bool,
        limit: u32,
    ) -> Result<Vec<ApprovalRecord>, StoreError> {
        let mut conn = self.backend.read().await?;
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM approvals
             WHERE team_id = $1 AND ($2 = 0 OR state = 'pending')
             ORDER BY created_at DESC, request_id LIMIT $3"
        ))
        .bind(team_id)
        .bind(i64::from(pending_only))
        .bind(i64::from(limit))
        .fetch_all(&mut *conn)
        .await?;
        rows.iter().map(record).collect()
    }

    /// The latest expiry of a grant covering the call at `now_ms`, if any.
    pub(super) async fn select_grant(
        &self,
        team_id: &str,
        user_id: &str,
        session_id: Option<&str>,
        call_key: &str,
        now_ms: i64,
    ) -> Result<Option<(String, i64)>, StoreError> {
        let mut conn = self.backend.read().await?;
        // a session grant only within its session; a duration grant (no session) anywhere
        let row = sqlx::query(
            "SELECT created_by, expires_at FROM approval_grants
             WHERE team_id = $1 AND user_id = $2 AND call_key = $3 AND expires_at > $4
               AND (session_id IS NULL OR session_id = $5)
             ORDER BY expires_at DESC LIMIT 1",
        )
        .bind(team_id)
        .bind(user_id)
        .bind(call_key)
        .bind(now_ms)
        .bind(session_id.unwrap_or(""))
        .fetch_optional(&mut *conn)
        .await?;
        row.map(|r| Ok((r.try_get("created_by")?, r.try_get("expires_at")?)))
            .transpose()
    }
}

#[cfg(test)]
mod tests;
