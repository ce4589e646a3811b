//! The decision log's writing task: takes the queued records in batches, writes
//! them, retries through a store outage (keeping the DENY records), publishes and
//! exports what was written, and at shutdown journals and writes what is left.

use super::offered::Offered;
use super::record::{Entry, Record};
use crate::hub::Hub;
use crate::service::deny_journal::DenyJournal;
use crate::store::{EncodedDecisions, StoreError, StoredDecision};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use toolgate_core::backoff::Backoff;
use tracing::{debug, error, info, warn};

/// Pending DENY audit records before a denying call waits for room.
pub(super) const QUEUE: usize = 8_192;
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

pub(super) struct Writer {
    pub(super) offered: Arc<Offered>,
    /// The decision-log records of the batch being written: the DENY ones of
    /// `pending`, then the offered ones taken.
    pub(super) encoded: EncodedDecisions,
    /// Swapped with an offered shard when taking it.
    pub(super) spare: EncodedDecisions,
    pub(super) published: tokio::sync::broadcast::Sender<Arc<StoredDecision>>,
    pub(super) held: Arc<std::sync::atomic::AtomicUsize>,
    pub(super) hub: Arc<Hub>,
    pub(super) journal: Option<Arc<DenyJournal>>,
    /// Records not yet written, oldest first.
    pub(super) pending: VecDeque<Entry>,
    /// Whether writes are failing: the start and the end of an outage are logged
    /// once each, not every try.
    pub(super) outage: bool,
    /// The OTLP export, offered what each write stored.
    pub(super) export: Arc<std::sync::OnceLock<crate::service::export::Exporter>>,
}

impl Writer {
    pub(super) async fn run(mut self, mut rx: mpsc::Receiver<Entry>, stop: CancellationToken) {
        let mut backoff = Backoff::new(RETRY_MIN, RETRY_MAX);
        // failures of the batch at the head that were not the store being away
        let mut rejected = 0;
        // when the last write ended: a trickle waits for the rest of a LINGER after it
        let mut last_write: Option<tokio::time::Instant> = None;
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
                // is written at once, but at most once a LINGER: a steady few records
                // (a flood's within its budget) made a commit of each.
                let mut stopping = false;
                let waiting = batch.len() + self.offered.waiting();
                let linger = if waiting >= BATCH {
                    Duration::ZERO
                } else if waiting >= LINGER_FROM {
                    LINGER
                } else {
                    last_write.map_or(Duration::ZERO, |at| {
                        (at + LINGER).saturating_duration_since(tokio::time::Instant::now())
                    })
                };
                if !linger.is_zero() {
                    tokio::select! {
                        biased;
                        () = stop.cancelled() => stopping = true,
                        () = tokio::time::sleep(linger) => {}
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
            let written = self.write(n).await;
            last_write = Some(tokio::time::Instant::now());
            match written {
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

    /// Takes the offered records into the batch being written (within their budgets:
    /// charged where they were offered).
    fn take_offered(&mut self) {
        self.offered.take(&mut self.encoded, &mut self.spare);
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
