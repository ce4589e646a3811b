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

mod files;
mod syncer;

use super::agent::install::shell_quote;
use super::connection::Connection;
use super::hook_config::{self, Flags, settings_of, toolgate_env};
use clap::Args;
use files::{SyncedFile, Target};
use std::path::PathBuf;
use std::time::Duration;
use syncer::Syncer;

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

/// Runs `toolgate sync`; returns the exit code. `conn` holds the command line's
/// connection flags alone (no environment).
pub fn run_sync(args: SyncArgs, conn: &Connection) -> i32 {
    let flags = Flags {
        ..Flags::of_connection(conn, &args.team, &args.user, args.profile.clone())
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
    let mut sync = Syncer::new(
        settings,
        targets,
        Duration::from_millis(args.timeout_ms.max(1)),
    );
    runtime.block_on(sync.run(Duration::from_millis(args.check_ms), args.once))
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
