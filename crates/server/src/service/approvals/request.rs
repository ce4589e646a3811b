//! A request made: an ASK a grant covers is let by, one that goes to the team's
//! approvers is stored (its call masked) and announced to the webhook.

use super::{ApprovalAsk, Ticket, label, rfc3339};
use crate::auth::Principal;
use crate::policy::approvals::{self, call_key, call_summary};
use crate::policy::roles::AgentSpec;
use crate::policy::{Call, Decision, Outcome, Reason};
use crate::secrets;
use crate::service::decisions::{DecisionSource, RequestOrigin, Shown};
use crate::service::webhook::WebhookEvent;
use crate::service::{Service, ServiceError, check_id, own_subject};
use crate::store::{ApprovalCall, ApprovalDecision, NewApproval, Original, now_ms};
use serde_json::{Value, json};
use std::sync::Arc;

/// The longest summary of a call shown to approvers.
const SUMMARY_CHARS: usize = 200;
/// Pending requests a team may hold at once: a member's agent cannot fill the store.
pub const MAX_PENDING_PER_TEAM: u32 = 1000;
/// The longest working directory a grant is bound to.
const MAX_CWD_BYTES: usize = 4096;

/// A request's call as stored: masked, with the original's SHA-256 and length and
/// whether the masked call decides as it did.
pub(super) fn stored_call(shown: &Shown<'_>, cwd: Option<&str>) -> ApprovalCall {
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
pub(super) fn shown_of(stored: &ApprovalCall) -> Shown<'_> {
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

impl Service {
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
        // boxed: an ALLOW's or a DENY's future does not carry an ASK's store calls
        Box::pin(async move {
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
                let origin = RequestOrigin {
                    source: DecisionSource::Approval,
                    client: client.clone(),
                    tool_use_id: String::new(),
                };
                let decided = (Outcome::Allow, Reason::Approved, Some(by.as_str()));
                if let Some(record) =
                    self.decision_record(p, team, user, &agent, &origin, revision, &shown, decided)
                {
                    self.offer_decision(record);
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
        })
        .await
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
