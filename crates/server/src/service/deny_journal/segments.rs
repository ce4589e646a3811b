//! The DENY journal's files: segments named by number, read back at start, an older
//! version's spill file imported, and the directory created, locked and fsync'd.

use super::{LOCK_FILE, SEGMENT_BYTES, SUFFIX};
use crate::service::decision_log::record::Record;
use std::fs::File;
use std::io::{BufRead as _, Write as _};
use std::path::{Path, PathBuf};
use tracing::{error, info, warn};

pub(super) fn segment_path(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:016}{SUFFIX}"))
}

/// The segments' numbers in `dir`, in order.
pub(super) fn segment_numbers(dir: &Path) -> std::io::Result<Vec<u64>> {
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
pub(super) fn read_segment(path: &Path) -> (Vec<Record>, u64) {
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
pub(super) fn import_legacy(spill: &Path, segment: &Path) -> std::io::Result<()> {
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

pub(super) fn create_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// An exclusive lock on the directory's lock file, or `None` when another process
/// holds it.
pub(super) fn lock(dir: &Path) -> std::io::Result<Option<File>> {
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
pub(super) fn preallocate(file: &File) -> std::io::Result<()> {
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

pub(super) fn same_filesystem(a: &Path, b: &Path) -> bool {
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

pub(super) fn sync_dir(dir: &Path) -> std::io::Result<()> {
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

pub(super) fn remove(path: &Path) {
    if let Err(e) = std::fs::remove_file(path)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        warn!(path = %path.display(), error = %e, "cannot remove a stored deny journal segment: its records would be written again at the next start");
    }
}
