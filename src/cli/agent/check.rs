//! `toolgate hook check <client>`: the installed hook read back from the client's
//! settings, where its settings come from, whom the server takes it for, and the hook
//! run once on a harmless sample call.

use super::install::install_target;
use super::{ClientName, ScopeArg, with_hint};
use crate::cli::connection::Resolved;
use crate::cli::hook_config::{self, Flags, settings_of, toolgate_env};
use crate::grpc::client::{Client as ServerClient, ClientConfig, ClientError};
use crate::hook::Client;
use crate::hook::install::{self, InstallScope};
use clap::Args;
use std::io::Write as _;
use std::path::PathBuf;
use std::time::Duration;

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

pub(super) fn check_hook(args: CheckArgs) -> i32 {
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
pub(super) const CHECK_SESSION: &str = "toolgate-hook-check";
/// The client a sample call names: the server keeps its ALLOW or ASK out of the
/// decision log and sends it to no approver (it is a check, not an agent's call).
pub(super) const CHECK_CLIENT: &str = crate::service::CHECK_CLIENT;

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
    let doc: serde_json::Value = if client == Client::Codex && scope == InstallScope::Managed {
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
            println!("as:      not known: {}", crate::cli::for_terminal(e, false));
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
        crate::cli::for_terminal(&verdict, false)
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
pub(in crate::cli) fn whoami(
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
        crate::cli::login_refresh::refresh_if_needed(&mut conn).await?;
        let client = ServerClient::connect(ClientConfig {
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
