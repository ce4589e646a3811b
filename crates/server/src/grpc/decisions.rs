//! `DecisionLogService`: the decision log's listing and live stream, and the impact
//! preview of proposed team controls, over the service's decision-log methods.

use super::{Api, principal};
use crate::policy::{Outcome, Reason};
use crate::proto::v1 as pb;
use crate::service::{
    DecisionEvent, DecisionFilter, DecisionSource, Impact, ImpactGroup, ServiceError,
    StoredDecision, parse_outcome, parse_reason,
};
use futures::Stream;
use pb::decision_log_service_server::DecisionLogService;
use std::pin::Pin;
use std::time::Duration;
use tonic::{Request, Response, Status};
use toolgate_proto::convert::{
    controls_from_pb, outcome_to_pb, reason_to_pb, timestamp, timestamp_ms,
};

pub use pb::decision_log_service_server::DecisionLogServiceServer;

/// Messages a `WatchDecisions` stream holds for a client that has not read them; the
/// service's buffer behind it says when the subscriber lagged.
const STREAM_BUFFER: usize = 64;

fn outcome_from_pb(field: &str, value: i32) -> Result<Option<Outcome>, ServiceError> {
    match pb::Outcome::try_from(value) {
        Ok(pb::Outcome::Unspecified) => Ok(None),
        Ok(pb::Outcome::Allow) => Ok(Some(Outcome::Allow)),
        Ok(pb::Outcome::Ask) => Ok(Some(Outcome::Ask)),
        Ok(pb::Outcome::Deny) => Ok(Some(Outcome::Deny)),
        Err(_) => Err(ServiceError::InvalidArgument {
            field: field.into(),
            message: format!("{value} is not an outcome: use ALLOW, ASK or DENY"),
        }),
    }
}

fn reason_from_pb(field: &str, value: i32) -> Result<Option<Reason>, ServiceError> {
    let unknown = || ServiceError::InvalidArgument {
        field: field.into(),
        message: format!("{value} is not a reason: use one of the Reason enum's values"),
    };
    match pb::Reason::try_from(value) {
        Ok(pb::Reason::Unspecified) => Ok(None),
        Ok(r) => {
            let name = r.as_str_name();
            parse_reason(name.strip_prefix("REASON_").unwrap_or(name))
                .map(Some)
                .ok_or_else(unknown)
        }
        Err(_) => Err(unknown()),
    }
}

fn filter_from_pb(f: Option<pb::DecisionFilter>) -> Result<DecisionFilter, ServiceError> {
    let f = f.unwrap_or_default();
    let time = |field: &str, t: Option<prost_types::Timestamp>| {
        t.map(|t| timestamp_ms(field, &t))
            .transpose()
            .map_err(ServiceError::from)
    };
    Ok(DecisionFilter {
        outcome: outcome_from_pb("filter.outcome", f.outcome)?,
        reason: reason_from_pb("filter.reason", f.reason)?,
        since_ms: time("filter.since", f.since)?,
        until_ms: time("filter.until", f.until)?,
        team_id: f.team_id,
        user_id: f.user_id,
        agent_id: f.agent_id,
        tool_prefix: f.tool_prefix,
        command_prefix: f.command_prefix,
    })
}

fn source_to_pb(source: &str) -> pb::DecisionSource {
    match DecisionSource::parse(source) {
        Some(DecisionSource::Evaluate) => pb::DecisionSource::Evaluate,
        Some(DecisionSource::EvaluateBatch) => pb::DecisionSource::EvaluateBatch,
        Some(DecisionSource::FilterTools) => pb::DecisionSource::FilterTools,
        Some(DecisionSource::Approval) => pb::DecisionSource::Approval,
        None => pb::DecisionSource::Unspecified,
    }
}

pub(super) fn record_to_pb(r: StoredDecision) -> pb::DecisionRecord {
    use pb::decided_call::Kind;
    let d = r.decision;
    let effects_unknown = d.unknown_effects().map(str::to_owned).collect();
    let kind = match d.kind.as_str() {
        "mcp" => Some(Kind::Mcp(pb::McpCall {
            server: d.server,
            tool: d.tool,
            action: d.action,
        })),
        "shell" => Some(Kind::ShellExcerpt(d.subject)),
        "delete_file" => Some(Kind::DeleteFileExcerpt(d.subject)),
        _ => None,
    };
    let is_mcp = matches!(kind, Some(Kind::Mcp(_)));
    pb::DecisionRecord {
        id: r.id.to_string(),
        at: timestamp(d.at_ms),
        principal: d.principal,
        team_id: d.team_id,
        user_id: d.user_id,
        agent_id: d.agent_id,
        role: d.role,
        client: d.client,
        source: source_to_pb(&d.source).into(),
        call: Some(pb::DecidedCall {
            kind,
            command_bytes: if is_mcp { 0 } else { d.subject_bytes },
            command_sha256: d.subject_sha256,
        }),
        outcome: parse_outcome(&d.outcome)
            .map_or(pb::Outcome::Unspecified, outcome_to_pb)
            .into(),
        reason: parse_reason(&d.reason)
            .map_or(pb::Reason::Unspecified, reason_to_pb)
            .into(),
        matched_entry: d.matched_entry,
        revision: d.revision,
        count: d.count,
        first_at: if d.count > 1 {
            timestamp(d.first_at_ms)
        } else {
            None
        },
        effects_unknown,
        groups: d
            .groups
            .split(',')
            .filter(|g| !g.is_empty())
            .map(str::to_owned)
            .collect(),
        tool_use_id: d.tool_use_id,
        client_decision: None,
    }
}

fn client_decision_to_pb(c: crate::service::ClientDecision) -> pb::ClientDecision {
    pb::ClientDecision {
        decision: c.decision,
        source: c.source,
        at: timestamp(c.at_ms),
        tool_name: c.tool_name,
    }
}

fn group_to_pb(g: ImpactGroup) -> pb::ImpactGroup {
    pb::ImpactGroup {
        from: outcome_to_pb(g.from).into(),
        to: outcome_to_pb(g.to).into(),
        key: g.key,
        count: g.count,
        examples: g
            .examples
            .into_iter()
            .map(|e| pb::ImpactExample {
                record: Some(record_to_pb(e.record)),
                new_reason: reason_to_pb(e.new_reason).into(),
                new_matched_entry: e.new_matched_entry.unwrap_or_default(),
            })
            .collect(),
    }
}

fn impact_to_pb(i: Impact) -> pb::PreviewTeamAdminSettingsResponse {
    pb::PreviewTeamAdminSettingsResponse {
        decided: i.decided,
        unchanged: i.unchanged,
        changed: i.changed,
        unknown: i.unknown,
        effects_unknown: i.effects_unknown,
        transitions: i.transitions.into_iter().map(group_to_pb).collect(),
        groups: i.groups.into_iter().map(group_to_pb).collect(),
        revision: i.revision,
        window_start: timestamp(i.window_start_ms),
        window_end: timestamp(i.window_end_ms),
        truncated: i.cut_short.is_some(),
        cut_short: match i.cut_short {
            None => pb::PreviewCutShort::Unspecified,
            Some(crate::service::CutShort::Records) => pb::PreviewCutShort::Records,
            Some(crate::service::CutShort::Time) => pb::PreviewCutShort::Time,
        } as i32,
        teams: i
            .teams
            .into_iter()
            .map(|t| pb::TeamImpact {
                team_id: t.team_id,
                impact: Some(impact_to_pb(t.impact)),
            })
            .collect(),
    }
}

type DecisionStream =
    Pin<Box<dyn Stream<Item = Result<pb::WatchDecisionsResponse, Status>> + Send>>;

#[tonic::async_trait]
impl DecisionLogService for Api {
    async fn list_decisions(
        &self,
        req: Request<pb::ListDecisionsRequest>,
    ) -> Result<Response<pb::ListDecisionsResponse>, Status> {
        let p = principal(&req)?;
        let r = req.into_inner();
        let filter = filter_from_pb(r.filter)?;
        let page = self
            .service
            .list_decisions(&p, &filter, r.page_size, &r.page_token)
            .await?;
        let mut joined = page.client_decisions;
        Ok(Response::new(pb::ListDecisionsResponse {
            decisions: page
                .decisions
                .into_iter()
                .map(|r| {
                    let client = joined.remove(&r.id);
                    let mut out = record_to_pb(r);
                    out.client_decision = client.map(client_decision_to_pb);
                    out
                })
                .collect(),
            next_page_token: page.next_page_token,
        }))
    }

    type WatchDecisionsStream = DecisionStream;

    async fn watch_decisions(
        &self,
        req: Request<pb::WatchDecisionsRequest>,
    ) -> Result<Response<Self::WatchDecisionsStream>, Status> {
        let p = principal(&req)?;
        let filter = filter_from_pb(req.into_inner().filter)?;
        let slot = self.open_stream(&p)?;
        let mut watch = self.service.watch_decisions(&p, &filter)?;
        let (tx, rx) = tokio::sync::mpsc::channel(STREAM_BUFFER);
        tokio::spawn(async move {
            // held for the stream's life: the principal's stream count
            let _slot = slot;
            loop {
                let event = tokio::select! {
                    () = tx.closed() => return,
                    event = watch.next() => event,
                };
                let Some(event) = event else {
                    let _ = tx
                        .send(Err(Status::unavailable(
                            "the server is shutting down: watch again on another replica or after the restart",
                        )))
                        .await;
                    return;
                };
                let message = match event {
                    DecisionEvent::Decision(record) => {
                        pb::watch_decisions_response::Event::Decision(record_to_pb(*record))
                    }
                    DecisionEvent::Lagged(n) => pb::watch_decisions_response::Event::Lagged(n),
                    DecisionEvent::ClientDecision(c) => {
                        pb::watch_decisions_response::Event::ClientDecision(
                            pb::ClientDecisionReport {
                                team_id: c.team_id.clone(),
                                user_id: c.user_id.clone(),
                                tool_use_id: c.tool_use_id.clone(),
                                decision: Some(client_decision_to_pb(*c)),
                            },
                        )
                    }
                };
                let response = pb::WatchDecisionsResponse {
                    event: Some(message),
                };
                // a client that does not read fills this buffer; the service's buffer
                // behind it then tells it, once it reads again, how much it missed
                if tx.send(Ok(response)).await.is_err() {
                    return;
                }
            }
        });
        Ok(Response::new(Box::pin(
            tokio_stream::wrappers::ReceiverStream::new(rx),
        )))
    }

    async fn preview_team_admin_settings(
        &self,
        req: Request<pb::PreviewTeamAdminSettingsRequest>,
    ) -> Result<Response<pb::PreviewTeamAdminSettingsResponse>, Status> {
        let p = principal(&req)?;
        let r = req.into_inner();
        let controls = r
            .auto_run_controls
            .ok_or_else(|| ServiceError::InvalidArgument {
                field: "auto_run_controls".into(),
                message: "must be set: send the complete proposed controls".into(),
            })?;
        let controls = controls_from_pb(controls).map_err(ServiceError::from)?;
        let window = (r.window_seconds > 0).then(|| Duration::from_secs(r.window_seconds));
        let examples = (r.examples_per_group > 0).then_some(r.examples_per_group as usize);
        let impact = self
            .service
            .preview_admin(&p, &r.team_id, controls, window, examples)
            .await?;
        Ok(Response::new(impact_to_pb(impact)))
    }
}
