//! A request as callers see it: its state when read (a pending request past its
//! deadline is expired) and the answer its waiting call gets, in people's words.

use super::rfc3339;
use crate::policy::{Outcome, Reason};
use crate::store::{ApprovalRecord, ApprovalState, ScopeKind};

/// A request as callers see it: the record, its state at the time it was read (a
/// pending request past its deadline is expired), and the answer a waiting call gets.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalView {
    pub record: ApprovalRecord,
    pub state: ApprovalState,
    /// Once not pending: ALLOW or DENY with its reason and sentence.
    pub answer: Option<(Outcome, Reason, String)>,
}

impl ApprovalView {
    pub fn at(record: ApprovalRecord, now: i64) -> Self {
        let state = match record.state {
            ApprovalState::Pending if now >= record.new.deadline_ms => ApprovalState::Expired,
            s => s,
        };
        let answer = answer_of(&record, state);
        Self {
            record,
            state,
            answer,
        }
    }
}

/// What the waiting call is told, in people's words.
pub(super) fn answer_of(
    r: &ApprovalRecord,
    state: ApprovalState,
) -> Option<(Outcome, Reason, String)> {
    let by = r.answered_by.as_deref().unwrap_or("an approver");
    let what = &r.new.summary;
    match state {
        ApprovalState::Pending => None,
        ApprovalState::Approved => {
            let reach = match r.scope {
                Some(ScopeKind::Session) => " for the rest of this session".to_owned(),
                Some(ScopeKind::Duration) => r
                    .grant_expires_at_ms
                    .map(|t| format!(" until {}", rfc3339(t)))
                    .unwrap_or_default(),
                Some(ScopeKind::Allowlist) => format!(
                    " and added {} to the allowlist",
                    r.allowlist_entry.as_deref().unwrap_or("its entry")
                ),
                Some(ScopeKind::Once) | None => String::new(),
            };
            let note = r
                .answer_reason
                .as_deref()
                .map(|n| format!(": {n}"))
                .unwrap_or_default();
            Some((
                Outcome::Allow,
                Reason::Approved,
                format!("{what} may run: approved by {by}{reach}{note}"),
            ))
        }
        ApprovalState::Denied => Some((
            Outcome::Deny,
            Reason::ApprovalDenied,
            format!(
                "{what} is denied by {by}: {}",
                r.answer_reason.as_deref().unwrap_or("no reason given")
            ),
        )),
        ApprovalState::Abandoned => Some((
            Outcome::Deny,
            Reason::ApprovalExpired,
            format!(
                "{what} is denied: the call that waited for approval request {} went away (its hook or proxy gave up) before anyone answered; the agent must make it again",
                r.new.request_id
            ),
        )),
        ApprovalState::Expired => {
            let secs = (r.new.deadline_ms - r.new.created_at_ms).max(0) / 1000;
            Some((
                Outcome::Deny,
                Reason::ApprovalExpired,
                format!(
                    "{what} is denied: nobody approved it within {secs} seconds (the approval request {} expired); ask an approver to answer sooner, or to approve it for the session",
                    r.new.request_id
                ),
            ))
        }
    }
}
