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
        admin: Some(admin_to_pb(team_id, &e.admin_shown())),
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
        groups: e.groups_applied().to_vec(),
    }
}

pub fn watch_event_to_pb(team_id: &str, user_id: &str, e: WatchEvent) -> pb::WatchPolicyResponse {
    use pb::watch_policy_response::Event;
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
    pb::WatchPolicyResponse {
        revision,
        event: Some(event),
    }
}

/// The audit trail's kinds as the store writes them, beside their enum values.
const AUDIT_KINDS: [(pb::AuditEventKind, &str); 20] = [
    (
        pb::AuditEventKind::AdminSettingsUpdated,
        "admin_settings_updated",
    ),
    (
        pb::AuditEventKind::UserSettingsUpdated,
        "user_settings_updated",
    ),
    (pb::AuditEventKind::DecisionDenied, "decision_denied"),
    (pb::AuditEventKind::TokenCreated, "token_created"),
    (pb::AuditEventKind::TokenRevoked, "token_revoked"),
    (
        pb::AuditEventKind::PolicyFileReloaded,
        "policy_file_reloaded",
    ),
    (
        pb::AuditEventKind::PolicyFileRejected,
        "policy_file_rejected",
    ),
    (
        pb::AuditEventKind::AllowListUpdated,
        crate::service::AUDIT_ALLOW_LIST_UPDATED,
    ),
    (
        pb::AuditEventKind::DecisionMade,
        crate::service::AUDIT_DECISION_MADE,
    ),
    (
        pb::AuditEventKind::ApprovalRequested,
        crate::service::AUDIT_APPROVAL_REQUESTED,
    ),
    (
        pb::AuditEventKind::ApprovalApproved,
        crate::service::AUDIT_APPROVAL_APPROVED,
    ),
    (
        pb::AuditEventKind::ApprovalDenied,
        crate::service::AUDIT_APPROVAL_DENIED,
    ),
    (
        pb::AuditEventKind::ApprovalExpired,
        crate::service::AUDIT_APPROVAL_EXPIRED,
    ),
    (
        pb::AuditEventKind::ApprovalAbandoned,
        crate::service::AUDIT_APPROVAL_ABANDONED,
    ),
    (
        pb::AuditEventKind::DecisionsShed,
        crate::service::AUDIT_DECISIONS_SHED,
    ),
    (
        pb::AuditEventKind::ToolPinned,
        crate::service::AUDIT_TOOL_PINNED,
    ),
    (
        pb::AuditEventKind::ToolChanged,
        crate::service::AUDIT_TOOL_CHANGED,
    ),
    (
        pb::AuditEventKind::ToolRepinned,
        crate::service::AUDIT_TOOL_REPINNED,
    ),
    (
        pb::AuditEventKind::PinSettingsUpdated,
        crate::service::AUDIT_PIN_SETTINGS_UPDATED,
    ),
    (
        pb::AuditEventKind::TamperingDetected,
        crate::service::AUDIT_TAMPERING_DETECTED,
    ),
];

/// The managed file a tampering report names: it must be named.
pub fn managed_file_from_pb(file: i32) -> Result<crate::service::ManagedFile, ConvertError> {
    use crate::service::ManagedFile;
    match pb::ManagedFile::try_from(file) {
        Ok(pb::ManagedFile::CodexRequirements) => Ok(ManagedFile::CodexRequirements),
        Ok(pb::ManagedFile::GeminiPolicy) => Ok(ManagedFile::GeminiPolicy),
        Ok(pb::ManagedFile::CursorHooks) => Ok(ManagedFile::CursorHooks),
        Ok(pb::ManagedFile::GeminiSettings) => Ok(ManagedFile::GeminiSettings),
        Ok(pb::ManagedFile::Unspecified) | Err(_) => Err(ConvertError {
            field: "file".to_owned(),
            message: format!("{file} is not a managed file: use one of ManagedFile's named values"),
        }),
    }
}

/// A kind filter: unspecified is every kind.
pub fn audit_kind_from_pb(kind: i32) -> Result<Option<String>, ConvertError> {
    match pb::AuditEventKind::try_from(kind) {
        Ok(pb::AuditEventKind::Unspecified) => Ok(None),
        Ok(k) => Ok(AUDIT_KINDS
            .iter()
            .find(|(known, _)| *known == k)
            .map(|(_, name)| (*name).to_owned())),
        Err(_) => Err(ConvertError {
            field: "kind".to_owned(),
            message: format!(
                "{kind} is not a known value: use one of AuditEventKind's named values"
            ),
        }),
    }
}

pub fn audit_to_pb(e: AuditEvent) -> pb::AuditEvent {
    let kind = AUDIT_KINDS
        .iter()
        .find(|(_, name)| *name == e.kind)
        .map_or(pb::AuditEventKind::Unspecified, |(k, _)| *k);
    // the store wrote the detail itself, as JSON: an object
    let detail = match serde_json::from_str(&e.detail_json) {
        Ok(serde_json::Value::Object(map)) => Some(toolgate_proto::json::object_to_pb(&map)),
        _ => None,
    };
    pb::AuditEvent {
        id: e.id,
        team_id: e.team_id,
        revision: e.revision,
        actor: e.actor,
        kind: kind as i32,
        at: timestamp(e.at_ms),
        detail,
    }
}
