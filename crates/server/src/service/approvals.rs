//! Central approvals: an ASK that goes to the team's approvers becomes a durable
//! request; approvers list, watch and answer it; the waiting side follows it to its
//! answer (or its deadline); grants for the session or a time let later calls by.
//!
//! Every state change is one conditional write in the store, so two approvers on two
//! replicas cannot both answer; every replica hears of it through the hub's approval
//! notices (PostgreSQL NOTIFY between replicas) and re-reads the store.

use super::decisions::{DecisionSource, Origin, Shown};
use super::webhook::WebhookEvent;
use super::{Service, ServiceError, check_id, own_subject};
use crate::auth::{Action, Principal, Role, authorize};
use crate::hub::ApprovalsChanged;
use crate::policy::approvals::{
    self, AnswerRefusal, Answerer, ApprovalSettings, call_key, call_summary, may_answer,
};
use crate::policy::roles::AgentSpec;
use crate::policy::{
    AddOutcome, AdminControls, Call, Candidate, CompiledAdmin, CompiledUser, Decision, Outcome,
    Reason, decide_at,
};
use crate::secrets;
use crate::store::{
    Answer, Answered, ApprovalCall, ApprovalDecision, ApprovalRecord, ApprovalState, NewApproval,
    NewGrant, Original, ScopeKind, now_ms,
};
use futures::Stream;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast::error::RecvError;

/// The longest denial reason or approver note kept.
pub const MAX_ANSWER_REASON: usize = 1000;
/// The longest summary of a call shown to approvers.
const SUMMARY_CHARS: usize = 200;
/// The longest client name or session id taken from a caller.
const MAX_LABEL: usize = 128;
/// Most requests a list returns.
pub const MAX_LIST: u32 = 1000;
/// Pending requests a team may hold at once: a member's agent cannot fill the store.
pub const MAX_PENDING_PER_TEAM: u32 = 1000;
/// The longest working directory a grant is bound to.
const MAX_CWD_BYTES: usize = 4096;
/// How long a request stays pending once its last waiter went away, for that waiter
/// to come back (a client resumes a broken wait within two seconds); then it is
/// abandoned.
const ABANDON_GRACE: Duration = Duration::from_secs(3);

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
pub enum Scope {
    Once,
    Session,
    Duration(Duration),
    Allowlist { expected_revision: Option<u64> },
}

impl Scope {
    fn kind(self) -> ScopeKind {
        match self {
            Self::Once => ScopeKind::Once,
            Self::Session => ScopeKind::Session,
            Self::Duration(_) => ScopeKind::Duration,
            Self::Allowlist { .. } => ScopeKind::Allowlist,
        }
    }
}

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
fn answer_of(r: &ApprovalRecord, state: ApprovalState) -> Option<(Outcome, Reason, String)> {
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

fn rfc3339(ms: i64) -> String {
    let t = std::time::UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0));
    humantime::format_rfc3339_seconds(t).to_string()
}

/// A request's call as stored: masked, with the original's SHA-256 and length and
/// whether the masked call decides as it did.
fn stored_call(shown: &Shown<'_>, cwd: Option<&str>) -> ApprovalCall {
    ApprovalCall {
        call: shown.call().clone(),
        cwd: cwd.map(|c| secrets::mask(c).into_owned()),
        original: (!shown.sha256.is_empty()).then(|| Original {
            sha256: shown.sha256.clone(),
            bytes: u64::try_from(shown.bytes).unwrap_or(u64::MAX),
            redecidable: shown.masked.redecidable,
        }),
    }
}

/// [`stored_call`] read back (a request stored before masking kept its call whole).
fn shown_of(stored: &ApprovalCall) -> Shown<'_> {
    match &stored.original {
        Some(o) => Shown::kept(
            &stored.call,
            o.redecidable,
            o.sha256.clone(),
            usize::try_from(o.bytes).unwrap_or(0),
        ),
        None => Shown::of(&stored.call),
    }
}

/// What a grant is keyed by in the store: the SHA-256 of the call spelt one way
/// (the spelling holds the command line, whose secrets are never stored).
fn grant_key(call: &Call, cwd: Option<&str>) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(call_key(call, cwd).as_bytes()))
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
            .filter(|a| a.mode != approvals::ApprovalMode::Off)
    }

    /// After a decision: an ASK covered by a grant is ALLOWed (`APPROVED`), and an ASK
    /// that goes to the team's approvers becomes a request (the ticket to wait on).
    /// Anything else comes back as it was.
    #[allow(clippy::too_many_arguments)]
    pub async fn settle_ask(
        &self,
        p: &Principal,
        team: &str,
        user: &str,
        call: &Call,
        decision: Decision,
        revision: u64,
        agent_id: Option<&str>,
        ask: &ApprovalAsk,
    ) -> Result<(Decision, Option<Ticket>), ServiceError> {
        if decision.outcome != Outcome::Ask {
            return Ok((decision, None));
        }
        let (team, user) = own_subject(p, team, user);
        let team: &str = &check_id("team_id", team)?;
        let user: &str = &check_id("user_id", user)?;
        let admin = self.hub.admin(team).await?;
        let Some(settings) = Self::approval_settings(admin.head()) else {
            return Ok((decision, None));
        };
        let client = label("approval.client", &ask.client)?;
        let session = match ask.session_id.as_deref() {
            Some(s) if !s.is_empty() => Some(check_id("approval.session_id", s)?.into_owned()),
            _ => None,
        };
        let cwd = ask.cwd.as_deref().filter(|c| !c.is_empty());
        if let Some(cwd) = cwd
            && (cwd.len() > MAX_CWD_BYTES || cwd.chars().any(char::is_control))
        {
            return Err(ServiceError::invalid(
                "call.arguments.cwd",
                format!(
                    "must be at most {MAX_CWD_BYTES} bytes without control characters: send the directory the agent works in"
                ),
            ));
        }
        let key = grant_key(call, cwd);
        // a session grant is the session of this principal and client only
        let bound = session
            .as_deref()
            .map(|s| approvals::session_binding(&p.name, &client, s));
        // the request, its webhook and its records show the call masked
        let shown = Shown::of(call);
        let now = now_ms();
        if let Some((by, until)) = self
            .store
            .find_grant(team, user, bound.as_deref(), &key, now)
            .await?
        {
            let granted = Decision {
                outcome: Outcome::Allow,
                reason: Reason::Approved,
                detail: Some(Arc::from(format!(
                    "{} may run: approved by {by} until {}",
                    call_summary(shown.call(), SUMMARY_CHARS),
                    rfc3339(until)
                ))),
                candidates: Vec::new(),
                ..decision
            };
            // the ASK was logged as decided; the grant that let it run is logged too
            let agent = AgentSpec {
                id: agent_id.map(str::to_owned),
                ..AgentSpec::default()
            };
            let origin = Origin {
                source: DecisionSource::Approval,
                client: client.clone(),
                tool_use_id: String::new(),
            };
            let decided = (Outcome::Allow, Reason::Approved, Some(by.as_str()));
            if let Some(record) =
                self.decision_record(p, team, user, &agent, &origin, revision, &shown, decided)
            {
                self.log_decision(record, false).await;
            }
            return Ok((granted, None));
        }
        if !ask.can_wait || !settings.goes_central(ask.interactive) {
            return Ok((decision, None));
        }
        let pending = self
            .store
            .list_approvals(team, true, MAX_PENDING_PER_TEAM)
            .await?;
        if pending.iter().filter(|r| r.new.deadline_ms > now).count()
            >= MAX_PENDING_PER_TEAM as usize
        {
            // refused, not queued: the ASK goes back as it was (never an ALLOW)
            tracing::warn!(team = %team, "approvals: too many pending requests; the ASK is returned as it is");
            return Ok((decision, None));
        }
        let deadline =
            now.saturating_add(i64::try_from(settings.deadline().as_millis()).unwrap_or(i64::MAX));
        let new = NewApproval {
            request_id: format!("apr_{}", hex::encode(rand::random::<[u8; 12]>())),
            team_id: team.to_owned(),
            user_id: user.to_owned(),
            principal: p.name.clone(),
            agent_id: agent_id.unwrap_or_default().to_owned(),
            client,
            session_id: session.unwrap_or_default(),
            call: stored_call(&shown, cwd),
            call_key: key,
            summary: call_summary(shown.call(), SUMMARY_CHARS),
            decision: ApprovalDecision::of(
                &secrets::mask_decision(&decision),
                shown.call(),
                revision,
            ),
            created_at_ms: now,
            deadline_ms: deadline,
        };
        self.store.create_approval(&new).await?;
        self.hub.approvals_changed(team);
        if !settings.webhook_url.is_empty() {
            self.webhook.post(WebhookEvent {
                url: settings.webhook_url.clone(),
                body: webhook_body(&new),
            });
        }
        // the ASK itself was logged where it was decided; the answer is logged when given
        let ticket = Ticket {
            request_id: new.request_id,
            deadline_ms: deadline,
        };
        Ok((decision, Some(ticket)))
    }

    /// A request, for anyone of its team who may evaluate for its user or answer it.
    async fn readable(&self, p: &Principal, id: &str) -> Result<ApprovalRecord, ServiceError> {
        let id = label("request_id", id)?;
        let record = self
            .store
            .get_approval(&id)
            .await?
            .ok_or_else(|| not_found(&id))?;
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
    async fn check_lister(&self, p: &Principal, team: &str) -> Result<(), ServiceError> {
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
    async fn expire(&self, record: ApprovalRecord) -> Result<ApprovalRecord, ServiceError> {
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
        scope: Scope,
        note: &str,
    ) -> Result<ApprovalView, ServiceError> {
        let note = answer_reason("note", note, false)?;
        let id = label("request_id", id)?;
        let record = self
            .store
            .get_approval(&id)
            .await?
            .ok_or_else(|| not_found(&id))?;
        self.check_approver(p, &record).await?;
        let record = self.still_pending(record).await?;
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
            Scope::Once => {}
            Scope::Session => {
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
            Scope::Duration(d) => {
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
            Scope::Allowlist { expected_revision } => {
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
        let id = label("request_id", id)?;
        let record = self
            .store
            .get_approval(&id)
            .await?
            .ok_or_else(|| not_found(&id))?;
        self.check_approver(p, &record).await?;
        let record = self.still_pending(record).await?;
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
        let origin = Origin {
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

    /// Adds the entry the request's call would need to the allowlist that decides it
    /// (the team's while its admin controls decide, else the user's own), by seed
    /// 001's add rule, through the normal settings write; the entry and the revision.
    async fn add_needed_entry(
        &self,
        p: &Principal,
        record: &ApprovalRecord,
        expected: Option<u64>,
    ) -> Result<(String, u64), ServiceError> {
        let team = &record.new.team_id;
        let user = &record.new.user_id;
        let d = &record.new.decision;
        let reason = d.reason;
        let mcp = d
            .candidates
            .first()
            .map(|c| (c.server.clone(), c.tool.clone()));
        let commands = &d.command_candidates;
        let call = &record.new.call.call;
        let cwd = record.new.call.cwd.as_deref();
        let id = record.new.request_id.as_str();
        // the admin's list where it decides (a NOT_IN_ADMIN_ALLOWLIST call names no
        // candidate: its server and tool are the entry)
        let admin_mcp = match (reason, call) {
            (
                Reason::NotInAdminAllowlist,
                Call::Mcp { server, tool } | Call::McpAction { server, tool, .. },
            ) => Some((server.clone(), tool.clone())),
            _ => None,
        };
        let admin = self.hub.admin(team).await?;
        let controlled = admin.head().enabled;
        for attempt in 0..3 {
            let admin = if attempt == 0 {
                admin.clone()
            } else {
                self.hub.admin(team).await?
            };
            let mut controls = admin.stored().doc;
            let revision = expected.unwrap_or(admin.revision());
            let entry = if let Some((server, tool)) = admin_mcp
                .clone()
                .or_else(|| mcp.clone().filter(|_| controlled))
            {
                let entry = crate::policy::format_entry(&server, &tool);
                match crate::policy::add_mcp_entry(&controls.mcp_tool_allowlist, &server, &tool)
                    .map_err(|e| ServiceError::entries("", e))?
                {
                    AddOutcome::Added(list) => controls.mcp_tool_allowlist = list,
                    AddOutcome::AlreadyPresent | AddOutcome::CoveredBy(_) => {
                        return Ok((entry, admin.revision()));
                    }
                }
                entry
            } else if let Some((server, tool)) = mcp.clone() {
                let change = self.add_to_allowlist(p, team, user, &server, &tool).await?;
                return Ok((
                    crate::policy::format_entry(&server, &tool),
                    change.settings.revision,
                ));
            } else if !commands.is_empty() && controlled {
                let eff = self.hub.effective(team, user).await?;
                let needed = needed_commands(id, commands, &record.new.call, |extra| {
                    let mut c = controls.clone();
                    c.allowed.extend(extra.iter().cloned());
                    let admin = CompiledAdmin::compile(&c).ok()?;
                    let files = &eff.tool_actions;
                    Some(decide_at(files, &admin, &eff.user.compiled, call, cwd))
                })?;
                for c in &needed {
                    if !controls.allowed.contains(c) {
                        controls.allowed.push(c.clone());
                    }
                }
                needed.join(", ")
            } else if !commands.is_empty() {
                let eff = self.hub.effective(team, user).await?;
                let mut settings = eff.user.stored.doc.clone();
                let needed = needed_commands(id, commands, &record.new.call, |extra| {
                    let mut s = settings.clone();
                    s.command_allowlist.extend(extra.iter().cloned());
                    let user = CompiledUser::compile(&s).ok()?;
                    let files = &eff.tool_actions;
                    Some(decide_at(files, &eff.admin.compiled, &user, call, cwd))
                })?;
                let commands = needed;
                for c in &commands {
                    if !settings.command_allowlist.contains(c) {
                        settings.command_allowlist.push(c.clone());
                    }
                }
                let stored = self
                    .update_user(
                        p,
                        team,
                        user,
                        settings,
                        expected.or(Some(eff.user.stored.revision)),
                    )
                    .await?;
                return Ok((commands.join(", "), stored.revision));
            } else {
                return Err(ServiceError::FailedPrecondition(format!(
                    "the call of request {} was asked about for {}, which no allowlist entry changes: approve it once, for the session or for a duration",
                    record.new.request_id,
                    reason.as_str()
                )));
            };
            match self.update_admin(p, team, controls, Some(revision)).await {
                Ok(stored) => return Ok((entry, stored.revision)),
                // a concurrent write: read again, unless the caller named the revision
                Err(ServiceError::Conflict { .. }) if expected.is_none() && attempt < 2 => {}
                Err(e) => return Err(e),
            }
        }
        Err(ServiceError::Unavailable(
            "the team's settings kept changing: approve again".into(),
        ))
    }

    /// The request as it stands, then (when it is answered or its deadline passes)
    /// its final state, and the stream ends. Heartbeats every `heartbeat`; ends with
    /// `Unavailable` on shutdown (the caller resumes with the same id).
    pub async fn await_approval(
        self: &Arc<Self>,
        p: &Principal,
        id: &str,
    ) -> Result<impl Stream<Item = Result<AwaitEvent, ServiceError>> + use<>, ServiceError> {
        // subscribe first: an answer committed from here on wakes the loop
        let mut notices = self.hub.approval_notices();
        let record = self.readable(p, id).await?;
        let this = self.clone();
        let id = record.new.request_id.clone();
        let team: Arc<str> = Arc::from(record.new.team_id.as_str());
        let heartbeat = self.heartbeat;
        let shutdown = self.shutdown.clone();
        // only the principal that asked is the waiting caller (an approver may follow too)
        let waits = p.name == record.new.principal;
        Ok(async_stream::try_stream! {
            let mut waiting = waits.then(|| Waiting::new(this.clone(), &id));
            let mut record = record;
            let mut sent_first = false;
            loop {
                let now = now_ms();
                if record.state == ApprovalState::Pending && now >= record.new.deadline_ms {
                    record = this.expire(record).await?;
                }
                let view = ApprovalView::at(record, now_ms());
                let done = view.state != ApprovalState::Pending;
                if done || !sent_first {
                    sent_first = true;
                    yield AwaitEvent::Approval(Box::new(view.clone()));
                }
                if done {
                    if let Some(w) = waiting.as_mut() {
                        w.answered = true;
                    }
                    return;
                }
                let wait = Duration::from_millis(
                    u64::try_from(view.record.new.deadline_ms - now_ms()).unwrap_or(0),
                );
                let deadline = tokio::time::sleep(wait);
                tokio::pin!(deadline);
                let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + heartbeat, heartbeat);
                loop {
                    let woke = tokio::select! {
                        n = notices.recv() => match n {
                            Ok(ApprovalsChanged::Team(t)) if t != team => Wake::Other,
                            Ok(_) | Err(RecvError::Lagged(_)) => Wake::Changed,
                            Err(RecvError::Closed) => Wake::Stopping,
                        },
                        () = &mut deadline => Wake::Changed,
                        _ = tick.tick() => Wake::Tick,
                        () = shutdown.cancelled() => Wake::Stopping,
                    };
                    match woke {
                        Wake::Other => {}
                        Wake::Changed => break,
                        Wake::Tick => yield AwaitEvent::Heartbeat,
                        Wake::Stopping => Err(stopping())?,
                    }
                }
                record = this
                    .store
                    .get_approval(&id)
                    .await?
                    .ok_or_else(|| not_found(&id))?;
            }
        })
    }

    /// The team's pending requests, then each request as it changes (here or on
    /// another replica), with heartbeats; ends with `Unavailable` on shutdown.
    pub async fn watch_approvals(
        self: &Arc<Self>,
        p: &Principal,
        team: &str,
    ) -> Result<impl Stream<Item = Result<WatchApprovalsEvent, ServiceError>> + use<>, ServiceError>
    {
        let (team, _) = own_subject(p, team, "");
        let team: String = check_id("team_id", team)?.into_owned();
        self.check_lister(p, &team).await?;
        let mut notices = self.hub.approval_notices();
        let this = self.clone();
        let heartbeat = self.heartbeat;
        let shutdown = self.shutdown.clone();
        let team_key: Arc<str> = Arc::from(team.as_str());
        Ok(async_stream::try_stream! {
            // what each request was last sent as; bounded by the window re-read below
            let mut seen: std::collections::HashMap<String, ApprovalState> = Default::default();
            let now = now_ms();
            let pending: Vec<ApprovalView> = this
                .store
                .list_approvals(&team, true, MAX_LIST)
                .await?
                .into_iter()
                .map(|r| ApprovalView::at(r, now))
                .filter(|v| v.state == ApprovalState::Pending)
                .collect();
            for v in &pending {
                seen.insert(v.record.new.request_id.clone(), v.state);
            }
            yield WatchApprovalsEvent::Snapshot(pending);
            let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + heartbeat, heartbeat);
            loop {
                let woke = tokio::select! {
                    n = notices.recv() => match n {
                        Ok(ApprovalsChanged::Team(t)) if t != team_key => Wake::Other,
                        Ok(_) | Err(RecvError::Lagged(_)) => Wake::Changed,
                        Err(RecvError::Closed) => Wake::Stopping,
                    },
                    // a quiet tick also shows the requests whose deadline passed
                    _ = tick.tick() => Wake::Tick,
                    () = shutdown.cancelled() => Wake::Stopping,
                };
                let beat = match woke {
                    Wake::Other => continue,
                    Wake::Changed => false,
                    Wake::Tick => true,
                    Wake::Stopping => Err(stopping())?,
                };
                let now = now_ms();
                let recent = this.store.list_approvals(&team, false, MAX_LIST).await?;
                let mut changed = Vec::new();
                let mut window = std::collections::HashMap::with_capacity(recent.len());
                for r in recent {
                    let v = ApprovalView::at(r, now);
                    let id = v.record.new.request_id.clone();
                    if seen.get(&id) != Some(&v.state) {
                        changed.push(v.clone());
                    }
                    window.insert(id, v.state);
                }
                seen = window;
                // oldest first, as they happened
                for v in changed.into_iter().rev() {
                    yield WatchApprovalsEvent::Approval(Box::new(v));
                }
                if beat {
                    yield WatchApprovalsEvent::Heartbeat;
                }
            }
        })
    }
}

/// What woke a waiting stream.
enum Wake {
    /// Another team's notice.
    Other,
    /// This team's requests changed (or may have), or a deadline passed.
    Changed,
    Tick,
    Stopping,
}

fn stopping() -> ServiceError {
    ServiceError::Unavailable(
        "the server is stopping: call again (another replica, or this one once it restarts)".into(),
    )
}

/// One event of `AwaitApproval`.
#[derive(Debug, Clone)]
pub enum AwaitEvent {
    Approval(Box<ApprovalView>),
    Heartbeat,
}

/// One event of `WatchApprovals`.
#[derive(Debug, Clone)]
pub enum WatchApprovalsEvent {
    Snapshot(Vec<ApprovalView>),
    Approval(Box<ApprovalView>),
    Heartbeat,
}

/// The fewest of a request's command candidates that, added in order, let its call
/// by: one an entry added before it already covers (`npm test`, run by `timeout 60
/// npm test`) is left out, so nothing broader than the call is allowed. `decide`
/// decides the call with the given entries added. A candidate holding a masked secret
/// (or a call kept masked that decides otherwise) names no real entry: refused.
fn needed_commands(
    id: &str,
    candidates: &[String],
    stored_call: &ApprovalCall,
    decide: impl Fn(&[String]) -> Option<Decision>,
) -> Result<Vec<String>, ServiceError> {
    let masked = candidates.iter().any(|c| secrets::holds_marker(c))
        || stored_call
            .original
            .as_ref()
            .is_some_and(|o| !o.redecidable);
    if masked {
        return Err(ServiceError::FailedPrecondition(format!(
            "the call of request {id} holds a secret, which the request keeps masked, so the allowlist entry it needs cannot be written from it: approve it once, for the session or for a duration, or add the entry by hand"
        )));
    }
    let mut chosen: Vec<String> = Vec::new();
    for c in candidates {
        let needed = decide(&chosen).is_none_or(|d| {
            d.candidates
                .iter()
                .any(|k| matches!(k, Candidate::Command(t) if t == c))
        });
        if needed {
            chosen.push(c.clone());
        }
    }
    if chosen.is_empty() {
        return Err(ServiceError::FailedPrecondition(format!(
            "the call of request {id} needs no allowlist entry as the lists stand now: approve it once"
        )));
    }
    Ok(chosen)
}

/// The approval waits open on this replica, by request id.
#[derive(Debug, Default)]
pub(super) struct Waiters(std::sync::Mutex<std::collections::HashMap<String, usize>>);

impl Waiters {
    fn lock(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, usize>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether a wait on `id` is open.
    fn waiting(&self, id: &str) -> bool {
        self.lock().contains_key(id)
    }
}

/// One open wait of the caller that asked. When it ends without the answer (the
/// caller went away; not the server stopping) and no other wait on the request opens
/// within [`ABANDON_GRACE`], the request is abandoned: it leaves the inbox and cannot
/// be approved, since its call will never run.
struct Waiting {
    service: Arc<Service>,
    id: String,
    answered: bool,
}

impl Waiting {
    fn new(service: Arc<Service>, id: &str) -> Self {
        *service
            .approval_waiters
            .lock()
            .entry(id.to_owned())
            .or_default() += 1;
        Self {
            service,
            id: id.to_owned(),
            answered: false,
        }
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        let last = {
            let mut open = self.service.approval_waiters.lock();
            match open.get_mut(&self.id) {
                Some(n) if *n > 1 => {
                    *n -= 1;
                    false
                }
                _ => {
                    open.remove(&self.id);
                    true
                }
            }
        };
        let stopping = self.service.shutdown.is_cancelled();
        if self.answered || !last || stopping {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let service = self.service.clone();
        let id = std::mem::take(&mut self.id);
        runtime.spawn(async move {
            tokio::select! {
                () = tokio::time::sleep(ABANDON_GRACE) => {}
                () = service.shutdown.cancelled() => return,
            }
            if !service.approval_waiters.waiting(&id) {
                service.abandon(&id).await;
            }
        });
    }
}

impl Service {
    /// Marks a pending request abandoned (once, on any replica).
    async fn abandon(&self, id: &str) {
        let answer = Answer {
            state: ApprovalState::Abandoned,
            by: String::new(),
            at_ms: now_ms(),
            scope: None,
            grant: None,
            reason: None,
            allowlist_entry: None,
            allowlist_revision: None,
        };
        match self.store.answer_approval(id, &answer).await {
            Ok(Answered::Now(r)) => {
                self.hub.approvals_changed(&r.new.team_id);
                tracing::info!(request = %id, "approval request abandoned: the call that waited for it went away");
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(error = %e, request = %id, "cannot mark an approval request abandoned: it stays pending until its deadline")
            }
        }
    }
}

/// The webhook's JSON: the request, and a Slack-compatible `text`.
fn webhook_body(a: &NewApproval) -> Value {
    let deadline = rfc3339(a.deadline_ms);
    json!({
        "text": format!(
            "toolgate: {} (team {}) asks to run `{}` — {}. Answer before {}: `toolgate approvals approve {}` or `toolgate approvals deny {} --reason …`",
            a.user_id,
            a.team_id,
            a.summary,
            a.decision.message,
            deadline,
            a.request_id,
            a.request_id,
        ),
        "request": {
            "request_id": a.request_id,
            "team_id": a.team_id,
            "user_id": a.user_id,
            "principal": a.principal,
            "agent_id": a.agent_id,
            "client": a.client,
            "session_id": a.session_id,
            "summary": a.summary,
            "call": a.call,
            "decision": a.decision,
            "created_at": rfc3339(a.created_at_ms),
            "deadline": deadline,
        },
        "links": {
            "approve": format!("toolgate approvals approve {}", a.request_id),
            "deny": format!("toolgate approvals deny {} --reason …", a.request_id),
            "api": format!("toolgate.v1.ApprovalService/ApproveRequest {{\"request_id\": \"{}\"}}", a.request_id),
        },
    })
}
