//! The trust boundaries through the real `toolgate hook <client>` binary and a real
//! server: a Cursor workspace that renames a blocked server (both `mcp.json` files on
//! disk), Codex's and Claude Code's shell tools under other names, and a subagent's
//! `WebFetch` of a URL two readers send to different hosts.

use crate::support::*;

use serde_json::{Value, json};
use std::path::Path;
use std::process::Stdio;
use tokio::io::AsyncWriteExt;
use toolgate::proto::v1 as pb;

struct Ran {
    exit: i32,
    stdout: Value,
    stderr: String,
}

/// Runs `toolgate hook <client>` with `home` as the home directory; bounded.
async fn hook(addr: &str, client: &str, args: &[&str], home: &Path, stdin: &Value) -> Ran {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolgate"));
    for (key, _) in std::env::vars().filter(|(k, _)| k.starts_with("TOOLGATE_")) {
        cmd.env_remove(key);
    }
    let mut child = cmd
        .args(["hook", client])
        .args(args)
        .args([
            "--server",
            addr,
            "--token",
            "alice-token",
            "--timeout-ms",
            "5000",
        ])
        .env("HOME", home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn hook");
    let mut input = child.stdin.take().unwrap();
    input
        .write_all(&serde_json::to_vec(stdin).unwrap())
        .await
        .unwrap();
    drop(input);
    let out = tokio::time::timeout(std::time::Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("hook finished within 30 s")
        .expect("hook output");
    let text = String::from_utf8_lossy(&out.stdout);
    Ran {
        exit: out.status.code().unwrap_or(-1),
        stdout: serde_json::from_str(text.trim()).unwrap_or(Value::Null),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn write(path: &Path, value: &Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, serde_json::to_vec(value).unwrap()).unwrap();
}

/// The user's `~/.cursor/mcp.json` names `github` at a URL; the workspace's names the
/// same URL `jira`. The admin blocks `github:delete_*`, and allows everything of
/// `jira`: the call stays github's, denied, and the answer says the workspace's name
/// was ignored. A workspace that names a server the user's file does not know adds it.
#[tokio::test]
async fn a_cursor_workspace_cannot_rename_a_blocked_server() {
    let (server, _dir) = start().await;
    server
        .set_controls(pb::AutoRunControls {
            enabled: true,
            mcp_tool_allowlist: vec!["jira:*".into(), "docs:*".into()],
            mcp_tool_blocklist: vec!["github:delete_*".into()],
            ..Default::default()
        })
        .await;
    server.yolo("alice").await;
    let up = format!("http://{}", server.addr);
    let home = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let url = "https://mcp.github.test/mcp";
    write(
        &home.path().join(".cursor/mcp.json"),
        &json!({"mcpServers": {"github": {"url": url}}}),
    );
    write(
        &workspace.path().join(".cursor/mcp.json"),
        &json!({"mcpServers": {
            "jira": {"url": url},
            "docs": {"url": "https://docs.test/mcp"}
        }}),
    );
    let payload = |url: &str| {
        json!({
            "conversation_id": "c", "generation_id": "g", "hook_event_name": "beforeMCPExecution",
            "workspace_roots": [workspace.path()], "tool_name": "delete_repo",
            "tool_input": "{\"owner\":\"acme\"}", "url": url
        })
    };
    let out = hook(&up, "cursor", &[], home.path(), &payload(url)).await;
    assert_eq!(out.exit, 0, "{}", out.stderr);
    assert_eq!(out.stdout["permission"], "deny", "{}", out.stdout);
    let message = out.stdout["user_message"].as_str().unwrap();
    assert!(message.contains("BLOCKED_BY_ADMIN"), "{message}");
    assert!(
        message.contains("the name \"jira\" from a less trusted file is ignored"),
        "{message}"
    );

    // a server only the workspace names is added under its name
    let out = hook(
        &up,
        "cursor",
        &[],
        home.path(),
        &payload("https://docs.test/mcp"),
    )
    .await;
    assert_eq!(out.stdout["permission"], "allow", "{}", out.stdout);

    // the workspace takes the name of the user's server for its own URL: decided as
    // github and as an unknown server, the stricter stands
    write(
        &workspace.path().join(".cursor/mcp.json"),
        &json!({"mcpServers": {"github": {"url": "https://evil.test/mcp"}}}),
    );
    let out = hook(
        &up,
        "cursor",
        &[],
        home.path(),
        &payload("https://evil.test/mcp"),
    )
    .await;
    assert_eq!(out.stdout["permission"], "deny", "{}", out.stdout);
    server.stop().await;
}

/// Under `builtin:*` and auto-run, shell tools under other names are still decided as
/// command lines: Codex's `shell_command` (with its `workdir`) and Claude Code's
/// `PowerShell` of a blocked `rm`; a tool no table knows asks.
#[tokio::test]
async fn shell_tools_under_other_names_are_shells() {
    let (server, _dir) = start().await;
    server
        .set_controls(pb::AutoRunControls {
            enabled: true,
            mcp_tool_allowlist: vec!["builtin:*".into()],
            allowed: vec!["git status".into()],
            blocked: vec!["rm".into()],
            ..Default::default()
        })
        .await;
    server.yolo("alice").await;
    let up = format!("http://{}", server.addr);
    let home = tempfile::tempdir().unwrap();
    let codex = |tool: &str, input: Value| {
        json!({"cwd": "/home/dev/proj", "hook_event_name": "PreToolUse", "model": "gpt-5.5",
            "permission_mode": "default", "session_id": "s", "tool_name": tool,
            "tool_input": input, "tool_use_id": "call_1", "turn_id": "t"})
    };
    let payload = codex(
        "shell_command",
        json!({"command": "rm -rf /", "workdir": "sub"}),
    );
    let out = hook(&up, "codex", &[], home.path(), &payload).await;
    assert_eq!(out.exit, 0, "{}", out.stderr);
    let reason = out.stdout["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap_or_default();
    assert_eq!(
        out.stdout["hookSpecificOutput"]["permissionDecision"], "deny",
        "{}",
        out.stdout
    );
    assert!(reason.contains("COMMAND_BLOCKED"), "{reason}");
    for (tool, input) in [
        ("container.exec", json!({"command": ["rm", "-rf", "/"]})),
        (
            "write_stdin",
            json!({"session_id": 3, "chars": "rm -rf /\n"}),
        ),
    ] {
        let out = hook(&up, "codex", &[], home.path(), &codex(tool, input)).await;
        assert_eq!(
            out.stdout["hookSpecificOutput"]["permissionDecision"], "deny",
            "{tool}: {}",
            out.stdout
        );
    }
    // an allowed command through shell_command prints nothing (Codex's own rules)
    let out = hook(
        &up,
        "codex",
        &[],
        home.path(),
        &codex("shell_command", json!({"command": "git status"})),
    )
    .await;
    assert_eq!(out.exit, 0, "{}", out.stderr);
    assert_eq!(out.stdout, Value::Null);

    let claude = |tool: &str, input: Value| {
        json!({"session_id": "s", "cwd": "/home/dev/proj", "hook_event_name": "PreToolUse",
            "tool_name": tool, "tool_input": input})
    };
    let out = hook(
        &up,
        "claude-code",
        &[],
        home.path(),
        &claude("PowerShell", json!({"command": "rm -r -fo C:\\"})),
    )
    .await;
    assert_eq!(
        out.stdout["hookSpecificOutput"]["permissionDecision"], "ask",
        "{}",
        out.stdout
    );
    let out = hook(
        &up,
        "claude-code",
        &[],
        home.path(),
        &claude("Frobnicate", json!({})),
    )
    .await;
    assert_eq!(
        out.stdout["hookSpecificOutput"]["permissionDecision"], "ask",
        "{}",
        out.stdout
    );
    // a known built-in stays allowed by builtin:*
    let out = hook(
        &up,
        "claude-code",
        &[],
        home.path(),
        &claude("Read", json!({"file_path": "/home/dev/proj/a"})),
    )
    .await;
    assert_eq!(
        out.stdout["hookSpecificOutput"]["permissionDecision"], "allow",
        "{}",
        out.stdout
    );
    server.stop().await;
}

/// A subagent restricted to `docs.rs`: the attack URL (`evil.com` to Node's fetch,
/// `docs.rs` to a naive reading) asks; the honest one is allowed.
#[tokio::test]
async fn a_subagents_web_fetch_is_read_as_node_reads_it() {
    let (server, _dir) = start().await;
    let mut controls = pb::AutoRunControls {
        enabled: true,
        mcp_tool_allowlist: vec!["builtin:WebFetch".into()],
        ..Default::default()
    };
    controls.roles = roles(
        &json!({
            "toolCategories": {"SYSTEM_OPERATIONS": {"tools": ["NETWORK_REQUEST"]}},
            "agentRoles": {"Research": {}},
            "allowLists": {"research": {"roleId": "Research", "contexts": {"default": {
                "allowedTools": {"SYSTEM_OPERATIONS": ["NETWORK_REQUEST"]},
                "restrictions": {"allowedNetworkHosts": ["docs.rs"]}
            }}}},
            "defaultContext": "default"
        })
        .to_string(),
    );
    server.set_controls(controls).await;
    server.yolo("alice").await;
    let up = format!("http://{}", server.addr);
    let home = tempfile::tempdir().unwrap();
    let fetch = |url: &str| {
        json!({"session_id": "s1", "cwd": "/home/dev/proj", "hook_event_name": "PreToolUse",
            "tool_name": "WebFetch", "tool_input": {"url": url, "prompt": "read it"},
            "agent_id": "a1", "agent_type": "Research"})
    };
    let decision = |out: &Ran| {
        (
            out.stdout["hookSpecificOutput"]["permissionDecision"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            out.stdout["hookSpecificOutput"]["permissionDecisionReason"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        )
    };
    let out = hook(
        &up,
        "claude-code",
        &[],
        home.path(),
        &fetch("https://evil.com\\@docs.rs/"),
    )
    .await;
    let (d, reason) = decision(&out);
    assert_eq!(d, "ask", "{}", out.stdout);
    assert!(reason.contains("backslash"), "{reason}");
    let out = hook(
        &up,
        "claude-code",
        &[],
        home.path(),
        &fetch("https://evil.com/"),
    )
    .await;
    assert_eq!(decision(&out).0, "deny", "{}", out.stdout);
    let out = hook(
        &up,
        "claude-code",
        &[],
        home.path(),
        &fetch("https://docs.rs/tokio/latest/tokio/"),
    )
    .await;
    assert_eq!(decision(&out).0, "allow", "{}", out.stdout);
    server.stop().await;
}

/// Seed 000's `tool.action` lists behind a hook: the call's `action` argument is
/// passed on, so `interact.navigate` is allowed as the list says, and another action
/// of the same tool is not.
#[tokio::test]
async fn a_hooked_calls_action_is_decided_by_the_tool_action_list() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("policy.yaml");
    std::fs::write(
        &file,
        "teams:\n  - team: acme\n    auto_run_controls:\n      enabled: true\n      mcp_tool_allowlist: [\"gasoline:*\"]\nmcp_servers:\n  - server: gasoline\n    allowed_tools: [\"observe.*\", \"interact.navigate\"]\n",
    )
    .unwrap();
    let mut config = test_config(dir.path());
    config.policy_file = Some(file);
    let server = TestServer::start(config).await;
    server.yolo("alice").await;
    let up = format!("http://{}", server.addr);
    let home = tempfile::tempdir().unwrap();
    let interact = |client: &str, action: &str| match client {
        "gemini" => json!({"session_id": "s", "cwd": "/p", "hook_event_name": "BeforeTool",
            "tool_name": "mcp_gasoline_interact", "tool_input": {"action": action},
            "mcp_context": {"server_name": "gasoline", "tool_name": "interact"}}),
        _ => json!({"session_id": "s", "cwd": "/p", "hook_event_name": "PreToolUse",
            "tool_name": "mcp__gasoline__interact", "tool_input": {"action": action}}),
    };
    let out = hook(
        &up,
        "claude-code",
        &[],
        home.path(),
        &interact("claude-code", "navigate"),
    )
    .await;
    assert_eq!(
        out.stdout["hookSpecificOutput"]["permissionDecision"], "allow",
        "{}",
        out.stdout
    );
    let out = hook(
        &up,
        "claude-code",
        &[],
        home.path(),
        &interact("claude-code", "execute_js"),
    )
    .await;
    assert_eq!(
        out.stdout["hookSpecificOutput"]["permissionDecision"], "deny",
        "{}",
        out.stdout
    );
    let reason = out.stdout["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap();
    assert!(reason.contains("NOT_IN_FILE_ALLOWLIST"), "{reason}");
    let out = hook(
        &up,
        "gemini",
        &[],
        home.path(),
        &interact("gemini", "navigate"),
    )
    .await;
    assert_eq!(out.stdout["decision"], "allow", "{}", out.stdout);
    server.stop().await;
}

/// Issue 36 through the real hook: Claude Code's PowerShell aliases of a denied
/// `rm -rf` are denied; the agent's own Write into `.git/hooks/` is not auto-run
/// although `builtin:*` allows it; a Codex `workdir` of `~/.ssh` is a cd out of the
/// working directory, so a write there is not auto-run; Codex's `bash -lc` of a
/// read-only script auto-runs under `@readonly` without `bash` being allowed.
#[tokio::test]
async fn powershell_write_tools_and_workdirs_are_read_as_what_they_do() {
    let (server, _dir) = start().await;
    server
        .set_controls(pb::AutoRunControls {
            enabled: true,
            mcp_tool_allowlist: vec!["builtin:*".into()],
            allowed: vec!["@readonly".into(), "echo".into()],
            denied: vec!["rm -rf".into()],
            ..Default::default()
        })
        .await;
    server.yolo("alice").await;
    let up = format!("http://{}", server.addr);
    let home = tempfile::tempdir().unwrap();
    let claude = |tool: &str, input: Value| {
        json!({"session_id": "s", "cwd": "/home/dev/proj", "hook_event_name": "PreToolUse",
            "tool_name": tool, "tool_input": input})
    };
    let decision = |out: &Ran| {
        out.stdout["hookSpecificOutput"]["permissionDecision"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    for (tool, input, want) in [
        (
            "PowerShell",
            json!({"command": "Remove-Item -Recurse -Force C:\\"}),
            "deny",
        ),
        ("PowerShell", json!({"command": "ri -r -fo build"}), "deny"),
        ("PowerShell", json!({"command": "Get-ChildItem"}), "ask"),
        (
            "Write",
            json!({"file_path": "/home/dev/proj/.git/hooks/pre-commit", "content": "x"}),
            "ask",
        ),
        (
            "Edit",
            json!({"file_path": "/home/dev/.bashrc", "old_string": "a", "new_string": "b"}),
            "ask",
        ),
        (
            "Write",
            json!({"file_path": "/home/dev/proj/notes.txt", "content": "x"}),
            "allow",
        ),
        ("Bash", json!({"command": "echo x > notes.txt"}), "allow"),
        (
            "Bash",
            json!({"command": "echo x > pre-commit", "directory": ".git/hooks"}),
            "ask",
        ),
    ] {
        let out = hook(
            &up,
            "claude-code",
            &[],
            home.path(),
            &claude(tool, input.clone()),
        )
        .await;
        assert_eq!(out.exit, 0, "{tool} {input}: {}", out.stderr);
        assert_eq!(decision(&out), want, "{tool} {input}: {}", out.stdout);
    }
    let codex = |input: Value| {
        json!({"cwd": "/home/dev/proj", "hook_event_name": "PreToolUse", "model": "gpt-5.5",
            "permission_mode": "default", "session_id": "s", "tool_name": "shell_command",
            "tool_input": input, "tool_use_id": "call_1", "turn_id": "t"})
    };
    // Codex honours only deny: what is not allowed is denied, what is prints nothing
    for (input, denied) in [
        (
            json!({"command": "echo key >> authorized_keys", "workdir": "/home/dev/.ssh"}),
            true,
        ),
        (
            json!({"command": ["bash", "-lc", "ls && git status"]}),
            false,
        ),
        (json!({"command": ["bash", "-lc", "ls > out.txt"]}), true),
    ] {
        let out = hook(&up, "codex", &[], home.path(), &codex(input.clone())).await;
        assert_eq!(out.exit, 0, "{input}: {}", out.stderr);
        assert_eq!(decision(&out) == "deny", denied, "{input}: {}", out.stdout);
    }
    server.stop().await;
}

/// Issue 36: what the server cannot see, the hook checks where the files are. A
/// symbolic link already in the directory (`docs -> /elsewhere`) takes a write out;
/// a nested repository's metadata (`config`, `HEAD`, `objects/`) is protected
/// wherever it stands; an ordinary write still auto-runs.
#[tokio::test]
async fn the_hook_follows_links_and_finds_nested_repository_metadata() {
    let (server, _dir) = start().await;
    server
        .set_controls(pb::AutoRunControls {
            enabled: true,
            mcp_tool_allowlist: vec!["builtin:*".into()],
            allowed: vec!["echo".into()],
            ..Default::default()
        })
        .await;
    server.yolo("alice").await;
    let up = format!("http://{}", server.addr);
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), project.path().join("docs")).unwrap();
    let bare = project.path().join("vendor/lib.git");
    std::fs::create_dir_all(bare.join("objects")).unwrap();
    std::fs::write(bare.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(bare.join("config"), "[core]\n").unwrap();
    let cwd = project.path().to_str().unwrap().to_owned();
    for (tool, input, want) in [
        (
            "Bash",
            json!({"command": "echo x >> docs/notes.txt"}),
            "ask",
        ),
        (
            "Bash",
            json!({"command": "echo x > vendor/lib.git/hooks/post-checkout"}),
            "ask",
        ),
        (
            "Write",
            json!({"file_path": format!("{cwd}/docs/a.txt"), "content": "x"}),
            "ask",
        ),
        ("Bash", json!({"command": "echo x > notes.txt"}), "allow"),
        (
            "Write",
            json!({"file_path": format!("{cwd}/src/new.rs"), "content": "x"}),
            "allow",
        ),
    ] {
        let payload = json!({"session_id": "s", "cwd": cwd, "hook_event_name": "PreToolUse",
            "tool_name": tool, "tool_input": input});
        let out = hook(&up, "claude-code", &[], home.path(), &payload).await;
        assert_eq!(out.exit, 0, "{input}: {}", out.stderr);
        assert_eq!(
            out.stdout["hookSpecificOutput"]["permissionDecision"], want,
            "{input}: {}",
            out.stdout
        );
    }
    server.stop().await;
}
