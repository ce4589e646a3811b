//! Listing the decision log: a page newest first by a keyset on (time, id), read from
//! the blocks that can hold it; records by id range; the newest record's time.

use super::encoding::{BLOCK_COLUMNS, block, decode};
use super::records::{DecisionQuery, StoredDecision};
use crate::store::backend::Backend;
use crate::store::sql::SqlStore;
use crate::store::{StoreError, to_i64};
use sqlx::{ColumnIndex, Database, Decode, Encode, Executor, IntoArguments, Type};

/// Blocks a listing reads per statement.
const BLOCKS_PER_READ: i64 = 32;

/// Whether a record passes a listing's filters, the page's keyset included.
fn selected(q: &DecisionQuery, r: &StoredDecision) -> bool {
    q.matches(&r.decision) && q.before.is_none_or(|b| (r.decision.at_ms, r.id) < b)
}

/// Newest first: by time, then id.
pub(super) fn newest_first(a: &StoredDecision, b: &StoredDecision) -> std::cmp::Ordering {
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
    /// One page of records, newest first.
    pub(in crate::store) async fn select_decisions(
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
    pub(in crate::store) async fn select_decisions_between(
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
    pub(in crate::store) async fn select_newest_decision_at(
        &self,
    ) -> Result<Option<i64>, StoreError> {
        let mut conn = self.backend.read().await?;
        Ok(
            sqlx::query_scalar("SELECT MAX(max_at) FROM decision_blocks")
                .fetch_one(&mut *conn)
                .await?,
        )
    }
}
