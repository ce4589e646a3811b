//! The OTLP sections: `otlp_export`, where decision and audit records are sent as
//! OpenTelemetry log records, and which of them are left out.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How records reach the collector.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OtlpProtocol {
    /// OTLP/gRPC (`LogsService/Export`), usually port 4317.
    #[default]
    Grpc,
    /// OTLP/HTTP with a protobuf body (`POST /v1/logs`), usually port 4318.
    HttpProtobuf,
}

/// A rule that leaves a kind of ALLOW or ASK record out of the export: every field
/// given must match (exactly, case-sensitive); a rule never matches a DENY.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OtlpDropRule {
    /// `allow` or `ask`.
    pub outcome: String,
    /// The list entry that decided, e.g. `@readonly`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matched_entry: Option<String>,
    /// The reason's stable name, e.g. `COMMAND_ALLOWED`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `mcp`, `shell` or `delete_file`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The client that asked, e.g. `claude-code`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
}

/// The export of decision-log and audit records to an OpenTelemetry collector.
// Debug by hand (below): the endpoint and headers may carry credentials
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OtlpExportConfig {
    /// The collector: `http://HOST:4317` for gRPC, `http://HOST:4318` (or the full
    /// `/v1/logs` URL) for HTTP/protobuf; unset exports nothing.
    pub endpoint: Option<String>,
    pub protocol: OtlpProtocol,
    /// Sent with every export, e.g. `authorization`. Treated as secrets:
    /// `GetServerConfig` and `check-config` show the names only.
    pub headers: BTreeMap<String, String>,
    /// ALLOW and ASK records waiting to be sent before further ones are shed (and
    /// counted); DENY records past it are spilled to disk instead.
    pub queue_size: usize,
    /// Records sent in one export request.
    pub batch_size: usize,
    /// Seconds one export request may take.
    pub timeout_secs: u64,
    /// Most bytes of DENY records kept on disk (`<data_dir>/otlp-spill`) while the
    /// collector cannot take them; sent again after a restart. Past it, further ones
    /// are dropped (counted).
    pub spill_max_bytes: u64,
    /// The share of ALLOW records exported, 0.0 to 1.0 (of those the decision log
    /// keeps). DENY records are always exported.
    pub allow_sample_rate: f64,
    /// The share of ASK records exported, 0.0 to 1.0.
    pub ask_sample_rate: f64,
    /// ALLOW and ASK records left out of the export (they stay in the decision log).
    pub drop: Vec<OtlpDropRule>,
    /// Exports the audit records the decision log's writer holds (a DENY's, the
    /// `decisions_shed` and `decision_made` events) too.
    pub audit_events: bool,
}

impl Default for OtlpExportConfig {
    fn default() -> Self {
        Self {
            endpoint: None,
            protocol: OtlpProtocol::Grpc,
            headers: BTreeMap::new(),
            queue_size: 65_536,
            batch_size: 512,
            timeout_secs: 10,
            spill_max_bytes: 256 * 1024 * 1024,
            allow_sample_rate: 1.0,
            ask_sample_rate: 1.0,
            drop: Vec::new(),
            audit_events: true,
        }
    }
}

impl std::fmt::Debug for OtlpExportConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let header_names: Vec<&str> = self.headers.keys().map(String::as_str).collect();
        f.debug_struct("OtlpExportConfig")
            .field(
                "endpoint",
                &self.endpoint.as_deref().map(super::redact::redact_url),
            )
            .field("protocol", &self.protocol)
            .field("headers", &header_names)
            .field("queue_size", &self.queue_size)
            .field("batch_size", &self.batch_size)
            .field("timeout_secs", &self.timeout_secs)
            .field("spill_max_bytes", &self.spill_max_bytes)
            .field("allow_sample_rate", &self.allow_sample_rate)
            .field("ask_sample_rate", &self.ask_sample_rate)
            .field("drop", &self.drop)
            .field("audit_events", &self.audit_events)
            .finish()
    }
}

/// The largest batch one request may carry: a collector's default receive limit is
/// 4 MiB, and a record is at most a few KiB with a long command kept.
const MAX_BATCH: usize = 1024;

impl OtlpExportConfig {
    /// Every problem of the section, each naming its key and the fix.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if let Some(endpoint) = &self.endpoint {
            let parsed = url::Url::parse(endpoint).ok();
            let ok = parsed.as_ref().is_some_and(|u| {
                matches!(u.scheme(), "http" | "https")
                    && u.host_str().is_some_and(|h| !h.is_empty())
            });
            if !ok {
                problems.push(format!(
                    "otlp_export.endpoint: {:?} is not an http:// or https:// URL with a host: use http://HOST:4317 (gRPC) or http://HOST:4318 (protocol: http_protobuf)",
                    super::redact::redact_url(endpoint)
                ));
            }
            if self.protocol == OtlpProtocol::Grpc
                && parsed
                    .as_ref()
                    .is_some_and(|u| u.path() != "/" && !u.path().is_empty())
            {
                problems.push(
                    "otlp_export.endpoint: a gRPC endpoint has no path: give http://HOST:PORT, or set otlp_export.protocol: http_protobuf for a /v1/logs URL"
                        .into(),
                );
            }
        }
        for (name, value) in &self.headers {
            let name_ok = !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-_.".contains(&b));
            if !name_ok || name.ends_with("-bin") {
                problems.push(format!(
                    "otlp_export.headers: {name:?} is not a header name: use lowercase letters, digits, '-', '_' or '.'"
                ));
            }
            if !value.bytes().all(|b| (0x20..0x7f).contains(&b)) {
                // the value is a secret: name the header only
                problems.push(format!(
                    "otlp_export.headers.{name}: the value must be printable ASCII"
                ));
            }
        }
        for (key, rate) in [
            ("allow_sample_rate", self.allow_sample_rate),
            ("ask_sample_rate", self.ask_sample_rate),
        ] {
            if !(0.0..=1.0).contains(&rate) {
                problems.push(format!(
                    "otlp_export.{key}: {rate} is outside 0.0 to 1.0: give the share of records to export, e.g. 0.1"
                ));
            }
        }
        if self.queue_size == 0 {
            problems.push("otlp_export.queue_size: must be at least 1, e.g. 65536".into());
        }
        if !(1..=MAX_BATCH).contains(&self.batch_size) {
            problems.push(format!(
                "otlp_export.batch_size: {} is outside 1 to {MAX_BATCH}: a collector refuses large requests, e.g. 512",
                self.batch_size
            ));
        }
        if !(1..=300).contains(&self.timeout_secs) {
            problems.push(format!(
                "otlp_export.timeout_secs: {} is outside 1 to 300, e.g. 10",
                self.timeout_secs
            ));
        }
        if self.spill_max_bytes < 1024 * 1024 {
            problems.push(format!(
                "otlp_export.spill_max_bytes: {} is less than 1 MiB: give room for the DENY records of a collector outage, e.g. 268435456",
                self.spill_max_bytes
            ));
        }
        for (i, rule) in self.drop.iter().enumerate() {
            match rule.outcome.as_str() {
                "allow" | "ask" => {}
                "deny" => problems.push(format!(
                    "otlp_export.drop[{i}].outcome: every DENY is exported: a rule may drop allow or ask records only"
                )),
                other => problems.push(format!(
                    "otlp_export.drop[{i}].outcome: {other:?} is not allow or ask: name the outcome the rule drops"
                )),
            }
            if let Some(kind) = &rule.kind
                && !matches!(kind.as_str(), "mcp" | "shell" | "delete_file")
            {
                problems.push(format!(
                    "otlp_export.drop[{i}].kind: {kind:?} is not mcp, shell or delete_file"
                ));
            }
            for (field, value) in [
                ("matched_entry", &rule.matched_entry),
                ("reason", &rule.reason),
                ("client", &rule.client),
            ] {
                if value.as_deref().is_some_and(str::is_empty) {
                    problems.push(format!(
                        "otlp_export.drop[{i}].{field}: is empty: leave it out to match any, or give the value to match"
                    ));
                }
            }
        }
        problems
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bad_setting_is_named_with_its_fix() {
        type Change = fn(&mut OtlpExportConfig);
        let rows: &[(&str, Change, &str)] = &[
            (
                "no scheme",
                |c| c.endpoint = Some("collector:4317".into()),
                "otlp_export.endpoint",
            ),
            (
                "file url",
                |c| c.endpoint = Some("file:///etc/passwd".into()),
                "otlp_export.endpoint",
            ),
            (
                "grpc path",
                |c| c.endpoint = Some("http://c:4317/v1/logs".into()),
                "protocol: http_protobuf",
            ),
            (
                "header name",
                |c| {
                    c.headers.insert("Bad Name".into(), "x".into());
                },
                "otlp_export.headers",
            ),
            (
                "header value",
                |c| {
                    c.headers.insert("authorization".into(), "a\nb".into());
                },
                "otlp_export.headers.authorization",
            ),
            (
                "rate",
                |c| c.allow_sample_rate = 1.5,
                "otlp_export.allow_sample_rate",
            ),
            (
                "nan rate",
                |c| c.ask_sample_rate = f64::NAN,
                "otlp_export.ask_sample_rate",
            ),
            ("queue", |c| c.queue_size = 0, "otlp_export.queue_size"),
            (
                "batch",
                |c| c.batch_size = 100_000,
                "otlp_export.batch_size",
            ),
            (
                "timeout",
                |c| c.timeout_secs = 0,
                "otlp_export.timeout_secs",
            ),
            (
                "spill",
                |c| c.spill_max_bytes = 10,
                "otlp_export.spill_max_bytes",
            ),
            (
                "deny rule",
                |c| {
                    c.drop.push(OtlpDropRule {
                        outcome: "deny".into(),
                        ..Default::default()
                    })
                },
                "every DENY is exported",
            ),
            (
                "odd outcome",
                |c| {
                    c.drop.push(OtlpDropRule {
                        outcome: "ALLOW!".into(),
                        ..Default::default()
                    })
                },
                "otlp_export.drop[0].outcome",
            ),
            (
                "kind",
                |c| {
                    c.drop.push(OtlpDropRule {
                        outcome: "allow".into(),
                        kind: Some("x".into()),
                        ..Default::default()
                    })
                },
                "otlp_export.drop[0].kind",
            ),
            (
                "empty",
                |c| {
                    c.drop.push(OtlpDropRule {
                        outcome: "allow".into(),
                        matched_entry: Some(String::new()),
                        ..Default::default()
                    })
                },
                "otlp_export.drop[0].matched_entry",
            ),
        ];
        assert!(OtlpExportConfig::default().problems().is_empty());
        for (name, change, expected) in rows {
            let mut c = OtlpExportConfig::default();
            change(&mut c);
            let problems = c.problems();
            assert!(
                problems.iter().any(|p| p.contains(expected)),
                "{name}: {problems:?}"
            );
        }
        // a header's value never appears in a problem
        let mut c = OtlpExportConfig::default();
        c.headers
            .insert("authorization".into(), "Bearer s3cr3t\n".into());
        assert!(c.problems().iter().all(|p| !p.contains("s3cr3t")));
    }
}
