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

use super::decision_log::record::Record;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::oneshot;
use tracing::{error, info, warn};

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

/// The appending thread's state.
struct Appender {
    shared: Arc<Shared>,
    /// The current segment's number, and its file once opened.
    number: u64,
    file: Option<File>,
    /// Bytes on disk in the current segment (what a failed append is cut back to).
    len: u64,
}

impl Appender {
    fn run(mut self, rx: std::sync::mpsc::Receiver<Append>) {
        loop {
            let first = match rx.recv_timeout(IDLE) {
                Ok(first) => first,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    if self.len > 0 {
                        self.rotate();
                    }
                    continue;
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            };
            // group commit: whatever arrived meanwhile shares this fsync
            let mut group = vec![first];
            let mut bytes = group[0].lines.len();
            while bytes < GROUP_BYTES {
                let Ok(next) = rx.try_recv() else { break };
                bytes += next.lines.len();
                group.push(next);
            }
            self.write(group);
        }
        if self.len > 0 {
            self.rotate();
        }
    }

    fn write(&mut self, group: Vec<Append>) {
        let records: u64 = group.iter().map(|a| a.records).sum();
        let mut buf = Vec::with_capacity(group.iter().map(|a| a.lines.len()).sum());
        for append in &group {
            buf.extend_from_slice(&append.lines);
        }
        let answer = match self.append(&buf, records) {
            Ok(number) => {
                self.shared.recovered();
                Some(number)
            }
            Err(e) => {
                self.shared.failed(&e, records);
                None
            }
        };
        for append in group {
            // a caller that went away still has its records on disk
            let _ = append.done.send(answer);
        }
    }

    /// Appends `buf` (`records` records) to the current segment and fsyncs it.
    fn append(&mut self, buf: &[u8], records: u64) -> std::io::Result<u64> {
        if self.len >= SEGMENT_BYTES {
            self.rotate();
        }
        let total = self.shared.bytes();
        if total + buf.len() as u64 > self.shared.max_bytes {
            return Err(std::io::Error::other(format!(
                "the journal holds {total} bytes, its bound (decision_log.journal_max_bytes) is {}",
                self.shared.max_bytes
            )));
        }
        let len = self.len;
        let file = self.file()?;
        let written = file.write_all(buf).and_then(|()| file.sync_data());
        if let Err(e) = written {
            // cut back to the last whole record, so a later append does not join a
            // torn line; failing that, start another segment
            if file.set_len(len).is_err() {
                self.rotate();
            }
            return Err(e);
        }
        self.len += buf.len() as u64;
        let mut segments = self
            .shared
            .segments
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let segment = segments.entry(self.number).or_default();
        segment.outstanding += records;
        segment.bytes = self.len;
        Ok(self.number)
    }

    /// The current segment's file, created (owner-only, preallocated, its directory
    /// synced) on first use.
    fn file(&mut self) -> std::io::Result<&mut File> {
        if self.file.is_none() {
            let path = segment_path(&self.shared.dir, self.number);
            let mut options = std::fs::OpenOptions::new();
            options.append(true).create(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
            let room = rustix::fs::statvfs(&self.shared.dir)
                .map_or(u64::MAX, |s| s.f_bavail.saturating_mul(s.f_frsize));
            let keep_free = self.shared.keep_free.load(Ordering::Relaxed);
            if room < keep_free.saturating_add(SEGMENT_BYTES) {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::StorageFull,
                    format!("{room} bytes free: a new segment would take the disk's reserve"),
                ));
            }
            let file = options.open(&path)?;
            if let Err(e) = preallocate(&file) {
                drop(file);
                remove(&path);
                return Err(e);
            }
            sync_dir(&self.shared.dir)?;
            self.len = file.metadata()?.len();
            self.file = Some(file);
        }
        Ok(self.file.as_mut().expect("opened above"))
    }

    /// Closes the current segment (removed now if all its records are stored) and
    /// moves to the next number; its file is created at the next append.
    fn rotate(&mut self) {
        let number = self.number;
        self.file = None;
        self.len = 0;
        self.number += 1;
        let mut segments = self
            .shared
            .segments
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match segments.get_mut(&number) {
            Some(segment) if segment.outstanding > 0 => segment.closed = true,
            _ => {
                segments.remove(&number);
                remove(&segment_path(&self.shared.dir, number));
            }
        }
    }
}

fn segment_path(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:016}{SUFFIX}"))
}

/// The segments' numbers in `dir`, in order.
fn segment_numbers(dir: &Path) -> std::io::Result<Vec<u64>> {
    let mut numbers = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let name = entry?.file_name();
        let Some(number) = name
            .to_str()
            .and_then(|n| n.strip_suffix(SUFFIX))
            .and_then(|n| n.parse().ok())
        else {
            continue;
        };
        numbers.push(number);
    }
    numbers.sort_unstable();
    Ok(numbers)
}

/// A segment's records, and its size. A line cut short by a crash (its caller never
/// had an answer) or unreadable is skipped, counted in one warning.
fn read_segment(path: &Path) -> (Vec<Record>, u64) {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) => {
            error!(path = %path.display(), error = %e, "cannot read a deny journal segment: its records are not replayed");
            return (Vec::new(), 0);
        }
    };
    let bytes = file.metadata().map_or(0, |m| m.len());
    let mut records = Vec::new();
    let mut skipped = 0;
    for line in std::io::BufReader::new(file).split(b'\n') {
        let Ok(line) = line else {
            skipped += 1;
            break;
        };
        if line.is_empty() {
            continue;
        }
        match serde_json::from_slice(&line) {
            Ok(record) => records.push(record),
            Err(_) => skipped += 1,
        }
    }
    if skipped > 0 {
        warn!(path = %path.display(), skipped, "deny journal lines unreadable (a write cut short by a crash): skipped");
    }
    (records, bytes)
}

/// Moves an older version's spill file into a segment: copied, synced, then removed.
fn import_legacy(spill: &Path, segment: &Path) -> std::io::Result<()> {
    let bytes = std::fs::read(spill)?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(segment)?;
    file.write_all(&bytes)?;
    if !bytes.ends_with(b"\n") {
        file.write_all(b"\n")?;
    }
    file.sync_all()?;
    if let Some(dir) = segment.parent() {
        sync_dir(dir)?;
    }
    std::fs::remove_file(spill)?;
    info!(spill = %spill.display(), "moved the audit spill file of an older version into the deny journal");
    Ok(())
}

fn create_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// An exclusive lock on the directory's lock file, or `None` when another process
/// holds it.
fn lock(dir: &Path) -> std::io::Result<Option<File>> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let file = options.open(dir.join(LOCK_FILE))?;
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(e)) => Err(e),
    }
}

/// Reserves the segment's blocks without changing its size, so appends within it
/// need no new block when the disk fills; a filesystem without fallocate appends as
/// usual. A disk without the room refuses the segment.
fn preallocate(file: &File) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    // a filesystem without fallocate appends as usual
    if let Err(rustix::io::Errno::NOSPC) = rustix::fs::fallocate(
        file,
        rustix::fs::FallocateFlags::KEEP_SIZE,
        0,
        SEGMENT_BYTES,
    ) {
        return Err(std::io::Error::from(std::io::ErrorKind::StorageFull));
    }
    #[cfg(not(target_os = "linux"))]
    let _ = file;
    Ok(())
}

fn same_filesystem(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        match (std::fs::metadata(a), std::fs::metadata(b)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev(),
            // cannot tell: leave the reserve be
            _ => true,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (a, b);
        true
    }
}

fn sync_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

fn remove(path: &Path) {
    if let Err(e) = std::fs::remove_file(path)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        warn!(path = %path.display(), error = %e, "cannot remove a stored deny journal segment: its records would be written again at the next start");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::NewAuditEvent;

    fn record(i: u64) -> Record {
        Record::Audit(NewAuditEvent {
            team_id: "t".into(),
            revision: i,
            actor: "a".into(),
            kind: "decision_denied".into(),
            detail: serde_json::json!({ "i": i }),
        })
    }

    fn files(dir: &Path) -> Vec<u64> {
        segment_numbers(dir).unwrap()
    }

    /// Appended records come back at the next open until they are stored; a segment
    /// whose records are all stored is removed.
    #[tokio::test]
    async fn records_are_replayed_until_stored() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j");
        let journal = DenyJournal::open(&path, u64::MAX, None, None).unwrap();
        assert!(journal.take_replayed().is_empty());
        let a = journal.append(&[record(1), record(2)]).await.unwrap();
        let b = journal.append(&[record(3)]).await.unwrap();
        assert_eq!(a, b, "one segment");
        // a second server on the same directory is refused
        assert!(matches!(
            DenyJournal::open(&path, u64::MAX, None, None),
            Err(JournalError::InUse { .. })
        ));
        journal.stored(a, 2);
        journal.close();
        drop(journal);
        let journal = DenyJournal::open(&path, u64::MAX, None, None).unwrap();
        let replayed = journal.take_replayed();
        // closing does not lose the record not yet stored
        let records: Vec<Record> = replayed.iter().map(|(r, _)| r.clone()).collect();
        assert_eq!(records, vec![record(1), record(2), record(3)]);
        for (_, number) in &replayed {
            journal.stored(*number, 1);
        }
        assert!(files(&path).is_empty(), "{:?}", files(&path));
        assert_eq!(journal.bytes(), 0);
    }

    /// A torn last line (a crash mid-append) is skipped, the rest replayed.
    #[test]
    fn a_torn_line_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let mut text = serde_json::to_vec(&record(1)).unwrap();
        text.extend_from_slice(b"\n{\"team_id\":\"t\",\"rev");
        std::fs::write(segment_path(dir.path(), 7), text).unwrap();
        let journal = DenyJournal::open(dir.path(), u64::MAX, None, None).unwrap();
        assert_eq!(journal.take_replayed(), vec![(record(1), 7)]);
        drop(journal);
    }

    /// An older version's spill file is moved in and replayed.
    #[test]
    fn a_legacy_spill_file_is_moved_in() {
        let dir = tempfile::tempdir().unwrap();
        let spill = dir.path().join("audit-spill.jsonl");
        std::fs::write(&spill, serde_json::to_vec(&record(5)).unwrap()).unwrap();
        let journal =
            DenyJournal::open(&dir.path().join("j"), u64::MAX, None, Some(&spill)).unwrap();
        assert_eq!(journal.take_replayed().len(), 1);
        assert!(!spill.exists());
    }

    /// Past its bound the journal refuses appends (the caller is told), and takes
    /// them again once room is made.
    #[tokio::test]
    async fn the_bound_refuses_appends() {
        let dir = tempfile::tempdir().unwrap();
        let line = serde_json::to_vec(&record(1)).unwrap().len() as u64 + 1;
        let journal = DenyJournal::open(dir.path(), line * 2, None, None).unwrap();
        let a = journal.append(&[record(1), record(2)]).await.unwrap();
        assert_eq!(journal.append(&[record(3)]).await, None);
        journal.stored(a, 2);
        // the segment is still open: the room comes back once it is closed
        journal.close();
    }

    /// What a DENY's wait for the journal costs on this machine's disk: one caller at
    /// a time (an fsync each), and 64 at once (sharing fsyncs). A measurement, not a
    /// test: `cargo test -p toolgate-server --lib journal_cost -- --ignored --nocapture`.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    #[ignore = "a measurement; prints figures"]
    async fn journal_cost() {
        let dir =
            tempfile::tempdir_in(std::env::var("JOURNAL_COST_DIR").unwrap_or(".".into())).unwrap();
        let journal = Arc::new(DenyJournal::open(dir.path(), u64::MAX, None, None).unwrap());
        // a DENY's two records, about a kilobyte of JSON
        let records = vec![record(1), record(2)];
        let start = std::time::Instant::now();
        const ONE: u32 = 300;
        for _ in 0..ONE {
            journal.append(&records).await.unwrap();
        }
        let one = start.elapsed() / ONE;
        const CALLERS: usize = 64;
        const EACH: usize = 100;
        let start = std::time::Instant::now();
        let tasks: Vec<_> = (0..CALLERS)
            .map(|_| {
                let (journal, records) = (journal.clone(), records.clone());
                tokio::spawn(async move {
                    let mut worst = Duration::ZERO;
                    for _ in 0..EACH {
                        let t = std::time::Instant::now();
                        journal.append(&records).await.unwrap();
                        worst = worst.max(t.elapsed());
                    }
                    worst
                })
            })
            .collect();
        let mut worst = Duration::ZERO;
        for t in tasks {
            worst = worst.max(t.await.unwrap());
        }
        let all = start.elapsed();
        let n = (CALLERS * EACH) as u32;
        println!(
            "one caller: {one:?} per DENY; {CALLERS} callers: {:?} per DENY on average ({:.0} DENYs/s), worst wait {worst:?}",
            all / n,
            f64::from(n) / all.as_secs_f64()
        );
    }
}
