//! `toolgate hook <client>` as the clients run it: the real binary, the clients' own
//! payloads (tests/data/hooks), a real server on an ephemeral port. The exact stdout
//! and exit code of every case are in tests/data/hooks/cases.golden (regenerate with
//! UPDATE_GOLDEN=1 and review the diff).

use crate::support;

use serde_json::Value;
use std::path::Path;
use std::process::Stdio;
use support::*;
use tokio::io::AsyncWriteExt;
use toolgate::proto::v1 as pb;

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/hooks");

/// Team acme: shell prefixes allowed and blocked, one MCP tool and `Read` allowed,
/// one MCP tool blocked; alice has auto-run on.
async fn policy(server: &TestServer) {
    server
        .set_controls(pb::AutoRunControls {
            enabled: true,
            allowed: vec!["git status".into(), "npm test".into()],
            blocked: vec!["rm".into(), "git push".into()],
            mcp_tool_allowlist: vec!["github:create_issue".into(), "builtin:Read".into()],
            mcp_tool_blocklist: vec!["github:delete_repo".into()],
            ..Default::default()
        })
        .await;
    server.yolo("alice").await;
}

pub(crate) struct Outcome {
    pub(crate) exit: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

/// Runs the hook with `stdin`; every wait is bounded by the hook's own deadline.
pub(crate) async fn hook(
    addr: &str,
    token: &str,
    client: &str,
    args: &[String],
    stdin: Vec<u8>,
) -> Outcome {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolgate"));
    for (key, _) in std::env::vars().filter(|(k, _)| k.starts_with("TOOLGATE_")) {
        cmd.env_remove(key);
    }
    // the hook's settings are its flags, as `hook install` writes them
    let timeout = if args.iter().any(|a| a == "--timeout-ms") {
        &[][..]
    } else {
        &["--timeout-ms", "5000"][..]
    };
    let mut child = cmd
        .args(["hook", client])
        .args(args)
        .args(["--server", addr, "--token", token])
        .args(timeout)
        // no ~/.cursor/mcp.json of the machine's
        .env("HOME", "/nonexistent")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn hook");
    let mut input = child.stdin.take().unwrap();
    // the hook stops reading past its limit: a broken pipe is expected then
    let _ = input.write_all(&stdin).await;
    drop(input);
    let out = tokio::time::timeout(std::time::Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("hook finished within 30 s")
        .expect("hook output");
    Outcome {
        exit: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[tokio::test]
async fn hook_answers_match_the_golden_table() {
    let (server, _dir) = start().await;
    policy(&server).await;
    let up = format!("http://{}", server.addr);
    // a port that was just free: nothing listens there
    let down = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    // a listener that never accepts: the connection opens, no answer ever comes
    let silent_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent = format!("http://{}", silent_listener.local_addr().unwrap());
    let cases: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(Path::new(DATA).join("cases.json")).unwrap())
            .unwrap();
    let mut report = String::new();
    for case in &cases {
        let name = case["name"].as_str().unwrap();
        let stdin = if let Some(file) = case["payload"].as_str() {
            std::fs::read(Path::new(DATA).join(file)).unwrap()
        } else if let Some(n) = case["stdin_bytes"].as_u64() {
            vec![b' '; n as usize]
        } else {
            case["stdin"].as_str().unwrap().as_bytes().to_vec()
        };
        let args: Vec<String> = case["args"]
            .as_array()
            .map(|a| a.iter().map(|v| v.as_str().unwrap().to_owned()).collect())
            .unwrap_or_default();
        let addr = match case["server"].as_str() {
            Some("down") => &down,
            Some("silent") => &silent,
            _ => &up,
        };
        let token = case["token"].as_str().unwrap_or("alice-token");
        let out = hook(addr, token, case["client"].as_str().unwrap(), &args, stdin).await;
        // the addresses change from run to run
        let clean = |s: &str| {
            s.replace(&down, "http://DOWN")
                .replace(&silent, "http://SILENT")
                .replace(&up, "http://UP")
        };
        report.push_str(&format!(
            "== {name}\nexit: {}\nstdout: {}\nstderr: {}\n",
            out.exit,
            clean(out.stdout.trim_end()),
            clean(out.stderr.trim_end())
        ));
    }
    let golden = Path::new(DATA).join("cases.golden");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&golden, &report).unwrap();
    }
    let want = std::fs::read_to_string(&golden).unwrap_or_default();
    drop(silent_listener);
    assert_eq!(
        report, want,
        "hook answers differ from tests/data/hooks/cases.golden (UPDATE_GOLDEN=1 rewrites it)"
    );
    server.stop().await;
}

#[tokio::test]
async fn install_merges_into_existing_settings() {
    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(
        &settings,
        r#"{"model": "opus", "permissions": {"allow": ["Read"]}}"#,
    )
    .unwrap();
    for _ in 0..2 {
        let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolgate"))
            .args([
                "hook",
                "install",
                "claude-code",
                "--scope",
                "project",
                "--command",
            ])
            .arg("toolgate hook claude-code")
            .arg("--path")
            .arg(dir.path())
            .output()
            .await
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("wrote "));
    }
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!(v["model"], "opus");
    assert_eq!(v["permissions"]["allow"][0], "Read");
    let entries = v["hooks"]["PreToolUse"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "installing twice leaves one entry");
    assert_eq!(
        entries[0]["hooks"][0]["command"],
        "toolgate hook claude-code"
    );

    for (client, file) in [
        ("claude-code", "etc/claude-code/managed-settings.json"),
        ("codex", "etc/codex/requirements.toml"),
        ("cursor", "etc/cursor/hooks.json"),
        ("gemini", "etc/gemini-cli/settings.json"),
    ] {
        let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolgate"))
            .args(["hook", "install", client, "--scope", "managed", "--path"])
            .arg(dir.path())
            // a managed file runs on other machines: it names their binary's path
            .args(["--command", "/usr/local/bin/toolgate"])
            .output()
            .await
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(dir.path().join(file).exists(), "{file} written");
    }
    let managed =
        std::fs::read_to_string(dir.path().join("etc/claude-code/managed-settings.json")).unwrap();
    assert!(managed.contains("\"allowManagedHooksOnly\": true"));
    assert!(managed.contains("/usr/local/bin/toolgate hook claude-code"));
}

#[tokio::test]
async fn export_prints_the_effective_policy_with_warnings() {
    let (server, _dir) = start().await;
    policy(&server).await;
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["--server", &format!("http://{}", server.addr)])
        .args(["--token", "alice-token", "export", "claude-code"])
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let allow = v["permissions"]["allow"].as_array().unwrap();
    assert!(allow.contains(&Value::from("Bash(npm test *)")));
    assert!(allow.contains(&Value::from("mcp__github__create_issue")));
    assert!(allow.contains(&Value::from("Read")));
    assert!(
        v["permissions"]["deny"]
            .as_array()
            .unwrap()
            .contains(&Value::from("mcp__github__delete_repo"))
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    // `git status` is exported: every option its grammar knows only reads, and one
    // it does not know asks in toolgate and is refused by git
    assert!(
        allow.contains(&Value::from("Bash(git status *)")),
        "{allow:?}"
    );
    assert!(stderr.contains("exported policy revision 2"), "{stderr}");
    server.stop().await;
}

/// Inside a subagent, Claude Code's `agent_type` is its seed 004 role: the roles
/// decide with the call's `file_path`; the same call outside a subagent is decided
/// as before roles.
#[tokio::test]
async fn a_claude_code_subagent_is_decided_by_its_role() {
    let (server, _dir) = start().await;
    policy(&server).await;
    let mut controls = pb::AutoRunControls {
        enabled: true,
        mcp_tool_allowlist: vec!["builtin:Read".into()],
        ..Default::default()
    };
    controls.roles = roles(
        &serde_json::json!({
            "toolCategories": {"SYSTEM_OPERATIONS": {"tools": ["FILE_READ"]}},
            "agentRoles": {"Explore": {}},
            "allowLists": {"explore": {"roleId": "Explore", "contexts": {"default": {
                "allowedTools": {"SYSTEM_OPERATIONS": ["FILE_READ"]},
                "restrictions": {"forbiddenFiles": ["*.pem"]}
            }}}},
            "defaultContext": "default"
        })
        .to_string(),
    );
    server.set_controls(controls).await;
    let up = format!("http://{}", server.addr);
    let payload = |subagent: bool| {
        let mut v = serde_json::json!({
            "session_id": "s1", "cwd": "/home/dev/proj", "hook_event_name": "PreToolUse",
            "tool_name": "Read", "tool_input": {"file_path": "/home/dev/proj/deploy/key.pem"}
        });
        if subagent {
            v["agent_id"] = "a7f3c".into();
            v["agent_type"] = "Explore".into();
        }
        serde_json::to_vec(&v).unwrap()
    };
    let out = hook(&up, "alice-token", "claude-code", &[], payload(true)).await;
    assert_eq!(out.exit, 0, "{}", out.stderr);
    let answer: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(answer["hookSpecificOutput"]["permissionDecision"], "deny");
    assert!(
        answer["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains("matches forbiddenFiles *.pem"),
        "{answer}"
    );
    let out = hook(&up, "alice-token", "claude-code", &[], payload(false)).await;
    let answer: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(answer["hookSpecificOutput"]["permissionDecision"], "allow");
    server.stop().await;
}
