//! `toolgate sync`: the agent (run as root, e.g. by `deploy/systemd/toolgate-sync.service`)
//! that follows `WatchPolicy` and keeps the clients' managed files current: Codex's
//! `requirements.toml`, Gemini CLI's admin-tier policy and Cursor's enterprise
//! `hooks.json`. A file is written (atomically) only when its content changes; a file
//! someone else changed is restored and reported as tampering; while the server cannot
//! be reached the last files stay, still guarded. Each event is one JSON line on stdout.

use super::agent::{settings_of, shell_quote, toolgate_env, with_hint};
use super::args::Connection;
use super::hook_config::{self, Flags, Reconciled};
use crate::export::{self, Format};
use crate::grpc::client::{
    Client as Server, ClientConfig, ClientError, PolicyNotice, RemotePolicy,
};
use crate::hook::Client;
use crate::hook::install::{self, Scope};
use clap::{Args, ValueEnum};
use sha2::Digest as _;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
use toolgate_core::backoff::Backoff;

/// The files `toolgate sync` keeps, one per client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, ValueEnum)]
pub enum SyncedFile {
    /// Codex's `/etc/codex/requirements.toml`: the forbidden and prompted prefixes, and
    /// the toolgate hook as its only managed hook.
    Codex,
    /// Gemini CLI's admin-tier policy, `/etc/gemini-cli/policies/toolgate.toml`.
    Gemini,
    /// Cursor's enterprise `/etc/cursor/hooks.json`: the toolgate hook, `failClosed`.
    Cursor,
}

impl SyncedFile {
    const ALL: [SyncedFile; 3] = [SyncedFile::Codex, SyncedFile::Gemini, SyncedFile::Cursor];

    fn name(self) -> &'static str {
        match self {
            SyncedFile::Codex => "codex",
            SyncedFile::Gemini => "gemini",
            SyncedFile::Cursor => "cursor",
        }
    }

    /// The file's place, relative to the root of the file system.
    fn relative(self) -> &'static str {
        match self {
            SyncedFile::Codex => "etc/codex/requirements.toml",
            SyncedFile::Gemini => "etc/gemini-cli/policies/toolgate.toml",
            SyncedFile::Cursor => "etc/cursor/hooks.json",
        }
    }
}

#[derive(Debug, Args)]
pub struct SyncArgs {
    /// The team (default: the managed configuration's, the client profile's, else the
    /// token's own).
    #[arg(long, default_value = "")]
    team: String,
    /// The user whose effective policy the files hold (default: the client profile's,
    /// else the token's own).
    #[arg(long, default_value = "")]
    user: String,
    /// The client profile to read.
    #[arg(long, value_name = "FILE")]
    profile: Option<PathBuf>,
    /// The clients whose files are kept (repeatable; default: every one).
    #[arg(long = "client", value_enum)]
    clients: Vec<SyncedFile>,
    /// Every file under this directory instead of `/` (an image being built, a test).
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// Codex's requirements file (default: `/etc/codex/requirements.toml`).
    #[arg(long, value_name = "FILE")]
    codex_file: Option<PathBuf>,
    /// Gemini CLI's admin policy file (default: `/etc/gemini-cli/policies/toolgate.toml`).
    #[arg(long, value_name = "FILE")]
    gemini_file: Option<PathBuf>,
    /// Cursor's enterprise hooks file (default: `/etc/cursor/hooks.json`).
    #[arg(long, value_name = "FILE")]
    cursor_file: Option<PathBuf>,
    /// The toolgate binary the hooks written run (default: this binary's path).
    #[arg(long, value_name = "PATH")]
    command: Option<String>,
    /// How often the files are checked for changes made by someone else, in
    /// milliseconds.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(50..=3_600_000))]
    check_ms: u64,
    /// Deadline for connecting and each read of the policy, in milliseconds.
    #[arg(long, default_value_t = 5000)]
    timeout_ms: u64,
    /// Write the files once and exit (non-zero when the server cannot be reached).
    #[arg(long)]
    once: bool,
}

/// The largest managed file read back: far larger than any toolgate writes.
const MAX_FILE_BYTES: usize = 4 * 1024 * 1024;

/// Runs `toolgate sync`; returns the exit code. `conn` holds the command line's
/// connection flags alone (no environment).
pub fn run_sync(args: SyncArgs, conn: &Connection) -> i32 {
    let flags = Flags {
        server: conn.server.clone(),
        token: conn.token.clone(),
        token_file: conn.token_file.clone(),
        ca: conn.ca.clone(),
        cert: conn.cert.clone(),
        key: conn.key.clone(),
        team: Some(args.team.clone()).filter(|t| !t.is_empty()),
        user: Some(args.user.clone()).filter(|u| !u.is_empty()),
        profile: args.profile.clone(),
        ..Flags::default()
    };
    let (settings, trouble) = settings_of(&flags, &toolgate_env());
    if let Some(line) = hook_config::notice(&settings.ignored) {
        eprintln!("{line}");
    }
    if let Some(trouble) = trouble {
        eprintln!("error: {}", super::for_terminal(&trouble, true));
        return 1;
    }
    let targets = match targets(&args) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return 1;
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: starting the runtime: {e}");
            return 1;
        }
    };
    let mut sync = Syncer {
        settings,
        targets,
        kept: BTreeMap::new(),
        timeout: Duration::from_millis(args.timeout_ms.max(1)),
    };
    runtime.block_on(sync.run(Duration::from_millis(args.check_ms), args.once))
}

/// A file kept, and the hook command its client runs.
struct Target {
    file: SyncedFile,
    path: PathBuf,
    hook: String,
}

fn targets(args: &SyncArgs) -> Result<Vec<Target>, String> {
    let exe = match &args.command {
        Some(c) => c.clone(),
        None => shell_quote(
            &std::env::current_exe()
                .map_err(|e| {
                    format!("cannot name this binary's path for the hooks: {e}: give --command")
                })?
                .display()
                .to_string(),
        ),
    };
    let root = args.root.clone().unwrap_or_else(|| PathBuf::from("/"));
    let mut chosen = if args.clients.is_empty() {
        SyncedFile::ALL.to_vec()
    } else {
        args.clients.clone()
    };
    chosen.sort();
    chosen.dedup();
    Ok(chosen
        .into_iter()
        .map(|file| {
            let given = match file {
                SyncedFile::Codex => &args.codex_file,
                SyncedFile::Gemini => &args.gemini_file,
                SyncedFile::Cursor => &args.cursor_file,
            };
            Target {
                file,
                path: given.clone().unwrap_or_else(|| root.join(file.relative())),
                // each user's hook takes its server and credentials from the managed
                // configuration and its own profile, never this root agent's token
                hook: format!("{exe} hook {}", file.name()),
            }
        })
        .collect())
}

/// The content of `target` under `policy`, and what it cannot say.
fn render(target: &Target, policy: &RemotePolicy) -> Result<(String, Vec<String>), String> {
    let (admin, user, files) = (&policy.admin, &policy.user, &policy.file_allowlists);
    let wrong = |e: install::InstallError| e.to_string();
    match target.file {
        SyncedFile::Codex => {
            let rules = export::export(Format::CodexRequirements, admin, user, files)?;
            let text = install::merge(
                Client::Codex,
                Scope::Managed,
                &target.path,
                Some(&rules.text),
                &target.hook,
            )
            .map_err(wrong)?;
            Ok((text, rules.warnings))
        }
        SyncedFile::Gemini => {
            let out = export::export(Format::Gemini, admin, user, files)?;
            Ok((out.text, out.warnings))
        }
        SyncedFile::Cursor => {
            let text = install::merge(
                Client::Cursor,
                Scope::Managed,
                &target.path,
                None,
                &target.hook,
            )
            .map_err(wrong)?;
            Ok((text, Vec::new()))
        }
    }
}

struct Syncer {
    settings: Reconciled,
    targets: Vec<Target>,
    /// What each file was last written as (or found to be): the content to restore.
    kept: BTreeMap<PathBuf, Vec<u8>>,
    timeout: Duration,
}

impl Syncer {
    async fn run(&mut self, check_every: Duration, once: bool) -> i32 {
        let mut backoff = Backoff::new(Duration::from_millis(200), Duration::from_secs(30));
        let mut check = tokio::time::interval(check_every);
        check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let ended = self.follow(&mut check, once).await;
            match ended {
                Ok(()) => return 0,
                Err(e) => {
                    // a refusal is retried too: a revoked token may be replaced
                    report(&serde_json::json!({"event": "unreachable", "detail": e}));
                    if once {
                        eprintln!("error: {}", super::for_terminal(&e, true));
                        return 1;
                    }
                }
            }
            // the last files stay, still guarded, while the server is away
            let wait = tokio::time::sleep(backoff.next_wait());
            tokio::pin!(wait);
            loop {
                tokio::select! {
                    () = &mut wait => break,
                    _ = check.tick() => self.guard(),
                }
            }
        }
    }

    /// Follows the watch stream until it ends (an error to report) or, with `once`,
    /// until the files are written.
    async fn follow(
        &mut self,
        check: &mut tokio::time::Interval,
        once: bool,
    ) -> Result<(), String> {
        let conn = self.settings.conn.clone();
        let address = conn.server.clone();
        let hinted = |e: ClientError| with_hint(&e, &address);
        let mut conn = conn;
        super::login_refresh::refresh_if_needed(&mut conn).await?;
        let client = Server::connect(ClientConfig {
            server: conn.server,
            token: conn.token,
            token_file: conn.token_file,
            tls: conn.tls,
            team: self.settings.team.clone(),
            user: self.settings.user.clone(),
            deadline: self.timeout,
            client_kind: String::new(),
            bearer: None,
        })
        .await
        .map_err(hinted)?;
        // the stream needs the team and user named: a token's own are asked for once
        let (mut team, mut user) = (self.settings.team.clone(), self.settings.user.clone());
        if team.is_empty() || user.is_empty() {
            let policy = client
                .policy_service()
                .get_effective_policy(crate::proto::v1::GetEffectivePolicyRequest {
                    team_id: team.clone(),
                    user_id: user.clone(),
                })
                .await
                .map_err(|s| {
                    hinted(ClientError::Refused {
                        code: s.code(),
                        message: s.message().to_owned(),
                    })
                })?
                .into_inner();
            let named = policy.policy.and_then(|p| p.user).unwrap_or_default();
            if team.is_empty() {
                team = named.team_id;
            }
            if user.is_empty() {
                user = named.user_id;
            }
            if team.is_empty() || user.is_empty() {
                return Err(
                    "the policy's team and user are not known from the token: give --team and --user"
                        .into(),
                );
            }
        }
        let mut watch = client
            .watch_policy(&team, &user, None)
            .await
            .map_err(hinted)?;
        loop {
            tokio::select! {
                notice = watch.next() => match notice.map_err(hinted)? {
                    Some(PolicyNotice::Changed { .. }) => {
                        let policy = client.effective_policy().await.map_err(hinted)?;
                        self.apply(&policy);
                        if once {
                            return Ok(());
                        }
                    }
                    Some(PolicyNotice::Heartbeat) => {}
                    None => return Err(format!("toolgate server {address} ended the watch stream")),
                },
                _ = check.tick() => self.guard(),
            }
        }
    }

    /// Writes every file whose content `policy` changes.
    fn apply(&mut self, policy: &RemotePolicy) {
        for target in &self.targets {
            let (text, warnings) = match render(target, policy) {
                Ok(r) => r,
                Err(e) => {
                    // the file stays as it was: a policy that does not render is not guessed at
                    report(
                        &serde_json::json!({"event": "failed", "client": target.file.name(),
                        "path": target.path, "revision": policy.revision, "detail": e}),
                    );
                    continue;
                }
            };
            let found = read(&target.path);
            let event = match (&found, self.kept.get(&target.path)) {
                (Some(now), _) if now.as_slice() == text.as_bytes() => None,
                (now, Some(kept)) if now.as_deref() != Some(kept.as_slice()) => Some("restored"),
                _ => Some("wrote"),
            };
            let path = target.path.clone();
            let name = target.file.name();
            if let Some(event) = event {
                match write(&path, text.as_bytes()) {
                    Ok(()) => report(&serde_json::json!({"event": event, "client": name,
                        "path": path, "revision": policy.revision, "tampering": event == "restored",
                        "found_sha256": found.as_deref().map(sha256), "warnings": warnings})),
                    Err(e) => {
                        report(&serde_json::json!({"event": "failed", "client": name,
                            "path": path, "revision": policy.revision, "detail": e}));
                        continue;
                    }
                }
            }
            self.kept.insert(path, text.into_bytes());
        }
    }

    /// Restores every kept file someone else changed or removed.
    fn guard(&mut self) {
        for target in &self.targets {
            let Some(kept) = self.kept.get(&target.path) else {
                continue;
            };
            let found = read(&target.path);
            if found.as_deref() == Some(kept.as_slice()) {
                continue;
            }
            let outcome = write(&target.path, kept);
            let event = if outcome.is_ok() {
                "restored"
            } else {
                "failed"
            };
            report(&serde_json::json!({"event": event,
                "client": target.file.name(), "path": target.path, "tampering": true,
                "found_sha256": found.as_deref().map(sha256), "detail": outcome.err()}));
        }
    }
}

/// The file's bytes, or none when it is missing, unreadable or not a regular file
/// (each then rewritten).
fn read(path: &Path) -> Option<Vec<u8>> {
    crate::files::read_regular(path, MAX_FILE_BYTES).ok()
}

/// Written atomically, readable by every user (their clients read it), changed by
/// root alone.
fn write(path: &Path, bytes: &[u8]) -> Result<(), String> {
    path.parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| crate::files::write_atomic(path, crate::files::Mode::Exactly(0o644), bytes))
        .map_err(|e| format!("writing {}: {e}", path.display()))
}

fn sha256(bytes: &[u8]) -> String {
    hex::encode(sha2::Sha256::digest(bytes))
}

/// One event, one JSON line on stdout (the journal, under systemd); tampering also on
/// stderr.
fn report(event: &serde_json::Value) {
    use std::io::Write as _;
    if event["tampering"] == true {
        eprintln!(
            "toolgate sync: {} was changed by someone else and is restored",
            event["path"]
        );
    }
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{event}");
    let _ = out.flush();
}
