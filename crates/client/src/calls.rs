//! The calls a client makes (decisions, tool filtering, the effective policy, the
//! watch), domain types in and out, each within the configured deadline.

use super::connect::PolicyStub;
use super::{
    Client, ClientError, FilteredTools, PolicyNotice, RemoteDecision, RemotePolicy, status_error,
};
use crate::policy::roles::{AgentSpec, CallArgs};
use crate::policy::{Call, Outcome};
use crate::proto::v1 as pb;
use std::time::Duration;
use toolgate_proto::convert::{call_to_pb, controls_from_pb, user_from_pb};

impl Client {
    /// One decision for the configured team and user.
    pub async fn evaluate(&self, call: &Call) -> Result<RemoteDecision, ClientError> {
        self.evaluate_as(&self.config.team, &self.config.user, call)
            .await
    }

    /// One decision for `team` and `user` (empty: the token's own).
    pub async fn evaluate_as(
        &self,
        team: &str,
        user: &str,
        call: &Call,
    ) -> Result<RemoteDecision, ClientError> {
        self.decide(team, user, call, None, None).await
    }

    /// One decision for the configured team and user on a call made by a seed 004
    /// agent, with what it touches.
    pub async fn evaluate_by(
        &self,
        call: &Call,
        agent: Option<&(AgentSpec, CallArgs)>,
    ) -> Result<RemoteDecision, ClientError> {
        self.decide(&self.config.team, &self.config.user, call, agent, None)
            .await
    }

    /// One decision that may go to the team's approvers: an ASK that does comes back
    /// with [`RemoteDecision::approval`] set, to wait on with [`Client::await_answer`].
    pub async fn evaluate_waiting(
        &self,
        team: &str,
        user: &str,
        call: &Call,
        agent: Option<&(AgentSpec, CallArgs)>,
        ask: &super::ApprovalAsk,
    ) -> Result<RemoteDecision, ClientError> {
        self.decide(team, user, call, agent, Some(ask)).await
    }

    pub(super) async fn decide(
        &self,
        team: &str,
        user: &str,
        call: &Call,
        agent: Option<&(AgentSpec, CallArgs)>,
        ask: Option<&super::ApprovalAsk>,
    ) -> Result<RemoteDecision, ClientError> {
        let mut pb_call = call_to_pb(call);
        pb_call.arguments = agent.map(|(_, args)| pb::CallArguments {
            operation: args.operation.clone().unwrap_or_default(),
            file_path: args.file_path.clone().unwrap_or_default(),
            component_type: args.component_type.clone().unwrap_or_default(),
            component_count: args.component_count,
            tool_input: match &args.tool_input {
                Some(serde_json::Value::Object(map)) => {
                    Some(toolgate_proto::json::object_to_pb(map))
                }
                _ => None,
            },
            cwd: args.cwd.clone().unwrap_or_default(),
        });
        let request = pb::EvaluateRequest {
            team_id: team.to_owned(),
            user_id: user.to_owned(),
            call: Some(pb_call),
            explain: false,
            agent: agent.map(|(a, _)| pb::AgentContext {
                agent_id: a.id.clone().unwrap_or_default(),
                role: a.role.clone().unwrap_or_default(),
                context_type: a.context.clone().unwrap_or_default(),
                session_id: a.session.clone().unwrap_or_default(),
            }),
            client: self.config.client_kind.clone(),
            approval: ask.map(|a| pb::ApprovalCapability {
                can_wait: true,
                interactive: a.interactive,
                client: a.client.clone(),
                session_id: a.session_id.clone(),
            }),
            tool_use_id: self.tool_use_id.clone(),
        };
        let d = self
            .within(|mut c| async move { c.evaluate(request).await })
            .await?
            .decision
            .ok_or_else(|| {
                ClientError::Malformed("an EvaluateResponse without its decision".into())
            })?;
        let outcome = match pb::Outcome::try_from(d.outcome) {
            Ok(pb::Outcome::Allow) => Outcome::Allow,
            Ok(pb::Outcome::Ask) => Outcome::Ask,
            Ok(pb::Outcome::Deny) => Outcome::Deny,
            _ => {
                return Err(ClientError::Malformed(format!(
                    "decision outcome {}",
                    d.outcome
                )));
            }
        };
        let reason = pb::Reason::try_from(d.reason)
            .map(|r| {
                let name = r.as_str_name();
                name.strip_prefix("REASON_").unwrap_or(name).to_owned()
            })
            .unwrap_or_else(|_| format!("REASON_{}", d.reason));
        Ok(RemoteDecision {
            outcome,
            reason,
            message: d.message,
            revision: d.revision,
            approval: d.approval.map(|t| super::ApprovalTicket {
                deadline: t
                    .deadline
                    .and_then(|d| std::time::SystemTime::try_from(d).ok())
                    .unwrap_or(std::time::UNIX_EPOCH),
                request_id: t.request_id,
            }),
            stays_inside: d.paths_stay_inside,
            effects_unknown: d.effects_unknown,
        })
    }

    /// `FilterTools`: what `tools` (an MCP `tools/list` result) keeps for `team`
    /// and `user` when the tools belong to `server`.
    pub async fn filter_tools(
        &self,
        team: &str,
        user: &str,
        server: &str,
        tools: &serde_json::Value,
    ) -> Result<FilteredTools, ClientError> {
        let request = pb::FilterToolsRequest {
            team_id: team.to_owned(),
            user_id: user.to_owned(),
            server: server.to_owned(),
            tools: Some(toolgate_proto::json::value_to_pb(tools)),
            client: self.config.client_kind.clone(),
        };
        let r = self
            .within(|mut c| async move { c.filter_tools(request).await })
            .await?;
        let tools = r
            .tools
            .ok_or_else(|| ClientError::Malformed("a FilterToolsResponse without tools".into()))?;
        Ok(FilteredTools {
            tools: toolgate_proto::json::value_from_pb(&tools, "tools")
                .map_err(|e| ClientError::Malformed(e.to_string()))?,
            revision: r.revision,
        })
    }

    /// The effective policy of the configured team and user.
    pub async fn effective_policy(&self) -> Result<RemotePolicy, ClientError> {
        self.effective_policy_as(&self.config.team, &self.config.user)
            .await
    }

    /// The effective policy of `team` and `user` (empty: the token's own).
    pub async fn effective_policy_as(
        &self,
        team: &str,
        user: &str,
    ) -> Result<RemotePolicy, ClientError> {
        let request = pb::GetEffectivePolicyRequest {
            team_id: team.to_owned(),
            user_id: user.to_owned(),
        };
        let p = self
            .within(|mut c| async move { c.get_effective_policy(request).await })
            .await?
            .policy
            .ok_or_else(|| {
                ClientError::Malformed("a GetEffectivePolicyResponse without its policy".into())
            })?;
        let admin = p
            .admin
            .and_then(|a| a.auto_run_controls)
            .map(controls_from_pb)
            .transpose()
            .map_err(|e| ClientError::Malformed(e.to_string()))?
            .unwrap_or_default();
        let user = p.user.map(user_from_pb).unwrap_or_default();
        Ok(RemotePolicy {
            admin,
            user,
            revision: p.revision,
            file_allowlists: p
                .file_allowlists
                .into_iter()
                .map(|l| (l.server, l.allowed_tools))
                .collect(),
        })
    }

    /// `WatchPolicy` for `team` and `user`, after `after` when resuming. The stream is
    /// long-lived: the deadline bounds only its opening.
    pub async fn watch_policy(
        &self,
        team: &str,
        user: &str,
        after: Option<u64>,
    ) -> Result<PolicyWatch, ClientError> {
        let mut request = tonic::Request::new(pb::WatchPolicyRequest {
            team_id: team.to_owned(),
            user_id: user.to_owned(),
            after_revision: after,
        });
        // no grpc-timeout: the server would end the stream at it
        request.set_timeout(Duration::from_secs(365 * 24 * 3600));
        let stream = self
            .within(|mut c| async move { c.watch_policy(request).await })
            .await?;
        Ok(PolicyWatch {
            stream,
            server: self.config.server.clone(),
        })
    }

    /// Reports a managed file found changed or removed by someone else; whether the
    /// server recorded it (`false`: the caller is past its bound, the report counted).
    pub async fn report_tampering(
        &self,
        request: pb::ReportTamperingRequest,
    ) -> Result<bool, ClientError> {
        Ok(self
            .within(|mut c| async move { c.report_tampering(request).await })
            .await?
            .recorded)
    }

    async fn within<T, F, Fut>(&self, call: F) -> Result<T, ClientError>
    where
        F: FnOnce(PolicyStub) -> Fut,
        Fut: std::future::Future<Output = Result<tonic::Response<T>, tonic::Status>>,
    {
        let server = self.config.server.clone();
        let deadline = self.config.deadline;
        match tokio::time::timeout(deadline, call(self.policy_service())).await {
            Err(_) => Err(ClientError::Timeout {
                server,
                ms: deadline.as_millis(),
            }),
            Ok(Err(status)) => Err(status_error(server, status)),
            Ok(Ok(r)) => Ok(r.into_inner()),
        }
    }
}

/// An open `WatchPolicy` stream.
pub struct PolicyWatch {
    stream: tonic::Streaming<pb::WatchPolicyResponse>,
    server: String,
}

impl PolicyWatch {
    /// The next event; `None` when the server ended the stream.
    pub async fn next(&mut self) -> Result<Option<PolicyNotice>, ClientError> {
        use pb::watch_policy_response::Event;
        loop {
            let Some(event) = self
                .stream
                .message()
                .await
                .map_err(|s| status_error(self.server.clone(), s))?
            else {
                return Ok(None);
            };
            return Ok(Some(match event.event {
                Some(Event::Heartbeat(_)) => PolicyNotice::Heartbeat,
                Some(_) => PolicyNotice::Changed {
                    revision: event.revision,
                },
                // a kind this build does not know: not a change it can act on
                None => continue,
            }));
        }
    }
}
