//! The decision log's rows: appended in batches (with any audit records of the same
//! batch, in one transaction), listed newest first by a keyset on (time, id) so pages
//! stay put while records are written, and pruned by age and by count per team.

use super::backend::Backend;
use super::sql::SqlStore;
use super::{NewAuditEvent, StoreError, to_i64, to_u64};
use serde::{Deserialize, Serialize};
use sqlx::{
    ColumnIndex, Connection as _, Database, Decode, Encode, Executor, IntoArguments, Row, Type,
};

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
}

impl NewDecision {
    /// Whether `subject` is the whole command line or path (the call can be decided
    /// again from the record).
    pub fn complete(&self) -> bool {
        self.subject.len() as u64 == self.subject_bytes
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

/// Columns in insert order.
const COLUMNS: &str = "at, team_id, user_id, principal, agent_id, role, client, source, kind,
     server, tool, action, subject, subject_bytes, subject_sha256, outcome, reason,
     matched_entry, revision";
const COLUMN_COUNT: usize = 19;
/// Rows per INSERT statement: within SQLite's 32,766 parameters.
const ROWS_PER_STATEMENT: usize = 500;

const INSERT_AUDIT: &str = "INSERT INTO audit (team_id, revision, actor, kind, at, detail)
     VALUES ($1, $2, $3, $4, $5, $6)";

fn stored<R: Row>(row: &R) -> Result<StoredDecision, StoreError>
where
    for<'r> &'r str: ColumnIndex<R>,
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
{
    Ok(StoredDecision {
        id: to_u64(row.try_get("id")?),
        decision: NewDecision {
            at_ms: row.try_get("at")?,
            team_id: row.try_get("team_id")?,
            user_id: row.try_get("user_id")?,
            principal: row.try_get("principal")?,
            agent_id: row.try_get("agent_id")?,
            role: row.try_get("role")?,
            client: row.try_get("client")?,
            source: row.try_get("source")?,
            kind: row.try_get("kind")?,
            server: row.try_get("server")?,
            tool: row.try_get("tool")?,
            action: row.try_get("action")?,
            subject: row.try_get("subject")?,
            subject_bytes: to_u64(row.try_get("subject_bytes")?),
            subject_sha256: row.try_get("subject_sha256")?,
            outcome: row.try_get("outcome")?,
            reason: row.try_get("reason")?,
            matched_entry: row.try_get("matched_entry")?,
            revision: to_u64(row.try_get("revision")?),
        },
    })
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
    usize: ColumnIndex<<B::Db as Database>::Row>,
{
    /// Appends the audit records and the decisions in one transaction; the decisions'
    /// ids, in the order given.
    pub(super) async fn insert_records(
        &self,
        audit: &[NewAuditEvent],
        decisions: &[NewDecision],
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
            if !decisions.is_empty() {
                self.backend.lock_decisions(&mut tx).await?;
            }
            let mut ids = Vec::with_capacity(decisions.len());
            for chunk in decisions.chunks(ROWS_PER_STATEMENT) {
                let sql = insert_sql(chunk.len());
                let mut query = sqlx::query(&sql);
                for d in chunk {
                    query = query
                        .bind(d.at_ms)
                        .bind(d.team_id.as_str())
                        .bind(d.user_id.as_str())
                        .bind(d.principal.as_str())
                        .bind(d.agent_id.as_str())
                        .bind(d.role.as_str())
                        .bind(d.client.as_str())
                        .bind(d.source.as_str())
                        .bind(d.kind.as_str())
                        .bind(d.server.as_str())
                        .bind(d.tool.as_str())
                        .bind(d.action.as_str())
                        .bind(d.subject.as_str())
                        .bind(to_i64(d.subject_bytes))
                        .bind(d.subject_sha256.as_str())
                        .bind(d.outcome.as_str())
                        .bind(d.reason.as_str())
                        .bind(d.matched_entry.as_str())
                        .bind(to_i64(d.revision));
                }
                let rows = query.fetch_all(&mut *tx).await?;
                // one statement's ids are allocated in row order; RETURNING's own order
                // is not promised, so they are sorted back into it
                let mut chunk_ids = rows
                    .iter()
                    .map(|r| r.try_get::<i64, _>(0usize).map(to_u64))
                    .collect::<Result<Vec<_>, _>>()?;
                chunk_ids.sort_unstable();
                ids.extend(chunk_ids);
            }
            if let (Some(&first), Some(&last)) = (ids.first(), ids.last()) {
                self.backend
                    .announce_decisions(&mut tx, first, last)
                    .await?;
            }
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
        let mut conn = self.backend.read().await?;
        // CAST gives PostgreSQL the parameters' types; SQLite reads it as a no-op.
        // Prefixes compare with substr, not LIKE, so `%` and `_` in them are literal.
        let rows = sqlx::query(&format!(
            "SELECT id, {COLUMNS} FROM decisions
             WHERE (CAST($1 AS TEXT) IS NULL OR team_id = $1)
               AND (CAST($2 AS TEXT) IS NULL OR user_id = $2)
               AND (CAST($3 AS TEXT) IS NULL OR agent_id = $3)
               AND (CAST($4 AS TEXT) IS NULL OR outcome = $4)
               AND (CAST($5 AS TEXT) IS NULL OR reason = $5)
               AND (CAST($6 AS TEXT) IS NULL OR
                    (kind = 'mcp' AND substr(subject, 1, length(CAST($6 AS TEXT))) = $6))
               AND (CAST($7 AS TEXT) IS NULL OR
                    (kind <> 'mcp' AND substr(subject, 1, length(CAST($7 AS TEXT))) = $7))
               AND (CAST($8 AS BIGINT) IS NULL OR at >= $8)
               AND (CAST($9 AS BIGINT) IS NULL OR at < $9)
               AND (CAST($10 AS BIGINT) IS NULL OR at < $10
                    OR (at = $10 AND id < CAST($11 AS BIGINT)))
             ORDER BY at DESC, id DESC LIMIT $12"
        ))
        .bind(q.team_id.as_deref())
        .bind(q.user_id.as_deref())
        .bind(q.agent_id.as_deref())
        .bind(q.outcome.as_deref())
        .bind(q.reason.as_deref())
        .bind(q.tool_prefix.as_deref())
        .bind(q.command_prefix.as_deref())
        .bind(q.since_ms)
        .bind(q.until_ms)
        .bind(q.before.map(|(at, _)| at))
        .bind(q.before.map(|(_, id)| to_i64(id)))
        .bind(i64::from(q.limit))
        .fetch_all(&mut *conn)
        .await?;
        rows.iter().map(stored).collect()
    }

    /// Records with ids from `first` to `last`, oldest first, at most `limit`.
    pub(super) async fn select_decisions_between(
        &self,
        first: u64,
        last: u64,
        limit: u32,
    ) -> Result<Vec<StoredDecision>, StoreError> {
        let mut conn = self.backend.read().await?;
        let rows = sqlx::query(&format!(
            "SELECT id, {COLUMNS} FROM decisions WHERE id >= $1 AND id <= $2 ORDER BY id LIMIT $3"
        ))
        .bind(to_i64(first))
        .bind(to_i64(last))
        .bind(i64::from(limit))
        .fetch_all(&mut *conn)
        .await?;
        rows.iter().map(stored).collect()
    }

    /// Removes records older than `older_than_ms`, then each team's oldest past
    /// `max_per_team`; how many were removed.
    pub(super) async fn delete_old_decisions(
        &self,
        older_than_ms: i64,
        max_per_team: u64,
    ) -> Result<u64, StoreError> {
        let mut conn = self.begin_write().await?;
        let result = async {
            // counted first: the backends' results share no way to say what a DELETE removed
            let expired: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM decisions WHERE at < $1")
                .bind(older_than_ms)
                .fetch_one(&mut *conn)
                .await?;
            if expired > 0 {
                sqlx::query("DELETE FROM decisions WHERE at < $1")
                    .bind(older_than_ms)
                    .execute(&mut *conn)
                    .await?;
            }
            let mut count = to_u64(expired);
            let over = sqlx::query(
                "SELECT team_id, COUNT(*) AS n FROM decisions GROUP BY team_id HAVING COUNT(*) > $1",
            )
            .bind(to_i64(max_per_team))
            .fetch_all(&mut *conn)
            .await?;
            for row in over {
                let team: String = row.try_get("team_id")?;
                let n: i64 = row.try_get("n")?;
                let excess = n - to_i64(max_per_team);
                sqlx::query(
                    "DELETE FROM decisions WHERE id IN (
                       SELECT id FROM decisions WHERE team_id = $1 ORDER BY at, id LIMIT $2)",
                )
                .bind(&team)
                .bind(excess)
                .execute(&mut *conn)
                .await?;
                count += to_u64(excess);
            }
            Ok(count)
        }
        .await;
        self.end_write(conn, result)
    }
}

/// `INSERT … VALUES (…), (…) RETURNING id` for `rows` rows.
fn insert_sql(rows: usize) -> String {
    use std::fmt::Write as _;
    let mut sql = format!("INSERT INTO decisions ({COLUMNS}) VALUES ");
    for r in 0..rows {
        sql.push_str(if r == 0 { "(" } else { ", (" });
        for c in 0..COLUMN_COUNT {
            let n = r * COLUMN_COUNT + c + 1;
            let _ = write!(sql, "{}${n}", if c == 0 { "" } else { ", " });
        }
        sql.push(')');
    }
    sql.push_str(" RETURNING id");
    sql
}
