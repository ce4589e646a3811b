//! The one file poller: the policy file, the TLS certificate, key and client CA,
//! and a JWKS file are followed through it. It looks at a set of paths at an
//! interval and reports, per path, new content or a failed read; what a report
//! means (apply it, keep the last good one, log, count) stays with the caller.
//!
//! Polling rather than inotify: the same on every filesystem (bind mounts,
//! network filesystems, a ConfigMap's symlink swap) and no extra dependency.
//!
//! A look is a `stat` of the open file; the content is read and hashed only when
//! that stat differs from the last one (length, modification and change times,
//! device and inode), or when the last one was taken within [`RACY`] of the file's
//! times: a filesystem whose clock is coarse (FAT's 2 s, 1 s on older ones) gives a
//! rewrite in the same tick the same times, so only the content can tell (git's
//! "racily clean" rule). Where the change time is unknown (off Unix), every look
//! reads, as every caller did before there was one poller.

use super::read::{ReadError, open_regular, read_open};
use sha2::{Digest as _, Sha256};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// How recent a file's times may be for its stat to be trusted: above the
/// coarsest timestamp granularity of common filesystems, with margin.
pub const RACY: Duration = Duration::from_secs(3);

/// A content's SHA-256.
pub type Digest = [u8; 32];

/// A file's content as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Content {
    pub bytes: Vec<u8>,
    pub digest: Digest,
}

impl Content {
    fn new(bytes: Vec<u8>) -> Self {
        let digest = Sha256::digest(&bytes).into();
        Self { bytes, digest }
    }
}

/// What one poll found at one path.
#[derive(Debug)]
pub struct Report {
    /// The path's place in the list the poller was made with.
    pub index: usize,
    pub read: Result<Content, ReadError>,
}

/// When the next look is due: `every` after the last one or, when woken, `min_gap`
/// after it. Also paces what is not a file (the JWKS URL).
#[derive(Debug)]
pub struct Schedule {
    every: Duration,
    wake: Option<(Arc<Notify>, Duration)>,
    last: Instant,
    stop: CancellationToken,
}

impl Schedule {
    pub fn new(every: Duration, stop: CancellationToken) -> Self {
        Self {
            every,
            wake: None,
            last: Instant::now(),
            stop,
        }
    }

    /// Also look when `notify` is woken, but not sooner than `min_gap` after the
    /// last look (so whoever can wake it cannot make it spin).
    pub fn wake_on(mut self, notify: Arc<Notify>, min_gap: Duration) -> Self {
        self.wake = Some((notify, min_gap));
        self
    }

    /// Waits until the next look is due; false once stopped.
    pub async fn wait(&mut self) -> bool {
        let woken = async {
            match &self.wake {
                Some((notify, _)) => notify.notified().await,
                None => std::future::pending().await,
            }
        };
        let due = tokio::select! {
            () = tokio::time::sleep_until(self.last + self.every) => self.last + self.every,
            () = woken => self.last + self.wake.as_ref().map_or(Duration::ZERO, |w| w.1),
            () = self.stop.cancelled() => return false,
        };
        tokio::select! {
            () = tokio::time::sleep_until(due) => {}
            () = self.stop.cancelled() => return false,
        }
        self.last = Instant::now();
        true
    }
}

/// How a [`Poller`] looks.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Polls in a row that must read the same content before it is reported: 1
    /// reports it at once, 2 waits out a writer that has not finished.
    pub settle: u32,
    /// Largest content read; a larger file is a failed read.
    pub max_bytes: usize,
}

/// Follows a set of paths. [`Poller::read_all`] reads them once (a start), then
/// each [`Poller::next`] returns what changed since.
#[derive(Debug)]
pub struct Poller {
    paths: Arc<[PathBuf]>,
    states: Vec<State>,
    options: Options,
    schedule: Schedule,
}

impl Poller {
    pub fn new(paths: Vec<PathBuf>, options: Options, schedule: Schedule) -> Self {
        Self {
            states: vec![State::default(); paths.len()],
            paths: paths.into(),
            options: Options {
                settle: options.settle.max(1),
                ..options
            },
            schedule,
        }
    }

    pub fn paths(&self) -> &[PathBuf] {
        &self.paths
    }

    /// Reads every path now (blocking; a start does it once): what is read is what
    /// later polls compare with, so it is not reported again.
    pub fn read_all(&mut self) -> Vec<Result<Content, ReadError>> {
        (0..self.paths.len()).map(|i| self.read(i)).collect()
    }

    /// [`Poller::read_all`] for the path at `index` alone.
    pub fn read(&mut self, index: usize) -> Result<Content, ReadError> {
        let Options { settle, max_bytes } = self.options;
        let state = &mut self.states[index];
        // taken before the stat, as in a poll (see `Stamp::racy`)
        let now = SystemTime::now();
        let read = open_regular(&self.paths[index], max_bytes)
            .and_then(|(file, meta)| Ok((Stamp::of(&meta), read_open(file, &meta, max_bytes)?)));
        let (stamp, bytes) = read.inspect_err(|_| *state = State::default())?;
        let content = Content::new(bytes);
        *state = State {
            stamp: Some((stamp, stamp.racy(now))),
            pending: Some(content.digest),
            polls: settle,
            reported: Some(content.digest),
        };
        Ok(content)
    }

    /// The reports of the next poll that has any: new content at a path (settled
    /// for [`Options::settle`] polls), or a failed read, reported at every poll
    /// while it fails. After a failure, whatever is read next is reported, the same
    /// content as before included. `None` once stopped.
    pub async fn next(&mut self) -> Option<Vec<Report>> {
        loop {
            if !self.schedule.wait().await {
                return None;
            }
            let paths = self.paths.clone();
            let mut states = std::mem::take(&mut self.states);
            let options = self.options;
            let polled = tokio::task::spawn_blocking(move || {
                let reports = poll_all(&paths, &mut states, options, SystemTime::now());
                (states, reports)
            });
            let reports = tokio::select! {
                polled = polled => match polled {
                    Ok((states, reports)) => {
                        self.states = states;
                        reports
                    }
                    // a read panicked: knowing nothing, the next poll reports every path
                    Err(_) => {
                        self.states = vec![State::default(); self.paths.len()];
                        Vec::new()
                    }
                },
                // a read held up by its filesystem does not hold up the stop
                () = self.schedule.stop.cancelled() => return None,
            };
            if !reports.is_empty() {
                return Some(reports);
            }
        }
    }

    /// The content last reported at `index` was not taken (the store was
    /// unavailable, say): report it again at the next poll.
    pub fn again(&mut self, index: usize) {
        if let Some(state) = self.states.get_mut(index) {
            state.reported = None;
        }
    }
}

/// What the poller knows of one path.
#[derive(Debug, Clone, Default)]
struct State {
    /// The stat of the last read, and whether it was racy (see [`RACY`]).
    stamp: Option<(Stamp, bool)>,
    /// The content the last read found, and for how many polls in a row.
    pending: Option<Digest>,
    polls: u32,
    /// The content last handed to the caller.
    reported: Option<Digest>,
}

impl State {
    /// Whether `stamp` shows the file as it was at the last read, that read's stamp
    /// was not racy, and its content was reported: nothing to read.
    fn unchanged(&self, stamp: &Stamp) -> bool {
        self.stamp == Some((*stamp, false))
            && self.reported.is_some()
            && self.reported == self.pending
    }
}

fn poll_all(
    paths: &[PathBuf],
    states: &mut [State],
    options: Options,
    now: SystemTime,
) -> Vec<Report> {
    paths
        .iter()
        .zip(states)
        .enumerate()
        .filter_map(|(index, (path, state))| {
            poll_one(path, state, options, now).map(|read| Report { index, read })
        })
        .collect()
}

/// One path's poll: `None` when there is nothing to report. A failed read forgets
/// what was known of the path, so whatever is read after it is news.
fn poll_one(
    path: &Path,
    state: &mut State,
    options: Options,
    now: SystemTime,
) -> Option<Result<Content, ReadError>> {
    let max = options.max_bytes;
    let looked = open_regular(path, max).and_then(|(file, meta)| {
        let stamp = Stamp::of(&meta);
        if state.unchanged(&stamp) {
            return Ok(None);
        }
        // stat before reading: a write in between leaves an old stamp with new
        // content, which the next poll reads again, never the other way round
        Ok(Some((stamp, read_open(file, &meta, max)?)))
    });
    let (stamp, bytes) = match looked {
        Ok(None) => return None,
        Ok(Some(read)) => read,
        Err(e) => {
            *state = State::default();
            return Some(Err(e));
        }
    };
    let content = Content::new(bytes);
    state.stamp = Some((stamp, stamp.racy(now)));
    if state.pending == Some(content.digest) {
        state.polls = state.polls.saturating_add(1);
    } else {
        state.pending = Some(content.digest);
        state.polls = 1;
    }
    if state.reported == Some(content.digest) || state.polls < options.settle {
        return None;
    }
    state.reported = Some(content.digest);
    Some(Ok(content))
}

/// What a `stat` tells of a file's content without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
    /// The inode change time: set by the kernel on every write, and not set back by
    /// tools that restore the modification time (`touch -d`, `cp -p`, `tar`).
    changed: Option<SystemTime>,
    /// Device and inode: a file renamed over the path is another file.
    file_id: (u64, u64),
}

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Self {
        #[cfg(unix)]
        let (changed, file_id) = {
            use std::os::unix::fs::MetadataExt;
            let changed = u64::try_from(meta.ctime()).ok().and_then(|secs| {
                let nanos = u32::try_from(meta.ctime_nsec()).unwrap_or(0);
                SystemTime::UNIX_EPOCH.checked_add(Duration::new(secs, nanos))
            });
            (changed, (meta.dev(), meta.ino()))
        };
        #[cfg(not(unix))]
        let (changed, file_id) = (None, (0, 0));
        Self {
            len: meta.len(),
            modified: meta.modified().ok(),
            changed,
            file_id,
        }
    }

    /// Whether a rewrite after `now` (taken before the stat) could leave this stamp
    /// as it is: the file's times are within [`RACY`] of `now`, or in the future, or
    /// either is unknown (without a change time, as off Unix, a rewrite that sets
    /// the modification time back would go unseen: every poll reads).
    fn racy(&self, now: SystemTime) -> bool {
        let (Some(modified), Some(changed)) = (self.modified, self.changed) else {
            return true;
        };
        now.duration_since(modified.max(changed))
            .map_or(true, |age| age < RACY)
    }
}

#[cfg(test)]
mod tests;
