//! Stored documents compiled into the hub's cached forms: a team's admin controls
//! with its default user settings beside them, and a user's settings.

use super::{Cached, CachedAdmin, CachedUser, CompiledTeam, GroupCache, HubError};
use crate::policy::{AdminControls, CompiledAdmin, CompiledUser, UserSettings};
use crate::store::Versioned;
use std::sync::Arc;

/// Compiles `doc`, stored as `stamp` says; the document is read, not kept.
pub(super) fn compile_admin(
    team_id: &str,
    doc: &AdminControls,
    stamp: Versioned<()>,
) -> Result<CachedAdmin, HubError> {
    let admin = CompiledAdmin::compile(doc).map_err(|source| HubError::Compile {
        team_id: team_id.to_owned(),
        what: "admin settings",
        source,
    })?;
    let default_user = match &doc.default_user_settings {
        Some(defaults) => {
            let compiled = CompiledUser::compile(defaults).map_err(|source| HubError::Compile {
                team_id: team_id.to_owned(),
                what: "default user settings",
                source,
            })?;
            Some(Arc::new(Cached {
                stored: Versioned {
                    doc: UserSettings::clone(defaults),
                    revision: 0,
                    updated_at_ms: stamp.updated_at_ms,
                    updated_by: stamp.updated_by.clone(),
                },
                compiled,
            }))
        }
        None => None,
    };
    Ok(CachedAdmin {
        stamp,
        compiled: CompiledTeam {
            admin,
            default_user,
            groups: GroupCache::default(),
        },
    })
}

/// [`compile_admin`] on a record read from the store.
pub(super) fn compile_stored_admin(
    team_id: &str,
    stored: Versioned<AdminControls>,
) -> Result<CachedAdmin, HubError> {
    let Versioned {
        doc,
        revision,
        updated_at_ms,
        updated_by,
    } = stored;
    let stamp = Versioned {
        doc: (),
        revision,
        updated_at_ms,
        updated_by,
    };
    compile_admin(team_id, &doc, stamp)
}

pub(super) fn compile_user(
    team_id: &str,
    stored: Versioned<UserSettings>,
) -> Result<CachedUser, HubError> {
    let compiled = CompiledUser::compile(&stored.doc).map_err(|source| HubError::Compile {
        team_id: team_id.to_owned(),
        what: "user settings",
        source,
    })?;
    Ok(Cached { stored, compiled })
}
