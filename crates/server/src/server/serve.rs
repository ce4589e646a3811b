//! Serving: the store waited for at start, the services registered on the listeners,
//! health followed, and the drain at shutdown.

use super::{App, ServerError, health};
use crate::config::Config;
use crate::grpc::{
    AdminServiceServer, Api, ApprovalServiceServer, DecisionLogServiceServer, PinServiceServer,
    PolicyRouter, PrincipalServiceServer, ServerInfoServiceServer, TokenServiceServer,
    UserSettingsServiceServer, auth_interceptor, sign_in_interceptor,
};
use crate::store::StoreError;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::server::TcpIncoming;
use tonic_health::ServingStatus;
use tracing::{info, warn};

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
    // every API service alike: its requests within the size limit, its caller
    // authenticated (by `intercept` unless another interceptor is named)
    macro_rules! authenticated {
        ($($server:ident)::+) => {
            authenticated!($($server)::+, intercept.clone())
        };
        ($($server:ident)::+, $intercept:expr) => {
            InterceptedService::new(
                $($server)::+::new(api.clone()).max_decoding_message_size(limit),
                $intercept,
            )
        };
    }
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
        .add_service(authenticated!(AdminServiceServer))
        .add_service(authenticated!(UserSettingsServiceServer))
        .add_service(authenticated!(TokenServiceServer))
        .add_service(authenticated!(DecisionLogServiceServer))
        .add_service(authenticated!(PrincipalServiceServer))
        .add_service(authenticated!(ApprovalServiceServer))
        .add_service(authenticated!(PinServiceServer))
        .add_service(InterceptedService::new(
            PolicyRouter::new(api.clone(), limit),
            intercept.clone(),
        ))
        // the agent clients' own telemetry (OTLP logs), authenticated as any call
        .add_service(authenticated!(crate::grpc::LogsServiceServer))
        .add_service(authenticated!(ServerInfoServiceServer, intercept_sign_in));
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
