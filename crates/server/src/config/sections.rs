//! The server's settings sections: store, connections, watch, limits, log, telemetry,
//! metrics, HTTP and TLS, each with its defaults.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

// Debug by hand (below): the URL may carry a password
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StoreConfig {
    /// `postgres://…` for replicas sharing PostgreSQL, `sqlite://PATH`, or unset for
    /// `<data_dir>/toolgate.db`.
    pub url: Option<String>,
    /// Seconds between checks of the store (the SQLite file still the one opened,
    /// `PRAGMA quick_check`) and retries of a catch-up that failed.
    pub check_secs: u64,
    /// With a shared store (PostgreSQL): how long a replica may go without showing
    /// its policy current before it answers no ALLOW or ASK and reports NOT_SERVING.
    pub max_staleness_secs: u64,
}

/// The most `store.max_staleness_secs` may be: a replica cut off longer than this
/// must not go on allowing.
pub const MAX_STALENESS_LIMIT_SECS: u64 = 300;

impl std::fmt::Debug for StoreConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreConfig")
            .field("url", &self.url.as_deref().map(super::redact::redact_url))
            .field("check_secs", &self.check_secs)
            .field("max_staleness_secs", &self.max_staleness_secs)
            .finish()
    }
}

impl Default for StoreConfig {
    fn default() -> Self {
        Self {
            url: None,
            check_secs: 5,
            max_staleness_secs: 5,
        }
    }
}

/// Limits on client connections, so idle or silent ones cannot pile up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ConnectionsConfig {
    /// Most open connections; past it, new ones are closed at once (and logged).
    pub max: usize,
    /// Seconds a connection may go without sending a byte before it is closed. Live
    /// HTTP/2 clients answer the keepalive pings, so only silent peers are closed.
    pub idle_timeout_secs: u64,
    /// Seconds between HTTP/2 keepalive pings, and how long an answer may take.
    pub keepalive_interval_secs: u64,
    pub keepalive_timeout_secs: u64,
}

impl Default for ConnectionsConfig {
    fn default() -> Self {
        Self {
            max: 10_000,
            idle_timeout_secs: 300,
            keepalive_interval_secs: 30,
            keepalive_timeout_secs: 10,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WatchConfig {
    /// Seconds between heartbeats on a quiet stream.
    pub heartbeat_secs: u64,
    /// How many changes a subscriber may fall behind before it is resynced.
    pub queue_size: usize,
    /// How many changes per team the history keeps for resuming subscribers.
    pub history_per_team: u64,
    /// Bytes of changes a team keeps queued for subscribers that have not read them;
    /// a subscriber that falls further behind is resynced.
    pub queue_bytes: usize,
}

impl Default for WatchConfig {
    fn default() -> Self {
        Self {
            heartbeat_secs: 15,
            queue_size: 1024,
            history_per_team: 10_000,
            queue_bytes: 64 * 1024 * 1024,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LimitsConfig {
    /// Largest request message, in bytes.
    pub max_request_bytes: usize,
    /// Most calls in one `EvaluateBatch`.
    pub max_batch_calls: usize,
    /// Most entries in one list of a settings document.
    pub max_list_entries: usize,
    /// Most users of one team whose compiled settings are kept in memory; past it,
    /// some are let go and read again from the store when next needed.
    pub max_cached_users_per_team: usize,
    /// Longest shell command or file path in a call, in bytes.
    pub max_command_bytes: usize,
    /// Seconds a team nobody watches or touches stays in memory.
    pub team_idle_secs: u64,
    /// Seconds a call may take to be answered (a stream: to start) before it is ended
    /// with DEADLINE_EXCEEDED; a client's shorter `grpc-timeout` wins.
    pub request_timeout_secs: u64,
    /// Most calls being answered at once; past it, new ones are refused with
    /// RESOURCE_EXHAUSTED (health checks are never refused). Open watch streams are
    /// bounded by `max_streams_per_principal` instead.
    pub max_concurrent_requests: usize,
    /// Most streams (`WatchPolicy`, `WatchDecisions`, `WatchApprovals`,
    /// `AwaitApproval`) one principal may hold open; past it, new ones are refused with
    /// RESOURCE_EXHAUSTED.
    pub max_streams_per_principal: usize,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        Self {
            max_request_bytes: 4 * 1024 * 1024,
            max_batch_calls: 1_000,
            max_list_entries: crate::policy::MAX_LIST_ENTRIES,
            max_cached_users_per_team: 100_000,
            max_command_bytes: 64 * 1024,
            team_idle_secs: 600,
            request_timeout_secs: 30,
            max_concurrent_requests: 1_000,
            max_streams_per_principal: 1_000,
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogConfig {
    /// A tracing filter, e.g. `info` or `toolgate=debug,info`.
    pub level: String,
    pub format: LogFormat,
}

impl Default for LogConfig {
    fn default() -> Self {
        Self {
            level: "info".into(),
            format: LogFormat::Text,
        }
    }
}

// Debug by hand (below): the endpoint and headers may carry credentials
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TelemetryConfig {
    /// OTLP/gRPC collector, e.g. `http://127.0.0.1:4317`; unset exports no spans.
    pub otlp_endpoint: Option<String>,
    /// gRPC metadata sent with every export, e.g. a collector's `authorization`
    /// header. Treated as secrets: `GetServerConfig` and `check-config` show the
    /// names only.
    pub otlp_headers: BTreeMap<String, String>,
    pub service_name: String,
}

impl std::fmt::Debug for TelemetryConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let header_names: Vec<&str> = self.otlp_headers.keys().map(String::as_str).collect();
        f.debug_struct("TelemetryConfig")
            .field(
                "otlp_endpoint",
                &self.otlp_endpoint.as_deref().map(super::redact::redact_url),
            )
            .field("otlp_headers", &header_names)
            .field("service_name", &self.service_name)
            .finish()
    }
}

impl Default for TelemetryConfig {
    fn default() -> Self {
        Self {
            otlp_endpoint: None,
            otlp_headers: BTreeMap::new(),
            service_name: "toolgate".into(),
        }
    }
}

/// The Prometheus endpoint.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MetricsConfig {
    /// Where to serve `GET /metrics`, e.g. `0.0.0.0:9090`; unset serves none and
    /// records nothing.
    pub listen: Option<String>,
}

/// The browser console, off unless `listen` is set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ConsoleConfig {
    /// Where to serve the console and, beside it on the same origin, the HTTP API it
    /// calls, e.g. `127.0.0.1:7071`; unset serves no console.
    pub listen: Option<String>,
}

/// Every RPC over HTTP: gRPC-Web and the Connect protocol's JSON, on the gRPC port
/// (and on `listen` too, when set).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HttpConfig {
    /// Answer HTTP/1.1, gRPC-Web and Connect (JSON) calls beside gRPC. Off, the port
    /// speaks gRPC over HTTP/2 only.
    pub enabled: bool,
    /// A second address serving the same API (gRPC, gRPC-Web, JSON), such as
    /// `127.0.0.1:8080`, with the same TLS; unset, the gRPC port alone.
    pub listen: Option<String>,
    /// Origins (`https://console.example.com`, exactly as a browser sends them) whose
    /// pages may call the API; empty, no other origin's page may.
    pub cors_allowed_origins: Vec<String>,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            listen: None,
            cors_allowed_origins: Vec::new(),
        }
    }
}

/// Why `origin` cannot be one of `http.cors_allowed_origins`, or `None` when it can.
pub(super) fn check_origin(origin: &str) -> Option<String> {
    const FIX: &str =
        "give scheme://host or scheme://host:port, such as https://console.example.com";
    if origin == "*" {
        return Some(format!(
            "\"*\" would let every web page call the API with its visitors' certificates: list each origin exactly ({FIX})"
        ));
    }
    let Some((scheme, authority)) = origin.split_once("://") else {
        return Some(format!("{origin:?} has no scheme: {FIX}"));
    };
    if scheme != "http" && scheme != "https" {
        return Some(format!(
            "{origin:?}: the scheme must be http or https: {FIX}"
        ));
    }
    // a browser sends an origin without a path, a query or a trailing slash, and
    // lower-case: anything else would never match
    if authority.is_empty()
        || authority.contains(['/', '?', '#', '*', '@', ' '])
        || authority != authority.to_ascii_lowercase()
    {
        return Some(format!(
            "{origin:?} is not an origin as browsers send it (no path, no trailing slash, no wildcard, lower case): {FIX}"
        ));
    }
    None
}

/// TLS for the listener; unset `cert` and `key` serve plaintext.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TlsConfig {
    /// PEM certificate chain, the server's first.
    pub cert: Option<PathBuf>,
    /// PEM private key of the certificate.
    pub key: Option<PathBuf>,
    /// PEM CA certificates that sign client certificates: set, clients present one
    /// (mTLS), mapped to principals by `auth.certificates`.
    pub client_ca: Option<PathBuf>,
    /// With `client_ca`: refuse the handshake of a client without a certificate
    /// (false lets such clients in to authenticate with a bearer token).
    pub require_client_cert: bool,
    /// Seconds between looks at the files for a renewed certificate.
    pub reload_secs: u64,
}

impl Default for TlsConfig {
    fn default() -> Self {
        Self {
            cert: None,
            key: None,
            client_ca: None,
            require_client_cert: true,
            reload_secs: 10,
        }
    }
}

impl TlsConfig {
    /// The certificate and key, when TLS is on.
    pub fn files(&self) -> Option<(&Path, &Path)> {
        Some((self.cert.as_deref()?, self.key.as_deref()?))
    }
}

/// The DENY journal's directory in the data directory, unless
/// `decision_log.journal_dir` names one.
pub const JOURNAL_DIR: &str = "deny-journal";

/// The decision log: every decision recorded off the decision path, kept for a while.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DecisionLogConfig {
    /// Records decisions at all; off, only the audit trail's DENY records are kept.
    pub enabled: bool,
    /// Days a record is kept.
    pub max_age_days: u64,
    /// Most records kept per team; past it, the oldest go first.
    pub max_records_per_team: u64,
    /// The share of ALLOW decisions recorded, from 0.0 (none) to 1.0 (all). ASK and
    /// DENY are always recorded.
    pub allow_sample_rate: f64,
    /// ALLOW and ASK records waiting for the writer before further ones are shed
    /// (and counted); DENY records wait for room instead.
    pub queue_size: usize,
    /// Longest command line or path kept whole (the impact preview decides a call
    /// again from it); a longer one keeps only its first bytes, length and SHA-256.
    pub max_stored_command_bytes: usize,
    /// Seconds between passes that remove records past the age and size limits.
    pub prune_interval_secs: u64,
    /// Records a `WatchDecisions` subscriber may fall behind before it is told it
    /// lagged.
    pub watch_buffer: usize,
    /// Where each DENY's records are journaled (fsync'd) before it is answered, until
    /// the store has them; default `<data_dir>/deny-journal`. May be on another disk.
    pub journal_dir: Option<std::path::PathBuf>,
    /// Most bytes the DENY journal holds (records the store has not taken yet); past
    /// it, further DENY records wait in memory only (counted and logged once).
    pub journal_max_bytes: u64,
    /// Days a DENY record is kept (DENY records have a retention of their own, so no
    /// volume of ALLOW records evicts them).
    pub deny_max_age_days: u64,
    /// Most DENY records kept per team; past it, the oldest DENY records go first.
    pub deny_max_records_per_team: u64,
    /// Most records one retention pass removes by age; more is left for later passes
    /// (and logged), so a clock that jumped cannot empty the log at once.
    pub max_pruned_per_pass: u64,
    /// Bytes the embedded store keeps preallocated in the data directory and releases
    /// when the disk fills, so the kill switch, token revocation and settings writes
    /// still commit while decision records wait; 0 keeps none.
    pub disk_reserve_bytes: u64,
    /// Most records one impact preview decides again (the newest of its window).
    pub preview_max_records: u64,
    /// Milliseconds one impact preview may take; past it, it answers with what it decided
    /// so far, marked cut short.
    pub preview_max_ms: u64,
    /// Days the audit trail's other records (settings changes, tokens, approvals,
    /// policy-file reloads) are kept; its decision records follow `deny_max_age_days`.
    pub audit_max_age_days: u64,
    /// Most of those other audit records kept per team; past it, the oldest go first.
    pub audit_max_records_per_team: u64,
    /// Decision-log and audit records one principal may have written per minute;
    /// past it, its repeated DENYs are counted into one record and its other records
    /// are shed (counted, and named in a `decisions_shed` audit event).
    pub principal_records_per_minute: u64,
    /// Bytes of decision-log and audit records one principal may have written per
    /// minute; past it, as past `principal_records_per_minute`.
    pub principal_bytes_per_minute: u64,
    /// Records all of a team's principals together may have written per minute.
    pub team_records_per_minute: u64,
    /// Bytes all of a team's principals together may have written per minute.
    pub team_bytes_per_minute: u64,
}

impl Default for DecisionLogConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            max_age_days: 30,
            max_records_per_team: 1_000_000,
            allow_sample_rate: 1.0,
            queue_size: 65_536,
            max_stored_command_bytes: 16 * 1024,
            prune_interval_secs: 300,
            watch_buffer: 1024,
            journal_dir: None,
            journal_max_bytes: 1024 * 1024 * 1024,
            deny_max_age_days: 90,
            deny_max_records_per_team: 1_000_000,
            max_pruned_per_pass: 1_000_000,
            disk_reserve_bytes: 64 * 1024 * 1024,
            preview_max_records: 200_000,
            preview_max_ms: 10_000,
            audit_max_age_days: 400,
            audit_max_records_per_team: 1_000_000,
            // a person's agent makes a call every few seconds, a busy CI job a few
            // hundred a minute: these are far above both, and 140 times below what
            // one token wrote before there were budgets
            principal_records_per_minute: 20_000,
            principal_bytes_per_minute: 32 * 1024 * 1024,
            team_records_per_minute: 200_000,
            team_bytes_per_minute: 256 * 1024 * 1024,
        }
    }
}

impl DecisionLogConfig {
    /// Every problem of the section, each naming its key and the fix.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if !(0.0..=1.0).contains(&self.allow_sample_rate) {
            problems.push(format!(
                "decision_log.allow_sample_rate: {} is outside 0.0 to 1.0: give the share of ALLOW decisions to record, e.g. 0.1",
                self.allow_sample_rate
            ));
        }
        for (key, value) in [
            ("max_age_days", self.max_age_days),
            ("max_records_per_team", self.max_records_per_team),
            ("prune_interval_secs", self.prune_interval_secs),
            ("queue_size", self.queue_size as u64),
            ("watch_buffer", self.watch_buffer as u64),
            ("deny_max_age_days", self.deny_max_age_days),
            ("deny_max_records_per_team", self.deny_max_records_per_team),
            ("audit_max_age_days", self.audit_max_age_days),
            (
                "audit_max_records_per_team",
                self.audit_max_records_per_team,
            ),
            ("max_pruned_per_pass", self.max_pruned_per_pass),
            ("preview_max_records", self.preview_max_records),
            ("preview_max_ms", self.preview_max_ms),
            (
                "principal_records_per_minute",
                self.principal_records_per_minute,
            ),
            ("team_records_per_minute", self.team_records_per_minute),
        ] {
            if value == 0 {
                problems.push(format!(
                    "decision_log.{key}: must be at least 1 (set decision_log.enabled: false to keep no log)"
                ));
            }
        }
        if self.journal_max_bytes < 1024 * 1024 {
            problems.push(format!(
                "decision_log.journal_max_bytes: {} is less than 1 MiB: give room for the DENY records of an outage, e.g. 1073741824",
                self.journal_max_bytes
            ));
        }
        if self
            .journal_dir
            .as_ref()
            .is_some_and(|d| d.as_os_str().is_empty())
        {
            problems.push(
                "decision_log.journal_dir: is empty: give a directory for the DENY journal, or leave it unset for <data_dir>/deny-journal"
                    .into(),
            );
        }
        for (key, value) in [
            (
                "principal_bytes_per_minute",
                self.principal_bytes_per_minute,
            ),
            ("team_bytes_per_minute", self.team_bytes_per_minute),
        ] {
            if value < 64 * 1024 {
                problems.push(format!(
                    "decision_log.{key}: {value} is less than 64 KiB: a minute's budget must hold a few whole records, e.g. 33554432 (32 MiB)"
                ));
            }
        }
        if self.team_records_per_minute < self.principal_records_per_minute {
            problems.push(format!(
                "decision_log.team_records_per_minute: {} is below decision_log.principal_records_per_minute ({}): a team's budget holds its principals', so raise it to at least that",
                self.team_records_per_minute, self.principal_records_per_minute
            ));
        }
        if self.team_bytes_per_minute < self.principal_bytes_per_minute {
            problems.push(format!(
                "decision_log.team_bytes_per_minute: {} is below decision_log.principal_bytes_per_minute ({}): a team's budget holds its principals', so raise it to at least that",
                self.team_bytes_per_minute, self.principal_bytes_per_minute
            ));
        }
        if self.max_stored_command_bytes < 256 {
            problems.push(
                "decision_log.max_stored_command_bytes: must be at least 256, so a record keeps enough of a command to show"
                    .into(),
            );
        }
        problems
    }
}
