//! Pruning the decision log and the audit trail by age and by count per team: whole
//! blocks removed, the one or two that straddle a limit rewritten.

use super::encoding::{BLOCK_COLUMNS, block, decode, encode_stored};
use super::listing::newest_first;
use super::records::StoredDecision;
use crate::store::backend::Backend;
use crate::store::sql::SqlStore;
use crate::store::{StoreError, to_i64, to_u64};
use sqlx::{ColumnIndex, Connection as _, Database, Decode, Encode, Executor, IntoArguments, Type};

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
    /// One retention pass in one transaction: ALLOW and ASK records by their limits,
    /// DENY records (and the audit trail's decision records) by theirs, at most
    /// `max_removed` of each by age.
    pub(in crate::store) async fn delete_old_decisions(
        &self,
        r: &Retention,
    ) -> Result<Pruned, StoreError> {
        let mut conn = self.begin_write().await?;
        let result = async {
            let mut tx = conn.begin_with(B::BEGIN_WRITE).await?;
            let mut pruned = Pruned::default();
            for pass in [
                Pass::blocks(OTHER_CLASS, r.older_than_ms, r.max_per_team),
                Pass::blocks(DENY_CLASS, r.deny_older_than_ms, r.deny_max_per_team),
                Pass::audit(DECISION_AUDIT, r.deny_older_than_ms, r.deny_max_per_team),
                Pass::audit(OTHER_AUDIT, r.audit_older_than_ms, r.audit_max_per_team),
            ] {
                let (removed, capped) = prune::<B::Db>(&mut tx, &pass, r.max_removed).await?;
                match pass.table {
                    Table::Blocks => pruned.removed += removed,
                    Table::Audit => pruned.audit_removed += removed,
                }
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
pub(super) const OTHER_BLOCK: i64 = 0;
pub(super) const DENY_BLOCK: i64 = 1;
/// The conditions that select each retention class's blocks.
const OTHER_CLASS: &str = "deny = 0";
const DENY_CLASS: &str = "deny <> 0";
/// The audit kinds of decisions, which retention removes (settings changes, tokens
/// and approvals are kept).
const DECISION_AUDIT: &str = "kind IN ('decision_denied', 'decision_made', 'decisions_shed')";
/// The audit trail's other kinds, which have a retention of their own.
const OTHER_AUDIT: &str = "kind NOT IN ('decision_denied', 'decision_made', 'decisions_shed')";

/// The table a pruning pass removes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Table {
    /// The decision log's blocks, whole or rewritten.
    Blocks,
    /// The audit trail's records, one a row.
    Audit,
}

impl Table {
    fn name(self) -> &'static str {
        match self {
            Self::Blocks => "decision_blocks",
            Self::Audit => "audit",
        }
    }

    /// How a team's records are counted, as selected and as compared.
    fn counted(self) -> (&'static str, &'static str) {
        match self {
            Self::Blocks => ("CAST(SUM(records) AS BIGINT)", "SUM(records)"),
            Self::Audit => ("COUNT(*)", "COUNT(*)"),
        }
    }
}

/// One pruning pass: the records of `table` that `condition` selects, by their age
/// and count limits.
#[derive(Debug, Clone, Copy)]
struct Pass {
    table: Table,
    condition: &'static str,
    older_than_ms: i64,
    max_per_team: u64,
}

impl Pass {
    fn blocks(class: &'static str, older_than_ms: i64, max_per_team: u64) -> Self {
        Self {
            table: Table::Blocks,
            condition: class,
            older_than_ms,
            max_per_team,
        }
    }

    fn audit(kinds: &'static str, older_than_ms: i64, max_per_team: u64) -> Self {
        Self {
            table: Table::Audit,
            condition: kinds,
            older_than_ms,
            max_per_team,
        }
    }
}

/// Removes a pass's records past the age (at most `max_removed`, oldest first: whole
/// blocks, and a block that straddles the age rewritten only when the pass was not cut
/// short), then each team's oldest past `max_per_team`; how many it removed, and
/// whether more was due by age than `max_removed`.
async fn prune<Db>(
    tx: &mut Db::Connection,
    pass: &Pass,
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
    let Pass {
        table,
        condition,
        older_than_ms,
        max_per_team,
    } = *pass;
    let (mut count, capped) = match table {
        Table::Blocks => {
            let mut count = 0u64;
            let mut capped = false;
            let expired = sqlx::query(&format!(
                "SELECT id, records FROM decision_blocks WHERE {condition} AND max_at < $1 ORDER BY max_at, id"
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
                    "SELECT {BLOCK_COLUMNS} FROM decision_blocks WHERE {condition} AND min_at < $1"
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
            (count, capped)
        }
        Table::Audit => {
            let due: i64 = sqlx::query_scalar(&format!(
                "SELECT COUNT(*) FROM audit WHERE {condition} AND at < $1"
            ))
            .bind(older_than_ms)
            .fetch_one(&mut *tx)
            .await?;
            let count = to_u64(due).min(max_removed);
            if count > 0 {
                sqlx::query(&format!(
                    "DELETE FROM audit WHERE id IN (SELECT id FROM audit WHERE {condition} AND at < $1
                     ORDER BY id LIMIT $2)"
                ))
                .bind(older_than_ms)
                .bind(to_i64(count))
                .execute(&mut *tx)
                .await?;
            }
            (count, to_u64(due) > max_removed)
        }
    };
    // then each team's oldest past the count
    let name = table.name();
    let (selected, compared) = table.counted();
    let over = sqlx::query(&format!(
        "SELECT team_id, {selected} AS n FROM {name} WHERE {condition}
         GROUP BY team_id HAVING {compared} > $1"
    ))
    .bind(to_i64(max_per_team))
    .fetch_all(&mut *tx)
    .await?;
    for row in over {
        let team: String = row.try_get("team_id")?;
        let n: i64 = row.try_get("n")?;
        let mut excess = n - to_i64(max_per_team);
        count += to_u64(excess);
        if table == Table::Audit {
            sqlx::query(&format!(
                "DELETE FROM audit WHERE id IN (SELECT id FROM audit WHERE {condition}
                 AND team_id = $1 ORDER BY id LIMIT $2)"
            ))
            .bind(&team)
            .bind(excess)
            .execute(&mut *tx)
            .await?;
            continue;
        }
        // the team's blocks oldest first, the last one reached rewritten
        let blocks = sqlx::query(&format!(
            "SELECT {BLOCK_COLUMNS} FROM decision_blocks WHERE {condition} AND team_id = $1
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
