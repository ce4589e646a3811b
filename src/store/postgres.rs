//! The PostgreSQL store: the shared truth of several replicas. Revisions are allocated
//! inside the writing transaction; `NOTIFY` wakes the other replicas, which then read
//! the change table (so a missed notice loses nothing).

use super::{
    AUDIT_ADMIN_UPDATED, AUDIT_USER_UPDATED, AuditEvent, AuditFilter, Change, ChangeDoc, History,
    NewAuditEvent, Notice, NoticeStream, Store, StoreError, Versioned, from_json, now_ms, to_i64,
    to_json, to_u64,
};
use crate::policy::{AdminControls, UserSettings};
use async_trait::async_trait;
use serde::de::DeserializeOwned;
use sqlx::Row;
use sqlx::postgres::{PgListener, PgPool, PgPoolOptions, PgRow};
use std::time::Duration;

/// The channel replicas announce commits on; the payload is the team id.
pub const NOTIFY_CHANNEL: &str = "toolgate_changes";

/// Versioned schema; entry `i` is migration `i + 1`.
const MIGRATIONS: &[&str] = &[
    r"
CREATE TABLE teams (
    team_id TEXT PRIMARY KEY,
    revision BIGINT NOT NULL,
    history_floor BIGINT NOT NULL DEFAULT 0
);
CREATE TABLE admin_settings (
    team_id TEXT PRIMARY KEY,
    doc TEXT NOT NULL,
    revision BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    updated_by TEXT NOT NULL
);
CREATE TABLE user_settings (
    team_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    doc TEXT NOT NULL,
    revision BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    updated_by TEXT NOT NULL,
    PRIMARY KEY (team_id, user_id)
);
CREATE TABLE changes (
    team_id TEXT NOT NULL,
    revision BIGINT NOT NULL,
    doc TEXT NOT NULL,
    at BIGINT NOT NULL,
    actor TEXT NOT NULL,
    PRIMARY KEY (team_id, revision)
);
CREATE TABLE audit (
    id BIGSERIAL PRIMARY KEY,
    team_id TEXT NOT NULL,
    revision BIGINT NOT NULL,
    actor TEXT NOT NULL,
    kind TEXT NOT NULL,
    at BIGINT NOT NULL,
    detail TEXT NOT NULL
);
CREATE INDEX audit_team_id ON audit (team_id, id);
",
    r"
CREATE TABLE session_quotas (
    team_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    operation TEXT NOT NULL,
    used BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (team_id, session_id, operation)
);
",
];

/// An arbitrary constant: the advisory lock that serialises migrations across replicas.
const MIGRATION_LOCK: i64 = 0x746f_6f6c_6761_7465;

#[derive(Debug, Clone)]
pub struct PostgresStore {
    pool: PgPool,
    history_limit: u64,
}

fn unavailable_or(e: sqlx::Error) -> StoreError {
    match e {
        sqlx::Error::Io(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::Tls(_) => StoreError::Unavailable(format!("postgresql: {e}")),
        other => StoreError::Backend(other),
    }
}

impl PostgresStore {
    /// Connects and applies pending migrations. Writes fail within `acquire_timeout`
    /// when the database is unreachable, instead of hanging.
    pub async fn connect(url: &str, history_limit: u64) -> Result<Self, StoreError> {
        let pool = PgPoolOptions::new()
            .max_connections(8)
            .acquire_timeout(Duration::from_secs(3))
            .connect(url)
            .await
            .map_err(unavailable_or)?;
        migrate(&pool).await?;
        Ok(Self {
            pool,
            history_limit: history_limit.max(1),
        })
    }

    async fn write_doc(
        &self,
        team_id: &str,
        user_id: Option<&str>,
        doc_json: String,
        change: ChangeDoc,
        expected: Option<u64>,
        actor: &str,
    ) -> Result<(u64, i64), StoreError> {
        let now = now_ms();
        let mut tx = self.pool.begin().await.map_err(unavailable_or)?;
        // the team row lock serialises every writer of the team, on every replica;
        // reads after it see the previous writer's commit
        let revision: i64 = sqlx::query_scalar(
            "INSERT INTO teams (team_id, revision) VALUES ($1, 1)
             ON CONFLICT (team_id) DO UPDATE SET revision = teams.revision + 1
             RETURNING revision",
        )
        .bind(team_id)
        .fetch_one(&mut *tx)
        .await
        .map_err(unavailable_or)?;
        let current: Option<i64> = match user_id {
            None => sqlx::query_scalar("SELECT revision FROM admin_settings WHERE team_id = $1")
                .bind(team_id)
                .fetch_optional(&mut *tx)
                .await
                .map_err(unavailable_or)?,
            Some(user_id) => sqlx::query_scalar(
                "SELECT revision FROM user_settings WHERE team_id = $1 AND user_id = $2",
            )
            .bind(team_id)
            .bind(user_id)
            .fetch_optional(&mut *tx)
            .await
            .map_err(unavailable_or)?,
        };
        let actual = current.map_or(0, to_u64);
        if let Some(expected) = expected
            && expected != actual
        {
            // dropping the transaction rolls back the revision allocated above
            return Err(StoreError::Conflict { expected, actual });
        }
        let audit_kind = match user_id {
            None => {
                sqlx::query(
                    "INSERT INTO admin_settings (team_id, doc, revision, updated_at, updated_by)
                     VALUES ($1, $2, $3, $4, $5)
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
                .await
                .map_err(unavailable_or)?;
                AUDIT_ADMIN_UPDATED
            }
            Some(user_id) => {
                sqlx::query(
                    "INSERT INTO user_settings (team_id, user_id, doc, revision, updated_at, updated_by)
                     VALUES ($1, $2, $3, $4, $5, $6)
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
                .await
                .map_err(unavailable_or)?;
                AUDIT_USER_UPDATED
            }
        };
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
        .await
        .map_err(unavailable_or)?;
        sqlx::query("INSERT INTO audit (team_id, revision, actor, kind, at, detail) VALUES ($1, $2, $3, $4, $5, $6)")
            .bind(team_id)
            .bind(revision)
            .bind(actor)
            .bind(audit_kind)
            .bind(now)
            .bind(&change_json)
            .execute(&mut *tx)
            .await
            .map_err(unavailable_or)?;
        let floor = revision - to_i64(self.history_limit);
        if floor > 0 {
            sqlx::query("DELETE FROM changes WHERE team_id = $1 AND revision <= $2")
                .bind(team_id)
                .bind(floor)
                .execute(&mut *tx)
                .await
                .map_err(unavailable_or)?;
            sqlx::query("UPDATE teams SET history_floor = $1 WHERE team_id = $2")
                .bind(floor)
                .bind(team_id)
                .execute(&mut *tx)
                .await
                .map_err(unavailable_or)?;
        }
        // delivered to listeners only if and when the transaction commits
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(NOTIFY_CHANNEL)
            .bind(team_id)
            .execute(&mut *tx)
            .await
            .map_err(unavailable_or)?;
        tx.commit().await.map_err(unavailable_or)?;
        Ok((to_u64(revision), now))
    }
}

async fn listen(pool: &PgPool) -> Result<PgListener, StoreError> {
    let mut listener = PgListener::connect_with(pool)
        .await
        .map_err(unavailable_or)?;
    listener
        .listen(NOTIFY_CHANNEL)
        .await
        .map_err(unavailable_or)?;
    Ok(listener)
}

async fn migrate(pool: &PgPool) -> Result<(), StoreError> {
    let mut tx = pool.begin().await.map_err(unavailable_or)?;
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
    if version > MIGRATIONS.len() {
        return Err(StoreError::Corrupt(format!(
            "database schema version {version} is newer than this toolgate knows ({}); upgrade toolgate",
            MIGRATIONS.len()
        )));
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(version) {
        sqlx::raw_sql(sql).execute(&mut *tx).await?;
        sqlx::query("INSERT INTO toolgate_schema (version) VALUES ($1)")
            .bind(i32::try_from(i + 1).unwrap_or(i32::MAX))
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    Ok(())
}

fn versioned<T: DeserializeOwned + Default>(
    what: &str,
    row: Option<PgRow>,
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
impl Store for PostgresStore {
    async fn team_revision(&self, team_id: &str) -> Result<u64, StoreError> {
        let rev: Option<i64> = sqlx::query_scalar("SELECT revision FROM teams WHERE team_id = $1")
            .bind(team_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(unavailable_or)?;
        Ok(rev.map_or(0, to_u64))
    }

    async fn get_admin(&self, team_id: &str) -> Result<Versioned<AdminControls>, StoreError> {
        let row = sqlx::query(
            "SELECT doc, revision, updated_at, updated_by FROM admin_settings WHERE team_id = $1",
        )
        .bind(team_id)
        .fetch_optional(&self.pool)
        .await
        .map_err(unavailable_or)?;
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
        let (revision, at) = self
            .write_doc(team_id, None, to_json(controls)?, change, expected, actor)
            .await?;
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
            "SELECT doc, revision, updated_at, updated_by FROM user_settings WHERE team_id = $1 AND user_id = $2",
        )
        .bind(team_id)
        .bind(user_id)
        .fetch_optional(&self.pool)
        .await
        .map_err(unavailable_or)?;
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
        let (revision, at) = self
            .write_doc(
                team_id,
                Some(user_id),
                to_json(settings)?,
                change,
                expected,
                actor,
            )
            .await?;
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
        // repeatable read: the floor and the rows come from one snapshot
        let mut tx = self.pool.begin().await.map_err(unavailable_or)?;
        sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            .execute(&mut *tx)
            .await
            .map_err(unavailable_or)?;
        let floor: Option<i64> =
            sqlx::query_scalar("SELECT history_floor FROM teams WHERE team_id = $1")
                .bind(team_id)
                .fetch_optional(&mut *tx)
                .await
                .map_err(unavailable_or)?;
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
        .await
        .map_err(unavailable_or)?;
        tx.commit().await.map_err(unavailable_or)?;
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
        let now = now_ms();
        let mut tx = self.pool.begin().await.map_err(unavailable_or)?;
        for e in events {
            sqlx::query(
                "INSERT INTO audit (team_id, revision, actor, kind, at, detail) VALUES ($1, $2, $3, $4, $5, $6)",
            )
            .bind(&e.team_id)
            .bind(to_i64(e.revision))
            .bind(&e.actor)
            .bind(&e.kind)
            .bind(now)
            .bind(e.detail.to_string())
            .execute(&mut *tx)
            .await
            .map_err(unavailable_or)?;
        }
        tx.commit().await.map_err(unavailable_or)?;
        Ok(())
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
        // one statement: replicas counting the same session cannot both pass the last call
        let used: Option<i64> = sqlx::query_scalar(
            "INSERT INTO session_quotas (team_id, session_id, operation, used, updated_at)
             VALUES ($1, $2, $3, 1, $4)
             ON CONFLICT (team_id, session_id, operation) DO UPDATE
             SET used = session_quotas.used + 1, updated_at = EXCLUDED.updated_at
             WHERE session_quotas.used < $5
             RETURNING used",
        )
        .bind(team_id)
        .bind(session_id)
        .bind(operation)
        .bind(now_ms())
        .bind(to_i64(max))
        .fetch_optional(&self.pool)
        .await
        .map_err(unavailable_or)?;
        Ok(used.is_some())
    }

    async fn list_audit(&self, filter: &AuditFilter) -> Result<Vec<AuditEvent>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, team_id, revision, actor, kind, at, detail FROM audit
             WHERE id > $1 AND ($2::text IS NULL OR team_id = $2) AND ($3::text IS NULL OR kind = $3)
               AND ($4::text IS NULL OR actor = $4) AND ($6::bigint IS NULL OR at >= $6)
             ORDER BY id LIMIT $5",
        )
        .bind(to_i64(filter.after_id))
        .bind(filter.team_id.as_deref())
        .bind(filter.kind.as_deref())
        .bind(filter.actor.as_deref())
        .bind(i64::from(filter.limit))
        .bind(filter.since_ms)
        .fetch_all(&self.pool)
        .await
        .map_err(unavailable_or)?;
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

    async fn notices(&self) -> Result<Option<NoticeStream>, StoreError> {
        let pool = self.pool.clone();
        let mut listener = Some(listen(&pool).await?);
        let stream = async_stream::stream! {
            loop {
                let Some(current) = listener.as_mut() else {
                    match listen(&pool).await {
                        Ok(l) => {
                            listener = Some(l);
                            // whatever was committed while we were deaf is read from the table
                            yield Notice::Reconnected;
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, "postgresql listener: reconnecting");
                            tokio::time::sleep(Duration::from_millis(500)).await;
                        }
                    }
                    continue;
                };
                match current.try_recv().await {
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
