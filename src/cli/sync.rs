//! `toolgate sync`: the agent (run as root, e.g. by `deploy/systemd/toolgate-sync.service`)
//! that follows `WatchPolicy` and keeps the clients' managed files current: Codex's
//! `requirements.toml`, Gemini CLI's admin-tier policy and system settings (the hook,
//! beside keys that are not toolgate's) and Cursor's enterprise `hooks.json` (the hook,
//! beside others' hooks). A file is
//! written (atomically) only when its content changes; a file
//! someone else changed is restored and reported as tampering; while the server cannot
//! be reached the last files stay, still guarded. Each event is one JSON line on stdout.
//! Tampering is also reported to the server (`ReportTampering`), which audits it; reports
//! made while it cannot be reached wait, a bounded few, until it can.

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
use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::time::Duration;
use toolgate_core::backoff::Backoff;

/// The files `toolgate sync` keeps, one per client.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    ValueEnum,
    strum::IntoStaticStr,
    strum::VariantArray,
)]
#[strum(serialize_all = "kebab-case")]
pub enum SyncedFile {
    /// Codex's `/etc/codex/requirements.toml`: the forbidden and prompted prefixes, and
    /// the toolgate hook as its only managed hook.
    Codex,
    /// Gemini CLI's admin-tier policy, `/etc/gemini-cli/policies/toolgate.toml`.
    Gemini,
    /// Cursor's enterprise `/etc/cursor/hooks.json`: the toolgate hook, `failClosed`,
    /// beside other hooks (a shared file).
    Cursor,
    /// Gemini CLI's system settings, `/etc/gemini-cli/settings.json`: the toolgate hook
    /// on every tool, merged with the file's other keys.
    GeminiSettings,
}

impl SyncedFile {
    const ALL: &'static [SyncedFile] = <Self as strum::VariantArray>::VARIANTS;

    fn name(self) -> &'static str {
        self.into()
    }

    /// The client whose hook the file runs.
    fn client(self) -> Client {
        match self {
            SyncedFile::Codex => Client::Codex,
            SyncedFile::Gemini | SyncedFile::GeminiSettings => Client::Gemini,
            SyncedFile::Cursor => Client::Cursor,
        }
    }

    /// Whether the file holds keys that are not toolgate's (kept as found: only the
    /// toolgate hook in it is restored).
    fn shared(self) -> bool {
        matches!(self, SyncedFile::GeminiSettings | SyncedFile::Cursor)
    }

    /// The file's place, relative to the root of the file system.
    fn managed_file(self) -> crate::proto::v1::ManagedFile {
        use crate::proto::v1::ManagedFile;
        match self {
            SyncedFile::Codex => ManagedFile::CodexRequirements,
            SyncedFile::Gemini => ManagedFile::GeminiPolicy,
            SyncedFile::Cursor => ManagedFile::CursorHooks,
            SyncedFile::GeminiSettings => ManagedFile::GeminiSettings,
        }
    }

    fn relative(self) -> &'static str {
        match self {
            SyncedFile::Codex => "etc/codex/requirements.toml",
            SyncedFile::Gemini => "etc/gemini-cli/policies/toolgate.toml",
            SyncedFile::Cursor => "etc/cursor/hooks.json",
            SyncedFile::GeminiSettings => "etc/gemini-cli/settings.json",
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
    /// Gemini CLI's system settings file (default: `/etc/gemini-cli/settings.json`;
    /// Gemini CLI reads another when `GEMINI_CLI_SYSTEM_SETTINGS_PATH` names it).
    #[arg(long, value_name = "FILE")]
    gemini_settings_file: Option<PathBuf>,
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

/// Tampering reports held while the server cannot be reached; past it the oldest go
/// (each still in the local log).
const MAX_PENDING_REPORTS: usize = 32;

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
        pending: VecDeque::new(),
        host: host_name(),
        subject: None,
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
                SyncedFile::GeminiSettings => &args.gemini_settings_file,
            };
            Target {
                file,
                path: given.clone().unwrap_or_else(|| root.join(file.relative())),
                // each user's hook takes its server and credentials from the managed
                // configuration and its own profile, never this root agent's token
                hook: format!("{exe} hook {}", file.client().name()),
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
        // they depend on no policy: kept by `keep_shared` from what is found, other
        // hooks and keys included
        SyncedFile::Cursor | SyncedFile::GeminiSettings => Ok((merged(target, None)?, Vec::new())),
    }
}

/// Whether two texts hold the same JSON value (a file rewritten with other spacing or
/// key order is the same settings).
fn same_json(a: &[u8], b: &[u8]) -> bool {
    match (
        serde_json::from_slice::<serde_json::Value>(a),
        serde_json::from_slice::<serde_json::Value>(b),
    ) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// A shared file's text: `found` with the toolgate hook put back (and nothing else
/// changed); an error when `found` is not a JSON object.
fn merged(target: &Target, found: Option<&[u8]>) -> Result<String, String> {
    let text = match found.map(std::str::from_utf8) {
        None => None,
        Some(Ok(text)) => Some(text),
        Some(Err(_)) => return Err(format!("{} is not UTF-8", target.path.display())),
    };
    install::merge(
        target.file.client(),
        Scope::Managed,
        &target.path,
        text,
        &target.hook,
    )
    .map_err(|e| e.to_string())
}

struct Syncer {
    settings: Reconciled,
    targets: Vec<Target>,
    /// What each file was last written as (or found to be): the content to restore.
    kept: BTreeMap<PathBuf, Vec<u8>>,
    timeout: Duration,
    /// Tampering not yet reported to the server, oldest first.
    pending: VecDeque<crate::proto::v1::ReportTamperingRequest>,
    host: String,
    /// The team and user the files are kept for, once known.
    subject: Option<(String, String)>,
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
                    let message = s.message();
                    if s.code() == tonic::Code::InvalidArgument
                        && (message.starts_with("user_id") || message.starts_with("team_id"))
                    {
                        // a service's token speaks for a team, not for a user
                        return format!(
                            "the token names no {}: give --team and --user",
                            if message.starts_with("user_id") {
                                "user"
                            } else {
                                "team"
                            }
                        );
                    }
                    hinted(ClientError::Refused {
                        code: s.code(),
                        message: message.to_owned(),
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
        self.subject = Some((team.clone(), user.clone()));
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
                        self.report_pending(&client).await;
                        if once {
                            return Ok(());
                        }
                    }
                    Some(PolicyNotice::Heartbeat) => {}
                    None => return Err(format!("toolgate server {address} ended the watch stream")),
                },
                _ = check.tick() => {
                    self.guard();
                    self.report_pending(&client).await;
                }
            }
        }
    }

    /// Writes every file whose content `policy` changes.
    fn apply(&mut self, policy: &RemotePolicy) {
        let mut tampered = Vec::new();
        for target in &self.targets {
            if target.file.shared() {
                continue;
            }
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
                let outcome = write(&path, text.as_bytes());
                if event == "restored" {
                    tampered.push((target.file, path.clone(), found.clone(), outcome.is_ok()));
                }
                match outcome {
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
        for (file, path, found, restored) in tampered {
            self.note_tampering(file, &path, found.as_deref(), restored);
        }
        self.keep_shared(Some(policy.revision));
    }

    /// Puts the toolgate hook back into each shared file that lacks it (a first
    /// write, or tampering once written), keeping the file's other keys as found; a
    /// file that no longer reads is restored as last kept.
    fn keep_shared(&mut self, revision: Option<u64>) {
        let mut tampered = Vec::new();
        for target in self.targets.iter().filter(|t| t.file.shared()) {
            let kept = self.kept.get(&target.path);
            // the guard (no revision) looks only at files a policy was applied to
            if kept.is_none() && revision.is_none() {
                continue;
            }
            let found = read(&target.path);
            if kept.is_some() && found.as_deref() == kept.map(Vec::as_slice) {
                continue;
            }
            let text = match (merged(target, found.as_deref()), kept) {
                (Ok(text), _) => text.into_bytes(),
                (Err(_), Some(kept)) => kept.clone(),
                (Err(e), None) => {
                    // someone else's file toolgate never wrote: not overwritten, and
                    // reported once (until it changes)
                    report(&serde_json::json!({"event": "failed",
                        "client": target.file.name(), "path": target.path,
                        "detail": format!("{e}: make it a JSON object (no comments) for the toolgate hook to be added")}));
                    if let Some(found) = found {
                        self.kept.insert(target.path.clone(), found);
                    }
                    continue;
                }
            };
            if let Some(found) = found.as_deref().filter(|f| same_json(f, &text)) {
                // current: someone else's keys (or spacing) changed, the hook is as it was
                self.kept.insert(target.path.clone(), found.to_vec());
                continue;
            }
            let tampering = kept.is_some();
            let outcome = write(&target.path, &text);
            let event = match (&outcome, tampering) {
                (Err(_), _) => "failed",
                (Ok(()), true) => "restored",
                (Ok(()), false) => "wrote",
            };
            if tampering {
                tampered.push((
                    target.file,
                    target.path.clone(),
                    found.clone(),
                    outcome.is_ok(),
                ));
            }
            report(
                &serde_json::json!({"event": event, "client": target.file.name(),
                "path": target.path, "revision": revision, "tampering": tampering,
                "found_sha256": found.as_deref().map(sha256), "detail": outcome.as_ref().err()}),
            );
            if outcome.is_ok() {
                self.kept.insert(target.path.clone(), text);
            }
        }
        for (file, path, found, restored) in tampered {
            self.note_tampering(file, &path, found.as_deref(), restored);
        }
    }

    /// Restores every kept file someone else changed or removed.
    fn guard(&mut self) {
        self.keep_shared(None);
        let mut tampered = Vec::new();
        for target in self.targets.iter().filter(|t| !t.file.shared()) {
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
            tampered.push((
                target.file,
                target.path.clone(),
                found.clone(),
                outcome.is_ok(),
            ));
            report(&serde_json::json!({"event": event,
                "client": target.file.name(), "path": target.path, "tampering": true,
                "found_sha256": found.as_deref().map(sha256), "detail": outcome.err()}));
        }
        for (file, path, found, restored) in tampered {
            self.note_tampering(file, &path, found.as_deref(), restored);
        }
    }

    /// Queues a tampering report for the server (the oldest dropped past the bound).
    fn note_tampering(
        &mut self,
        file: SyncedFile,
        path: &Path,
        found: Option<&[u8]>,
        restored: bool,
    ) {
        if self.pending.len() >= MAX_PENDING_REPORTS
            && let Some(lost) = self.pending.pop_front()
        {
            report(
                &serde_json::json!({"event": "report_dropped", "path": lost.path,
                "detail": format!("more than {MAX_PENDING_REPORTS} tampering reports wait for the server")}),
            );
        }
        // the path as the server reads it: absolute, so a relative --root is resolved
        let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        self.pending
            .push_back(crate::proto::v1::ReportTamperingRequest {
                team_id: String::new(),
                user_id: String::new(),
                file: file.managed_file() as i32,
                path: path.display().to_string(),
                host: self.host.clone(),
                found_sha256: found.map(sha256).unwrap_or_default(),
                restored,
            });
    }

    /// Sends the reports waiting, oldest first, until one cannot reach the server
    /// (it waits for the next try); a report the server refuses is dropped, logged.
    async fn report_pending(&mut self, client: &Server) {
        let Some((team, user)) = self.subject.clone() else {
            return;
        };
        while let Some(mut request) = self.pending.pop_front() {
            request.team_id.clone_from(&team);
            request.user_id.clone_from(&user);
            let path = request.path.clone();
            match client.report_tampering(request.clone()).await {
                Ok(recorded) => report(&serde_json::json!({"event": "tampering_reported",
                    "path": path, "recorded": recorded})),
                Err(ClientError::Refused { code, message })
                    if !matches!(
                        code,
                        tonic::Code::Unavailable | tonic::Code::Unauthenticated
                    ) =>
                {
                    report(&serde_json::json!({"event": "report_refused", "path": path,
                        "detail": format!("{code:?}: {message}")}));
                }
                Err(e) => {
                    report(&serde_json::json!({"event": "report_failed", "path": path,
                        "detail": e.to_string()}));
                    self.pending.push_front(request);
                    return;
                }
            }
        }
    }
}

/// The file's bytes, or none when it is missing, unreadable or not a regular file
/// (each then rewritten).
fn read(path: &Path) -> Option<Vec<u8>> {
    toolgate_files::read_regular(path, MAX_FILE_BYTES).ok()
}

/// Written atomically, readable by every user (their clients read it), changed by
/// root alone.
fn write(path: &Path, bytes: &[u8]) -> Result<(), String> {
    path.parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| {
            toolgate_files::write_atomic(path, toolgate_files::Mode::Exactly(0o644), bytes)
        })
        .map_err(|e| format!("writing {}: {e}", path.display()))
}

/// This machine's name as a tampering report carries it: letters, digits, `.`, `-`
/// and `_` only, at most 253 bytes (empty when unknown).
fn host_name() -> String {
    #[cfg(unix)]
    let name = nix::unistd::gethostname()
        .ok()
        .and_then(|n| n.into_string().ok())
        .unwrap_or_default();
    #[cfg(not(unix))]
    let name = std::env::var("COMPUTERNAME").unwrap_or_default();
    name.chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
        .take(253)
        .collect()
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
