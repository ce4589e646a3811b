//! `toolgate enroll`: `--system` puts a machine under managed delivery in one root
//! command (the managed client configuration, Claude Code's policy helper, the sync
//! agent's unit, the Gemini CLI system hook); `--check` says for each client what is
//! enforced natively, what by the hook, and what not at all. `--root DIR` puts every
//! path under `DIR` (an image or package being built, a test).

use super::agent::install::{
    HookSettings, absolute, managed_configuration, shell_quote, write_managed_configuration,
};
use super::connection::Connection;
use crate::hook::Client;
use crate::hook::install::{self, InstallScope};
use clap::Args;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

#[derive(Debug, Args)]
pub struct EnrollArgs {
    /// Installs managed delivery on this machine (root; or under `--root`).
    #[arg(long, conflicts_with = "check", required_unless_present = "check")]
    system: bool,
    /// Says per client what is enforced natively, by the hook, or not at all.
    #[arg(long)]
    check: bool,
    /// Every path under this directory instead of `/`.
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// The toolgate binary's path on the machine.
    #[arg(long, value_name = "PATH", default_value = "/usr/local/bin/toolgate")]
    command: String,
    /// The team every user's hook asks for (pinned in the managed configuration).
    #[arg(long)]
    team: Option<String>,
    /// The user whose policy `toolgate sync` writes (a machine token names none).
    #[arg(long)]
    user: Option<String>,
    /// Seconds between Claude Code's runs of the policy helper (at least 60).
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u64).range(60..=86_400))]
    refresh_secs: u64,
}

/// Where the policy helper's script is installed.
const HELPER: &str = "usr/local/libexec/toolgate-claude-code-helper";
/// Where the sync agent's unit is installed.
const UNIT: &str = "etc/systemd/system/toolgate-sync.service";
/// The sync agent's token on the machine.
const SYNC_TOKEN: &str = "/etc/toolgate/sync-token";
/// The unit shipped in `deploy/`.
const UNIT_TEXT: &str = include_str!("../../deploy/systemd/toolgate-sync.service");

pub fn run_enroll(args: EnrollArgs, conn: &Connection) -> i32 {
    let outcome = if args.check {
        check(&args)
    } else {
        system(&args, conn)
    };
    match outcome {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error: {e}");
            1
        }
    }
}

fn root(args: &EnrollArgs) -> PathBuf {
    args.root.clone().unwrap_or_else(|| PathBuf::from("/"))
}

/// Writes `text` at `path` (its directories made), atomically, with `mode`.
fn put(path: &Path, mode: u32, text: &str) -> Result<(), String> {
    path.parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| {
            toolgate_files::write_atomic(path, toolgate_files::Mode::Exactly(mode), text.as_bytes())
        })
        .map_err(|e| format!("writing {}: {e}", path.display()))?;
    println!("wrote {}", path.display());
    Ok(())
}

fn system(args: &EnrollArgs, conn: &Connection) -> Result<(), String> {
    #[cfg(unix)]
    if args.root.is_none() && !nix::unistd::geteuid().is_root() {
        return Err("enroll --system writes root's files under /etc: run it as root, or give --root DIR to write them under DIR".into());
    }
    if conn.token.is_some() {
        return Err("--token cannot go into a machine's files, which every user reads: give each user a token (`toolgate login`), and the sync agent its own in /etc/toolgate/sync-token".into());
    }
    let root = root(args);
    // where every hook and helper asks: the managed configuration, root's
    let mut pinned = HookSettings {
        server: conn.server.clone(),
        ca: absolute("--ca", &conn.ca)?,
        // a token file here would be every user's: each has their own, and the sync
        // agent its own in SYNC_TOKEN
        token_file: None,
        team: args.team.clone(),
        ..HookSettings::default()
    };
    let (at, text) = managed_configuration(&Some(root.clone()), &mut pinned)?;
    write_managed_configuration(&at, &text)?;
    println!("wrote {}", at.display());

    // Claude Code: the policy helper in its managed settings
    let helper = format!(
        "#!/bin/sh\n# Claude Code's policyHelper: toolgate's managed settings for the user running it\nexec {} managed claude-code\n",
        shell_quote(&args.command)
    );
    put(&root.join(HELPER), 0o755, &helper)?;
    let settings = install::target(Client::ClaudeCode, InstallScope::Managed, &root);
    let mut doc = read_json(&settings)?;
    doc["policyHelper"] = json!({"path": format!("/{HELPER}"), "timeoutMs": 10000,
        "refreshIntervalMs": args.refresh_secs * 1000});
    put(
        &settings,
        0o644,
        &format!(
            "{}\n",
            serde_json::to_string_pretty(&doc).unwrap_or_default()
        ),
    )?;

    // Gemini CLI: the hook in its system settings (its admin policy is the sync agent's)
    let gemini = install::target(Client::Gemini, InstallScope::Managed, &root);
    let existing = std::fs::read_to_string(&gemini).ok();
    let text = install::merge(
        Client::Gemini,
        InstallScope::Managed,
        &gemini,
        existing.as_deref(),
        &format!("{} hook gemini", shell_quote(&args.command)),
    )
    .map_err(|e| e.to_string())?;
    put(&gemini, 0o644, &text)?;

    // the sync agent keeps Codex's, Gemini CLI's and Cursor's files
    let mut unit = UNIT_TEXT.replace("/usr/local/bin/toolgate", &args.command);
    if let Some(user) = &args.user {
        unit = unit.replace(
            " sync --token-file",
            &format!(" sync --user {} --token-file", shell_quote(user)),
        );
    }
    put(&root.join(UNIT), 0o644, &unit)?;
    println!(
        "next: put this machine's token in {SYNC_TOKEN} (mode 0600), then run `systemctl daemon-reload && systemctl enable --now toolgate-sync`; `toolgate enroll --check` says what each client enforces"
    );
    Ok(())
}

fn read_json(path: &Path) -> Result<Value, String> {
    match std::fs::read_to_string(path) {
        Ok(text) if !text.trim().is_empty() => serde_json::from_str::<Value>(&text)
            .ok()
            .filter(Value::is_object)
            .ok_or_else(|| {
                format!(
                    "{} is not a JSON object: fix or move it, then enroll again",
                    path.display()
                )
            }),
        Ok(_) => Ok(json!({})),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(json!({})),
        Err(e) => Err(format!("reading {}: {e}", path.display())),
    }
}

/// A file read as JSON (TOML read into JSON), or null when missing or unreadable.
fn doc(path: &Path) -> Value {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Value::Null;
    };
    if path.extension().is_some_and(|e| e == "toml") {
        text.parse::<toml::Table>()
            .ok()
            .and_then(|t| serde_json::to_value(t).ok())
            .unwrap_or(Value::Null)
    } else {
        serde_json::from_str(&text).unwrap_or(Value::Null)
    }
}

/// Whether `doc` runs a toolgate hook on `event`.
fn has_hook(doc: &Value, event: &str) -> bool {
    doc["hooks"][event].as_array().is_some_and(|items| {
        items.iter().any(|item| {
            let ours = |c: &Value| c.as_str().is_some_and(|c| c.contains(" hook "));
            ours(&item["command"])
                || item["hooks"]
                    .as_array()
                    .is_some_and(|h| h.iter().any(|h| ours(&h["command"])))
        })
    })
}

fn check(args: &EnrollArgs) -> Result<(), String> {
    let root = root(args);
    let claude = doc(&install::target(
        Client::ClaudeCode,
        InstallScope::Managed,
        &root,
    ));
    let codex = doc(&root.join("etc/codex/requirements.toml"));
    let gemini_policy = root.join("etc/gemini-cli/policies/toolgate.toml");
    let gemini = doc(&install::target(
        Client::Gemini,
        InstallScope::Managed,
        &root,
    ));
    let cursor = doc(&root.join("etc/cursor/hooks.json"));
    let rows = [
        (
            "claude-code",
            claude["policyHelper"].is_object(),
            claude["policyHelper"].is_object() || has_hook(&claude, "PreToolUse"),
        ),
        (
            "codex",
            codex["rules"].is_object(),
            has_hook(&codex, "PreToolUse"),
        ),
        (
            "gemini",
            gemini_policy.is_file(),
            has_hook(&gemini, "BeforeTool"),
        ),
        (
            "cursor",
            false,
            has_hook(&cursor, "beforeShellExecution")
                && cursor["hooks"]["beforeShellExecution"][0]["failClosed"] == true,
        ),
    ];
    for (client, native, hooked) in rows {
        let what = match (native, hooked) {
            (true, true) => "enforced natively (managed policy) and by the managed hook",
            (true, false) => {
                "enforced natively only: no managed hook, so what the native rules cannot say is not enforced"
            }
            (false, true) => "enforced by the managed hook only",
            (false, false) => "not enforced by anything managed: a user may remove their own hook",
        };
        println!("{client:<12} {what}");
    }
    Ok(())
}
