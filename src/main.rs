//! The `toolgate` binary: parses the command line, loads the configuration and runs
//! the server (everything else lives in the library).

use toolgate::cli;
use toolgate::cli::agent as agent_cli;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use toolgate::config::{CliOverrides, Config, ConsoleConfig};

#[derive(Debug, Parser)]
#[command(
    name = "toolgate",
    version = toolgate::VERSION,
    about = "A policy server for AI-agent tool calls"
)]
struct Cli {
    #[command(flatten)]
    connection: cli::Connection,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Runs the server.
    Serve(ServeArgs),
    /// Runs every check `serve` makes before it binds (keys, values, the TLS, policy
    /// and key files) and prints the configuration (secrets left out).
    CheckConfig(ServeArgs),
    /// Prints the SHA-256 of a token, for `auth.tokens[].sha256`; reads stdin without TOKEN.
    HashToken { token: Option<String> },
    /// Prints a new random token and its SHA-256.
    NewToken,
    /// Checks a server address and token, then saves them (with --team and --user) in
    /// the client profile that every later command and hook reads.
    Login(cli::login::LoginArgs),
    /// The pre-tool hook an agent client runs (claude-code, codex, cursor, gemini).
    #[command(subcommand)]
    Hook(agent_cli::HookCommand),
    /// The effective policy in an agent client's own permission format.
    Export(agent_cli::ExportArgs),
    /// A client's managed-policy helper (`claude-code`: Claude Code's `policyHelper`).
    #[command(subcommand)]
    Managed(cli::managed::ManagedCommand),
    /// Keeps the clients' managed files (Codex requirements, Gemini CLI admin policy,
    /// Cursor enterprise hooks) current with the policy: run as root, e.g. by systemd.
    Sync(cli::sync::SyncArgs),
    /// Puts this machine under managed delivery (`--system`, as root) or says what each
    /// agent client enforces (`--check`).
    Enroll(cli::enroll::EnrollArgs),
    /// An MCP gateway in front of one MCP server: shows and runs only what the policy
    /// allows, re-announcing the tool list when it changes.
    Proxy(cli::ProxyArgs),
    /// Writes a starter server configuration, policy file and team policy.
    Init(cli::init::InitArgs),
    /// Runs policy test files offline, with no server: each case's call is decided
    /// under the team policy the file names and compared with the answer it expects.
    /// Exits 0 when all pass, 1 when one fails, 2 when a file cannot be run.
    Test(cli::test::TestArgs),
    /// Prints a shell completion script: `toolgate completion bash > /etc/bash_completion.d/toolgate`.
    Completion {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Prints the manual page (roff): `toolgate man > toolgate.1 && man ./toolgate.1`.
    Man,
    #[command(flatten)]
    Client(cli::ClientCommand),
}

#[derive(Debug, clap::Args)]
struct ServeArgs {
    /// TOML or YAML configuration file (also TOOLGATE_CONFIG).
    #[arg(long, short)]
    config: Option<PathBuf>,
    /// Address to listen on, e.g. 127.0.0.1:7070.
    #[arg(long)]
    listen: Option<String>,
    /// Directory for the embedded store and the bootstrap token.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// File-managed policy YAML (teams, MCP `tool.action` lists), reloaded on change.
    #[arg(long)]
    policy_file: Option<PathBuf>,
    /// Serves the browser console (and the HTTP API it calls) on this address, e.g.
    /// 127.0.0.1:7071 (also `console.listen`); off unless given.
    #[arg(long, value_name = "ADDR")]
    console: Option<String>,
}

impl ServeArgs {
    fn overrides(&self) -> CliOverrides {
        CliOverrides {
            listen: self.listen.clone(),
            data_dir: self.data_dir.clone(),
            policy_file: self.policy_file.clone(),
            console: self.console.clone().map(|listen| ConsoleConfig {
                listen: Some(listen),
            }),
        }
    }

    fn load(&self) -> anyhow::Result<Config> {
        Ok(Config::load(
            self.config.as_deref(),
            std::env::vars(),
            &self.overrides(),
        )?)
    }
}

/// Resolves on the first SIGINT or SIGTERM; a second one exits at once.
async fn shutdown_signal() {
    wait_signal().await;
    tokio::spawn(async {
        wait_signal().await;
        eprintln!("second signal: exiting now");
        std::process::exit(130);
    });
}

async fn wait_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate()).expect("install SIGTERM handler");
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
}

/// The command line read with no environment variable standing in for a flag.
fn flags_only() -> Cli {
    use clap::{CommandFactory as _, FromArgMatches as _};
    fn without_env(command: clap::Command) -> clap::Command {
        command
            .mut_args(|a| a.env(None::<&'static str>))
            .mut_subcommands(without_env)
    }
    without_env(Cli::command())
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m))
        .unwrap_or_else(|e| e.exit())
}

/// Errors print as one `error: …` line chain, without a backtrace: they are for
/// people running a command, not for debugging toolgate.
fn main() -> std::process::ExitCode {
    let parsed = Cli::parse();
    // the hook runs once per tool call: no thread pool, and it answers every failure
    // itself in the client's own words
    if let Command::Hook(command) = parsed.command {
        // a hook's settings come from its own flags, never the environment (a
        // repository's client settings can set it): parsed again with no variables
        let (command, connection) = if command.runs_hook() {
            match flags_only() {
                Cli {
                    command: Command::Hook(command),
                    connection,
                } => (command, connection),
                // the same words parsed the same way a moment ago
                _ => unreachable!("a hook command parses as one"),
            }
        } else {
            (command, parsed.connection)
        };
        let code = agent_cli::run_hook(command, &connection);
        return std::process::ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    // a managed-policy helper runs in the client's environment, which a repository's
    // settings can set, so it reads its flags alone, as a hook does
    if let Command::Managed(_) = parsed.command {
        let Cli {
            command: Command::Managed(command),
            connection,
        } = flags_only()
        else {
            unreachable!("a managed command parses as one")
        };
        let code = cli::managed::run_managed(command, &connection);
        return std::process::ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    if let Command::Sync(_) = parsed.command {
        let Cli {
            command: Command::Sync(args),
            connection,
        } = flags_only()
        else {
            unreachable!("a sync command parses as one")
        };
        let code = cli::sync::run_sync(args, &connection);
        return std::process::ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    // login asks the server through the hook's own blocking client
    if let Command::Login(args) = parsed.command {
        return match cli::login::login(args, &parsed.connection) {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {}", cli::for_terminal(&format!("{e:#}"), true));
                std::process::ExitCode::FAILURE
            }
        };
    }
    // policy tests are offline: no server, no runtime
    if let Command::Test(args) = parsed.command {
        return match cli::test::test(args) {
            Ok(code) => std::process::ExitCode::from(u8::try_from(code).unwrap_or(1)),
            Err(e) => {
                eprintln!("error: {}", cli::for_terminal(&format!("{e:#}"), true));
                std::process::ExitCode::from(2)
            }
        };
    }
    match run(parsed) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", cli::for_terminal(&format!("{e:#}"), true));
            std::process::ExitCode::FAILURE
        }
    }
}

#[tokio::main]
async fn run(parsed: Cli) -> anyhow::Result<()> {
    match parsed.command {
        Command::Hook(_)
        | Command::Managed(_)
        | Command::Sync(_)
        | Command::Login(_)
        | Command::Test(_) => {
            unreachable!("answered before the runtime starts")
        }
        Command::Export(args) => {
            let code = agent_cli::run_export(args, &parsed.connection).await?;
            if code != 0 {
                std::process::exit(code);
            }
        }
        Command::Serve(args) => {
            // the first and only time: nothing has started yet
            let _ = toolgate::build_info::set(toolgate::BUILD);
            let config = args.load()?;
            let telemetry = toolgate::telemetry::init(&config)?;
            let addr = config.listen_addr();
            let served = async {
                // bound first: while the store is waited for, health answers there
                let listener = tokio::net::TcpListener::bind(addr)
                    .await
                    .with_context(|| format!("cannot listen on {addr}"))?;
                toolgate::server::serve(listener, config, shutdown_signal()).await?;
                anyhow::Ok(())
            }
            .await;
            // flush spans whether the server stopped cleanly or not
            telemetry.shutdown();
            served?;
        }
        Command::CheckConfig(args) => {
            // the same checks as `serve` before it binds, every problem at once
            let (config, mut problems) =
                Config::load_checked(args.config.as_deref(), std::env::vars(), &args.overrides())?;
            problems.extend(toolgate::server::preflight(&config));
            if !problems.is_empty() {
                anyhow::bail!("invalid configuration:\n  - {}", problems.join("\n  - "));
            }
            for warning in toolgate::server::preflight_warnings(&config) {
                eprintln!("warning: {warning}");
            }
            println!("{}", serde_json::to_string_pretty(&config.public_json())?);
        }
        Command::Init(args) => cli::init::init(args)?,
        Command::Enroll(args) => {
            let code = cli::enroll::run_enroll(args, &parsed.connection);
            if code != 0 {
                std::process::exit(code);
            }
        }
        Command::Completion { shell } => {
            use clap::CommandFactory as _;
            clap_complete::generate(
                shell,
                &mut Cli::command(),
                "toolgate",
                &mut std::io::stdout(),
            );
        }
        Command::Man => {
            use clap::CommandFactory as _;
            clap_mangen::Man::new(Cli::command()).render(&mut std::io::stdout())?;
        }
        Command::HashToken { token } => {
            let token = match token {
                Some(t) => t,
                None => {
                    let mut line = String::new();
                    std::io::stdin().read_line(&mut line)?;
                    line.trim().to_owned()
                }
            };
            anyhow::ensure!(
                !token.is_empty(),
                "no token given: pass it as an argument or on stdin"
            );
            println!("{}", toolgate::auth::hash_token(&token));
        }
        Command::NewToken => {
            let token = toolgate::auth::generate_token();
            println!(
                "token:  {token}\nsha256: {}",
                toolgate::auth::hash_token(&token)
            );
        }
        Command::Proxy(args) => cli::run_proxy(&parsed.connection, args, shutdown_signal()).await?,
        Command::Client(command) => match cli::run(&parsed.connection, command).await {
            Ok(0) => {}
            Ok(code) => std::process::exit(code),
            Err(e) if e.is::<cli::UsageError>() => {
                eprintln!("error: {}", cli::for_terminal(&e.to_string(), true));
                std::process::exit(cli::EXIT_USAGE);
            }
            Err(e) => return Err(e),
        },
    }
    Ok(())
}

// mimalloc (v2, no transparent huge pages; Cargo.toml): glibc's malloc spent much of
// the decision path in its arena locks and in frees of memory another thread
// allocated (the decision log's records); Evaluate ran 60k/s against 74–76k/s now.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
