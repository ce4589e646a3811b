//! Builds the application from a configuration and serves it: `run(listener, app, shutdown)`
//! is what `main` and the integration tests both call.

use crate::auth::{Authenticator, Principal, Role, token_digest};
use crate::config::Config;
use crate::hub::Hub;
use crate::service::Service;
use crate::store::{PostgresStore, SqliteStore, Store, StoreError};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tracing::info;

mod health;
mod preflight;
mod serve;

pub use preflight::{DataDirLock, LOCK_FILE, preflight, preflight_warnings};
use preflight::{bootstrap_token, create_data_dir};
pub use serve::{run, serve};

/// The file in the data directory that holds the bootstrap operator token.
pub const BOOTSTRAP_TOKEN_FILE: &str = "bootstrap-token";

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("cannot create data directory {path}: {source}")]
    DataDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "data directory {path} is in use by another toolgate server ({holder}): stop that server, or give this one another data_dir (--data-dir)"
    )]
    DataDirInUse { path: PathBuf, holder: String },
    #[error("cannot open store: {0}")]
    Store(#[from] StoreError),
    #[error(transparent)]
    Journal(#[from] crate::service::JournalError),
    #[error("bootstrap token file {path}: {source}")]
    Bootstrap {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    PolicyFile(#[from] crate::managed::ManagedError),
    #[error("reflection: {0}")]
    Reflection(#[from] tonic_reflection::server::Error),
    #[error("transport: {0}")]
    Transport(#[from] tonic::transport::Error),
    #[error(transparent)]
    Metrics(#[from] crate::metrics::MetricsError),
    #[error(transparent)]
    Tls(#[from] crate::tls::TlsError),
    #[error(transparent)]
    Jwt(#[from] crate::auth::jwt::JwtError),
    #[error("console.listen: cannot listen on {addr}: {source}: give a free HOST:PORT")]
    Console {
        addr: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Http(#[from] crate::http::HttpError),
    #[error("http.listen: cannot listen on {addr}: {source}")]
    HttpListen {
        addr: String,
        source: std::io::Error,
    },
    #[error("start-up: {0}")]
    StartUp(String),
}

/// Everything `run` serves, built from a configuration.
#[derive(Debug)]
pub struct App {
    pub service: Arc<Service>,
    pub auth: Arc<Authenticator>,
    pub config: Config,
    /// Where the bootstrap operator token was written, when one was needed.
    pub bootstrap_token_path: Option<PathBuf>,
    /// Where `GET /metrics` is served, when `metrics.listen` is set.
    pub metrics_addr: Option<std::net::SocketAddr>,
    metrics: Option<(TcpListener, metrics_exporter_prometheus::PrometheusHandle)>,
    /// Where the console is served, when `console.listen` is set.
    pub console_addr: Option<std::net::SocketAddr>,
    console: Option<TcpListener>,
    /// Where the API is served a second time, when `http.listen` is set.
    pub http_addr: Option<std::net::SocketAddr>,
    http_listener: Option<TcpListener>,
    /// The policy file's status, when the server runs with one.
    policy_file: Option<crate::managed::StatusCell>,
    shutdown: CancellationToken,
    /// Held while the server runs (the embedded store only).
    data_lock: Option<DataDirLock>,
}

impl App {
    /// Opens the store and prepares authentication. With no tokens, certificates,
    /// anonymous access or operator JWTs configured, an operator token is written to
    /// `<data_dir>/bootstrap-token`.
    pub async fn build(config: Config) -> Result<Self, ServerError> {
        create_data_dir(&config.data_dir).map_err(|source| ServerError::DataDir {
            path: config.data_dir.clone(),
            source,
        })?;
        // before anything is read or written: the store, the bootstrap token, the
        // policy file's teams. PostgreSQL replicas may share a directory's files
        // (the bootstrap token): only the embedded store is one server's alone
        let data_lock = match config.postgres_url() {
            None => Some(DataDirLock::acquire(&config.data_dir, &config.listen)?),
            Some(_) => None,
        };
        let metrics = match &config.metrics.listen {
            Some(addr) => {
                let handle = crate::metrics::install(crate::grpc::served_paths())?;
                let listener = TcpListener::bind(addr).await.map_err(|source| {
                    crate::metrics::MetricsError::Listen {
                        addr: addr.clone(),
                        source,
                    }
                })?;
                Some((listener, handle))
            }
            None => None,
        };
        let metrics_addr = metrics
            .as_ref()
            .and_then(|(listener, _)| listener.local_addr().ok());
        let console = match &config.console.listen {
            Some(addr) => {
                Some(
                    TcpListener::bind(addr)
                        .await
                        .map_err(|source| ServerError::Console {
                            addr: addr.clone(),
                            source,
                        })?,
                )
            }
            None => None,
        };
        let console_addr = console.as_ref().and_then(|l| l.local_addr().ok());
        let http_listener =
            match (&config.http.listen, config.http.enabled) {
                (Some(addr), true) => Some(TcpListener::bind(addr).await.map_err(|source| {
                    ServerError::HttpListen {
                        addr: addr.clone(),
                        source,
                    }
                })?),
                _ => None,
            };
        let http_addr = http_listener.as_ref().and_then(|l| l.local_addr().ok());
        let history = config.watch.history_per_team;
        let max_staleness = Duration::from_secs(config.store.max_staleness_secs);
        // a few pings within the bound: one lost or late still leaves it met
        let heartbeat = max_staleness / 4;
        let mut store: Arc<dyn Store> = match config.postgres_url() {
            Some(url) => Arc::new(
                PostgresStore::connect(url, history)
                    .await?
                    .with_heartbeat(heartbeat),
            ),
            None => Arc::new(
                SqliteStore::open(&config.sqlite_path(), history)
                    .await?
                    .with_reserve(&config.data_dir, config.decision_log.disk_reserve_bytes),
            ),
        };
        if metrics.is_some() || config.telemetry.otlp_endpoint.is_some() {
            // only when observed: otherwise not even a clock read per operation
            store = Arc::new(crate::store::Metered(store));
        }
        let notices = store.notices().await?;
        let mut hub = Hub::new(
            store,
            config.watch.queue_size,
            config.limits.max_cached_users_per_team,
        )
        .with_queue_bytes(config.watch.queue_bytes);
        if config.postgres_url().is_some() {
            hub = hub.with_max_staleness(max_staleness);
        }
        let hub = Arc::new(hub);
        // before serving: a token issued earlier authenticates from the first call
        hub.reload_tokens().await?;
        // and the organisation's group policies, which every view holds: a store
        // that fails later still leaves the teams' cached policies answering
        hub.org_groups().await.map_err(|e| match e {
            crate::hub::HubError::Store(e) => ServerError::Store(e),
            other => ServerError::Store(StoreError::Corrupt(other.to_string())),
        })?;
        let issued = hub.issued_tokens();
        if let Some(notices) = notices {
            tokio::spawn(hub.clone().follow(notices));
        }
        let shutdown = CancellationToken::new();
        {
            let monitor = hub.clone().monitor(
                Duration::from_secs(config.store.check_secs),
                Duration::from_secs(config.limits.team_idle_secs),
            );
            let stop = shutdown.clone();
            tokio::spawn(async move {
                tokio::select! {
                    () = monitor => {}
                    () = stop.cancelled() => {}
                }
            });
            let disk = {
                let (hub, dir) = (hub.clone(), config.data_dir.clone());
                let every = Duration::from_secs(config.store.check_secs);
                async move {
                    let mut tick = tokio::time::interval(every);
                    loop {
                        tick.tick().await;
                        hub.set_disk(crate::disk::problem(&dir));
                    }
                }
            };
            let stop = shutdown.clone();
            tokio::spawn(async move {
                tokio::select! {
                    () = disk => {}
                    () = stop.cancelled() => {}
                }
            });
            let currency = hub.clone().watch_currency(heartbeat / 2);
            let stop = shutdown.clone();
            tokio::spawn(async move {
                tokio::select! {
                    () = currency => {}
                    () = stop.cancelled() => {}
                }
            });
        }
        let exporter = crate::service::Exporter::start(
            &config.otlp_export,
            &config.data_dir,
            &config.telemetry.service_name,
        )
        .map_err(ServerError::StartUp)?;
        let service = Arc::new(
            Service::with_decision_log(
                hub,
                config.limits.clone(),
                Duration::from_secs(config.watch.heartbeat_secs),
                shutdown.clone(),
                Some(Arc::new(crate::service::DenyJournal::open(
                    &config.journal_dir(),
                    config.decision_log.journal_max_bytes,
                    // the embedded store's reserve, which a journal on its disk leaves be
                    config.postgres_url().is_none().then_some((
                        config.data_dir.as_path(),
                        config.decision_log.disk_reserve_bytes,
                    )),
                    Some(&config.data_dir.join(crate::service::SPILL_FILE)),
                )?)),
                config.decision_log.clone(),
            )
            .with_webhook(crate::service::WebhookLimits {
                queue: config.approvals.webhook_queue,
                attempts: config.approvals.webhook_attempts,
                timeout: Duration::from_secs(config.approvals.webhook_timeout_secs),
                reach: toolgate_core::secure_url::Reach {
                    loopback: config.approvals.webhook_allow_loopback,
                    private_networks: config.approvals.webhook_allow_private_networks,
                },
            })
            .with_export_opt(exporter),
        );
        service.log_all_decisions(config.audit.decisions == crate::config::DecisionLog::All);
        let policy_file = match &config.policy_file {
            // before anything serves: a bad file stops the start, and clients never
            // see the teams it manages in their stored state
            Some(path) => {
                Some(crate::managed::start(path, service.clone(), shutdown.clone()).await?)
            }
            None => None,
        };
        let mut tokens = config.token_principals();
        let mut bootstrap_token_path = None;
        // the bootstrap operator is for a server with no other way in; JWT tokens
        // that may be operators are one (without allow_operator they cannot be)
        let jwt_operators = config.auth.jwt.as_ref().is_some_and(|j| j.allow_operator);
        if tokens.is_empty()
            && config.auth.anonymous.is_none()
            && config.auth.certificates.is_empty()
            && !jwt_operators
        {
            let path = config.data_dir.join(BOOTSTRAP_TOKEN_FILE);
            let token = bootstrap_token(&path)?;
            info!(path = %path.display(), "no tokens configured: the bootstrap operator token is in this file");
            tokens.push((
                token_digest(&token),
                Principal {
                    groups: Default::default(),
                    name: "bootstrap-operator".into(),
                    role: Role::Operator,
                    team: None,
                    user: None,
                },
            ));
            bootstrap_token_path = Some(path);
        }
        let jwt = match &config.auth.jwt {
            Some(jwt) => Some(crate::auth::jwt::JwtVerifier::start(jwt, shutdown.clone()).await?),
            None => None,
        };
        // who signs in through the identity provider, recorded off the request path
        // (a bounded hand-over: past it a sign-in waits for the user's next call)
        if let Some(rx) = jwt.as_ref().and_then(|j| j.follow_sign_ins(1024)) {
            tokio::spawn(service.clone().record_sign_ins(rx));
        }
        let auth = Arc::new(
            Authenticator::new(tokens, config.anonymous_principal())
                .with_certificates(config.certificate_principals())
                .with_jwt(jwt)
                .with_issued(issued),
        );
        Ok(Self {
            service,
            auth,
            config,
            bootstrap_token_path,
            metrics_addr,
            metrics,
            console_addr,
            console,
            http_addr,
            http_listener,
            policy_file,
            shutdown,
            data_lock,
        })
    }
}
