//! The API's protobuf types: the one place generated code is included, the codec
//! every service and client uses, and the conversions to and from the policy core.

pub mod codec;
pub mod convert;
mod error;
pub mod json;
pub mod roles;

#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod v1 {
    tonic::include_proto!("toolgate.v1");
}

/// The encoded file descriptor set, for reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] = tonic::include_file_descriptor_set!("toolgate_descriptor");
