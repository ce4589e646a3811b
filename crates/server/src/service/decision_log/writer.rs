//! The decision log's writer as the service holds it: queues records for the writing
//! task (journaling a DENY's first), offers ALLOW and ASK records, publishes what is
//! written to watchers, and drains within the shutdown grace.

use super::offered::Offered;
use super::record::{Entry, Record};
use super::write_task::{QUEUE, Writer};
use crate::hub::Hub;
use crate::service::budget::{Budgets, FLUSH_EVERY};
use crate::service::deny_journal::DenyJournal;
use crate::service::export::Exporter;
use crate::store::{EncodedDecisions, NewAuditEvent, StoredDecision, TEXT_COUNT};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

/// The spill file's name in the data directory, of versions before the DENY journal:
/// its records are moved into the journal at start.
pub const SPILL_FILE: &str = "audit-spill.jsonl";

/// The sending side, held by the service.
#[derive(Debug)]
pub struct AuditWriter {
    tx: mpsc::Sender<Entry>,
    /// ALLOW and ASK decision-log records: offered, shed when full.
    offered: Arc<Offered>,
    /// Decision-log records as they are written, for `WatchDecisions`.
    published: tokio::sync::broadcast::Sender<Arc<StoredDecision>>,
    /// Records the writer holds, not yet written (the metrics' queue depth).
    held: Arc<std::sync::atomic::AtomicUsize>,
    journal: Option<Arc<DenyJournal>>,
    /// The budgets per principal and team (`budget.rs`).
    budgets: Arc<Budgets>,
    stop: CancellationToken,
    task: std::sync::Mutex<Option<JoinHandle<()>>>,
    /// Writes the budgets' counted records and shed events every [`FLUSH_EVERY`].
    flusher: std::sync::Mutex<Option<JoinHandle<()>>>,
    /// The OTLP export of what is written, once set (`Service::with_export`).
    export: Arc<std::sync::OnceLock<Exporter>>,
}

/// Dropped without `shutdown` (an `App` dropped in place): the flusher holds a
/// sender, so without this the writer would never see its channel close and would
/// keep the journal, locked, for the life of the runtime.
impl Drop for AuditWriter {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl AuditWriter {
    /// Starts the writer, first writing what a previous run left in the journal.
    pub(in crate::service) fn start(
        hub: Arc<Hub>,
        journal: Option<Arc<DenyJournal>>,
        budgets: Budgets,
        log_queue: usize,
        watch_buffer: usize,
    ) -> Self {
        let budgets = Arc::new(budgets);
        let (tx, rx) = mpsc::channel(QUEUE);
        let offered = Arc::new(Offered::new(log_queue.max(1)));
        let (published, _) = tokio::sync::broadcast::channel(watch_buffer.max(1));
        let stop = CancellationToken::new();
        let replayed = journal
            .as_ref()
            .map(|j| j.take_replayed())
            .unwrap_or_default();
        let pending: VecDeque<Entry> = replayed
            .into_iter()
            .map(|(record, segment)| Entry {
                record,
                segment: Some(segment),
            })
            .collect();
        let held = Arc::new(std::sync::atomic::AtomicUsize::new(pending.len()));
        let export = Arc::new(std::sync::OnceLock::new());
        let writer = Writer {
            export: export.clone(),
            offered: offered.clone(),
            encoded: EncodedDecisions::default(),
            spare: EncodedDecisions::default(),
            published: published.clone(),
            held: held.clone(),
            hub,
            journal: journal.clone(),
            pending,
            outage: false,
        };
        let task = tokio::spawn(writer.run(rx, stop.clone()));
        let flusher = tokio::spawn(flush_budgets(
            budgets.clone(),
            journal.clone(),
            tx.clone(),
            stop.clone(),
        ));
        Self {
            tx,
            offered,
            published,
            held,
            journal,
            budgets,
            stop,
            task: std::sync::Mutex::new(Some(task)),
            flusher: std::sync::Mutex::new(Some(flusher)),
            export,
        }
    }

    /// Exports what is written from now on (once; a second exporter is refused).
    pub(in crate::service) fn set_export(&self, exporter: Exporter) -> bool {
        self.export.set(exporter).is_ok()
    }

    /// Queues a record (not journaled: an ALLOW's or ASK's audit record); a full queue
    /// makes the caller wait for room rather than lose it. Past its principal's budget
    /// it is shed (counted).
    pub async fn send(&self, event: NewAuditEvent) {
        if !self.budgets.admit_audit(&event) {
            return;
        }
        self.send_entry(Entry {
            record: Record::Audit(event),
            segment: None,
        })
        .await;
    }

    /// A DENY's records: those within their principal's budget journaled (the call
    /// returns once they are on disk), then queued for the store, waiting for room;
    /// the rest counted by the budgets, written with their counts every
    /// [`FLUSH_EVERY`].
    pub(in crate::service) async fn record_deny(&self, records: Vec<Record>) {
        let records = self.budgets.admit_denies(records);
        if !records.is_empty() {
            journal_and_queue(self.journal.as_deref(), &self.tx, records).await;
        }
    }

    /// An audit record that must not be lost nor shed (its caller bounds it):
    /// journaled (returning once on disk), then written and exported as a DENY's are.
    pub(in crate::service) async fn record_journaled(&self, event: NewAuditEvent) {
        journal_and_queue(
            self.journal.as_deref(),
            &self.tx,
            vec![Record::Audit(event)],
        )
        .await;
    }

    async fn send_entry(&self, entry: Entry) {
        send_entry(&self.tx, entry).await;
    }

    /// Offers an ALLOW or ASK decision-log record: past its principal's budget, or
    /// when the queue is full, it is shed (and counted) rather than waited for.
    pub(in crate::service) fn offer(
        &self,
        at_ms: i64,
        texts: [&str; TEXT_COUNT],
        subject_bytes: u64,
        revision: u64,
    ) {
        if !self.budgets.admit_offered(&texts, at_ms) {
            return;
        }
        self.offered.offer(at_ms, texts, subject_bytes, revision);
    }

    /// Decision-log records from now on, as they are written.
    pub(in crate::service) fn subscribe(
        &self,
    ) -> tokio::sync::broadcast::Receiver<Arc<StoredDecision>> {
        self.published.subscribe()
    }

    /// Records waiting to be written: queued for the writer or held by it.
    pub fn waiting(&self) -> usize {
        let queued = self.tx.max_capacity() - self.tx.capacity();
        queued + self.offered.waiting() + self.held.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Writes what is queued, within `grace`; what the store does not take by then
    /// stays in the journal for the next start.
    pub async fn drain(&self, grace: Duration) {
        let task = self
            .task
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        let Some(task) = task else { return };
        let deadline = tokio::time::Instant::now() + grace;
        let flusher = self
            .flusher
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(flusher) = flusher {
            flusher.abort();
        }
        // what the budgets counted goes with the rest
        let due = self.budgets.take_due();
        if !due.is_empty() {
            journal_and_queue(self.journal.as_deref(), &self.tx, due).await;
        }
        self.stop.cancel();
        // the DENY records are in the journal already, so a write cut short by the
        // deadline loses nothing
        if tokio::time::timeout(grace, task).await.is_err() {
            warn!(
                grace_ms = grace.as_millis() as u64,
                "deny audit records not written within the shutdown grace: left in the deny journal for the next start"
            );
        }
        if let Some(journal) = &self.journal {
            journal.close();
        }
        // what was written is exported within what is left of the grace (DENY records
        // not sent by then are spilled for the next start)
        if let Some(export) = self.export.get() {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            export.drain(left.max(Duration::from_millis(500))).await;
        }
    }
}

/// Journals records, then queues them for the writer.
async fn journal_and_queue(
    journal: Option<&DenyJournal>,
    tx: &mpsc::Sender<Entry>,
    records: Vec<Record>,
) {
    let segment = match journal {
        Some(journal) => journal.append(&records).await,
        None => None,
    };
    for record in records {
        send_entry(tx, Entry { record, segment }).await;
    }
}

async fn send_entry(tx: &mpsc::Sender<Entry>, entry: Entry) {
    if tx.send(entry).await.is_err() {
        // only once the writer is gone, after the drain at shutdown (a journaled
        // record is written at the next start)
        debug!("audit writer stopped: a record was not queued");
    }
}

/// Every [`FLUSH_EVERY`], the budgets' counted records and shed events are journaled
/// and queued as a DENY's records are (past the budgets: they are what the budgets
/// left of many records).
async fn flush_budgets(
    budgets: Arc<Budgets>,
    journal: Option<Arc<DenyJournal>>,
    tx: mpsc::Sender<Entry>,
    stop: CancellationToken,
) {
    let mut every = tokio::time::interval(FLUSH_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = every.tick() => {}
        }
        let due = budgets.take_due();
        if !due.is_empty() {
            journal_and_queue(journal.as_deref(), &tx, due).await;
        }
    }
}
