//! Reading and answering requests: who may read, list and answer one, an approval
//! (once, for the session, for a time, or into an allowlist), a denial, an expiry,
//! each written once by the store's conditional update and logged as a decision.

use super::request::shown_of;
use super::view::{ApprovalView, answer_of};
use super::{ApprovalScope, MAX_LIST, answer_reason, label, not_found, rfc3339};
use crate::auth::{Action, Principal, Role, authorize};
use crate::policy::Outcome;
use crate::policy::approvals::{self, AnswerRefusal, Answerer, may_answer};
use crate::policy::roles::AgentSpec;
use crate::service::decisions::{DecisionSource, RequestOrigin};
use crate::service::{Service, ServiceError, check_id, own_subject};
use crate::store::{Answer, Answered, ApprovalRecord, ApprovalState, NewGrant, now_ms};
use std::time::Duration;

impl Service {
    /// The stored request `id` (a label already checked), or NOT_FOUND.
    pub(super) async fn stored(&self, id: &str) -> Result<ApprovalRecord, ServiceError> {
        self.store
            .get_approval(id)
            .await?
            .ok_or_else(|| not_found(id))
    }

    /// A request `p` may answer now: one of its teams' approvers', still pending
    /// (expired first if its deadline passed).
    async fn answerable(&self, p: &Principal, id: &str) -> Result<ApprovalRecord, ServiceError> {
        let id = label("request_id", id)?;
        let record = self.stored(&id).await?;
        self.check_approver(p, &record).await?;
        self.still_pending(record).await
    }

    /// A request, for anyone of its team who may evaluate for its user or answer it.
    pub(super) async fn readable(
        &self,
        p: &Principal,
        id: &str,
    ) -> Result<ApprovalRecord, ServiceError> {
        let id = label("request_id", id)?;
        let record = self.stored(&id).await?;
        let team = &record.new.team_id;
        // the requester's side (its user, a service of the team) or an approver
        if authorize(p, team, Action::Evaluate(&record.new.user_id)).is_err() {
            self.check_approver(p, &record).await?;
        }
        Ok(record)
    }

    /// Whether `p` may answer `record` under its team's current settings.
    async fn check_approver(
        &self,
        p: &Principal,
        record: &ApprovalRecord,
    ) -> Result<(), ServiceError> {
        let team = &record.new.team_id;
        if p.role != Role::Operator && p.team.as_deref() != Some(team.as_str()) {
            return Err(ServiceError::PermissionDenied(format!(
                "principal {:?} belongs to team {:?}, not {team:?}",
                p.name,
                p.team.as_deref().unwrap_or("")
            )));
        }
        let admin = self.hub.admin(team).await?;
        let settings = admin
            .head()
            .approvals
            .as_deref()
            .cloned()
            .unwrap_or_default();
        let who = Answerer {
            admin: matches!(p.role, Role::Admin | Role::Operator),
            user: match p.role {
                Role::Service => None,
                _ => p.user.as_deref(),
            },
        };
        may_answer(&settings, who, &record.new.user_id).map_err(|e| match e {
            AnswerRefusal::NotApprover | AnswerRefusal::OwnRequest => {
                ServiceError::PermissionDenied(e.to_string())
            }
        })
    }

    /// Who may list and watch a team's requests: its admins and approvers.
    pub(super) async fn check_lister(&self, p: &Principal, team: &str) -> Result<(), ServiceError> {
        if authorize(p, team, Action::ReadAudit).is_ok() {
            return Ok(());
        }
        authorize(p, team, Action::ReadTeam)?;
        let admin = self.hub.admin(team).await?;
        let settings = admin
            .head()
            .approvals
            .as_deref()
            .cloned()
            .unwrap_or_default();
        let user = p.user.as_deref().filter(|_| p.role == Role::Member);
        let approver = user.is_some_and(|u| {
            settings.approver_role == approvals::ApproverRole::Member
                || settings.approver_users.iter().any(|a| a == u)
        });
        if approver {
            Ok(())
        } else {
            Err(ServiceError::PermissionDenied(
                "only the team's admins and approvers may list its approval requests".into(),
            ))
        }
    }

    pub async fn list_approvals(
        &self,
        p: &Principal,
        team: &str,
        pending_only: bool,
        limit: u32,
    ) -> Result<Vec<ApprovalView>, ServiceError> {
        let (team, _) = own_subject(p, team, "");
        let team: &str = &check_id("team_id", team)?;
        self.check_lister(p, team).await?;
        let limit = match limit {
            0 => 100,
            n => n.min(MAX_LIST),
        };
        let now = now_ms();
        let records = self.store.list_approvals(team, pending_only, limit).await?;
        Ok(records
            .into_iter()
            .map(|r| ApprovalView::at(r, now))
            .filter(|v| !pending_only || v.state == ApprovalState::Pending)
            .collect())
    }

    pub async fn get_approval(
        &self,
        p: &Principal,
        id: &str,
    ) -> Result<ApprovalView, ServiceError> {
        let record = self.readable(p, id).await?;
        Ok(ApprovalView::at(record, now_ms()))
    }

    /// Writes an expiry for a pending request past its deadline (once, on any replica)
    /// and returns the request as it then stands.
    pub(super) async fn expire(
        &self,
        record: ApprovalRecord,
    ) -> Result<ApprovalRecord, ServiceError> {
        let answer = Answer {
            state: ApprovalState::Expired,
            by: String::new(),
            at_ms: now_ms().max(record.new.deadline_ms),
            scope: None,
            grant: None,
            reason: None,
            allowlist_entry: None,
            allowlist_revision: None,
        };
        match self
            .store
            .answer_approval(&record.new.request_id, &answer)
            .await?
        {
            Answered::Now(r) => {
                self.hub.approvals_changed(&r.new.team_id);
                Ok(r)
            }
            Answered::Already(r) => Ok(r),
            Answered::Missing => Err(not_found(&record.new.request_id)),
        }
    }

    /// Refuses an answer to a request that is no longer pending, saying what it is.
    async fn still_pending(&self, record: ApprovalRecord) -> Result<ApprovalRecord, ServiceError> {
        let record = if record.state == ApprovalState::Pending && now_ms() >= record.new.deadline_ms
        {
            self.expire(record).await?
        } else {
            record
        };
        let id = &record.new.request_id;
        let by = record.answered_by.as_deref().unwrap_or("");
        let at = record.answered_at_ms.map(rfc3339).unwrap_or_default();
        match record.state {
            ApprovalState::Pending => Ok(record),
            ApprovalState::Approved => Err(ServiceError::FailedPrecondition(format!(
                "approval request {id} was already approved by {by} at {at}: nothing to answer"
            ))),
            ApprovalState::Denied => Err(ServiceError::FailedPrecondition(format!(
                "approval request {id} was already denied by {by} at {at}: nothing to answer"
            ))),
            ApprovalState::Expired => Err(ServiceError::FailedPrecondition(format!(
                "approval request {id} expired at {}: its call was refused; the agent must make it again",
                rfc3339(record.new.deadline_ms)
            ))),
            ApprovalState::Abandoned => Err(ServiceError::FailedPrecondition(format!(
                "approval request {id} was abandoned at {at}: the call that waited for it went away (its hook or proxy gave up), so approving it would let nothing run; the agent must make the call again"
            ))),
        }
    }

    pub async fn approve_request(
        &self,
        p: &Principal,
        id: &str,
        scope: ApprovalScope,
        note: &str,
    ) -> Result<ApprovalView, ServiceError> {
        let note = answer_reason("note", note, false)?;
        let record = self.answerable(p, id).await?;
        let team = record.new.team_id.clone();
        let settings = self
            .hub
            .admin(&team)
            .await?
            .head()
            .approvals
            .as_deref()
            .cloned()
            .unwrap_or_default();
        let now = now_ms();
        let max_grant = settings.max_grant();
        let until =
            |d: Duration| now.saturating_add(i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        let mut answer = Answer {
            state: ApprovalState::Approved,
            by: p.name.clone(),
            at_ms: now,
            scope: Some(scope.kind()),
            grant: None,
            reason: note,
            allowlist_entry: None,
            allowlist_revision: None,
        };
        match scope {
            ApprovalScope::Once => {}
            ApprovalScope::Session => {
                if record.new.session_id.is_empty() {
                    return Err(ServiceError::FailedPrecondition(format!(
                        "the call of request {id} came with no session id, so it cannot be approved for its session: approve it once or for a duration"
                    )));
                }
                // a session has no end the server sees: the team's longest grant bounds it
                answer.grant = Some(NewGrant {
                    session_id: Some(approvals::session_binding(
                        &record.new.principal,
                        &record.new.client,
                        &record.new.session_id,
                    )),
                    expires_at_ms: until(max_grant),
                });
            }
            ApprovalScope::Duration(d) => {
                if d.is_zero() || d > max_grant {
                    return Err(ServiceError::invalid(
                        "duration_seconds",
                        format!(
                            "{} is not within 1 to {} seconds (the team's approvals.max_grant_seconds): choose a duration in that range",
                            d.as_secs(),
                            max_grant.as_secs()
                        ),
                    ));
                }
                answer.grant = Some(NewGrant {
                    session_id: None,
                    expires_at_ms: until(d),
                });
            }
            ApprovalScope::Allowlist { expected_revision } => {
                let (entry, revision) =
                    self.add_needed_entry(p, &record, expected_revision).await?;
                answer.allowlist_entry = Some(entry);
                answer.allowlist_revision = Some(revision);
            }
        }
        self.record_answer(p, &record, answer).await
    }

    pub async fn deny_request(
        &self,
        p: &Principal,
        id: &str,
        reason: &str,
    ) -> Result<ApprovalView, ServiceError> {
        let reason = answer_reason("reason", reason, true)?;
        let record = self.answerable(p, id).await?;
        let answer = Answer {
            state: ApprovalState::Denied,
            by: p.name.clone(),
            at_ms: now_ms(),
            scope: None,
            grant: None,
            reason,
            allowlist_entry: None,
            allowlist_revision: None,
        };
        self.record_answer(p, &record, answer).await
    }

    async fn record_answer(
        &self,
        p: &Principal,
        record: &ApprovalRecord,
        answer: Answer,
    ) -> Result<ApprovalView, ServiceError> {
        let id = &record.new.request_id;
        match self.store.answer_approval(id, &answer).await? {
            Answered::Now(r) => {
                self.hub.approvals_changed(&r.new.team_id);
                self.log_answer(p, &r).await;
                Ok(ApprovalView::at(r, now_ms()))
            }
            // another approver (or the deadline) was first
            Answered::Already(r) => self
                .still_pending(r)
                .await
                .map(|r| ApprovalView::at(r, now_ms())),
            Answered::Missing => Err(not_found(id)),
        }
    }

    /// An answer is a decision of its own: the approver (the principal) decided the
    /// requester's call, ALLOW `APPROVED` or DENY `APPROVAL_DENIED`, at the revision
    /// the ASK saw. A DENY's record is never shed.
    async fn log_answer(&self, approver: &Principal, r: &ApprovalRecord) {
        let Some((outcome, reason, _)) = answer_of(r, r.state) else {
            return;
        };
        let revision = r.new.decision.revision;
        let agent = AgentSpec {
            id: (!r.new.agent_id.is_empty()).then(|| r.new.agent_id.clone()),
            ..AgentSpec::default()
        };
        let origin = RequestOrigin {
            source: DecisionSource::Approval,
            client: r.new.client.clone(),
            tool_use_id: String::new(),
        };
        let matched = r.allowlist_entry.as_deref();
        let decided = (outcome, reason, matched);
        let shown = shown_of(&r.new.call);
        if let Some(record) = self.decision_record(
            approver,
            &r.new.team_id,
            &r.new.user_id,
            &agent,
            &origin,
            revision,
            &shown,
            decided,
        ) {
            self.log_decision(record, outcome == Outcome::Deny).await;
        }
    }
}
