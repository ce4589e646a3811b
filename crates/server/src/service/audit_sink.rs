//! The DENY audit sink the service owns, which is the decision log's writer too: each
//! denial becomes a bounded record, journaled on disk before its answer leaves
//! (`deny_journal.rs`), then passed through a bounded queue to one task that writes
//! records in batches, keeps them through a store outage, and is drained within the
//! shutdown grace.
//!
//! Decision-log records of DENYs take the same queue as the audit records (they wait
//! for room, never shed). ALLOW and ASK records take a second queue that is offered to,
//! never waited on: when it is full, or while the store is away, they are shed and
//! counted, so recording them never slows a decision.
//!
//! A DENY's records stay in the journal until the store has them: a process that dies
//! at any moment, during an outage or not, loses none; the next start replays them.

use super::Service;
use super::budget::{Budgets, FLUSH_EVERY};
use super::deny_journal::DenyJournal;
use crate::auth::Principal;
use crate::hub::Hub;
use crate::policy::{Call, Decision};
use crate::store::{
    EncodedDecisions, NewAuditEvent, PackedDecision, StoreError, StoredDecision, TEXT_COUNT,
};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use toolgate_core::backoff::Backoff;
use tracing::{debug, error, info, warn};

/// The spill file's name in the data directory, of versions before the DENY journal:
/// its records are moved into the journal at start.
pub const SPILL_FILE: &str = "audit-spill.jsonl";
/// The DENY journal's directory in the data directory, unless configured.
pub const JOURNAL_DIR: &str = "deny-journal";
/// Pending DENY audit records before a denying call waits for room.
const QUEUE: usize = 8_192;
/// Records written in one transaction: one commit (one fsync) each, so under load a
/// batch is as large as what waits, up to this.
const BATCH: usize = 4096;
/// Records waiting at once that make a batch wait for more, and how long at most.
const LINGER_FROM: usize = 32;
const LINGER: Duration = Duration::from_millis(50);
/// DENY records kept in memory while the store fails, before the oldest are let go
/// (those journaled stay in the journal, written at the next start).
const MAX_PENDING: usize = 100_000;
/// The first and the longest wait between tries of a failed write.
const RETRY_MIN: Duration = Duration::from_millis(100);
const RETRY_MAX: Duration = Duration::from_secs(5);
/// Records journaled at once at shutdown.
const SHUTDOWN_GROUP: usize = 256;
/// Tries of a batch that fails for another reason than an unreachable store.
const REJECTED_TRIES: u32 = 5;

/// One record the writer keeps: an audit record or a decision-log record. A journal
/// (or an older version's spill file) written before the decision log existed holds
/// audit records only, which still read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub(super) enum Record {
    Decision { decision: PackedDecision },
    Audit(NewAuditEvent),
}

/// A record on its way to the store, with the journal segment that holds it (none:
/// it could not be journaled, or needs not be).
#[derive(Debug)]
pub(super) struct Entry {
    record: Record,
    segment: Option<u64>,
}

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
    export: Arc<std::sync::OnceLock<super::export::Exporter>>,
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
    pub(super) fn start(
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
            budgets: budgets.clone(),
            fresh: EncodedDecisions::default(),
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
    pub(super) fn set_export(&self, exporter: super::export::Exporter) -> bool {
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
    pub(super) async fn record_deny(&self, records: Vec<Record>) {
        let records = self.budgets.admit_denies(records);
        if !records.is_empty() {
            journal_and_queue(self.journal.as_deref(), &self.tx, records).await;
        }
    }

    /// An audit record that must not be lost nor shed (its caller bounds it):
    /// journaled (returning once on disk), then written and exported as a DENY's are.
    pub(super) async fn record_journaled(&self, event: NewAuditEvent) {
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

    /// Offers an ALLOW or ASK decision-log record: when the queue is full it is shed
    /// (and counted) rather than waited for.
    pub(super) fn offer(
        &self,
        at_ms: i64,
        texts: [&str; TEXT_COUNT],
        subject_bytes: u64,
        revision: u64,
    ) {
        self.offered.offer(at_ms, texts, subject_bytes, revision);
    }

    /// Decision-log records from now on, as they are written.
    pub(super) fn subscribe(&self) -> tokio::sync::broadcast::Receiver<Arc<StoredDecision>> {
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

/// The log's queue of ALLOW and ASK records: a buffer of encoded records per shard,
/// a thread writing to its own shard (so offers rarely meet on a lock), bounded in
/// records. An offered record costs no allocation, queue slot or free of its own:
/// as a record of its own through a channel it cost the decision path about a
/// microsecond. The count all threads read is updated once per [`COUNT_STEP`]
/// records of a shard, not per record (each update moves its cache line between
/// cores), so the bound holds within that many records per shard.
#[derive(Debug)]
struct Offered {
    shards: Box<[std::sync::Mutex<Shard>]>,
    /// Records in the shards, counted in steps.
    count: std::sync::atomic::AtomicUsize,
    capacity: usize,
    /// Wakes the writer: a notice given while it is busy waits for it.
    notify: tokio::sync::Notify,
}

#[derive(Debug, Default)]
struct Shard {
    records: EncodedDecisions,
    /// Records not yet added to `Offered::count`.
    uncounted: usize,
}

/// Shards of the offered queue: more than the threads that decide, usually.
const OFFERED_SHARDS: usize = 16;
/// Records a shard adds to the shared count at once.
const COUNT_STEP: usize = 64;

impl Offered {
    fn new(capacity: usize) -> Self {
        Self {
            shards: (0..OFFERED_SHARDS).map(|_| Default::default()).collect(),
            count: std::sync::atomic::AtomicUsize::new(0),
            capacity,
            notify: tokio::sync::Notify::new(),
        }
    }

    /// Adds a record, or sheds it (counted) when the queue is full.
    fn offer(&self, at_ms: i64, texts: [&str; TEXT_COUNT], subject_bytes: u64, revision: u64) {
        use std::sync::atomic::Ordering::Relaxed;
        thread_local! {
            static SHARD: usize = {
                static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
                NEXT.fetch_add(1, Relaxed) % OFFERED_SHARDS
            };
        }
        let mut shard = self.shards[SHARD.with(|s| *s)]
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if self.count.load(Relaxed) + shard.uncounted >= self.capacity {
            drop(shard);
            crate::metrics::decision_log_shed(1);
            return;
        }
        let first = shard.records.is_empty();
        shard.records.push(at_ms, texts, subject_bytes, revision);
        shard.uncounted += 1;
        if shard.uncounted == COUNT_STEP {
            shard.uncounted = 0;
            self.count.fetch_add(COUNT_STEP, Relaxed);
        }
        drop(shard);
        // the writer needs one notice per batch: the first record of a shard since
        // it was last taken gives it
        if first {
            self.notify.notify_one();
        }
    }

    /// Records offered and not yet taken (each shard read under its lock: for the
    /// writer and the metrics, not for every offer).
    fn waiting(&self) -> usize {
        self.shards
            .iter()
            .map(|shard| {
                shard
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .records
                    .len()
            })
            .sum()
    }

    /// Moves every offered record into `into`, each shard's swapped with `spare` (so
    /// its lock is held only for the swap); how many.
    fn take(&self, into: &mut EncodedDecisions, spare: &mut EncodedDecisions) -> usize {
        let mut taken = 0;
        for shard in &self.shards {
            let counted = {
                let mut shard = shard
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                std::mem::swap(&mut shard.records, spare);
                std::mem::take(&mut shard.uncounted)
            };
            taken += spare.len();
            self.count
                .fetch_sub(spare.len() - counted, std::sync::atomic::Ordering::Relaxed);
            into.append(spare);
            spare.clear();
        }
        taken
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

struct Writer {
    offered: Arc<Offered>,
    budgets: Arc<Budgets>,
    /// The offered records just taken, before the budgets (its room kept).
    fresh: EncodedDecisions,
    /// The decision-log records of the batch being written: the DENY ones of
    /// `pending`, then the offered ones taken.
    encoded: EncodedDecisions,
    /// Swapped with an offered shard when taking it.
    spare: EncodedDecisions,
    published: tokio::sync::broadcast::Sender<Arc<StoredDecision>>,
    held: Arc<std::sync::atomic::AtomicUsize>,
    hub: Arc<Hub>,
    journal: Option<Arc<DenyJournal>>,
    /// Records not yet written, oldest first.
    pending: VecDeque<Entry>,
    /// Whether writes are failing: the start and the end of an outage are logged
    /// once each, not every try.
    outage: bool,
    /// The OTLP export, offered what each write stored.
    export: Arc<std::sync::OnceLock<super::export::Exporter>>,
}

impl Writer {
    async fn run(mut self, mut rx: mpsc::Receiver<Entry>, stop: CancellationToken) {
        let mut backoff = Backoff::new(RETRY_MIN, RETRY_MAX);
        // failures of the batch at the head that were not the store being away
        let mut rejected = 0;
        loop {
            if self.pending.is_empty() {
                let mut batch = Vec::with_capacity(BATCH);
                tokio::select! {
                    biased;
                    () = stop.cancelled() => return self.finish(rx).await,
                    received = rx.recv_many(&mut batch, BATCH) => {
                        if received == 0 {
                            return;
                        }
                    }
                    () = self.offered.notify.notified() => {}
                }
                // whatever else is waiting joins the batch, without waiting for more
                take_waiting(&mut rx, &mut batch);
                // Under load, a commit (an fsync) and each statement cost more than the
                // rows they hold: a batch not yet full waits up to LINGER for more to
                // join, so it is thousands of rows rather than what one write left
                // behind. It sleeps through the wait and then takes what came: taking
                // records as they came woke the writer for nearly each one. A trickle
                // is written at once.
                let mut stopping = false;
                let waiting = batch.len() + self.offered.waiting();
                if (LINGER_FROM..BATCH).contains(&waiting) {
                    tokio::select! {
                        biased;
                        () = stop.cancelled() => stopping = true,
                        () = tokio::time::sleep(LINGER) => {}
                    }
                    take_waiting(&mut rx, &mut batch);
                }
                self.pending.extend(batch);
                self.take_offered();
                self.held_now();
                if stopping {
                    return self.finish(rx).await;
                }
                if self.pending.is_empty() && self.encoded.is_empty() {
                    continue;
                }
            }
            let n = self.pending.len().min(BATCH);
            match self.write(n).await {
                Ok(()) => {
                    rejected = 0;
                    if std::mem::take(&mut self.outage) {
                        info!(
                            waiting = self.pending.len(),
                            "deny audit records are written again"
                        );
                    }
                    backoff.reset();
                }
                // an error that is not an outage may be the records themselves: a batch
                // refused that often is given up rather than block every later one
                Err(e)
                    if !matches!(e, StoreError::Unavailable(_))
                        && rejected + 1 >= REJECTED_TRIES =>
                {
                    error!(error = %e, records = n, "deny audit and decision records refused by the store: dropped");
                    crate::metrics::audit_dropped(n);
                    self.written(n, true);
                    rejected = 0;
                }
                Err(e) => {
                    if !matches!(e, StoreError::Unavailable(_)) {
                        rejected += 1;
                    }
                    let wait = backoff.next_wait();
                    if std::mem::replace(&mut self.outage, true) {
                        debug!(error = %e, waiting = self.pending.len(), retry_ms = wait.as_millis() as u64, "cannot write deny audit records: retrying");
                    } else {
                        warn!(error = %e, waiting = self.pending.len(), retry_ms = wait.as_millis() as u64, "cannot write deny audit records: keeping them and retrying");
                    }
                    // keep taking records while waiting, so denying calls never wait on an
                    // outage; ALLOW and ASK records are left to be shed where offered
                    let retry = tokio::time::sleep(wait);
                    tokio::pin!(retry);
                    loop {
                        let mut more = Vec::new();
                        tokio::select! {
                            () = &mut retry => break,
                            () = stop.cancelled() => return self.finish(rx).await,
                            received = rx.recv_many(&mut more, BATCH) => {
                                if received == 0 {
                                    break;
                                }
                                self.pending.extend(more);
                                self.held_now();
                                self.trim();
                            }
                        }
                    }
                }
            }
        }
    }

    /// At shutdown: takes what is queued and tries the store once more; what it does
    /// not take stays in the journal.
    async fn finish(mut self, mut rx: mpsc::Receiver<Entry>) {
        rx.close();
        while let Some(entry) = rx.recv().await {
            self.pending.push_back(entry);
        }
        self.take_offered();
        self.journal_the_rest().await;
        while !self.pending.is_empty() || !self.encoded.is_empty() {
            // large batches: one commit (one fsync) for what is left, within the grace
            let n = self.pending.len().min(QUEUE);
            if let Err(e) = self.write(n).await {
                let lost = self.pending.iter().filter(|e| e.segment.is_none()).count();
                let kept = self.pending.len() - lost;
                if lost > 0 {
                    error!(error = %e, lost, kept, "deny audit records not written at shutdown and not journaled: lost");
                    crate::metrics::audit_dropped(lost);
                } else {
                    warn!(error = %e, kept, "deny audit records not written at shutdown: kept in the deny journal for the next start");
                }
                return;
            }
        }
    }

    /// At shutdown: the records the journal could not take when they came (a full
    /// disk, its bound) are offered to it once more, in groups, the disk's reserve
    /// allowed.
    async fn journal_the_rest(&mut self) {
        let Some(journal) = self.journal.clone() else {
            return;
        };
        if self.pending.iter().all(|e| e.segment.is_some()) {
            return;
        }
        journal.use_reserve();
        let (mut journaled, mut failed) = (0, 0);
        let mut group = Vec::new();
        let mut at = Vec::new();
        let last = self.pending.len();
        for i in 0..=last {
            if let Some(entry) = self.pending.get(i).filter(|e| e.segment.is_none()) {
                group.push(entry.record.clone());
                at.push(i);
            }
            if group.len() == SHUTDOWN_GROUP || (i == last && !group.is_empty()) {
                match journal.append(&group).await {
                    Some(segment) => {
                        journaled += group.len();
                        for &k in &at {
                            self.pending[k].segment = Some(segment);
                        }
                    }
                    None => failed += group.len(),
                }
                group.clear();
                at.clear();
            }
        }
        if failed > 0 {
            error!(
                journaled,
                failed, "deny records that waited in memory could not all be journaled at shutdown"
            );
        } else {
            info!(
                journaled,
                "deny records that waited in memory are journaled at shutdown"
            );
        }
    }

    /// Takes the offered records into the batch being written, but those past their
    /// principal's or team's budget (shed, counted).
    fn take_offered(&mut self) {
        let mut fresh = std::mem::take(&mut self.fresh);
        self.offered.take(&mut fresh, &mut self.spare);
        self.budgets.retain_offered(&mut fresh);
        if self.encoded.is_empty() {
            std::mem::swap(&mut self.encoded, &mut fresh);
        } else {
            self.encoded.append(&fresh);
        }
        fresh.clear();
        self.fresh = fresh;
    }

    /// Writes the `n` oldest pending records and the offered ones taken. Offered
    /// records the store refuses are shed (counted), not kept: only DENY records wait
    /// through an outage.
    async fn write(&mut self, n: usize) -> Result<(), StoreError> {
        // by reference: the records stay pending until the store took them
        let mut audit = Vec::new();
        let mut decisions = EncodedDecisions::default();
        for entry in self.pending.iter().take(n) {
            match &entry.record {
                Record::Audit(event) => audit.push(event),
                Record::Decision { decision } => decisions.push_packed(decision),
            }
        }
        let offered = self.encoded.len();
        // a full disk's reserve is for admin writes: records wait (journaled) until
        // there is room, rather than take it back
        if self.hub.store().disk_full() {
            self.encoded.clear();
            if offered > 0 {
                crate::metrics::decision_log_shed(offered);
            }
            return Err(StoreError::Unavailable(
                "the disk is full: deny records wait in the journal until there is room".into(),
            ));
        }
        if decisions.is_empty() {
            std::mem::swap(&mut decisions, &mut self.encoded);
        } else {
            decisions.append(&self.encoded);
        }
        self.encoded.clear();
        let ids = match self.hub.store().append_records(&audit, &decisions).await {
            Ok(ids) => ids,
            Err(e) => {
                if offered > 0 {
                    crate::metrics::decision_log_shed(offered);
                }
                return Err(e);
            }
        };
        if !decisions.is_empty() {
            crate::metrics::decision_log_written(decisions.len());
        }
        // nobody listening and no export is the usual case, and not an error
        let export = self.export.get();
        let watched = self.published.receiver_count() > 0;
        if watched || export.is_some() {
            let mut stored = Vec::with_capacity(ids.len());
            for (i, id) in ids.into_iter().enumerate() {
                match decisions.decode(i, id) {
                    Ok(record) => stored.push(record),
                    Err(e) => {
                        warn!(error = %e, "a decision record written is unreadable: not sent to watchers or exported")
                    }
                }
            }
            if let Some(export) = export {
                export.offer(&stored, &audit);
            }
            if watched {
                for record in stored {
                    let _ = self.published.send(Arc::new(record));
                }
            }
        }
        // `decisions` keeps its room for the next batch
        decisions.clear();
        if self.encoded.is_empty() {
            self.encoded = decisions;
        }
        crate::metrics::audit_written(audit.len());
        self.written(n, true);
        Ok(())
    }

    /// The `n` oldest records are out of memory: written or given up (`release`:
    /// their journal segments may go), or let go of while the journal keeps them.
    fn written(&mut self, n: usize, release: bool) {
        let mut run: Option<(u64, u64)> = None;
        for entry in self.pending.drain(..n) {
            let Some(segment) = entry.segment.filter(|_| release) else {
                continue;
            };
            // a batch's records mostly share a segment: told once per run
            match &mut run {
                Some((s, count)) if *s == segment => *count += 1,
                _ => {
                    if let (Some((s, count)), Some(journal)) = (run, &self.journal) {
                        journal.stored(s, count);
                    }
                    run = Some((segment, 1));
                }
            }
        }
        if let (Some((s, count)), Some(journal)) = (run, &self.journal) {
            journal.stored(s, count);
        }
        self.held_now();
    }

    fn held_now(&self) {
        self.held
            .store(self.pending.len(), std::sync::atomic::Ordering::Relaxed);
    }

    /// Past [`MAX_PENDING`], the oldest records leave memory: the journaled ones wait
    /// in the journal for the next start, the others are lost (counted).
    fn trim(&mut self) {
        if self.pending.len() <= MAX_PENDING {
            return;
        }
        let over = self.pending.len() - MAX_PENDING;
        let lost = self
            .pending
            .iter()
            .take(over)
            .filter(|e| e.segment.is_none())
            .count();
        if lost > 0 {
            error!(
                lost,
                kept = MAX_PENDING,
                "deny audit records waiting for the store past the limit and not journaled: the oldest were dropped"
            );
            crate::metrics::audit_dropped(lost);
        }
        self.written(over, false);
    }
}

/// Moves what waits in the DENY queue into the batch, up to [`BATCH`], without
/// waiting.
fn take_waiting(rx: &mut mpsc::Receiver<Entry>, batch: &mut Vec<Entry>) {
    while batch.len() < BATCH {
        let Ok(entry) = rx.try_recv() else { break };
        batch.push(entry);
    }
}

impl Service {
    /// Appends one audit record now, past the DENY queue: for events whose record must
    /// be in the trail before they take effect (the policy file's reloads).
    pub async fn record_audit(
        &self,
        team: &str,
        actor: &str,
        kind: &str,
        detail: serde_json::Value,
    ) -> Result<(), super::ServiceError> {
        let event = NewAuditEvent {
            team_id: team.to_owned(),
            revision: 0,
            actor: actor.to_owned(),
            kind: kind.to_owned(),
            detail,
        };
        Ok(self.store.append_audit(&[event]).await?)
    }

    /// A DENY's records (its audit record, and its decision-log record when
    /// `logged`), added to `into` for [`Service::record_denies`].
    #[allow(clippy::too_many_arguments)]
    pub(super) fn deny_records(
        &self,
        p: &Principal,
        team: &str,
        user: &str,
        revision: u64,
        call: &Call,
        d: &Decision,
        logged: Option<super::decisions::DecisionRecord<'_>>,
        into: &mut Vec<Record>,
    ) {
        into.push(Record::Audit(NewAuditEvent {
            team_id: team.to_owned(),
            revision,
            actor: p.name.clone(),
            kind: "decision_denied".into(),
            detail: deny_detail(user, call, d),
        }));
        if let Some(record) = logged {
            into.push(Record::Decision {
                decision: record.packed(),
            });
        }
    }

    /// Journals DENY records (returning once they are on disk: the answer leaves
    /// after), then queues them for the audit writer. A full queue makes the caller
    /// wait for room rather than lose a record: a flood of denials is slowed to what
    /// the store can write.
    pub(super) async fn record_denies(&self, records: Vec<Record>) {
        self.audit.record_deny(records).await;
    }
}

/// The most bytes of a call, and of its decision's message, a DENY record keeps.
const AUDIT_EXCERPT: usize = 4 * 1024;

/// The detail of a DENY record. A huge call is kept as an excerpt with its length and
/// SHA-256, so a record's size does not grow with the command.
pub(super) fn deny_detail(user: &str, call: &Call, d: &Decision) -> serde_json::Value {
    use sha2::Digest as _;
    let text = format!("{call:?}");
    let mut detail = serde_json::json!({
        "user_id": user,
        "call": excerpt(&text),
        "reason": d.reason.as_str(),
        "matched_entry": d.matched_entry.as_deref(),
        "message": excerpt(&d.message(call)),
    });
    if text.len() > AUDIT_EXCERPT {
        detail["call_bytes"] = text.len().into();
        detail["call_sha256"] = hex::encode(sha2::Sha256::digest(text.as_bytes())).into();
    }
    detail
}

/// The first [`AUDIT_EXCERPT`] bytes of `text` (cut at a character boundary), marked
/// when cut.
pub(super) fn excerpt(text: &str) -> String {
    if text.len() <= AUDIT_EXCERPT {
        return text.to_owned();
    }
    let cut = (0..=AUDIT_EXCERPT)
        .rev()
        .find(|&n| text.is_char_boundary(n))
        .unwrap_or(0);
    format!("{}…", &text[..cut])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A spill file from before the decision log holds bare audit records; they still
    /// read, and decision records read back as written.
    #[test]
    fn spill_lines_of_both_kinds_read_back() {
        let audit = r#"{"team_id":"t","revision":1,"actor":"a","kind":"decision_denied","detail":{"user_id":"u"}}"#;
        let Record::Audit(event) = serde_json::from_str::<Record>(audit).unwrap() else {
            panic!("an old audit line reads as an audit record")
        };
        assert_eq!(event.kind, "decision_denied");
        let decision = crate::store::NewDecision {
            at_ms: 1,
            team_id: "t".into(),
            user_id: "u".into(),
            principal: "p".into(),
            agent_id: String::new(),
            role: String::new(),
            client: "codex".into(),
            source: "evaluate".into(),
            kind: "shell".into(),
            server: String::new(),
            tool: String::new(),
            action: String::new(),
            subject: "rm -rf /".into(),
            subject_bytes: 8,
            subject_sha256: "ab".into(),
            outcome: "DENY".into(),
            reason: "COMMAND_DENIED".into(),
            matched_entry: "rm".into(),
            revision: 3,
            count: 4,
            first_at_ms: -5,
            groups: "contractors".into(),
            effects_unknown: "zip\nfakeroot".into(),
            cwd: "/home/dev/proj".into(),
            tool_use_id: String::new(),
        };
        let record = Record::Decision {
            decision: decision.into(),
        };
        let line = serde_json::to_string(&record).unwrap();
        assert_eq!(serde_json::from_str::<Record>(&line).unwrap(), record);
    }

    /// The offered queue keeps what fits, sheds the rest, and gives back every
    /// record kept, from every thread, once.
    #[test]
    fn the_offered_queue_is_bounded_and_taken_whole() {
        fn offer(q: &Offered, i: usize) {
            let t: [String; TEXT_COUNT] = std::array::from_fn(|k| format!("{i}.{k}"));
            q.offer(i as i64, std::array::from_fn(|k| t[k].as_str()), 1, 2);
        }
        let q = Offered::new(3);
        for i in 0..5 {
            offer(&q, i);
        }
        assert_eq!(q.waiting(), 3);
        let (mut into, mut spare) = Default::default();
        assert_eq!(q.take(&mut into, &mut spare), 3);
        assert_eq!((q.waiting(), into.len()), (0, 3));
        assert_eq!(into.decode(2, 9).unwrap().decision.user_id, "2.1");
        // past the count's step, from several threads
        let q = std::sync::Arc::new(Offered::new(100_000));
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let q = q.clone();
                std::thread::spawn(move || (0..1000).for_each(|i| offer(&q, t * 1000 + i)))
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        let mut into = EncodedDecisions::default();
        assert_eq!(q.take(&mut into, &mut spare), 4000);
        assert_eq!(q.count.load(std::sync::atomic::Ordering::Relaxed), 0);
        let mut at: Vec<i64> = (0..4000)
            .map(|i| into.decode(i, 0).unwrap().decision.at_ms)
            .collect();
        at.sort_unstable();
        assert_eq!(at, (0..4000).collect::<Vec<_>>());
    }
}
