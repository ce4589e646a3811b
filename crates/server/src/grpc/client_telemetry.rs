//! OTLP's `LogsService/Export` as a receiver of the agent clients' own telemetry
//! (docs/client-telemetry.md): the `claude_code.tool_decision` events are read into
//! [`ReportedDecision`]s and handed to the service, every other record is ignored.
//! OTLP/HTTP's `POST /v1/logs` reaches it through the HTTP layer as a gRPC call.

use super::{Api, principal};
use crate::service::{ReportedDecision, ServiceError};
use opentelemetry_proto::tonic::collector::logs::v1::logs_service_server::LogsService;
use opentelemetry_proto::tonic::collector::logs::v1::{
    ExportLogsPartialSuccess, ExportLogsServiceRequest, ExportLogsServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::logs::v1::LogRecord;
use tonic::{Request, Response, Status};

pub use opentelemetry_proto::tonic::collector::logs::v1::logs_service_server::LogsServiceServer;

/// The event a client's decision about a call arrives as (Claude Code's name; the
/// record's event name, or its body for older senders).
pub const TOOL_DECISION_EVENT: &str = "claude_code.tool_decision";
/// Log records one request may carry (Claude Code batches at most 512).
pub const MAX_RECORDS_PER_REQUEST: usize = 2_000;
/// Attributes read from one record; a record with more is not a client decision.
const MAX_ATTRIBUTES: usize = 128;

/// A record's event: its `event_name`, else a body that is only a name (how Claude
/// Code's exporter has sent it).
fn event_name(r: &LogRecord) -> &str {
    if !r.event_name.is_empty() {
        return &r.event_name;
    }
    match r.body.as_ref().and_then(|b| b.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => s,
        _ => "",
    }
}

/// An attribute's text (a string, or an integer or bool written out).
fn text<'a>(attributes: &'a [KeyValue], key: &str) -> Option<std::borrow::Cow<'a, str>> {
    let value = attributes
        .iter()
        .find(|kv| kv.key == key)?
        .value
        .as_ref()
        .and_then(|v: &AnyValue| v.value.as_ref())?;
    match value {
        any_value::Value::StringValue(s) => Some(std::borrow::Cow::Borrowed(s)),
        any_value::Value::IntValue(i) => Some(std::borrow::Cow::Owned(i.to_string())),
        any_value::Value::BoolValue(b) => Some(std::borrow::Cow::Owned(b.to_string())),
        _ => None,
    }
}

/// The client decisions among a request's records, and how many records were
/// something else (ignored, not refused). `Err` for a request past the bounds.
pub fn reported_decisions(
    request: &ExportLogsServiceRequest,
) -> Result<(Vec<ReportedDecision>, u64), ServiceError> {
    let records: usize = request
        .resource_logs
        .iter()
        .flat_map(|r| &r.scope_logs)
        .map(|s| s.log_records.len())
        .sum();
    if records > MAX_RECORDS_PER_REQUEST {
        return Err(ServiceError::InvalidArgument {
            field: "resource_logs".into(),
            message: format!(
                "{records} log records is more than the {MAX_RECORDS_PER_REQUEST} one export may carry: send smaller batches (OTEL_BLRP_MAX_EXPORT_BATCH_SIZE)"
            ),
        });
    }
    let mut reported = Vec::new();
    let mut ignored = 0;
    for record in request
        .resource_logs
        .iter()
        .flat_map(|r| &r.scope_logs)
        .flat_map(|s| &s.log_records)
    {
        let a = &record.attributes;
        let name = event_name(record);
        if (name != TOOL_DECISION_EVENT && name != "tool_decision") || a.len() > MAX_ATTRIBUTES {
            ignored += 1;
            continue;
        }
        let get = |key: &str| text(a, key).map(|t| t.into_owned()).unwrap_or_default();
        reported.push(ReportedDecision {
            tool_use_id: get("tool_use_id"),
            decision: get("decision"),
            source: get("source"),
            tool_name: get("tool_name"),
        });
    }
    Ok((reported, ignored))
}

#[tonic::async_trait]
impl LogsService for Api {
    async fn export(
        &self,
        req: Request<ExportLogsServiceRequest>,
    ) -> Result<Response<ExportLogsServiceResponse>, Status> {
        let p = principal(&req)?;
        let (reported, _ignored) = reported_decisions(req.get_ref())?;
        let ingested = self.service.ingest_client_decisions(&p, reported).await?;
        // ignored records are not the sender's fault; refused decisions are said
        let partial_success = (ingested.refused > 0).then(|| ExportLogsPartialSuccess {
            rejected_log_records: i64::try_from(ingested.refused).unwrap_or(i64::MAX),
            error_message: format!(
                "{} client decisions not kept: without a printable tool_use_id of at most 256 bytes, texts of at most 256, or past the member's {} reports a minute",
                ingested.refused,
                crate::service::REPORTS_PER_MINUTE
            ),
        });
        Ok(Response::new(ExportLogsServiceResponse { partial_success }))
    }
}
