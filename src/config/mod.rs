//! Configuration: figment layers (defaults, file, `TOOLGATE_*` environment, CLI flags)
//! and validation that reports every problem with how to fix it.
//!
//! The environment is passed in as a map so tests set it without touching the process.

use crate::auth::{Principal, Role};
use figment::providers::{Format, Serialized, Toml, Yaml};
use figment::value::{Dict, Map, Value};
use figment::{Figment, Metadata, Profile, Provider};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// The environment variable prefix; nested keys are separated by `__`.
pub const ENV_PREFIX: &str = "TOOLGATE_";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Address to listen on.
    pub listen: String,
    /// Where the embedded store and the bootstrap token live.
    pub data_dir: PathBuf,
    pub store: StoreConfig,
    pub auth: AuthConfig,
    pub watch: WatchConfig,
    pub limits: LimitsConfig,
    pub connections: ConnectionsConfig,
    pub log: LogConfig,
    pub telemetry: TelemetryConfig,
    pub metrics: MetricsConfig,
    pub tls: TlsConfig,
    /// Seconds to drain in-flight calls on shutdown before giving up.
    pub shutdown_grace_secs: u64,
    /// A YAML file of file-managed policy (team admin settings, seed 000's
    /// `tool.action` lists), applied at start and reloaded when it changes.
    pub policy_file: Option<PathBuf>,
    pub audit: AuditConfig,
}

/// Which decisions the audit trail records.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionLog {
    /// DENYs only.
    #[default]
    Deny,
    /// Every decision (seed 004's "audit every check"): ALLOW and ASK as
    /// `decision_made`.
    All,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuditConfig {
    pub decisions: DecisionLog,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:7070".into(),
            data_dir: PathBuf::from("toolgate-data"),
            store: StoreConfig::default(),
            auth: AuthConfig::default(),
            watch: WatchConfig::default(),
            limits: LimitsConfig::default(),
            connections: ConnectionsConfig::default(),
            log: LogConfig::default(),
            telemetry: TelemetryConfig::default(),
            metrics: MetricsConfig::default(),
            tls: TlsConfig::default(),
            shutdown_grace_secs: 10,
            policy_file: None,
            audit: AuditConfig::default(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StoreConfig {
    /// `postgres://…` for replicas sharing PostgreSQL, `sqlite://PATH`, or unset for
    /// `<data_dir>/toolgate.db`.
    pub url: Option<String>,
    /// Seconds between checks of the store (the SQLite file still the one opened,
    /// `PRAGMA quick_check`) and retries of a catch-up that failed.
    pub check_secs: u64,
}

impl Default for StoreConfig {
    fn default() -> Self {
        Self {
            url: None,
            check_secs: 5,
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

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuthConfig {
    pub tokens: Vec<TokenConfig>,
    /// Principals for client certificates (mTLS, `tls.client_ca`).
    pub certificates: Vec<CertificateConfig>,
    /// JWT bearer tokens from an identity provider, beside the static tokens.
    pub jwt: Option<JwtConfig>,
    /// Principal for calls without a token. Only allowed on a loopback listen address.
    pub anonymous: Option<AnonymousConfig>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenConfig {
    /// A name for logs and the audit trail.
    pub name: String,
    /// SHA-256 of the token, hex (`toolgate hash-token` prints it).
    pub sha256: String,
    pub role: Role,
    /// Required for every role but operator.
    #[serde(default)]
    pub team: Option<String>,
    /// The user a member acts as; defaults to `name`.
    #[serde(default)]
    pub user: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnonymousConfig {
    pub role: Role,
    #[serde(default)]
    pub team: Option<String>,
    #[serde(default)]
    pub user: Option<String>,
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
    /// Most `WatchPolicy` streams one principal may hold open; past it, new ones are
    /// refused with RESOURCE_EXHAUSTED.
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

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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

/// JWT bearer tokens: whose keys verify them, what they must say, and which claims
/// name the principal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JwtConfig {
    /// The `iss` tokens must carry.
    pub issuer: String,
    /// The `aud` tokens must carry (one of theirs).
    pub audience: String,
    /// The issuer's keys as a JWKS file...
    #[serde(default)]
    pub jwks_file: Option<PathBuf>,
    /// ...or a URL serving them (e.g. `https://idp.example/.well-known/jwks.json`).
    #[serde(default)]
    pub jwks_url: Option<String>,
    /// Seconds between reads of the keys (rotated keys are taken at the next one).
    #[serde(default = "JwtConfig::default_refresh_secs")]
    pub refresh_secs: u64,
    /// Seconds of clock skew allowed on `exp` and `nbf`.
    #[serde(default = "JwtConfig::default_leeway_secs")]
    pub leeway_secs: u64,
    #[serde(default)]
    pub claims: JwtClaims,
    /// The role of a token without the role claim.
    #[serde(default = "JwtConfig::default_role")]
    pub default_role: Role,
}

impl JwtConfig {
    fn default_refresh_secs() -> u64 {
        300
    }
    fn default_leeway_secs() -> u64 {
        30
    }
    fn default_role() -> Role {
        Role::Member
    }
}

/// Which claims name the team, the user and the role.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JwtClaims {
    pub team: String,
    pub user: String,
    pub role: String,
}

impl Default for JwtClaims {
    fn default() -> Self {
        Self {
            team: "team".into(),
            user: "sub".into(),
            role: "role".into(),
        }
    }
}

/// A principal for the holder of a client certificate (mTLS).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CertificateConfig {
    /// A name for logs and the audit trail.
    pub name: String,
    /// Matches a certificate whose subject common name (CN) is this.
    #[serde(default)]
    pub subject_cn: Option<String>,
    /// Matches a certificate with this subject alternative name (DNS, URI or email).
    #[serde(default)]
    pub san: Option<String>,
    pub role: Role,
    #[serde(default)]
    pub team: Option<String>,
    /// The user a member acts as; defaults to `name`.
    #[serde(default)]
    pub user: Option<String>,
}

/// Flags given on the command line; they override every other layer.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CliOverrides {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub listen: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_dir: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy_file: Option<PathBuf>,
}

/// Every problem found in a configuration.
#[derive(Debug, thiserror::Error)]
#[error("invalid configuration:\n  - {}", .problems.join("\n  - "))]
pub struct ConfigError {
    pub problems: Vec<String>,
}

/// `TOOLGATE_*` variables that are not server settings: the config file's name, the
/// CLI client's connection, and the test suite's own.
const NOT_SETTINGS: [&str; 7] = [
    "CONFIG",
    "SERVER",
    "TOKEN",
    "TOKEN_FILE",
    "CA",
    "CERT",
    "KEY",
];

/// The environment layer: `TOOLGATE_A__B=v` sets `a.b`, as figment's
/// `Env::prefixed("TOOLGATE_").split("__")` would, but over a map passed in rather than
/// the process's environment (figment's `Env` reads only the latter); values are parsed
/// and nested by figment itself.
struct EnvMap(BTreeMap<String, String>);

impl Provider for EnvMap {
    fn metadata(&self) -> Metadata {
        Metadata::named("TOOLGATE_* environment")
    }

    fn data(&self) -> Result<Map<Profile, Dict>, figment::Error> {
        let settings = self.0.iter().filter_map(|(key, value)| {
            let rest = key.strip_prefix(ENV_PREFIX)?;
            let skip = rest.is_empty() || NOT_SETTINGS.contains(&rest) || rest.starts_with("TEST_");
            (!skip).then(|| (rest.to_ascii_lowercase().replace("__", "."), value))
        });
        settings
            .fold(Figment::new(), |figment, (path, value)| {
                let parsed: Value = value.parse().unwrap_or_else(|_| Value::from(value.clone()));
                figment.merge(Serialized::default(&path, parsed))
            })
            .data()
    }
}

impl Config {
    /// Loads the layers in order: defaults, `file` (TOML or YAML by extension; else the
    /// file named by `TOOLGATE_CONFIG` in `env`), the `TOOLGATE_*` entries of `env`, `cli`.
    pub fn load<I>(file: Option<&Path>, env: I, cli: &CliOverrides) -> Result<Self, ConfigError>
    where
        I: IntoIterator<Item = (String, String)>,
    {
        let env: BTreeMap<String, String> = env
            .into_iter()
            .filter(|(k, _)| k.starts_with(ENV_PREFIX))
            .collect();
        let file = file
            .map(Path::to_path_buf)
            .or_else(|| env.get("TOOLGATE_CONFIG").map(PathBuf::from));
        let mut figment = Figment::from(Serialized::defaults(Config::default()));
        if let Some(file) = &file {
            if !file.is_file() {
                return Err(ConfigError {
                    problems: vec![format!(
                        "config file {} does not exist: fix the path or drop --config",
                        file.display()
                    )],
                });
            }
            figment = match file.extension().and_then(|e| e.to_str()) {
                Some("yaml" | "yml") => figment.merge(Yaml::file_exact(file)),
                _ => figment.merge(Toml::file_exact(file)),
            };
        }
        let config: Config = figment
            .merge(EnvMap(env))
            .merge(Serialized::defaults(cli))
            .extract()
            .map_err(|e| ConfigError {
                problems: e.into_iter().map(|e| e.to_string()).collect(),
            })?;
        config.validate()?;
        Ok(config)
    }

    /// The listen address, once validated.
    pub fn listen_addr(&self) -> SocketAddr {
        self.listen.parse().expect("validated")
    }

    /// Reports every problem at once, each saying how to fix it.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let mut problems = Vec::new();
        let listen = self.listen.parse::<SocketAddr>();
        if let Err(e) = &listen {
            problems.push(format!(
                "listen: {:?} is not an address ({e}): use HOST:PORT such as 127.0.0.1:7070",
                self.listen
            ));
        }
        if self
            .policy_file
            .as_ref()
            .is_some_and(|p| p.as_os_str().is_empty())
        {
            problems.push(
                "policy_file: must not be empty: give the policy YAML's path or leave it unset"
                    .into(),
            );
        }
        if self.data_dir.as_os_str().is_empty() {
            problems.push(
                "data_dir: must not be empty: give a directory for the embedded store".into(),
            );
        }
        if let Some(url) = &self.store.url
            && !["sqlite://", "postgres://", "postgresql://"]
                .iter()
                .any(|p| url.starts_with(p))
        {
            problems.push(format!(
                "store.url: {url:?} is not supported: use postgres://USER@HOST/DB, sqlite://PATH, or leave it unset for <data_dir>/toolgate.db"
            ));
        }
        let mut names = std::collections::HashSet::new();
        for (i, t) in self.auth.tokens.iter().enumerate() {
            let at = format!("auth.tokens[{i}] ({:?})", t.name);
            if t.name.trim().is_empty() {
                problems.push(format!(
                    "auth.tokens[{i}].name: must not be empty: name the token's holder"
                ));
            } else if !names.insert(t.name.clone()) {
                problems.push(format!(
                    "{at}.name: duplicate name: give each token its own name"
                ));
            }
            if parse_sha256(&t.sha256).is_none() {
                problems.push(format!(
                    "{at}.sha256: must be 64 hex digits: run `toolgate hash-token` and paste its output"
                ));
            }
            check_scope(&mut problems, &at, t.role, t.team.as_deref());
            check_ids(&mut problems, &at, t.team.as_deref(), t.user.as_deref());
        }
        if let Some(anon) = &self.auth.anonymous {
            check_scope(
                &mut problems,
                "auth.anonymous",
                anon.role,
                anon.team.as_deref(),
            );
            check_ids(
                &mut problems,
                "auth.anonymous",
                anon.team.as_deref(),
                anon.user.as_deref(),
            );
            if matches!(&listen, Ok(addr) if !addr.ip().is_loopback()) {
                problems.push(format!(
                    "auth.anonymous: anonymous access is only allowed on a loopback listen address, not {}: remove auth.anonymous or listen on 127.0.0.1",
                    self.listen
                ));
            }
        }
        if self.watch.heartbeat_secs == 0 {
            problems.push("watch.heartbeat_secs: must be at least 1".into());
        }
        if self.watch.queue_size == 0 {
            problems.push("watch.queue_size: must be at least 1".into());
        }
        if self.watch.history_per_team == 0 {
            problems.push("watch.history_per_team: must be at least 1".into());
        }
        if self.limits.max_request_bytes < 1024 {
            problems.push("limits.max_request_bytes: must be at least 1024".into());
        }
        if self.limits.max_batch_calls == 0 {
            problems.push("limits.max_batch_calls: must be at least 1".into());
        }
        if self.limits.max_list_entries == 0
            || self.limits.max_list_entries > crate::policy::MAX_LIST_ENTRIES
        {
            problems.push(format!(
                "limits.max_list_entries: must be between 1 and {}",
                crate::policy::MAX_LIST_ENTRIES
            ));
        }
        if self.limits.max_cached_users_per_team == 0 {
            problems.push("limits.max_cached_users_per_team: must be at least 1".into());
        }
        if self.limits.max_command_bytes == 0 {
            problems.push("limits.max_command_bytes: must be at least 1".into());
        }
        if self.limits.team_idle_secs == 0 {
            problems.push("limits.team_idle_secs: must be at least 1".into());
        }
        for (name, value, fix) in [
            (
                "request_timeout_secs",
                self.limits.request_timeout_secs,
                "give the seconds a call may take, e.g. 30",
            ),
            (
                "max_concurrent_requests",
                self.limits.max_concurrent_requests as u64,
                "give how many calls may be answered at once, e.g. 1000",
            ),
            (
                "max_streams_per_principal",
                self.limits.max_streams_per_principal as u64,
                "give how many watch streams one token may hold open, e.g. 1000",
            ),
        ] {
            if value == 0 {
                problems.push(format!("limits.{name}: 0 would refuse every call: {fix}"));
            }
        }
        if self.watch.queue_bytes == 0 {
            problems.push("watch.queue_bytes: must be at least 1".into());
        }
        if self.store.check_secs == 0 {
            problems.push("store.check_secs: must be at least 1".into());
        }
        let c = &self.connections;
        for (name, value) in [
            ("max", c.max as u64),
            ("idle_timeout_secs", c.idle_timeout_secs),
            ("keepalive_interval_secs", c.keepalive_interval_secs),
            ("keepalive_timeout_secs", c.keepalive_timeout_secs),
        ] {
            if value == 0 {
                problems.push(format!("connections.{name}: must be at least 1"));
            }
        }
        if c.idle_timeout_secs <= c.keepalive_interval_secs {
            problems.push(format!(
                "connections.idle_timeout_secs: {} must be longer than keepalive_interval_secs ({}): live clients that only answer pings would be closed",
                c.idle_timeout_secs, c.keepalive_interval_secs
            ));
        }
        if let Some(endpoint) = &self.telemetry.otlp_endpoint
            && !(endpoint.starts_with("http://") || endpoint.starts_with("https://"))
        {
            problems.push(format!(
                "telemetry.otlp_endpoint: {endpoint:?} is not a URL: use http://HOST:4317 (OTLP over gRPC)"
            ));
        }
        for (name, value) in &self.telemetry.otlp_headers {
            let name_ok = !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-_.".contains(&b));
            if !name_ok || name.ends_with("-bin") {
                problems.push(format!(
                    "telemetry.otlp_headers: {name:?} is not a header name: use lowercase letters, digits, '-', '_' or '.'"
                ));
            }
            if !value.bytes().all(|b| (0x20..0x7f).contains(&b)) {
                // the value is a secret: name the header only
                problems.push(format!(
                    "telemetry.otlp_headers.{name}: the value must be printable ASCII"
                ));
            }
        }
        let tls = &self.tls;
        match (&tls.cert, &tls.key) {
            (Some(_), None) => problems.push(
                "tls.key: required with tls.cert: give the certificate's PEM private key".into(),
            ),
            (None, Some(_)) => problems
                .push("tls.cert: required with tls.key: give the PEM certificate chain".into()),
            _ => {}
        }
        if tls.client_ca.is_some() && tls.cert.is_none() {
            problems.push(
                "tls.client_ca: client certificates need TLS: set tls.cert and tls.key too".into(),
            );
        }
        if tls.reload_secs == 0 {
            problems.push("tls.reload_secs: must be at least 1".into());
        }
        if !self.auth.certificates.is_empty() && tls.client_ca.is_none() {
            problems.push(
                "auth.certificates: no client certificate can be verified: set tls.client_ca to the CA that signs them".into(),
            );
        }
        for (i, c) in self.auth.certificates.iter().enumerate() {
            let at = format!("auth.certificates[{i}] ({:?})", c.name);
            if c.name.trim().is_empty() {
                problems.push(format!(
                    "auth.certificates[{i}].name: must not be empty: name the certificate's holder"
                ));
            } else if !names.insert(c.name.clone()) {
                problems.push(format!(
                    "{at}.name: duplicate name: give each token and certificate its own name"
                ));
            }
            match (&c.subject_cn, &c.san) {
                (Some(_), Some(_)) | (None, None) => problems.push(format!(
                    "{at}: give exactly one of subject_cn and san to match the certificate by"
                )),
                (Some(v), None) | (None, Some(v)) if v.trim().is_empty() => {
                    problems.push(format!("{at}: the name to match must not be empty"))
                }
                _ => {}
            }
            check_scope(&mut problems, &at, c.role, c.team.as_deref());
            check_ids(&mut problems, &at, c.team.as_deref(), c.user.as_deref());
        }
        if let Some(jwt) = &self.auth.jwt {
            match (&jwt.jwks_file, &jwt.jwks_url) {
                (None, None) | (Some(_), Some(_)) => problems.push(
                    "auth.jwt: give exactly one of jwks_file and jwks_url for the issuer's keys"
                        .into(),
                ),
                (None, Some(url)) if !url.starts_with("https://") && !url.starts_with("http://") => {
                    problems.push(format!(
                        "auth.jwt.jwks_url: {:?} is not a URL: use https://ISSUER/.well-known/jwks.json",
                        redact_url(url)
                    ))
                }
                _ => {}
            }
            for (field, value) in [
                ("issuer", &jwt.issuer),
                ("audience", &jwt.audience),
                ("claims.team", &jwt.claims.team),
                ("claims.user", &jwt.claims.user),
                ("claims.role", &jwt.claims.role),
            ] {
                if value.trim().is_empty() {
                    problems.push(format!(
                        "auth.jwt.{field}: must not be empty: give what the identity provider's tokens carry"
                    ));
                }
            }
            if jwt.refresh_secs == 0 {
                problems.push("auth.jwt.refresh_secs: must be at least 1".into());
            }
        }
        if let Some(addr) = &self.metrics.listen {
            match addr.parse::<SocketAddr>() {
                Err(e) => problems.push(format!(
                    "metrics.listen: {addr:?} is not an address ({e}): use HOST:PORT such as 0.0.0.0:9090, or leave it unset for no metrics"
                )),
                Ok(m) if listen.as_ref().is_ok_and(|l| *l == m && m.port() != 0) => problems.push(format!(
                    "metrics.listen: {addr} is the gRPC listen address too: give the metrics another port"
                )),
                Ok(_) => {}
            }
        }
        if tracing_subscriber::EnvFilter::try_new(&self.log.level).is_err() {
            problems.push(format!(
                "log.level: {:?} is not a tracing filter: use e.g. info or toolgate=debug",
                self.log.level
            ));
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ConfigError { problems })
        }
    }

    /// The PostgreSQL URL, when the store is PostgreSQL.
    pub fn postgres_url(&self) -> Option<&str> {
        self.store
            .url
            .as_deref()
            .filter(|u| u.starts_with("postgres://") || u.starts_with("postgresql://"))
    }

    /// The SQLite file the embedded store uses.
    pub fn sqlite_path(&self) -> PathBuf {
        match self
            .store
            .url
            .as_deref()
            .and_then(|u| u.strip_prefix("sqlite://"))
        {
            Some(path) => PathBuf::from(path),
            None => self.data_dir.join("toolgate.db"),
        }
    }

    /// The configured token principals as (digest, principal) pairs.
    pub fn token_principals(&self) -> Vec<([u8; 32], Principal)> {
        self.auth
            .tokens
            .iter()
            .filter_map(|t| {
                Some((
                    parse_sha256(&t.sha256)?,
                    Principal {
                        name: t.name.clone(),
                        role: t.role,
                        team: t.team.as_deref().map(normalised),
                        user: Some(normalised(t.user.as_deref().unwrap_or(&t.name))),
                    },
                ))
            })
            .collect()
    }

    /// The configured certificate principals, with what matches them.
    pub fn certificate_principals(&self) -> Vec<(crate::auth::CertMatch, Principal)> {
        self.auth
            .certificates
            .iter()
            .filter_map(|c| {
                let matcher = match (&c.subject_cn, &c.san) {
                    (Some(cn), None) => crate::auth::CertMatch::SubjectCn(cn.clone()),
                    (None, Some(san)) => crate::auth::CertMatch::San(san.clone()),
                    _ => return None,
                };
                Some((
                    matcher,
                    Principal {
                        name: c.name.clone(),
                        role: c.role,
                        team: c.team.as_deref().map(normalised),
                        user: Some(normalised(c.user.as_deref().unwrap_or(&c.name))),
                    },
                ))
            })
            .collect()
    }

    /// The anonymous principal, if configured.
    pub fn anonymous_principal(&self) -> Option<Principal> {
        self.auth.anonymous.as_ref().map(|a| Principal {
            name: "anonymous".into(),
            role: a.role,
            team: a.team.as_deref().map(normalised),
            user: a.user.as_deref().map(normalised),
        })
    }

    /// The configuration as an operator sees it (`GetServerConfig`, `check-config`):
    /// every credential redacted by [`redact_url`], token hashes and OTLP header
    /// values removed.
    pub fn public_json(&self) -> serde_json::Value {
        let mut value = serde_json::to_value(self).unwrap_or_default();
        if let Some(url) = self.store.url.as_deref() {
            value["store"]["url"] = serde_json::Value::String(redact_url(url));
        }
        if let Some(endpoint) = self.telemetry.otlp_endpoint.as_deref() {
            value["telemetry"]["otlp_endpoint"] = serde_json::Value::String(redact_url(endpoint));
        }
        value["telemetry"]["otlp_headers"] = self
            .telemetry
            .otlp_headers
            .keys()
            .map(|name| (name.clone(), serde_json::Value::String(REDACTED.into())))
            .collect::<serde_json::Map<_, _>>()
            .into();
        if let Some(url) = self.auth.jwt.as_ref().and_then(|j| j.jwks_url.as_deref()) {
            value["auth"]["jwt"]["jwks_url"] = serde_json::Value::String(redact_url(url));
        }
        if let Some(tokens) = value
            .pointer_mut("/auth/tokens")
            .and_then(|t| t.as_array_mut())
        {
            for t in tokens {
                if let Some(obj) = t.as_object_mut() {
                    obj.remove("sha256");
                }
            }
        }
        value
    }

    /// The configuration as a team principal sees it: the operator's view without
    /// the principals (`auth`) and without where the store and the collector are,
    /// even redacted: a member needs none of it to use the server.
    pub fn team_json(&self) -> serde_json::Value {
        let mut value = self.public_json();
        if let Some(root) = value.as_object_mut() {
            root.remove("auth");
            // where the certificates are is the operators' business
            root.remove("tls");
        }
        value["store"]["url"] = serde_json::Value::String(OPERATORS_ONLY.into());
        if let Some(telemetry) = value["telemetry"].as_object_mut() {
            telemetry.remove("otlp_endpoint");
            telemetry.remove("otlp_headers");
        }
        value
    }
}

/// What a redacted secret reads as.
pub const REDACTED: &str = "***";
/// What a setting shown to operators only reads as for everyone else.
pub const OPERATORS_ONLY: &str = "(shown to operators only)";

/// Query parameters whose value is a credential (matched as a substring of the
/// lowercased name: `password`, `sslpassword`, `api_key`, `access_token`, ...).
const SECRET_PARAMS: [&str; 7] = [
    "pass",
    "pwd",
    "secret",
    "token",
    "key",
    "auth",
    "credential",
];

/// A URL with every credential it may carry replaced by [`REDACTED`]: the whole
/// password of the userinfo, and the value of each parameter named like a
/// credential. The one redaction of the server: `GetServerConfig` and
/// `check-config` both go through it.
///
/// Passwords are not always percent-encoded, so the userinfo is taken to end at the
/// URL's last `@` (`postgres://app:p@ss@db/tg` → `postgres://app:***@db/tg`), and
/// parameters are looked for in everything after it, split at `?`, `&`, `;` and `#`.
/// An `@` in a parameter value makes it redact more than the password: never less.
pub fn redact_url(url: &str) -> String {
    let (scheme, rest) = match url.split_once("://") {
        Some((scheme, rest)) => (Some(scheme), rest),
        None => (None, url),
    };
    let mut out = String::with_capacity(url.len());
    if let Some(scheme) = scheme {
        out.push_str(scheme);
        out.push_str("://");
    }
    let mut tail = rest;
    if let Some(last_at) = rest.rfind('@') {
        let userinfo = &rest[..last_at];
        let user = userinfo.split_once(':').map_or(userinfo, |(user, _)| user);
        // a user name never holds these: past them the '@' is in a path or parameter
        if !user.contains(['/', '?', '#', '&', ';', '=']) {
            if userinfo.contains(':') {
                out.push_str(user);
                out.push(':');
                out.push_str(REDACTED);
            } else if scheme.is_some_and(|s| s.starts_with("postgres")) {
                // a PostgreSQL user name alone is no secret
                out.push_str(userinfo);
            } else {
                // elsewhere a userinfo without ':' is a token as often as a name
                out.push_str(REDACTED);
            }
            tail = &rest[last_at..];
        }
    }
    for part in tail.split_inclusive(['?', '&', ';', '#']) {
        let (body, sep) = match part.char_indices().last() {
            Some((i, '?' | '&' | ';' | '#')) => part.split_at(i),
            _ => (part, ""),
        };
        match body.split_once('=') {
            Some((name, _)) if is_secret_param(name) => {
                out.push_str(name);
                out.push('=');
                out.push_str(REDACTED);
            }
            _ => out.push_str(body),
        }
        out.push_str(sep);
    }
    out
}

fn is_secret_param(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    SECRET_PARAMS.iter().any(|s| name.contains(s))
}

/// A principal's team and user pass the service's id check (an empty team is
/// `check_scope`'s to report).
fn check_ids(problems: &mut Vec<String>, at: &str, team: Option<&str>, user: Option<&str>) {
    for (field, value) in [("team", team), ("user", user)] {
        if let Some(value) = value.filter(|v| !v.trim().is_empty())
            && let Err(e) = crate::service::check_id(&format!("{at}.{field}"), value)
        {
            problems.push(e.to_string());
        }
    }
}

/// An id from the configuration in the one spelling the service compares (NFC).
fn normalised(id: &str) -> String {
    crate::service::check_id("id", id).map_or_else(|_| id.to_owned(), |id| id.into_owned())
}

fn check_scope(problems: &mut Vec<String>, at: &str, role: Role, team: Option<&str>) {
    match (role, team) {
        (Role::Operator, Some(_)) => problems.push(format!(
            "{at}.team: an operator spans all teams: remove team"
        )),
        (Role::Operator, None) => {}
        (_, None) => problems.push(format!(
            "{at}.team: required for role {role:?}: name the team"
        )),
        (_, Some(t)) if t.trim().is_empty() => {
            problems.push(format!("{at}.team: must not be empty"))
        }
        _ => {}
    }
}

fn parse_sha256(s: &str) -> Option<[u8; 32]> {
    let bytes = hex::decode(s.trim()).ok()?;
    bytes.try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn defaults_are_valid() {
        let c = Config::load(None, env(&[]), &CliOverrides::default()).unwrap();
        assert_eq!(c, Config::default());
    }

    #[test]
    fn env_overrides_nested_keys_and_cli_overrides_env() {
        let cli = CliOverrides {
            listen: Some("127.0.0.1:9999".into()),
            data_dir: None,
            policy_file: Some("/etc/toolgate/policy.yaml".into()),
        };
        let c = Config::load(
            None,
            env(&[
                ("TOOLGATE_LISTEN", "127.0.0.1:1"),
                ("TOOLGATE_WATCH__HEARTBEAT_SECS", "3"),
                ("TOOLGATE_DATA_DIR", "/tmp/x"),
                ("OTHER", "ignored"),
                ("TOOLGATE_TOKEN", "a client setting, not a server one"),
                ("TOOLGATE_TEST_POSTGRES_URL", "the test suite's"),
            ]),
            &cli,
        )
        .unwrap();
        assert_eq!(c.listen, "127.0.0.1:9999");
        assert_eq!(c.watch.heartbeat_secs, 3);
        assert_eq!(c.data_dir, PathBuf::from("/tmp/x"));
        assert_eq!(
            c.policy_file,
            Some(PathBuf::from("/etc/toolgate/policy.yaml"))
        );
    }

    #[test]
    fn unknown_keys_are_rejected() {
        let err = Config::load(
            None,
            env(&[("TOOLGATE_LISTN", "x")]),
            &CliOverrides::default(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("listn"), "{err}");
    }

    #[test]
    fn every_problem_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.toml");
        std::fs::write(
            &file,
            r#"
listen = "0.0.0.0:7070"
[auth.anonymous]
role = "member"
[[auth.tokens]]
name = "a"
sha256 = "zz"
role = "admin"
"#,
        )
        .unwrap();
        let err = Config::load(Some(&file), env(&[]), &CliOverrides::default()).unwrap_err();
        let text = err.to_string();
        for needle in [
            "auth.tokens[0] (\"a\").sha256",
            "auth.tokens[0] (\"a\").team",
            "auth.anonymous.team",
            "loopback",
        ] {
            assert!(text.contains(needle), "missing {needle} in {text}");
        }
        assert_eq!(err.problems.len(), 4, "{text}");
    }

    #[test]
    fn redact_url_hides_every_credential_form() {
        let table = [
            // (url, shown)
            ("postgres://db/tg", "postgres://db/tg"),
            ("postgres://app@db/tg", "postgres://app@db/tg"),
            ("postgres://app:hunter2@db/tg", "postgres://app:***@db/tg"),
            ("postgres://app:p@ssW0rd@db/tg", "postgres://app:***@db/tg"),
            (
                "postgres://app:p@ss:w@rd@db:5432/tg",
                "postgres://app:***@db:5432/tg",
            ),
            ("postgres://app:pa/ss?#@db/tg", "postgres://app:***@db/tg"),
            ("postgres://app:@db/tg", "postgres://app:***@db/tg"),
            (
                "postgres://db/tg?user=app&password=hunter2",
                "postgres://db/tg?user=app&password=***",
            ),
            (
                "postgresql://db/tg?sslmode=verify-full&sslpassword=s3&sslkey=/k.pem",
                "postgresql://db/tg?sslmode=verify-full&sslpassword=***&sslkey=***",
            ),
            (
                "postgres://db/tg?PASSWORD=x;token=y#secret=z",
                "postgres://db/tg?PASSWORD=***;token=***#secret=***",
            ),
            (
                "postgres://db/tg?user=a@b.c&password=x",
                "postgres://db/tg?user=a@b.c&password=***",
            ),
            // an '@' in a parameter: more is hidden, never less
            (
                "postgres://app:pw@db/tg?email=a@b.c&password=x",
                "postgres://app:***@b.c&password=***",
            ),
            (
                "sqlite:///var/lib/toolgate/tg.db",
                "sqlite:///var/lib/toolgate/tg.db",
            ),
            ("http://127.0.0.1:4317", "http://127.0.0.1:4317"),
            (
                "https://user:apikey@otel.example:4317",
                "https://user:***@otel.example:4317",
            ),
            (
                "https://ghp_abc123@otel.example",
                "https://***@otel.example",
            ),
            (
                "https://otel.example/v1?api_key=abc&access_token=t&auth=b&x=1",
                "https://otel.example/v1?api_key=***&access_token=***&auth=***&x=1",
            ),
            ("not a url password=x", "not a url password=***"),
        ];
        for (url, shown) in table {
            assert_eq!(redact_url(url), shown, "{url}");
        }
    }

    #[test]
    fn team_view_has_no_principals_and_no_secrets() {
        let mut c = Config::default();
        c.auth.tokens.push(TokenConfig {
            name: "alice".into(),
            sha256: "00".repeat(32),
            role: Role::Member,
            team: Some("acme".into()),
            user: None,
        });
        c.store.url = Some("postgres://app:p@ssW0rd@db/tg?sslpassword=k".into());
        c.telemetry.otlp_endpoint = Some("https://u:otelpw@otel.example:4317".into());
        c.telemetry
            .otlp_headers
            .insert("authorization".into(), "Bearer otelsecret".into());
        let operator = c.public_json().to_string();
        for secret in [
            "p@ssW0rd",
            "ssW0rd",
            "sslpassword=k",
            "otelpw",
            "otelsecret",
        ] {
            assert!(!operator.contains(secret), "{secret} in {operator}");
        }
        assert!(operator.contains("postgres://app:***@db/tg?sslpassword=***"));
        assert!(operator.contains("\"authorization\":\"***\""));
        let team = c.team_json().to_string();
        for hidden in ["alice", "postgres", "otel", "authorization", "\"auth\""] {
            assert!(!team.contains(hidden), "{hidden} in {team}");
        }
    }

    #[test]
    fn public_json_hides_token_hashes() {
        let mut c = Config::default();
        c.auth.tokens.push(TokenConfig {
            name: "a".into(),
            sha256: "00".repeat(32),
            role: Role::Operator,
            team: None,
            user: None,
        });
        c.store.url = Some("postgres://tg:hunter2@db/toolgate".into());
        let json = c.public_json().to_string();
        assert!(!json.contains(&"00".repeat(32)));
        assert!(!json.contains("hunter2"));
        assert!(json.contains("postgres://tg:***@db/toolgate"));
        assert!(json.contains("\"name\":\"a\""));
    }
}
