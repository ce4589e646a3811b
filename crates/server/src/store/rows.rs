//! The row mapping both backends share: a stored row to a domain value.

use super::{AuditEvent, Change, StoreError, Versioned, from_json, to_u64};
use serde::de::DeserializeOwned;
use sqlx::{ColumnIndex, Decode, Row, Type};

pub(super) fn versioned<T: DeserializeOwned + Default, R: Row>(
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

pub(super) fn change<R: Row>(team_id: &str, row: &R) -> Result<Change, StoreError>
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

pub(super) fn audit_event<R: Row>(row: &R) -> Result<AuditEvent, StoreError>
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
