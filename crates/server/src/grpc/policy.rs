//! `PolicyService`: decisions, `tools/list` filtering, the effective policy, the
//! watch stream and tampering reports.

use super::convert::{self, call_from_pb, decision_to_pb, effective_to_pb, managed_file_from_pb};
use super::{Api, principal};
use crate::proto::v1 as pb;
use crate::service::ServiceError;
use futures::Stream;
use pb::policy_service_server::PolicyService;
use std::pin::Pin;
use tonic::{Request, Response, Status};

type EventStream = Pin<Box<dyn Stream<Item = Result<pb::WatchPolicyResponse, Status>> + Send>>;

#[tonic::async_trait]
impl PolicyService for Api {
    async fn evaluate(
        &self,
        req: Request<pb::EvaluateRequest>,
    ) -> Result<Response<pb::EvaluateResponse>, Status> {
        let p = principal(&req)?;
        let r = req.into_inner();
        let mut call = r.call;
        let args =
            convert::arguments_from_pb(call.as_mut().and_then(|c| c.arguments.take()), &"call")
                .map_err(ServiceError::from)?;
        let call = call_from_pb(&"call", call).map_err(ServiceError::from)?;
        let origin = crate::service::RequestOrigin {
            source: crate::service::DecisionSource::Evaluate,
            client: r.client,
            tool_use_id: r.tool_use_id,
        };
        let agent = convert::agent_from_pb(r.agent);
        let (mut decisions, revision) = self
            .service
            .evaluate_from(
                &p,
                &r.team_id,
                &r.user_id,
                std::slice::from_ref(&call),
                r.explain,
                &agent,
                std::slice::from_ref(&args),
                &origin,
            )
            .await?;
        let decision = decisions
            .pop()
            .ok_or_else(|| ServiceError::Internal("no decision".into()))?;
        // an ASK may be covered by a grant, or go to the team's approvers (never a
        // check's: nobody is waiting for its answer)
        let ask = r
            .approval
            .filter(|_| !origin.is_check())
            .map(|a| crate::service::ApprovalAsk {
                can_wait: a.can_wait,
                interactive: a.interactive,
                client: a.client,
                session_id: Some(a.session_id)
                    .filter(|s| !s.is_empty())
                    .or(agent.session.clone()),
                cwd: args.cwd.clone(),
            });
        let (decision, ticket) = self
            .service
            .settle_ask(
                &p,
                &r.team_id,
                &r.user_id,
                &call,
                decision,
                revision,
                agent.id.as_deref(),
                &ask.unwrap_or_default(),
            )
            .await?;
        count_decisions(std::slice::from_ref(&decision));
        let mut reply = decision_to_pb(decision, &call, revision);
        reply.approval = ticket.map(|t| pb::ApprovalTicket {
            request_id: t.request_id,
            deadline: toolgate_proto::convert::timestamp(t.deadline_ms),
        });
        Ok(Response::new(pb::EvaluateResponse {
            decision: Some(reply),
        }))
    }

    async fn evaluate_batch(
        &self,
        req: Request<pb::EvaluateBatchRequest>,
    ) -> Result<Response<pb::EvaluateBatchResponse>, Status> {
        let p = principal(&req)?;
        let r = req.into_inner();
        // one pass, the arguments taken rather than copied
        let mut args = Vec::with_capacity(r.calls.len());
        let mut calls = Vec::with_capacity(r.calls.len());
        for (i, mut c) in r.calls.into_iter().enumerate() {
            let field = convert::BatchCall(i);
            args.push(
                convert::arguments_from_pb(c.arguments.take(), &field)
                    .map_err(ServiceError::from)?,
            );
            calls.push(call_from_pb(&field, Some(c)).map_err(ServiceError::from)?);
        }
        let origin = crate::service::RequestOrigin {
            source: crate::service::DecisionSource::EvaluateBatch,
            client: r.client,
            tool_use_id: String::new(),
        };
        let (decisions, revision) = self
            .service
            .evaluate_from(
                &p,
                &r.team_id,
                &r.user_id,
                &calls,
                r.explain,
                &convert::agent_from_pb(r.agent),
                &args,
                &origin,
            )
            .await?;
        count_decisions(&decisions);
        Ok(Response::new(pb::EvaluateBatchResponse {
            decisions: decisions
                .into_iter()
                .zip(&calls)
                .map(|(d, c)| decision_to_pb(d, c, revision))
                .collect(),
            revision,
        }))
    }

    async fn filter_tools(
        &self,
        req: Request<pb::FilterToolsRequest>,
    ) -> Result<Response<pb::FilterToolsResponse>, Status> {
        let p = principal(&req)?;
        let r = req.into_inner();
        let tools = r.tools.ok_or_else(|| ServiceError::InvalidArgument {
            field: "tools".into(),
            message:
                "must be set: send the tools/list result, {\"tools\": [...]} or the bare array"
                    .into(),
        })?;
        let tools = toolgate_proto::json::value_from_pb(&tools, "tools")
            .map_err(ServiceError::from)?
            .to_string();
        let (filtered, revision) = self
            .service
            .filter_tools_from(&p, &r.team_id, &r.user_id, &r.server, &tools, &r.client)
            .await?;
        Ok(Response::new(pb::FilterToolsResponse {
            tools: Some(toolgate_proto::json::value_to_pb(&filtered.tools)),
            removed: filtered.removed,
            malformed_skipped: u32::try_from(filtered.malformed_skipped).unwrap_or(u32::MAX),
            revision,
        }))
    }

    async fn get_effective_policy(
        &self,
        req: Request<pb::GetEffectivePolicyRequest>,
    ) -> Result<Response<pb::GetEffectivePolicyResponse>, Status> {
        let p = principal(&req)?;
        let r = req.into_inner();
        let eff = self.service.effective(&p, &r.team_id, &r.user_id).await?;
        // empty ids stand for the token's own: answer with those, so a client learns
        // whom it is deciding for (`toolgate hook check`, `toolgate login`)
        let own = |given: &str, token: &Option<String>| match (given, token) {
            ("", Some(t)) => t.clone(),
            _ => given.to_owned(),
        };
        let (team, user) = (own(&r.team_id, &p.team), own(&r.user_id, &p.user));
        Ok(Response::new(pb::GetEffectivePolicyResponse {
            policy: Some(effective_to_pb(&team, &user, &eff)),
        }))
    }

    type WatchPolicyStream = EventStream;

    /// Never reached: [`PolicyRouter`](super::PolicyRouter) takes the `WatchPolicy` path before the
    /// generated server sees it, and serves it once, sharing each change's encoding
    /// between streams (`watch.rs`).
    async fn watch_policy(
        &self,
        _req: Request<pb::WatchPolicyRequest>,
    ) -> Result<Response<Self::WatchPolicyStream>, Status> {
        Err(Status::internal(
            "WatchPolicy is served by PolicyRouter: mount PolicyRouter, not the generated PolicyServiceServer",
        ))
    }

    async fn report_tampering(
        &self,
        req: Request<pb::ReportTamperingRequest>,
    ) -> Result<Response<pb::ReportTamperingResponse>, Status> {
        let p = principal(&req)?;
        let r = req.into_inner();
        let report = crate::service::TamperReport {
            file: managed_file_from_pb(r.file).map_err(ServiceError::from)?,
            path: r.path,
            host: r.host,
            found_sha256: r.found_sha256,
            restored: r.restored,
        };
        let recorded = self
            .service
            .report_tampering(&p, &r.team_id, &r.user_id, &report)
            .await?;
        Ok(Response::new(pb::ReportTamperingResponse { recorded }))
    }
}

/// Each decision, counted by outcome and reason.
fn count_decisions(decisions: &[crate::policy::Decision]) {
    for d in decisions {
        crate::metrics::decision(d.outcome, d.reason);
    }
}
