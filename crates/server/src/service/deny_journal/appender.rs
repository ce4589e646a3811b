//! The DENY journal's appending thread: appends what callers hand it to the current
//! segment and fsyncs once per group, starting a new segment when one is full.

use super::segments::{preallocate, remove, segment_path, sync_dir};
use super::{Append, GROUP_BYTES, IDLE, SEGMENT_BYTES, Shared};
use std::fs::File;
use std::io::Write as _;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};

/// The appending thread's state.
pub(super) struct Appender {
    pub(super) shared: Arc<Shared>,
    /// The current segment's number, and its file once opened.
    pub(super) number: u64,
    pub(super) file: Option<File>,
    /// Bytes on disk in the current segment (what a failed append is cut back to).
    pub(super) len: u64,
}

impl Appender {
    pub(super) fn run(mut self, rx: std::sync::mpsc::Receiver<Append>) {
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
