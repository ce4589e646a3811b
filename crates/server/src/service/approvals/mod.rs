//! Central approvals: an ASK that goes to the team's approvers becomes a durable
//! request; approvers list, watch and answer it; the waiting side follows it to its
//! answer (or its deadline); grants for the session or a time let later calls by.
//!
//! Every state change is one conditional write in the store, so two approvers on two
//! replicas cannot both answer; every replica hears of it through the hub's approval
//! notices (PostgreSQL NOTIFY between replicas) and re-reads the store.

mod allowlist;
mod answers;
mod request;
mod streams;
#[cfg(test)]
mod tests;
mod view;
mod waiters;

use super::{Service, ServiceError};
use crate::policy::AdminControls;
use crate::policy::approvals::{ApprovalMode, ApprovalSettings};
use crate::store::ScopeKind;
use std::time::Duration;

pub use streams::{AwaitEvent, WatchApprovalsEvent};
pub use view::ApprovalView;
pub(super) use waiters::Waiters;

/// The longest denial reason or approver note kept.
pub const MAX_ANSWER_REASON: usize = 1000;
/// The longest client name or session id taken from a caller.
const MAX_LABEL: usize = 128;
/// Most requests a list returns.
pub const MAX_LIST: u32 = 1000;

/// What a caller of `Evaluate` can do with an ASK that goes central.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApprovalAsk {
    pub can_wait: bool,
    pub interactive: Option<bool>,
    pub client: String,
    pub session_id: Option<String>,
    /// The client's working directory: a grant is for calls in it only.
    pub cwd: Option<String>,
}

/// Where a request was made: the id to wait on and its deadline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ticket {
    pub request_id: String,
    pub deadline_ms: i64,
}

/// How far an approval reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalScope {
    Once,
    Session,
    Duration(Duration),
    Allowlist { expected_revision: Option<u64> },
}

impl ApprovalScope {
    fn kind(self) -> ScopeKind {
        match self {
            Self::Once => ScopeKind::Once,
            Self::Session => ScopeKind::Session,
            Self::Duration(_) => ScopeKind::Duration,
            Self::Allowlist { .. } => ScopeKind::Allowlist,
        }
    }
}

fn rfc3339(ms: i64) -> String {
    let t = std::time::UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0));
    humantime::format_rfc3339_seconds(t).to_string()
}

fn label(field: &str, value: &str) -> Result<String, ServiceError> {
    if value.len() > MAX_LABEL || value.chars().any(char::is_control) {
        return Err(ServiceError::invalid(
            field,
            format!(
                "must be at most {MAX_LABEL} bytes without control characters: send a shorter one"
            ),
        ));
    }
    Ok(value.to_owned())
}

fn answer_reason(field: &str, value: &str, required: bool) -> Result<Option<String>, ServiceError> {
    let value = value.trim();
    if value.is_empty() {
        return if required {
            Err(ServiceError::invalid(
                field,
                "is required: say why, so the agent (and the person who runs it) knows",
            ))
        } else {
            Ok(None)
        };
    }
    if value.chars().count() > MAX_ANSWER_REASON {
        return Err(ServiceError::invalid(
            field,
            format!("is longer than {MAX_ANSWER_REASON} characters: shorten it"),
        ));
    }
    Ok(Some(value.to_owned()))
}

fn not_found(id: &str) -> ServiceError {
    ServiceError::NotFound(format!(
        "no approval request has the id {id:?}: list them with `toolgate approvals list`"
    ))
}

impl Service {
    fn approval_settings(controls: &AdminControls) -> Option<&ApprovalSettings> {
        controls
            .approvals
            .as_deref()
            .filter(|a| a.mode != ApprovalMode::Off)
    }
}
