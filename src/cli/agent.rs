//! `toolgate hook <client>` and `toolgate export <client>`: the commands agent clients
//! run. The logic is the library's (`toolgate::hook`, `toolgate::export`); this is
//! the I/O around it: stdin, files, the server call, the exit code.

use super::args::{Connection, Resolved};
use super::hook_config::{self, Flags, Reconciled};
use crate::export::{self, Format};
use crate::grpc::client::{ApprovalAsk, Client as Server, ClientConfig, ClientError};
use crate::hook::install::{self, Scope};
use crate::hook::{self, AskAs, Client, McpDirectory, Options, Reply, Trust, Verdict};
use clap::{Args, Subcommand, ValueEnum};
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ClientName {
    ClaudeCode,
    Codex,
    Cursor,
    Gemini,
}

impl From<ClientName> for Client {
    fn from(c: ClientName) -> Self {
        match c {
            ClientName::ClaudeCode => Client::ClaudeCode,
            ClientName::Codex => Client::Codex,
            ClientName::Cursor => Client::Cursor,
            ClientName::Gemini => Client::Gemini,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum HookCommand {
    /// Claude Code's PreToolUse hook.
    ClaudeCode(HookArgs),
    /// Codex CLI's PreToolUse hook (only deny is enforced there).
    Codex(HookArgs),
    /// Cursor's beforeShellExecution / beforeMCPExecution hook.
    Cursor(HookArgs),
    /// Gemini CLI's BeforeTool hook.
    Gemini(HookArgs),
    /// Writes the client's hook configuration, with the server, token file, team and
    /// user the hook needs, and prints what it wrote.
    Install(InstallArgs),
    /// Runs the installed hook once on a harmless sample call and says whether it
    /// reaches the server, as whom, and what the call gets.
    Check(CheckArgs),
    /// Prints the `Authorization` header for Claude Code's telemetry to toolgate, as
    /// JSON (its `otelHeadersHelper`, which `hook install --telemetry` sets), from the
    /// settings the hook reads: the token never goes into a settings file.
    OtelHeaders(HookArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AskArg {
    Ask,
    Deny,
    Defer,
}

/// A hook's flags. None is read from the environment (a repository's client settings
/// can set it): `hook install` writes them into the hook command.
#[derive(Debug, Args)]
pub struct HookArgs {
    /// The team (default: the client profile's, else the token's own).
    #[arg(long, default_value = "")]
    team: String,
    /// The user (default: the client profile's, else the token's own).
    #[arg(long, default_value = "")]
    user: String,
    /// The client profile to read (default: `~/.config/toolgate/client.toml` in the
    /// home directory of the user the hook runs as).
    #[arg(long, value_name = "FILE")]
    profile: Option<PathBuf>,
    /// Answer ALLOW with no opinion, so the client's own rules still apply.
    #[arg(long)]
    no_grant: bool,
    /// How to answer ASK (default: ask; deny for Codex, which cannot ask).
    #[arg(long, value_enum)]
    ask: Option<AskArg>,
    /// Let the call run when no decision can be made (default: block it).
    #[arg(long)]
    fail_open: bool,
    /// Deadline for reaching the server and deciding, in milliseconds.
    #[arg(long, default_value_t = hook_config::DEFAULT_TIMEOUT_MS)]
    timeout_ms: u64,
    /// Append one line per call to this file.
    #[arg(long)]
    log: Option<PathBuf>,
    /// How long the hook may wait for a person to answer an ASK the team sends to
    /// its approvers, in milliseconds; 0 (the default) never waits, and the ASK is
    /// answered as before. Keep it below the client's own hook timeout (`hook install
    /// --approval-wait` sets both).
    #[arg(long, default_value_t = 0)]
    wait_ms: u64,
    /// Whether nobody at the client can answer an ASK (default: read from the client:
    /// Codex never can, Claude Code in `-p` mode cannot).
    #[arg(long, num_args = 0..=1, default_missing_value = "true")]
    headless: Option<bool>,
    /// Names a Cursor MCP server by its URL or command: `URL_OR_COMMAND=NAME`
    /// (repeatable; also read from the workspace's and the user's .cursor/mcp.json).
    #[arg(long = "mcp-server", value_name = "URL_OR_COMMAND=NAME")]
    mcp_server: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ScopeArg {
    User,
    Project,
    Managed,
}

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

#[derive(Debug, Args)]
pub struct CheckArgs {
    #[arg(value_enum)]
    client: ClientName,
    #[arg(long, value_enum, default_value_t = ScopeArg::User)]
    scope: ScopeArg,
    /// Look under this directory instead of the home directory (user), the current
    /// directory (project) or `/` (managed).
    #[arg(long)]
    path: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormArg {
    /// Codex `.rules` (default for codex).
    Rules,
    /// Codex `requirements.toml` `[rules]`.
    Requirements,
    /// Cursor CLI permissions (default for cursor).
    Cli,
    /// Cursor `permissions.json` allowlists.
    Allowlists,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    #[arg(value_enum)]
    client: ClientName,
    #[arg(long, env = "TOOLGATE_TEAM", default_value = "")]
    team: String,
    #[arg(long, env = "TOOLGATE_USER", default_value = "")]
    user: String,
    /// Which of the client's files (codex: rules | requirements; cursor: cli | allowlists).
    #[arg(long, value_enum)]
    form: Option<FormArg>,
}

impl HookCommand {
    /// Whether this runs a client's hook (not `install` or `check`): its settings are
    /// then read from flags alone.
    pub fn runs_hook(&self) -> bool {
        !matches!(self, HookCommand::Install(_) | HookCommand::Check(_))
    }
}

impl HookArgs {
    /// The flags as the hook's settings read them; `conn` holds the command line's
    /// connection flags alone.
    fn flags(&self, conn: &Connection) -> Flags {
        Flags {
            server: conn.server.clone(),
            token: conn.token.clone(),
            token_file: conn.token_file.clone(),
            ca: conn.ca.clone(),
            cert: conn.cert.clone(),
            key: conn.key.clone(),
            team: Some(self.team.clone()).filter(|t| !t.is_empty()),
            user: Some(self.user.clone()).filter(|u| !u.is_empty()),
            profile: self.profile.clone(),
            ask: self.ask.map(|a| {
                match a {
                    AskArg::Ask => "ask",
                    AskArg::Deny => "deny",
                    AskArg::Defer => "defer",
                }
                .to_owned()
            }),
            fail_open: self.fail_open,
            timeout_ms: Some(self.timeout_ms),
            wait_ms: Some(self.wait_ms),
            log: self.log.clone(),
            headless: self.headless,
        }
    }
}

/// The environment variables the hook compares with its settings (never uses).
pub(super) fn toolgate_env() -> Vec<(String, String)> {
    std::env::vars()
        .filter(|(k, _)| k.starts_with("TOOLGATE_"))
        .collect()
}

/// The hook's settings from the managed configuration, `flags` and the client
/// profile; the trouble of either file, if any, beside them (the hook then answers
/// with a failure, and a refused managed configuration never fails open).
pub(super) fn settings_of(flags: &Flags, env: &[(String, String)]) -> (Reconciled, Option<String>) {
    let managed = hook_config::load_managed(&hook_config::managed_path());
    let (managed, managed_trouble) = match managed {
        Ok(m) => (m.unwrap_or_default(), None),
        Err(e) => (
            hook_config::Managed {
                fail_open: Some(false),
                ..Default::default()
            },
            Some(e),
        ),
    };
    let path = hook_config::profile_path(flags.profile.as_deref());
    let loaded = path
        .as_deref()
        .map(hook_config::load_profile)
        .transpose()
        .map(Option::unwrap_or_default);
    let (profile, profile_trouble) = match loaded {
        Ok(profile) => (profile, None),
        Err(e) => (Default::default(), Some(e.to_string())),
    };
    (
        hook_config::reconcile(&managed, flags, profile, path.as_deref(), env),
        managed_trouble.or(profile_trouble),
    )
}

/// `toolgate hook otel-headers`: `{"Authorization": "Bearer TOKEN"}` from the hook's
/// own settings (managed configuration, flags, profile), for Claude Code's
/// `otelHeadersHelper`; exit 1, saying why on stderr, without a token.
fn otel_headers(args: &HookArgs, conn: &Connection) -> i32 {
    let (settings, trouble) = settings_of(&args.flags(conn), &toolgate_env());
    if let Some(e) = trouble {
        eprintln!("error: {e}");
        return 1;
    }
    let config = ClientConfig {
        token: settings.conn.token.clone(),
        token_file: settings.conn.token_file.clone(),
        ..ClientConfig::default()
    };
    match config.read_token() {
        Ok(Some(token)) => {
            println!(
                "{}",
                serde_json::json!({ "Authorization": format!("Bearer {}", token.trim()) })
            );
            0
        }
        Ok(None) => {
            eprintln!(
                "error: no token for the telemetry: give --token-file, or run `toolgate login`"
            );
            1
        }
        Err(e) => {
            eprintln!("error: {e}");
            1
        }
    }
}

/// Runs a hook command; returns the exit code. Never panics out, never errors out.
/// `conn` holds the connection flags of the command line alone (no environment).
pub fn run_hook(command: HookCommand, conn: &Connection) -> i32 {
    let (client, args) = match command {
        HookCommand::ClaudeCode(a) => (Client::ClaudeCode, a),
        HookCommand::Codex(a) => (Client::Codex, a),
        HookCommand::Cursor(a) => (Client::Cursor, a),
        HookCommand::Gemini(a) => (Client::Gemini, a),
        HookCommand::Install(a) => return install_hook(a, conn),
        HookCommand::Check(a) => return check_hook(a),
        HookCommand::OtelHeaders(a) => return otel_headers(&a, conn),
    };
    let options = Options {
        no_grant: args.no_grant,
        ask: args.ask.map(|a| match a {
            AskArg::Ask => AskAs::Ask,
            AskArg::Deny => AskAs::Deny,
            AskArg::Defer => AskAs::Defer,
        }),
        fail_open: args.fail_open,
    };
    // a panic's message is reported in the reply, not printed on its own
    std::panic::set_hook(Box::new(|_| {}));
    let log = args.log.clone();
    let env = toolgate_env();
    let mut notice = None;
    let mut options = options;
    let mut reply = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let (settings, trouble) = settings_of(&args.flags(conn), &env);
        notice = hook_config::notice(&settings.ignored);
        // the managed configuration's answer to an ASK and fail-open win over the flags
        options.fail_open = settings.fail_open;
        options.ask = match settings.ask.as_deref() {
            Some("ask") => Some(AskAs::Ask),
            Some("deny") => Some(AskAs::Deny),
            Some("defer") => Some(AskAs::Defer),
            _ => None,
        };
        match trouble {
            Some(e) => hook::failure(client, &e, &options),
            None => decide(client, &args, &settings, &options),
        }
    }))
    .unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        hook::failure(client, &format!("the hook panicked: {what}"), &options)
    });
    if let Some(line) = notice {
        reply.stderr = format!("{line}\n{}", reply.stderr);
    }
    emit(&reply, log.as_deref());
    reply.exit
}

fn decide(client: Client, args: &HookArgs, settings: &Reconciled, options: &Options) -> Reply {
    let mut input = Vec::new();
    let limit = hook::MAX_INPUT_BYTES as u64 + 1;
    if let Err(e) = std::io::stdin().take(limit).read_to_end(&mut input) {
        return hook::failure(client, &format!("reading stdin: {e}"), options);
    }
    let directory = if client == Client::Cursor {
        cursor_directory(&input, &args.mcp_server)
    } else {
        McpDirectory::default()
    };
    let mut parsed = match hook::parse(client, &input, &directory) {
        Ok(p) => p,
        Err(e) => return hook::failure(client, &e.to_string(), options),
    };
    let conn = settings.conn.clone();
    let sso = conn.sso.is_some().then(|| conn.clone());
    let server = conn.server.clone();
    let context = (parsed.agent.clone(), parsed.args.clone());
    let config = ClientConfig {
        team: settings.team.clone(),
        user: settings.user.clone(),
        tls: conn.tls,
        server: conn.server,
        token: conn.token,
        token_file: conn.token_file,
        // the whole call is bounded below; the client's own step deadlines are wider,
        // so the answer says which deadline passed the same way every time
        deadline: Duration::from_millis(args.timeout_ms.max(1)) * 2,
        // `hook check`'s sample call is recorded as a check, not as the agent's call
        client_kind: if parsed.session.as_deref() == Some(CHECK_SESSION) {
            CHECK_CLIENT.to_owned()
        } else {
            client.name().to_owned()
        },
        bearer: None,
    };
    // one call: a single-threaded runtime starts in microseconds
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => return hook::failure(client, &format!("starting the runtime: {e}"), options),
    };
    // one deadline for connecting and deciding together
    let deadline = Duration::from_millis(args.timeout_ms.max(1));
    // a call read two ways is not sent to approvers: one answer could not cover both
    let ask = (args.wait_ms > 0 && parsed.also.is_empty()).then(|| ApprovalAsk {
        interactive: interactive(client, args.headless),
        client: client.name().to_owned(),
        session_id: parsed.session.clone().unwrap_or_default(),
    });
    let (team, user) = (config.team.clone(), config.user.clone());
    let decided = runtime.block_on(async {
        let started = tokio::time::Instant::now();
        let first = tokio::time::timeout(deadline, async {
            // a sign-in's token nearing its expiry is refreshed first; a refusal is
            // the hook's failure (fail closed), never a call without a token
            let mut config = config;
            if let Some(mut sso) = sso {
                super::login_refresh::refresh_if_needed(&mut sso)
                    .await
                    .map_err(crate::grpc::client::ClientError::Config)?;
                config.token = sso.token;
            }
            let server = Server::connect(config)
                .await?
                .for_tool_use(parsed.tool_use_id.as_deref());
            let mut decided = match &ask {
                Some(ask) => {
                    server
                        .evaluate_waiting(&team, &user, &parsed.call, Some(&context), ask)
                        .await?
                }
                None => server.evaluate_by(&parsed.call, Some(&context)).await?,
            };
            // another reading of the call (a server two configurations name): the
            // strictest answer stands
            for call in &parsed.also {
                let other = server.evaluate_by(call, Some(&context)).await?;
                if strictness(other.outcome) > strictness(decided.outcome) {
                    decided = other;
                }
            }
            Ok::<_, crate::grpc::client::ClientError>((server, decided))
        })
        .await;
        match first {
            // sent to the approvers: wait for the answer, within the hook's own budget
            Ok(Ok((server, d))) => match d.approval.clone() {
                Some(ticket) => {
                    let give_up = started + Duration::from_millis(args.wait_ms);
                    Ok(Ok(server.await_answer(&ticket, give_up).await))
                }
                None => Ok(Ok(d)),
            },
            Ok(Err(e)) => Ok(Err(e)),
            Err(e) => Err(e),
        }
    });
    match decided {
        Err(_) => hook::failure(
            client,
            &format!(
                "the toolgate server did not decide within {} ms",
                deadline.as_millis()
            ),
            options,
        ),
        Ok(Err(e)) => hook::failure(client, &with_hint(&e, &server), options),
        Ok(Ok(d)) => {
            // an ALLOW stands only if what the call writes lands where the line says
            if d.outcome == crate::policy::Outcome::Allow && parsed.hold.is_none() {
                let cwd = parsed.args.cwd.clone().unwrap_or_default();
                let paths =
                    hook::written_paths(&parsed, parsed.args.tool_input.as_ref(), &d.stays_inside);
                parsed.hold = paths
                    .iter()
                    .find_map(|path| landing(Path::new(&cwd), Path::new(path)));
            }
            hook::reply(
                client,
                // what the hook sees of the call's own files can only make it stricter
                &hook::held(
                    &parsed,
                    Verdict {
                        outcome: d.outcome,
                        reason: d.reason,
                        // nothing was ever written for the team: most likely a misspelt id
                        message: if d.revision == 0 {
                            format!("{}; {}", no_settings(&team), d.message)
                        } else {
                            d.message
                        },
                        revision: d.revision,
                    },
                ),
                parsed.note.as_deref(),
                options,
            )
        }
    }
}

/// Where a path the call writes inside the working directory really lands, read
/// from the files (the server cannot see them): `None` when it stays inside and out
/// of protected places, else why not. A symbolic link on the way can take it out of
/// the directory or into `.git/`; a directory holding `config`, `HEAD` and
/// `objects/` is a repository's metadata, whose hooks and configuration run code.
fn landing(cwd: &Path, path: &Path) -> Option<String> {
    let shown = path.display();
    // a directory that does not exist holds no link and no metadata to land in
    let root = std::fs::canonicalize(cwd).ok()?;
    // the longest part of the path that exists, resolved; the rest is created
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    while std::fs::symlink_metadata(&existing).is_err() {
        let Some(name) = existing.file_name().map(std::ffi::OsStr::to_owned) else {
            break;
        };
        rest.push(name);
        if !existing.pop() {
            break;
        }
    }
    let Ok(mut real) = std::fs::canonicalize(&existing) else {
        return Some(format!(
            "writes {shown}, which cannot be resolved to check where it lands"
        ));
    };
    for name in rest.iter().rev() {
        real.push(name);
    }
    let Ok(inside) = real.strip_prefix(&root) else {
        return Some(format!(
            "writes {shown}, which a symbolic link takes to {}, outside the working directory",
            real.display()
        ));
    };
    if let crate::policy::Place::Protected(name) =
        crate::policy::place_of(&inside.to_string_lossy(), Some(&root.to_string_lossy()))
    {
        return Some(format!(
            "writes {shown}, which lands in {} (a protected path: {name})",
            real.display()
        ));
    }
    let mut dir = real.parent();
    while let Some(d) = dir.filter(|d| d.starts_with(&root)) {
        if d.join("HEAD").is_file() && d.join("config").is_file() && d.join("objects").is_dir() {
            return Some(format!(
                "writes {shown}, inside {}, a repository's metadata (config, HEAD, objects/), whose hooks and configuration run code",
                d.display()
            ));
        }
        dir = d.parent();
    }
    None
}

fn interactive(client: Client, headless: Option<bool>) -> Option<bool> {
    if let Some(headless) = headless {
        return Some(!headless);
    }
    match client {
        Client::Codex => Some(false),
        Client::ClaudeCode => match std::env::var("CLAUDE_CODE_ENTRYPOINT").ok().as_deref() {
            Some("sdk-cli" | "sdk-ts" | "sdk-py" | "claude-code-github-action") => Some(false),
            Some("cli") => Some(true),
            _ => None,
        },
        Client::Cursor | Client::Gemini => None,
    }
}

/// The command's own team or user, else the profile's.
fn or_profile(given: &str, profile: &Option<String>) -> String {
    if given.is_empty() {
        profile.clone().unwrap_or_default()
    } else {
        given.to_owned()
    }
}

/// The error, and which flag would fix it: the server's own message names the request
/// field (`team_id`), which the person reading a blocked call cannot set.
pub fn with_hint(e: &ClientError, server: &str) -> String {
    let hint = match e {
        ClientError::Unreachable { .. } | ClientError::Timeout { .. } => format!(
            "is the server running at {server}? give --server to `toolgate hook install`, or run `toolgate login --server URL --token-file FILE`"
        ),
        ClientError::Refused { code, message } => match code {
            tonic::Code::Unauthenticated => "give --token-file with a token the server accepts to `toolgate hook install`, or run `toolgate login`".to_owned(),
            tonic::Code::InvalidArgument if message.contains("team_id") => "the token names no team: give --team to `toolgate hook install` or `toolgate login`".to_owned(),
            tonic::Code::InvalidArgument if message.contains("user_id") => "the token names no user: give --user to `toolgate hook install` or `toolgate login`".to_owned(),
            _ => return e.to_string(),
        },
        _ => return e.to_string(),
    };
    format!("{e} ({hint})")
}

/// What a decision at revision 0 means: nothing was ever written for the team.
pub(super) fn no_settings(team: &str) -> String {
    if team.is_empty() {
        "the token's team has no settings: check the team it was issued for".to_owned()
    } else {
        format!("team {team} has no settings: check --team")
    }
}

/// The most workspace roots whose `.cursor/mcp.json` is read.
const MAX_WORKSPACE_ROOTS: usize = 16;

fn strictness(outcome: crate::policy::Outcome) -> u8 {
    match outcome {
        crate::policy::Outcome::Allow => 0,
        crate::policy::Outcome::Ask => 1,
        crate::policy::Outcome::Deny => 2,
    }
}

/// Cursor names MCP servers by URL or command: `--mcp-server` pairs first, then the
/// user's `~/.cursor/mcp.json`, then the workspace's `.cursor/mcp.json`, which may add
/// servers but never rename one the others name.
fn cursor_directory(input: &[u8], pairs: &[String]) -> McpDirectory {
    let mut directory = McpDirectory::default();
    let roots: Vec<PathBuf> = serde_json::from_slice::<serde_json::Value>(input)
        .ok()
        .and_then(|v| {
            v.get("workspace_roots")
                .and_then(|r| r.as_array())
                .map(|a| {
                    // a payload names a few roots; more are not read
                    a.iter()
                        .filter_map(|r| r.as_str().map(PathBuf::from))
                        .take(MAX_WORKSPACE_ROOTS)
                        .collect()
                })
        })
        .unwrap_or_default();
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let files = home
        .iter()
        .map(|h| (h, Trust::User))
        .chain(roots.iter().map(|r| (r, Trust::Workspace)));
    for (dir, trust) in files {
        if let Some(text) = read_bounded(&dir.join(".cursor/mcp.json")) {
            directory.add_mcp_json_as(&text, trust);
        }
    }
    let mapped: Vec<(String, String)> = pairs
        .iter()
        .filter_map(|p| {
            p.rsplit_once('=')
                .map(|(at, n)| (at.to_owned(), n.to_owned()))
        })
        .collect();
    directory.add_mapping(&mapped);
    directory
}

fn read_bounded(path: &Path) -> Option<String> {
    let file = std::fs::File::open(path).ok()?;
    let mut text = String::new();
    file.take(hook::MAX_INPUT_BYTES as u64)
        .read_to_string(&mut text)
        .ok()?;
    Some(text)
}

fn emit(reply: &Reply, log: Option<&Path>) {
    // a client that closed its end cannot be answered: nothing better to do
    let _ = std::io::stdout().write_all(reply.stdout.as_bytes());
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().write_all(reply.stderr.as_bytes());
    if let Some(path) = log {
        let line = format!(
            "{} exit={} {}{}\n",
            humantime::format_rfc3339_millis(std::time::SystemTime::now()),
            reply.exit,
            reply.stdout.trim(),
            reply.stderr.trim()
        );
        // the reply quotes the call: a log keeps it with its secrets masked
        let line = toolgate_core::secrets::mask(&line);
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut f| f.write_all(line.as_bytes()));
        if let Err(e) = appended {
            let _ = writeln!(
                std::io::stderr(),
                "toolgate: cannot write the hook log {}: {e}",
                path.display()
            );
        }
    }
}

/// The settings file's path for `client` at `scope` under `--path` or the default base.
fn install_target(
    client: Client,
    scope: ScopeArg,
    path: &Option<PathBuf>,
) -> Result<(Scope, PathBuf), String> {
    let scope = match scope {
        ScopeArg::User => Scope::User,
        ScopeArg::Project => Scope::Project,
        ScopeArg::Managed => Scope::Managed,
    };
    let base = match (path, scope) {
        (Some(p), _) => p.clone(),
        (None, Scope::User) => match std::env::var_os("HOME") {
            Some(h) => PathBuf::from(h),
            None => return Err("HOME is not set: give --path DIR".into()),
        },
        (None, Scope::Project) => PathBuf::from("."),
        (None, Scope::Managed) => PathBuf::from("/"),
    };
    Ok((scope, install::target(client, scope, &base)))
}

/// `'…'` around anything a shell would split or expand.
pub(super) fn shell_quote(word: &str) -> String {
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
pub(super) struct HookSettings {
    pub(super) server: Option<String>,
    pub(super) token_file: Option<PathBuf>,
    pub(super) team: Option<String>,
    pub(super) user: Option<String>,
    pub(super) ca: Option<PathBuf>,
    pub(super) cert: Option<PathBuf>,
    pub(super) key: Option<PathBuf>,
    pub(super) profile: Option<PathBuf>,
    pub(super) wait_ms: Option<u64>,
}

impl HookSettings {
    /// As flags after `hook <client>`.
    pub(super) fn flags(&self) -> String {
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
pub(super) fn absolute(flag: &str, path: &Option<PathBuf>) -> Result<Option<PathBuf>, String> {
    path.as_ref()
        .map(|p| {
            std::path::absolute(p)
                .map_err(|e| format!("{flag} {}: {e}: give the file's path", p.display()))
        })
        .transpose()
}

/// A token file others may read is refused, as the server refuses its own.
pub(super) fn check_token_file(path: &Path) -> Result<PathBuf, String> {
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

fn install_hook(args: InstallArgs, conn: &Connection) -> i32 {
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
    let managed = scope == Scope::Managed;
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
            let at = super::profile::path().map_err(|e| e.to_string())?;
            let mut profile = super::profile::load_from(&at).map_err(|e| e.to_string())?;
            profile.server = settings.server.clone().or(profile.server);
            profile.token = Some(token.trim().to_owned());
            profile.token_file = None;
            if settings.team.is_some() {
                profile.team = settings.team.clone();
            }
            if settings.user.is_some() {
                profile.user = settings.user.clone();
            }
            super::profile::save(&at, &profile).map_err(|e| e.to_string())?;
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
            .or_else(|| super::profile::load().ok().and_then(|p| p.server))
            .unwrap_or_else(|| super::args::DEFAULT_SERVER.to_owned());
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
        let profile = super::profile::load().unwrap_or_default();
        if profile.server.is_none() && profile.token.is_none() && profile.token_file.is_none() {
            eprintln!(
                "warning: no server or token given: the hook will ask {} with no token; give --server and --token-file, or run `toolgate login`",
                super::args::DEFAULT_SERVER
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
pub(super) fn managed_configuration(
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
pub(super) fn write_managed_configuration(at: &Path, text: &str) -> Result<(), String> {
    at.parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| {
            toolgate_files::write_atomic(at, toolgate_files::Mode::Exactly(0o644), text.as_bytes())
        })
        .map_err(|e| format!("writing {}: {e}", at.display()))
}

fn check_hook(args: CheckArgs) -> i32 {
    match check(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            1
        }
    }
}

/// The installed toolgate hook in a client's settings: its command and, for Claude
/// Code, the `env` it is run with.
fn installed(client: Client, doc: &serde_json::Value) -> Option<(String, Vec<(String, String)>)> {
    let events: &[&str] = match client {
        Client::ClaudeCode | Client::Codex => &["PreToolUse"],
        Client::Cursor => &["beforeShellExecution"],
        Client::Gemini => &["BeforeTool"],
    };
    let ours = |c: &serde_json::Value| {
        c.as_str()
            .filter(|c| c.contains(&format!(" hook {}", client.name())))
            .map(str::to_owned)
    };
    let command = events.iter().find_map(|event| {
        doc["hooks"][*event].as_array()?.iter().find_map(|item| {
            ours(&item["command"]).or_else(|| {
                item["hooks"]
                    .as_array()?
                    .iter()
                    .find_map(|h| ours(&h["command"]))
            })
        })
    })?;
    let env = doc["env"]
        .as_object()
        .map(|vars| {
            vars.iter()
                .filter(|(k, _)| k.starts_with("TOOLGATE_"))
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                .collect()
        })
        .unwrap_or_default();
    Some((command, env))
}

/// The session id of `hook check`'s sample call: no client makes one up like it.
const CHECK_SESSION: &str = "toolgate-hook-check";
/// The client a sample call names: the server keeps its ALLOW or ASK out of the
/// decision log and sends it to no approver (it is a check, not an agent's call).
const CHECK_CLIENT: &str = crate::service::CHECK_CLIENT;

/// A harmless call in the client's own payload: reading a file, or `git status`.
fn sample_call(client: Client, cwd: &str) -> (String, serde_json::Value) {
    use serde_json::json;
    let file = format!("{cwd}/README.md");
    match client {
        Client::ClaudeCode => (
            format!("Read {file}"),
            json!({"session_id": CHECK_SESSION, "hook_event_name": "PreToolUse",
                "cwd": cwd, "tool_name": "Read", "tool_input": {"file_path": file}}),
        ),
        Client::Codex => (
            "Bash `git status`".into(),
            json!({"session_id": CHECK_SESSION, "hook_event_name": "PreToolUse",
                "cwd": cwd, "tool_name": "Bash", "tool_input": {"command": "git status"}}),
        ),
        Client::Cursor => (
            "shell `git status`".into(),
            json!({"conversation_id": CHECK_SESSION, "hook_event_name": "beforeShellExecution", "command": "git status",
                "cwd": cwd, "workspace_roots": [cwd]}),
        ),
        Client::Gemini => (
            format!("read_file {file}"),
            json!({"session_id": CHECK_SESSION, "hook_event_name": "BeforeTool",
                "cwd": cwd, "tool_name": "read_file", "tool_input": {"file_path": file}}),
        ),
    }
}

/// What the hook's answer means, in a few words.
fn verdict_of(client: Client, exit: Option<i32>, stdout: &str, stderr: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap_or_default();
    let said = |decision: &serde_json::Value, reason: &serde_json::Value| {
        format!(
            "{} ({})",
            decision.as_str().unwrap_or("?"),
            reason.as_str().unwrap_or("no reason given")
        )
    };
    if exit == Some(2) || exit.is_none() {
        return format!("blocked: {}", stderr.trim());
    }
    match client {
        Client::ClaudeCode | Client::Codex => {
            let out = &v["hookSpecificOutput"];
            if out.is_object() {
                said(&out["permissionDecision"], &out["permissionDecisionReason"])
            } else {
                "no objection (the client's own rules decide)".into()
            }
        }
        Client::Cursor => said(&v["permission"], &v["agent_message"]),
        Client::Gemini => said(&v["decision"], &v["reason"]),
    }
}

fn check(args: CheckArgs) -> Result<i32, String> {
    let client = Client::from(args.client);
    let (scope, path) = install_target(client, args.scope, &args.path)?;
    let install_again = format!("run `toolgate hook install {}` first", client.name());
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("no hook at {}: {e}: {install_again}", path.display()))?;
    let doc: serde_json::Value = if client == Client::Codex && scope == Scope::Managed {
        toml::from_str::<toml::Table>(&text)
            .ok()
            .and_then(|t| serde_json::to_value(t).ok())
            .unwrap_or_default()
    } else {
        serde_json::from_str(&text).unwrap_or_default()
    };
    let (command, env) = installed(client, &doc)
        .ok_or_else(|| format!("{} holds no toolgate hook: {install_again}", path.display()))?;
    println!("hook:    {command}\n         (in {})", path.display());
    let outdated = install::outdated(client, &doc, &command);
    for problem in &outdated {
        println!("old:     {problem}");
    }
    if !outdated.is_empty() {
        println!(
            "         installed the old way: run `toolgate hook install {}` again to rewrite it",
            client.name()
        );
    }
    // what the hook will use: its own flags and the client profile; the variables it
    // would see (ours, and the settings' `env` the client passes on) are only compared
    let flags = Flags::of_command(&command)?;
    let mut seen = toolgate_env();
    seen.extend(env.iter().cloned());
    let (settings, trouble) = settings_of(&flags, &seen);
    if let Some(e) = trouble {
        return Err(e);
    }
    if let Some(line) = hook_config::notice(&settings.ignored) {
        println!("ignored: {line}");
    }
    let resolved = settings.conn.clone();
    let (team, user) = (settings.team.clone(), settings.user.clone());
    let sources: Vec<String> = settings
        .sources
        .iter()
        .map(|(key, source)| format!("{key} {}", source.name()))
        .collect();
    println!(
        "from:    {} (managed: {})",
        sources.join(", "),
        hook_config::managed_path().display()
    );
    println!("server:  {}", resolved.server);
    let whom = whoami(resolved.clone(), &team, &user);
    let reached = match &whom {
        Ok((team, user)) => {
            println!("as:      team {team}, user {user}");
            true
        }
        Err(e) => {
            println!("as:      not known: {}", super::for_terminal(e, false));
            false
        }
    };
    let cwd = std::env::current_dir()
        .map(|d| d.display().to_string())
        .unwrap_or_else(|_| "/".into());
    let (what, payload) = sample_call(client, &cwd);
    let mut child = std::process::Command::new("sh")
        .arg("-c")
        .arg(&command)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("running the hook `{command}`: {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        // a hook that exits before reading answers anyway: its output says why
        let _ = stdin.write_all(payload.to_string().as_bytes());
    }
    let out = child
        .wait_with_output()
        .map_err(|e| format!("running the hook `{command}`: {e}"))?;
    let verdict = verdict_of(
        client,
        out.status.code(),
        &String::from_utf8_lossy(&out.stdout),
        &String::from_utf8_lossy(&out.stderr),
    );
    // the verdict holds the server's words
    println!(
        "sample:  {what}\n   got:  {}",
        super::for_terminal(&verdict, false)
    );
    Ok(
        if reached && out.status.code() == Some(0) && outdated.is_empty() {
            0
        } else {
            1
        },
    )
}

/// The team and user the server decides for, as it says.
pub(super) fn whoami(
    mut conn: Resolved,
    team: &str,
    user: &str,
) -> Result<(String, String), String> {
    let server = conn.server.clone();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        super::login_refresh::refresh_if_needed(&mut conn).await?;
        let client = Server::connect(ClientConfig {
            server: conn.server,
            token: conn.token,
            token_file: conn.token_file,
            tls: conn.tls,
            deadline: Duration::from_secs(5),
            ..ClientConfig::default()
        })
        .await
        .map_err(|e| with_hint(&e, &server))?;
        let policy = client
            .policy_service()
            .get_effective_policy(crate::proto::v1::GetEffectivePolicyRequest {
                team_id: team.to_owned(),
                user_id: user.to_owned(),
            })
            .await
            .map_err(|s| {
                let e = ClientError::Refused {
                    code: s.code(),
                    message: s.message().to_owned(),
                };
                with_hint(&e, &server)
            })?
            .into_inner();
        let u = policy.policy.and_then(|p| p.user).unwrap_or_default();
        Ok((u.team_id, u.user_id))
    })
}

/// Prints the export on stdout and what it could not express on stderr.
pub async fn run_export(args: ExportArgs, conn: &Connection) -> anyhow::Result<i32> {
    let format = match (args.client, args.form) {
        (ClientName::ClaudeCode, None) => Format::ClaudeCode,
        (ClientName::Gemini, None) => Format::Gemini,
        (ClientName::Codex, None | Some(FormArg::Rules)) => Format::CodexRules,
        (ClientName::Codex, Some(FormArg::Requirements)) => Format::CodexRequirements,
        (ClientName::Cursor, None | Some(FormArg::Cli)) => Format::CursorCli,
        (ClientName::Cursor, Some(FormArg::Allowlists)) => Format::CursorAllowlists,
        (client, Some(form)) => anyhow::bail!(
            "--form {form:?} is not a format of {client:?}: codex takes rules or requirements, cursor cli or allowlists"
        ),
    };
    let mut conn = conn.resolve()?;
    super::login_refresh::refresh_if_needed(&mut conn)
        .await
        .map_err(|e| anyhow::anyhow!(e))?;
    let address = conn.server.clone();
    let hinted = |e: ClientError| anyhow::anyhow!(with_hint(&e, &address));
    let server = Server::connect(ClientConfig {
        team: or_profile(&args.team, &conn.team),
        user: or_profile(&args.user, &conn.user),
        tls: conn.tls,
        server: conn.server,
        token: conn.token,
        token_file: conn.token_file,
        deadline: Duration::from_secs(10),
        client_kind: String::new(),
        bearer: None,
    })
    .await
    .map_err(hinted)?;
    let policy = server.effective_policy().await.map_err(hinted)?;
    let out = export::export(format, &policy.admin, &policy.user, &policy.file_allowlists)
        .map_err(|e| anyhow::anyhow!("the effective policy does not compile: {e}"))?;
    print!("{}", out.text);
    for w in &out.warnings {
        eprintln!("warning: {w}");
    }
    eprintln!(
        "exported policy revision {} ({} warnings: what the format cannot say is left to the client, which asks)",
        policy.revision,
        out.warnings.len()
    );
    Ok(0)
}
