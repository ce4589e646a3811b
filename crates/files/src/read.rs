//! The one bounded read of a file the server follows: a regular file only, opened
//! without ever blocking, at most a given number of bytes.

use std::fs::{File, Metadata};
use std::io::{self, Read};
use std::path::Path;

/// Why a followed file could not be read. Callers word it for their own file (the
/// policy file, a certificate, the JWKS) through the variants.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    // transparent: the OS's words once, not again as this error's source
    #[error(transparent)]
    Io(#[from] io::Error),
    #[error("is not a regular file ({0})")]
    NotRegular(&'static str),
    #[error("is larger than {0} bytes")]
    TooLarge(usize),
}

impl ReadError {
    /// How to fix it, for the messages that name the setting.
    pub fn fix(&self) -> &'static str {
        match self {
            Self::Io(_) => "fix the path or the file's permissions",
            Self::NotRegular(_) => "give the path of a regular file",
            Self::TooLarge(_) => "give the path of the file itself (is it the right one?)",
        }
    }
}

/// Reads `path`, only if it is a regular file, at most `max` bytes.
pub fn read_regular(path: &Path, max: usize) -> Result<Vec<u8>, ReadError> {
    let (file, meta) = open_regular(path, max)?;
    read_open(file, &meta, max)
}

/// Opens `path` without blocking (a FIFO opens at once instead of waiting for a
/// writer) and checks the open handle, so a path swapped for a device or a FIFO
/// between a check and the read is refused too. Symlinks are followed (a
/// Kubernetes ConfigMap or Secret mount is one) but what they reach must be a
/// regular file of at most `max` bytes.
pub(super) fn open_regular(path: &Path, max: usize) -> Result<(File, Metadata), ReadError> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    let file = options.open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(ReadError::NotRegular(file_kind(&meta)));
    }
    if meta.len() > max as u64 {
        return Err(ReadError::TooLarge(max));
    }
    Ok((file, meta))
}

/// Reads what [`open_regular`] opened.
pub(super) fn read_open(file: File, meta: &Metadata, max: usize) -> Result<Vec<u8>, ReadError> {
    // the length may grow after the check: the cap holds for what is read
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(max as u64 + 1).read_to_end(&mut bytes)?;
    if bytes.len() > max {
        return Err(ReadError::TooLarge(max));
    }
    Ok(bytes)
}

fn file_kind(meta: &Metadata) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_char_device() || t.is_block_device() {
            return "a device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    if meta.is_dir() {
        "a directory"
    } else {
        "not a file"
    }
}
