//! Central approvals from the waiting side: follow a request to its answer over the
//! `AwaitApproval` stream (a stream, not polling), resuming on another connection when
//! the server is lost, and failing closed (a DENY that says why) when no answer can
//! be had in time. Nothing here ever turns a missing answer into an ALLOW.

use super::{Client, ClientError, RemoteDecision, status_error};
use crate::policy::Outcome;
use crate::proto::v1 as pb;
use std::time::{Duration, SystemTime};
use tokio::time::Instant;
use toolgate_core::backoff::Backoff;

/// What a caller tells the server about an ASK it could wait on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApprovalAsk {
    /// Whether a person at the client can answer (None: unknown).
    pub interactive: Option<bool>,
    /// The client's name (claude-code, codex, proxy, …).
    pub client: String,
    /// The client's session, for "for the session" approvals.
    pub session_id: String,
}

/// An ASK that went to the team's approvers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalTicket {
    pub request_id: String,
    /// The server refuses the call if nobody answers by then.
    pub deadline: SystemTime,
}

/// A DENY made here, when no answer could be had.
fn refused(reason: &str, message: String) -> RemoteDecision {
    RemoteDecision {
        outcome: Outcome::Deny,
        reason: reason.to_owned(),
        message,
        revision: 0,
        approval: None,
        stays_inside: Vec::new(),
        effects_unknown: Vec::new(),
    }
}

/// The final answer of an approval, as the decision the waiting call gets; anything
/// but ALLOW or DENY is a DENY.
fn answer_of(d: pb::Decision, id: &str) -> RemoteDecision {
    let reason = pb::Reason::try_from(d.reason)
        .map(|r| {
            let name = r.as_str_name();
            name.strip_prefix("REASON_").unwrap_or(name).to_owned()
        })
        .unwrap_or_else(|_| format!("REASON_{}", d.reason));
    let outcome = match pb::Outcome::try_from(d.outcome) {
        Ok(pb::Outcome::Allow) => Outcome::Allow,
        _ => Outcome::Deny,
    };
    if outcome == Outcome::Deny && d.message.is_empty() {
        return refused(&reason, format!("approval request {id} was not approved"));
    }
    RemoteDecision {
        outcome,
        reason,
        message: d.message,
        revision: d.revision,
        approval: None,
        stays_inside: d.paths_stay_inside,
        effects_unknown: d.effects_unknown,
    }
}

impl Client {
    /// The approval service, for the CLI's `approvals` commands.
    pub fn approval_service(
        &self,
    ) -> pb::approval_service_client::ApprovalServiceClient<super::Authed> {
        pb::approval_service_client::ApprovalServiceClient::with_interceptor(
            self.channel.clone(),
            self.bearer.clone(),
        )
    }

    /// Waits for the request's answer until `give_up` (the caller's own limit, e.g.
    /// within its client's hook timeout): ALLOW or DENY as the approver (or the
    /// deadline) decided. A lost server is waited on again (the stream resumes with the
    /// same id) until `give_up`; then, and on any refusal, a DENY that says why.
    pub async fn await_answer(&self, ticket: &ApprovalTicket, give_up: Instant) -> RemoteDecision {
        let id = ticket.request_id.as_str();
        let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(2));
        loop {
            let attempt = async {
                let mut stub = self.approval_service();
                let mut stream = stub
                    .await_approval(pb::AwaitApprovalRequest {
                        request_id: id.to_owned(),
                    })
                    .await?
                    .into_inner();
                while let Some(event) = stream.message().await? {
                    if let Some(pb::await_approval_response::Event::Approval(a)) = event.event
                        && let Some(answer) = a.answer
                    {
                        return Ok(Some(answer));
                    }
                }
                Ok::<_, tonic::Status>(None)
            };
            let last_error = match tokio::time::timeout_at(give_up, attempt).await {
                Err(_) => {
                    return refused(
                        "APPROVAL_EXPIRED",
                        format!(
                            "no answer to approval request {id} in the time this client allows a hook: refused (an approval given later does not apply to this call)"
                        ),
                    );
                }
                Ok(Ok(Some(answer))) => return answer_of(answer, id),
                // the stream ended without an answer (the server is stopping): again
                Ok(Ok(None)) => "the server ended the wait".to_owned(),
                Ok(Err(status)) => match status_error(self.config.server.clone(), status) {
                    e @ ClientError::Unreachable { .. } => e.to_string(),
                    refusal => {
                        return refused(
                            "APPROVAL_DENIED",
                            format!(
                                "cannot wait for approval request {id} ({refusal}): refused, since nothing approved it"
                            ),
                        );
                    }
                },
            };
            let wait = backoff.next_wait();
            if Instant::now() + wait >= give_up {
                return refused(
                    "APPROVAL_EXPIRED",
                    format!(
                        "lost the toolgate server while waiting for approval request {id} ({last_error}): refused, since nothing approved it"
                    ),
                );
            }
            tokio::time::sleep(wait).await;
        }
    }
}
