//! `toolgate proxy`'s command line: the arguments and the I/O around
//! `crate::proxy` (logs on stderr, the listener, the upstream chosen).

use super::connection::Connection;
use crate::grpc::client::ClientConfig;
use crate::proxy;
use anyhow::Context as _;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, clap::Args)]
pub struct ProxyArgs {
    /// The proxied server's id in policy entries (`github` for `github:create_issue`).
    #[arg(long)]
    server_id: String,
    /// stdio mode: the team whose policy applies.
    #[arg(long, env = "TOOLGATE_TEAM")]
    team: Option<String>,
    /// stdio mode: the user whose policy applies.
    #[arg(long, env = "TOOLGATE_USER")]
    user: Option<String>,
    /// Serve Streamable HTTP at this address (path /mcp) instead of stdio.
    #[arg(long)]
    listen: Option<std::net::SocketAddr>,
    /// HTTP mode: TOML or YAML file listing the users' bearer tokens (`tokens: [{name,
    /// sha256, role: member, team, user}]`). Without it, on a loopback address only,
    /// the proxy serves the one user --team and --user name.
    #[arg(long)]
    clients: Option<PathBuf>,
    /// HTTP mode: a host name (any port) or host:port the proxy answers to, besides
    /// localhost, 127.0.0.1 and [::1] on a loopback address; repeatable. Any other
    /// Host gets 403 (DNS rebinding protection); on another address, Host is checked
    /// only when this is given.
    #[arg(long = "allowed-host", value_name = "HOST")]
    allowed_hosts: Vec<String>,
    /// HTTP mode: an origin (`https://app.example.com`) whose pages may call the proxy,
    /// besides those of an allowed host; repeatable. Any other Origin gets 403.
    #[arg(long = "allowed-origin", value_name = "ORIGIN")]
    allowed_origins: Vec<String>,
    /// The upstream's Streamable HTTP URL, instead of a command.
    #[arg(long, conflicts_with = "command")]
    upstream_url: Option<String>,
    /// Keep showing the last known tools this long while toolgate is unreachable.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "0s")]
    max_staleness: Duration,
    /// With central approvals on: how long a call may wait for a person's answer to
    /// an ASK the team sends to its approvers (e.g. 5m); 0s never waits.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "0s")]
    approval_wait: Duration,
    /// Nobody at the MCP client can answer an ASK (a headless agent): with a team's
    /// `headless` approval mode, its ASKs go to the approvers.
    #[arg(long)]
    headless: bool,
    /// Tool descriptions longer than this many bytes are cut, with a marker saying so
    /// (an upstream's text reaches the model as instructions).
    #[arg(long, value_name = "BYTES", default_value_t = proxy::DEFAULT_MAX_DESCRIPTION_BYTES,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(256..=1_048_576))]
    max_description_bytes: usize,
    /// HTTP mode with a command upstream: each MCP session runs its own upstream
    /// process; at most this many at once (a session past it gets an error saying so).
    #[arg(long, value_name = "N", default_value_t = proxy::DEFAULT_MAX_UPSTREAM_PROCESSES,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=100_000))]
    max_upstream_processes: usize,
    /// Tool pinning in the toolgate server's store: each tool's name, description and
    /// input schema are pinned (hashed) the first time a gateway of the team sees it;
    /// a tool whose definition later differs is hidden and its calls ask until an
    /// admin accepts the change (`toolgate pins accept`). Every proxy of the team
    /// agrees, on any machine.
    #[arg(long, conflicts_with = "pins")]
    pin_tools: bool,
    /// Tool pinning without the server's store: a local JSON file (one per proxy) where each tool's name,
    /// description and input schema are recorded (hashed) the first time the team's
    /// proxy sees it; a tool whose definition later differs is hidden and its calls
    /// ask until an admin accepts the change (--repin).
    #[arg(long, value_name = "FILE")]
    pins: Option<PathBuf>,
    /// With --pins: print each tool whose definition changed, with the difference,
    /// and exit (--team narrows it to one team).
    #[arg(long, requires = "pins")]
    pins_status: bool,
    /// With --pins: accept the changed definition of this tool (`*`: every changed
    /// tool of --server-id) and exit; the running proxy shows it again within a
    /// second. Repeatable.
    #[arg(long, value_name = "TOOL", requires = "pins")]
    repin: Vec<String>,
    /// The upstream command and its arguments, after `--`.
    #[arg(last = true)]
    command: Vec<String>,
}

/// Runs the proxy until its stdio client leaves or, over HTTP, until `shutdown`.
pub async fn run_proxy(
    connection: &Connection,
    args: ProxyArgs,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    // stdout may be the MCP stream: logs go to stderr only
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .try_init();
    if let (Some(path), true) = (&args.pins, args.pins_status || !args.repin.is_empty()) {
        return pins_admin(path, &args);
    }
    let upstream = match (args.upstream_url, args.command.is_empty()) {
        (Some(url), _) => proxy::Target::Url(url),
        (None, false) => proxy::Target::Command(args.command),
        (None, true) => {
            anyhow::bail!("no upstream: give its command after `--` or --upstream-url URL")
        }
    };
    let mut resolved = connection.resolve()?;
    super::login_refresh::refresh_if_needed(&mut resolved)
        .await
        .map_err(|e| anyhow::anyhow!(e))?;
    // a sign-in is refreshed for as long as the proxy runs, its token swapped under
    // every call
    let bearer = match (&resolved.sso, &resolved.profile_path) {
        (Some(session), Some(path)) => {
            let bearer = crate::grpc::client::SharedBearer::default();
            tokio::spawn(super::login_refresh::keep_fresh(
                path.clone(),
                session.clone(),
                bearer.clone(),
            ));
            Some(bearer)
        }
        _ => None,
    };
    let config = proxy::ProxyConfig {
        toolgate: ClientConfig {
            server: resolved.server,
            token: resolved.token,
            token_file: resolved.token_file,
            tls: resolved.tls,
            deadline: proxy::CALL_DEADLINE,
            bearer,
            ..ClientConfig::default()
        },
        server_id: args.server_id,
        upstream,
        who: match (args.team, args.user) {
            (Some(team), Some(user)) => Some(proxy::Who { team, user }),
            _ => None,
        },
        listen: args.listen,
        clients: args
            .clients
            .as_deref()
            .map(proxy::ClientTokens::load)
            .transpose()?,
        pins: match (args.pin_tools, args.pins) {
            (true, _) => Some(proxy::Pinning::Server),
            (false, Some(path)) => Some(proxy::Pinning::File(path)),
            (false, None) => None,
        },
        http: proxy::HttpAccess {
            allowed_hosts: args.allowed_hosts,
            allowed_origins: args.allowed_origins,
        },
        max_staleness: args.max_staleness,
        approvals: proxy::ApprovalWait {
            wait: args.approval_wait,
            headless: args.headless,
        },
        max_description_bytes: args.max_description_bytes,
        max_upstream_processes: args.max_upstream_processes,
    };
    match config.listen {
        Some(addr) => {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("cannot listen on {addr}"))?;
            eprintln!(
                "toolgate proxy: listening on http://{}/mcp",
                listener.local_addr()?
            );
            proxy::run_http(config, listener, shutdown).await?;
        }
        None => proxy::run_stdio(config).await?,
    }
    Ok(())
}

/// `--pins-status` and `--repin`: the pin file's changed tools, and accepting them.
fn pins_admin(path: &std::path::Path, args: &ProxyArgs) -> anyhow::Result<()> {
    use proxy::pins::{PinFile, diff};
    let mut file = PinFile::read(path).map_err(anyhow::Error::msg)?;
    let team = args.team.as_deref();
    if args.pins_status {
        let changes = file.changes(&args.server_id, team);
        if changes.is_empty() {
            println!("no tool of {} changed since it was pinned", args.server_id);
        }
        for (key, tool, old, new) in changes {
            println!("{key}: {tool} changed since it was pinned (hidden; its calls ask):");
            for line in diff(old, new) {
                println!("  {line}");
            }
        }
    }
    if !args.repin.is_empty() {
        let done = file.repin(&args.server_id, team, &args.repin);
        if done.is_empty() {
            anyhow::bail!(
                "--repin {}: no changed tool of {} by that name; --pins-status lists them",
                args.repin.join(", "),
                args.server_id
            );
        }
        file.write(path).map_err(anyhow::Error::msg)?;
        for line in done {
            println!("re-pinned {line}");
        }
    }
    Ok(())
}
