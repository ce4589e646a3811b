//! The embedded store: one SQLite file in WAL mode, created on first start.

use super::{
    AUDIT_ADMIN_UPDATED, AUDIT_USER_UPDATED, AuditEvent, AuditFilter, Change, ChangeDoc, History,
    NewAuditEvent, Store, StoreError, Versioned, from_json, now_ms, to_i64, to_json, to_u64,
};
use crate::policy::{AdminControls, UserSettings};
use async_trait::async_trait;
use serde::de::DeserializeOwned;
use sqlx::pool::PoolConnection;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{ConnectOptions as _, Connection as _, Row, Sqlite, SqlitePool};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Versioned schema; entry `i` takes `PRAGMA user_version` from `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[
    r"
CREATE TABLE teams (
    team_id TEXT PRIMARY KEY,
    revision INTEGER NOT NULL,
    history_floor INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE admin_settings (
    team_id TEXT PRIMARY KEY,
    doc TEXT NOT NULL,
    revision INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    updated_by TEXT NOT NULL
);
CREATE TABLE user_settings (
    team_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    doc TEXT NOT NULL,
    revision INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    updated_by TEXT NOT NULL,
    PRIMARY KEY (team_id, user_id)
);
CREATE TABLE changes (
    team_id TEXT NOT NULL,
    revision INTEGER NOT NULL,
    doc TEXT NOT NULL,
    at INTEGER NOT NULL,
    actor TEXT NOT NULL,
    PRIMARY KEY (team_id, revision)
);
CREATE TABLE audit (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    team_id TEXT NOT NULL,
    revision INTEGER NOT NULL,
    actor TEXT NOT NULL,
    kind TEXT NOT NULL,
    at INTEGER NOT NULL,
    detail TEXT NOT NULL
);
CREATE INDEX audit_team_id ON audit (team_id, id);
",
    r"
CREATE TABLE session_quotas (
    team_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    operation TEXT NOT NULL,
    used INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (team_id, session_id, operation)
);
",
];

/// Makes `path` readable and writable by the owner only (0600), whatever the umask:
/// the audit trail is no one else's to read. With `create`, a missing file is
/// created so, before SQLite opens it (an empty file is an empty database).
fn owner_only(path: &Path, create: bool) -> Result<(), StoreError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        let unavailable = |e: std::io::Error| {
            StoreError::Unavailable(format!("cannot set the mode of {}: {e}", path.display()))
        };
        if create {
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(path)
            {
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(unavailable(e)),
            }
        }
        match std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !create => {}
            other => other.map_err(unavailable)?,
        }
    }
    #[cfg(not(unix))]
    let _ = (path, create);
    Ok(())
}

/// Where a document lives.
enum DocKey<'a> {
    Admin,
    User(&'a str),
}

/// SQLite store. One writer connection (SQLite allows one writer at a time anyway) and
/// a small pool of readers, which WAL lets run beside the writer.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    writer: SqlitePool,
    readers: SqlitePool,
    history_limit: u64,
    files: Arc<Files>,
}

/// The database and WAL files as opened. A file deleted or replaced under the
/// server keeps taking writes through the open handle, and they are lost at the next
/// start: so every write first checks that the paths still name the files opened.
#[derive(Debug)]
struct Files {
    /// (path, (device, inode)) of the database and its WAL.
    opened: Vec<(PathBuf, (u64, u64))>,
    /// Why writes are refused for the file's content: damage found (by the integrity
    /// check or by a write; `true`, kept until a restart, since SQLite's page cache
    /// can hide it from a later check) or a check that could not run (`false`).
    corrupt: Mutex<Option<(String, bool)>>,
    /// Checks since the last `quick_check`: it reads the whole file, so it runs on
    /// every [`QUICK_CHECK_EVERY`]th check only.
    checks: AtomicU32,
    _keeper: Mutex<SqliteConnection>,
}

/// How often (in checks) the whole file is verified.
const QUICK_CHECK_EVERY: u32 = 12;

impl Files {
    fn identity(path: &Path) -> std::io::Result<(u64, u64)> {
        let meta = std::fs::metadata(path)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            Ok((meta.dev(), meta.ino()))
        }
        #[cfg(not(unix))]
        {
            let _ = meta;
            Ok((0, 0))
        }
    }

    fn open(db: &Path, keeper: SqliteConnection) -> Self {
        let mut wal = db.as_os_str().to_owned();
        wal.push("-wal");
        let opened = [db.to_owned(), PathBuf::from(wal)]
            .into_iter()
            .filter_map(|p| Some((p.clone(), Self::identity(&p).ok()?)))
            .collect();
        Self {
            opened,
            corrupt: Mutex::new(None),
            checks: AtomicU32::new(0),
            _keeper: Mutex::new(keeper),
        }
    }

    /// Fails unless every file opened is still at its path and the last full check passed.
    fn verify(&self) -> Result<(), StoreError> {
        for (path, id) in &self.opened {
            let problem = match Self::identity(path) {
                Ok(now) if now == *id => continue,
                Ok(_) => "was replaced by another file",
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => "was deleted",
                Err(_) => "cannot be read",
            };
            return Err(StoreError::Unavailable(format!(
                "database file {} {problem} while serving: writes are refused so that none is acknowledged and then lost; put the file back or restart the server",
                path.display()
            )));
        }
        if let Some((problem, _)) = self
            .corrupt
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
        {
            return Err(StoreError::Unavailable(problem));
        }
        Ok(())
    }
}

impl SqliteStore {
    /// Opens (creating if missing) the database file and applies pending migrations.
    /// `history_limit` is how many changes per team the change history keeps.
    pub async fn open(path: &Path, history_limit: u64) -> Result<Self, StoreError> {
        owner_only(path, true)?;
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // FULL: a commit is on disk before it is acknowledged, even on power loss
            .synchronous(SqliteSynchronous::Full)
            .busy_timeout(Duration::from_secs(5))
            .foreign_keys(true);
        let writer = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(options.clone())
            .await?;
        migrate(&writer).await?;
        // held open for good: SQLite deletes the WAL when its last connection closes,
        // and a new WAL would look like a replaced file
        let keeper = options.clone().connect().await?;
        let readers = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(options.read_only(true))
            .await?;
        // SQLite gives the WAL and shared-memory files the database file's mode;
        // files left by an older version are tightened here
        for suffix in ["-wal", "-shm"] {
            let mut side = path.as_os_str().to_owned();
            side.push(suffix);
            owner_only(Path::new(&side), false)?;
        }
        Ok(Self {
            writer,
            readers,
            history_limit: history_limit.max(1),
            files: Arc::new(Files::open(path, keeper)),
        })
    }

    /// The writer connection, once the files are checked.
    async fn begin_write(&self) -> Result<PoolConnection<Sqlite>, StoreError> {
        self.files.verify()?;
        Ok(self.writer.acquire().await?)
    }

    /// After a write transaction: a connection whose transaction failed is closed, not
    /// reused (after a failed commit it may still be inside it); a write that
    /// committed is acknowledged only if the files are still the ones opened.
    fn end_write<T>(
        &self,
        mut conn: PoolConnection<Sqlite>,
        result: Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        if matches!(&result, Err(e) if !matches!(e, StoreError::Conflict { .. })) {
            conn.close_on_drop();
        }
        // a write that found the file damaged refuses every later write (and turns
        // health NOT_SERVING) at once, not only at the next integrity check
        if let Err(StoreError::Unavailable(reason)) = &result
            && reason.starts_with(super::CORRUPT_FILE)
        {
            *self
                .files
                .corrupt
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some((reason.clone(), true));
        }
        let value = result?;
        self.files.verify()?;
        Ok(value)
    }

    #[allow(clippy::too_many_arguments)]
    async fn write_doc(
        &self,
        conn: &mut SqliteConnection,
        team_id: &str,
        key: DocKey<'_>,
        doc_json: String,
        change: ChangeDoc,
        expected: Option<u64>,
        actor: &str,
    ) -> Result<(u64, i64), StoreError> {
        let now = now_ms();
        let mut tx = conn.begin_with("BEGIN IMMEDIATE").await?;
        let current: Option<i64> = match key {
            DocKey::Admin => {
                sqlx::query_scalar("SELECT revision FROM admin_settings WHERE team_id = ?")
                    .bind(team_id)
                    .fetch_optional(&mut *tx)
                    .await?
            }
            DocKey::User(user_id) => {
                sqlx::query_scalar(
                    "SELECT revision FROM user_settings WHERE team_id = ? AND user_id = ?",
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
            return Err(StoreError::Conflict { expected, actual });
        }
        let revision: i64 = sqlx::query_scalar(
            "INSERT INTO teams (team_id, revision) VALUES (?, 1)
             ON CONFLICT (team_id) DO UPDATE SET revision = revision + 1
             RETURNING revision",
        )
        .bind(team_id)
        .fetch_one(&mut *tx)
        .await?;
        let audit_kind = match key {
            DocKey::Admin => {
                sqlx::query(
                    "INSERT INTO admin_settings (team_id, doc, revision, updated_at, updated_by)
                     VALUES (?, ?, ?, ?, ?)
                     ON CONFLICT (team_id) DO UPDATE SET doc = excluded.doc,
                       revision = excluded.revision, updated_at = excluded.updated_at,
                       updated_by = excluded.updated_by",
                )
                .bind(team_id)
                .bind(&doc_json)
                .bind(revision)
                .bind(now)
                .bind(actor)
                .execute(&mut *tx)
                .await?;
                AUDIT_ADMIN_UPDATED
            }
            DocKey::User(user_id) => {
                sqlx::query(
                    "INSERT INTO user_settings (team_id, user_id, doc, revision, updated_at, updated_by)
                     VALUES (?, ?, ?, ?, ?, ?)
                     ON CONFLICT (team_id, user_id) DO UPDATE SET doc = excluded.doc,
                       revision = excluded.revision, updated_at = excluded.updated_at,
                       updated_by = excluded.updated_by",
                )
                .bind(team_id)
                .bind(user_id)
                .bind(&doc_json)
                .bind(revision)
                .bind(now)
                .bind(actor)
                .execute(&mut *tx)
                .await?;
                AUDIT_USER_UPDATED
            }
        };
        let change_json = to_json(&change)?;
        sqlx::query(
            "INSERT INTO changes (team_id, revision, doc, at, actor) VALUES (?, ?, ?, ?, ?)",
        )
        .bind(team_id)
        .bind(revision)
        .bind(&change_json)
        .bind(now)
        .bind(actor)
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "INSERT INTO audit (team_id, revision, actor, kind, at, detail) VALUES (?, ?, ?, ?, ?, ?)",
        )
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
            sqlx::query("DELETE FROM changes WHERE team_id = ? AND revision <= ?")
                .bind(team_id)
                .bind(floor)
                .execute(&mut *tx)
                .await?;
            sqlx::query("UPDATE teams SET history_floor = ? WHERE team_id = ?")
                .bind(floor)
                .bind(team_id)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok((to_u64(revision), now))
    }
}

async fn migrate(pool: &SqlitePool) -> Result<(), StoreError> {
    let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
    let version: i64 = sqlx::query_scalar("PRAGMA user_version")
        .fetch_one(&mut *tx)
        .await?;
    let version = usize::try_from(version).unwrap_or(0);
    if version > MIGRATIONS.len() {
        return Err(StoreError::Corrupt(format!(
            "database schema version {version} is newer than this toolgate knows ({}); upgrade toolgate",
            MIGRATIONS.len()
        )));
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(version) {
        sqlx::raw_sql(sql).execute(&mut *tx).await?;
        sqlx::raw_sql(&format!("PRAGMA user_version = {}", i + 1))
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    Ok(())
}

fn versioned<T: DeserializeOwned + Default>(
    what: &str,
    row: Option<sqlx::sqlite::SqliteRow>,
) -> Result<Versioned<T>, StoreError> {
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

#[async_trait]
impl Store for SqliteStore {
    async fn team_revision(&self, team_id: &str) -> Result<u64, StoreError> {
        let rev: Option<i64> = sqlx::query_scalar("SELECT revision FROM teams WHERE team_id = ?")
            .bind(team_id)
            .fetch_optional(&self.readers)
            .await?;
        Ok(rev.map_or(0, to_u64))
    }

    async fn get_admin(&self, team_id: &str) -> Result<Versioned<AdminControls>, StoreError> {
        let row = sqlx::query(
            "SELECT doc, revision, updated_at, updated_by FROM admin_settings WHERE team_id = ?",
        )
        .bind(team_id)
        .fetch_optional(&self.readers)
        .await?;
        versioned("admin settings", row)
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
        let doc = to_json(controls)?;
        let mut conn = self.begin_write().await?;
        let result = self
            .write_doc(
                &mut conn,
                team_id,
                DocKey::Admin,
                doc,
                change,
                expected,
                actor,
            )
            .await;
        let (revision, at) = self.end_write(conn, result)?;
        Ok(Versioned {
            doc: controls.clone(),
            revision,
            updated_at_ms: at,
            updated_by: actor.to_owned(),
        })
    }

    async fn get_user(
        &self,
        team_id: &str,
        user_id: &str,
    ) -> Result<Versioned<UserSettings>, StoreError> {
        let row = sqlx::query(
            "SELECT doc, revision, updated_at, updated_by FROM user_settings
             WHERE team_id = ? AND user_id = ?",
        )
        .bind(team_id)
        .bind(user_id)
        .fetch_optional(&self.readers)
        .await?;
        versioned("user settings", row)
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
        let doc = to_json(settings)?;
        let mut conn = self.begin_write().await?;
        let result = self
            .write_doc(
                &mut conn,
                team_id,
                DocKey::User(user_id),
                doc,
                change,
                expected,
                actor,
            )
            .await;
        let (revision, at) = self.end_write(conn, result)?;
        Ok(Versioned {
            doc: settings.clone(),
            revision,
            updated_at_ms: at,
            updated_by: actor.to_owned(),
        })
    }

    async fn changes_after(
        &self,
        team_id: &str,
        after: u64,
        limit: u32,
    ) -> Result<History, StoreError> {
        // one read transaction so the floor and the rows agree
        let mut tx = self.readers.begin().await?;
        let floor: Option<i64> =
            sqlx::query_scalar("SELECT history_floor FROM teams WHERE team_id = ?")
                .bind(team_id)
                .fetch_optional(&mut *tx)
                .await?;
        if to_i64(after) < floor.unwrap_or(0) {
            return Ok(History::Truncated);
        }
        let rows = sqlx::query(
            "SELECT revision, doc, at, actor FROM changes
             WHERE team_id = ? AND revision > ? ORDER BY revision LIMIT ?",
        )
        .bind(team_id)
        .bind(to_i64(after))
        .bind(i64::from(limit))
        .fetch_all(&mut *tx)
        .await?;
        tx.commit().await?;
        let changes = rows
            .into_iter()
            .map(|row| {
                Ok(Change {
                    team_id: team_id.to_owned(),
                    revision: to_u64(row.try_get("revision")?),
                    doc: from_json("change", row.try_get::<&str, _>("doc")?)?,
                    at_ms: row.try_get("at")?,
                    actor: row.try_get("actor")?,
                })
            })
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
            let mut tx = conn.begin_with("BEGIN IMMEDIATE").await?;
            for e in events {
                sqlx::query(
                    "INSERT INTO audit (team_id, revision, actor, kind, at, detail) VALUES (?, ?, ?, ?, ?, ?)",
                )
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

    async fn consume_quota(
        &self,
        team_id: &str,
        session_id: &str,
        operation: &str,
        max: u64,
    ) -> Result<bool, StoreError> {
        if max == 0 {
            return Ok(false);
        }
        let mut conn = self.begin_write().await?;
        let result = async {
            // one statement: the count and the test cannot be split by another writer
            let used: Option<i64> = sqlx::query_scalar(
                "INSERT INTO session_quotas (team_id, session_id, operation, used, updated_at)
                 VALUES (?, ?, ?, 1, ?)
                 ON CONFLICT (team_id, session_id, operation) DO UPDATE
                 SET used = used + 1, updated_at = excluded.updated_at
                 WHERE session_quotas.used < ?
                 RETURNING used",
            )
            .bind(team_id)
            .bind(session_id)
            .bind(operation)
            .bind(now_ms())
            .bind(to_i64(max))
            .fetch_optional(&mut *conn)
            .await?;
            Ok(used.is_some())
        }
        .await;
        self.end_write(conn, result)
    }

    async fn check(&self) -> Result<(), StoreError> {
        if self
            .files
            .checks
            .fetch_add(1, Ordering::Relaxed)
            .is_multiple_of(QUICK_CHECK_EVERY)
        {
            let result: Result<String, _> = sqlx::query_scalar("PRAGMA quick_check(1)")
                .fetch_one(&self.readers)
                .await;
            let problem = match result {
                Ok(ok) if ok == "ok" => None,
                Ok(problem) => Some((
                    format!(
                        "{} (the integrity check says {problem:?}): writes are refused; restore it from a backup",
                        super::CORRUPT_FILE
                    ),
                    true,
                )),
                Err(e) => Some((
                    format!(
                        "database file cannot be checked ({e}): writes are refused until a check succeeds"
                    ),
                    false,
                )),
            };
            let mut corrupt = self
                .files
                .corrupt
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if !corrupt.as_ref().is_some_and(|(_, damage)| *damage) {
                *corrupt = problem;
            }
        }
        self.files.verify()
    }

    async fn list_audit(&self, filter: &AuditFilter) -> Result<Vec<AuditEvent>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, team_id, revision, actor, kind, at, detail FROM audit
             WHERE id > ?1 AND (?2 IS NULL OR team_id = ?2) AND (?3 IS NULL OR kind = ?3)
               AND (?4 IS NULL OR actor = ?4) AND (?6 IS NULL OR at >= ?6)
             ORDER BY id LIMIT ?5",
        )
        .bind(to_i64(filter.after_id))
        .bind(filter.team_id.as_deref())
        .bind(filter.kind.as_deref())
        .bind(filter.actor.as_deref())
        .bind(i64::from(filter.limit))
        .bind(filter.since_ms)
        .fetch_all(&self.readers)
        .await?;
        rows.into_iter()
            .map(|row| {
                Ok(AuditEvent {
                    id: to_u64(row.try_get("id")?),
                    team_id: row.try_get("team_id")?,
                    revision: to_u64(row.try_get("revision")?),
                    actor: row.try_get("actor")?,
                    kind: row.try_get("kind")?,
                    at_ms: row.try_get("at")?,
                    detail_json: row.try_get("detail")?,
                })
            })
            .collect()
    }
}
