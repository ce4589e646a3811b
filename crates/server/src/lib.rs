//! toolgate's server: configuration, authentication, the store, the change hub,
//! the service, and the gRPC layer over it (the only code here that sees protobuf).

pub mod auth;
pub mod build_info;
pub mod config;
pub mod connections;
pub mod console;
pub mod disk;
pub mod grpc;
pub mod http;
pub mod hub;
pub mod managed;
pub mod metrics;
pub mod server;
pub mod service;
pub mod store;
pub mod telemetry;
pub mod tls;

pub use toolgate_core::{ids, policy, secrets};
pub use toolgate_proto as proto;
