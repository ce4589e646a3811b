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
    auth, build_info, config, connections, console, http, hub, managed, metrics, server, service,
    store, telemetry, tls,
};

/// This build: the version and the commit `build.rs` found (git's short hash of HEAD,
/// `TOOLGATE_COMMIT` when set, "unknown" outside a checkout).
pub const BUILD: build_info::BuildInfo = build_info::BuildInfo {
    version: env!("CARGO_PKG_VERSION"),
    commit: env!("TOOLGATE_COMMIT"),
};

/// What `toolgate --version` prints after the name: `0.1.0 (1a2b3c4)`.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("TOOLGATE_COMMIT"),
    ")"
);

/// The gRPC layer's services and conversions, and the client.
pub mod grpc {
    pub use toolgate_client as client;
    pub use toolgate_server::grpc::*;
}
