//! `toolgate hook <client>` and `toolgate export <client>`: the commands agent clients
//! run. The logic is the library's (`toolgate::hook`, `toolgate::export`); this is
//! the I/O around it: stdin, files, the server call, the exit code.

use crate::export::{self, Format};
use crate::grpc::client::{Client as Server, ClientConfig};
use crate::hook::install::{self, Scope};
use crate::hook::{self, AskAs, Client, McpDirectory, Options, Reply, Verdict};
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
    /// Writes the client's hook configuration and prints what it wrote.
    Install(InstallArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AskArg {
    Ask,
    Deny,
    Defer,
}

#[derive(Debug, Args)]
pub struct HookArgs {
    /// The team (default: the token's own).
    #[arg(long, env = "TOOLGATE_TEAM", default_value = "")]
    team: String,
    /// The user (default: the token's own).
    #[arg(long, env = "TOOLGATE_USER", default_value = "")]
    user: String,
    /// Answer ALLOW with no opinion, so the client's own rules still apply.
    #[arg(long)]
    no_grant: bool,
    /// How to answer ASK (default: ask; deny for Codex, which cannot ask).
    #[arg(long, value_enum, env = "TOOLGATE_HOOK_ASK")]
    ask: Option<AskArg>,
    /// Let the call run when no decision can be made (default: block it).
    #[arg(long)]
    fail_open: bool,
    /// Deadline for reaching the server and deciding, in milliseconds.
    #[arg(long, env = "TOOLGATE_HOOK_TIMEOUT_MS", default_value_t = 2000)]
    timeout_ms: u64,
    /// Append one line per call to this file.
    #[arg(long, env = "TOOLGATE_HOOK_LOG")]
    log: Option<PathBuf>,
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
    /// The command the client runs (default: this binary's path, `hook`, the client).
    #[arg(long)]
    command: Option<String>,
    /// Print what would be written, write nothing.
    #[arg(long)]
    dry_run: bool,
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

/// The server connection as the global options give it.
pub struct Connection {
    pub server: String,
    pub token: Option<String>,
    pub token_file: Option<PathBuf>,
    pub tls: crate::grpc::client::TlsOptions,
}

/// Runs a hook command; returns the exit code. Never panics out, never errors out.
pub fn run_hook(command: HookCommand, conn: Connection) -> i32 {
    let (client, args) = match command {
        HookCommand::ClaudeCode(a) => (Client::ClaudeCode, a),
        HookCommand::Codex(a) => (Client::Codex, a),
        HookCommand::Cursor(a) => (Client::Cursor, a),
        HookCommand::Gemini(a) => (Client::Gemini, a),
        HookCommand::Install(a) => return install_hook(a),
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
    let reply = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        decide(client, &args, conn, &options)
    }))
    .unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        hook::failure(client, &format!("the hook panicked: {what}"), &options)
    });
    emit(&reply, log.as_deref());
    reply.exit
}

fn decide(client: Client, args: &HookArgs, conn: Connection, options: &Options) -> Reply {
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
    let parsed = match hook::parse(client, &input, &directory) {
        Ok(p) => p,
        Err(e) => return hook::failure(client, &e.to_string(), options),
    };
    let agent = hook::agent_of(client, &input);
    let config = ClientConfig {
        tls: conn.tls,
        server: conn.server,
        token: conn.token,
        token_file: conn.token_file,
        team: args.team.clone(),
        user: args.user.clone(),
        // the whole call is bounded below; the client's own step deadlines are wider,
        // so the answer says which deadline passed the same way every time
        deadline: Duration::from_millis(args.timeout_ms.max(1)) * 2,
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
    let decided = runtime.block_on(async {
        tokio::time::timeout(deadline, async {
            let server = Server::connect(config).await?;
            server.evaluate_by(&parsed.call, agent.as_ref()).await
        })
        .await
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
        Ok(Err(e)) => hook::failure(client, &e.to_string(), options),
        Ok(Ok(d)) => hook::reply(
            client,
            &Verdict {
                outcome: d.outcome,
                reason: d.reason,
                message: d.message,
                revision: d.revision,
            },
            parsed.note.as_deref(),
            options,
        ),
    }
}

/// Cursor names MCP servers by URL or command: the workspace's and the user's
/// `.cursor/mcp.json`, and `--mcp-server` pairs, which win.
fn cursor_directory(input: &[u8], pairs: &[String]) -> McpDirectory {
    let mut directory = McpDirectory::default();
    let roots: Vec<PathBuf> = serde_json::from_slice::<serde_json::Value>(input)
        .ok()
        .and_then(|v| {
            v.get("workspace_roots")
                .and_then(|r| r.as_array())
                .map(|a| {
                    a.iter()
                        .filter_map(|r| r.as_str().map(PathBuf::from))
                        .collect()
                })
        })
        .unwrap_or_default();
    let home = std::env::var_os("HOME").map(PathBuf::from);
    for dir in roots.iter().chain(home.iter()) {
        if let Some(text) = read_bounded(&dir.join(".cursor/mcp.json")) {
            directory.add_mcp_json(&text);
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

fn install_hook(args: InstallArgs) -> i32 {
    let client = Client::from(args.client);
    let scope = match args.scope {
        ScopeArg::User => Scope::User,
        ScopeArg::Project => Scope::Project,
        ScopeArg::Managed => Scope::Managed,
    };
    let base = match (&args.path, scope) {
        (Some(p), _) => p.clone(),
        (None, Scope::User) => match std::env::var_os("HOME") {
            Some(h) => PathBuf::from(h),
            None => {
                eprintln!("error: HOME is not set: give --path DIR");
                return 1;
            }
        },
        (None, Scope::Project) => PathBuf::from("."),
        (None, Scope::Managed) => PathBuf::from("/"),
    };
    let command = args.command.unwrap_or_else(|| {
        let exe = std::env::current_exe()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| "toolgate".into());
        let exe = if exe.contains(' ') {
            format!("'{exe}'")
        } else {
            exe
        };
        format!("{exe} hook {}", client.name())
    });
    let path = install::target(client, scope, &base);
    let existing = match std::fs::read_to_string(&path) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            eprintln!("error: reading {}: {e}", path.display());
            return 1;
        }
    };
    let text = match install::merge(client, scope, &path, existing.as_deref(), &command) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return 1;
        }
    };
    if !args.dry_run {
        let written = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            // never in place: a crash mid-write must not truncate the client's settings
            .and_then(|()| {
                crate::files::write_atomic(&path, crate::files::Mode::KeepTarget, text.as_bytes())
            });
        if let Err(e) = written {
            eprintln!("error: writing {}: {e}", path.display());
            return 1;
        }
    }
    let verb = if args.dry_run { "would write" } else { "wrote" };
    println!("{verb} {}:\n{text}", path.display());
    0
}

/// Prints the export on stdout and what it could not express on stderr.
pub async fn run_export(args: ExportArgs, conn: Connection) -> anyhow::Result<i32> {
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
    let server = Server::connect(ClientConfig {
        tls: conn.tls,
        server: conn.server,
        token: conn.token,
        token_file: conn.token_file,
        team: args.team,
        user: args.user,
        deadline: Duration::from_secs(10),
    })
    .await?;
    let policy = server.effective_policy().await?;
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
