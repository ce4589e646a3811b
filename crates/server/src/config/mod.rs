//! Configuration: figment layers (defaults, file, `TOOLGATE_*` environment, CLI flags)
//! and validation that reports every problem with how to fix it.
//!
//! The environment is passed in as a map so tests set it without touching the process.
//!
//! The rooms: the layers and the top of the tree here, each section's settings in
//! `sections` (the OTLP export's in `otlp`), who may call in `auth`, the checks in `validate`, and what operators
//! and teams are shown in `redact`.

mod auth;
mod env;
mod otlp;
mod paths;
mod redact;
mod sections;
mod validate;
mod yaml;

use env::EnvMap;

pub use auth::{
    AnonymousConfig, AuthConfig, CertificateConfig, JwtClaims, JwtConfig, JwtGroupsConfig,
    SignInBearer, SignInConfig, SignInFlow, TeamByGroupConfig, TokenConfig,
};
pub use otlp::{OtlpDropRule, OtlpExportConfig, OtlpProtocol};
pub use redact::{OPERATORS_ONLY, REDACTED, redact_url};
pub use sections::{
    ConnectionsConfig, ConsoleConfig, DecisionLogConfig, HttpConfig, JOURNAL_DIR, LimitsConfig,
    LogConfig, LogFormat, MetricsConfig, StoreConfig, TelemetryConfig, TlsConfig, WatchConfig,
};

use figment::Figment;
use figment::providers::{Format, Serialized, Toml};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
pub use yaml::Yaml;

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
    pub http: HttpConfig,
    pub tls: TlsConfig,
    /// Seconds to drain in-flight calls on shutdown before giving up.
    pub shutdown_grace_secs: u64,
    /// A YAML file of file-managed policy (team admin settings, seed 000's
    /// `tool.action` lists), applied at start and reloaded when it changes.
    pub policy_file: Option<PathBuf>,
    pub audit: AuditConfig,
    pub decision_log: DecisionLogConfig,
    pub console: ConsoleConfig,
    /// Central approvals: the outgoing webhook's client.
    pub approvals: ApprovalsConfig,
    /// Decision and audit records sent to an OpenTelemetry collector as log records.
    pub otlp_export: OtlpExportConfig,
}

/// How the server posts new approval requests to a team's webhook.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ApprovalsConfig {
    /// Posts waiting to be sent; past it new ones are dropped (and logged): the
    /// requests themselves are in the store, listed and streamed.
    pub webhook_queue: usize,
    /// Tries per post, the first included, with jittered backoff between them.
    pub webhook_attempts: u32,
    /// Seconds one try may take.
    pub webhook_timeout_secs: u64,
    /// Whether webhooks may post to this machine (127.0.0.0/8, ::1): a local relay.
    /// Checked on the address connected to.
    pub webhook_allow_loopback: bool,
    /// Whether webhooks may post to private ranges (10/8, 172.16/12, 192.168/16,
    /// 100.64/10, fc00::/7). Link-local addresses and cloud metadata services are
    /// never posted to.
    pub webhook_allow_private_networks: bool,
}

impl Default for ApprovalsConfig {
    fn default() -> Self {
        Self {
            webhook_queue: 1000,
            webhook_attempts: 5,
            webhook_timeout_secs: 5,
            webhook_allow_loopback: false,
            webhook_allow_private_networks: false,
        }
    }
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
            http: HttpConfig::default(),
            tls: TlsConfig::default(),
            shutdown_grace_secs: 10,
            policy_file: None,
            audit: AuditConfig::default(),
            decision_log: DecisionLogConfig::default(),
            console: ConsoleConfig::default(),
            approvals: ApprovalsConfig::default(),
            otlp_export: OtlpExportConfig::default(),
        }
    }
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
    #[serde(skip_serializing_if = "Option::is_none")]
    pub console: Option<ConsoleConfig>,
}

/// Every problem found in a configuration.
#[derive(Debug, thiserror::Error)]
#[error("invalid configuration:\n  - {}", .problems.join("\n  - "))]
pub struct ConfigError {
    pub problems: Vec<String>,
}

impl Config {
    /// Loads the layers in order: defaults, `file` (TOML or YAML by extension; else the
    /// file named by `TOOLGATE_CONFIG` in `env`), the `TOOLGATE_*` entries of `env`, `cli`.
    pub fn load<I>(file: Option<&Path>, env: I, cli: &CliOverrides) -> Result<Self, ConfigError>
    where
        I: IntoIterator<Item = (String, String)>,
    {
        let (config, problems) = Self::load_checked(file, env, cli)?;
        if problems.is_empty() {
            Ok(config)
        } else {
            Err(ConfigError { problems })
        }
    }

    /// As [`Config::load`], but a configuration with problems is returned with them (the
    /// sections that did not load at their defaults), so `check-config` can go on to
    /// check its files and report everything at once. Errs only without a file to read.
    pub fn load_checked<I>(
        file: Option<&Path>,
        env: I,
        cli: &CliOverrides,
    ) -> Result<(Self, Vec<String>), ConfigError>
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
        let mut problems = env::unknown_variables(&env);
        let server_env = env::server_settings(&env);
        let figment = figment
            .merge(EnvMap(server_env.clone()))
            .merge(Serialized::defaults(cli));
        let mut config = extract_every_section(&figment, &server_env, &mut problems);
        if let Some(file) = &file {
            paths::resolve_against_file(&mut config, &figment, file);
        }
        if let Err(e) = config.validate() {
            problems.extend(
                e.problems
                    .into_iter()
                    .map(|p| env::name_the_variable(p, &server_env)),
            );
        }
        Ok((config, problems))
    }

    /// The top-level keys, as the file and the environment spell them.
    pub fn keys() -> Vec<String> {
        serde_json::to_value(Config::default())
            .ok()
            .and_then(|v| v.as_object().map(|o| o.keys().cloned().collect()))
            .unwrap_or_default()
    }

    /// The listen address, once validated.
    pub fn listen_addr(&self) -> SocketAddr {
        self.listen.parse().expect("validated")
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

    /// The DENY journal's directory: `decision_log.journal_dir`, or in the data
    /// directory.
    pub fn journal_dir(&self) -> PathBuf {
        self.decision_log
            .journal_dir
            .clone()
            .unwrap_or_else(|| self.data_dir.join(JOURNAL_DIR))
    }
}

/// Each section extracted on its own, so one mistake per section is reported rather
/// than the first of the file; keys no section has are reported by name.
fn extract_every_section(
    figment: &Figment,
    server_env: &BTreeMap<String, String>,
    problems: &mut Vec<String>,
) -> Config {
    let mut config = Config::default();
    let known = Config::keys();
    match figment::Provider::data(figment) {
        Ok(data) => {
            for dict in data.values() {
                for key in dict.keys().filter(|k| !known.contains(k)) {
                    let from_env = server_env.contains_key(&env::variable_of(key));
                    let at = figment.find_metadata(key).map(env::origin);
                    let at = if from_env {
                        Some(env::ENV_SOURCE.to_owned())
                    } else {
                        at
                    };
                    problems.push(env::describe_unknown(key, at.as_deref(), &known));
                }
            }
        }
        Err(e) => problems.extend(e.into_iter().map(|e| env::describe(&e, "", server_env))),
    }
    let mut handled: Vec<&str> = Vec::new();
    macro_rules! sections {
        ($($field:ident),* $(,)?) => {$(
            let key = stringify!($field);
            handled.push(key);
            if figment.contains(key) {
                match figment.extract_inner(key) {
                    Ok(value) => config.$field = value,
                    Err(e) => problems.extend(e.into_iter().map(|e| env::describe(&e, key, &server_env))),
                }
            }
        )*};
    }
    sections!(
        listen,
        data_dir,
        store,
        auth,
        watch,
        limits,
        connections,
        log,
        telemetry,
        metrics,
        http,
        tls,
        shutdown_grace_secs,
        policy_file,
        audit,
        decision_log,
        console,
        approvals,
        otlp_export,
    );
    // a key added to Config but not above is still read: the whole tree at once
    if known.iter().any(|k| !handled.contains(&k.as_str())) {
        match figment.extract::<Config>() {
            Ok(whole) => return whole,
            Err(e) => problems.extend(e.into_iter().map(|e| env::describe(&e, "", server_env))),
        }
    }
    config
}

#[cfg(test)]
mod tests;
