//! Sign-ins through the identity provider: a row per team and user, written again
//! (not added to) when that user comes with a new token, so the table grows with
//! the people who sign in, never with their calls.

use super::StoreError;
use super::backend::Backend;
use super::sql::SqlStore;
use sqlx::{
    ColumnIndex, Connection as _, Database, Decode, Encode, Executor, IntoArguments, Row, Type,
};

/// A user's last sign-in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignIn {
    pub team_id: String,
    pub user_id: String,
    /// The principal it authenticated as (`jwt:TEAM/USER@ISSUER`).
    pub principal: String,
    /// The identity provider's issuer.
    pub issuer: String,
    /// The groups its token carried, as the server read them.
    pub groups: Vec<String>,
    /// Unix milliseconds of the first sign-in recorded and of the last.
    pub first_at_ms: i64,
    pub last_at_ms: i64,
}

const COLUMNS: &str = "team_id, user_id, principal, issuer, group_names, first_at, last_at";

fn sign_in<R: Row>(row: &R) -> Result<SignIn, StoreError>
where
    for<'r> &'r str: ColumnIndex<R>,
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
{
    let groups: String = row.try_get("group_names")?;
    Ok(SignIn {
        team_id: row.try_get("team_id")?,
        user_id: row.try_get("user_id")?,
        principal: row.try_get("principal")?,
        issuer: row.try_get("issuer")?,
        groups: groups
            .split(',')
            .filter(|g| !g.is_empty())
            .map(str::to_owned)
            .collect(),
        first_at_ms: row.try_get("first_at")?,
        last_at_ms: row.try_get("last_at")?,
    })
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
    Option<i64>: for<'r> Encode<'r, B::Db> + for<'r> Decode<'r, B::Db> + Type<B::Db>,
    Option<String>: for<'r> Decode<'r, B::Db> + Type<B::Db>,
    usize: ColumnIndex<<B::Db as Database>::Row>,
{
    /// Records `s` as the user's last sign-in; the first one's time is kept.
    pub(super) async fn upsert_sign_in(&self, s: &SignIn) -> Result<(), StoreError> {
        let mut conn = self.begin_write().await?;
        let result = async {
            let mut tx = conn.begin_with(B::BEGIN_WRITE).await?;
            sqlx::query(
                "INSERT INTO sign_ins (team_id, user_id, principal, issuer, group_names,
                   first_at, last_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)
                 ON CONFLICT (team_id, user_id) DO UPDATE SET
                   principal = excluded.principal, issuer = excluded.issuer,
                   group_names = excluded.group_names, last_at = excluded.last_at",
            )
            .bind(&s.team_id)
            .bind(&s.user_id)
            .bind(&s.principal)
            .bind(&s.issuer)
            .bind(s.groups.join(","))
            .bind(s.first_at_ms)
            .bind(s.last_at_ms)
            .execute(&mut *tx)
            .await?;
            super::sql::commit(tx).await?;
            Ok(())
        }
        .await;
        self.end_write(conn, result)
    }

    /// A team's sign-ins (every team's with `None`), the latest first, at most `limit`.
    pub(super) async fn select_sign_ins(
        &self,
        team_id: Option<&str>,
        limit: u32,
    ) -> Result<Vec<SignIn>, StoreError> {
        let mut conn = self.backend.read().await?;
        // CAST gives PostgreSQL the parameter's type; SQLite reads it as a no-op
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM sign_ins
             WHERE (CAST($1 AS TEXT) IS NULL OR team_id = $1)
             ORDER BY last_at DESC, team_id, user_id LIMIT $2"
        ))
        .bind(team_id)
        .bind(i64::from(limit))
        .fetch_all(&mut *conn)
        .await?;
        rows.iter().map(sign_in).collect()
    }
}
