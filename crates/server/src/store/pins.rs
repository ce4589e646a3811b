//! Tool pins: per team, MCP server and tool, the hash and canonical definition of the
//! tool as pinned, and the different definition a gateway saw since. Each write takes
//! one transaction with its audit records and a notice ([`PINS_NOTICE_PREFIX`] and
//! the team id) so every replica's gateways check their tools again at once. A tool
//! seen first by two replicas at once is pinned once: the first insert wins and both
//! read back the same pin.

use super::backend::Backend;
use super::sql::{INSERT_AUDIT, SqlStore};
use super::{StoreError, now_ms};
use serde_json::json;
use sqlx::{
    ColumnIndex, Connection as _, Database, Decode, Encode, Executor, IntoArguments, Row, Type,
};

/// A notice about a team's pins is this character and the team id (see
/// `APPROVALS_NOTICE_PREFIX` for why no team's notice reads as one).
pub const PINS_NOTICE_PREFIX: char = '\u{4}';

/// Audit kinds of the pins (team-scoped).
pub const AUDIT_TOOL_PINNED: &str = "tool_pinned";
pub const AUDIT_TOOL_CHANGED: &str = "tool_changed";
pub const AUDIT_TOOL_REPINNED: &str = "tool_repinned";
pub const AUDIT_PIN_SETTINGS_UPDATED: &str = "pin_settings_updated";

/// A tool's definition as a gateway reported it: canonical JSON and its hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeenTool {
    pub tool: String,
    pub sha256: String,
    pub definition: String,
}

/// A definition as recorded, with when and by whom.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinnedText {
    pub sha256: String,
    pub definition: String,
    pub at_ms: i64,
    pub by: String,
}

/// One tool's pin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredPin {
    pub team_id: String,
    pub server: String,
    pub tool: String,
    pub pinned: PinnedText,
    /// Pinned or accepted by an admin (not only first seen by a member's gateway).
    pub reviewed: bool,
    pub changed: Option<PinnedText>,
}

/// A team's pin settings; a team that never set them has [`PinSettings::default`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PinSettings {
    pub members_pin_first: bool,
    pub hide_flagged: bool,
}

impl Default for PinSettings {
    /// Trust on first use by any of the team's gateways (a member's proxy on stdio
    /// is the common case); flagged tools shown, their flags visible to admins.
    fn default() -> Self {
        Self {
            members_pin_first: true,
            hide_flagged: false,
        }
    }
}

/// What a write of pins does to an existing one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PinWrite {
    /// A gateway's report: pins what is new (when `pin_first`), notes what changed.
    Seen { pin_first: bool, reviewed: bool },
    /// An admin's pins set ahead: replaces, reviewed.
    Set,
}

const COLUMNS: &str = "team_id, server, tool, sha256, definition, reviewed, pinned_at, pinned_by,
     changed_sha256, changed_definition, changed_at, changed_by";

fn stored<R: Row>(row: &R) -> Result<StoredPin, StoreError>
where
    for<'r> &'r str: ColumnIndex<R>,
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> Option<i64>: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> Option<String>: Decode<'r, R::Database> + Type<R::Database>,
{
    let changed = match (
        row.try_get::<Option<String>, _>("changed_sha256")?,
        row.try_get::<Option<String>, _>("changed_definition")?,
    ) {
        (Some(sha256), Some(definition)) => Some(PinnedText {
            sha256,
            definition,
            at_ms: row.try_get::<Option<i64>, _>("changed_at")?.unwrap_or(0),
            by: row
                .try_get::<Option<String>, _>("changed_by")?
                .unwrap_or_default(),
        }),
        _ => None,
    };
    Ok(StoredPin {
        team_id: row.try_get("team_id")?,
        server: row.try_get("server")?,
        tool: row.try_get("tool")?,
        pinned: PinnedText {
            sha256: row.try_get("sha256")?,
            definition: row.try_get("definition")?,
            at_ms: row.try_get("pinned_at")?,
            by: row.try_get("pinned_by")?,
        },
        reviewed: row.try_get::<i64, _>("reviewed")? != 0,
        changed,
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
    /// Writes `tools`' pins of `team`'s `server` as `how` says, audited and announced
    /// in one transaction; the pins of `tools` after it, in their order (a tool not
    /// pinned is left out), and whether anything was written.
    pub(super) async fn write_pin_rows(
        &self,
        team: &str,
        server: &str,
        tools: &[SeenTool],
        how: PinWrite,
        actor: &str,
    ) -> Result<(Vec<StoredPin>, bool), StoreError> {
        let mut conn = self.begin_write().await?;
        let now = now_ms();
        let result = async {
            let mut tx = conn.begin_with(B::BEGIN_WRITE).await?;
            let mut audited = false;
            let mut out = Vec::with_capacity(tools.len());
            for seen in tools {
                let mut kinds: Vec<(&str, Option<String>)> = Vec::new();
                match how {
                    PinWrite::Seen {
                        pin_first,
                        reviewed,
                    } => {
                        if pin_first {
                            let inserted: Option<String> = sqlx::query_scalar(&format!(
                                "INSERT INTO tool_pins ({COLUMNS})
                                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, NULL, NULL, NULL, NULL)
                                 ON CONFLICT (team_id, server, tool) DO NOTHING RETURNING tool"
                            ))
                            .bind(team)
                            .bind(server)
                            .bind(&seen.tool)
                            .bind(&seen.sha256)
                            .bind(&seen.definition)
                            .bind(i64::from(reviewed))
                            .bind(now)
                            .bind(actor)
                            .fetch_optional(&mut *tx)
                            .await?;
                            if inserted.is_some() {
                                kinds.push((AUDIT_TOOL_PINNED, None));
                            }
                        }
                        // a definition other than the pin, noted when none is: the
                        // first change waits for an admin, and two upstreams that
                        // disagree cannot make replicas write (and notify) in turn
                        let noted: Option<String> = sqlx::query_scalar(
                            "UPDATE tool_pins SET changed_sha256 = $4, changed_definition = $5,
                               changed_at = $6, changed_by = $7
                             WHERE team_id = $1 AND server = $2 AND tool = $3 AND sha256 <> $4
                               AND changed_sha256 IS NULL
                             RETURNING sha256",
                        )
                        .bind(team)
                        .bind(server)
                        .bind(&seen.tool)
                        .bind(&seen.sha256)
                        .bind(&seen.definition)
                        .bind(now)
                        .bind(actor)
                        .fetch_optional(&mut *tx)
                        .await?;
                        if let Some(pinned) = noted {
                            kinds.push((AUDIT_TOOL_CHANGED, Some(pinned)));
                        }
                    }
                    PinWrite::Set => {
                        let before: Option<String> = sqlx::query_scalar(
                            "SELECT sha256 FROM tool_pins
                             WHERE team_id = $1 AND server = $2 AND tool = $3",
                        )
                        .bind(team)
                        .bind(server)
                        .bind(&seen.tool)
                        .fetch_optional(&mut *tx)
                        .await?;
                        sqlx::query(&format!(
                            "INSERT INTO tool_pins ({COLUMNS})
                             VALUES ($1, $2, $3, $4, $5, 1, $6, $7, NULL, NULL, NULL, NULL)
                             ON CONFLICT (team_id, server, tool) DO UPDATE SET
                               sha256 = excluded.sha256, definition = excluded.definition,
                               reviewed = 1, pinned_at = excluded.pinned_at,
                               pinned_by = excluded.pinned_by, changed_sha256 = NULL,
                               changed_definition = NULL, changed_at = NULL, changed_by = NULL"
                        ))
                        .bind(team)
                        .bind(server)
                        .bind(&seen.tool)
                        .bind(&seen.sha256)
                        .bind(&seen.definition)
                        .bind(now)
                        .bind(actor)
                        .execute(&mut *tx)
                        .await?;
                        kinds.push((AUDIT_TOOL_REPINNED, before));
                    }
                }
                for (kind, previous) in kinds {
                    let mut detail = json!({
                        "server": server,
                        "tool": seen.tool,
                        "sha256": seen.sha256,
                    });
                    if let Some(previous) = previous {
                        detail["pinned_sha256"] = json!(previous);
                    }
                    sqlx::query(INSERT_AUDIT)
                        .bind(team)
                        .bind(0i64)
                        .bind(actor)
                        .bind(kind)
                        .bind(now)
                        .bind(detail.to_string())
                        .execute(&mut *tx)
                        .await?;
                    audited = true;
                }
                let row = sqlx::query(&format!(
                    "SELECT {COLUMNS} FROM tool_pins
                     WHERE team_id = $1 AND server = $2 AND tool = $3"
                ))
                .bind(team)
                .bind(server)
                .bind(&seen.tool)
                .fetch_optional(&mut *tx)
                .await?;
                if let Some(row) = row {
                    out.push(stored(&row)?);
                }
            }
            if audited {
                self.backend
                    .announce(&mut *tx, &format!("{PINS_NOTICE_PREFIX}{team}"))
                    .await?;
            }
            super::sql::commit(tx).await?;
            Ok((out, audited))
        }
        .await;
        self.end_write(conn, result)
    }

    /// Accepts the definition hashed `sha256` of a tool: its changed one (which
    /// becomes the pin), or its pinned one (marked reviewed). `None` when neither
    /// has that hash any more.
    pub(super) async fn accept_pin_row(
        &self,
        team: &str,
        server: &str,
        tool: &str,
        sha256: &str,
        actor: &str,
    ) -> Result<Option<StoredPin>, StoreError> {
        let mut conn = self.begin_write().await?;
        let now = now_ms();
        let result = async {
            let mut tx = conn.begin_with(B::BEGIN_WRITE).await?;
            let before: Option<String> = sqlx::query_scalar(
                "SELECT sha256 FROM tool_pins WHERE team_id = $1 AND server = $2 AND tool = $3",
            )
            .bind(team)
            .bind(server)
            .bind(tool)
            .fetch_optional(&mut *tx)
            .await?;
            let moved: Option<String> = sqlx::query_scalar(
                "UPDATE tool_pins SET sha256 = changed_sha256, definition = changed_definition,
                   reviewed = 1, pinned_at = $5, pinned_by = $6, changed_sha256 = NULL,
                   changed_definition = NULL, changed_at = NULL, changed_by = NULL
                 WHERE team_id = $1 AND server = $2 AND tool = $3 AND changed_sha256 = $4
                 RETURNING tool",
            )
            .bind(team)
            .bind(server)
            .bind(tool)
            .bind(sha256)
            .bind(now)
            .bind(actor)
            .fetch_optional(&mut *tx)
            .await?;
            let reviewed: Option<String> = if moved.is_none() {
                sqlx::query_scalar(
                    "UPDATE tool_pins SET reviewed = 1
                     WHERE team_id = $1 AND server = $2 AND tool = $3 AND sha256 = $4
                     RETURNING tool",
                )
                .bind(team)
                .bind(server)
                .bind(tool)
                .bind(sha256)
                .fetch_optional(&mut *tx)
                .await?
            } else {
                None
            };
            if moved.is_none() && reviewed.is_none() {
                return Ok(None);
            }
            let detail = json!({
                "server": server,
                "tool": tool,
                "sha256": sha256,
                "pinned_sha256": before,
            });
            sqlx::query(INSERT_AUDIT)
                .bind(team)
                .bind(0i64)
                .bind(actor)
                .bind(AUDIT_TOOL_REPINNED)
                .bind(now)
                .bind(detail.to_string())
                .execute(&mut *tx)
                .await?;
            let row = sqlx::query(&format!(
                "SELECT {COLUMNS} FROM tool_pins WHERE team_id = $1 AND server = $2 AND tool = $3"
            ))
            .bind(team)
            .bind(server)
            .bind(tool)
            .fetch_one(&mut *tx)
            .await?;
            let pin = stored(&row)?;
            self.backend
                .announce(&mut *tx, &format!("{PINS_NOTICE_PREFIX}{team}"))
                .await?;
            super::sql::commit(tx).await?;
            Ok(Some(pin))
        }
        .await;
        self.end_write(conn, result)
    }

    /// A team's pins (of one server, or every one), by server and tool, at most
    /// `limit`; with `changed_only`, those with a changed definition.
    pub(super) async fn select_pins(
        &self,
        team: &str,
        server: Option<&str>,
        changed_only: bool,
        limit: u32,
    ) -> Result<Vec<StoredPin>, StoreError> {
        let mut conn = self.backend.read().await?;
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM tool_pins
             WHERE team_id = $1 AND (CAST($2 AS TEXT) IS NULL OR server = $2)
               AND ($3 = 0 OR changed_sha256 IS NOT NULL)
             ORDER BY server, tool LIMIT $4"
        ))
        .bind(team)
        .bind(server)
        .bind(i64::from(changed_only))
        .bind(i64::from(limit))
        .fetch_all(&mut *conn)
        .await?;
        rows.iter().map(stored).collect()
    }

    pub(super) async fn select_pin_settings(&self, team: &str) -> Result<PinSettings, StoreError> {
        let mut conn = self.backend.read().await?;
        let row = sqlx::query(
            "SELECT members_pin_first, hide_flagged FROM pin_settings WHERE team_id = $1",
        )
        .bind(team)
        .fetch_optional(&mut *conn)
        .await?;
        match row {
            None => Ok(PinSettings::default()),
            Some(row) => Ok(PinSettings {
                members_pin_first: row.try_get::<i64, _>("members_pin_first")? != 0,
                hide_flagged: row.try_get::<i64, _>("hide_flagged")? != 0,
            }),
        }
    }

    pub(super) async fn upsert_pin_settings(
        &self,
        team: &str,
        settings: PinSettings,
        actor: &str,
    ) -> Result<(), StoreError> {
        let mut conn = self.begin_write().await?;
        let now = now_ms();
        let result = async {
            let mut tx = conn.begin_with(B::BEGIN_WRITE).await?;
            sqlx::query(
                "INSERT INTO pin_settings (team_id, members_pin_first, hide_flagged, updated_at, updated_by)
                 VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (team_id) DO UPDATE SET members_pin_first = excluded.members_pin_first,
                   hide_flagged = excluded.hide_flagged, updated_at = excluded.updated_at,
                   updated_by = excluded.updated_by",
            )
            .bind(team)
            .bind(i64::from(settings.members_pin_first))
            .bind(i64::from(settings.hide_flagged))
            .bind(now)
            .bind(actor)
            .execute(&mut *tx)
            .await?;
            let detail = json!({
                "members_pin_first": settings.members_pin_first,
                "hide_flagged": settings.hide_flagged,
            });
            sqlx::query(INSERT_AUDIT)
                .bind(team)
                .bind(0i64)
                .bind(actor)
                .bind(AUDIT_PIN_SETTINGS_UPDATED)
                .bind(now)
                .bind(detail.to_string())
                .execute(&mut *tx)
                .await?;
            self.backend
                .announce(&mut *tx, &format!("{PINS_NOTICE_PREFIX}{team}"))
                .await?;
            super::sql::commit(tx).await?;
            Ok(())
        }
        .await;
        self.end_write(conn, result)
    }
}
