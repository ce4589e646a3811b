//! The OTLP export's spill: DENY and audit records the collector has not taken yet,
//! a file per batch on disk (fsync'd), read back oldest first, after a restart too.

use opentelemetry_proto::tonic::logs::v1::LogRecord;
use prost::Message as _;
use std::path::{Path, PathBuf};
use tracing::{error, info, warn};

/// A spill file larger than this is not one this server wrote (a batch is at most
/// 1024 records of at most a few KiB): it is set aside, not read.
const MAX_SPILL_FILE: u64 = 64 * 1024 * 1024;
/// DENY and audit records the collector has not taken yet, on disk: a file per
/// batch, each a run of length-delimited `LogRecord`s, named by a rising number.
#[derive(Debug)]
pub(super) struct Spill {
    dir: PathBuf,
    max_bytes: u64,
    /// The bytes in the directory and the next file's number.
    state: std::sync::Mutex<(u64, u64)>,
}

impl Spill {
    pub(super) fn open(dir: PathBuf, max_bytes: u64) -> Result<Self, String> {
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("otlp_export: cannot create {}: {e}", dir.display()))?;
        let (mut bytes, mut next) = (0, 0);
        for (number, path) in spill_files(&dir) {
            bytes += std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            next = next.max(number + 1);
        }
        if bytes > 0 {
            info!(
                bytes,
                "OTLP export: records an earlier run could not send are sent first"
            );
        }
        Ok(Self {
            dir,
            max_bytes,
            state: std::sync::Mutex::new((bytes, next)),
        })
    }

    /// Writes `records` in files of `batch` records (fsync'd); past the bound they are
    /// dropped (counted).
    pub(super) fn write_all(&self, records: Vec<LogRecord>, batch: usize) {
        for chunk in records.chunks(batch.max(1)) {
            let mut buf = Vec::new();
            for r in chunk {
                // a Vec grows as needed: encoding into one cannot fail
                let _ = r.encode_length_delimited(&mut buf);
            }
            let mut state = self
                .state
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if state.0 + buf.len() as u64 > self.max_bytes {
                error!(
                    records = chunk.len(),
                    "OTLP export: the spill directory is full: DENY records dropped from the export (they are in the decision log)"
                );
                crate::metrics::otlp_export_dropped(chunk.len());
                continue;
            }
            let path = self.dir.join(format!("{:012}.pb", state.1));
            // a new file gets the default mode, as every file the data directory holds
            match toolgate_files::write_atomic(&path, toolgate_files::Mode::KeepTarget, &buf) {
                Ok(()) => {
                    state.0 += buf.len() as u64;
                    state.1 += 1;
                    crate::metrics::otlp_export_spilled(chunk.len());
                }
                Err(e) => {
                    error!(error = %e, records = chunk.len(), "OTLP export: cannot spill DENY records: dropped from the export");
                    crate::metrics::otlp_export_dropped(chunk.len());
                }
            }
        }
    }

    /// The oldest spill file and its records; an unreadable one is set aside.
    pub(super) fn oldest(&self) -> Option<(PathBuf, Vec<LogRecord>)> {
        loop {
            let (_, path) = spill_files(&self.dir).into_iter().next()?;
            match read_spill(&path) {
                Ok(records) if !records.is_empty() => return Some((path, records)),
                Ok(_) => self.remove(&path),
                Err(e) => {
                    error!(error = %e, path = %path.display(), "OTLP export: a spill file is unreadable: set aside as .bad");
                    crate::metrics::otlp_export_dropped(1);
                    let len = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
                    if std::fs::rename(&path, path.with_extension("bad")).is_err() {
                        let _ = std::fs::remove_file(&path);
                    }
                    self.forget(len);
                }
            }
        }
    }

    pub(super) fn remove(&self, path: &Path) {
        let len = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        if let Err(e) = std::fs::remove_file(path) {
            warn!(error = %e, path = %path.display(), "OTLP export: cannot remove a sent spill file");
            return;
        }
        self.forget(len);
    }

    fn forget(&self, len: u64) {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        state.0 = state.0.saturating_sub(len);
    }
}

/// The spill files in `dir`, oldest first.
pub(super) fn spill_files(dir: &Path) -> Vec<(u64, PathBuf)> {
    let mut files: Vec<(u64, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let path = entry.path();
            let name = path.file_name()?.to_str()?;
            let number = name.strip_suffix(".pb")?.parse().ok()?;
            Some((number, path))
        })
        .collect();
    files.sort();
    files
}

fn read_spill(path: &Path) -> Result<Vec<LogRecord>, String> {
    let len = std::fs::metadata(path).map_err(|e| e.to_string())?.len();
    if len > MAX_SPILL_FILE {
        return Err(format!("{len} bytes, more than a spill file holds"));
    }
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    let mut buf = bytes.as_slice();
    let mut records = Vec::new();
    while !buf.is_empty() {
        records.push(LogRecord::decode_length_delimited(&mut buf).map_err(|e| e.to_string())?);
    }
    Ok(records)
}
