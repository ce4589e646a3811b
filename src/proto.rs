//! The one place generated protobuf code is included.

#![allow(missing_docs, clippy::all, clippy::pedantic)]

pub mod v1 {
    tonic::include_proto!("toolgate.v1");
}

/// The encoded file descriptor set, for reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] = tonic::include_file_descriptor_set!("toolgate_descriptor");
