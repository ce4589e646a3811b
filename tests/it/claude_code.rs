//! End to end with the real Claude Code CLI (npm `@anthropic-ai/claude-code`, pinned in
//! .ci/run), driven by a fake Messages API on loopback (tests/fakes/anthropic.py) that
//! answers with one scripted tool call, and `toolgate hook claude-code` installed as
//! its PreToolUse hook against a real server.
//!
//! A second test puts `toolgate proxy` between Claude Code and the MCP server instead:
//! the tools the model is offered lack the one the policy denies.
//!
//! The CLI is found through TOOLGATE_TEST_CLAUDE. Without it the test says so and
//! passes, except in CI (CI=true), where it fails.

use crate::support;

use serde_json::{Value, json};
use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use support::*;
use toolgate::proto::v1 as pb;

pub(crate) const FAKES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fakes");

pub(crate) fn claude_binary() -> Option<PathBuf> {
    match std::env::var_os("TOOLGATE_TEST_CLAUDE") {
        Some(p) => Some(PathBuf::from(p)),
        None if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("CI=true but TOOLGATE_TEST_CLAUDE is not set: .ci/run installs Claude Code")
        }
        None => {
            eprintln!(
                "skipped: set TOOLGATE_TEST_CLAUDE to a Claude Code binary (npm @anthropic-ai/claude-code) to run this test"
            );
            None
        }
    }
}

/// A fake model API (the Messages API unless started otherwise), answering
/// `script`; killed when dropped.
pub(crate) struct FakeModel {
    child: std::process::Child,
    pub(crate) port: u16,
    log: PathBuf,
}

impl FakeModel {
    pub(crate) fn start(dir: &Path, script: &Value) -> Self {
        Self::start_fake("anthropic.py", dir, script)
    }

    /// The fake `fake` of `tests/fakes` (`anthropic.py`, or `openai_responses.py` for
    /// Codex), answering `script`.
    pub(crate) fn start_fake(fake: &str, dir: &Path, script: &Value) -> Self {
        let script_path = dir.join("script.json");
        std::fs::write(&script_path, script.to_string()).unwrap();
        let log = dir.join("requests.jsonl");
        let _ = std::fs::remove_file(&log);
        let mut child = std::process::Command::new("python3")
            .arg(Path::new(FAKES).join(fake))
            .arg(&script_path)
            .arg(&log)
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs the fake model");
        // its first line is the port, or EOF if it failed to start
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("fake model did not start: {line:?}"));
        Self { child, port, log }
    }

    /// The port it listens on, on loopback.
    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// The tool names offered to the model, per request that offered any.
    pub(crate) fn offered_tools(&self) -> Vec<Vec<String>> {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        text.lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter_map(|r| r["body"]["tools"].as_array().cloned())
            .map(|tools| {
                tools
                    .iter()
                    .filter_map(|t| t["name"].as_str().map(str::to_owned))
                    .collect()
            })
            .collect()
    }

    /// Every request body the model received.
    pub(crate) fn requests(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        text.lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .map(|r| r["body"].clone())
            .collect()
    }

    /// The tool_result blocks the model was sent.
    pub(crate) fn tool_results(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        text.lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .flat_map(|r| {
                r["body"]["messages"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
            .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
            .filter(|b| b["type"] == "tool_result")
            .collect()
    }
}

impl Drop for FakeModel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) struct Session {
    pub(crate) result: Value,
    pub(crate) tool_results: Vec<Value>,
    /// The tool names offered to the model, per request.
    offered: Vec<Vec<String>>,
}

/// The markers MCP server, run directly.
pub(crate) fn markers_direct() -> Value {
    json!({"mcpServers": {"markers": {"command": "python3",
        "args": [Path::new(FAKES).join("mcp_markers.py")]}}})
}

/// Installs `toolgate hook claude-code` as the PreToolUse hook of the project `dir`,
/// asking `server` with `token`; returns the settings file to run Claude Code with.
pub(crate) fn install_hook(dir: &Path, server: &TestServer, token: &str) -> PathBuf {
    let exe = env!("CARGO_BIN_EXE_toolgate");
    let install = std::process::Command::new(exe)
        .args([
            "hook",
            "install",
            "claude-code",
            "--scope",
            "project",
            "--path",
        ])
        .arg(dir)
        .arg("--command")
        .arg(format!(
            "{exe} hook claude-code --server http://{} --token {token}",
            server.addr
        ))
        .output()
        .unwrap();
    assert!(install.status.success(), "{install:?}");
    dir.join(".claude/settings.json")
}

/// One `claude -p` run whose model makes the scripted call.
pub(crate) async fn run_claude(claude: &Path, dir: &Path, settings: &Path, call: Value) -> Session {
    run_claude_with(claude, dir, settings, &markers_direct(), call).await
}

/// One `claude -p` run with the MCP configuration `mcp_servers`.
async fn run_claude_with(
    claude: &Path,
    dir: &Path,
    settings: &Path,
    mcp_servers: &Value,
    call: Value,
) -> Session {
    let (out, model) = claude_output(claude, dir, settings, mcp_servers, call).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let result = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "claude printed no JSON result ({e}): {stdout}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    Session {
        result,
        tool_results: model.tool_results(),
        offered: model.offered_tools(),
    }
}

/// One `claude -p` run whose model makes the scripted call, as it ended (it may
/// refuse to start), and the fake model it talked to.
pub(crate) async fn claude_output(
    claude: &Path,
    dir: &Path,
    settings: &Path,
    mcp_servers: &Value,
    call: Value,
) -> (std::process::Output, FakeModel) {
    claude_output_with(claude, dir, settings, mcp_servers, call, &[]).await
}

/// [`claude_output`] with more arguments for `claude`.
pub(crate) async fn claude_output_with(
    claude: &Path,
    dir: &Path,
    settings: &Path,
    mcp_servers: &Value,
    call: Value,
    extra: &[&str],
) -> (std::process::Output, FakeModel) {
    let model = FakeModel::start(dir, &json!([call]));
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let mcp = dir.join("mcp.json");
    std::fs::write(&mcp, mcp_servers.to_string()).unwrap();
    let mut cmd = tokio::process::Command::new(claude);
    for (key, _) in std::env::vars().filter(|(k, _)| {
        k.starts_with("TOOLGATE_") || k.starts_with("ANTHROPIC_") || k.starts_with("CLAUDE")
    }) {
        cmd.env_remove(key);
    }
    let run = cmd
        .args([
            "-p",
            "make the call",
            "--output-format",
            "json",
            "--settings",
        ])
        .arg(settings)
        .arg("--mcp-config")
        .arg(&mcp)
        .arg("--strict-mcp-config")
        .args(extra)
        .current_dir(dir)
        .env("HOME", &home)
        .env(
            "ANTHROPIC_BASE_URL",
            format!("http://127.0.0.1:{}", model.port),
        )
        .env("ANTHROPIC_API_KEY", "sk-fake")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("MCP_CONNECTION_NONBLOCKING", "false")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .expect("claude finished within 120 s")
        .expect("claude runs");
    (out, model)
}

#[tokio::test]
async fn claude_code_enforces_toolgate_decisions() {
    let Some(claude) = claude_binary() else {
        return;
    };
    let (server, _data) = start().await;
    server
        .set_controls(pb::AutoRunControls {
            enabled: true,
            allowed: vec!["mkdir".into()],
            blocked: vec!["touch".into()],
            // a shell write auto-runs where a file tool's write would: mkdir's directory
            // in the working directory is a write_file the admin lets run
            mcp_tool_allowlist: vec!["markers:safe".into(), "builtin:write_file".into()],
            mcp_tool_blocklist: vec!["markers:danger".into()],
            ..Default::default()
        })
        .await;
    server.yolo("alice").await;
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let settings = install_hook(dir, &server, "alice-token");
    let bash = |path: &Path, verb: &str| {
        json!({"name": "Bash", "input": {"command": format!("{verb} {}", path.display()),
                                          "description": "make a marker"}})
    };
    let mcp = |tool: &str, path: &Path| json!({"name": format!("mcp__markers__{tool}"), "input": {"path": path.display().to_string()}});
    let reason = |s: &Session| {
        s.tool_results
            .iter()
            .map(|r| r["content"].to_string())
            .collect::<Vec<_>>()
            .join("\n")
    };

    // an allowed command runs
    let allowed = dir.join("allowed-dir");
    let s = run_claude(&claude, dir, &settings, bash(&allowed, "mkdir")).await;
    assert!(allowed.is_dir(), "allowed mkdir ran: {}", s.result);
    assert_eq!(s.result["permission_denials"], json!([]));

    // a blocked command does not run, and the model is told why
    let blocked = dir.join("blocked-file");
    let s = run_claude(&claude, dir, &settings, bash(&blocked, "touch")).await;
    assert!(!blocked.exists(), "blocked touch did not run");
    assert!(
        reason(&s).contains("toolgate ASK (COMMAND_BLOCKED)"),
        "model received: {}",
        reason(&s)
    );
    assert_eq!(s.tool_results[0]["is_error"], true);

    // a denied MCP tool does not run; an allowed one does
    let denied = dir.join("danger-marker");
    let s = run_claude(&claude, dir, &settings, mcp("danger", &denied)).await;
    assert!(!denied.exists(), "denied MCP tool did not run");
    assert!(
        reason(&s).contains("toolgate DENY (BLOCKED_BY_ADMIN)"),
        "model received: {}",
        reason(&s)
    );
    let safe = dir.join("safe-marker");
    let s = run_claude(&claude, dir, &settings, mcp("safe", &safe)).await;
    assert!(safe.exists(), "allowed MCP tool ran: {}", s.result);

    // with the toolgate server stopped, even an allowed command is blocked
    server.stop().await;
    let down = dir.join("down-dir");
    let s = run_claude(&claude, dir, &settings, bash(&down, "mkdir")).await;
    assert!(!down.exists(), "nothing runs while toolgate is down");
    assert!(
        reason(&s).contains("toolgate could not decide"),
        "model received: {}",
        reason(&s)
    );
}

#[tokio::test]
async fn through_the_proxy_claude_code_is_not_offered_the_denied_tool() {
    let Some(claude) = claude_binary() else {
        return;
    };
    let (server, _data) = start().await;
    server
        .set_controls(pb::AutoRunControls {
            enabled: true,
            mcp_tool_allowlist: vec!["markers:safe".into()],
            mcp_tool_blocklist: vec!["markers:danger".into()],
            ..Default::default()
        })
        .await;
    server
        .users("alice-token")
        .update_user_settings(pb::UpdateUserSettingsRequest {
            settings: Some(pb::UserSettings {
                use_yolo_mode: true,
                ..user_settings(TEAM, "alice")
            }),
            expected_revision: None,
            update_mask: None,
        })
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    // Claude Code's own permission for the allowed tool, so `-p` runs it unasked
    let settings = dir.join("settings.json");
    std::fs::write(
        &settings,
        json!({"permissions": {"allow": ["mcp__markers__safe"]}}).to_string(),
    )
    .unwrap();
    let up = format!("http://{}", server.addr);
    let proxied = json!({"mcpServers": {"markers": {
        "command": env!("CARGO_BIN_EXE_toolgate"),
        "args": ["proxy", "--server-id", "markers", "--team", TEAM, "--user", "alice", "--",
                 "python3", Path::new(FAKES).join("mcp_markers.py")],
        "env": {"TOOLGATE_SERVER": up, "TOOLGATE_TOKEN": "alice-token"}}}});
    let call = |tool: &str, path: &Path| json!({"name": format!("mcp__markers__{tool}"), "input": {"path": path.display().to_string()}});

    // the model is offered the allowed tool and not the denied one; the allowed runs
    let safe = dir.join("safe-marker");
    let s = run_claude_with(&claude, dir, &settings, &proxied, call("safe", &safe)).await;
    let offered: Vec<&String> = s.offered.iter().flatten().collect();
    assert!(
        offered.iter().any(|t| *t == "mcp__markers__safe"),
        "the allowed tool is offered: {:?}",
        s.offered
    );
    assert!(
        !offered.iter().any(|t| *t == "mcp__markers__danger"),
        "the denied tool is not offered: {:?}",
        s.offered
    );
    assert!(
        safe.exists(),
        "the allowed tool ran through the proxy: {}",
        s.result
    );

    // a model that names the denied tool anyway gets no such tool, and nothing runs
    let danger = dir.join("danger-marker");
    let s = run_claude_with(&claude, dir, &settings, &proxied, call("danger", &danger)).await;
    assert!(
        !danger.exists(),
        "the denied tool did not run: {}",
        s.result
    );
    assert_eq!(s.tool_results[0]["is_error"], true, "{:?}", s.tool_results);
    server.stop().await;
}

/// The developer's steps in README.md ("For developers"), as written, on a fresh home
/// directory and with no `TOOLGATE_*` variable set by hand: the token the admin handed
/// over in a file, `toolgate hook install claude-code --server … --token-file …`,
/// `toolgate hook check claude-code`; then the real Claude Code runs an allowed
/// `Read` and is refused a blocked command.
///
/// The token is a static one of the server's configuration for now; once
/// `toolgate token create` exists, the one step that writes `token_file` below becomes
/// that command's output.
#[tokio::test(flavor = "multi_thread")]
async fn a_developer_following_the_readme_gets_decisions() {
    let Some(claude) = claude_binary() else {
        return;
    };
    let (server, _data) = start().await;
    // the admin's part: reads may auto-run, `touch` is blocked, alice has auto-run on
    server
        .set_controls(pb::AutoRunControls {
            enabled: true,
            blocked: vec!["touch".into()],
            mcp_tool_allowlist: vec!["builtin:read_file".into()],
            ..Default::default()
        })
        .await;
    server.yolo("alice").await;

    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let home = dir.join("home");
    let project = dir.join("project");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    let up = format!("http://{}", server.addr);
    let toolgate = |args: &[&str]| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_toolgate"));
        for (key, _) in std::env::vars().filter(|(k, _)| k.starts_with("TOOLGATE_")) {
            cmd.env_remove(key);
        }
        let out = cmd
            .args(args)
            .env("HOME", &home)
            .env_remove("XDG_CONFIG_HOME")
            .current_dir(&project)
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "toolgate {args:?}: {text}");
        text
    };
    // the admin issues alice a token (README: "toolgate token create"), shown once, and
    // hands it over as a file only its owner reads
    let created = toolgate(&[
        "token",
        "create",
        "--server",
        &up,
        "--token",
        "operator-token",
        "--team",
        "acme",
        "--user",
        "alice",
        "-o",
        "json",
    ]);
    let json = created
        .find('{')
        .zip(created.rfind('}'))
        .map(|(start, end)| &created[start..=end])
        .unwrap_or_else(|| panic!("no JSON in {created}"));
    let created: serde_json::Value = serde_json::from_str(json).expect("token create's JSON");
    let secret = created["secret"].as_str().expect("the secret, once");
    let token_file = home.join("toolgate-token");
    std::fs::write(&token_file, format!("{secret}\n")).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let token_path = token_file.display().to_string();
    toolgate(&[
        "hook",
        "install",
        "claude-code",
        "--server",
        &up,
        "--token-file",
        &token_path,
    ]);
    let settings = std::fs::read_to_string(home.join(".claude/settings.json")).unwrap();
    assert!(!settings.contains(secret), "no token in {settings}");
    let check = toolgate(&["hook", "check", "claude-code"]);
    assert!(check.contains("team acme, user alice"), "{check}");
    assert!(check.contains("allow"), "{check}");

    let run = |call: Value| {
        let model = FakeModel::start(dir, &json!([call]));
        let mut cmd = tokio::process::Command::new(&claude);
        for (key, _) in std::env::vars().filter(|(k, _)| {
            k.starts_with("TOOLGATE_") || k.starts_with("ANTHROPIC_") || k.starts_with("CLAUDE")
        }) {
            cmd.env_remove(key);
        }
        let run = cmd
            .args(["-p", "make the call", "--output-format", "json"])
            .current_dir(&project)
            .env("HOME", &home)
            .env_remove("XDG_CONFIG_HOME")
            .env(
                "ANTHROPIC_BASE_URL",
                format!("http://127.0.0.1:{}", model.port),
            )
            .env("ANTHROPIC_API_KEY", "sk-fake")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("DISABLE_AUTOUPDATER", "1")
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output();
        async move {
            let out = tokio::time::timeout(Duration::from_secs(120), run)
                .await
                .expect("claude finished within 120 s")
                .expect("claude runs");
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            let results: Vec<String> = model
                .tool_results()
                .iter()
                .map(|r| r["content"].to_string())
                .collect();
            (stdout, results.join("\n"))
        }
    };

    // an allowed Read runs: the model gets the file's content
    let notes = project.join("notes.txt");
    std::fs::write(&notes, "the-marker-in-the-notes\n").unwrap();
    let (out, results) = run(json!({"name": "Read",
        "input": {"file_path": notes.display().to_string()}}))
    .await;
    assert!(
        results.contains("the-marker-in-the-notes"),
        "Read ran: {results}\n{out}"
    );

    // a blocked command does not run, and the model is told why
    let blocked = project.join("blocked-file");
    let (out, results) = run(json!({"name": "Bash", "input": {
        "command": format!("touch {}", blocked.display()), "description": "make a file"}}))
    .await;
    assert!(!blocked.exists(), "blocked touch did not run: {out}");
    assert!(
        results.contains("COMMAND_BLOCKED"),
        "model received: {results}\n{out}"
    );
    server.stop().await;
}
