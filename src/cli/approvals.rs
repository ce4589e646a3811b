//! `approvals list|watch|approve|deny`: central approvals from the terminal.

use super::args::ApprovalsCommand;
use super::client::{Clients, rpc_error};
use super::output::{Render, for_terminal};
use super::usage;
use crate::proto::v1 as pb;
use serde::Serialize;

pub(super) async fn approvals(c: &Clients, cmd: ApprovalsCommand) -> anyhow::Result<i32> {
    match cmd {
        ApprovalsCommand::List { team, all, limit } => {
            let r = c
                .approvals()
                .list_approvals(pb::ListApprovalsRequest {
                    team_id: team,
                    pending_only: !all,
                    limit,
                })
                .await
                .map_err(rpc_error)?
                .into_inner();
            c.out.print(&Listed {
                approvals: r.approvals.into_iter().map(Row::from).collect(),
            });
        }
        ApprovalsCommand::Watch { team } => {
            use pb::watch_approvals_response::Event;
            let mut events = c
                .approvals()
                .watch_approvals(pb::WatchApprovalsRequest { team_id: team })
                .await
                .map_err(rpc_error)?
                .into_inner();
            while let Some(e) = events.message().await.map_err(rpc_error)? {
                match e.event {
                    Some(Event::Snapshot(s)) => c.out.print(&Listed {
                        approvals: s.pending.into_iter().map(Row::from).collect(),
                    }),
                    Some(Event::Approval(a)) => c.out.print(&Row::from(a)),
                    Some(Event::Heartbeat(_)) | None => {}
                }
            }
        }
        ApprovalsCommand::Approve {
            request_id,
            duration,
            session,
            add_to_allowlist,
            note,
        } => {
            let (scope, seconds) = match (duration, session, add_to_allowlist) {
                (Some(d), _, _) => {
                    let d = humantime::parse_duration(&d).map_err(|e| {
                        usage(format!(
                            "--for {d:?}: {e}: give a duration such as 1h or 30m"
                        ))
                    })?;
                    (pb::ApprovalScope::Duration, d.as_secs().max(1))
                }
                (None, true, _) => (pb::ApprovalScope::Session, 0),
                (None, false, true) => (pb::ApprovalScope::Allowlist, 0),
                (None, false, false) => (pb::ApprovalScope::Once, 0),
            };
            let r = c
                .approvals()
                .approve_request(pb::ApproveRequestRequest {
                    request_id,
                    scope: scope.into(),
                    duration_seconds: seconds,
                    note,
                    expected_revision: None,
                })
                .await
                .map_err(rpc_error)?
                .into_inner();
            c.out.print(&Answered::from(r.approval));
        }
        ApprovalsCommand::Deny { request_id, reason } => {
            let r = c
                .approvals()
                .deny_request(pb::DenyRequestRequest { request_id, reason })
                .await
                .map_err(rpc_error)?
                .into_inner();
            c.out.print(&Answered::from(r.approval));
        }
    }
    Ok(0)
}

fn rfc3339(t: Option<prost_types::Timestamp>) -> Option<String> {
    let t = t?;
    let secs = u64::try_from(t.seconds).ok()?;
    Some(
        humantime::format_rfc3339_seconds(
            std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs),
        )
        .to_string(),
    )
}

/// One request as listed.
#[derive(Debug, Serialize)]
pub struct Row {
    pub request_id: String,
    pub team: String,
    pub user: String,
    pub client: String,
    pub summary: String,
    /// Why it needs approval (the decision's sentence).
    pub why: String,
    /// pending, approved, denied, expired or abandoned.
    pub state: String,
    pub deadline: Option<String>,
    pub answered_by: String,
    /// What the waiting call was told, once answered.
    pub answer: String,
}

impl From<pb::Approval> for Row {
    fn from(a: pb::Approval) -> Self {
        let state = match a.state() {
            pb::ApprovalState::Pending => "pending",
            pb::ApprovalState::Approved => "approved",
            pb::ApprovalState::Denied => "denied",
            pb::ApprovalState::Expired => "expired",
            pb::ApprovalState::Abandoned => "abandoned",
            pb::ApprovalState::Unspecified => "unknown",
        };
        Self {
            request_id: a.request_id,
            team: a.team_id,
            user: a.user_id,
            client: a.client,
            summary: a.summary,
            why: a.decision.map(|d| d.message).unwrap_or_default(),
            state: state.into(),
            deadline: rfc3339(a.deadline),
            answered_by: a.answered_by,
            answer: a.answer.map(|d| d.message).unwrap_or_default(),
        }
    }
}

impl Render for Row {
    fn human(&self) -> String {
        // each field on its own line: a newline in one is shown, not obeyed
        let f = |text: &str| for_terminal(text, false).into_owned();
        let mut line = format!(
            "{}  {}  {}/{} ({})  {}",
            f(&self.request_id),
            f(&self.state),
            f(&self.team),
            f(&self.user),
            f(&self.client),
            f(&self.summary)
        );
        if self.state == "pending" {
            line.push_str(&format!(
                "\n    {}\n    answer before {}",
                f(&self.why),
                f(self.deadline.as_deref().unwrap_or("?"))
            ));
        } else if !self.answer.is_empty() {
            line.push_str(&format!("\n    {}", f(&self.answer)));
        }
        line.push('\n');
        line
    }
}

#[derive(Debug, Serialize)]
struct Listed {
    approvals: Vec<Row>,
}

impl Render for Listed {
    fn human(&self) -> String {
        if self.approvals.is_empty() {
            return "no approval requests\n".into();
        }
        self.approvals.iter().map(Row::human).collect()
    }
}

#[derive(Debug, Serialize)]
struct Answered {
    approval: Option<Row>,
}

impl From<Option<pb::Approval>> for Answered {
    fn from(a: Option<pb::Approval>) -> Self {
        Self {
            approval: a.map(Row::from),
        }
    }
}

impl Render for Answered {
    fn human(&self) -> String {
        self.approval.as_ref().map(Row::human).unwrap_or_default()
    }
}
