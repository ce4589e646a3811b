//! Builds the application from a configuration and serves it: `run(listener, app, shutdown)`
//! is what `main` and the integration tests both call.

use crate::auth::{Authenticator, Principal, Role, generate_token, token_digest};
use crate::config::Config;
use crate::grpc::{
    AdminServiceServer, Api, ApprovalServiceServer, DecisionLogServiceServer, PinServiceServer,
    PolicyRouter, PrincipalServiceServer, ServerInfoServiceServer, TokenServiceServer,
    UserSettingsServiceServer, auth_interceptor, sign_in_interceptor,
};
use crate::hub::Hub;
use crate::service::Service;
use crate::store::{PostgresStore, SqliteStore, Store, StoreError};
use std::future::Future;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::server::TcpIncoming;
use tonic_health::ServingStatus;
use tracing::{info, warn};

mod health;

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
                    groups: Vec::new(),
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

/// What `check-config` warns about without refusing: the policy file's teams that
/// allow a code runner (each located by file and line).
pub fn preflight_warnings(config: &Config) -> Vec<String> {
    let Some(path) = &config.policy_file else {
        return Vec::new();
    };
    let Ok(text) = crate::policy_file::read_file(path) else {
        return Vec::new();
    };
    crate::policy_file::managed_policy_warnings(&path.display().to_string(), &text)
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// Every check a start makes on the configuration's files before it binds, without
/// binding or writing anything: TLS files, the policy file, the JWKS file, the
/// bootstrap token's mode. Every problem at once, each naming its key or file.
pub fn preflight(config: &Config) -> Vec<String> {
    let mut problems = Vec::new();
    if (config.tls.cert.is_some() || config.tls.key.is_some())
        && let Err(e) = crate::tls::check(&config.tls)
    {
        problems.push(e.to_string());
    }
    if let Some(path) = &config.policy_file {
        match crate::policy_file::read_file(path) {
            Err(e) => problems.push(format!(
                "policy_file: cannot read {}: {e}: fix the path (policy_file, --policy-file)",
                path.display()
            )),
            Ok(text) => {
                if let Err(errors) =
                    crate::policy_file::parse_managed_policy(&path.display().to_string(), &text)
                {
                    problems.push(format!(
                        "policy_file: {} is invalid:\n{}",
                        path.display(),
                        crate::policy_file::format_errors(&errors)
                    ));
                }
            }
        }
    }
    if let Some(file) = config.auth.jwt.as_ref().and_then(|j| j.jwks_file.as_ref()) {
        let parsed = std::fs::read(file)
            .map_err(|e| e.to_string())
            .and_then(|bytes| {
                serde_json::from_slice::<jsonwebtoken::jwk::JwkSet>(&bytes)
                    .map(|_| ())
                    .map_err(|e| format!("not a JWKS document ({e}): give {{\"keys\": [...]}}"))
            });
        if let Err(e) = parsed {
            problems.push(format!("auth.jwt.jwks_file: {}: {e}", file.display()));
        }
    }
    let dir = &config.data_dir;
    match std::fs::metadata(dir) {
        Ok(meta) if !meta.is_dir() => problems.push(format!(
            "data_dir: {} is not a directory: give a directory for the embedded store",
            dir.display()
        )),
        Ok(_) => {
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                let token = dir.join(BOOTSTRAP_TOKEN_FILE);
                if let Ok(meta) = std::fs::symlink_metadata(&token)
                    && meta.permissions().mode() & 0o077 != 0
                {
                    problems.push(format!(
                        "{}: readable by other users (mode {:04o}), so the server refuses to start on it: delete it (a new token is written at start) or chmod 600 it",
                        token.display(),
                        meta.permissions().mode() & 0o777
                    ));
                }
            }
        }
        // created at start
        Err(_) => {}
    }
    problems
}

/// The file in the data directory a running server holds locked.
pub const LOCK_FILE: &str = "server.lock";

/// An exclusive lock on `<data_dir>/server.lock`, released when dropped (or when the
/// process dies, however it dies: the kernel drops the lock with the descriptor).
#[derive(Debug)]
pub struct DataDirLock {
    _file: std::fs::File,
}

impl DataDirLock {
    /// Locks `dir` for this process, or says who holds it.
    pub fn acquire(dir: &Path, listen: &str) -> Result<Self, ServerError> {
        use std::io::Read as _;
        let path = dir.join(LOCK_FILE);
        let failed = |source| ServerError::DataDir {
            path: path.clone(),
            source,
        };
        let mut options = std::fs::OpenOptions::new();
        options.read(true).write(true).create(true).truncate(false);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(&path).map_err(failed)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = (&file).take(1024).read_to_string(&mut holder);
                let holder = holder.trim();
                return Err(ServerError::DataDirInUse {
                    path: dir.to_owned(),
                    holder: if holder.is_empty() {
                        "starting up".into()
                    } else {
                        holder.to_owned()
                    },
                });
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(failed(e)),
        }
        let since = humantime::format_rfc3339_seconds(std::time::SystemTime::now());
        let holder = format!(
            "pid {}, listen {listen}, since {since}\n",
            std::process::id()
        );
        file.set_len(0)
            .and_then(|()| file.write_all(holder.as_bytes()))
            .map_err(failed)?;
        Ok(Self { _file: file })
    }
}

/// Creates the data directory (and its parents) readable by the owner only, whatever
/// the umask; one that already exists keeps its mode, with a warning when others
/// may read it.
fn create_data_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        if !dir.exists() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)?;
            // the umask may have taken bits away: set exactly 0700
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        } else if std::fs::metadata(dir)?.permissions().mode() & 0o077 != 0 {
            warn!(path = %dir.display(), "data directory is readable by other users: chmod 700 it");
        }
        Ok(())
    }
    #[cfg(not(unix))]
    std::fs::create_dir_all(dir)
}

/// Reads the bootstrap token, or writes a new one. A token file is adopted only if
/// it is a regular file no one else may read (mode 0600 or stricter): one that is
/// group- or world-readable may already be known to others, so the server refuses
/// to start on it rather than grant operator rights through it. A new token is
/// written to a fresh temporary file created 0600 (`O_EXCL`), synced and renamed
/// into place, so no reader ever sees a partial token or a looser mode.
fn bootstrap_token(path: &Path) -> Result<String, ServerError> {
    let err = |source| ServerError::Bootstrap {
        path: path.to_owned(),
        source,
    };
    match std::fs::symlink_metadata(path) {
        Ok(meta) => {
            if !meta.file_type().is_file() {
                return Err(err(std::io::Error::other(
                    "is not a regular file: remove it and a new token is written",
                )));
            }
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                let mode = meta.permissions().mode() & 0o777;
                if mode & 0o077 != 0 {
                    return Err(err(std::io::Error::other(format!(
                        "has mode {mode:04o}, readable by other users, so the token may be known: delete the file (a new token is written at start) or chmod 600 it if you wrote it yourself"
                    ))));
                }
            }
            let token = std::fs::read_to_string(path).map_err(err)?;
            if !token.trim().is_empty() {
                return Ok(token.trim().to_owned());
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(err(e)),
    }
    let token = generate_token();
    crate::files::write_atomic(
        path,
        crate::files::Mode::Exactly(0o600),
        format!("{token}\n").as_bytes(),
    )
    .map_err(err)?;
    Ok(token)
}

/// Builds the app and serves it on `listener` until `shutdown` completes: what
/// `toolgate serve` runs. A store that cannot be reached yet (PostgreSQL starting
/// beside the server, or a network not up) is waited for, with backoff and a log line
/// per try; meanwhile `listener` answers health only, NOT_SERVING, so a load balancer
/// or an orchestrator sees a replica that is starting rather than one that is gone.
/// Any other error at start ends it.
pub async fn serve(
    listener: TcpListener,
    config: Config,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServerError> {
    let stop = CancellationToken::new();
    {
        let stop = stop.clone();
        tokio::spawn(async move {
            shutdown.await;
            stop.cancel();
        });
    }
    let Some((listener, app)) = build_when_ready(listener, config, &stop).await? else {
        info!("stopped before the store was reached");
        return Ok(());
    };
    run(listener, app, stop.cancelled_owned()).await
}

/// [`App::build`], retried while the store is unavailable, with `listener` serving
/// health (NOT_SERVING) meanwhile; `None` when `stop` came first.
async fn build_when_ready(
    listener: TcpListener,
    config: Config,
    stop: &CancellationToken,
) -> Result<Option<(TcpListener, App)>, ServerError> {
    let first = match App::build(config.clone()).await {
        Err(ServerError::Store(StoreError::Unavailable(e))) => e,
        built => return Ok(Some((listener, built?))),
    };
    let listener = Arc::new(listener);
    let (health, health_service) = tonic_health::server::health_reporter();
    health::set_all(&health, ServingStatus::NotServing).await;
    let ready = CancellationToken::new();
    let accepting = {
        let listener = listener.clone();
        async_stream::stream! {
            loop {
                yield listener.accept().await.map(|(stream, _)| stream);
            }
        }
    };
    let waiting = tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(health_service)
            .serve_with_incoming_shutdown(accepting, ready.clone().cancelled_owned()),
    );
    let mut backoff =
        toolgate_core::backoff::Backoff::new(Duration::from_millis(250), Duration::from_secs(10));
    let mut error = first;
    let built = loop {
        let wait = backoff.next_wait();
        warn!(error = %error, retry_in_ms = wait.as_millis() as u64, "store unreachable at start: waiting for it (health NOT_SERVING meanwhile)");
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = stop.cancelled() => break Ok(None),
        }
        match App::build(config.clone()).await {
            Err(ServerError::Store(StoreError::Unavailable(e))) => error = e,
            Err(e) => break Err(e),
            Ok(app) => {
                info!("store reached: starting");
                break Ok(Some(app));
            }
        }
    };
    ready.cancel();
    // the health-only server lets go of the listener once its connections close
    let mut waiting = waiting;
    if tokio::time::timeout(Duration::from_secs(5), &mut waiting)
        .await
        .is_err()
    {
        warn!("health clients still connected 5 s after the store was reached: closing them");
        waiting.abort();
        let _ = waiting.await;
    }
    let Some(app) = built? else {
        return Ok(None);
    };
    let listener = Arc::try_unwrap(listener).map_err(|_| {
        ServerError::StartUp("the listener is still held by the start-up health server".into())
    })?;
    Ok(Some((listener, app)))
}

/// Serves the app on `listener` until `shutdown` completes, then marks health
/// NOT_SERVING, ends watch streams with UNAVAILABLE and drains in-flight calls for
/// at most `shutdown_grace_secs`.
pub async fn run(
    listener: TcpListener,
    app: App,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServerError> {
    let App {
        service,
        auth,
        config,
        metrics,
        console,
        http_listener,
        shutdown: stop_streams,
        policy_file,
        // held until the server has stopped
        data_lock: _data_lock,
        ..
    } = app;
    if let Some((listener, handle)) = metrics {
        let hub = service.hub().clone();
        let health = hub.health();
        let observed = service.clone();
        let data_dir = config.data_dir.clone();
        let sample = Arc::new(move || {
            let (hub, health, observed) = (hub.clone(), health.clone(), observed.clone());
            let data_dir = data_dir.clone();
            Box::pin(async move {
                let (stale_teams, store_up, listener_up) = {
                    let h = health.borrow();
                    (h.stale.len(), h.store.is_none(), h.listener)
                };
                let disk_free = crate::disk::free_bytes(&data_dir).ok();
                crate::metrics::Sample {
                    audit_queue: observed.audit_waiting(),
                    cached_teams: hub.teams(),
                    cached_users: hub.cached_users_total(),
                    stale_teams,
                    store_up,
                    listener_up,
                    staleness: hub.staleness(),
                    disk_free,
                    // a store cut off must not hang the scrape
                    lag: tokio::time::timeout(Duration::from_secs(1), hub.lag())
                        .await
                        .ok()
                        .and_then(Result::ok)
                        .map(|lag| crate::metrics::Lag {
                            max_revisions: lag.max_revisions,
                            teams_behind: lag.teams_behind,
                        }),
                }
            }) as futures::future::BoxFuture<'static, _>
        });
        tokio::spawn(crate::metrics::serve(
            listener,
            handle,
            sample,
            stop_streams.clone(),
        ));
    }
    let limit = config.limits.max_request_bytes;
    let api = Api::new(service.clone(), &config).with_policy_file(policy_file);
    let intercept_sign_in = sign_in_interceptor(auth.clone());
    let intercept = auth_interceptor(auth);

    let (health, health_service) = tonic_health::server::health_reporter();
    health::set_all(&health, ServingStatus::Serving).await;
    // each builder describes only its own reflection version: register both, so a
    // client listing services through either one sees both
    let reflection = || {
        tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(crate::proto::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_reflection::pb::v1::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(
                tonic_reflection::pb::v1alpha::FILE_DESCRIPTOR_SET,
            )
    };
    let reflection_v1 = reflection().build_v1()?;
    let reflection_v1alpha = reflection().build_v1alpha()?;

    let stop_tls = stop_streams.clone();
    let stop_http = stop_streams.clone();
    let follow_health = CancellationToken::new();
    tokio::spawn(health::report_health(
        service.hub().health(),
        health.clone(),
        follow_health.clone(),
    ));

    let drain_started = Arc::new(tokio::sync::Notify::new());
    let signal = {
        let drain_started = drain_started.clone();
        let health = health.clone();
        async move {
            shutdown.await;
            info!("shutting down: draining calls");
            follow_health.cancel();
            health::set_all(&health, ServingStatus::NotServing).await;
            stop_streams.cancel();
            drain_started.notify_one();
        }
    };

    if let Ok(addr) = listener.local_addr() {
        info!(%addr, "serving");
    }
    let connections = &config.connections;
    let max_connections = crate::connections::effective_max(connections.max);
    let tls = match config.tls.files() {
        Some(_) => Some(crate::tls::Acceptor::start(&config.tls, stop_tls)?),
        None => None,
    };
    let incoming = crate::tls::incoming(
        crate::connections::incoming(
            incoming(listener),
            max_connections,
            Duration::from_secs(connections.idle_timeout_secs),
        ),
        tls,
    );
    let exporting = config.telemetry.otlp_endpoint.is_some();
    let http = crate::http::HttpLayer::new(&config.http, &config.limits)?;
    let router = tonic::transport::Server::builder()
        // HTTP/1.1 for curl and browsers (gRPC-Web, Connect); HTTP/2 either way
        .accept_http1(config.http.enabled)
        .http2_keepalive_interval(Some(Duration::from_secs(
            connections.keepalive_interval_secs,
        )))
        .http2_keepalive_timeout(Some(Duration::from_secs(
            connections.keepalive_timeout_secs,
        )))
        .trace_fn(move |req| crate::grpc::observe::rpc_span(req, exporting))
        // the console's files on its listener; its API calls go on below
        .layer(crate::console::ConsoleLayer::new(
            console.as_ref().and_then(|l| l.local_addr().ok()),
        ))
        // an HTTP call enters the stack below as a gRPC call
        .layer(http)
        .layer(crate::grpc::observe::RpcMetricsLayer)
        .layer(crate::grpc::limits::LimitsLayer::new(&config.limits))
        .add_service(health_service)
        .add_service(reflection_v1)
        .add_service(reflection_v1alpha)
        .add_service(InterceptedService::new(
            AdminServiceServer::new(api.clone()).max_decoding_message_size(limit),
            intercept.clone(),
        ))
        .add_service(InterceptedService::new(
            UserSettingsServiceServer::new(api.clone()).max_decoding_message_size(limit),
            intercept.clone(),
        ))
        .add_service(InterceptedService::new(
            TokenServiceServer::new(api.clone()).max_decoding_message_size(limit),
            intercept.clone(),
        ))
        .add_service(InterceptedService::new(
            DecisionLogServiceServer::new(api.clone()).max_decoding_message_size(limit),
            intercept.clone(),
        ))
        .add_service(InterceptedService::new(
            PrincipalServiceServer::new(api.clone()).max_decoding_message_size(limit),
            intercept.clone(),
        ))
        .add_service(InterceptedService::new(
            ApprovalServiceServer::new(api.clone()).max_decoding_message_size(limit),
            intercept.clone(),
        ))
        .add_service(InterceptedService::new(
            PinServiceServer::new(api.clone()).max_decoding_message_size(limit),
            intercept.clone(),
        ))
        .add_service(InterceptedService::new(
            PolicyRouter::new(api.clone(), limit),
            intercept.clone(),
        ))
        // the agent clients' own telemetry (OTLP logs), authenticated as any call
        .add_service(InterceptedService::new(
            crate::grpc::LogsServiceServer::new(api.clone()).max_decoding_message_size(limit),
            intercept.clone(),
        ))
        .add_service(InterceptedService::new(
            ServerInfoServiceServer::new(api).max_decoding_message_size(limit),
            intercept_sign_in,
        ));
    // the second listeners drain with the first, within the same grace
    let mut also = Vec::new();
    if let Some(listener) = http_listener {
        if let Ok(addr) = listener.local_addr() {
            info!(%addr, "serving the API on http.listen too");
        }
        also.push(serve_also(
            listener,
            router.clone(),
            &config,
            stop_http.clone(),
        )?);
    }
    if let Some(listener) = console {
        if let Ok(addr) = listener.local_addr() {
            info!(%addr, url = %format!("http://{addr}/"), "console");
        }
        also.push(serve_also(
            listener,
            router.clone(),
            &config,
            stop_http.clone(),
        )?);
    }
    let serve = router.serve_with_incoming_shutdown(incoming, signal);
    tokio::pin!(serve);
    let grace = Duration::from_secs(config.shutdown_grace_secs);
    let deadline = tokio::select! {
        result = &mut serve => {
            result?;
            tokio::time::Instant::now() + grace
        }
        () = drain_started.notified() => {
            let deadline = tokio::time::Instant::now() + grace;
            match tokio::time::timeout_at(deadline, serve).await {
                Ok(result) => result?,
                Err(_) => warn!(grace_secs = config.shutdown_grace_secs, "drain deadline passed: closing open calls"),
            }
            deadline
        }
    };
    stop_http.cancel();
    for task in also {
        if tokio::time::timeout_at(deadline, task).await.is_err() {
            warn!(
                grace_secs = config.shutdown_grace_secs,
                "drain deadline passed: closing open calls on a second listener"
            );
        }
    }
    // the DENY records of the last calls, within what is left of the grace (at least
    // a moment: they are in the DENY journal first, so this only saves a replay)
    let left = deadline.saturating_duration_since(tokio::time::Instant::now());
    service
        .drain_audit(left.max(Duration::from_millis(500)))
        .await;
    info!("stopped");
    Ok(())
}

/// Serves the same server (`router`, its layers included) on `listener` too, with the
/// same TLS and connection limits, until `stop`: `http.listen` and `console.listen`.
/// The task ends once its in-flight calls are answered.
fn serve_also<L>(
    listener: TcpListener,
    router: tonic::transport::server::Router<L>,
    config: &Config,
    stop: CancellationToken,
) -> Result<tokio::task::JoinHandle<()>, ServerError>
where
    L: tower::Layer<tonic::service::Routes> + Clone + Send + 'static,
    L::Service: tower::Service<
            http::Request<tonic::body::Body>,
            Response = http::Response<tonic::body::Body>,
            Error = std::convert::Infallible,
        > + Clone
        + Send
        + 'static,
    <L::Service as tower::Service<http::Request<tonic::body::Body>>>::Future: Send + 'static,
{
    let local = listener.local_addr().ok();
    let tls = match config.tls.files() {
        Some(_) => Some(crate::tls::Acceptor::start(&config.tls, stop.clone())?),
        None => None,
    };
    let connections = &config.connections;
    let incoming = crate::tls::incoming(
        crate::connections::incoming(
            incoming(listener),
            crate::connections::effective_max(connections.max),
            Duration::from_secs(connections.idle_timeout_secs),
        ),
        tls,
    );
    Ok(tokio::spawn(async move {
        let stopped = stop.clone();
        if let Err(e) = router
            .serve_with_incoming_shutdown(incoming, stopped.cancelled_owned())
            .await
        {
            warn!(error = %e, addr = ?local, "a second listener stopped");
        }
    }))
}

/// Accepted connections with `TCP_NODELAY` (a small answer is sent at once, not held
/// back by Nagle's algorithm waiting for an ACK) and TCP keepalive (a watcher whose
/// peer vanished is found out even on a quiet stream).
fn incoming(listener: TcpListener) -> TcpIncoming {
    TcpIncoming::from(listener)
        .with_nodelay(Some(true))
        .with_keepalive(Some(Duration::from_secs(60)))
}
