//! `toolgate proxy`: an MCP gateway that shows and runs only the tools the central
//! policy allows, and re-announces the tool list the moment that policy changes.
//!
//! Downstream it serves one client on stdio or many over Streamable HTTP (each
//! principal from its bearer token); upstream it runs a child process or connects to
//! a Streamable HTTP URL. Both MCP protocol generations are spoken through `rmcp`,
//! including 2026-07-28's `subscriptions/listen`.

mod admission;
mod gate;
mod http;
mod lines;
mod names;
mod origin;
pub mod pins;
mod relay;
mod session;
mod target;
mod upstream;

pub use gate::{Held, Who};
pub use http::ClientTokens;
pub use names::DEFAULT_MAX_DESCRIPTION_BYTES;
pub use origin::HttpAccess;
pub use relay::{ELICITATION, SAMPLING};
pub use target::Target;

use crate::grpc::client::{Client, ClientConfig};
use session::{Session, Shared};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// The largest JSON-RPC message accepted from a downstream client, either transport.
pub const MAX_MESSAGE_BYTES: usize = 4 * 1024 * 1024;

/// How long connecting to toolgate or one call to it may take before the proxy
/// treats it as unreachable, unless configured.
pub const CALL_DEADLINE: Duration = Duration::from_secs(10);

/// Errors of the proxy layer.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    #[error("bad proxy configuration: {0}")]
    Config(String),
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error("downstream session failed: {0}")]
    Session(String),
}

/// What `toolgate proxy` was asked to do.
#[derive(Debug, Clone)]
pub struct ProxyConfig {
    /// toolgate's address and the proxy's own token: the user's (stdio) or a service
    /// token (HTTP). `deadline` bounds each decision and filtering (zero: 10 s); team and user are
    /// not used (they come from `who` or from each client's token).
    pub toolgate: ClientConfig,
    /// The MCP server id the proxied tools belong to in policy entries (`github`).
    pub server_id: String,
    pub upstream: Target,
    /// stdio: whose policy applies.
    pub who: Option<Who>,
    /// HTTP: listen here, principals from the bearer tokens in `clients`, or without
    /// them (on a loopback address only) `who`.
    pub listen: Option<SocketAddr>,
    pub clients: Option<ClientTokens>,
    /// HTTP: the `Host` and `Origin` values accepted.
    pub http: HttpAccess,
    /// Tool pinning, when on: in the server's store, or in a local file.
    pub pins: Option<Pinning>,
    /// How long the last known tool list is kept while toolgate is unreachable (zero:
    /// fail closed at once).
    pub max_staleness: Duration,
    /// Central approvals: whether and how long a call waits for a person's answer.
    pub approvals: ApprovalWait,
    /// Tool descriptions longer than this many bytes are cut, with a marker
    /// ([`DEFAULT_MAX_DESCRIPTION_BYTES`] unless configured).
    pub max_description_bytes: usize,
    /// HTTP with a command upstream: each MCP session runs its own upstream process;
    /// at most this many at once ([`DEFAULT_MAX_UPSTREAM_PROCESSES`] unless
    /// configured), past which a session's request gets an error saying so.
    pub max_upstream_processes: usize,
}

/// The most upstream processes an HTTP proxy runs at once, unless configured.
pub const DEFAULT_MAX_UPSTREAM_PROCESSES: usize = 64;

/// Where a proxy's tool pins are kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pinning {
    /// In the toolgate server's store, per team and server id: every proxy of the
    /// team, on any machine and through any replica, sees the same pins.
    Server,
    /// In a local JSON file of this proxy alone (no server support needed).
    File(std::path::PathBuf),
}

/// How the proxy takes part in central approvals.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ApprovalWait {
    /// How long a `tools/call` may wait for a person's answer to an ASK the team
    /// sends to its approvers; zero: never (the ASK is handled as before).
    pub wait: Duration,
    /// Nobody at the MCP client can answer an ASK (a headless agent).
    pub headless: bool,
}

/// What every session shares; `single`: one client only (stdio), served by the shared
/// upstream connection.
fn shared(
    config: &ProxyConfig,
    fixed: Option<Who>,
    single: bool,
) -> Result<Arc<Shared>, ProxyError> {
    if config.server_id.trim().is_empty() {
        return Err(ProxyError::Config(
            "server-id: empty; give the MCP server's id as policy entries name it, e.g. --server-id github".into(),
        ));
    }
    let mut toolgate = config.toolgate.clone();
    if toolgate.client_kind.is_empty() {
        // the decision log names the proxy as the client of the calls it gates
        toolgate.client_kind = "mcp-proxy".into();
    }
    if toolgate.deadline.is_zero() {
        toolgate.deadline = CALL_DEADLINE;
    }
    let client = Client::connect_lazy(toolgate).map_err(|e| ProxyError::Config(e.to_string()))?;
    let (single, waiting) = if single {
        // the connection waits for the client's initialize (or first request)
        let (tx, rx) = tokio::sync::watch::channel(None);
        (Some(tx), Some(rx))
    } else {
        (None, None)
    };
    let upstream = upstream::Upstream::start(config.upstream.clone(), waiting);
    let gate = gate::Gate::new(
        client,
        config.server_id.clone(),
        config.max_staleness,
        upstream.tools(),
    )
    .with_approvals(config.approvals)
    .with_target(config.upstream.clone())
    .with_max_description(config.max_description_bytes)
    .with_pins(match &config.pins {
        None => gate::PinKeeper::Off,
        Some(Pinning::Server) => gate::PinKeeper::Server,
        Some(Pinning::File(path)) => gate::PinKeeper::File(pins::Pins::new(
            path.clone(),
            &config.server_id,
            &config.upstream,
        )),
    });
    if config.max_upstream_processes == 0 {
        return Err(ProxyError::Config(
            "max-upstream-processes: 0; give at least 1 (each HTTP session runs its own upstream process)".into(),
        ));
    }
    Ok(Arc::new(Shared {
        gate,
        upstream,
        fixed,
        shown: Default::default(),
        single,
        processes: Arc::new(tokio::sync::Semaphore::new(config.max_upstream_processes)),
        max_processes: config.max_upstream_processes,
    }))
}

/// Serves one client on stdin/stdout until it closes them.
pub async fn run_stdio(config: ProxyConfig) -> Result<(), ProxyError> {
    run_stream(config, tokio::io::stdin(), tokio::io::stdout()).await
}

/// Serves one client on a byte stream pair (stdio, or a pipe in tests) until it
/// closes it.
pub async fn run_stream<R, W>(config: ProxyConfig, read: R, write: W) -> Result<(), ProxyError>
where
    R: tokio::io::AsyncRead + Send + Unpin + 'static,
    W: tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    use rmcp::ServiceExt;
    let who = config.who.clone().ok_or_else(|| {
        ProxyError::Config(
            "team and user: missing; set TOOLGATE_TEAM and TOOLGATE_USER (or --team, --user)"
                .into(),
        )
    })?;
    let shared = shared(&config, Some(who), true)?;
    // a line that is not JSON or is too long is answered with a JSON-RPC error, and
    // the session lives on
    let (read, write) = tokio::io::split(lines::guard(read, write));
    let transport = rmcp::transport::async_rw::AsyncRwTransport::new_server(read, write)
        .with_max_line_length(MAX_MESSAGE_BYTES);
    let running = Session::new(shared)
        .serve(transport)
        .await
        .map_err(|e| ProxyError::Session(e.to_string()))?;
    let _ = running.waiting().await;
    Ok(())
}

/// Serves many clients over Streamable HTTP on `listener` until `shutdown` resolves:
/// each with its bearer token from `clients`, or without `clients`, on a loopback
/// listener only, as the one user `who` names.
pub async fn run_http(
    config: ProxyConfig,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), ProxyError> {
    let fixed = match (&config.clients, &config.who) {
        (Some(_), _) => None,
        (None, Some(who)) => Some(who.clone()),
        (None, None) => {
            return Err(ProxyError::Config(
                "clients: missing; give --clients FILE listing the bearer tokens of the users, or on a loopback address --team and --user".into(),
            ));
        }
    };
    let shared = shared(&config, fixed, false)?;
    http::serve(
        shared,
        config.clients.clone(),
        &config.http,
        listener,
        shutdown,
    )
    .await
}
