//! The decision log's queue of ALLOW and ASK records: offered to, never waited on,
//! sharded so that offers from many threads rarely meet on a lock.

use crate::store::{EncodedDecisions, TEXT_COUNT};

/// The log's queue of ALLOW and ASK records: a buffer of encoded records per shard,
/// a thread writing to its own shard (so offers rarely meet on a lock), bounded in
/// records. An offered record costs no allocation, queue slot or free of its own:
/// as a record of its own through a channel it cost the decision path about a
/// microsecond. The count all threads read is updated once per [`COUNT_STEP`]
/// records of a shard, not per record (each update moves its cache line between
/// cores), so the bound holds within that many records per shard.
#[derive(Debug)]
pub(super) struct Offered {
    shards: Box<[std::sync::Mutex<Shard>]>,
    /// Records in the shards, counted in steps.
    pub(super) count: std::sync::atomic::AtomicUsize,
    capacity: usize,
    /// Wakes the writer: a notice given while it is busy waits for it.
    pub(super) notify: tokio::sync::Notify,
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
    pub(super) fn new(capacity: usize) -> Self {
        Self {
            shards: (0..OFFERED_SHARDS).map(|_| Default::default()).collect(),
            count: std::sync::atomic::AtomicUsize::new(0),
            capacity,
            notify: tokio::sync::Notify::new(),
        }
    }

    /// Adds a record, or sheds it (counted) when the queue is full.
    pub(super) fn offer(
        &self,
        at_ms: i64,
        texts: [&str; TEXT_COUNT],
        subject_bytes: u64,
        revision: u64,
    ) {
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
    pub(super) fn waiting(&self) -> usize {
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
    pub(super) fn take(&self, into: &mut EncodedDecisions, spare: &mut EncodedDecisions) -> usize {
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
