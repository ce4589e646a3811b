//! The embedded backend: one SQLite file in WAL mode, created on first start.

use super::StoreError;
use super::backend::Backend;
use super::errors::CORRUPT_FILE;
use super::schema::pending_migrations;
use super::sql::SqlStore;
use async_trait::async_trait;
use sqlx::pool::PoolConnection;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{ConnectOptions as _, Sqlite, SqlitePool, Transaction};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The embedded store.
pub type SqliteStore = SqlStore<SqliteBackend>;

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

/// One writer connection (SQLite allows one writer at a time anyway) and a small pool
/// of readers, which WAL lets run beside the writer.
#[derive(Debug, Clone)]
pub struct SqliteBackend {
    writer: SqlitePool,
    readers: SqlitePool,
    files: Arc<Files>,
    /// The disk headroom kept beside the database, when configured.
    reserve: Option<Arc<super::DiskReserve>>,
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

    /// Records what the last look at the content found. Damage stays until a restart:
    /// only other damage replaces it, never a check that passed or could not run.
    fn record(&self, problem: Option<(String, bool)>) {
        let mut corrupt = self
            .corrupt
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let damage = |p: &Option<(String, bool)>| p.as_ref().is_some_and(|(_, d)| *d);
        if damage(&problem) || !damage(&corrupt) {
            *corrupt = problem;
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
            backend: SqliteBackend {
                writer,
                readers,
                files: Arc::new(Files::open(path, keeper)),
                reserve: None,
            },
            history_limit: history_limit.max(1),
        })
    }

    /// Keeps `bytes` of disk headroom in `dir` (see [`super::DiskReserve`]); 0 keeps none.
    #[must_use]
    pub fn with_reserve(mut self, dir: &Path, bytes: u64) -> Self {
        if bytes > 0 {
            self.backend.reserve = Some(Arc::new(super::DiskReserve::open(dir, bytes)));
        }
        self
    }
}

/// `PRAGMA user_version` is the number of migrations applied.
async fn migrate(pool: &SqlitePool) -> Result<(), StoreError> {
    let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
    let version: i64 = sqlx::query_scalar("PRAGMA user_version")
        .fetch_one(&mut *tx)
        .await?;
    let version = usize::try_from(version).unwrap_or(0);
    for (number, sql) in pending_migrations(version, &super::schema::SQLITE)? {
        sqlx::raw_sql(&sql).execute(&mut *tx).await?;
        sqlx::raw_sql(&format!("PRAGMA user_version = {number}"))
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    Ok(())
}

#[async_trait]
impl Backend for SqliteBackend {
    type Db = Sqlite;

    // IMMEDIATE takes the write lock now, not at the first write: no upgrade deadlock
    const BEGIN_WRITE: &'static str = "BEGIN IMMEDIATE";

    async fn write_connection(&self) -> Result<PoolConnection<Sqlite>, StoreError> {
        Ok(self.writer.acquire().await?)
    }

    fn writable(&self) -> Result<(), StoreError> {
        self.files.verify()
    }

    // a write that found the file damaged refuses every later write (and turns health
    // NOT_SERVING) at once, not only at the next integrity check
    fn write_failed(&self, error: &StoreError) {
        if let Some(reserve) = &self.reserve {
            reserve.write_failed(error);
        }
        if let StoreError::Unavailable(reason) = error
            && reason.starts_with(CORRUPT_FILE)
        {
            self.files.record(Some((reason.clone(), true)));
        }
    }

    fn disk_full(&self) -> bool {
        self.reserve.as_ref().is_some_and(|r| r.is_full())
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
                        "{CORRUPT_FILE} (the integrity check says {problem:?}): writes are refused; restore it from a backup"
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
            self.files.record(problem);
        }
        // a read round trip on every check: a file that cannot be read is no store
        let _: i64 = sqlx::query_scalar("SELECT count(*) FROM sqlite_master")
            .fetch_one(&self.readers)
            .await?;
        self.files.verify()
    }

    async fn read(&self) -> Result<PoolConnection<Sqlite>, StoreError> {
        Ok(self.readers.acquire().await?)
    }

    async fn begin_snapshot(&self) -> Result<Transaction<'static, Sqlite>, StoreError> {
        // a WAL read transaction sees one snapshot from its first read on
        Ok(self.readers.begin().await?)
    }
}
