//! Conversions between protobuf messages and the service's own types (stamped
//! documents, changes, audit events); those of the policy core's types are in
//! `toolgate_proto::convert`, re-exported here.

pub use toolgate_proto::convert::*;

use crate::policy::{AdminControls, UserSettings};
use crate::proto::v1 as pb;
use crate::service::{AuditEvent, Change, ChangeDoc, Effective, Versioned, WatchEvent};

/// When a document was written and by whom, as its messages carry it.
#[derive(Clone, Copy)]
struct Stamp<'a> {
    revision: u64,
    at_ms: i64,
    by: &'a str,
}

impl<'a, T> From<&'a Versioned<T>> for Stamp<'a> {
    fn from(v: &'a Versioned<T>) -> Self {
        Self {
            revision: v.revision,
            at_ms: v.updated_at_ms,
            by: &v.updated_by,
        }
    }
}

impl<'a> From<&'a Change> for Stamp<'a> {
    fn from(c: &'a Change) -> Self {
        Self {
            revision: c.revision,
            at_ms: c.at_ms,
            by: &c.actor,
        }
    }
}

fn admin_pb(team_id: &str, controls: &AdminControls, stamp: Stamp<'_>) -> pb::TeamAdminSettings {
    pb::TeamAdminSettings {
        team_id: team_id.to_owned(),
        auto_run_controls: Some(controls_to_pb(controls)),
        revision: stamp.revision,
        updated_at: timestamp(stamp.at_ms),
        updated_by: stamp.by.to_owned(),
    }
}

pub fn admin_to_pb(team_id: &str, v: &Versioned<AdminControls>) -> pb::TeamAdminSettings {
    admin_pb(team_id, &v.doc, v.into())
}

fn user_pb(team_id: &str, user_id: &str, s: &UserSettings, stamp: Stamp<'_>) -> pb::UserSettings {
    pb::UserSettings {
        team_id: team_id.to_owned(),
        user_id: user_id.to_owned(),
        revision: stamp.revision,
        updated_at: timestamp(stamp.at_ms),
        updated_by: stamp.by.to_owned(),
        ..toolgate_proto::convert::user_to_pb(s)
    }
}

pub fn user_to_pb(team_id: &str, user_id: &str, v: &Versioned<UserSettings>) -> pb::UserSettings {
    user_pb(team_id, user_id, &v.doc, v.into())
}

pub fn effective_to_pb(team_id: &str, user_id: &str, e: &Effective) -> pb::EffectivePolicy {
    pb::EffectivePolicy {
        admin: Some(admin_to_pb(team_id, &e.admin.stored)),
        user: Some(user_to_pb(team_id, user_id, &e.user.stored)),
        revision: e.revision,
        file_allowlists: e
            .tool_actions
            .iter()
            .map(|l| pb::ToolActionAllowlist {
                server: l.server().to_owned(),
                allowed_tools: l.allowed_tools().to_vec(),
            })
            .collect(),
    }
}

pub fn watch_event_to_pb(team_id: &str, user_id: &str, e: WatchEvent) -> pb::PolicyEvent {
    use pb::policy_event::Event;
    let revision = e.revision();
    let event = match e {
        WatchEvent::Snapshot { effective, resync } => Event::Snapshot(pb::PolicySnapshot {
            policy: Some(effective_to_pb(team_id, user_id, &effective)),
            resync,
        }),
        WatchEvent::Change(change) => match &change.doc {
            ChangeDoc::Admin { controls } => {
                Event::AdminSettings(admin_pb(team_id, controls, (&change.change).into()))
            }
            ChangeDoc::User { settings, .. } => {
                Event::UserSettings(user_pb(team_id, user_id, settings, (&change.change).into()))
            }
        },
        WatchEvent::Heartbeat { .. } => Event::Heartbeat(pb::Heartbeat {
            at: timestamp(crate::service::now_ms()),
        }),
    };
    pb::PolicyEvent {
        revision,
        event: Some(event),
    }
}

pub fn audit_to_pb(e: AuditEvent) -> pb::AuditEvent {
    pb::AuditEvent {
        id: e.id,
        team_id: e.team_id,
        revision: e.revision,
        actor: e.actor,
        kind: e.kind,
        at: timestamp(e.at_ms),
        detail_json: e.detail_json,
    }
}
