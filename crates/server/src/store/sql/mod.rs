//! The SQL store both backends share: one set of statements (written with `$N`
//! placeholders, which SQLite reads too) and one row mapping, over the one schema
//! (`schema.rs`) with one classification of database errors (`errors.rs`). A
//! [`Backend`] supplies only what differs: connections, transactions, migrations and
//! cross-replica notices.

mod documents;

use super::backend::Backend;
use super::rows::{audit_event, change};
use super::{
    Answer, Answered, ApprovalRecord, AuditEvent, AuditFilter, ChangeDoc, DecisionQuery,
    EncodedDecisions, History, IssuedToken, NewApproval, NewAuditEvent, NewToken, NoticeStream,
    Pruned, QuotaKey, Retention, Store, StoreError, StoredDecision, Versioned, now_ms, to_i64,
    to_u64,
};
use crate::policy::{AdminControls, UserSettings};
use async_trait::async_trait;
use documents::DocKey;
use sqlx::pool::PoolConnection;
use sqlx::{ColumnIndex, Database, Decode, Encode, Executor, IntoArguments, Type};

/// Commits a durable write. A commit whose answer was lost on the way back (the
/// connection failed after `COMMIT` was sent) may have been applied: it is
/// [`StoreError::Indeterminate`], never a plain unavailable that invites a blind retry.
pub(super) async fn commit<DB: Database>(tx: sqlx::Transaction<'_, DB>) -> Result<(), StoreError> {
    tx.commit().await.map_err(super::errors::commit_error)
}

/// A [`Store`] over a SQL [`Backend`].
#[derive(Debug, Clone)]
pub struct SqlStore<B> {
    pub(super) backend: B,
    /// How many changes per team the change history keeps.
    pub(super) history_limit: u64,
}

/// One audit record; the decision log's and the approvals' writes append them too.
pub(super) const INSERT_AUDIT: &str =
    "INSERT INTO audit (team_id, revision, actor, kind, at, detail)
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
    pub(super) async fn begin_write(&self) -> Result<PoolConnection<B::Db>, StoreError> {
        self.backend.writable()?;
        self.backend.write_connection().await
    }

    /// An admin write (settings, the kill switch, a revocation), tried once more when it
    /// failed for lack of space and that failure released the disk reserve: the write
    /// the reserve is kept for commits at the first ask, not only once something else
    /// met the full disk.
    pub(super) async fn on_the_reserve<T, F, Fut>(&self, write: F) -> Result<T, StoreError>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Result<T, StoreError>>,
    {
        let was_full = self.backend.disk_full();
        match write().await {
            Err(StoreError::Unavailable(reason))
                if !was_full
                    && reason.starts_with(super::errors::DISK_FULL)
                    && self.backend.disk_full() =>
            {
                write().await
            }
            other => other,
        }
    }

    /// After a write transaction: a connection whose transaction failed is closed, not
    /// reused (after a failed commit it may still be inside it); a write that
    /// committed is acknowledged only if the backend still trusts it to last.
    pub(super) fn end_write<T>(
        &self,
        mut conn: PoolConnection<B::Db>,
        result: Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        if let Err(e) = &result
            && !matches!(e, StoreError::Conflict { .. })
        {
            conn.close_on_drop();
            self.backend.write_failed(e);
        }
        let value = result?;
        self.backend.writable()?;
        Ok(value)
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
    Option<i64>: for<'r> Encode<'r, B::Db> + for<'r> Decode<'r, B::Db> + Type<B::Db>,
    Option<String>: for<'r> Decode<'r, B::Db> + Type<B::Db>,
    for<'r> Vec<u8>: Encode<'r, B::Db> + Type<B::Db>,
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

    async fn team_revisions(&self) -> Result<Vec<(String, u64)>, StoreError> {
        let mut conn = self.backend.read().await?;
        let rows = sqlx::query("SELECT team_id, revision FROM teams")
            .fetch_all(&mut *conn)
            .await?;
        rows.iter()
            .map(|row| {
                Ok((
                    sqlx::Row::try_get(row, "team_id")?,
                    to_u64(sqlx::Row::try_get(row, "revision")?),
                ))
            })
            .collect()
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
        self.on_the_reserve(|| {
            self.put(
                team_id,
                DocKey::Admin,
                controls,
                change.clone(),
                expected,
                actor,
            )
        })
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
        self.on_the_reserve(|| {
            let key = DocKey::User(user_id);
            self.put(team_id, key, settings, change.clone(), expected, actor)
        })
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
        // the audit half of the decision log's write: one transaction, no decisions
        let events: Vec<&NewAuditEvent> = events.iter().collect();
        self.insert_records(&events, &EncodedDecisions::default())
            .await
            .map(drop)
    }

    async fn consume_quota(&self, key: &QuotaKey<'_>, max: u64) -> Result<bool, StoreError> {
        if max == 0 {
            return Ok(false);
        }
        let mut conn = self.begin_write().await?;
        let result = async {
            // one statement: the count and the test cannot be split by another writer or
            // replica, so two calls cannot both pass the last unit of a quota
            let row = sqlx::query(
                "INSERT INTO session_quotas (team_id, user_id, session_id, operation, used, updated_at)
                 VALUES ($1, $2, $3, $4, 1, $5)
                 ON CONFLICT (team_id, user_id, session_id, operation) DO UPDATE
                 SET used = session_quotas.used + 1, updated_at = excluded.updated_at
                 WHERE session_quotas.used < $6
                 RETURNING used",
            )
            .bind(key.team_id)
            .bind(key.user_id)
            .bind(key.session_id)
            .bind(key.operation)
            .bind(now_ms())
            .bind(to_i64(max))
            .fetch_optional(&mut *conn)
            .await?;
            Ok(row.is_some())
        }
        .await;
        self.end_write(conn, result)
    }

    async fn quota_used(&self, key: &QuotaKey<'_>) -> Result<u64, StoreError> {
        let mut conn = self.backend.read().await?;
        let used: Option<i64> = sqlx::query_scalar(
            "SELECT used FROM session_quotas
             WHERE team_id = $1 AND user_id = $2 AND session_id = $3 AND operation = $4",
        )
        .bind(key.team_id)
        .bind(key.user_id)
        .bind(key.session_id)
        .bind(key.operation)
        .fetch_optional(&mut *conn)
        .await?;
        Ok(used.map_or(0, to_u64))
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

    async fn append_records(
        &self,
        audit: &[&NewAuditEvent],
        decisions: &EncodedDecisions,
    ) -> Result<Vec<u64>, StoreError> {
        if audit.is_empty() && decisions.is_empty() {
            return Ok(Vec::new());
        }
        self.insert_records(audit, decisions).await
    }

    async fn list_decisions(
        &self,
        query: &DecisionQuery,
    ) -> Result<Vec<StoredDecision>, StoreError> {
        self.select_decisions(query).await
    }

    async fn decisions_between(
        &self,
        first: u64,
        last: u64,
        limit: u32,
    ) -> Result<Vec<StoredDecision>, StoreError> {
        self.select_decisions_between(first, last, limit).await
    }

    async fn prune_decisions(&self, retention: &Retention) -> Result<Pruned, StoreError> {
        self.delete_old_decisions(retention).await
    }

    fn disk_full(&self) -> bool {
        self.backend.disk_full()
    }

    async fn newest_decision_at(&self) -> Result<Option<i64>, StoreError> {
        self.select_newest_decision_at().await
    }

    async fn create_token(&self, token: &NewToken, actor: &str) -> Result<IssuedToken, StoreError> {
        self.insert_token(token, actor).await
    }

    async fn revoke_token(
        &self,
        token_id: &str,
        actor: &str,
    ) -> Result<Option<IssuedToken>, StoreError> {
        self.on_the_reserve(|| self.mark_token_revoked(token_id, actor))
            .await
    }

    async fn list_tokens(
        &self,
        team_id: Option<&str>,
        active_at: Option<i64>,
        limit: u32,
    ) -> Result<Vec<IssuedToken>, StoreError> {
        self.select_tokens(team_id, active_at, limit).await
    }

    async fn get_token(&self, token_id: &str) -> Result<Option<IssuedToken>, StoreError> {
        self.select_token(token_id).await
    }

    async fn active_token_count(&self, team_id: &str, now_ms: i64) -> Result<u64, StoreError> {
        self.count_active_tokens(team_id, now_ms).await
    }

    async fn active_tokens(&self, now_ms: i64) -> Result<Vec<IssuedToken>, StoreError> {
        self.select_active_tokens(now_ms).await
    }

    async fn record_sign_in(&self, sign_in: &super::SignIn) -> Result<(), StoreError> {
        self.upsert_sign_in(sign_in).await
    }

    async fn list_sign_ins(
        &self,
        team_id: Option<&str>,
        limit: u32,
    ) -> Result<Vec<super::SignIn>, StoreError> {
        self.select_sign_ins(team_id, limit).await
    }

    async fn record_client_decisions(
        &self,
        rows: &[super::ClientDecision],
    ) -> Result<(), StoreError> {
        self.upsert_client_decisions(rows).await
    }

    async fn client_decisions(
        &self,
        team_id: &str,
        tool_use_ids: &[&str],
    ) -> Result<Vec<super::ClientDecision>, StoreError> {
        self.select_client_decisions(team_id, tool_use_ids).await
    }

    async fn create_approval(&self, approval: &NewApproval) -> Result<(), StoreError> {
        self.insert_approval(approval).await
    }

    async fn answer_approval(
        &self,
        request_id: &str,
        answer: &Answer,
    ) -> Result<Answered, StoreError> {
        self.update_approval(request_id, answer).await
    }

    async fn get_approval(&self, request_id: &str) -> Result<Option<ApprovalRecord>, StoreError> {
        self.select_approval(request_id).await
    }

    async fn list_approvals(
        &self,
        team_id: &str,
        pending_only: bool,
        limit: u32,
    ) -> Result<Vec<ApprovalRecord>, StoreError> {
        self.select_approvals(team_id, pending_only, limit).await
    }

    async fn find_grant(
        &self,
        team_id: &str,
        user_id: &str,
        session_id: Option<&str>,
        call_key: &str,
        now_ms: i64,
    ) -> Result<Option<(String, i64)>, StoreError> {
        self.select_grant(team_id, user_id, session_id, call_key, now_ms)
            .await
    }

    async fn write_pins(
        &self,
        team_id: &str,
        server: &str,
        tools: &[super::SeenTool],
        how: super::PinWrite,
        actor: &str,
    ) -> Result<(Vec<super::StoredPin>, bool), StoreError> {
        self.write_pin_rows(team_id, server, tools, how, actor)
            .await
    }

    async fn accept_pin(
        &self,
        team_id: &str,
        server: &str,
        tool: &str,
        sha256: &str,
        actor: &str,
    ) -> Result<Option<super::StoredPin>, StoreError> {
        self.on_the_reserve(|| self.accept_pin_row(team_id, server, tool, sha256, actor))
            .await
    }

    async fn list_pins(
        &self,
        team_id: &str,
        server: Option<&str>,
        changed_only: bool,
        limit: u32,
    ) -> Result<Vec<super::StoredPin>, StoreError> {
        self.select_pins(team_id, server, changed_only, limit).await
    }

    async fn get_pin_settings(&self, team_id: &str) -> Result<super::PinSettings, StoreError> {
        self.select_pin_settings(team_id).await
    }

    async fn put_pin_settings(
        &self,
        team_id: &str,
        settings: super::PinSettings,
        actor: &str,
    ) -> Result<(), StoreError> {
        self.on_the_reserve(|| self.upsert_pin_settings(team_id, settings, actor))
            .await
    }

    async fn notices(&self) -> Result<Option<NoticeStream>, StoreError> {
        self.backend.notices().await
    }

    async fn check(&self) -> Result<(), StoreError> {
        self.backend.check().await
    }
}
