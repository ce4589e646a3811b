//! The agent clients' own decisions, from their telemetry (Claude Code's
//! `claude_code.tool_decision`): a row per team, user and the client's id for the
//! call, joined to toolgate's records of the same call when they are listed. Kept
//! apart from the decision log's blocks, which are written once and never edited; the
//! decision log's retention prunes them with the records they annotate.

use super::StoreError;
use super::backend::Backend;
use super::sql::SqlStore;
use sqlx::{
    ColumnIndex, Connection as _, Database, Decode, Encode, Executor, IntoArguments, Row, Type,
};

/// One client decision, as its telemetry reported it. The team and user are the
/// sender's own (its credential's), never the event's, so a record joins only the
/// decisions of the one who sent it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientDecision {
    pub team_id: String,
    pub user_id: String,
    /// The client's own id for the call, as the decision record keeps it.
    pub tool_use_id: String,
    /// `accept` or `reject`, as the client said.
    pub decision: String,
    /// What decided it: `config`, `hook`, `user_permanent`, `user_temporary`,
    /// `user_reject`, as the client said.
    pub source: String,
    /// The client's name for the tool.
    pub tool_name: String,
    /// Unix milliseconds at which toolgate received it.
    pub at_ms: i64,
}

const COLUMNS: &str = "team_id, user_id, tool_use_id, decision, source, tool_name, at";

fn client_decision<R: Row>(row: &R) -> Result<ClientDecision, StoreError>
where
    for<'r> &'r str: ColumnIndex<R>,
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
{
    Ok(ClientDecision {
        team_id: row.try_get("team_id")?,
        user_id: row.try_get("user_id")?,
        tool_use_id: row.try_get("tool_use_id")?,
        decision: row.try_get("decision")?,
        source: row.try_get("source")?,
        tool_name: row.try_get("tool_name")?,
        at_ms: row.try_get("at")?,
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
    usize: ColumnIndex<<B::Db as Database>::Row>,
{
    /// Keeps `rows` in one transaction; a second report of the same call replaces
    /// the first (the client's last word stands).
    pub(super) async fn upsert_client_decisions(
        &self,
        rows: &[ClientDecision],
    ) -> Result<(), StoreError> {
        if rows.is_empty() {
            return Ok(());
        }
        let mut conn = self.begin_write().await?;
        let result = async {
            let mut tx = conn.begin_with(B::BEGIN_WRITE).await?;
            for r in rows {
                sqlx::query(
                    "INSERT INTO client_decisions (team_id, user_id, tool_use_id, decision,
                       source, tool_name, at)
                     VALUES ($1, $2, $3, $4, $5, $6, $7)
                     ON CONFLICT (team_id, user_id, tool_use_id) DO UPDATE SET
                       decision = excluded.decision, source = excluded.source,
                       tool_name = excluded.tool_name, at = excluded.at",
                )
                .bind(&r.team_id)
                .bind(&r.user_id)
                .bind(&r.tool_use_id)
                .bind(&r.decision)
                .bind(&r.source)
                .bind(&r.tool_name)
                .bind(r.at_ms)
                .execute(&mut *tx)
                .await?;
            }
            super::sql::commit(tx).await?;
            Ok(())
        }
        .await;
        self.end_write(conn, result)
    }

    /// The team's client decisions for the calls `tool_use_ids` name (each user's
    /// own: the caller matches them to records by user and id).
    pub(super) async fn select_client_decisions(
        &self,
        team_id: &str,
        tool_use_ids: &[&str],
    ) -> Result<Vec<ClientDecision>, StoreError> {
        if tool_use_ids.is_empty() {
            return Ok(Vec::new());
        }
        let placeholders: Vec<String> = (0..tool_use_ids.len())
            .map(|i| format!("${}", i + 2))
            .collect();
        let sql = format!(
            "SELECT {COLUMNS} FROM client_decisions WHERE team_id = $1 AND tool_use_id IN ({})",
            placeholders.join(", ")
        );
        let mut query = sqlx::query(&sql).bind(team_id);
        for id in tool_use_ids {
            query = query.bind(*id);
        }
        let mut conn = self.backend.read().await?;
        let rows = query.fetch_all(&mut *conn).await?;
        rows.iter().map(client_decision).collect()
    }
}
