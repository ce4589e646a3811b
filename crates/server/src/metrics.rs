//! Prometheus metrics: the names, the calls other layers make to record them, and the
//! `/metrics` endpoint (`metrics.listen`, off by default).
//!
//! Without an endpoint no recorder is installed and every call here does nothing.
//! Decisions and calls are counted through handles registered when the recorder is
//! installed, so counting one is an atomic add: neither path allocates for it.

use crate::policy::{Outcome, Reason};
use metrics::{Counter, counter, gauge, histogram};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

pub const RPC_REQUESTS: &str = "toolgate_rpc_requests_total";
pub const RPC_DURATION: &str = "toolgate_rpc_duration_seconds";
pub const DECISIONS: &str = "toolgate_decisions_total";
pub const LIMIT_REFUSALS: &str = "toolgate_limit_refusals_total";
pub const WATCHERS: &str = "toolgate_watchers";
pub const RESYNCS: &str = "toolgate_watch_resyncs_total";
pub const AUDIT_QUEUE: &str = "toolgate_audit_queue_depth";
pub const AUDIT_WRITTEN: &str = "toolgate_audit_records_written_total";
pub const AUDIT_DROPPED: &str = "toolgate_audit_records_dropped_total";
pub const DECISION_LOG_WRITTEN: &str = "toolgate_decision_log_records_written_total";
pub const DECISION_LOG_SHED: &str = "toolgate_decision_log_records_shed_total";
pub const DECISION_LOG_OVER_BUDGET: &str = "toolgate_decision_log_over_budget_total";
pub const OTLP_EXPORT_SENT: &str = "toolgate_otlp_export_records_sent_total";
pub const OTLP_EXPORT_SHED: &str = "toolgate_otlp_export_records_shed_total";
pub const OTLP_EXPORT_SPILLED: &str = "toolgate_otlp_export_records_spilled_total";
pub const OTLP_EXPORT_DROPPED: &str = "toolgate_otlp_export_records_dropped_total";
pub const DENY_JOURNAL_FAILED: &str = "toolgate_deny_journal_failed_total";
pub const DISK_FULL: &str = "toolgate_disk_full";
pub const STORE_DURATION: &str = "toolgate_store_duration_seconds";
pub const STORE_ERRORS: &str = "toolgate_store_errors_total";
pub const POLICY_FILE_RELOADS: &str = "toolgate_policy_file_reloads_total";
pub const CACHED_TEAMS: &str = "toolgate_cached_teams";
pub const CACHED_USERS: &str = "toolgate_cached_users";
pub const STALE_TEAMS: &str = "toolgate_stale_teams";
pub const REVISION_LAG: &str = "toolgate_replica_revision_lag";
pub const TEAMS_BEHIND: &str = "toolgate_replica_teams_behind";
pub const STORE_UP: &str = "toolgate_store_up";
pub const LISTENER_UP: &str = "toolgate_store_listener_up";
pub const POLICY_STALENESS: &str = "toolgate_policy_staleness_seconds";
pub const DISK_FREE: &str = "toolgate_data_dir_free_bytes";
pub const RATE_LIMITED: &str = "toolgate_rate_limited_total";
pub const RATE_BUCKETS: &str = "toolgate_rate_buckets";
pub const LIVE_REPLICAS: &str = "toolgate_live_replicas";
/// Always 1, labelled with the version and the commit the binary was built from
/// (as the binary told [`crate::build_info`]; `unknown` without it).
pub const BUILD_INFO: &str = "toolgate_build_info";

/// Every metric the server exports, with its help text.
pub const ALL: [(&str, &str); 33] = [
    (
        RPC_REQUESTS,
        "gRPC calls answered, by method and status code",
    ),
    (
        RPC_DURATION,
        "seconds until a gRPC call is answered (a stream: started), by method",
    ),
    (DECISIONS, "policy decisions, by outcome and reason"),
    (
        LIMIT_REFUSALS,
        "calls refused by a server limit (deadline, concurrency, streams)",
    ),
    (
        WATCHERS,
        "streams open: WatchPolicy, WatchDecisions, WatchApprovals, AwaitApproval",
    ),
    (
        RESYNCS,
        "snapshots sent to watchers that fell behind or lost track",
    ),
    (
        AUDIT_QUEUE,
        "deny audit and decision log records waiting for the writer",
    ),
    (AUDIT_WRITTEN, "deny audit records written to the store"),
    (AUDIT_DROPPED, "deny audit records given up on"),
    (
        DECISION_LOG_WRITTEN,
        "decision log records written to the store",
    ),
    (
        DECISION_LOG_SHED,
        "ALLOW and ASK decision log records shed because the writer's queue was full or their principal was past its budget",
    ),
    (
        DECISION_LOG_OVER_BUDGET,
        "records of a principal past its decision-log budget, by principal (the first 64 named, the rest `_other`) and outcome: `shed` not written, `coalesced` DENYs counted into another record",
    ),
    (
        OTLP_EXPORT_SENT,
        "decision and audit records the OTLP collector accepted",
    ),
    (
        OTLP_EXPORT_SHED,
        "ALLOW and ASK records not exported because the export queue was full or the collector failed",
    ),
    (
        OTLP_EXPORT_SPILLED,
        "DENY and audit records written to the export's spill directory while the collector could not take them",
    ),
    (
        OTLP_EXPORT_DROPPED,
        "DENY and audit records given up on by the export: the spill directory was full or a spill file unreadable",
    ),
    (
        DENY_JOURNAL_FAILED,
        "DENY records that could not be journaled on disk (a full disk, the journal's bound): they wait in memory only",
    ),
    (
        DISK_FULL,
        "1 while the embedded store's disk is full (its reserve released for admin writes; decision records wait), else 0",
    ),
    (
        STORE_DURATION,
        "seconds a store operation took, by operation",
    ),
    (STORE_ERRORS, "store operations that failed, by operation"),
    (
        POLICY_FILE_RELOADS,
        "policy file loads, by result (applied or rejected)",
    ),
    (CACHED_TEAMS, "teams held in memory"),
    (CACHED_USERS, "users' compiled settings held in memory"),
    (
        STALE_TEAMS,
        "teams whose last catch-up from the store failed: this replica may be behind on them",
    ),
    (
        REVISION_LAG,
        "the most revisions a cached team is behind the store (read at each scrape)",
    ),
    (
        TEAMS_BEHIND,
        "cached teams behind the store at all (read at each scrape)",
    ),
    (
        STORE_UP,
        "1 when the store answered its last check and takes writes, else 0",
    ),
    (
        LISTENER_UP,
        "1 when the change listener hears its own pings (shared store only), else 0",
    ),
    (
        POLICY_STALENESS,
        "seconds since this replica last showed its policy current with the shared store (0 with the embedded store)",
    ),
    (
        DISK_FREE,
        "bytes free for the server on the data directory's disk (health is NOT_SERVING below 64 MiB)",
    ),
    (
        RATE_LIMITED,
        "calls past one of their team's rates, by team (the first 64 named, the rest `_other`) and outcome (ASK or DENY)",
    ),
    (
        RATE_BUCKETS,
        "rate buckets this replica holds (a team's, a user's, per rule), full ones forgotten",
    ),
    (
        LIVE_REPLICAS,
        "replicas sharing the store that this one hears (itself included): rates give each replica this share",
    ),
];

/// The installed recorder and the decision and call handles made with it.
struct Installed {
    handle: PrometheusHandle,
    /// `[reason as usize][outcome as usize]`
    decisions: Vec<[Counter; 3]>,
    /// by gRPC path, every method the server serves
    rpcs: rustc_hash::FxHashMap<String, RpcHandles>,
    /// any other path (answered UNIMPLEMENTED): one series, however many paths a
    /// caller makes up
    other_rpc: RpcHandles,
}

/// Label of the calls to paths the server does not serve.
pub const OTHER_METHOD: &str = "other";

/// One method's series: its latency histogram, and a counter per status code made
/// on first use (so a scrape lists only codes that happened).
pub struct RpcHandles {
    method: String,
    duration: metrics::Histogram,
    requests: [OnceLock<Counter>; 17],
}

impl RpcHandles {
    fn new(method: &str) -> Self {
        RpcHandles {
            method: method.to_owned(),
            duration: histogram!(RPC_DURATION, "method" => method.to_owned()),
            requests: std::array::from_fn(|_| OnceLock::new()),
        }
    }

    /// One answered call: an atomic add and a histogram sample, no allocation after
    /// the first call with this code.
    pub fn record(&self, code: tonic::Code, elapsed: Duration) {
        // every tonic::Code is in CODES; anything else would count as UNKNOWN
        let index = match code as usize {
            i if i < CODES.len() => i,
            _ => tonic::Code::Unknown as usize,
        };
        self.requests[index]
            .get_or_init(
                || counter!(RPC_REQUESTS, "method" => self.method.clone(), "code" => CODES[index]),
            )
            .increment(1);
        self.duration.record(elapsed.as_secs_f64());
    }
}

static INSTALLED: OnceLock<Installed> = OnceLock::new();

#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    #[error("metrics: cannot install the recorder: {0}")]
    Install(String),
    #[error("metrics.listen: cannot listen on {addr}: {source}")]
    Listen {
        addr: String,
        source: std::io::Error,
    },
}

/// Installs the process's recorder (once; later calls share it) and returns what
/// renders its text. `served` is every gRPC path the server serves (a handle is made
/// for each; any other path counts as `other`).
pub fn install(served: Vec<String>) -> Result<PrometheusHandle, MetricsError> {
    if let Some(installed) = INSTALLED.get() {
        return Ok(installed.handle.clone());
    }
    let latency = [
        0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
    ];
    let recorder = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), &latency)
        .map_err(|e| MetricsError::Install(e.to_string()))?
        .build_recorder();
    let handle = recorder.handle();
    if metrics::set_global_recorder(recorder).is_err() {
        // another recorder won the race (only a second server in one process)
        return INSTALLED
            .get()
            .map(|i| i.handle.clone())
            .ok_or_else(|| MetricsError::Install("another recorder is installed".into()));
    }
    for (name, help) in ALL {
        match name {
            RPC_DURATION | STORE_DURATION => metrics::describe_histogram!(name, help),
            WATCHERS | AUDIT_QUEUE | CACHED_TEAMS | CACHED_USERS | STALE_TEAMS | REVISION_LAG
            | TEAMS_BEHIND | STORE_UP | LISTENER_UP | POLICY_STALENESS | DISK_FREE => {
                metrics::describe_gauge!(name, help)
            }
            _ => metrics::describe_counter!(name, help),
        }
    }
    let mut decisions = Vec::new();
    for &reason in Reason::ALL {
        let index = reason as usize;
        if decisions.len() <= index {
            decisions.resize_with(index + 1, || {
                [Counter::noop(), Counter::noop(), Counter::noop()]
            });
        }
        decisions[index] = [Outcome::Allow, Outcome::Ask, Outcome::Deny].map(|outcome| {
            counter!(DECISIONS, "outcome" => outcome.as_str(), "reason" => reason.as_str())
        });
    }
    metrics::describe_gauge!(
        BUILD_INFO,
        "the running build: always 1, labelled with version and commit"
    );
    let build = crate::build_info::get();
    gauge!(BUILD_INFO, "version" => build.version, "commit" => build.commit).set(1.0);
    // the families show from the first scrape, before anything happened
    gauge!(WATCHERS).set(0.0);
    counter!(RESYNCS).absolute(0);
    counter!(AUDIT_WRITTEN).absolute(0);
    counter!(AUDIT_DROPPED).absolute(0);
    let rpcs = served
        .into_iter()
        .map(|path| {
            let handles = RpcHandles::new(&path);
            (path, handles)
        })
        .collect();
    let _ = INSTALLED.set(Installed {
        handle: handle.clone(),
        decisions,
        rpcs,
        other_rpc: RpcHandles::new(OTHER_METHOD),
    });
    Ok(handle)
}

/// One decision. Allocation-free once installed; nothing at all when not.
#[inline]
pub fn decision(outcome: Outcome, reason: Reason) {
    let Some(installed) = INSTALLED.get() else {
        return;
    };
    match installed.decisions.get(reason as usize) {
        Some(row) => row[outcome as usize].increment(1),
        None => counter!(DECISIONS, "outcome" => outcome.as_str(), "reason" => reason.as_str())
            .increment(1),
    }
}

/// Names of the gRPC status codes, by number.
const CODES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// The series of a call to `path`, or `None` when no recorder is installed. A path
/// the server does not serve shares the [`OTHER_METHOD`] series, so made-up paths
/// cannot grow the registry.
#[inline]
pub fn rpc(path: &str) -> Option<&'static RpcHandles> {
    let installed = INSTALLED.get()?;
    Some(installed.rpcs.get(path).unwrap_or(&installed.other_rpc))
}

/// A call refused by the server limit `limit`.
pub fn limit_refused(limit: &'static str) {
    counter!(LIMIT_REFUSALS, "limit" => limit).increment(1);
}

/// A watch stream opened (`+1`) or ended (`-1`).
pub fn watchers(delta: f64) {
    gauge!(WATCHERS).increment(delta);
}

/// A watcher resynced from a fresh snapshot.
pub fn resync() {
    counter!(RESYNCS).increment(1);
}

/// Deny audit records written, or given up on.
pub fn audit_written(n: usize) {
    counter!(AUDIT_WRITTEN).increment(n as u64);
}

/// Decision log records written, or shed (never a DENY's).
pub fn decision_log_written(n: usize) {
    counter!(DECISION_LOG_WRITTEN).increment(n as u64);
}

pub fn otlp_export_sent(n: usize) {
    counter!(OTLP_EXPORT_SENT).increment(n as u64);
}

pub fn otlp_export_shed(n: usize) {
    counter!(OTLP_EXPORT_SHED).increment(n as u64);
}

pub fn otlp_export_spilled(n: usize) {
    counter!(OTLP_EXPORT_SPILLED).increment(n as u64);
}

pub fn otlp_export_dropped(n: usize) {
    counter!(OTLP_EXPORT_DROPPED).increment(n as u64);
}

pub fn decision_log_shed(n: usize) {
    counter!(DECISION_LOG_SHED).increment(n as u64);
}

/// Principals named in [`DECISION_LOG_OVER_BUDGET`]'s label; the later ones are
/// counted under `principal="_other"` (their names are in the `decisions_shed` audit
/// events), so a flood of new principals cannot grow the metrics without bound.
pub const OVER_BUDGET_PRINCIPALS: usize = 64;

/// A principal's records past its decision-log budget since the last report: `shed`
/// records not written, `denies` DENYs counted into another record.
pub fn decision_log_over_budget(principal: &str, shed: u64, denies: u64) {
    static NAMED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let label = {
        let mut named = NAMED
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if named.iter().any(|n| n == principal) {
            principal.to_owned()
        } else if named.len() < OVER_BUDGET_PRINCIPALS {
            named.push(principal.to_owned());
            principal.to_owned()
        } else {
            "_other".to_owned()
        }
    };
    if shed > 0 {
        counter!(DECISION_LOG_OVER_BUDGET, "principal" => label.clone(), "outcome" => "shed")
            .increment(shed);
    }
    if denies > 0 {
        counter!(DECISION_LOG_OVER_BUDGET, "principal" => label, "outcome" => "coalesced")
            .increment(denies);
    }
}

/// The most teams named in [`RATE_LIMITED`]'s labels; the rest are `_other`.
pub const RATE_LIMITED_TEAMS: usize = 64;

/// A call past one of its team's rates, answered `outcome`.
pub fn rate_limited(team: &str, outcome: Outcome) {
    static NAMED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let label = {
        let mut named = NAMED
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if named.iter().any(|n| n == team) {
            team.to_owned()
        } else if named.len() < RATE_LIMITED_TEAMS {
            named.push(team.to_owned());
            team.to_owned()
        } else {
            "_other".to_owned()
        }
    };
    counter!(RATE_LIMITED, "team" => label, "outcome" => outcome.as_str()).increment(1);
}

/// Rate buckets were made or forgotten: `delta` of them.
pub fn rate_buckets(delta: f64) {
    gauge!(RATE_BUCKETS).increment(delta);
}

/// The replicas sharing the store, as this one hears them.
pub fn live_replicas(n: u32) {
    gauge!(LIVE_REPLICAS).set(f64::from(n));
}

/// DENY records the journal could not take.
pub fn deny_journal_failed(n: u64) {
    counter!(DENY_JOURNAL_FAILED).increment(n);
}

/// The embedded store's disk turned full, or has room again.
pub fn disk_full(full: bool) {
    gauge!(DISK_FULL).set(if full { 1.0 } else { 0.0 });
}

pub fn audit_dropped(n: usize) {
    counter!(AUDIT_DROPPED).increment(n as u64);
}

/// One store operation.
pub fn store(op: &'static str, elapsed: Duration, ok: bool) {
    histogram!(STORE_DURATION, "op" => op).record(elapsed.as_secs_f64());
    if !ok {
        counter!(STORE_ERRORS, "op" => op).increment(1);
    }
}

/// A policy file load: applied or rejected.
pub fn policy_file_reload(applied: bool) {
    let result = if applied { "applied" } else { "rejected" };
    counter!(POLICY_FILE_RELOADS, "result" => result).increment(1);
}

/// What is sampled at each scrape rather than counted as it happens.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sample {
    pub audit_queue: usize,
    pub cached_teams: usize,
    pub cached_users: usize,
    pub stale_teams: usize,
    /// Whether the store answered its last check and takes writes.
    pub store_up: bool,
    /// Whether the change listener hears its own pings; `None` without one.
    pub listener_up: Option<bool>,
    /// Since the replica last showed its policy current; `None` with the embedded
    /// store (always current).
    pub staleness: Option<Duration>,
    /// Bytes free on the data directory's disk, when they could be read.
    pub disk_free: Option<u64>,
    /// Unset when the store could not be read: the lag gauges keep their last value
    /// and the store's error counter says why.
    pub lag: Option<Lag>,
}

/// How far this replica's cache is behind the store.
#[derive(Debug, Clone, Copy, Default)]
pub struct Lag {
    /// The most revisions any cached team is behind.
    pub max_revisions: u64,
    /// Cached teams behind at all.
    pub teams_behind: usize,
}

/// Serves `GET /metrics` on `listener` until `stop`; `sample` runs before each render.
pub async fn serve(
    listener: tokio::net::TcpListener,
    handle: PrometheusHandle,
    sample: Arc<dyn Fn() -> futures::future::BoxFuture<'static, Sample> + Send + Sync>,
    stop: tokio_util::sync::CancellationToken,
) {
    use axum::routing::get;
    {
        // histograms' samples are folded in here, not only at scrapes
        let handle = handle.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            let mut every = tokio::time::interval(Duration::from_secs(5));
            loop {
                tokio::select! {
                    _ = every.tick() => handle.run_upkeep(),
                    () = stop.cancelled() => return,
                }
            }
        });
    }
    let render = move || {
        let handle = handle.clone();
        let sample = sample.clone();
        async move {
            let s = sample().await;
            gauge!(AUDIT_QUEUE).set(s.audit_queue as f64);
            gauge!(CACHED_TEAMS).set(s.cached_teams as f64);
            gauge!(CACHED_USERS).set(s.cached_users as f64);
            gauge!(STALE_TEAMS).set(s.stale_teams as f64);
            gauge!(STORE_UP).set(if s.store_up { 1.0 } else { 0.0 });
            if let Some(up) = s.listener_up {
                gauge!(LISTENER_UP).set(if up { 1.0 } else { 0.0 });
            }
            gauge!(POLICY_STALENESS).set(s.staleness.map_or(0.0, |d| d.as_secs_f64()));
            if let Some(free) = s.disk_free {
                gauge!(DISK_FREE).set(free as f64);
            }
            if let Some(lag) = s.lag {
                gauge!(REVISION_LAG).set(lag.max_revisions as f64);
                gauge!(TEAMS_BEHIND).set(lag.teams_behind as f64);
            }
            (
                [(
                    axum::http::header::CONTENT_TYPE,
                    "text/plain; version=0.0.4; charset=utf-8",
                )],
                handle.render(),
            )
        }
    };
    let app = axum::Router::new().route("/metrics", get(render));
    if let Ok(addr) = listener.local_addr() {
        tracing::info!(%addr, "serving metrics at /metrics");
    }
    let served = axum::serve(listener, app)
        .with_graceful_shutdown(async move { stop.cancelled().await })
        .await;
    if let Err(e) = served {
        tracing::warn!(error = %e, "metrics endpoint stopped");
    }
}
