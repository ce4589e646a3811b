//! The SQL store both backends share: one schema, one set of statements (written with
//! `$N` placeholders, which SQLite reads too), one row mapping and one classification
//! of database errors. A [`Backend`] supplies only what differs: connections,
//! transactions, migrations and cross-replica notices.

use super::{
    AUDIT_ADMIN_UPDATED, AUDIT_USER_UPDATED, AuditEvent, AuditFilter, Change, ChangeDoc, History,
    NewAuditEvent, NoticeStream, Store, StoreError, Versioned, from_json, now_ms, to_i64, to_json,
    to_u64,
};
use crate::policy::{AdminControls, UserSettings};
use async_trait::async_trait;
use serde::de::DeserializeOwned;
use sqlx::error::DatabaseError as _;
use sqlx::pool::PoolConnection;
use sqlx::{
    ColumnIndex, Connection as _, Database, Decode, Encode, Executor, IntoArguments, Row,
    Transaction, Type,
};

/// The schema, for every dialect: `{int}` is the dialect's 64-bit integer and `{id}`
/// its auto-incrementing key. Entry `i` takes the schema from version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[r"
CREATE TABLE teams (
    team_id TEXT PRIMARY KEY,
    revision {int} NOT NULL,
    history_floor {int} NOT NULL DEFAULT 0
);
CREATE TABLE admin_settings (
    team_id TEXT PRIMARY KEY,
    doc TEXT NOT NULL,
    revision {int} NOT NULL,
    updated_at {int} NOT NULL,
    updated_by TEXT NOT NULL
);
CREATE TABLE user_settings (
    team_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    doc TEXT NOT NULL,
    revision {int} NOT NULL,
    updated_at {int} NOT NULL,
    updated_by TEXT NOT NULL,
    PRIMARY KEY (team_id, user_id)
);
CREATE TABLE changes (
    team_id TEXT NOT NULL,
    revision {int} NOT NULL,
    doc TEXT NOT NULL,
    at {int} NOT NULL,
    actor TEXT NOT NULL,
    PRIMARY KEY (team_id, revision)
);
CREATE TABLE audit (
    {id},
    team_id TEXT NOT NULL,
    revision {int} NOT NULL,
    actor TEXT NOT NULL,
    kind TEXT NOT NULL,
    at {int} NOT NULL,
    detail TEXT NOT NULL
);
CREATE INDEX audit_team_id ON audit (team_id, id);
"];

/// The migrations a schema at `version` still needs, each with the version it sets,
/// in a dialect's words; an error if the schema is newer than this build.
pub(super) fn pending_migrations(
    version: usize,
    int: &str,
    id: &str,
) -> Result<Vec<(usize, String)>, StoreError> {
    if version > MIGRATIONS.len() {
        return Err(StoreError::Corrupt(format!(
            "database schema version {version} is newer than this toolgate knows ({}); upgrade toolgate",
            MIGRATIONS.len()
        )));
    }
    Ok((version..MIGRATIONS.len())
        .map(|i| {
            (
                i + 1,
                MIGRATIONS[i].replace("{int}", int).replace("{id}", id),
            )
        })
        .collect())
}

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

    /// See [`Store::check`].
    async fn check(&self) -> Result<(), StoreError> {
        Ok(())
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

    /// See [`Store::notices`].
    async fn notices(&self) -> Result<Option<NoticeStream>, StoreError> {
        Ok(None)
    }
}

/// A [`Store`] over a SQL [`Backend`].
#[derive(Debug, Clone)]
pub struct SqlStore<B> {
    pub(super) backend: B,
    /// How many changes per team the change history keeps.
    pub(super) history_limit: u64,
}

/// Where a document lives.
#[derive(Clone, Copy)]
enum DocKey<'a> {
    Admin,
    User(&'a str),
}

fn versioned<T: DeserializeOwned + Default, R: Row>(
    what: &str,
    row: Option<R>,
) -> Result<Versioned<T>, StoreError>
where
    for<'r> &'r str: ColumnIndex<R> + Decode<'r, R::Database> + Type<R::Database>,
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
{
    let Some(row) = row else {
        return Ok(Versioned::unset());
    };
    Ok(Versioned {
        doc: from_json(what, row.try_get::<&str, _>("doc")?)?,
        revision: to_u64(row.try_get("revision")?),
        updated_at_ms: row.try_get("updated_at")?,
        updated_by: row.try_get("updated_by")?,
    })
}

fn change<R: Row>(team_id: &str, row: &R) -> Result<Change, StoreError>
where
    for<'r> &'r str: ColumnIndex<R> + Decode<'r, R::Database> + Type<R::Database>,
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
{
    Ok(Change {
        team_id: team_id.to_owned(),
        revision: to_u64(row.try_get("revision")?),
        doc: from_json("change", row.try_get::<&str, _>("doc")?)?,
        at_ms: row.try_get("at")?,
        actor: row.try_get("actor")?,
    })
}

fn audit_event<R: Row>(row: &R) -> Result<AuditEvent, StoreError>
where
    for<'r> &'r str: ColumnIndex<R> + Decode<'r, R::Database> + Type<R::Database>,
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
{
    Ok(AuditEvent {
        id: to_u64(row.try_get("id")?),
        team_id: row.try_get("team_id")?,
        revision: to_u64(row.try_get("revision")?),
        actor: row.try_get("actor")?,
        kind: row.try_get("kind")?,
        at_ms: row.try_get("at")?,
        detail_json: row.try_get("detail")?,
    })
}

const INSERT_AUDIT: &str = "INSERT INTO audit (team_id, revision, actor, kind, at, detail)
     VALUES ($1, $2, $3, $4, $5, $6)";

impl<B: Backend> SqlStore<B>
where
    for<'e> &'e mut <B::Db as Database>::Connection: Executor<'e, Database = B::Db>,
    for<'q> <B::Db as Database>::Arguments<'q>: IntoArguments<'q, B::Db>,
    for<'r> &'r str:
        ColumnIndex<<B::Db as Database>::Row> + Encode<'r, B::Db> + Decode<'r, B::Db> + Type<B::Db>,
    for<'r> i64: Encode<'r, B::Db> + Decode<'r, B::Db> + Type<B::Db>,
    for<'r> String: Encode<'r, B::Db> + Decode<'r, B::Db> + Type<B::Db>,
    for<'r> Option<&'r str>: Encode<'r, B::Db>,
    Option<i64>: for<'r> Encode<'r, B::Db>,
    usize: ColumnIndex<<B::Db as Database>::Row>,
{
    /// The connection for a write, once the backend trusts writes to last.
    async fn begin_write(&self) -> Result<PoolConnection<B::Db>, StoreError> {
        self.backend.writable()?;
        self.backend.write_connection().await
    }

    /// After a write transaction: a connection whose transaction failed is closed, not
    /// reused (after a failed commit it may still be inside it); a write that
    /// committed is acknowledged only if the backend still trusts it to last.
    fn end_write<T>(
        &self,
        mut conn: PoolConnection<B::Db>,
        result: Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        if matches!(&result, Err(e) if !matches!(e, StoreError::Conflict { .. })) {
            conn.close_on_drop();
        }
        let value = result?;
        self.backend.writable()?;
        Ok(value)
    }

    /// Writes one document: allocates the team's next revision, checks `expected`,
    /// and records the change and its audit event, all in one transaction.
    #[allow(clippy::too_many_arguments)]
    async fn write_doc(
        &self,
        conn: &mut <B::Db as Database>::Connection,
        team_id: &str,
        key: DocKey<'_>,
        doc_json: String,
        change: ChangeDoc,
        expected: Option<u64>,
        actor: &str,
    ) -> Result<(u64, i64), StoreError> {
        let now = now_ms();
        let mut tx = conn.begin_with(B::BEGIN_WRITE).await?;
        // allocating first locks the team's row: it serialises every writer of the team,
        // on every replica, and the reads after it see the previous writer's commit
        let revision: i64 = sqlx::query_scalar(
            "INSERT INTO teams (team_id, revision) VALUES ($1, 1)
             ON CONFLICT (team_id) DO UPDATE SET revision = teams.revision + 1
             RETURNING revision",
        )
        .bind(team_id)
        .fetch_one(&mut *tx)
        .await?;
        let current: Option<i64> = match key {
            DocKey::Admin => {
                sqlx::query_scalar("SELECT revision FROM admin_settings WHERE team_id = $1")
                    .bind(team_id)
                    .fetch_optional(&mut *tx)
                    .await?
            }
            DocKey::User(user_id) => {
                sqlx::query_scalar(
                    "SELECT revision FROM user_settings WHERE team_id = $1 AND user_id = $2",
                )
                .bind(team_id)
                .bind(user_id)
                .fetch_optional(&mut *tx)
                .await?
            }
        };
        let actual = current.map_or(0, to_u64);
        if let Some(expected) = expected
            && expected != actual
        {
            // dropping the transaction rolls back the revision allocated above
            return Err(StoreError::Conflict { expected, actual });
        }
        let (upsert, audit_kind) = match key {
            DocKey::Admin => (
                sqlx::query(
                    "INSERT INTO admin_settings (team_id, doc, revision, updated_at, updated_by)
                     VALUES ($1, $2, $3, $4, $5)
                     ON CONFLICT (team_id) DO UPDATE SET doc = excluded.doc,
                       revision = excluded.revision, updated_at = excluded.updated_at,
                       updated_by = excluded.updated_by",
                ),
                AUDIT_ADMIN_UPDATED,
            ),
            DocKey::User(_) => (
                sqlx::query(
                    "INSERT INTO user_settings (team_id, doc, revision, updated_at, updated_by, user_id)
                     VALUES ($1, $2, $3, $4, $5, $6)
                     ON CONFLICT (team_id, user_id) DO UPDATE SET doc = excluded.doc,
                       revision = excluded.revision, updated_at = excluded.updated_at,
                       updated_by = excluded.updated_by",
                ),
                AUDIT_USER_UPDATED,
            ),
        };
        let mut upsert = upsert
            .bind(team_id)
            .bind(&doc_json)
            .bind(revision)
            .bind(now)
            .bind(actor);
        if let DocKey::User(user_id) = key {
            upsert = upsert.bind(user_id);
        }
        upsert.execute(&mut *tx).await?;
        let change_json = to_json(&change)?;
        sqlx::query(
            "INSERT INTO changes (team_id, revision, doc, at, actor) VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(team_id)
        .bind(revision)
        .bind(&change_json)
        .bind(now)
        .bind(actor)
        .execute(&mut *tx)
        .await?;
        sqlx::query(INSERT_AUDIT)
            .bind(team_id)
            .bind(revision)
            .bind(actor)
            .bind(audit_kind)
            .bind(now)
            .bind(&change_json)
            .execute(&mut *tx)
            .await?;
        // keep the newest `history_limit` changes; the floor tells resumers what is gone
        let floor = revision - to_i64(self.history_limit);
        if floor > 0 {
            sqlx::query("DELETE FROM changes WHERE team_id = $1 AND revision <= $2")
                .bind(team_id)
                .bind(floor)
                .execute(&mut *tx)
                .await?;
            sqlx::query("UPDATE teams SET history_floor = $1 WHERE team_id = $2")
                .bind(floor)
                .bind(team_id)
                .execute(&mut *tx)
                .await?;
        }
        self.backend.announce(&mut *tx, team_id).await?;
        tx.commit().await?;
        Ok((to_u64(revision), now))
    }

    async fn read_doc<T: DeserializeOwned + Default>(
        &self,
        team_id: &str,
        key: DocKey<'_>,
    ) -> Result<Versioned<T>, StoreError> {
        let mut conn = self.backend.read().await?;
        let row = match key {
            DocKey::Admin => {
                sqlx::query(
                    "SELECT doc, revision, updated_at, updated_by FROM admin_settings
                     WHERE team_id = $1",
                )
                .bind(team_id)
                .fetch_optional(&mut *conn)
                .await?
            }
            DocKey::User(user_id) => {
                sqlx::query(
                    "SELECT doc, revision, updated_at, updated_by FROM user_settings
                     WHERE team_id = $1 AND user_id = $2",
                )
                .bind(team_id)
                .bind(user_id)
                .fetch_optional(&mut *conn)
                .await?
            }
        };
        let what = match key {
            DocKey::Admin => "admin settings",
            DocKey::User(_) => "user settings",
        };
        versioned(what, row)
    }

    async fn put<T: serde::Serialize + Clone>(
        &self,
        team_id: &str,
        key: DocKey<'_>,
        doc: &T,
        change: ChangeDoc,
        expected: Option<u64>,
        actor: &str,
    ) -> Result<Versioned<T>, StoreError> {
        let doc_json = to_json(doc)?;
        let mut conn = self.begin_write().await?;
        let result = self
            .write_doc(&mut conn, team_id, key, doc_json, change, expected, actor)
            .await;
        let (revision, at) = self.end_write(conn, result)?;
        Ok(Versioned {
            doc: doc.clone(),
            revision,
            updated_at_ms: at,
            updated_by: actor.to_owned(),
        })
    }
}

#[async_trait]
impl<B: Backend> Store for SqlStore<B>
where
    for<'e> &'e mut <B::Db as Database>::Connection: Executor<'e, Database = B::Db>,
    for<'q> <B::Db as Database>::Arguments<'q>: IntoArguments<'q, B::Db>,
    for<'r> &'r str:
        ColumnIndex<<B::Db as Database>::Row> + Encode<'r, B::Db> + Decode<'r, B::Db> + Type<B::Db>,
    for<'r> i64: Encode<'r, B::Db> + Decode<'r, B::Db> + Type<B::Db>,
    for<'r> String: Encode<'r, B::Db> + Decode<'r, B::Db> + Type<B::Db>,
    for<'r> Option<&'r str>: Encode<'r, B::Db>,
    Option<i64>: for<'r> Encode<'r, B::Db>,
    usize: ColumnIndex<<B::Db as Database>::Row>,
{
    async fn team_revision(&self, team_id: &str) -> Result<u64, StoreError> {
        let mut conn = self.backend.read().await?;
        let rev: Option<i64> = sqlx::query_scalar("SELECT revision FROM teams WHERE team_id = $1")
            .bind(team_id)
            .fetch_optional(&mut *conn)
            .await?;
        Ok(rev.map_or(0, to_u64))
    }

    async fn get_admin(&self, team_id: &str) -> Result<Versioned<AdminControls>, StoreError> {
        self.read_doc(team_id, DocKey::Admin).await
    }

    async fn put_admin(
        &self,
        team_id: &str,
        controls: &AdminControls,
        expected: Option<u64>,
        actor: &str,
    ) -> Result<Versioned<AdminControls>, StoreError> {
        let change = ChangeDoc::Admin {
            controls: controls.clone(),
        };
        self.put(team_id, DocKey::Admin, controls, change, expected, actor)
            .await
    }

    async fn get_user(
        &self,
        team_id: &str,
        user_id: &str,
    ) -> Result<Versioned<UserSettings>, StoreError> {
        self.read_doc(team_id, DocKey::User(user_id)).await
    }

    async fn put_user(
        &self,
        team_id: &str,
        user_id: &str,
        settings: &UserSettings,
        expected: Option<u64>,
        actor: &str,
    ) -> Result<Versioned<UserSettings>, StoreError> {
        let change = ChangeDoc::User {
            user_id: user_id.to_owned(),
            settings: settings.clone(),
        };
        let key = DocKey::User(user_id);
        self.put(team_id, key, settings, change, expected, actor)
            .await
    }

    async fn changes_after(
        &self,
        team_id: &str,
        after: u64,
        limit: u32,
    ) -> Result<History, StoreError> {
        // one snapshot, so the floor and the rows agree
        let mut tx = self.backend.begin_snapshot().await?;
        let floor: Option<i64> =
            sqlx::query_scalar("SELECT history_floor FROM teams WHERE team_id = $1")
                .bind(team_id)
                .fetch_optional(&mut *tx)
                .await?;
        if to_i64(after) < floor.unwrap_or(0) {
            return Ok(History::Truncated);
        }
        let rows = sqlx::query(
            "SELECT revision, doc, at, actor FROM changes
             WHERE team_id = $1 AND revision > $2 ORDER BY revision LIMIT $3",
        )
        .bind(team_id)
        .bind(to_i64(after))
        .bind(i64::from(limit))
        .fetch_all(&mut *tx)
        .await?;
        tx.commit().await?;
        let changes = rows
            .iter()
            .map(|row| change(team_id, row))
            .collect::<Result<Vec<_>, StoreError>>()?;
        Ok(History::Changes(changes))
    }

    async fn append_audit(&self, events: &[NewAuditEvent]) -> Result<(), StoreError> {
        if events.is_empty() {
            return Ok(());
        }
        let mut conn = self.begin_write().await?;
        let result = async {
            let now = now_ms();
            let mut tx = conn.begin_with(B::BEGIN_WRITE).await?;
            for e in events {
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
            tx.commit().await?;
            Ok(())
        }
        .await;
        self.end_write(conn, result)
    }

    async fn list_audit(&self, filter: &AuditFilter) -> Result<Vec<AuditEvent>, StoreError> {
        let mut conn = self.backend.read().await?;
        // CAST gives PostgreSQL the parameter's type; SQLite reads it as a no-op
        let rows = sqlx::query(
            "SELECT id, team_id, revision, actor, kind, at, detail FROM audit
             WHERE id > $1 AND (CAST($2 AS TEXT) IS NULL OR team_id = $2)
               AND (CAST($3 AS TEXT) IS NULL OR kind = $3)
               AND (CAST($4 AS TEXT) IS NULL OR actor = $4)
               AND (CAST($6 AS BIGINT) IS NULL OR at >= $6)
             ORDER BY id LIMIT $5",
        )
        .bind(to_i64(filter.after_id))
        .bind(filter.team_id.as_deref())
        .bind(filter.kind.as_deref())
        .bind(filter.actor.as_deref())
        .bind(i64::from(filter.limit))
        .bind(filter.since_ms)
        .fetch_all(&mut *conn)
        .await?;
        rows.iter().map(audit_event).collect()
    }

    async fn notices(&self) -> Result<Option<NoticeStream>, StoreError> {
        self.backend.notices().await
    }

    async fn check(&self) -> Result<(), StoreError> {
        self.backend.check().await
    }
}

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

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> Self {
        match classify(&e) {
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
