//! The protobuf layer's error: a message that does not convert to the core's types.

/// A message that does not convert: the field and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct ConvertError {
    pub field: String,
    pub message: String,
}
