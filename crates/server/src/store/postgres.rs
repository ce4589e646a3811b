//! The PostgreSQL backend: the shared truth of several replicas. Revisions are
//! allocated inside the writing transaction; `NOTIFY` wakes the other replicas, which
//! then read the change table (so a missed notice loses nothing).
//!
//! The listener proves itself: every heartbeat the replica notifies itself through
//! the pool, and hearing that ping back means every notice committed before it was
//! sent has been delivered (PostgreSQL delivers notices in commit order). A listener
//! that hears nothing for two heartbeats (a dead or silently partitioned connection)
//! is dropped and reconnected.

use super::backend::Backend;
use super::schema::pending_migrations;
use super::sql::SqlStore;
use super::{Notice, NoticeStream, StoreError};
use async_trait::async_trait;
use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgConnection, PgListener, PgPool, PgPoolOptions};
use sqlx::{Postgres, Transaction};
use std::time::Duration;
use tokio::time::Instant;
use toolgate_core::backoff::Backoff;

/// The channel replicas announce commits on; the payload is the team id.
pub const NOTIFY_CHANNEL: &str = "toolgate_changes";

/// An arbitrary constant: the advisory lock that serialises migrations across replicas.
const MIGRATION_LOCK: i64 = 0x746f_6f6c_6761_7465;
/// Another: the advisory lock that serialises the replicas' decision-log writers.
const DECISIONS_LOCK: i64 = 0x746f_6f6c_6c6f_6773;

/// A replica's ping to its own listener: `\u{3}ORIGIN:MILLIS`, the milliseconds
/// since the backend was made, when the ping was sent.
const PING_NOTICE_PREFIX: char = '\u{3}';

/// How often a replica pings its own listener unless told otherwise.
pub const DEFAULT_HEARTBEAT: Duration = Duration::from_secs(1);

/// The store shared by replicas.
pub type PostgresStore = SqlStore<PostgresBackend>;

#[derive(Debug, Clone)]
pub struct PostgresBackend {
    pool: PgPool,
    /// Random per process: a replica's notices of its own decision-log records are
    /// known by it and skipped (it publishes those as it writes them).
    origin: u64,
    /// How often the listener is pinged; silence for two of these drops it.
    heartbeat: Duration,
    /// What ping payloads count from.
    epoch: Instant,
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
                heartbeat: DEFAULT_HEARTBEAT,
                epoch: Instant::now(),
            },
            history_limit: history_limit.max(1),
        })
    }

    /// Pings the listener every `every` (at least 50 ms) instead of every second.
    #[must_use]
    pub fn with_heartbeat(mut self, every: Duration) -> Self {
        self.backend.heartbeat = every.max(Duration::from_millis(50));
        self
    }
}

/// Sends the replica's pings until the stream that reads them is dropped. A ping that
/// cannot be sent within a heartbeat is given up: the listener's silence says so.
fn spawn_pinger(backend: &PostgresBackend) -> tokio::task::JoinHandle<()> {
    let (pool, origin, every, epoch) = (
        backend.pool.clone(),
        backend.origin,
        backend.heartbeat,
        backend.epoch,
    );
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let millis = epoch.elapsed().as_millis();
            let payload = format!("{PING_NOTICE_PREFIX}{origin:016x}:{millis}");
            let send = sqlx::query("SELECT pg_notify($1, $2)")
                .bind(NOTIFY_CHANNEL)
                .bind(payload)
                .execute(&pool);
            // the outcome is read from the listener, not from here
            let _ = tokio::time::timeout(every, send).await;
        }
    })
}

/// A ping's origin and the milliseconds it carries, from `origin:millis`.
fn ping_notice(payload: &str) -> Option<(u64, u64)> {
    let (origin, millis) = payload.split_once(':')?;
    Some((u64::from_str_radix(origin, 16).ok()?, millis.parse().ok()?))
}

/// Aborts the pinger when the notice stream is dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
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

    // a round trip, and a primary: a standby takes no writes
    async fn check(&self) -> Result<(), StoreError> {
        let standby: bool = sqlx::query_scalar("SELECT pg_is_in_recovery()")
            .fetch_one(&self.pool)
            .await?;
        if standby {
            return Err(StoreError::Unavailable(
                "the database is a standby (in recovery) and takes no writes: point store.url at the primary".into(),
            ));
        }
        Ok(())
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
        let (origin, epoch) = (self.origin, self.epoch);
        // two heartbeats without hearing our own ping: the connection is dead or cut off
        let silence = self.heartbeat * 2;
        let mut listener = Some(listen(&pool).await?);
        let pinger = AbortOnDrop(spawn_pinger(self));
        let mut backoff = Backoff::new(Duration::from_millis(250), Duration::from_secs(5));
        let stream = async_stream::stream! {
            let _pinger = pinger;
            let mut heard = Instant::now();
            loop {
                let Some(current) = listener.as_mut() else {
                    // a connection cut off without a reset would hang here for good
                    let listening = tokio::time::timeout(silence.max(Duration::from_secs(3)), listen(&pool))
                        .await
                        .unwrap_or_else(|_| Err(StoreError::Unavailable("no answer from the database".into())));
                    match listening {
                        Ok(l) => {
                            listener = Some(l);
                            backoff.reset();
                            heard = Instant::now();
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
                // losing this race drops the listener, so its receive is never resumed
                let received = tokio::select! {
                    r = current.try_recv() => r,
                    () = tokio::time::sleep_until(heard + silence) => {
                        tracing::warn!(silent_ms = silence.as_millis() as u64, "postgresql listener: its own pings went unheard: reconnecting");
                        listener = None;
                        yield Notice::Lost;
                        continue;
                    }
                };
                match received {
                    Ok(Some(n)) if n.payload() == super::TOKENS_NOTICE => yield Notice::Tokens,
                    Ok(Some(n)) if n.payload().starts_with(PING_NOTICE_PREFIX) => {
                        let ping = &n.payload()[PING_NOTICE_PREFIX.len_utf8()..];
                        // another replica's pings prove nothing about this listener,
                        // only that the replica is live
                        match ping_notice(ping) {
                            Some((from, millis)) if from == origin => {
                                heard = Instant::now();
                                yield Notice::Heard { sent: epoch + Duration::from_millis(millis) };
                            }
                            Some((from, _)) => yield Notice::Peer(from),
                            None => {}
                        }
                    }
                    Ok(Some(n)) if n.payload().starts_with(super::APPROVALS_NOTICE_PREFIX) => {
                        let team = &n.payload()[super::APPROVALS_NOTICE_PREFIX.len_utf8()..];
                        yield Notice::Approvals(team.to_owned());
                    }
                    Ok(Some(n)) if n.payload().starts_with(super::PINS_NOTICE_PREFIX) => {
                        let team = &n.payload()[super::PINS_NOTICE_PREFIX.len_utf8()..];
                        yield Notice::Pins(team.to_owned());
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
                        yield Notice::Lost;
                    }
                }
            }
        };
        Ok(Some(Box::pin(stream)))
    }
}

#[cfg(test)]
mod tests {
    use super::{decisions_notice, ping_notice};

    #[test]
    fn pings_read_back_and_bad_ones_are_refused() {
        assert_eq!(ping_notice("00000000000000ff:1500"), Some((255, 1500)));
        for bad in ["", "ff", "ff:", ":5", "zz:5", "ff:-5", "ff:1.5"] {
            assert_eq!(ping_notice(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn decisions_notices_read_back_and_bad_ones_are_refused() {
        assert_eq!(decisions_notice("00000000000000ff:3-9"), Some((255, 3, 9)));
        for bad in ["", "ff", "ff:3", "ff:9-3", "zz:1-2", "ff:1-x", "ff:-1-2"] {
            assert_eq!(decisions_notice(bad), None, "{bad:?}");
        }
    }
}
