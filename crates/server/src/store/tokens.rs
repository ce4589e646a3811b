//! Tokens issued through the API: kept as their SHA-256 only, created and revoked
//! with their audit record in one transaction, and announced to the other replicas
//! (an empty notice payload, which no team id can be) so they take effect there at once.

use super::backend::Backend;
use super::sql::SqlStore;
use super::{StoreError, now_ms, to_i64};
use serde_json::json;
use sqlx::{
    ColumnIndex, Connection as _, Database, Decode, Encode, Executor, IntoArguments, Row, Type,
};

/// The payload announcing a change of the issued tokens: never a team id (ids are
/// never empty), so older replicas ignore it as a team they do not hold.
pub const TOKENS_NOTICE: &str = "";

/// Audit kinds of the issued tokens (team-scoped: the token's team).
pub const AUDIT_TOKEN_CREATED: &str = "token_created";
pub const AUDIT_TOKEN_REVOKED: &str = "token_revoked";

/// A token to store: its digest, never the secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewToken {
    pub token_id: String,
    /// Hex SHA-256 of the secret.
    pub token_hash: String,
    pub team_id: String,
    pub user_id: String,
    /// `member`, `admin` or `service`.
    pub role: String,
    pub expires_at_ms: i64,
    /// The groups its holder is in, checked and sorted (`normalise_groups`).
    pub groups: Vec<String>,
}

/// An issued token as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuedToken {
    pub token_id: String,
    pub token_hash: String,
    pub team_id: String,
    pub user_id: String,
    pub role: String,
    pub created_at_ms: i64,
    pub created_by: String,
    pub expires_at_ms: i64,
    pub revoked_at_ms: Option<i64>,
    pub revoked_by: Option<String>,
    /// The groups its holder is in.
    pub groups: Vec<String>,
}

const COLUMNS: &str = "token_id, token_hash, team_id, user_id, role, created_at, created_by,
     expires_at, revoked_at, revoked_by, group_names";

/// Group names as the column keeps them: joined by `,`, which no name holds.
fn join_groups(groups: &[String]) -> String {
    groups.join(",")
}

fn split_groups(column: &str) -> Vec<String> {
    column
        .split(',')
        .filter(|g| !g.is_empty())
        .map(str::to_owned)
        .collect()
}

fn issued<R: Row>(row: &R) -> Result<IssuedToken, StoreError>
where
    for<'r> &'r str: ColumnIndex<R>,
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> Option<i64>: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> Option<String>: Decode<'r, R::Database> + Type<R::Database>,
{
    Ok(IssuedToken {
        token_id: row.try_get("token_id")?,
        token_hash: row.try_get("token_hash")?,
        team_id: row.try_get("team_id")?,
        user_id: row.try_get("user_id")?,
        role: row.try_get("role")?,
        created_at_ms: row.try_get("created_at")?,
        created_by: row.try_get("created_by")?,
        expires_at_ms: row.try_get("expires_at")?,
        revoked_at_ms: row.try_get("revoked_at")?,
        revoked_by: row.try_get("revoked_by")?,
        groups: split_groups(&row.try_get::<String, _>("group_names")?),
    })
}

const INSERT_AUDIT: &str = "INSERT INTO audit (team_id, revision, actor, kind, at, detail)
     VALUES ($1, 0, $2, $3, $4, $5)";

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
    pub(super) async fn insert_token(
        &self,
        token: &NewToken,
        actor: &str,
    ) -> Result<IssuedToken, StoreError> {
        let mut conn = self.begin_write().await?;
        let now = now_ms();
        let result = async {
            let mut tx = conn.begin_with(B::BEGIN_WRITE).await?;
            sqlx::query(
                "INSERT INTO issued_tokens (token_id, token_hash, team_id, user_id, role,
                   created_at, created_by, expires_at, group_names)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            )
            .bind(&token.token_id)
            .bind(&token.token_hash)
            .bind(&token.team_id)
            .bind(&token.user_id)
            .bind(&token.role)
            .bind(now)
            .bind(actor)
            .bind(token.expires_at_ms)
            .bind(join_groups(&token.groups))
            .execute(&mut *tx)
            .await?;
            // the id, never the secret or its digest
            let mut detail = json!({
                "token_id": token.token_id,
                "user_id": token.user_id,
                "role": token.role,
                "expires_at_ms": token.expires_at_ms,
            });
            if !token.groups.is_empty() {
                detail["groups"] = json!(token.groups);
            }
            sqlx::query(INSERT_AUDIT)
                .bind(&token.team_id)
                .bind(actor)
                .bind(AUDIT_TOKEN_CREATED)
                .bind(now)
                .bind(detail.to_string())
                .execute(&mut *tx)
                .await?;
            self.backend.announce(&mut *tx, TOKENS_NOTICE).await?;
            super::sql::commit(tx).await?;
            Ok(())
        }
        .await;
        self.end_write(conn, result)?;
        Ok(IssuedToken {
            token_id: token.token_id.clone(),
            token_hash: token.token_hash.clone(),
            team_id: token.team_id.clone(),
            user_id: token.user_id.clone(),
            role: token.role.clone(),
            created_at_ms: now,
            created_by: actor.to_owned(),
            expires_at_ms: token.expires_at_ms,
            revoked_at_ms: None,
            revoked_by: None,
            groups: token.groups.clone(),
        })
    }

    /// Marks the token revoked (once: a second revocation changes nothing) and returns
    /// it, or `None` when no token has that id.
    pub(super) async fn mark_token_revoked(
        &self,
        token_id: &str,
        actor: &str,
    ) -> Result<Option<IssuedToken>, StoreError> {
        let mut conn = self.begin_write().await?;
        let now = now_ms();
        let result = async {
            let mut tx = conn.begin_with(B::BEGIN_WRITE).await?;
            let revoked_now: Option<String> = sqlx::query_scalar(
                "UPDATE issued_tokens SET revoked_at = $1, revoked_by = $2
                 WHERE token_id = $3 AND revoked_at IS NULL RETURNING token_id",
            )
            .bind(now)
            .bind(actor)
            .bind(token_id)
            .fetch_optional(&mut *tx)
            .await?;
            let row = sqlx::query(&format!(
                "SELECT {COLUMNS} FROM issued_tokens WHERE token_id = $1"
            ))
            .bind(token_id)
            .fetch_optional(&mut *tx)
            .await?;
            let token = row.as_ref().map(issued).transpose()?;
            if let Some(token) = &token
                && revoked_now.is_some()
            {
                let detail = json!({ "token_id": token.token_id, "user_id": token.user_id, "role": token.role });
                sqlx::query(INSERT_AUDIT)
                    .bind(&token.team_id)
                    .bind(actor)
                    .bind(AUDIT_TOKEN_REVOKED)
                    .bind(now)
                    .bind(detail.to_string())
                    .execute(&mut *tx)
                    .await?;
                self.backend.announce(&mut *tx, TOKENS_NOTICE).await?;
            }
            super::sql::commit(tx).await?;
            Ok(token)
        }
        .await;
        self.end_write(conn, result)
    }

    /// A team's tokens (every team's with `None`), newest first, at most `limit`;
    /// with `active_at`, only those neither revoked nor expired then.
    pub(super) async fn select_tokens(
        &self,
        team_id: Option<&str>,
        active_at: Option<i64>,
        limit: u32,
    ) -> Result<Vec<IssuedToken>, StoreError> {
        let mut conn = self.backend.read().await?;
        // CAST gives PostgreSQL the parameters' types; SQLite reads it as a no-op
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM issued_tokens
             WHERE (CAST($1 AS TEXT) IS NULL OR team_id = $1)
               AND (CAST($3 AS BIGINT) IS NULL OR (revoked_at IS NULL AND expires_at > $3))
             ORDER BY created_at DESC, token_id LIMIT $2"
        ))
        .bind(team_id)
        .bind(i64::from(limit))
        .bind(active_at)
        .fetch_all(&mut *conn)
        .await?;
        rows.iter().map(issued).collect()
    }

    /// The token with this id, revoked or not.
    pub(super) async fn select_token(
        &self,
        token_id: &str,
    ) -> Result<Option<IssuedToken>, StoreError> {
        let mut conn = self.backend.read().await?;
        let row = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM issued_tokens WHERE token_id = $1"
        ))
        .bind(token_id)
        .fetch_optional(&mut *conn)
        .await?;
        row.as_ref().map(issued).transpose()
    }

    /// How many of the team's tokens are neither revoked nor expired at `now_ms`.
    pub(super) async fn count_active_tokens(
        &self,
        team_id: &str,
        now_ms: i64,
    ) -> Result<u64, StoreError> {
        let mut conn = self.backend.read().await?;
        let n: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM issued_tokens
             WHERE team_id = $1 AND revoked_at IS NULL AND expires_at > $2",
        )
        .bind(team_id)
        .bind(now_ms)
        .fetch_one(&mut *conn)
        .await?;
        Ok(super::to_u64(n))
    }

    /// Every token neither revoked nor expired at `now_ms`.
    pub(super) async fn select_active_tokens(
        &self,
        now_ms: i64,
    ) -> Result<Vec<IssuedToken>, StoreError> {
        let mut conn = self.backend.read().await?;
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM issued_tokens WHERE revoked_at IS NULL AND expires_at > $1"
        ))
        .bind(now_ms)
        .fetch_all(&mut *conn)
        .await?;
        rows.iter().map(issued).collect()
    }
}

/// `to_i64` for the callers computing an expiry.
pub fn expiry_ms(now_ms: i64, ttl: std::time::Duration) -> i64 {
    now_ms.saturating_add(to_i64(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX)))
}
