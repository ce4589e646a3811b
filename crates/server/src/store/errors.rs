//! The one classification of database errors, for both backends: what is worth
//! waiting for (unavailable, read-only), what is damage (corrupt), what is a bug.

use super::StoreError;
use sqlx::error::DatabaseError as _;

/// How a database error should be treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ErrorClass {
    /// The database cannot take the request now (unreachable, busy, full, read-only):
    /// nothing was committed, and trying again later may succeed.
    Unavailable,
    /// A record that does not decode, or a file that is not a database.
    Corrupt,
    /// The database cannot take writes (a read-only file, directory or mount; a
    /// PostgreSQL standby): an operator must act, so unavailable, with the reason.
    ReadOnly,
    /// Anything else: a bug or a schema mismatch.
    Other,
}

/// Sorts an error of either backend; the one place that knows their codes.
pub(super) fn classify(e: &sqlx::Error) -> ErrorClass {
    match e {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => ErrorClass::Unavailable,
        sqlx::Error::ColumnDecode { .. } | sqlx::Error::Decode(_) => ErrorClass::Corrupt,
        sqlx::Error::Database(db) => {
            if let Some(e) = db.try_downcast_ref::<sqlx::sqlite::SqliteError>() {
                sqlite_class(e.code().as_deref().and_then(|c| c.parse().ok()))
            } else if let Some(e) = db.try_downcast_ref::<sqlx::postgres::PgDatabaseError>() {
                postgres_class(e.code())
            } else {
                ErrorClass::Other
            }
        }
        _ => ErrorClass::Other,
    }
}

/// SQLite result codes (the primary code is the low byte of an extended one).
fn sqlite_class(code: Option<i32>) -> ErrorClass {
    match code.map(|c| c & 0xff) {
        // BUSY, LOCKED, IOERR, FULL, CANTOPEN, PROTOCOL
        Some(5 | 6 | 10 | 13 | 14 | 15) => ErrorClass::Unavailable,
        Some(8) => ErrorClass::ReadOnly,
        // CORRUPT, NOTADB
        Some(11 | 26) => ErrorClass::Corrupt,
        _ => ErrorClass::Other,
    }
}

/// PostgreSQL SQLSTATEs.
fn postgres_class(sqlstate: &str) -> ErrorClass {
    match sqlstate {
        "25006" => ErrorClass::ReadOnly,
        // a serialisation failure or a deadlock: the transaction was rolled back and a
        // later try may commit
        "40001" | "40P01" => ErrorClass::Unavailable,
        // connection exceptions, insufficient resources, the server shutting down
        s if s.starts_with("08") || s.starts_with("53") || s.starts_with("57P") => {
            ErrorClass::Unavailable
        }
        "XX001" | "XX002" => ErrorClass::Corrupt,
        _ => ErrorClass::Other,
    }
}

/// A failed `COMMIT`: when the database answered, nothing was committed and the
/// error is what it says; when the connection failed instead, the commit may have
/// been applied without its acknowledgement reaching us.
pub(super) fn commit_error(e: sqlx::Error) -> StoreError {
    match e {
        sqlx::Error::Io(_) | sqlx::Error::Protocol(_) | sqlx::Error::WorkerCrashed => {
            StoreError::Indeterminate(e.to_string())
        }
        other => other.into(),
    }
}

/// How a damaged database file is named in the reasons that mention it.
pub(super) const CORRUPT_FILE: &str = "the database file is damaged";
/// How a write that failed for lack of disk space reads (the reserve's cue).
pub(super) const DISK_FULL: &str = "the disk is full";

/// Whether an error is a full disk: SQLite's SQLITE_FULL, or ENOSPC from a write.
fn disk_full(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Io(io) => io.kind() == std::io::ErrorKind::StorageFull,
        sqlx::Error::Database(db) => db
            .try_downcast_ref::<sqlx::sqlite::SqliteError>()
            .and_then(|e| e.code()?.parse::<i32>().ok())
            .is_some_and(|c| c & 0xff == 13),
        _ => false,
    }
}

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> Self {
        // a database file that SQLite finds damaged (`SQLITE_CORRUPT`, `SQLITE_NOTADB`):
        // nothing the client can do, writes are refused until an operator restores it
        let sqlite = e
            .as_database_error()
            .and_then(|db| db.try_downcast_ref::<sqlx::sqlite::SqliteError>())
            .is_some();
        if disk_full(&e) {
            return Self::Unavailable(format!(
                "{DISK_FULL} ({e}): free space on the store's filesystem"
            ));
        }
        match classify(&e) {
            ErrorClass::Corrupt if sqlite => Self::Unavailable(format!(
                "{CORRUPT_FILE} ({}): writes are refused; restore it from a backup",
                e.as_database_error()
                    .map_or(String::new(), |db| db.message().to_owned())
            )),
            ErrorClass::Unavailable => Self::Unavailable(e.to_string()),
            ErrorClass::ReadOnly => Self::Unavailable(format!(
                "the database is read-only ({}): make its file, directory and mount writable, or point store.url at the primary",
                e.as_database_error()
                    .map_or(String::new(), |db| db.message().to_owned())
            )),
            ErrorClass::Corrupt => Self::Corrupt(e.to_string()),
            ErrorClass::Other => Self::Backend(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_busy_io_readonly_and_full_are_unavailable() {
        // SQLITE_BUSY, SQLITE_IOERR_WRITE (extended), SQLITE_FULL
        for code in [5, 778, 13] {
            assert_eq!(sqlite_class(Some(code)), ErrorClass::Unavailable, "{code}");
        }
        assert_eq!(sqlite_class(Some(8)), ErrorClass::ReadOnly);
        assert_eq!(sqlite_class(Some(11)), ErrorClass::Corrupt);
        // SQLITE_CONSTRAINT_UNIQUE
        assert_eq!(sqlite_class(Some(2067)), ErrorClass::Other);
    }

    #[test]
    fn postgres_connection_standby_and_shutdown_are_unavailable() {
        assert_eq!(postgres_class("25006"), ErrorClass::ReadOnly);
        for state in ["08006", "40001", "53100", "57P01"] {
            assert_eq!(postgres_class(state), ErrorClass::Unavailable, "{state}");
        }
        assert_eq!(postgres_class("XX001"), ErrorClass::Corrupt);
        assert_eq!(postgres_class("23505"), ErrorClass::Other);
    }

    #[test]
    fn a_commit_whose_answer_was_lost_is_indeterminate() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset");
        assert!(matches!(
            commit_error(sqlx::Error::Io(io)),
            StoreError::Indeterminate(_)
        ));
        // the pool never sent it: nothing was committed
        assert!(matches!(
            commit_error(sqlx::Error::PoolTimedOut),
            StoreError::Unavailable(_)
        ));
    }

    /// The table of a commit's failures: only a connection that failed after the
    /// `COMMIT` left (its answer lost) leaves the outcome unknown; an answer from the
    /// database, or a `COMMIT` never sent, says nothing was committed.
    #[test]
    fn only_a_lost_answer_to_a_commit_is_indeterminate() {
        let io = |kind| sqlx::Error::Io(std::io::Error::new(kind, "lost"));
        let indeterminate = [
            io(std::io::ErrorKind::ConnectionReset),
            io(std::io::ErrorKind::UnexpectedEof),
            io(std::io::ErrorKind::BrokenPipe),
            sqlx::Error::Protocol("unexpected message".into()),
            sqlx::Error::WorkerCrashed,
        ];
        for e in indeterminate {
            let shown = e.to_string();
            let mapped = commit_error(e);
            assert!(
                matches!(mapped, StoreError::Indeterminate(_)),
                "{shown}: {mapped:?}"
            );
            assert!(
                mapped.to_string().contains("may have committed")
                    && mapped.to_string().contains("read the revision"),
                "{mapped}"
            );
        }
        for e in [sqlx::Error::PoolTimedOut, sqlx::Error::PoolClosed] {
            assert!(matches!(commit_error(e), StoreError::Unavailable(_)));
        }
    }

    #[test]
    fn an_indeterminate_commit_reaches_the_service_as_such() {
        use crate::service::ServiceError;
        let store = || StoreError::Indeterminate("reset".into());
        assert!(matches!(
            ServiceError::from(store()),
            ServiceError::Indeterminate(m) if m.contains("read the revision")
        ));
        assert!(matches!(
            ServiceError::from(crate::hub::HubError::Store(store())),
            ServiceError::Indeterminate(_)
        ));
    }

    #[test]
    fn lost_connections_are_unavailable() {
        assert_eq!(
            classify(&sqlx::Error::PoolTimedOut),
            ErrorClass::Unavailable
        );
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset");
        assert!(matches!(
            StoreError::from(sqlx::Error::Io(io)),
            StoreError::Unavailable(_)
        ));
    }
}
