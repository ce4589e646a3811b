//! Appending a batch to the decision log: its records as blocks, a block per team and
//! class, with any audit records of the batch, in one transaction.

use super::encoding::EncodedDecisions;
use super::retention::{DENY_BLOCK, OTHER_BLOCK};
use crate::store::backend::Backend;
use crate::store::sql::{INSERT_AUDIT, SqlStore};
use crate::store::{NewAuditEvent, StoreError, to_i64, to_u64};
use sqlx::{ColumnIndex, Connection as _, Database, Decode, Encode, Executor, IntoArguments, Type};

/// Records a block holds at most, and the size past which it takes no more: a
/// batch of more is stored as several, so a listing never decodes much more than a
/// page (a record keeps up to `max_stored_command_bytes` of a command).
const BLOCK_RECORDS: usize = 4096;
const BLOCK_BYTES: usize = 1024 * 1024;

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
    pub(in crate::store) async fn insert_records(
        &self,
        audit: &[&NewAuditEvent],
        decisions: &EncodedDecisions,
    ) -> Result<Vec<u64>, StoreError> {
        let mut conn = self.begin_write().await?;
        let result = async {
            let now = crate::store::now_ms();
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
}
