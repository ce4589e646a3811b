//! The data directory's disk: how much room is left, and whether that is too little.
//! A disk about to fill is reported (health NOT_SERVING for the server and the write
//! services, a metric) before writes start failing on it.

use std::path::Path;

/// Below this much room for an unprivileged writer the disk counts as full: the
/// database's WAL, the audit spill file and a checkpoint need some to work with.
pub const LOW_BYTES: u64 = 64 * 1024 * 1024;

/// Bytes an unprivileged writer may still use on the filesystem holding `dir`.
pub fn free_bytes(dir: &Path) -> std::io::Result<u64> {
    #[cfg(unix)]
    {
        let stat = rustix::fs::statvfs(dir)?;
        Ok(stat.f_bavail.saturating_mul(stat.f_frsize))
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Err(std::io::Error::other(
            "free space is not read on this platform",
        ))
    }
}

/// Why the disk under `dir` is unfit for writes, when it is; a directory whose free
/// space cannot be read is not reported (the writes themselves will say why).
pub fn problem(dir: &Path) -> Option<String> {
    match free_bytes(dir) {
        Ok(free) if free < LOW_BYTES => Some(format!(
            "the disk holding {} has {} MiB free, less than {} MiB: free space on it, or writes will fail",
            dir.display(),
            free / (1024 * 1024),
            LOW_BYTES / (1024 * 1024)
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_directory_reads_its_free_space() {
        let dir = tempfile::tempdir().unwrap();
        assert!(free_bytes(dir.path()).is_ok());
        assert!(free_bytes(&dir.path().join("missing")).is_err());
        assert_eq!(problem(&dir.path().join("missing")), None);
    }
}
