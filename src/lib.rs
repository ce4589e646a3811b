//! toolgate: a policy server for AI-agent tool calls. This crate is the binary's:
//! the CLI, `toolgate proxy` and the I/O around the hooks; the layers below are
//! crates of their own (`toolgate-core`, `-files`, `-proto`, `-server`, `-client`), re-exported
//! here under the paths the tests, benches and fuzz targets use.

pub mod cli;
pub mod proxy;

pub use toolgate_core::{examples, export, hook, ids, policy, secrets};
pub use toolgate_files as files;
pub use toolgate_files::policy_file;
pub use toolgate_proto as proto;
pub use toolgate_server::auth::jwt;
pub use toolgate_server::{
    auth, config, connections, console, http, hub, managed, metrics, server, service, store,
    telemetry, tls,
};

/// The gRPC layer's services and conversions, and the client.
pub mod grpc {
    pub use toolgate_client as client;
    pub use toolgate_server::grpc::*;
}
