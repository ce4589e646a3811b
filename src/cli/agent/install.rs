//! `toolgate hook install <client>`: the client's hook configuration written (merged
//! into its settings file, atomically), with the flags that tell the hook where to ask
//! and as whom; a managed install pins those in the managed configuration instead.

use super::{ClientName, ScopeArg};
use crate::cli::connection::Connection;
use crate::cli::hook_config;
use crate::hook::Client;
use crate::hook::install::{self, InstallScope};
use clap::Args;
use std::path::{Path, PathBuf};

#[derive(Debug, Args)]
pub struct InstallArgs {
    #[arg(value_enum)]
    client: ClientName,
    #[arg(long, value_enum, default_value_t = ScopeArg::User)]
    scope: ScopeArg,
    /// Write under this directory instead of the home directory (user), the current
    /// directory (project) or `/` (managed).
    #[arg(long)]
    path: Option<PathBuf>,
    /// The command the client runs: a full command, or the path of the toolgate
    /// binary as the client's machine has it (`hook <client>` is added). Default: this
    /// binary's path; required with `--scope managed`, whose file is deployed to other
    /// machines.
    #[arg(long)]
    command: Option<String>,
    /// The team the hook asks for (default: the token's own).
    #[arg(long, env = "TOOLGATE_TEAM")]
    team: Option<String>,
    /// The user the hook asks for (default: the token's own).
    #[arg(long, env = "TOOLGATE_USER")]
    user: Option<String>,
    /// Print what would be written, write nothing.
    #[arg(long)]
    dry_run: bool,
    /// With central approvals on: how long the hook may wait for a person's answer,
    /// in seconds (at least the team's approval deadline). The client's hook timeout
    /// is set 30 seconds longer, since a client whose hook times out runs the call.
    #[arg(long, value_name = "SECONDS")]
    approval_wait: Option<u64>,
    /// Claude Code only: also send its own telemetry's logs to toolgate
    /// (`OTEL_LOGS_EXPORTER=otlp` to the server's `/v1/logs`), so the decision log
    /// shows what Claude Code did with each answer. The token is read by
    /// `toolgate hook otel-headers`, never written into the settings.
    #[arg(long)]
    telemetry: bool,
}

/// The settings file's path for `client` at `scope` under `--path` or the default base.
pub(super) fn install_target(
    client: Client,
    scope: ScopeArg,
    path: &Option<PathBuf>,
) -> Result<(InstallScope, PathBuf), String> {
    let scope = match scope {
        ScopeArg::User => InstallScope::User,
        ScopeArg::Project => InstallScope::Project,
        ScopeArg::Managed => InstallScope::Managed,
    };
    let base = match (path, scope) {
        (Some(p), _) => p.clone(),
        (None, InstallScope::User) => match std::env::var_os("HOME") {
            Some(h) => PathBuf::from(h),
            None => return Err("HOME is not set: give --path DIR".into()),
        },
        (None, InstallScope::Project) => PathBuf::from("."),
        (None, InstallScope::Managed) => PathBuf::from("/"),
    };
    Ok((scope, install::target(client, scope, &base)))
}

/// `'…'` around anything a shell would split or expand.
pub(in crate::cli) fn shell_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:=@,+%".contains(&b));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// What the installed hook is told, as flags of its command (never `env`, which a
/// repository's settings can override): where the server is, the token's file, the
/// team and user, the CA, the client profile. Never a token itself: settings files
/// are commonly world-readable.
#[derive(Debug, Default)]
pub(in crate::cli) struct HookSettings {
    pub(in crate::cli) server: Option<String>,
    pub(in crate::cli) token_file: Option<PathBuf>,
    pub(in crate::cli) team: Option<String>,
    pub(in crate::cli) user: Option<String>,
    pub(in crate::cli) ca: Option<PathBuf>,
    pub(in crate::cli) cert: Option<PathBuf>,
    pub(in crate::cli) key: Option<PathBuf>,
    pub(in crate::cli) profile: Option<PathBuf>,
    pub(in crate::cli) wait_ms: Option<u64>,
}

impl HookSettings {
    /// As flags after `hook <client>`.
    pub(in crate::cli) fn flags(&self) -> String {
        let path = |p: &Option<PathBuf>| p.as_ref().map(|p| p.display().to_string());
        let mut flags = String::new();
        for (flag, value) in [
            ("--server", self.server.clone()),
            ("--token-file", path(&self.token_file)),
            ("--team", self.team.clone()),
            ("--user", self.user.clone()),
            ("--ca", path(&self.ca)),
            ("--cert", path(&self.cert)),
            ("--key", path(&self.key)),
            ("--profile", path(&self.profile)),
            ("--wait-ms", self.wait_ms.map(|w| w.to_string())),
        ] {
            if let Some(v) = value.filter(|v| !v.is_empty()) {
                flags.push_str(&format!(" {flag} {}", shell_quote(&v)));
            }
        }
        flags
    }
}

/// A file named on the command line, as the hook (run elsewhere) will find it.
pub(in crate::cli) fn absolute(
    flag: &str,
    path: &Option<PathBuf>,
) -> Result<Option<PathBuf>, String> {
    path.as_ref()
        .map(|p| {
            std::path::absolute(p)
                .map_err(|e| format!("{flag} {}: {e}: give the file's path", p.display()))
        })
        .transpose()
}

/// A token file others may read is refused, as the server refuses its own.
pub(in crate::cli) fn check_token_file(path: &Path) -> Result<PathBuf, String> {
    let absolute = std::path::absolute(path).map_err(|e| {
        format!(
            "--token-file {}: {e}: give the token file's path",
            path.display()
        )
    })?;
    let meta = std::fs::metadata(&absolute).map_err(|e| {
        format!(
            "--token-file {}: {e}: give the path of a file holding the token",
            path.display()
        )
    })?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(format!(
                "--token-file {}: others may read it (mode {mode:o}): run `chmod 600 {}` and install again",
                path.display(),
                path.display()
            ));
        }
    }
    #[cfg(not(unix))]
    let _ = meta;
    Ok(absolute)
}

/// How much longer than the hook's approval wait the client's hook timeout is.
const APPROVAL_MARGIN_SECS: u64 = 30;

pub(super) fn install_hook(args: InstallArgs, conn: &Connection) -> i32 {
    match install(args, conn) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error: {e}");
            1
        }
    }
}

fn install(args: InstallArgs, conn: &Connection) -> Result<(), String> {
    let client = Client::from(args.client);
    let (scope, path) = install_target(client, args.scope, &args.path)?;
    let managed = scope == InstallScope::Managed;
    if managed && args.command.is_none() {
        return Err(format!(
            "--command is required with --scope managed: the file is deployed to other machines, where this binary's path ({}) may not exist; give the toolgate binary's path there, e.g. --command /usr/local/bin/toolgate",
            std::env::current_exe()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        ));
    }
    let mut settings = HookSettings {
        server: conn.server.clone(),
        token_file: None,
        team: args.team.clone(),
        user: args.user.clone(),
        ca: absolute("--ca", &conn.ca)?,
        cert: absolute("--cert", &conn.cert)?,
        key: absolute("--key", &conn.key)?,
        profile: None,
        wait_ms: args.approval_wait.map(|w| w.saturating_mul(1000)),
    };
    if let Some(file) = &conn.token_file {
        settings.token_file = Some(check_token_file(file)?);
    }
    if let Some(token) = conn.token.as_ref().filter(|t| !t.trim().is_empty()) {
        if managed {
            return Err("--token (or TOOLGATE_TOKEN) cannot go into a managed install, which every user shares: give each user a token and let them run `toolgate login`, or give --token-file with a path each machine has".into());
        }
        // the token itself goes to the 0600 client profile, which the hook reads
        if !args.dry_run {
            let at = crate::cli::profile::path().map_err(|e| e.to_string())?;
            let mut profile = crate::cli::profile::load_from(&at).map_err(|e| e.to_string())?;
            profile.server = settings.server.clone().or(profile.server);
            profile.token = Some(token.trim().to_owned());
            profile.token_file = None;
            if settings.team.is_some() {
                profile.team = settings.team.clone();
            }
            if settings.user.is_some() {
                profile.user = settings.user.clone();
            }
            crate::cli::profile::save(&at, &profile).map_err(|e| e.to_string())?;
            println!(
                "saved the token in the client profile {} (mode 0600)",
                at.display()
            );
        }
    }
    let mut command = args.command.clone().unwrap_or_else(|| {
        let exe = std::env::current_exe()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| "toolgate".into());
        shell_quote(&exe)
    });
    // a bare binary path gets the hook's subcommand
    if !command.contains(" hook ") {
        command = format!("{command} hook {}", client.name());
    }
    // a profile the hook would not find by itself (`TOOLGATE_PROFILE`, another
    // XDG_CONFIG_HOME or HOME at install time) is named; never in a managed file,
    // where each user's own is read
    if !managed {
        settings.profile = hook_config::profile_flag_needed();
    }
    // a managed install pins where to ask in the managed configuration, which wins
    // over any flag, so the command carries only what that file has no key for
    let pinned = if managed {
        Some(managed_configuration(&args.path, &mut settings)?)
    } else {
        None
    };
    command.push_str(&settings.flags());
    let timeout = args.approval_wait.map_or(install::TIMEOUT_SECS, |w| {
        w.saturating_add(APPROVAL_MARGIN_SECS)
    });
    let existing = match std::fs::read_to_string(&path) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(format!("reading {}: {e}", path.display())),
    };
    let mut text =
        install::merge_with_timeout(client, scope, &path, existing.as_deref(), &command, timeout)
            .map_err(|e| e.to_string())?;
    if args.telemetry {
        if client != Client::ClaudeCode {
            return Err(format!(
                "--telemetry sets up Claude Code's telemetry; {} sends none toolgate reads: leave the flag out",
                client.name()
            ));
        }
        // where the hook asks: the server given, else the profile's
        let server = conn
            .server
            .clone()
            .or_else(|| crate::cli::profile::load().ok().and_then(|p| p.server))
            .unwrap_or_else(|| crate::cli::connection::DEFAULT_SERVER.to_owned());
        let helper = command.replacen(&format!(" hook {}", client.name()), " hook otel-headers", 1);
        text = install::with_telemetry(&text, &telemetry_endpoint(&server), &helper)
            .map_err(|e| e.to_string())?;
    }
    if !args.dry_run {
        let written = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            // never in place: a crash mid-write must not truncate the client's settings
            .and_then(|()| {
                toolgate_files::write_atomic(
                    &path,
                    toolgate_files::Mode::KeepTarget,
                    text.as_bytes(),
                )
            });
        if let Err(e) = written {
            return Err(format!("writing {}: {e}", path.display()));
        }
    }
    let verb = if args.dry_run { "would write" } else { "wrote" };
    if let Some((at, text)) = &pinned {
        if !args.dry_run {
            write_managed_configuration(at, text)?;
        }
        println!("{verb} {}:\n{text}", at.display());
    }
    println!("{verb} {}:\n{text}", path.display());
    if !managed
        && settings.server.is_none()
        && conn.token.is_none()
        && settings.token_file.is_none()
    {
        let profile = crate::cli::profile::load().unwrap_or_default();
        if profile.server.is_none() && profile.token.is_none() && profile.token_file.is_none() {
            eprintln!(
                "warning: no server or token given: the hook will ask {} with no token; give --server and --token-file, or run `toolgate login`",
                crate::cli::connection::DEFAULT_SERVER
            );
        }
    }
    if !args.dry_run {
        println!(
            "check it with: toolgate hook check {}{}",
            client.name(),
            match args.scope {
                ScopeArg::User => String::new(),
                ScopeArg::Project => " --scope project".into(),
                ScopeArg::Managed => " --scope managed".into(),
            }
        );
    }
    Ok(())
}

/// OTLP/HTTP's logs URL on `server` (`HOST:PORT` or a URL, as `--server` takes it).
fn telemetry_endpoint(server: &str) -> String {
    let base = server.trim_end_matches('/');
    if base.contains("://") {
        format!("{base}/v1/logs")
    } else {
        format!("http://{base}/v1/logs")
    }
}

/// Where a managed install writes the managed configuration: under `--path` as the
/// client's file is (so a test or an image build never touches this machine's
/// `/etc`), else where the hook reads it.
fn managed_configuration_path(path: &Option<PathBuf>) -> PathBuf {
    match path {
        Some(base) => base.join(
            Path::new(hook_config::MANAGED_PATH)
                .strip_prefix("/")
                .unwrap_or(Path::new(hook_config::MANAGED_PATH)),
        ),
        None => hook_config::managed_path(),
    }
}

/// The managed configuration a managed install leaves: the one there with the server,
/// CA, token file and team given over it (its other keys kept), and the path and
/// text to write. Those settings leave the hook command's flags.
pub(in crate::cli) fn managed_configuration(
    path: &Option<PathBuf>,
    settings: &mut HookSettings,
) -> Result<(PathBuf, String), String> {
    let at = managed_configuration_path(path);
    let mut pinned = match std::fs::read_to_string(&at) {
        Ok(text) => hook_config::parse_managed(&text).map_err(|e| {
            format!(
                "the managed client configuration {} {e}: fix or remove it, then install again",
                at.display()
            )
        })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => hook_config::Managed::default(),
        Err(e) => return Err(format!("reading {}: {e}", at.display())),
    };
    if let Some(server) = settings.server.take() {
        pinned.server = Some(server);
    }
    if let Some(ca) = settings.ca.take() {
        pinned.ca = Some(ca);
    }
    if let Some(token_file) = settings.token_file.take() {
        pinned.token_file = Some(token_file);
    }
    if let Some(team) = settings.team.take().filter(|t| !t.is_empty()) {
        pinned.team = Some(team);
    }
    Ok((at, hook_config::managed_text(&pinned)))
}

/// The managed configuration written atomically, readable by every user (their hooks
/// read it) and writable by its owner alone, as the hook requires.
pub(in crate::cli) fn write_managed_configuration(at: &Path, text: &str) -> Result<(), String> {
    at.parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| {
            toolgate_files::write_atomic(at, toolgate_files::Mode::Exactly(0o644), text.as_bytes())
        })
        .map_err(|e| format!("writing {}: {e}", at.display()))
}
