//! What differs between the SQL backends (SQLite, PostgreSQL): connections,
//! transactions, the write lock, integrity checks and cross-replica notices.

use super::{NoticeStream, StoreError};
use async_trait::async_trait;
use sqlx::pool::PoolConnection;
use sqlx::{Database, Transaction};

/// What differs between the backends.
#[async_trait]
pub trait Backend: std::fmt::Debug + Send + Sync + 'static {
    type Db: Database;

    /// The statement that opens a write transaction; it takes the backend's write lock
    /// where it has one.
    const BEGIN_WRITE: &'static str;

    /// A connection for a write transaction.
    async fn write_connection(&self) -> Result<PoolConnection<Self::Db>, StoreError>;

    /// Fails while writes cannot be trusted to last (e.g. the database file is no
    /// longer the one opened): asked before each write and before a committed write is
    /// acknowledged.
    fn writable(&self) -> Result<(), StoreError> {
        Ok(())
    }

    /// See `Store::check`.
    async fn check(&self) -> Result<(), StoreError> {
        Ok(())
    }

    /// Told of every write that failed (a conflict excepted), before it is answered.
    fn write_failed(&self, _error: &StoreError) {}

    /// Whether the disk is full (the embedded store's reserve released).
    fn disk_full(&self) -> bool {
        false
    }

    /// A connection for single statements that only read.
    async fn read(&self) -> Result<PoolConnection<Self::Db>, StoreError>;

    /// A read-only transaction whose statements all see one snapshot.
    async fn begin_snapshot(&self) -> Result<Transaction<'static, Self::Db>, StoreError>;

    /// Called inside a write transaction just before it commits.
    async fn announce(
        &self,
        _tx: &mut <Self::Db as Database>::Connection,
        _team_id: &str,
    ) -> Result<(), StoreError> {
        Ok(())
    }

    /// Called inside a write transaction that appends decision-log records, before
    /// the first: where replicas share the table it serialises their writers, so one
    /// transaction's records take consecutive ids and a notice can name them as a range.
    async fn lock_decisions(
        &self,
        _tx: &mut <Self::Db as Database>::Connection,
    ) -> Result<(), StoreError> {
        Ok(())
    }

    /// Called inside that transaction just before it commits, with the ids it took.
    async fn announce_decisions(
        &self,
        _tx: &mut <Self::Db as Database>::Connection,
        _first: u64,
        _last: u64,
    ) -> Result<(), StoreError> {
        Ok(())
    }

    /// See `Store::notices`.
    async fn notices(&self) -> Result<Option<NoticeStream>, StoreError> {
        Ok(None)
    }
}
