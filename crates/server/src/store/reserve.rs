//! The embedded store's disk headroom: a preallocated file in the data directory,
//! released when a write fails for lack of space, so that the writes that matter on a
//! full disk (the kill switch, a token's revocation, settings) still commit. While the
//! disk is full the decision log's writer holds its records (in the DENY journal and
//! in memory) instead of taking the room back; once the filesystem has room for the
//! reserve twice over, the reserve is taken again and the state clears.

use super::StoreError;
use super::errors::DISK_FULL;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tracing::{error, info, warn};

/// The reserve's file name in the data directory.
pub const RESERVE_FILE: &str = "disk-reserve";
/// How often a full disk is looked at again.
const RECHECK: Duration = Duration::from_secs(1);

#[derive(Debug)]
pub struct DiskReserve {
    path: PathBuf,
    bytes: u64,
    full: AtomicBool,
    /// The last look at a full disk.
    checked: Mutex<Option<Instant>>,
}

impl DiskReserve {
    /// Takes the reserve in `dir` (`bytes` of it, preallocated); a disk without the
    /// room starts out full.
    pub fn open(dir: &Path, bytes: u64) -> Self {
        let reserve = Self {
            path: dir.join(RESERVE_FILE),
            bytes,
            full: AtomicBool::new(false),
            checked: Mutex::new(None),
        };
        if let Err(e) = reserve.take() {
            warn!(path = %reserve.path.display(), bytes, error = %e, "cannot preallocate the disk reserve: admin writes may not commit once the disk is full");
            reserve.set_full(true);
        }
        reserve
    }

    /// Whether the disk is full: set by a write that failed for lack of space, cleared
    /// once the reserve could be taken again (looked at no more than every second).
    pub fn is_full(&self) -> bool {
        if !self.full.load(Ordering::Relaxed) {
            return false;
        }
        {
            let mut checked = self
                .checked
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if checked.is_some_and(|at| at.elapsed() < RECHECK) {
                return true;
            }
            *checked = Some(Instant::now());
        }
        if self.room() >= self.bytes.saturating_mul(2) && self.take().is_ok() {
            info!(path = %self.path.display(), "the disk has room again: the reserve is taken back and decision records are written again");
            self.set_full(false);
            return false;
        }
        true
    }

    /// A write failed: when for lack of space, the reserve is released (once) so the
    /// next writes can commit.
    pub fn write_failed(&self, e: &StoreError) {
        let StoreError::Unavailable(reason) = e else {
            return;
        };
        if !reason.starts_with(DISK_FULL) || self.full.load(Ordering::Relaxed) {
            return;
        }
        let released = std::fs::remove_file(&self.path);
        error!(path = %self.path.display(), bytes = self.bytes, released = released.is_ok(), "the disk is full: the reserve is released so that admin writes (kill switch, token revocation, settings) still commit; decision records wait until there is room");
        *self
            .checked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Instant::now());
        self.set_full(true);
    }

    fn set_full(&self, full: bool) {
        self.full.store(full, Ordering::Relaxed);
        crate::metrics::disk_full(full);
    }

    /// The bytes the filesystem has free for this process.
    fn room(&self) -> u64 {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        rustix::fs::statvfs(dir).map_or(0, |s| s.f_bavail.saturating_mul(s.f_frsize))
    }

    /// Creates the file and reserves its blocks.
    fn take(&self) -> std::io::Result<()> {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(false);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let file = options.open(&self.path)?;
        #[cfg(target_os = "linux")]
        rustix::fs::fallocate(&file, rustix::fs::FallocateFlags::empty(), 0, self.bytes)?;
        #[cfg(not(target_os = "linux"))]
        file.set_len(self.bytes)?;
        file.sync_all()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_disk_releases_the_reserve_once_and_takes_it_back() {
        let dir = tempfile::tempdir().unwrap();
        let reserve = DiskReserve::open(dir.path(), 4096);
        let path = dir.path().join(RESERVE_FILE);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 4096);
        assert!(!reserve.is_full());
        reserve.write_failed(&StoreError::Unavailable("busy".into()));
        assert!(!reserve.is_full() && path.exists());
        reserve.write_failed(&StoreError::Unavailable(format!("{DISK_FULL}: x")));
        assert!(!path.exists());
        // looked at again no sooner than a second later
        assert!(reserve.is_full());
        *reserve.checked.lock().unwrap() = Some(Instant::now() - RECHECK);
        assert!(!reserve.is_full());
        assert!(path.exists());
    }
}
