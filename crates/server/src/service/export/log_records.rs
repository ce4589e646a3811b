//! Decision-log and audit records as OTLP log records: the semantic conventions'
//! attribute names, texts masked again; and which ALLOW and ASK records are exported.

use super::{AUDIT_EVENT, DECISION_EVENT};
use crate::config::OtlpExportConfig;
use crate::store::{NewAuditEvent, StoredDecision};
use opentelemetry_proto::tonic::common::v1::{AnyValue, ArrayValue, KeyValue, any_value};
use opentelemetry_proto::tonic::logs::v1::{LogRecord, SeverityNumber};
use toolgate_core::secrets;

/// Whether an ALLOW or ASK record is exported: not dropped by a rule, and sampled.
pub(super) fn exported(config: &OtlpExportConfig, d: &StoredDecision) -> bool {
    let d = &d.decision;
    let dropped = config.drop.iter().any(|rule| {
        rule.outcome.eq_ignore_ascii_case(&d.outcome)
            && rule
                .matched_entry
                .as_deref()
                .is_none_or(|m| m == d.matched_entry)
            && rule.reason.as_deref().is_none_or(|r| r == d.reason)
            && rule.kind.as_deref().is_none_or(|k| k == d.kind)
            && rule.client.as_deref().is_none_or(|c| c == d.client)
    });
    if dropped {
        return false;
    }
    let rate = match d.outcome.as_str() {
        "ALLOW" => config.allow_sample_rate,
        _ => config.ask_sample_rate,
    };
    rate >= 1.0 || rand::random::<f64>() < rate
}

pub(super) fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

fn ms_to_ns(ms: i64) -> u64 {
    u64::try_from(ms).unwrap_or(0).saturating_mul(1_000_000)
}

pub(super) fn attr(key: &str, value: impl Into<String>) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(value.into())),
        }),
        ..Default::default()
    }
}

fn int_attr(key: &str, value: u64) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue {
            value: Some(any_value::Value::IntValue(
                i64::try_from(value).unwrap_or(i64::MAX),
            )),
        }),
        ..Default::default()
    }
}

/// One decision as a log record: the semantic conventions' names where they have one
/// (`user.id`, `gen_ai.agent.id`, `gen_ai.tool.name`, `process.command_line`,
/// `file.path`), `toolgate.*` for the rest. Texts are masked again (they were when
/// recorded; the table may have grown since a record was spilled).
pub fn decision_record(stored: &StoredDecision, observed_ns: u64) -> LogRecord {
    let d = &stored.decision;
    let subject = secrets::mask(&d.subject);
    let severity = match d.outcome.as_str() {
        "DENY" => SeverityNumber::Warn,
        "ASK" => SeverityNumber::Info2,
        _ => SeverityNumber::Info,
    };
    let mut attributes = vec![
        int_attr("toolgate.decision.id", stored.id),
        attr("toolgate.decision.outcome", d.outcome.as_str()),
        attr("toolgate.decision.reason", d.reason.as_str()),
        attr("toolgate.team.id", d.team_id.as_str()),
        attr("user.id", d.user_id.as_str()),
        attr("toolgate.principal", d.principal.as_str()),
        attr("toolgate.client", d.client.as_str()),
        attr("toolgate.source", d.source.as_str()),
        attr("toolgate.call.kind", d.kind.as_str()),
        attr("toolgate.call.subject", &*subject),
        int_attr("toolgate.call.subject_bytes", d.subject_bytes),
        int_attr("toolgate.policy.revision", d.revision),
    ];
    let optional = [
        ("gen_ai.agent.id", &d.agent_id),
        ("toolgate.agent.role", &d.role),
        ("toolgate.decision.matched_entry", &d.matched_entry),
        ("toolgate.call.subject_sha256", &d.subject_sha256),
        ("toolgate.call.action", &d.action),
        ("gen_ai.tool.call.id", &d.tool_use_id),
    ];
    for (key, value) in optional {
        if !value.is_empty() {
            attributes.push(attr(key, value.as_str()));
        }
    }
    match d.kind.as_str() {
        "mcp" => {
            attributes.push(attr("gen_ai.tool.name", d.tool.as_str()));
            attributes.push(attr("toolgate.mcp.server", d.server.as_str()));
        }
        "shell" => attributes.push(attr("process.command_line", &*subject)),
        "delete_file" => attributes.push(attr("file.path", &*subject)),
        _ => {}
    }
    // the programs an ALLOW rested on unchecked, as an array of strings
    if !d.effects_unknown.is_empty() {
        let programs = d
            .unknown_effects()
            .map(|p| AnyValue {
                value: Some(any_value::Value::StringValue(secrets::mask(p).into_owned())),
            })
            .collect();
        attributes.push(KeyValue {
            key: "toolgate.effects_unknown".to_owned(),
            value: Some(AnyValue {
                value: Some(any_value::Value::ArrayValue(ArrayValue {
                    values: programs,
                })),
            }),
            ..Default::default()
        });
    }
    if d.count > 1 {
        attributes.push(int_attr("toolgate.decision.count", d.count));
        attributes.push(int_attr(
            "toolgate.decision.first_time_unix_ms",
            u64::try_from(d.first_at_ms).unwrap_or(0),
        ));
    }
    LogRecord {
        time_unix_nano: ms_to_ns(d.at_ms),
        observed_time_unix_nano: observed_ns,
        severity_number: severity as i32,
        severity_text: d.outcome.clone(),
        body: Some(AnyValue {
            value: Some(any_value::Value::StringValue(format!(
                "{} {} {} ({})",
                d.outcome, d.kind, subject, d.reason
            ))),
        }),
        attributes,
        event_name: DECISION_EVENT.to_owned(),
        ..Default::default()
    }
}

/// One audit record as a log record; its detail is the body (JSON, every string in
/// it masked).
pub fn audit_record(event: &NewAuditEvent, observed_ns: u64) -> LogRecord {
    let mut detail = event.detail.clone();
    mask_json(&mut detail);
    LogRecord {
        time_unix_nano: observed_ns,
        observed_time_unix_nano: observed_ns,
        severity_number: SeverityNumber::Info as i32,
        severity_text: "INFO".into(),
        body: Some(AnyValue {
            value: Some(any_value::Value::StringValue(detail.to_string())),
        }),
        attributes: vec![
            attr("toolgate.audit.kind", event.kind.as_str()),
            attr("toolgate.audit.actor", event.actor.as_str()),
            attr("toolgate.team.id", event.team_id.as_str()),
            int_attr("toolgate.policy.revision", event.revision),
        ],
        event_name: AUDIT_EVENT.to_owned(),
        ..Default::default()
    }
}

fn mask_json(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::String(s) => {
            if let std::borrow::Cow::Owned(masked) = secrets::mask(s) {
                *s = masked;
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(mask_json),
        serde_json::Value::Object(map) => map.values_mut().for_each(mask_json),
        _ => {}
    }
}
