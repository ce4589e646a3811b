//! The one read of a policy file: a regular file only, size-capped, never blocking
//! ([`crate::read_regular`]), and UTF-8.

use super::MAX_POLICY_BYTES;

/// Why a policy file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    // transparent: the OS's words once, not again as this error's source
    #[error(transparent)]
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

impl From<crate::ReadError> for ReadError {
    fn from(e: crate::ReadError) -> Self {
        match e {
            crate::ReadError::Io(e) => Self::Io(e),
            crate::ReadError::NotRegular(kind) => Self::NotRegular(kind),
            crate::ReadError::TooLarge(_) => Self::TooLarge,
        }
    }
}

/// Reads a policy file, only if it is a regular file of at most [`MAX_POLICY_BYTES`],
/// without ever blocking (a FIFO or a device is refused at once, even when a
/// symlink leads to it).
pub fn read_file(path: &std::path::Path) -> Result<String, ReadError> {
    decode_text(crate::read_regular(path, MAX_POLICY_BYTES)?)
}

/// A policy file's bytes as text.
pub fn decode_text(bytes: Vec<u8>) -> Result<String, ReadError> {
    String::from_utf8(bytes).map_err(|_| ReadError::NotUtf8)
}
