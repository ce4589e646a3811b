//! The decision log's rows: appended in batches (with any audit records of the same
//! batch, in one transaction), listed newest first by a keyset on (time, id) so pages
//! stay put while records are written, and pruned by age and by count per team.

use super::backend::Backend;
use super::sql::{INSERT_AUDIT, SqlStore};
use super::{NewAuditEvent, StoreError, to_i64, to_u64};
use serde::{Deserialize, Serialize};
use sqlx::{
    Arguments, ColumnIndex, Connection as _, Database, Decode, Encode, Executor, IntoArguments,
    Row, Type,
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

/// One decision on its way to the log: [`NewDecision`] with its texts in one
/// allocation. A decision makes one of these on its path (one allocation, where
/// sixteen strings were sixteen, each freed by the writer on another thread), and the
/// writer binds its texts from it. The spill file holds its JSON, which is
/// [`NewDecision`]'s.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "NewDecision", into = "NewDecision")]
pub struct PackedDecision {
    pub at_ms: i64,
    pub subject_bytes: u64,
    pub revision: u64,
    /// The texts in [`COLUMNS`] order, one after the other.
    text: Box<str>,
    /// Where each text ends in `text`.
    ends: [u32; TEXT_COUNT],
}

impl PackedDecision {
    /// A record of `texts` in [`COLUMNS`] order (as [`PackedDecision::texts`] gives
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
            text: text.into_boxed_str(),
            ends,
        }
    }

    /// The texts, in [`COLUMNS`] order.
    pub fn texts(&self) -> [&str; TEXT_COUNT] {
        let mut start = 0;
        self.ends.map(|end| {
            let end = end as usize;
            let t = self.text.get(start..end).unwrap_or_default();
            start = end;
            t
        })
    }

    /// All the texts, one after the other, and where each ends.
    fn joined(&self) -> (&str, &[u32; TEXT_COUNT]) {
        (&self.text, &self.ends)
    }

    /// The record with a string per text.
    pub fn unpack(&self) -> NewDecision {
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
        ] = self.texts().map(str::to_owned);
        NewDecision {
            at_ms: self.at_ms,
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
            subject_bytes: self.subject_bytes,
            subject_sha256,
            outcome,
            reason,
            matched_entry,
            revision: self.revision,
        }
    }
}

impl From<&NewDecision> for PackedDecision {
    fn from(d: &NewDecision) -> Self {
        Self::new(d.at_ms, texts(d), d.subject_bytes, d.revision)
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

/// Columns in insert order.
const COLUMNS: &str = "at, team_id, user_id, principal, agent_id, role, client, source, kind,
     server, tool, action, subject, subject_bytes, subject_sha256, outcome, reason,
     matched_entry, revision";
const COLUMN_COUNT: usize = 19;
/// Rows per INSERT statement at most: a power of two, within SQLite's 32,766
/// parameters (PostgreSQL takes 65,535).
const MAX_ROWS_PER_STATEMENT: usize = 1024;
const _: () = assert!(
    MAX_ROWS_PER_STATEMENT.is_power_of_two() && MAX_ROWS_PER_STATEMENT * COLUMN_COUNT <= 32_766
);
/// The text columns in [`COLUMNS`] order, which a packed INSERT cuts out of one value.
pub const TEXT_COUNT: usize = 16;
/// The texts [`COLUMNS`] lists before `subject_bytes` (the others come after it).
const TEXTS_BEFORE_SUBJECT_BYTES: usize = 12;
/// A packed row's parameters: the time, where each text starts and where the last
/// ends, `subject_bytes` and `revision`.
const PACKED_PARAMS_PER_ROW: usize = 1 + (TEXT_COUNT + 1) + 2;
// the rows' parameters and the packed texts
const _: () = assert!(MAX_ROWS_PER_STATEMENT * PACKED_PARAMS_PER_ROW < 32_766);

/// The teams with records, each found by a step through the (team, time) index
/// rather than a scan of every record.
const LOGGED_TEAMS: &str = "WITH RECURSIVE teams(team_id) AS (
       SELECT MIN(team_id) FROM decisions
       UNION ALL
       SELECT (SELECT MIN(d.team_id) FROM decisions d WHERE d.team_id > teams.team_id)
       FROM teams WHERE teams.team_id IS NOT NULL)
     SELECT team_id FROM teams WHERE team_id IS NOT NULL";

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
    for<'r> Vec<u8>: Encode<'r, B::Db> + Type<B::Db>,
    usize: ColumnIndex<<B::Db as Database>::Row>,
{
    /// Appends the audit records and the decisions in one transaction; the decisions'
    /// ids, in the order given.
    pub(super) async fn insert_records(
        &self,
        audit: &[&NewAuditEvent],
        decisions: &[&PackedDecision],
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
            self.backend.lock_decisions(&mut tx).await?;
            let mut rest = decisions;
            while !rest.is_empty() {
                let (chunk, tail) = rest.split_at(rows_per_statement(rest.len()));
                rest = tail;
                // the arguments sized once: grown by pushes, they were copied a dozen times
                let mut args = <B::Db as Database>::Arguments::default();
                let sql = if B::PACKED_DECISION_TEXTS {
                    args.reserve(chunk.len() * PACKED_PARAMS_PER_ROW + 1, 0);
                    bind_packed(&mut args, chunk)?;
                    packed_insert_sql(chunk.len())
                } else {
                    args.reserve(chunk.len() * COLUMN_COUNT, 0);
                    for d in chunk {
                        bind_row(&mut args, d)?;
                    }
                    insert_sql(chunk.len(), B::NUMBERED_PARAMS)
                };
                sqlx::query_with(sql, args).execute(&mut *tx).await?;
            }
            // The writers are serialised (SQLite's one write connection, PostgreSQL's
            // lock above) and each row's id is the one before plus one, so this
            // transaction's ids are the run ending at the last: no row read back.
            let last: i64 = sqlx::query_scalar(B::LAST_DECISION_ID)
                .fetch_one(&mut *tx)
                .await?;
            let last = to_u64(last);
            let first = (last + 1)
                .checked_sub(decisions.len() as u64)
                .ok_or_else(|| {
                    StoreError::Corrupt(format!(
                        "decision log ids end at {last} after {} rows were inserted",
                        decisions.len()
                    ))
                })?;
            self.backend
                .announce_decisions(&mut tx, first, last)
                .await?;
            tx.commit().await?;
            Ok((first..=last).collect())
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
            // team by team, through the (team, time) index: an index on time alone
            // would cost every insert (migration 7 dropped it)
            let teams: Vec<String> = sqlx::query_scalar(LOGGED_TEAMS)
                .fetch_all(&mut *conn)
                .await?;
            let mut count = 0;
            for team in &teams {
                // counted first: the backends' results share no way to say what a
                // DELETE removed
                let expired: i64 = sqlx::query_scalar(
                    "SELECT COUNT(*) FROM decisions WHERE team_id = $1 AND at < $2",
                )
                .bind(team)
                .bind(older_than_ms)
                .fetch_one(&mut *conn)
                .await?;
                if expired > 0 {
                    sqlx::query("DELETE FROM decisions WHERE team_id = $1 AND at < $2")
                        .bind(team)
                        .bind(older_than_ms)
                        .execute(&mut *conn)
                        .await?;
                }
                count += to_u64(expired);
            }
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

/// Adds one record's values, in [`COLUMNS`] order.
fn bind_row<'q, A>(args: &mut A, d: &'q PackedDecision) -> Result<(), StoreError>
where
    A: Arguments<'q>,
    &'q str: Encode<'q, A::Database> + Type<A::Database>,
    i64: Encode<'q, A::Database> + Type<A::Database>,
{
    let bad = |e: sqlx::error::BoxDynError| StoreError::from(sqlx::Error::Encode(e));
    let texts = d.texts();
    let (before, after) = texts.split_at(TEXTS_BEFORE_SUBJECT_BYTES);
    args.add(d.at_ms).map_err(bad)?;
    for &text in before {
        args.add(text).map_err(bad)?;
    }
    args.add(to_i64(d.subject_bytes)).map_err(bad)?;
    for &text in after {
        args.add(text).map_err(bad)?;
    }
    args.add(to_i64(d.revision)).map_err(bad)?;
    Ok(())
}

/// A record's texts, in [`COLUMNS`] order.
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
    ]
}

/// Binds a packed INSERT's values ([`packed_insert_sql`]): first every text of the
/// rows, one after the other, as one BLOB (owned, so sqlx does not copy it again);
/// then per row its time, the 1-based byte offsets where each text starts and where
/// the last ends, `subject_bytes` and `revision`. Numbers cost no allocation to bind;
/// texts cost two copies and two frees each.
fn bind_packed<'q, A>(args: &mut A, rows: &[&'q PackedDecision]) -> Result<(), StoreError>
where
    A: Arguments<'q>,
    Vec<u8>: Encode<'q, A::Database> + Type<A::Database>,
    i64: Encode<'q, A::Database> + Type<A::Database>,
{
    let bad = |e: sqlx::error::BoxDynError| StoreError::from(sqlx::Error::Encode(e));
    let size = rows.iter().map(|d| d.joined().0.len()).sum::<usize>();
    // never empty: SQLite reads an empty BLOB as NULL, and no text may be NULL
    let mut packed = Vec::with_capacity(size + 1);
    let mut starts = Vec::with_capacity(rows.len());
    for d in rows {
        starts.push(packed.len() + 1);
        packed.extend_from_slice(d.joined().0.as_bytes());
    }
    packed.push(0);
    args.add(packed).map_err(bad)?;
    for (d, start) in rows.iter().zip(starts) {
        args.add(d.at_ms).map_err(bad)?;
        args.add(to_i64(start as u64)).map_err(bad)?;
        for &end in d.joined().1 {
            args.add(to_i64((start + end as usize) as u64))
                .map_err(bad)?;
        }
        args.add(to_i64(d.subject_bytes)).map_err(bad)?;
        args.add(to_i64(d.revision)).map_err(bad)?;
    }
    Ok(())
}

/// `INSERT … SELECT … FROM (VALUES …)` for `rows` rows (a power of two up to
/// [`MAX_ROWS_PER_STATEMENT`]) bound by [`bind_packed`]: each text column is its
/// slice of the one BLOB, as text. SQLite's `substr` counts bytes in a BLOB, and the
/// slices are whole UTF-8 strings, so the text is the one given.
fn packed_insert_sql(rows: usize) -> &'static str {
    use std::sync::OnceLock;
    const SIZES: usize = MAX_ROWS_PER_STATEMENT.ilog2() as usize + 1;
    static PACKED: [OnceLock<String>; SIZES] = [const { OnceLock::new() }; SIZES];
    debug_assert!(rows.is_power_of_two() && rows <= MAX_ROWS_PER_STATEMENT);
    PACKED[rows.ilog2() as usize].get_or_init(|| {
        use std::fmt::Write as _;
        // VALUES names its columns column1, column2, …: the time, then the offsets
        let text = |i: usize| {
            let (start, end) = (i + 2, i + 3);
            format!(", CAST(substr(packed.texts, column{start}, column{end} - column{start}) AS TEXT)")
        };
        let (bytes, revision) = (TEXT_COUNT + 3, TEXT_COUNT + 4);
        let mut select = String::from("column1");
        for i in 0..TEXTS_BEFORE_SUBJECT_BYTES {
            select.push_str(&text(i));
        }
        let _ = write!(select, ", column{bytes}");
        for i in TEXTS_BEFORE_SUBJECT_BYTES..TEXT_COUNT {
            select.push_str(&text(i));
        }
        let _ = write!(select, ", column{revision}");
        let mut sql = format!(
            "INSERT INTO decisions ({COLUMNS}) SELECT {select} FROM (SELECT ? AS texts) AS packed, (VALUES "
        );
        for r in 0..rows {
            sql.push_str(if r == 0 { "(?" } else { ", (?" });
            sql.push_str(&", ?".repeat(PACKED_PARAMS_PER_ROW - 1));
            sql.push(')');
        }
        sql.push(')');
        sql
    })
}

/// Rows of the INSERT statement that starts a batch of `remaining`: the most, or
/// the largest power of two, so batches of any size take at most 11 distinct
/// statements, which stay prepared in the connection's cache.
fn rows_per_statement(remaining: usize) -> usize {
    if remaining >= MAX_ROWS_PER_STATEMENT {
        MAX_ROWS_PER_STATEMENT
    } else {
        1 << remaining.max(1).ilog2()
    }
}

/// `INSERT … VALUES (…), (…)` for `rows` rows (a power of two up to
/// [`MAX_ROWS_PER_STATEMENT`]), with numbered or plain `?` parameters; each text is
/// made once.
fn insert_sql(rows: usize, numbered: bool) -> &'static str {
    use std::sync::OnceLock;
    const SIZES: usize = MAX_ROWS_PER_STATEMENT.ilog2() as usize + 1;
    static NUMBERED: [OnceLock<String>; SIZES] = [const { OnceLock::new() }; SIZES];
    static PLAIN: [OnceLock<String>; SIZES] = [const { OnceLock::new() }; SIZES];
    debug_assert!(rows.is_power_of_two() && rows <= MAX_ROWS_PER_STATEMENT);
    let cache = if numbered { &NUMBERED } else { &PLAIN };
    cache[rows.ilog2() as usize].get_or_init(|| {
        use std::fmt::Write as _;
        let mut sql = format!("INSERT INTO decisions ({COLUMNS}) VALUES ");
        for r in 0..rows {
            sql.push_str(if r == 0 { "(" } else { ", (" });
            for c in 0..COLUMN_COUNT {
                let separator = if c == 0 { "" } else { ", " };
                if numbered {
                    let _ = write!(sql, "{separator}${}", r * COLUMN_COUNT + c + 1);
                } else {
                    let _ = write!(sql, "{separator}?");
                }
            }
            sql.push(')');
        }
        sql
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_split_into_few_statement_sizes() {
        for (n, first) in [
            (1, 1),
            (2, 2),
            (3, 2),
            (1000, 512),
            (1024, 1024),
            (5000, 1024),
        ] {
            assert_eq!(rows_per_statement(n), first, "{n}");
        }
        let mut sizes = std::collections::BTreeSet::new();
        for n in 1..=3000 {
            let mut rest = n;
            while rest > 0 {
                let rows = rows_per_statement(rest);
                sizes.insert(rows);
                rest -= rows;
            }
        }
        assert_eq!(sizes.len(), 11);
    }

    #[test]
    fn insert_statements_have_a_parameter_per_column_and_row() {
        let plain = insert_sql(4, false);
        assert_eq!(plain.matches('?').count(), 4 * COLUMN_COUNT);
        assert!(!plain.contains('$'));
        let numbered = insert_sql(4, true);
        assert!(numbered.ends_with(&format!("${})", 4 * COLUMN_COUNT)));
    }
}
