//! `ApprovalService`: central approvals over the service's approval methods, and the
//! conversion of a request to its message.

use super::{Api, principal};
use crate::policy::Outcome;
use crate::proto::v1 as pb;
use crate::service::{
    ApprovalDecision, ApprovalScope, ApprovalState, ApprovalView, AwaitEvent, ScopeKind,
    ServiceError, WatchApprovalsEvent,
};
use futures::{Stream, StreamExt as _};
use pb::approval_service_server::ApprovalService;
use std::pin::Pin;
use std::time::Duration;
use tonic::{Request, Response, Status};
use toolgate_proto::convert::{call_to_pb, outcome_to_pb, reason_to_pb, timestamp};

pub use pb::approval_service_server::ApprovalServiceServer;

fn state_to_pb(s: ApprovalState) -> pb::ApprovalState {
    match s {
        ApprovalState::Pending => pb::ApprovalState::Pending,
        ApprovalState::Approved => pb::ApprovalState::Approved,
        ApprovalState::Denied => pb::ApprovalState::Denied,
        ApprovalState::Expired => pb::ApprovalState::Expired,
        ApprovalState::Abandoned => pb::ApprovalState::Abandoned,
    }
}

fn scope_to_pb(s: Option<ScopeKind>) -> pb::ApprovalScope {
    match s {
        Some(ScopeKind::Once) => pb::ApprovalScope::Once,
        Some(ScopeKind::Session) => pb::ApprovalScope::Session,
        Some(ScopeKind::Duration) => pb::ApprovalScope::Duration,
        Some(ScopeKind::Allowlist) => pb::ApprovalScope::Allowlist,
        None => pb::ApprovalScope::Unspecified,
    }
}

/// The stored ASK as the decision message it was.
fn stored_decision(d: ApprovalDecision) -> pb::Decision {
    pb::Decision {
        outcome: outcome_to_pb(d.outcome) as i32,
        need_approval: d.outcome != Outcome::Allow,
        reason: reason_to_pb(d.reason) as i32,
        message: d.message,
        matched_entry: d.matched_entry.unwrap_or_default(),
        candidates_for_allowlist: d
            .candidates
            .into_iter()
            .map(|c| pb::AllowlistCandidate {
                server: c.server,
                tool: c.tool,
            })
            .collect(),
        command_candidates: d.command_candidates,
        revision: d.revision,
        ..pb::Decision::default()
    }
}

pub fn approval_to_pb(v: ApprovalView) -> pb::Approval {
    let r = v.record;
    let n = r.new;
    let decision = stored_decision(n.decision);
    let answer = v.answer.map(|(outcome, reason, message)| pb::Decision {
        outcome: outcome_to_pb(outcome) as i32,
        need_approval: outcome != Outcome::Allow,
        reason: reason_to_pb(reason) as i32,
        message,
        revision: r.allowlist_revision.unwrap_or(decision.revision),
        ..pb::Decision::default()
    });
    pb::Approval {
        request_id: n.request_id,
        team_id: n.team_id,
        user_id: n.user_id,
        principal: n.principal,
        agent_id: n.agent_id,
        client: n.client,
        session_id: n.session_id,
        call: Some(call_to_pb(&n.call.call)),
        summary: n.summary,
        decision: Some(decision),
        created_at: timestamp(n.created_at_ms),
        deadline: timestamp(n.deadline_ms),
        state: state_to_pb(v.state) as i32,
        answered_by: r.answered_by.unwrap_or_default(),
        answered_at: r.answered_at_ms.and_then(timestamp),
        scope: scope_to_pb(r.scope) as i32,
        grant_expires_at: r.grant_expires_at_ms.and_then(timestamp),
        answer_reason: r.answer_reason.unwrap_or_default(),
        answer,
        allowlist_entry: r.allowlist_entry.unwrap_or_default(),
        allowlist_revision: r.allowlist_revision.unwrap_or(0),
    }
}

fn heartbeat() -> pb::Heartbeat {
    pb::Heartbeat {
        at: Some(std::time::SystemTime::now().into()),
    }
}

type AwaitStream = Pin<Box<dyn Stream<Item = Result<pb::AwaitApprovalResponse, Status>> + Send>>;
type WatchStream = Pin<Box<dyn Stream<Item = Result<pb::WatchApprovalsResponse, Status>> + Send>>;

#[tonic::async_trait]
impl ApprovalService for Api {
    async fn list_approvals(
        &self,
        req: Request<pb::ListApprovalsRequest>,
    ) -> Result<Response<pb::ListApprovalsResponse>, Status> {
        let p = principal(&req)?;
        let r = req.into_inner();
        let views = self
            .service
            .list_approvals(&p, &r.team_id, r.pending_only, r.limit)
            .await?;
        Ok(Response::new(pb::ListApprovalsResponse {
            approvals: views.into_iter().map(approval_to_pb).collect(),
        }))
    }

    type WatchApprovalsStream = WatchStream;

    async fn watch_approvals(
        &self,
        req: Request<pb::WatchApprovalsRequest>,
    ) -> Result<Response<Self::WatchApprovalsStream>, Status> {
        use pb::watch_approvals_response::Event;
        let p = principal(&req)?;
        let r = req.into_inner();
        // counted with the principal's other streams while open
        let slot = self.open_stream(&p)?;
        let stream = self.service.watch_approvals(&p, &r.team_id).await?;
        let stream = stream.map(move |e| {
            let _held = &slot;
            let event = match e? {
                WatchApprovalsEvent::Snapshot(pending) => Event::Snapshot(pb::ApprovalSnapshot {
                    pending: pending.into_iter().map(approval_to_pb).collect(),
                }),
                WatchApprovalsEvent::Approval(v) => Event::Approval(approval_to_pb(*v)),
                WatchApprovalsEvent::Heartbeat => Event::Heartbeat(heartbeat()),
            };
            Ok(pb::WatchApprovalsResponse { event: Some(event) })
        });
        Ok(Response::new(Box::pin(stream)))
    }

    async fn get_approval(
        &self,
        req: Request<pb::GetApprovalRequest>,
    ) -> Result<Response<pb::GetApprovalResponse>, Status> {
        let p = principal(&req)?;
        let r = req.into_inner();
        let view = self.service.get_approval(&p, &r.request_id).await?;
        Ok(Response::new(pb::GetApprovalResponse {
            approval: Some(approval_to_pb(view)),
        }))
    }

    type AwaitApprovalStream = AwaitStream;

    async fn await_approval(
        &self,
        req: Request<pb::AwaitApprovalRequest>,
    ) -> Result<Response<Self::AwaitApprovalStream>, Status> {
        use pb::await_approval_response::Event;
        let p = principal(&req)?;
        let r = req.into_inner();
        // counted with the principal's other streams while open
        let slot = self.open_stream(&p)?;
        let stream = self.service.await_approval(&p, &r.request_id).await?;
        let stream = stream.map(move |e| {
            let _held = &slot;
            let event = match e? {
                AwaitEvent::Approval(v) => Event::Approval(approval_to_pb(*v)),
                AwaitEvent::Heartbeat => Event::Heartbeat(heartbeat()),
            };
            Ok(pb::AwaitApprovalResponse { event: Some(event) })
        });
        Ok(Response::new(Box::pin(stream)))
    }

    async fn approve_request(
        &self,
        req: Request<pb::ApproveRequestRequest>,
    ) -> Result<Response<pb::ApproveRequestResponse>, Status> {
        let p = principal(&req)?;
        let r = req.into_inner();
        let scope = match pb::ApprovalScope::try_from(r.scope) {
            Ok(pb::ApprovalScope::Unspecified | pb::ApprovalScope::Once) => ApprovalScope::Once,
            Ok(pb::ApprovalScope::Session) => ApprovalScope::Session,
            Ok(pb::ApprovalScope::Duration) => {
                ApprovalScope::Duration(Duration::from_secs(r.duration_seconds))
            }
            Ok(pb::ApprovalScope::Allowlist) => ApprovalScope::Allowlist {
                expected_revision: r.expected_revision,
            },
            Err(_) => {
                return Err(ServiceError::InvalidArgument {
                    field: "scope".into(),
                    message: format!(
                        "{} is not an approval scope: use once, session, duration or allowlist",
                        r.scope
                    ),
                }
                .into());
            }
        };
        let view = self
            .service
            .approve_request(&p, &r.request_id, scope, &r.note)
            .await?;
        Ok(Response::new(pb::ApproveRequestResponse {
            approval: Some(approval_to_pb(view)),
        }))
    }

    async fn deny_request(
        &self,
        req: Request<pb::DenyRequestRequest>,
    ) -> Result<Response<pb::DenyRequestResponse>, Status> {
        let p = principal(&req)?;
        let r = req.into_inner();
        let view = self
            .service
            .deny_request(&p, &r.request_id, &r.reason)
            .await?;
        Ok(Response::new(pb::DenyRequestResponse {
            approval: Some(approval_to_pb(view)),
        }))
    }
}
