//! The SQL store's settings documents: one written with its change and audit record
//! under the team's next revision, one read with its version.

use super::{INSERT_AUDIT, SqlStore, commit};
use crate::store::backend::Backend;
use crate::store::rows::versioned;
use crate::store::{
    AUDIT_ADMIN_UPDATED, AUDIT_USER_UPDATED, ChangeDoc, StoreError, Versioned, now_ms, to_i64,
    to_json, to_u64,
};
use serde::de::DeserializeOwned;
use sqlx::{ColumnIndex, Connection as _, Database, Decode, Encode, Executor, IntoArguments, Type};

/// Where a document lives.
#[derive(Clone, Copy)]
pub(super) enum DocKey<'a> {
    Admin,
    User(&'a str),
}

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
        commit(tx).await?;
        Ok((to_u64(revision), now))
    }

    pub(super) async fn read_doc<T: DeserializeOwned + Default>(
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

    pub(super) async fn put<T: serde::Serialize + Clone>(
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
