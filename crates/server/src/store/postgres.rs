//! The PostgreSQL backend: the shared truth of several replicas. Revisions are
//! allocated inside the writing transaction; `NOTIFY` wakes the other replicas, which
//! then read the change table (so a missed notice loses nothing).

use super::backend::Backend;
use super::schema::pending_migrations;
use super::sql::SqlStore;
use super::{Notice, NoticeStream, StoreError};
use async_trait::async_trait;
use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgConnection, PgListener, PgPool, PgPoolOptions};
use sqlx::{Postgres, Transaction};
use std::time::Duration;
use toolgate_core::backoff::Backoff;

/// The channel replicas announce commits on; the payload is the team id.
pub const NOTIFY_CHANNEL: &str = "toolgate_changes";

/// An arbitrary constant: the advisory lock that serialises migrations across replicas.
const MIGRATION_LOCK: i64 = 0x746f_6f6c_6761_7465;
/// Another: the advisory lock that serialises the replicas' decision-log writers.
const DECISIONS_LOCK: i64 = 0x746f_6f6c_6c6f_6773;

/// The store shared by replicas.
pub type PostgresStore = SqlStore<PostgresBackend>;

#[derive(Debug, Clone)]
pub struct PostgresBackend {
    pool: PgPool,
    /// Random per process: a replica's notices of its own decision-log records are
    /// known by it and skipped (it publishes those as it writes them).
    origin: u64,
}

impl PostgresStore {
    /// Connects and applies pending migrations. Writes fail within `acquire_timeout`
    /// when the database is unreachable, instead of hanging.
    pub async fn connect(url: &str, history_limit: u64) -> Result<Self, StoreError> {
        let pool = PgPoolOptions::new()
            .max_connections(8)
            .acquire_timeout(Duration::from_secs(3))
            .connect(url)
            .await?;
        migrate(&pool).await?;
        Ok(Self {
            backend: PostgresBackend {
                pool,
                origin: rand::random(),
            },
            history_limit: history_limit.max(1),
        })
    }
}

async fn listen(pool: &PgPool) -> Result<PgListener, StoreError> {
    let mut listener = PgListener::connect_with(pool).await?;
    listener.listen(NOTIFY_CHANNEL).await?;
    Ok(listener)
}

/// A decisions notice's origin and id range, from `origin:first-last`.
fn decisions_notice(payload: &str) -> Option<(u64, u64, u64)> {
    let (origin, range) = payload.split_once(':')?;
    let (first, last) = range.split_once('-')?;
    let (first, last) = (first.parse().ok()?, last.parse().ok()?);
    (first <= last).then_some((u64::from_str_radix(origin, 16).ok()?, first, last))
}

/// `toolgate_schema` holds one row per migration applied.
async fn migrate(pool: &PgPool) -> Result<(), StoreError> {
    let mut tx = pool.begin().await?;
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(MIGRATION_LOCK)
        .execute(&mut *tx)
        .await?;
    sqlx::raw_sql("CREATE TABLE IF NOT EXISTS toolgate_schema (version INTEGER NOT NULL)")
        .execute(&mut *tx)
        .await?;
    let version: Option<i32> = sqlx::query_scalar("SELECT max(version) FROM toolgate_schema")
        .fetch_one(&mut *tx)
        .await?;
    let version = usize::try_from(version.unwrap_or(0)).unwrap_or(0);
    for (number, sql) in pending_migrations(version, &super::schema::POSTGRES)? {
        sqlx::raw_sql(&sql).execute(&mut *tx).await?;
        sqlx::query("INSERT INTO toolgate_schema (version) VALUES ($1)")
            .bind(i32::try_from(number).unwrap_or(i32::MAX))
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    Ok(())
}

#[async_trait]
impl Backend for PostgresBackend {
    type Db = Postgres;

    const BEGIN_WRITE: &'static str = "BEGIN";

    async fn write_connection(&self) -> Result<PoolConnection<Postgres>, StoreError> {
        Ok(self.pool.acquire().await?)
    }

    async fn read(&self) -> Result<PoolConnection<Postgres>, StoreError> {
        Ok(self.pool.acquire().await?)
    }

    async fn begin_snapshot(&self) -> Result<Transaction<'static, Postgres>, StoreError> {
        let mut tx = self.pool.begin().await?;
        sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            .execute(&mut *tx)
            .await?;
        Ok(tx)
    }

    async fn announce(&self, tx: &mut PgConnection, team_id: &str) -> Result<(), StoreError> {
        // delivered to listeners only if and when the transaction commits
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(NOTIFY_CHANNEL)
            .bind(team_id)
            .execute(tx)
            .await?;
        Ok(())
    }

    async fn lock_decisions(&self, tx: &mut PgConnection) -> Result<(), StoreError> {
        sqlx::query("SELECT pg_advisory_xact_lock($1)")
            .bind(DECISIONS_LOCK)
            .execute(tx)
            .await?;
        Ok(())
    }

    async fn announce_decisions(
        &self,
        tx: &mut PgConnection,
        first: u64,
        last: u64,
    ) -> Result<(), StoreError> {
        let payload = format!(
            "{}{:016x}:{first}-{last}",
            super::DECISIONS_NOTICE_PREFIX,
            self.origin
        );
        self.announce(tx, &payload).await
    }

    async fn notices(&self) -> Result<Option<NoticeStream>, StoreError> {
        let pool = self.pool.clone();
        let origin = self.origin;
        let mut listener = Some(listen(&pool).await?);
        let mut backoff = Backoff::new(Duration::from_millis(250), Duration::from_secs(5));
        let stream = async_stream::stream! {
            loop {
                let Some(current) = listener.as_mut() else {
                    match listen(&pool).await {
                        Ok(l) => {
                            listener = Some(l);
                            backoff.reset();
                            // whatever was committed while we were deaf is read from the table
                            yield Notice::Reconnected;
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, "postgresql listener: reconnecting");
                            tokio::time::sleep(backoff.next_wait()).await;
                        }
                    }
                    continue;
                };
                match current.try_recv().await {
                    Ok(Some(n)) if n.payload() == super::TOKENS_NOTICE => yield Notice::Tokens,
                    Ok(Some(n)) if n.payload().starts_with(super::APPROVALS_NOTICE_PREFIX) => {
                        let team = &n.payload()[super::APPROVALS_NOTICE_PREFIX.len_utf8()..];
                        yield Notice::Approvals(team.to_owned());
                    }
                    Ok(Some(n)) if n.payload().starts_with(super::DECISIONS_NOTICE_PREFIX) => {
                        let notice = &n.payload()[super::DECISIONS_NOTICE_PREFIX.len_utf8()..];
                        match decisions_notice(notice) {
                            Some((from, _, _)) if from == origin => {}
                            Some((_, first, last)) => yield Notice::Decisions { first, last },
                            None => tracing::warn!(payload = notice, "postgresql listener: an unreadable decisions notice: skipped"),
                        }
                    }
                    Ok(Some(n)) => yield Notice::Team(n.payload().to_owned()),
                    Ok(None) | Err(_) => {
                        tracing::warn!("postgresql listener: connection lost");
                        listener = None;
                    }
                }
            }
        };
        Ok(Some(Box::pin(stream)))
    }
}

#[cfg(test)]
mod tests {
    use super::decisions_notice;

    #[test]
    fn decisions_notices_read_back_and_bad_ones_are_refused() {
        assert_eq!(decisions_notice("00000000000000ff:3-9"), Some((255, 3, 9)));
        for bad in ["", "ff", "ff:3", "ff:9-3", "zz:1-2", "ff:1-x", "ff:-1-2"] {
            assert_eq!(decisions_notice(bad), None, "{bad:?}");
        }
    }
}
