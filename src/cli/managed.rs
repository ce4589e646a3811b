//! `toolgate managed claude-code`: Claude Code's `policyHelper`. It prints the managed
//! settings of the machine's user from the server's effective policy, and keeps the
//! last answer in a cache of the user's own (0600, written atomically) to answer from
//! while the server cannot be reached; with neither it exits non-zero, so Claude Code
//! refuses to start. Its settings come from where the hook's do (the managed
//! configuration, its flags, the user's profile), never from the environment.

use super::agent::install::{HookSettings, shell_quote};
use super::agent::with_hint;
use super::connection::Connection;
use super::hook_config::{self, Flags, Reconciled, settings_of, toolgate_env};
use crate::export;
use crate::grpc::client::{Client, ClientConfig, ClientError, RemotePolicy};
use crate::policy::{AdminControls, UserSettings};
use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, Subcommand)]
pub enum ManagedCommand {
    /// Claude Code's `policyHelper`: prints `{"managedSettings": {…}}` (the toolgate
    /// hook as a managed hook, the permission rules, the MCP servers, the team's locks).
    ClaudeCode(ManagedArgs),
}

#[derive(Debug, Args)]
pub struct ManagedArgs {
    /// The team (default: the managed configuration's, the client profile's, else the
    /// token's own).
    #[arg(long, default_value = "")]
    team: String,
    /// The user (default: the client profile's, else the token's own).
    #[arg(long, default_value = "")]
    user: String,
    /// The client profile to read (default: the one in the home directory of the user
    /// the helper runs as).
    #[arg(long, value_name = "FILE")]
    profile: Option<PathBuf>,
    /// Deadline for reaching the server and reading the policy, in milliseconds: keep
    /// it well inside the client's own time limit for the helper (10 s by default).
    #[arg(long, default_value_t = DEFAULT_TIMEOUT_MS)]
    timeout_ms: u64,
    /// The cache of the last answer (default: `~/.cache/toolgate/claude-code-managed.json`
    /// in the home directory of the user the helper runs as).
    #[arg(long, value_name = "FILE")]
    cache: Option<PathBuf>,
}

/// The helper's deadline when `--timeout-ms` is not given: a third of Claude Code's
/// default time limit for a `policyHelper` (10 s), so a cached answer is still in time.
pub const DEFAULT_TIMEOUT_MS: u64 = 3000;
/// The largest cache the helper reads: a policy is far smaller.
const MAX_CACHE_BYTES: usize = 4 * 1024 * 1024;

/// Runs a managed command; returns the exit code. `conn` holds the command line's
/// connection flags alone (no environment).
pub fn run_managed(command: ManagedCommand, conn: &Connection) -> i32 {
    match command {
        ManagedCommand::ClaudeCode(args) => match claude_code(&args, conn) {
            Ok(text) => {
                print!("{text}");
                0
            }
            Err(e) => {
                eprintln!("error: {}", super::for_terminal(&e, true));
                1
            }
        },
    }
}

/// What the helper prints, or why it cannot answer.
fn claude_code(args: &ManagedArgs, conn: &Connection) -> Result<String, String> {
    let flags = Flags {
        timeout_ms: Some(args.timeout_ms),
        ..Flags::of_connection(conn, &args.team, &args.user, args.profile.clone())
    };
    let (settings, trouble) = settings_of(&flags, &toolgate_env());
    if let Some(line) = hook_config::notice(&settings.ignored) {
        eprintln!("{line}");
    }
    // a managed configuration the admin did not secure is never worked around
    if let Some(trouble) = trouble {
        return Err(trouble);
    }
    let hook = hook_command(&flags)?;
    let cache = match &args.cache {
        Some(path) => path.clone(),
        None => default_cache().ok_or(
            "the user the helper runs as has no home directory for its cache: give --cache FILE",
        )?,
    };
    let timeout = Duration::from_millis(args.timeout_ms.max(1));
    let key = CacheKey::of(&settings);
    let policy = match fetch(&settings, timeout) {
        Ok(policy) => {
            let cached = Cached::new(key, &policy);
            if let Err(e) = cached.write(&cache) {
                // the answer stands; the next outage has only the older cache
                eprintln!("toolgate: cannot write the cache {}: {e}", cache.display());
            }
            cached
        }
        Err(Fetch::Unreachable(e)) => {
            let cached = Cached::read(&cache, &key).map_err(|c| {
                format!(
                    "{e}, and there is no cached policy to answer from ({c}): Claude Code will not start until the server can be reached"
                )
            })?;
            eprintln!(
                "toolgate: {e}: answering from the policy cached at revision {} ({})",
                cached.revision,
                cache.display()
            );
            cached
        }
        Err(Fetch::Refused(e)) => return Err(e),
    };
    let out = export::claude_managed(&policy.admin, &policy.user, &policy.files, &hook)
        .map_err(|e| format!("the effective policy does not compile: {e}"))?;
    for w in &out.warnings {
        eprintln!("toolgate: {w}");
    }
    Ok(out.text)
}

/// The hook command the managed settings run: this binary's `hook claude-code`, told
/// what the helper was told (the managed configuration pins the rest for both).
fn hook_command(flags: &Flags) -> Result<String, String> {
    let exe = std::env::current_exe()
        .map_err(|e| format!("cannot name this binary's path for the hook: {e}"))?;
    let told = HookSettings {
        server: flags.server.clone(),
        token_file: flags.token_file.clone(),
        team: flags.team.clone(),
        user: flags.user.clone(),
        ca: flags.ca.clone(),
        cert: flags.cert.clone(),
        key: flags.key.clone(),
        profile: flags.profile.clone(),
        wait_ms: None,
    };
    Ok(format!(
        "{} hook claude-code{}",
        shell_quote(&exe.display().to_string()),
        told.flags()
    ))
}

/// Why the policy could not be read: a server out of reach (the cache answers) or one
/// that refused (nothing answers: a revoked token is not worked around).
#[derive(Debug)]
enum Fetch {
    Unreachable(String),
    Refused(String),
}

/// The effective policy of the helper's team and user, within `timeout`.
fn fetch(settings: &Reconciled, timeout: Duration) -> Result<RemotePolicy, Fetch> {
    let conn = settings.conn.clone();
    let server = conn.server.clone();
    let classify = |e: ClientError| match &e {
        ClientError::Unreachable { .. } | ClientError::Timeout { .. } => {
            Fetch::Unreachable(e.to_string())
        }
        ClientError::Refused {
            code: tonic::Code::Unavailable | tonic::Code::DeadlineExceeded,
            ..
        } => Fetch::Unreachable(e.to_string()),
        _ => Fetch::Refused(with_hint(&e, &server)),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Fetch::Refused(format!("starting the runtime: {e}")))?;
    runtime.block_on(async {
        let read = tokio::time::timeout(timeout, async {
            let mut conn = conn;
            super::login_refresh::refresh_if_needed(&mut conn)
                .await
                .map_err(|e| Fetch::Refused(e.to_string()))?;
            let client = Client::connect(ClientConfig {
                server: conn.server,
                token: conn.token,
                token_file: conn.token_file,
                tls: conn.tls,
                team: settings.team.clone(),
                user: settings.user.clone(),
                deadline: timeout,
                client_kind: String::new(),
                bearer: None,
            })
            .await
            .map_err(classify)?;
            client.effective_policy().await.map_err(classify)
        })
        .await;
        read.unwrap_or_else(|_| {
            Err(Fetch::Unreachable(format!(
                "toolgate server {server} did not answer within {} ms",
                timeout.as_millis()
            )))
        })
    })
}

/// The cache's default path, in the helper's own user's home (from the user database).
fn default_cache() -> Option<PathBuf> {
    hook_config::own_home().map(|h| {
        h.join(".cache")
            .join("toolgate")
            .join("claude-code-managed.json")
    })
}

/// Whose policy a cache holds: an answer for another server, team or user is never
/// given in place of this one's.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct CacheKey {
    server: String,
    team: String,
    user: String,
}

impl CacheKey {
    fn of(settings: &Reconciled) -> Self {
        Self {
            server: settings.conn.server.clone(),
            team: settings.team.clone(),
            user: settings.user.clone(),
        }
    }
}

/// The last effective policy read, as the cache keeps it: the policy itself, not the
/// settings printed, so the hook and its lock are always this binary's own.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Cached {
    key: CacheKey,
    revision: u64,
    admin: AdminControls,
    user: UserSettings,
    files: Vec<(String, Vec<String>)>,
}

impl Cached {
    fn new(key: CacheKey, policy: &RemotePolicy) -> Self {
        Self {
            key,
            revision: policy.revision,
            admin: policy.admin.clone(),
            user: policy.user.clone(),
            files: policy.file_allowlists.clone(),
        }
    }

    /// Written atomically and readable by its owner alone.
    fn write(&self, path: &Path) -> Result<(), String> {
        let text = serde_json::to_vec(self).map_err(|e| e.to_string())?;
        path.parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| {
                toolgate_files::write_atomic(path, toolgate_files::Mode::Exactly(0o600), &text)
            })
            .map_err(|e| e.to_string())
    }

    /// The cache at `path`, only when it is the helper's user's own private regular
    /// file, reads whole, and holds `key`'s policy.
    fn read(path: &Path, key: &CacheKey) -> Result<Self, String> {
        let shown = path.display();
        let bytes = toolgate_files::read_regular(path, MAX_CACHE_BYTES)
            .map_err(|e| format!("{shown} {e}"))?;
        check_private(path)?;
        let cached: Cached = serde_json::from_slice(&bytes)
            .map_err(|e| format!("{shown} does not read: {e}: remove it"))?;
        if &cached.key != key {
            return Err(format!(
                "{shown} holds the policy of another server, team or user"
            ));
        }
        Ok(cached)
    }
}

/// Whether `path` belongs to the user the helper runs as and nobody else may read or
/// change it: a cache another could write would choose the managed settings.
#[cfg(unix)]
fn check_private(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt as _;
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|e| format!("{shown}: {e}"))?;
    let me = nix::unistd::geteuid().as_raw();
    if meta.uid() != me {
        return Err(format!(
            "{shown} belongs to uid {}, not the helper's uid {me}: remove it",
            meta.uid()
        ));
    }
    let mode = meta.mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(format!(
            "others may read or change {shown} (mode {mode:o}): remove it"
        ));
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_private(_: &Path) -> Result<(), String> {
    Ok(())
}
