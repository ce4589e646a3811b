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

mod client;
mod log_records;
mod spill;
#[cfg(test)]
mod tests;

use crate::config::OtlpExportConfig;
use crate::store::{NewAuditEvent, StoredDecision};
use client::Client;
use log_records::{attr, audit_record, decision_record, exported, now_ns};
use opentelemetry_proto::tonic::logs::v1::LogRecord;
use opentelemetry_proto::tonic::resource::v1::Resource;
use spill::Spill;
use std::collections::VecDeque;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use toolgate_core::backoff::Backoff;
use tracing::{info, warn};

/// The spill directory's name in the data directory.
pub const SPILL_DIR: &str = "otlp-spill";
/// The event names of the records (`LogRecord.event_name`).
pub const DECISION_EVENT: &str = "toolgate.decision";
pub const AUDIT_EVENT: &str = "toolgate.audit";
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
