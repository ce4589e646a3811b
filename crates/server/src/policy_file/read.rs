//! The one read of a policy file: a regular file only, size-capped, never blocking.

use super::MAX_POLICY_BYTES;

/// Why a policy file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("is not a regular file ({0}): point it at the policy YAML itself")]
    NotRegular(&'static str),
    #[error(
        "is larger than {MAX_POLICY_BYTES} bytes: a policy file is far smaller (is the path right?)"
    )]
    TooLarge,
    #[error("is not UTF-8 text: save it as UTF-8")]
    NotUtf8,
}

/// Reads a policy file, only if it is a regular file, at most [`MAX_POLICY_BYTES`],
/// without ever blocking: opened non-blocking (a FIFO opens at once instead of
/// waiting for a writer) and checked on the open handle, so a path swapped for a
/// device or a FIFO between a check and the read is refused too. Symlinks are
/// followed (a ConfigMap mount is one) but what they reach must be a regular file.
pub fn read_file(path: &std::path::Path) -> Result<String, ReadError> {
    use std::io::Read;
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    let file = options.open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(ReadError::NotRegular(file_kind(&meta)));
    }
    if meta.len() > MAX_POLICY_BYTES as u64 {
        return Err(ReadError::TooLarge);
    }
    // the length may grow after the check: the cap holds for what is read
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_POLICY_BYTES as u64 + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() > MAX_POLICY_BYTES {
        return Err(ReadError::TooLarge);
    }
    String::from_utf8(bytes).map_err(|_| ReadError::NotUtf8)
}

fn file_kind(meta: &std::fs::Metadata) -> &'static str {
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
