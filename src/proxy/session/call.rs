//! A session's `tools/call`: toolgate's decision (or the last known policy's), a tool
//! its pin holds back asked about, an ASK put to the user through elicitation where
//! the client offers it, and the call relayed upstream.

// logging and `resources/subscribe` are the older generation's, deprecated in rmcp
// for 2026-07-28, and what the proxy must relay
#![allow(deprecated)]

use super::{ELICIT_WAIT, Session, complete};
use crate::grpc::client::ClientError;
use crate::policy::Outcome;
use crate::proxy::gate::{Held, RemoteDecision};
use crate::proxy::relay;
use rmcp::ErrorData;
use rmcp::model::*;
use rmcp::service::{Peer, RequestContext, RoleServer, ServiceError};
use tracing::info;

impl Session {
    /// `tools/call`: decided by toolgate first (a held tool asks, an ASK may go to the
    /// user through elicitation), then relayed upstream; a tool the principal was never
    /// shown is unknown.
    pub(super) async fn call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let who = self.who(&context.extensions)?;
        if let Err(e) = self.admit(&who).await {
            return Ok(CallToolResult::error(vec![ContentBlock::text(e.message)]).into());
        }
        self.start_single();
        let server = self.shared.gate.server_id().to_owned();
        let tool = request.name.to_string();
        // a name the upstream should not have listed is hidden, so unknown
        if let Err(why) = crate::proxy::names::check_upstream_name(&tool) {
            info!(team = %who.team, user = %who.user, server = %server, tool = ?tool, why, "tools/call of an invalid name refused");
            return Err(ErrorData::invalid_params(
                format!("Unknown tool: {tool}"),
                None,
            ));
        }
        let action = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("action"))
            .and_then(|a| a.as_str());
        let decision = match self.shared.gate.evaluate(&who, &tool, action).await {
            // an ASK the team's approvers answer: ALLOW or DENY once they have
            Ok(d) => self.shared.gate.settle(d).await,
            Err(e) => {
                let text = match e {
                    ClientError::Unreachable { .. } | ClientError::Timeout { .. } => format!(
                        "toolgate is unreachable ({e}): the call to {server}:{tool} was refused, try again later"
                    ),
                    other => format!(
                        "toolgate could not decide ({other}): the call to {server}:{tool} was refused"
                    ),
                };
                return Ok(CallToolResult::error(vec![ContentBlock::text(text)]).into());
            }
        };
        // a tool its pin holds back asks, whatever else allows it
        let held = match decision.outcome {
            Outcome::Deny => None,
            _ => self.shared.gate.held(&who.team, &tool),
        };
        let decision = if let Some(held) = held {
            RemoteDecision {
                outcome: Outcome::Ask,
                reason: held.reason().into(),
                message: held_message(held, &server, &tool, self.shared.gate.pins_on_server()),
                revision: decision.revision,
                approval: None,
                stays_inside: Vec::new(),
                effects_unknown: Vec::new(),
            }
        } else {
            decision
        };
        let outcome = decision.outcome;
        info!(team = %who.team, user = %who.user, server = %server, tool = %tool, outcome = ?outcome, revision = decision.revision, "tools/call decided");
        let shown = self.shared.was_shown(&who, &tool);
        let listed = || {
            let visible = self.shared.gate.view(&who).borrow().contains(&tool);
            visible || shown
        };
        match outcome {
            // neither listed now nor shown before: unknown, without asking anyone
            Outcome::Allow | Outcome::Ask if !listed() => {
                return Err(ErrorData::invalid_params(
                    format!("Unknown tool: {tool}"),
                    None,
                ));
            }
            Outcome::Allow => {}
            Outcome::Ask => {
                let asked = self.ask(&context.peer, &server, &tool, &decision).await;
                if let Err(text) = asked {
                    return Ok(CallToolResult::error(vec![ContentBlock::text(text)]).into());
                }
            }
            Outcome::Deny => {
                if !shown {
                    return Err(ErrorData::invalid_params(
                        format!("Unknown tool: {tool}"),
                        None,
                    ));
                }
                return Ok(CallToolResult::error(vec![ContentBlock::text(denied_text(
                    &server, &tool, &decision,
                ))])
                .into());
            }
        }
        let route = match self.route().await {
            Ok(route) => route,
            Err(e) => return Ok(CallToolResult::error(vec![ContentBlock::text(e.message)]).into()),
        };
        let down = route.down.as_ref();
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(request));
        let answer = relay::forward(
            &route.peer,
            request,
            &context,
            down.map(|d| &d.progress),
            down.map(|d| &d.inflight),
        )
        .await;
        match answer {
            Ok(ServerResult::CallToolResult(result)) => {
                Ok(complete(result, |r| &mut r.result_type).into())
            }
            Ok(ServerResult::InputRequiredResult(result)) => {
                Ok(CallToolResponse::InputRequired(result))
            }
            Ok(ServerResult::CreateTaskResult(result)) => Ok(CallToolResponse::Task(result)),
            Ok(_) => Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                "upstream server {server} answered tools/call with another result"
            ))])
            .into()),
            Err(ServiceError::McpError(e)) => Err(e),
            Err(e) => Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                "upstream server {server} failed during the call: {e}"
            ))])
            .into()),
        }
    }

    /// Asks the user through MCP elicitation where the client offers it; Ok to go on.
    async fn ask(
        &self,
        peer: &Peer<RoleServer>,
        server: &str,
        tool: &str,
        decision: &RemoteDecision,
    ) -> Result<(), String> {
        let supported = peer
            .peer_info()
            .is_some_and(|info| info.capabilities.elicitation.is_some());
        if !supported {
            return Err(approval_text(server, tool, decision));
        }
        let message = format!(
            "toolgate: allow {server}:{tool} to run this once? {}",
            decision.message
        );
        let schema = ElicitationSchema::builder()
            .build()
            .map_err(|e| format!("elicitation schema: {e}"))?;
        let answer = peer
            .create_elicitation_with_timeout(
                ElicitRequestParams::FormElicitationParams {
                    meta: None,
                    message,
                    requested_schema: schema,
                },
                Some(ELICIT_WAIT),
            )
            .await;
        match answer {
            Ok(result) if result.action == ElicitationAction::Accept => Ok(()),
            Ok(_) => Err(format!(
                "the user did not approve {server}:{tool}: the call was not made"
            )),
            Err(e) => Err(format!(
                "{} (asking the user failed: {e})",
                approval_text(server, tool, decision)
            )),
        }
    }
}

fn denied_text(server: &str, tool: &str, d: &RemoteDecision) -> String {
    format!(
        "toolgate denied {server}:{tool} ({}): {}",
        d.reason, d.message
    )
}

fn approval_text(server: &str, tool: &str, d: &RemoteDecision) -> String {
    format!(
        // the message says what would change the answer under the team's settings
        "toolgate: {server}:{tool} needs approval ({}): {}",
        d.reason, d.message
    )
}

/// What the user is told about a call its tool's pin holds back, and what an admin does.
fn held_message(held: Held, server: &str, tool: &str, on_server: bool) -> String {
    let what = match held {
        Held::Changed => format!("the definition of {server}:{tool} changed since it was pinned"),
        Held::NotPinned => {
            format!("{server}:{tool} is not pinned yet, and only an admin pins it first")
        }
        Held::Flagged => format!(
            "the description of {server}:{tool} was flagged, and the team hides flagged tools until an admin reviews them"
        ),
    };
    if on_server {
        format!(
            "{what}; an admin reviews it (toolgate pins list --server-id {server}) and accepts it (toolgate pins accept --server-id {server} {tool})"
        )
    } else {
        format!(
            "{what}; an admin reviews the change (toolgate proxy --server-id {server} --pins FILE --pins-status) and accepts it (--repin {tool})"
        )
    }
}
