//! The OTLP export: decision-log and audit records, as the decision log's writer
//! stored them, sent to an OpenTelemetry collector as log records (gRPC or
//! HTTP/protobuf) by one task, in batches.
//!
//! The writer offers records and never waits: ALLOW and ASK records wait in a bounded
//! queue and are shed (counted) when it is full or the collector fails. DENY and
//! audit records are never shed: past the queue's bound, and as soon as a send fails,
//! they are spilled to `<data_dir>/otlp-spill` (a file per batch, fsync'd) and sent
//! from there, oldest first, until the collector takes them, after a restart too. A
//! record may so be sent twice (its `toolgate.decision.id` tells), never not at all,
//! but for what the spill's bound or a SIGKILL between the store and the spill let go.

use crate::config::{OtlpExportConfig, OtlpProtocol};
use crate::store::{NewAuditEvent, StoredDecision};
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::logs::v1::logs_service_client::LogsServiceClient;
use opentelemetry_proto::tonic::common::v1::{
    AnyValue, ArrayValue, InstrumentationScope, KeyValue, any_value,
};
use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs, SeverityNumber};
use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message as _;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use toolgate_core::backoff::Backoff;
use toolgate_core::secrets;
use tracing::{error, info, warn};

/// The spill directory's name in the data directory.
pub const SPILL_DIR: &str = "otlp-spill";
/// The event names of the records (`LogRecord.event_name`).
pub const DECISION_EVENT: &str = "toolgate.decision";
pub const AUDIT_EVENT: &str = "toolgate.audit";
/// A spill file larger than this is not one this server wrote (a batch is at most
/// 1024 records of at most a few KiB): it is set aside, not read.
const MAX_SPILL_FILE: u64 = 64 * 1024 * 1024;
const RETRY_MIN: Duration = Duration::from_millis(200);
const RETRY_MAX: Duration = Duration::from_secs(10);

/// The exporter the decision log's writer offers records to.
#[derive(Debug)]
pub struct Exporter {
    shared: Arc<Shared>,
    stop: CancellationToken,
    task: std::sync::Mutex<Option<JoinHandle<()>>>,
}

#[derive(Debug)]
struct Shared {
    config: OtlpExportConfig,
    queues: std::sync::Mutex<Queues>,
    notify: tokio::sync::Notify,
    spill: Spill,
}

#[derive(Debug, Default)]
struct Queues {
    /// DENY and audit records: never shed.
    kept: VecDeque<LogRecord>,
    /// ALLOW and ASK records: shed when full.
    other: VecDeque<LogRecord>,
    /// The DENY and audit records of the batch being sent: spilled should the send be
    /// cut short by the end of the shutdown grace.
    sending: Vec<LogRecord>,
}

impl Exporter {
    /// Starts the exporting task (inside a tokio runtime); what an earlier run spilled
    /// is sent first. `Ok(None)` when no endpoint is configured.
    pub fn start(
        config: &OtlpExportConfig,
        data_dir: &Path,
        service_name: &str,
    ) -> Result<Option<Self>, String> {
        let Some(endpoint) = config.endpoint.as_deref() else {
            return Ok(None);
        };
        let client = Client::new(endpoint, config)?;
        let spill = Spill::open(data_dir.join(SPILL_DIR), config.spill_max_bytes)?;
        let shared = Arc::new(Shared {
            config: config.clone(),
            queues: std::sync::Mutex::default(),
            notify: tokio::sync::Notify::new(),
            spill,
        });
        let stop = CancellationToken::new();
        let resource = Resource {
            attributes: vec![
                attr("service.name", service_name),
                attr("service.version", env!("CARGO_PKG_VERSION")),
            ],
            ..Default::default()
        };
        let task = tokio::spawn(run(shared.clone(), client, resource, stop.clone()));
        Ok(Some(Self {
            shared,
            stop,
            task: std::sync::Mutex::new(Some(task)),
        }))
    }

    /// Offers the records one write stored: never waits on the collector. Sampling and
    /// the drop rules apply to ALLOW and ASK records only.
    pub(super) fn offer(&self, decisions: &[StoredDecision], audit: &[&NewAuditEvent]) {
        let config = &self.shared.config;
        let observed = now_ns();
        let mut overflow = Vec::new();
        let mut shed = 0;
        {
            let mut q = self
                .shared
                .queues
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            for d in decisions {
                if d.decision.outcome == "DENY" {
                    let record = decision_record(d, observed);
                    if q.kept.len() < config.queue_size {
                        q.kept.push_back(record);
                    } else {
                        overflow.push(record);
                    }
                } else if exported(config, d) {
                    if q.other.len() < config.queue_size {
                        q.other.push_back(decision_record(d, observed));
                    } else {
                        shed += 1;
                    }
                }
            }
            if config.audit_events {
                for event in audit {
                    let record = audit_record(event, observed);
                    if q.kept.len() < config.queue_size {
                        q.kept.push_back(record);
                    } else {
                        overflow.push(record);
                    }
                }
            }
        }
        if shed > 0 {
            crate::metrics::otlp_export_shed(shed);
        }
        if !overflow.is_empty() {
            self.shared.spill.write_all(overflow, config.batch_size);
        }
        self.shared.notify.notify_one();
    }

    /// At shutdown: sends what waits within `grace`; DENY and audit records not sent
    /// by then are spilled for the next start.
    pub(super) async fn drain(&self, grace: Duration) {
        let task = self
            .task
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        let Some(mut task) = task else { return };
        self.stop.cancel();
        if tokio::time::timeout(grace, &mut task).await.is_err() {
            task.abort();
            let _ = task.await;
            let (kept, other) = self.shared.take_all();
            if !other.is_empty() {
                crate::metrics::otlp_export_shed(other.len());
            }
            if !kept.is_empty() {
                warn!(
                    records = kept.len(),
                    "OTLP export: DENY records not sent within the shutdown grace: spilled for the next start"
                );
                self.shared
                    .spill
                    .write_all(kept, self.shared.config.batch_size);
            }
        }
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl Shared {
    /// The next batch: DENY and audit records first.
    fn take_batch(&self) -> (Vec<LogRecord>, usize) {
        let n = self.config.batch_size;
        let mut q = self
            .queues
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let kept = q.kept.len().min(n);
        let mut batch: Vec<LogRecord> = q.kept.drain(..kept).collect();
        q.sending = batch.clone();
        let other = q.other.len().min(n - kept);
        batch.extend(q.other.drain(..other));
        (batch, kept)
    }

    /// Everything waiting, the DENYs of a batch in flight included.
    fn take_all(&self) -> (Vec<LogRecord>, Vec<LogRecord>) {
        let mut q = self
            .queues
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut kept = std::mem::take(&mut q.sending);
        kept.extend(q.kept.drain(..));
        (kept, q.other.drain(..).collect())
    }
}

/// The exporting task: the spill first, then the queues; a failed batch's DENY and
/// audit records go to the spill, the rest are shed.
async fn run(shared: Arc<Shared>, mut client: Client, resource: Resource, stop: CancellationToken) {
    let mut backoff = Backoff::new(RETRY_MIN, RETRY_MAX);
    let mut outage = false;
    loop {
        let stopping = stop.is_cancelled();
        let result = if let Some((path, records)) = shared.spill.oldest() {
            let n = records.len();
            match client.send(&resource, records).await {
                Ok(()) => {
                    shared.spill.remove(&path);
                    crate::metrics::otlp_export_sent(n);
                    Ok(())
                }
                Err(e) => Err(e),
            }
        } else {
            let (batch, kept) = shared.take_batch();
            if batch.is_empty() {
                if stopping {
                    return;
                }
                tokio::select! {
                    () = shared.notify.notified() => {}
                    () = stop.cancelled() => {}
                }
                continue;
            }
            let n = batch.len();
            let result = client.send(&resource, batch).await;
            let denies = std::mem::take(
                &mut shared
                    .queues
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .sending,
            );
            match result {
                Ok(()) => {
                    crate::metrics::otlp_export_sent(n);
                    Ok(())
                }
                Err(e) => {
                    if n > kept {
                        crate::metrics::otlp_export_shed(n - kept);
                    }
                    shared.spill.write_all(denies, shared.config.batch_size);
                    Err(e)
                }
            }
        };
        match result {
            Ok(()) => {
                if std::mem::take(&mut outage) {
                    info!("OTLP export: the collector takes records again");
                }
                backoff.reset();
            }
            Err(e) => {
                if !std::mem::replace(&mut outage, true) {
                    warn!(error = %e, "OTLP export: the collector failed: DENY records are spilled to disk and retried, others shed");
                }
                // during an outage DENY records go to disk at once, so a crash loses none
                let kept: Vec<LogRecord> = shared
                    .queues
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .kept
                    .drain(..)
                    .collect();
                shared.spill.write_all(kept, shared.config.batch_size);
                if stopping {
                    let (kept, other) = shared.take_all();
                    crate::metrics::otlp_export_shed(other.len());
                    shared.spill.write_all(kept, shared.config.batch_size);
                    return;
                }
                tokio::select! {
                    () = tokio::time::sleep(backoff.next_wait()) => {}
                    () = stop.cancelled() => {}
                }
            }
        }
    }
}

/// Whether an ALLOW or ASK record is exported: not dropped by a rule, and sampled.
fn exported(config: &OtlpExportConfig, d: &StoredDecision) -> bool {
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

fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

fn ms_to_ns(ms: i64) -> u64 {
    u64::try_from(ms).unwrap_or(0).saturating_mul(1_000_000)
}

fn attr(key: &str, value: impl Into<String>) -> KeyValue {
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

/// The collector's client.
enum Client {
    Grpc {
        client: LogsServiceClient<tonic::transport::Channel>,
        metadata: tonic::metadata::MetadataMap,
    },
    Http {
        client: reqwest::Client,
        url: String,
        headers: reqwest::header::HeaderMap,
    },
}

impl Client {
    fn new(endpoint: &str, config: &OtlpExportConfig) -> Result<Self, String> {
        let timeout = Duration::from_secs(config.timeout_secs);
        let bad_header =
            |name: &str| format!("otlp_export.headers.{name}: not a valid header name and value");
        match config.protocol {
            OtlpProtocol::Grpc => {
                let mut channel = tonic::transport::Endpoint::from_shared(endpoint.to_owned())
                    .map_err(|e| format!("otlp_export.endpoint: {e}"))?
                    .timeout(timeout)
                    .connect_timeout(timeout);
                if endpoint.starts_with("https://") {
                    channel = channel
                        .tls_config(tonic::transport::ClientTlsConfig::new().with_native_roots())
                        .map_err(|e| format!("otlp_export.endpoint: TLS: {e}"))?;
                }
                let mut metadata = tonic::metadata::MetadataMap::new();
                for (name, value) in &config.headers {
                    let key = tonic::metadata::MetadataKey::from_bytes(name.as_bytes())
                        .map_err(|_| bad_header(name))?;
                    metadata.insert(key, value.parse().map_err(|_| bad_header(name))?);
                }
                Ok(Self::Grpc {
                    client: LogsServiceClient::new(channel.connect_lazy()),
                    metadata,
                })
            }
            OtlpProtocol::HttpProtobuf => {
                let mut url =
                    url::Url::parse(endpoint).map_err(|e| format!("otlp_export.endpoint: {e}"))?;
                if url.path().is_empty() || url.path() == "/" {
                    url.set_path("/v1/logs");
                }
                let mut headers = reqwest::header::HeaderMap::new();
                for (name, value) in &config.headers {
                    headers.insert(
                        reqwest::header::HeaderName::from_bytes(name.as_bytes())
                            .map_err(|_| bad_header(name))?,
                        value.parse().map_err(|_| bad_header(name))?,
                    );
                }
                let client = reqwest::Client::builder()
                    .timeout(timeout)
                    .redirect(reqwest::redirect::Policy::none())
                    .build()
                    .map_err(|e| format!("otlp_export: cannot build the HTTP client: {e}"))?;
                Ok(Self::Http {
                    client,
                    url: url.into(),
                    headers,
                })
            }
        }
    }

    /// Sends one batch; an error says why it was not taken.
    async fn send(&mut self, resource: &Resource, records: Vec<LogRecord>) -> Result<(), String> {
        let request = ExportLogsServiceRequest {
            resource_logs: vec![ResourceLogs {
                resource: Some(resource.clone()),
                scope_logs: vec![ScopeLogs {
                    scope: Some(InstrumentationScope {
                        name: "toolgate".into(),
                        version: env!("CARGO_PKG_VERSION").into(),
                        ..Default::default()
                    }),
                    log_records: records,
                    ..Default::default()
                }],
                ..Default::default()
            }],
        };
        match self {
            Self::Grpc { client, metadata } => {
                let mut req = tonic::Request::new(request);
                *req.metadata_mut() = metadata.clone();
                let answer = client
                    .export(req)
                    .await
                    .map_err(|s| format!("{:?}: {}", s.code(), s.message()))?;
                if let Some(partial) = answer.into_inner().partial_success
                    && partial.rejected_log_records > 0
                {
                    // refused for what they are: sending them again would not help
                    warn!(rejected = partial.rejected_log_records, message = %partial.error_message, "OTLP export: the collector refused some records");
                }
                Ok(())
            }
            Self::Http {
                client,
                url,
                headers,
            } => {
                let answer = client
                    .post(url.as_str())
                    .headers(headers.clone())
                    .header(reqwest::header::CONTENT_TYPE, "application/x-protobuf")
                    .body(request.encode_to_vec())
                    .send()
                    .await
                    .map_err(|e| e.without_url().to_string())?;
                if answer.status().is_success() {
                    Ok(())
                } else {
                    Err(format!("HTTP {}", answer.status()))
                }
            }
        }
    }
}

/// DENY and audit records the collector has not taken yet, on disk: a file per
/// batch, each a run of length-delimited `LogRecord`s, named by a rising number.
#[derive(Debug)]
struct Spill {
    dir: PathBuf,
    max_bytes: u64,
    /// The bytes in the directory and the next file's number.
    state: std::sync::Mutex<(u64, u64)>,
}

impl Spill {
    fn open(dir: PathBuf, max_bytes: u64) -> Result<Self, String> {
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("otlp_export: cannot create {}: {e}", dir.display()))?;
        let (mut bytes, mut next) = (0, 0);
        for (number, path) in spill_files(&dir) {
            bytes += std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            next = next.max(number + 1);
        }
        if bytes > 0 {
            info!(
                bytes,
                "OTLP export: records an earlier run could not send are sent first"
            );
        }
        Ok(Self {
            dir,
            max_bytes,
            state: std::sync::Mutex::new((bytes, next)),
        })
    }

    /// Writes `records` in files of `batch` records (fsync'd); past the bound they are
    /// dropped (counted).
    fn write_all(&self, records: Vec<LogRecord>, batch: usize) {
        for chunk in records.chunks(batch.max(1)) {
            let mut buf = Vec::new();
            for r in chunk {
                // a Vec grows as needed: encoding into one cannot fail
                let _ = r.encode_length_delimited(&mut buf);
            }
            let mut state = self
                .state
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if state.0 + buf.len() as u64 > self.max_bytes {
                error!(
                    records = chunk.len(),
                    "OTLP export: the spill directory is full: DENY records dropped from the export (they are in the decision log)"
                );
                crate::metrics::otlp_export_dropped(chunk.len());
                continue;
            }
            let path = self.dir.join(format!("{:012}.pb", state.1));
            match write_synced(&path, &buf) {
                Ok(()) => {
                    state.0 += buf.len() as u64;
                    state.1 += 1;
                    crate::metrics::otlp_export_spilled(chunk.len());
                }
                Err(e) => {
                    error!(error = %e, records = chunk.len(), "OTLP export: cannot spill DENY records: dropped from the export");
                    crate::metrics::otlp_export_dropped(chunk.len());
                }
            }
        }
    }

    /// The oldest spill file and its records; an unreadable one is set aside.
    fn oldest(&self) -> Option<(PathBuf, Vec<LogRecord>)> {
        loop {
            let (_, path) = spill_files(&self.dir).into_iter().next()?;
            match read_spill(&path) {
                Ok(records) if !records.is_empty() => return Some((path, records)),
                Ok(_) => self.remove(&path),
                Err(e) => {
                    error!(error = %e, path = %path.display(), "OTLP export: a spill file is unreadable: set aside as .bad");
                    crate::metrics::otlp_export_dropped(1);
                    let len = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
                    if std::fs::rename(&path, path.with_extension("bad")).is_err() {
                        let _ = std::fs::remove_file(&path);
                    }
                    self.forget(len);
                }
            }
        }
    }

    fn remove(&self, path: &Path) {
        let len = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        if let Err(e) = std::fs::remove_file(path) {
            warn!(error = %e, path = %path.display(), "OTLP export: cannot remove a sent spill file");
            return;
        }
        self.forget(len);
    }

    fn forget(&self, len: u64) {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        state.0 = state.0.saturating_sub(len);
    }
}

/// The spill files in `dir`, oldest first.
fn spill_files(dir: &Path) -> Vec<(u64, PathBuf)> {
    let mut files: Vec<(u64, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let path = entry.path();
            let name = path.file_name()?.to_str()?;
            let number = name.strip_suffix(".pb")?.parse().ok()?;
            Some((number, path))
        })
        .collect();
    files.sort();
    files
}

fn write_synced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    let tmp = path.with_extension("tmp");
    let mut file = std::fs::File::create(&tmp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent() {
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}

fn read_spill(path: &Path) -> Result<Vec<LogRecord>, String> {
    let len = std::fs::metadata(path).map_err(|e| e.to_string())?.len();
    if len > MAX_SPILL_FILE {
        return Err(format!("{len} bytes, more than a spill file holds"));
    }
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    let mut buf = bytes.as_slice();
    let mut records = Vec::new();
    while !buf.is_empty() {
        records.push(LogRecord::decode_length_delimited(&mut buf).map_err(|e| e.to_string())?);
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::OtlpDropRule;
    use crate::store::NewDecision;

    /// A record read from its JSON form, as the store would: fields added to the
    /// record later keep their defaults.
    fn stored(outcome: &str, matched: &str, subject: &str) -> StoredDecision {
        let decision: NewDecision = serde_json::from_value(serde_json::json!({
            "at_ms": 1_700_000_000_000_i64, "team_id": "t", "user_id": "u",
            "principal": "member:u", "agent_id": "", "role": "", "client": "claude-code",
            "source": "evaluate", "kind": "shell", "server": "", "tool": "", "action": "",
            "subject": subject, "subject_bytes": subject.len(), "subject_sha256": "",
            "outcome": outcome, "reason": "COMMAND_ALLOWED", "matched_entry": matched,
            "revision": 3,
        }))
        .unwrap();
        StoredDecision { id: 7, decision }
    }

    fn value<'a>(r: &'a LogRecord, key: &str) -> Option<&'a any_value::Value> {
        r.attributes
            .iter()
            .find(|kv| kv.key == key)
            .and_then(|kv| kv.value.as_ref()?.value.as_ref())
    }

    #[test]
    fn a_record_carries_its_attributes_masked() {
        let r = decision_record(
            &stored(
                "DENY",
                "",
                "curl -H 'Authorization: Bearer ghp_abcdefghijklmnopqrstuvwxyz0123456789'",
            ),
            1,
        );
        assert_eq!(r.event_name, DECISION_EVENT);
        assert_eq!(r.severity_number, SeverityNumber::Warn as i32);
        assert_eq!(r.time_unix_nano, 1_700_000_000_000_000_000);
        assert_eq!(
            value(&r, "toolgate.decision.id"),
            Some(&any_value::Value::IntValue(7))
        );
        assert_eq!(
            value(&r, "user.id"),
            Some(&any_value::Value::StringValue("u".into()))
        );
        let Some(any_value::Value::StringValue(line)) = value(&r, "process.command_line") else {
            panic!("no command line: {r:?}");
        };
        assert!(!line.contains("ghp_abcdef"), "{line}");
        assert!(!format!("{r:?}").contains("ghp_abcdef"));
        assert_eq!(value(&r, "toolgate.effects_unknown"), None);
    }

    /// An ALLOW resting on programs whose effects are unknown names them, an array.
    #[test]
    fn a_record_names_its_unknown_effects() {
        let mut d = stored("ALLOW", "zip", "zip -r a.zip . && fakeroot make");
        d.decision.effects_unknown = "zip\nfakeroot".into();
        let r = decision_record(&d, 1);
        let Some(any_value::Value::ArrayValue(programs)) = value(&r, "toolgate.effects_unknown")
        else {
            panic!("no unknown effects: {r:?}");
        };
        let names: Vec<_> = programs
            .values
            .iter()
            .filter_map(|v| match &v.value {
                Some(any_value::Value::StringValue(s)) => Some(s.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(names, ["zip", "fakeroot"]);
    }

    #[test]
    fn rules_drop_allow_records_and_never_a_deny() {
        let config = OtlpExportConfig {
            drop: vec![OtlpDropRule {
                outcome: "allow".into(),
                matched_entry: Some("@readonly".into()),
                ..Default::default()
            }],
            ask_sample_rate: 0.0,
            ..Default::default()
        };
        assert!(!exported(&config, &stored("ALLOW", "@readonly", "ls")));
        assert!(exported(
            &config,
            &stored("ALLOW", "git status", "git status")
        ));
        assert!(!exported(&config, &stored("ASK", "", "rm x")));
    }

    #[test]
    fn spill_files_read_back_in_order_and_respect_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let spill = Spill::open(dir.path().join(SPILL_DIR), 4096).unwrap();
        let records: Vec<LogRecord> = (0..5)
            .map(|i| decision_record(&stored("DENY", "", &format!("rm {i}")), 1))
            .collect();
        spill.write_all(records.clone(), 2);
        let (first, got) = spill.oldest().unwrap();
        assert_eq!(got, records[..2]);
        spill.remove(&first);
        // a new spill (a restart) counts what is there and goes on numbering
        let again = Spill::open(dir.path().join(SPILL_DIR), 4096).unwrap();
        let (_, got) = again.oldest().unwrap();
        assert_eq!(got, records[2..4]);
        // past the bound nothing more is written
        let big: Vec<LogRecord> = (0..100)
            .map(|i| decision_record(&stored("DENY", "", &"x".repeat(100 + i)), 1))
            .collect();
        again.write_all(big, 100);
        assert_eq!(spill_files(&dir.path().join(SPILL_DIR)).len(), 2);
        // hostile files: garbage is set aside, not sent
        std::fs::write(
            dir.path().join(SPILL_DIR).join("000000000000.pb"),
            b"\xff\xff\xff",
        )
        .unwrap();
        let (path, _) = again.oldest().unwrap();
        assert!(path.ends_with("000000000001.pb"), "{path:?}");
        assert!(dir.path().join(SPILL_DIR).join("000000000000.bad").exists());
    }
}
