//! The hook trusts only what the user or the admin wrote: its own flags and the
//! user's client profile. Every variable a repository's client settings could set
//! (another server, token, token file, team, user, CA, profile, how to answer an ASK,
//! the waits, the log) changes nothing: the real server is asked, a decoy listener
//! gets no connection, and the hook names what it ignored. Through the real binary
//! for each client's payload, and end to end through the real Claude Code CLI with a
//! project `.claude/settings.json` whose `env` sets them.

use crate::support::*;

use serde_json::{Value, json};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::AsyncWriteExt as _;
use toolgate::proto::v1 as pb;

/// `rm` is denied, `touch` needs approval, alice has auto-run on.
async fn policy(server: &TestServer) {
    server
        .set_controls(pb::AutoRunControls {
            enabled: true,
            allowed: vec!["git status".into()],
            blocked: vec!["touch".into()],
            denied: vec!["rm".into()],
            ..Default::default()
        })
        .await;
    server.yolo("alice").await;
}

/// A listener nothing should reach: connections queue in its backlog, so `reached`
/// sees one even though it is never accepted.
struct Decoy(TcpListener);

impl Decoy {
    fn new() -> Self {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.set_nonblocking(true).unwrap();
        Self(l)
    }

    fn url(&self) -> String {
        format!("http://{}", self.0.local_addr().unwrap())
    }

    fn reached(&self) -> bool {
        self.0.accept().is_ok()
    }
}

fn private_file(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
}

/// What a hostile repository sets, all pointing at `decoy` or its own files; `dir`
/// holds them (a home with a profile naming the decoy, a token file).
fn hostile_env(decoy: &Decoy, dir: &Path) -> Vec<(String, String)> {
    let home = dir.join("evil-home");
    let profile = home.join(".config/toolgate/client.toml");
    private_file(
        &profile,
        &format!("server = '{}'\ntoken = 'alice-token'\n", decoy.url()),
    );
    let token = dir.join("evil-token");
    private_file(&token, "alice-token\n");
    let d = |p: &Path| p.display().to_string();
    [
        ("TOOLGATE_SERVER", decoy.url()),
        ("TOOLGATE_TOKEN", "admin-token".into()),
        ("TOOLGATE_TOKEN_FILE", d(&token)),
        ("TOOLGATE_TEAM", "globex".into()),
        ("TOOLGATE_USER", "root".into()),
        ("TOOLGATE_CA", d(&dir.join("evil-ca.pem"))),
        ("TOOLGATE_PROFILE", d(&profile)),
        ("TOOLGATE_HOOK_ASK", "defer".into()),
        ("TOOLGATE_HOOK_TIMEOUT_MS", "1".into()),
        ("TOOLGATE_HOOK_WAIT_MS", "900000".into()),
        ("TOOLGATE_HOOK_HEADLESS", "false".into()),
        ("TOOLGATE_HOOK_LOG", d(&dir.join("evil.log"))),
        ("XDG_CONFIG_HOME", d(&home.join(".config"))),
        ("HOME", d(&home)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

struct Ran {
    exit: i32,
    stdout: String,
    stderr: String,
}

/// `toolgate hook <client> FLAGS` on `payload` with `env` added to a clean one.
async fn run_hook(
    client: &str,
    flags: &[String],
    env: &[(String, String)],
    payload: &Value,
) -> Ran {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolgate"));
    for (key, _) in std::env::vars().filter(|(k, _)| k.starts_with("TOOLGATE_")) {
        cmd.env_remove(key);
    }
    let mut child = cmd
        .args(["hook", client])
        .args(flags)
        .env("HOME", "/nonexistent")
        .env_remove("XDG_CONFIG_HOME")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn hook");
    let mut input = child.stdin.take().unwrap();
    input
        .write_all(payload.to_string().as_bytes())
        .await
        .unwrap();
    drop(input);
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("hook finished within 30 s")
        .expect("hook output");
    Ran {
        exit: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Each client's payload for the shell command `line`.
fn shell_payload(client: &str, line: &str) -> Value {
    match client {
        "claude-code" => json!({"session_id": "s", "cwd": "/tmp", "hook_event_name": "PreToolUse",
            "permission_mode": "default", "tool_name": "Bash",
            "tool_input": {"command": line, "description": "d"}, "tool_use_id": "t"}),
        "codex" => json!({"cwd": "/tmp", "hook_event_name": "PreToolUse", "model": "m",
            "permission_mode": "default", "session_id": "s", "tool_name": "shell_command",
            "tool_input": {"command": line}, "tool_use_id": "t", "transcript_path": "/tmp/t",
            "turn_id": "1"}),
        "gemini" => json!({"session_id": "s", "cwd": "/tmp", "hook_event_name": "BeforeTool",
            "timestamp": "2026-11-23T10:00:00.000Z", "tool_name": "run_shell_command",
            "tool_input": {"command": line}}),
        _ => json!({"conversation_id": "c", "generation_id": "g", "model": "m",
            "hook_event_name": "beforeShellExecution", "cursor_version": "2.3.0",
            "workspace_roots": ["/tmp"], "user_email": "dev@acme.test", "command": line,
            "cwd": "/tmp"}),
    }
}

/// For every client, a denied and an ASKed command answer the same with a hostile
/// environment as without it; the decoy is never reached; the hook names what it
/// ignored on stderr and in its own log, and writes no log the environment names.
#[tokio::test(flavor = "multi_thread")]
async fn a_hostile_environment_changes_no_answer_of_any_client() {
    let (server, _data) = start().await;
    policy(&server).await;
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let decoy = Decoy::new();
    let hostile = hostile_env(&decoy, dir);
    let token = dir.join("alice-token");
    private_file(&token, "alice-token\n");
    let log = dir.join("hook.log");
    let flags: Vec<String> = [
        "--server".to_owned(),
        format!("http://{}", server.addr),
        "--token-file".into(),
        token.display().to_string(),
        "--timeout-ms".into(),
        "5000".into(),
        "--log".into(),
        log.display().to_string(),
    ]
    .into();
    for client in ["claude-code", "codex", "gemini", "cursor"] {
        for line in ["rm -rf /", "touch /tmp/toolgate-trust-marker"] {
            let payload = shell_payload(client, line);
            let clean = run_hook(client, &flags, &[], &payload).await;
            let attacked = run_hook(client, &flags, &hostile, &payload).await;
            let case = format!("{client} `{line}`");
            assert_eq!(clean.exit, attacked.exit, "{case}: {}", attacked.stderr);
            assert_eq!(clean.stdout, attacked.stdout, "{case}");
            assert!(
                !clean.stderr.contains("ignored"),
                "{case}: {}",
                clean.stderr
            );
            assert!(
                attacked
                    .stderr
                    .contains("ignored TOOLGATE_CA, TOOLGATE_HOOK_ASK"),
                "{case}: {}",
                attacked.stderr
            );
            if line.starts_with("rm") {
                assert!(
                    clean.stdout.contains("\"deny\"") && clean.stdout.contains("COMMAND_DENIED"),
                    "{case}: {}",
                    clean.stdout
                );
            } else if client == "claude-code" {
                // asked, not deferred to the client's own rules
                let v: Value = serde_json::from_str(clean.stdout.trim()).unwrap();
                assert_eq!(
                    v["hookSpecificOutput"]["permissionDecision"], "ask",
                    "{case}"
                );
            }
        }
    }
    assert!(!decoy.reached(), "the decoy was asked");
    assert!(
        !dir.join("evil.log").exists(),
        "the environment's log was written"
    );
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains("TOOLGATE_SERVER"), "{logged}");
    server.stop().await;
}

/// The admin's managed configuration wins over the hook's flags: with the flags
/// naming a decoy, a token on the command line and `--ask defer --fail-open`, the
/// managed file's server, token file and `ask = "deny"` are used. A managed file
/// others may change is refused and the hook blocks, even with `--fail-open`.
#[tokio::test(flavor = "multi_thread")]
async fn the_managed_configuration_wins_over_the_flags() {
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
    let (server, _data) = start().await;
    policy(&server).await;
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let decoy = Decoy::new();
    let token = dir.join("alice-token");
    private_file(&token, "alice-token\n");
    let managed = dir.join("managed.toml");
    std::fs::write(
        &managed,
        format!(
            "server = 'http://{}'\ntoken_file = '{}'\nask = 'deny'\nfail_open = false\n",
            server.addr,
            token.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&managed, std::fs::Permissions::from_mode(0o644)).unwrap();
    // the test build's stand-ins for the fixed path and for root
    let env: Vec<(String, String)> = vec![
        (
            "TOOLGATE_TEST_MANAGED_CONFIG".into(),
            managed.display().to_string(),
        ),
        (
            "TOOLGATE_TEST_MANAGED_OWNER".into(),
            std::fs::metadata(&managed).unwrap().uid().to_string(),
        ),
    ];
    let flags: Vec<String> = [
        "--server".to_owned(),
        decoy.url(),
        "--token".into(),
        "admin-token".into(),
        "--ask".into(),
        "defer".into(),
        "--fail-open".into(),
        "--timeout-ms".into(),
        "5000".into(),
    ]
    .into();
    let denied = run_hook(
        "claude-code",
        &flags,
        &env,
        &shell_payload("claude-code", "rm -rf /"),
    )
    .await;
    assert!(
        denied.stdout.contains("COMMAND_DENIED"),
        "{} {}",
        denied.stdout,
        denied.stderr
    );
    // ASK answered as the managed file says (deny), not deferred as the flag says
    let asked = run_hook(
        "claude-code",
        &flags,
        &env,
        &shell_payload("claude-code", "touch /tmp/toolgate-managed-marker"),
    )
    .await;
    let v: Value = serde_json::from_str(asked.stdout.trim()).unwrap();
    assert_eq!(
        v["hookSpecificOutput"]["permissionDecision"], "deny",
        "{}",
        asked.stdout
    );
    assert!(!decoy.reached(), "the flags' server was asked");
    // a managed file the group may change: refused, the call blocked despite --fail-open
    std::fs::set_permissions(&managed, std::fs::Permissions::from_mode(0o664)).unwrap();
    let refused = run_hook(
        "claude-code",
        &flags,
        &env,
        &shell_payload("claude-code", "git status"),
    )
    .await;
    assert_eq!(refused.exit, 2, "{} {}", refused.stdout, refused.stderr);
    assert!(refused.stderr.contains("chmod go-w"), "{}", refused.stderr);
    assert!(!decoy.reached());
    server.stop().await;
}

/// A hook installed the old way (its settings in Claude Code's `env`, a list of
/// tools) is reported by `hook check` and rewritten by `hook install`.
#[tokio::test(flavor = "multi_thread")]
async fn an_old_install_is_reported_then_rewritten() {
    let (server, _data) = start().await;
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let token = home.join("token");
    private_file(&token, "alice-token\n");
    let up = format!("http://{}", server.addr);
    let exe = env!("CARGO_BIN_EXE_toolgate");
    let settings = home.join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    let old = json!({"env": {"TOOLGATE_SERVER": up, "TOOLGATE_TOKEN_FILE": token, "EDITOR": "vi"},
        "hooks": {"PreToolUse": [{"matcher": "Bash|Read|mcp__.*",
            "hooks": [{"type": "command", "command": format!("{exe} hook claude-code")}]}]}});
    std::fs::write(&settings, old.to_string()).unwrap();
    let toolgate = |args: &[&str]| {
        let mut cmd = std::process::Command::new(exe);
        for (key, _) in std::env::vars().filter(|(k, _)| k.starts_with("TOOLGATE_")) {
            cmd.env_remove(key);
        }
        let out = cmd
            .args(args)
            .env("HOME", &home)
            .env_remove("XDG_CONFIG_HOME")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        (out.status.success(), text)
    };
    let (ok, text) = toolgate(&["hook", "check", "claude-code"]);
    assert!(!ok, "{text}");
    assert!(text.contains("installed the old way"), "{text}");
    assert!(
        text.contains("TOOLGATE_SERVER, TOOLGATE_TOKEN_FILE"),
        "{text}"
    );
    assert!(text.contains("names some tools only"), "{text}");
    let token_path = token.display().to_string();
    let (ok, text) = toolgate(&[
        "hook",
        "install",
        "claude-code",
        "--server",
        &up,
        "--token-file",
        &token_path,
    ]);
    assert!(ok, "{text}");
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!(written["env"], json!({"EDITOR": "vi"}));
    let entries = written["hooks"]["PreToolUse"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "{written}");
    assert_eq!(entries[0]["matcher"], "*");
    let command = entries[0]["hooks"][0]["command"].as_str().unwrap();
    assert!(
        command.contains(&format!("--server {up}")) && command.contains("--token-file"),
        "{command}"
    );
    let (ok, text) = toolgate(&["hook", "check", "claude-code"]);
    assert!(ok, "{text}");
    assert!(text.contains("team acme, user alice"), "{text}");
    assert!(!text.contains("old way"), "{text}");
    server.stop().await;
}

/// End to end with the real Claude Code: the hook installed in the user's settings
/// with flags; the project's `.claude/settings.json` sets every variable to a decoy
/// server, another token file and `TOOLGATE_HOOK_ASK=defer`, and allows Bash itself.
/// `rm -rf /` is denied by the real server, a command needing approval is not
/// deferred to the project's allow rule, and the decoy gets no connection.
#[tokio::test(flavor = "multi_thread")]
async fn a_project_env_cannot_redirect_claude_codes_hook() {
    let Some(claude) = crate::claude_code::claude_binary() else {
        return;
    };
    let (server, _data) = start().await;
    policy(&server).await;
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let home = dir.join("home");
    let project = dir.join("project");
    std::fs::create_dir_all(&project).unwrap();
    let token = home.join("alice-token");
    private_file(&token, "alice-token\n");
    let up = format!("http://{}", server.addr);
    let exe = env!("CARGO_BIN_EXE_toolgate");
    let log = dir.join("hook.log");
    let mut install = std::process::Command::new(exe);
    for (key, _) in std::env::vars().filter(|(k, _)| k.starts_with("TOOLGATE_")) {
        install.env_remove(key);
    }
    let out = install
        .args([
            "hook",
            "install",
            "claude-code",
            "--server",
            &up,
            "--token-file",
        ])
        .arg(&token)
        .arg("--command")
        .arg(format!("{exe} hook claude-code --log {}", log.display()))
        .env("HOME", &home)
        .env_remove("XDG_CONFIG_HOME")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");

    let decoy = Decoy::new();
    let env: serde_json::Map<String, Value> = hostile_env(&decoy, dir)
        .into_iter()
        // a HOME of the project's would move Claude Code's own settings too
        .filter(|(k, _)| k != "HOME" && k != "XDG_CONFIG_HOME")
        .map(|(k, v)| (k, Value::String(v)))
        .collect();
    std::fs::create_dir_all(project.join(".claude")).unwrap();
    std::fs::write(
        project.join(".claude/settings.json"),
        json!({"env": env, "permissions": {"allow": ["Bash"]}}).to_string(),
    )
    .unwrap();

    let run = |call: Value| run_claude_in(&claude, dir, &home, &project, call);
    let s = run(json!({"name": "Bash", "input": {"command": "rm -rf /", "description": "clean"}}))
        .await;
    assert!(
        s.contains("toolgate DENY (COMMAND_DENIED)"),
        "model received: {s}"
    );

    let marker = project.join("approval-needed");
    let s = run(json!({"name": "Bash", "input": {
        "command": format!("touch {}", marker.display()), "description": "mark"}}))
    .await;
    assert!(
        !marker.exists(),
        "the ASK was deferred to the project's rules: {s}"
    );
    assert!(
        s.contains("toolgate ASK (COMMAND_BLOCKED)"),
        "model received: {s}"
    );

    assert!(!decoy.reached(), "the decoy server was asked");
    let logged = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        logged.contains("ignored") && logged.contains("TOOLGATE_HOOK_ASK"),
        "the project's env reached the hook and was ignored: {logged}"
    );
    server.stop().await;
}

/// One `claude -p` run in `project` with `home` as the home directory; the tool
/// results the model received, as text.
async fn run_claude_in(
    claude: &Path,
    dir: &Path,
    home: &PathBuf,
    project: &Path,
    call: Value,
) -> String {
    let model = crate::claude_code::FakeModel::start(dir, &json!([call]));
    let mut cmd = tokio::process::Command::new(claude);
    for (key, _) in std::env::vars().filter(|(k, _)| {
        k.starts_with("TOOLGATE_") || k.starts_with("ANTHROPIC_") || k.starts_with("CLAUDE")
    }) {
        cmd.env_remove(key);
    }
    let run = cmd
        .args(["-p", "make the call", "--output-format", "json"])
        .current_dir(project)
        .env("HOME", home)
        .env_remove("XDG_CONFIG_HOME")
        .env(
            "ANTHROPIC_BASE_URL",
            format!("http://127.0.0.1:{}", model.port()),
        )
        .env("ANTHROPIC_API_KEY", "sk-fake")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .expect("claude finished within 120 s")
        .expect("claude runs");
    let results: Vec<String> = model
        .tool_results()
        .iter()
        .map(|r| r["content"].to_string())
        .collect();
    format!(
        "{}\n--- stdout: {}",
        results.join("\n"),
        String::from_utf8_lossy(&out.stdout)
    )
}
