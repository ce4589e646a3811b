//! `toolgate hook <client>`: the hook a client runs before each tool call. Its stdin
//! (bounded), the server's decision on a current-thread runtime within one deadline
//! (an approval waited for when the team sends the ASK to its approvers), what the
//! call writes checked on disk, and the reply; every failure, a panic included, is
//! a blocking reply unless `--fail-open` was chosen.

use super::check::{CHECK_CLIENT, CHECK_SESSION};
use super::{no_settings, with_hint};
use crate::cli::connection::Connection;
use crate::cli::hook_config::{self, Flags, Reconciled, settings_of, toolgate_env};
use crate::grpc::client::{ApprovalAsk, Client as ServerClient, ClientConfig};
use crate::hook::{self, AskAs, Client, McpDirectory, Options, Reply, Trust, Verdict};
use clap::{Args, ValueEnum};
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::time::Duration;

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

impl HookArgs {
    /// The flags as the hook's settings read them; `conn` holds the command line's
    /// connection flags alone.
    pub(super) fn flags(&self, conn: &Connection) -> Flags {
        Flags {
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
            ..Flags::of_connection(conn, &self.team, &self.user, self.profile.clone())
        }
    }
}

/// Runs `client`'s hook with `args`: the reply on stdout and stderr (and the log),
/// whatever fails, even a panic; returns the exit code.
pub(super) fn run(client: Client, args: HookArgs, conn: &Connection) -> i32 {
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
                crate::cli::login_refresh::refresh_if_needed(&mut sso)
                    .await
                    .map_err(crate::grpc::client::ClientError::Config)?;
                config.token = sso.token;
            }
            let toolgate = ServerClient::connect(config)
                .await?
                .for_tool_use(parsed.tool_use_id.as_deref());
            let mut decided = match &ask {
                Some(ask) => {
                    toolgate
                        .evaluate_waiting(&team, &user, &parsed.call, Some(&context), ask)
                        .await?
                }
                None => toolgate.evaluate_by(&parsed.call, Some(&context)).await?,
            };
            // another reading of the call (a server two configurations name): the
            // strictest answer stands
            for call in &parsed.also {
                let other = toolgate.evaluate_by(call, Some(&context)).await?;
                if strictness(other.outcome) > strictness(decided.outcome) {
                    decided = other;
                }
            }
            Ok::<_, crate::grpc::client::ClientError>((toolgate, decided))
        })
        .await;
        match first {
            // sent to the approvers: wait for the answer, within the hook's own budget
            Ok(Ok((toolgate, d))) => match d.approval.clone() {
                Some(ticket) => {
                    let give_up = started + Duration::from_millis(args.wait_ms);
                    Ok(Ok(toolgate.await_answer(&ticket, give_up).await))
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
