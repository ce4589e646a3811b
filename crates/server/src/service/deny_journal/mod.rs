//! The DENY journal: a DENY's records are appended to a local file and fsync'd
//! before its answer leaves, so a crash at any moment loses no answered DENY. One
//! thread appends what callers hand it and fsyncs once per group (group commit:
//! callers that arrive during an fsync share the next one). The writer tells the
//! journal which records the store has taken; a segment whose records all are is
//! removed, and what a previous run left is replayed at start.
//!
//! Segments are files `<number>.journal` of JSON lines (the writer's records) in the
//! journal directory, owner-only, preallocated so that appends into a segment still
//! fit on a disk that filled meanwhile. A crash can leave a record both in the store
//! and in a segment: it is written again at the next start (at least once, never
//! zero times).

mod appender;
mod segments;
#[cfg(test)]
mod tests;

use super::decision_log::record::Record;
use appender::Appender;
use segments::{
    create_dir, import_legacy, lock, read_segment, remove, same_filesystem, segment_numbers,
    segment_path,
};
use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::oneshot;
use tracing::{error, info};

/// A segment takes no more appends past this size (a new one is started).
const SEGMENT_BYTES: u64 = 4 * 1024 * 1024;
/// The most bytes one fsync covers; further callers wait for the next.
const GROUP_BYTES: usize = 1024 * 1024;
/// Without appends for this long, a non-empty segment is closed so that it can be
/// removed once stored.
const IDLE: Duration = Duration::from_secs(1);
/// The lock file that keeps a second server off the directory.
const LOCK_FILE: &str = "lock";
const SUFFIX: &str = ".journal";

/// Why the journal could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error(
        "decision_log.journal_dir: cannot use {path}: {source}: give a directory this server can create and write"
    )]
    Dir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "decision_log.journal_dir: {path} is in use by another toolgate server: give each server its own journal directory"
    )]
    InUse { path: PathBuf },
}

/// The journal, shared by the service (appends) and the writer (what is stored).
#[derive(Debug)]
pub struct DenyJournal {
    tx: Mutex<Option<std::sync::mpsc::Sender<Append>>>,
    shared: Arc<Shared>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    dir: PathBuf,
    /// What earlier runs left, until the writer takes it.
    replayed: Mutex<Replayed>,
}

/// What a previous run left: records and the segment each is in.
pub(super) type Replayed = Vec<(Record, u64)>;

#[derive(Debug)]
struct Shared {
    dir: PathBuf,
    segments: Mutex<BTreeMap<u64, Segment>>,
    /// Whether the last append failed: a failure and a recovery are logged once each.
    failing: AtomicBool,
    max_bytes: u64,
    /// Bytes a new segment must leave free on the filesystem (the store's disk
    /// reserve, when they share it): a full disk's headroom is not the journal's.
    keep_free: std::sync::atomic::AtomicU64,
    /// Held for the journal's life: the directory's lock.
    _lock: File,
}

#[derive(Debug, Default)]
struct Segment {
    /// Records appended and not yet stored.
    outstanding: u64,
    bytes: u64,
    /// No further appends: removed once `outstanding` is 0.
    closed: bool,
}

struct Append {
    lines: Vec<u8>,
    records: u64,
    done: oneshot::Sender<Option<u64>>,
}

impl DenyJournal {
    /// Opens the journal in `dir` (created, 0700), first moving in the records of a
    /// spill file of an older version (`legacy`); what earlier runs left is kept for
    /// the writer (`DenyJournal::take_replayed`).
    /// `reserve`: the store's disk reserve (its directory and size), which the journal
    /// leaves free when it is on the same filesystem.
    pub fn open(
        dir: &Path,
        max_bytes: u64,
        reserve: Option<(&Path, u64)>,
        legacy: Option<&Path>,
    ) -> Result<Self, JournalError> {
        let fail = |source| JournalError::Dir {
            path: dir.to_owned(),
            source,
        };
        create_dir(dir).map_err(fail)?;
        let keep_free = match reserve {
            Some((data, bytes)) if same_filesystem(dir, data) => bytes,
            _ => 0,
        };
        let lock = lock(dir)
            .map_err(fail)?
            .ok_or_else(|| JournalError::InUse {
                path: dir.to_owned(),
            })?;
        let mut numbers = segment_numbers(dir).map_err(fail)?;
        if let Some(spill) = legacy
            && spill.exists()
        {
            let number = numbers.last().map_or(1, |n| n + 1);
            import_legacy(spill, &segment_path(dir, number)).map_err(fail)?;
            numbers.push(number);
        }
        let mut segments = BTreeMap::new();
        let mut replayed = Vec::new();
        for &number in &numbers {
            let path = segment_path(dir, number);
            let (records, bytes) = read_segment(&path);
            let outstanding = records.len() as u64;
            if outstanding == 0 {
                remove(&path);
                continue;
            }
            replayed.extend(records.into_iter().map(|r| (r, number)));
            segments.insert(
                number,
                Segment {
                    outstanding,
                    bytes,
                    closed: true,
                },
            );
        }
        if !replayed.is_empty() {
            info!(dir = %dir.display(), records = replayed.len(), "replaying deny records a previous run journaled");
        }
        let shared = Arc::new(Shared {
            dir: dir.to_owned(),
            segments: Mutex::new(segments),
            failing: AtomicBool::new(false),
            max_bytes,
            keep_free: std::sync::atomic::AtomicU64::new(keep_free),
            _lock: lock,
        });
        let first = numbers.last().map_or(1, |n| n + 1);
        let (tx, rx) = std::sync::mpsc::channel();
        let appender = Appender {
            shared: shared.clone(),
            number: first,
            file: None,
            len: 0,
        };
        let thread = std::thread::Builder::new()
            .name("deny-journal".into())
            .spawn(move || appender.run(rx))
            .map_err(fail)?;
        Ok(Self {
            tx: Mutex::new(Some(tx)),
            shared,
            thread: Mutex::new(Some(thread)),
            dir: dir.to_owned(),
            replayed: Mutex::new(replayed),
        })
    }

    /// What earlier runs left, once (the writer writes it).
    pub(super) fn take_replayed(&self) -> Replayed {
        std::mem::take(&mut *self.replayed.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Appends `records` and returns once they are on disk: the segment that holds
    /// them, or `None` when they could not be written (a full disk, the journal's
    /// bound; logged once per condition).
    pub(super) async fn append(&self, records: &[Record]) -> Option<u64> {
        let mut lines = Vec::with_capacity(512 * records.len());
        for record in records {
            // a record always serialises: strings and numbers
            serde_json::to_writer(&mut lines, record).ok()?;
            lines.push(b'\n');
        }
        let (done, answer) = oneshot::channel();
        let append = Append {
            lines,
            records: records.len() as u64,
            done,
        };
        {
            let tx = self.tx.lock().unwrap_or_else(PoisonError::into_inner);
            tx.as_ref()?.send(append).ok()?;
        }
        answer.await.ok().flatten()
    }

    /// `n` records of segment `number` are in the store.
    pub fn stored(&self, number: u64, n: u64) {
        self.shared.stored(number, n);
    }

    /// At shutdown, the disk's reserve is the journal's too: admin writes are over,
    /// and records that wait only in memory would be lost.
    pub fn use_reserve(&self) {
        self.shared.keep_free.store(0, Ordering::Relaxed);
    }

    /// Bytes the journal's segments take.
    pub fn bytes(&self) -> u64 {
        self.shared.bytes()
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Stops the appending thread once what it was handed is on disk.
    pub fn close(&self) {
        drop(
            self.tx
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take(),
        );
        if let Some(thread) = self
            .thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            let _ = thread.join();
        }
    }
}

impl Drop for DenyJournal {
    fn drop(&mut self) {
        self.close();
    }
}

impl Shared {
    fn stored(&self, number: u64, n: u64) {
        let mut segments = self.segments.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(segment) = segments.get_mut(&number) else {
            return;
        };
        segment.outstanding = segment.outstanding.saturating_sub(n);
        if segment.closed && segment.outstanding == 0 {
            segments.remove(&number);
            remove(&segment_path(&self.dir, number));
        }
    }

    fn bytes(&self) -> u64 {
        let segments = self.segments.lock().unwrap_or_else(PoisonError::into_inner);
        segments.values().map(|s| s.bytes).sum()
    }

    /// Logs the first failure of a run of failures, and the recovery.
    fn failed(&self, error: &dyn std::fmt::Display, records: u64) {
        crate::metrics::deny_journal_failed(records);
        if !self.failing.swap(true, Ordering::Relaxed) {
            error!(dir = %self.dir.display(), error = %error, "cannot append to the deny journal: DENY records wait in memory only until it can (logged once)");
        }
    }

    fn recovered(&self) {
        if self.failing.swap(false, Ordering::Relaxed) {
            info!(dir = %self.dir.display(), "the deny journal takes records again");
        }
    }
}
