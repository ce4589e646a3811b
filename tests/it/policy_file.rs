//! The server's policy file: applied at start, reloaded on change (streamed to
//! watchers, audited), invalid edits kept out and reported, managed teams read-only,
//! and an invalid file at start stops the binary.

use crate::support;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;
use support::*;
use tonic::Code;
use toolgate::proto::v1 as pb;
use toolgate::proto::v1::watch_policy_response::Event;

/// How long a test waits for the file watcher (it polls every 250 ms).
const WATCHER_DEADLINE: Duration = Duration::from_secs(10);

const ACME_JIRA: &str = "\
teams:
  - team: acme
    auto_run_controls:
      enabled: true
      mcp_tool_allowlist: [\"jira:*\"]
mcp_servers:
  - server: gasoline
    allowed_tools: [\"observe.*\", \"generate.*\", \"interact.navigate\"]
";

async fn start_with(text: &str) -> (TestServer, tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("policy.yaml");
    std::fs::write(&file, text).unwrap();
    let mut config = test_config(dir.path());
    config.policy_file = Some(file.clone());
    (TestServer::start(config).await, dir, file)
}

fn actor(file: &Path) -> String {
    format!("file:{}", file.display())
}

async fn watch(server: &TestServer) -> tonic::Streaming<pb::WatchPolicyResponse> {
    server
        .policy("alice-token")
        .watch_policy(pb::WatchPolicyRequest {
            team_id: TEAM.into(),
            user_id: "alice".into(),
            after_revision: None,
        })
        .await
        .unwrap()
        .into_inner()
}

/// The next event that is not a heartbeat, within the watcher's deadline.
async fn next(events: &mut tonic::Streaming<pb::WatchPolicyResponse>) -> pb::WatchPolicyResponse {
    tokio::time::timeout(WATCHER_DEADLINE, async {
        loop {
            let e = events.message().await.unwrap().expect("stream ended");
            if !matches!(e.event, Some(Event::Heartbeat(_))) {
                return e;
            }
        }
    })
    .await
    .expect("no event before the deadline")
}

async fn policy_file_status(server: &TestServer) -> Value {
    let config = server
        .info("operator-token")
        .get_server_config(pb::GetServerConfigRequest {})
        .await
        .unwrap()
        .into_inner();
    let config: Value = config_of(&config);
    config["policy_file"].clone()
}

/// Polls GetServerConfig until `done` holds for the policy file's status.
async fn status_until(server: &TestServer, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = tokio::time::Instant::now() + WATCHER_DEADLINE;
    loop {
        let status = policy_file_status(server).await;
        if done(&status) {
            return status;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "policy file status never matched: {status}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn evaluate(server: &TestServer, call: pb::ToolCall) -> pb::Decision {
    server
        .policy("admin-token")
        .evaluate(pb::EvaluateRequest {
            approval: None,
            team_id: TEAM.into(),
            user_id: "alice".into(),
            call: Some(call),
            explain: false,
            agent: None,
            client: String::new(),
            tool_use_id: String::new(),
        })
        .await
        .unwrap()
        .into_inner()
        .decision
        .unwrap()
}

fn gasoline(tool: &str, action: &str) -> pb::ToolCall {
    pb::ToolCall {
        kind: Some(pb::tool_call::Kind::Mcp(pb::McpCall {
            server: "gasoline".into(),
            tool: tool.into(),
            action: action.into(),
        })),
        arguments: None,
    }
}

async fn audit(server: &TestServer, team: &str, kind: &str) -> Vec<pb::AuditEvent> {
    server
        .admin("operator-token")
        .list_audit_events(pb::ListAuditEventsRequest {
            team_id: team.into(),
            kind: audit_kind(kind),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .events
}

#[tokio::test(flavor = "multi_thread")]
async fn applied_at_start_through_the_store() {
    let (server, _dir, file) = start_with(ACME_JIRA).await;
    let admin = server
        .admin("admin-token")
        .get_team_admin_settings(pb::GetTeamAdminSettingsRequest {
            team_id: TEAM.into(),
        })
        .await
        .unwrap()
        .into_inner()
        .settings
        .unwrap();
    assert_eq!(admin.revision, 1);
    assert_eq!(admin.updated_by, actor(&file));
    assert_eq!(
        admin.auto_run_controls.unwrap().mcp_tool_allowlist,
        ["jira:*"]
    );
    let status = policy_file_status(&server).await;
    assert_eq!(status["path"], file.display().to_string());
    assert!(status["loaded_at"].is_string(), "{status}");
    assert!(status["last_error"].is_null(), "{status}");
    assert_eq!(status["teams"], serde_json::json!(["acme"]));
    assert_eq!(
        status["mcp_servers"]["gasoline"],
        serde_json::json!(["observe.*", "generate.*", "interact.navigate"])
    );
    let updates = audit(&server, TEAM, "admin_settings_updated").await;
    assert_eq!(updates.len(), 1);
    assert_eq!(updates[0].actor, actor(&file));
    assert_eq!(audit(&server, "*", "policy_file_reloaded").await.len(), 1);

    // seed 000's error, from a decision on any team
    let d = evaluate(&server, gasoline("interact", "execute_js")).await;
    assert_eq!(d.outcome, pb::Outcome::Deny as i32);
    assert_eq!(d.reason, pb::Reason::NotInFileAllowlist as i32);
    assert_eq!(
        d.message,
        "interact.execute_js is not permitted. Allowed: observe.*, generate.*, interact.navigate"
    );
    assert_eq!(
        d.allowed_tools,
        ["observe.*", "generate.*", "interact.navigate"]
    );
    let d = evaluate(&server, gasoline("Interact", "Navigate")).await;
    assert_ne!(d.reason, pb::Reason::NotInFileAllowlist as i32);

    // DENY means hidden from tools/list
    let filtered = server
        .policy("admin-token")
        .filter_tools(pb::FilterToolsRequest {
            team_id: OTHER_TEAM.into(),
            user_id: "carol".into(),
            server: "gasoline".into(),
            tools: Some(pb_value(&serde_json::json!({"tools":[{"name":"observe"},{"name":"interact"},{"name":"execute"}]}))),
            client: String::new(),
        })
        .await;
    assert_eq!(filtered.unwrap_err().code(), Code::PermissionDenied);
    let filtered = server
        .policy("service-token")
        .filter_tools(pb::FilterToolsRequest {
            team_id: TEAM.into(),
            user_id: "alice".into(),
            server: "gasoline".into(),
            tools: Some(pb_value(&serde_json::json!({"tools":[{"name":"observe"},{"name":"interact"},{"name":"execute"}]}))),
            client: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(filtered.removed, ["execute"]);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_valid_edit_is_applied_and_streamed_to_watchers() {
    let (server, _dir, file) = start_with(ACME_JIRA).await;
    let mut events = watch(&server).await;
    let snapshot = next(&mut events).await;
    let Some(Event::Snapshot(s)) = snapshot.event else {
        panic!("no snapshot first: {snapshot:?}")
    };
    assert_eq!(s.policy.unwrap().file_allowlists.len(), 1);

    std::fs::write(
        &file,
        ACME_JIRA.replace("[\"jira:*\"]", "[\"jira:*\", \"github:get_*\"]"),
    )
    .unwrap();
    let change = next(&mut events).await;
    let Some(Event::AdminSettings(admin)) = change.event else {
        panic!("expected the team's new settings: {change:?}")
    };
    assert_eq!(change.revision, 2);
    assert_eq!(admin.updated_by, actor(&file));
    assert_eq!(
        admin.auto_run_controls.unwrap().mcp_tool_allowlist,
        ["jira:*", "github:get_*"]
    );
    let updates = audit(&server, TEAM, "admin_settings_updated").await;
    assert_eq!(updates.last().unwrap().revision, 2);
    assert_eq!(updates.last().unwrap().actor, actor(&file));

    // the tool.action list has no team revision: watchers get a fresh snapshot
    std::fs::write(
        &file,
        ACME_JIRA
            .replace("[\"jira:*\"]", "[\"jira:*\", \"github:get_*\"]")
            .replace("\"interact.navigate\"", "\"interact.*\""),
    )
    .unwrap();
    let resync = next(&mut events).await;
    let Some(Event::Snapshot(s)) = resync.event else {
        panic!("expected a resync snapshot: {resync:?}")
    };
    assert!(s.resync);
    assert_eq!(resync.revision, 2);
    assert_eq!(
        s.policy.unwrap().file_allowlists[0].allowed_tools,
        ["observe.*", "generate.*", "interact.*"]
    );
    let d = evaluate(&server, gasoline("interact", "execute_js")).await;
    assert_ne!(d.reason, pb::Reason::NotInFileAllowlist as i32);
    let reloads = audit(&server, "*", "policy_file_reloaded").await;
    assert_eq!(reloads.len(), 3, "start, the team edit, the list edit");
    let detail: Value = crate::support::detail(&reloads[2]);
    assert_eq!(detail["mcp_servers_changed"], true);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_invalid_edit_keeps_the_old_policy_and_is_reported() {
    let (server, _dir, file) = start_with(ACME_JIRA).await;
    let name = file.display().to_string();

    std::fs::write(&file, "teams:\n  - team: acme\n   auto_run_controls: [\n").unwrap();
    let status = status_until(&server, |s| s["last_error"].is_string()).await;
    let error = status["last_error"].as_str().unwrap();
    assert!(error.contains(&format!("{name}:3: ")), "{error}");

    let bad_entry = ACME_JIRA.replace("[\"jira:*\"]", "[\"jira:*\", \"nocolon\"]");
    std::fs::write(&file, &bad_entry).unwrap();
    let status = status_until(&server, |s| {
        s["last_error"]
            .as_str()
            .is_some_and(|e| e.contains("nocolon"))
    })
    .await;
    let error = status["last_error"].as_str().unwrap();
    assert!(
        error.contains(&format!(
            "{name}:5: teams[0].auto_run_controls.mcp_tool_allowlist[1]: \"nocolon\" breaks rule separator"
        )),
        "{error}"
    );
    assert_eq!(status["teams"], serde_json::json!(["acme"]));

    let bad_pattern = ACME_JIRA.replace("\"generate.*\"", "\"gen*.x\"");
    std::fs::write(&file, &bad_pattern).unwrap();
    let status = status_until(&server, |s| {
        s["last_error"]
            .as_str()
            .is_some_and(|e| e.contains("gen*.x"))
    })
    .await;
    assert!(
        status["last_error"]
            .as_str()
            .unwrap()
            .contains(&format!("{name}:8: mcp_servers[0].allowed_tools[1]")),
        "{status}"
    );

    // nothing of the invalid files was applied
    let admin = server
        .admin("admin-token")
        .get_team_admin_settings(pb::GetTeamAdminSettingsRequest {
            team_id: TEAM.into(),
        })
        .await
        .unwrap()
        .into_inner()
        .settings
        .unwrap();
    assert_eq!(admin.revision, 1);
    let d = evaluate(&server, gasoline("generate", "test")).await;
    assert_ne!(d.reason, pb::Reason::NotInFileAllowlist as i32);
    assert_eq!(
        audit(&server, "*", "policy_file_rejected").await.len(),
        3,
        "each rejected content is audited once"
    );

    // back to the content in force: the error clears
    std::fs::write(&file, ACME_JIRA).unwrap();
    status_until(&server, |s| s["last_error"].is_null()).await;
    server.stop().await;
}

/// Rejected, replaced by the content in force, then written back: the rejected
/// content is reported again (status, audit), not skipped as already seen.
#[tokio::test(flavor = "multi_thread")]
async fn rejected_content_written_back_is_reported_again() {
    let (server, _dir, file) = start_with(ACME_JIRA).await;
    let bad = ACME_JIRA.replace("[\"jira:*\"]", "[\"nocolon\"]");
    let reported = |s: &Value| {
        s["last_error"]
            .as_str()
            .is_some_and(|e| e.contains("nocolon"))
    };
    std::fs::write(&file, &bad).unwrap();
    status_until(&server, reported).await;
    std::fs::write(&file, ACME_JIRA).unwrap();
    status_until(&server, |s| s["last_error"].is_null()).await;
    std::fs::write(&file, &bad).unwrap();
    status_until(&server, reported).await;
    assert_eq!(
        audit(&server, "*", "policy_file_rejected").await.len(),
        2,
        "the second rejection is audited too"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn managed_teams_are_read_only_through_the_api() {
    let (server, _dir, file) = start_with(ACME_JIRA).await;
    let err = server
        .admin("admin-token")
        .update_team_admin_settings(pb::UpdateTeamAdminSettingsRequest {
            team_id: TEAM.into(),
            auto_run_controls: Some(pb::AutoRunControls {
                kill_switch: true,
                ..Default::default()
            }),
            expected_revision: None,
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition);
    assert!(
        err.message()
            .contains(&format!("managed by the policy file {}", file.display())),
        "{}",
        err.message()
    );
    // a team the file does not name is writable as ever
    server
        .admin("other-admin-token")
        .update_team_admin_settings(pb::UpdateTeamAdminSettingsRequest {
            team_id: OTHER_TEAM.into(),
            auto_run_controls: Some(pb::AutoRunControls::default()),
            expected_revision: None,
        })
        .await
        .unwrap();
    // a reader is told up front (the console shows the team read only), and only for its teams
    for (team, token, managed_by) in [
        (TEAM, "admin-token", file.display().to_string()),
        (OTHER_TEAM, "other-admin-token", String::new()),
    ] {
        let got = server
            .admin(token)
            .get_team_admin_settings(pb::GetTeamAdminSettingsRequest {
                team_id: team.into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(got.managed_by, managed_by, "{team}");
    }

    // the CLI's kill switch says why it cannot
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .env_clear()
        .args(["--server", &format!("http://{}", server.addr)])
        .args([
            "--token",
            "admin-token",
            "kill-switch",
            "on",
            "--team",
            TEAM,
        ])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("FailedPrecondition") && stderr.contains("policy.yaml"),
        "{stderr}"
    );

    // a team removed from the file is released
    std::fs::write(
        &file,
        "mcp_servers:\n  - server: gasoline\n    allowed_tools: []\n",
    )
    .unwrap();
    status_until(&server, |s| s["teams"] == serde_json::json!([])).await;
    server
        .admin("admin-token")
        .update_team_admin_settings(pb::UpdateTeamAdminSettingsRequest {
            team_id: TEAM.into(),
            auto_run_controls: Some(pb::AutoRunControls::default()),
            expected_revision: None,
        })
        .await
        .unwrap();
    // an empty list allows everything
    let d = evaluate(&server, gasoline("interact", "execute_js")).await;
    assert_ne!(d.reason, pb::Reason::NotInFileAllowlist as i32);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_invalid_file_at_start_stops_the_binary() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("policy.yaml");
    std::fs::write(
        &file,
        "teams:\n  - team: acme\n    auto_run_controls:\n      mcp_tool_allowlist: [\"a:b:c\"]\n",
    )
    .unwrap();
    let serve = |policy: PathBuf| {
        let data = dir.path().join("data");
        async move {
            let run = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolgate"))
                .env_clear()
                .kill_on_drop(true)
                .arg("serve")
                .args(["--listen", "127.0.0.1:0", "--data-dir"])
                .arg(data)
                .arg("--policy-file")
                .arg(policy)
                .output();
            // a server that starts would run forever: that is the failure
            tokio::time::timeout(Duration::from_secs(60), run)
                .await
                .expect("the server started on an invalid policy file")
                .unwrap()
        }
    };
    let out = serve(file.clone()).await;
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "{}:4: teams[0].auto_run_controls.mcp_tool_allowlist[0]: \"a:b:c\" breaks rule separator",
            file.display()
        )),
        "{stderr}"
    );
    let out = serve(dir.path().join("missing.yaml")).await;
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot read policy file") && stderr.contains("missing.yaml"),
        "{stderr}"
    );
}

/// `toolgate check-config --policy-file FILE`: its exit status and output.
async fn check_config(dir: &Path, policy: &Path) -> std::process::Output {
    let run = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .env_clear()
        .kill_on_drop(true)
        .arg("check-config")
        .arg("--data-dir")
        .arg(dir.join("data"))
        .arg("--policy-file")
        .arg(policy)
        .output();
    tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("check-config blocked")
        .unwrap()
}

/// Issue 13 item 3: a policy file truncated to nothing is an error, not "manage
/// nothing": the old policy stays (seed 000: a bad reload keeps the old list),
/// `last_error` says why, and `check-config` refuses it.
#[tokio::test(flavor = "multi_thread")]
async fn an_empty_file_keeps_the_old_policy_and_is_reported() {
    let (server, dir, file) = start_with(ACME_JIRA).await;
    let denied = pb::Reason::NotInFileAllowlist as i32;
    assert_eq!(
        evaluate(&server, gasoline("interact", "execute_js"))
            .await
            .reason,
        denied
    );
    for empty in ["", "# nothing\n", "{}\n"] {
        std::fs::write(&file, empty).unwrap();
        status_until(&server, |s| {
            s["last_error"]
                .as_str()
                .is_some_and(|e| e.contains("teams: []"))
        })
        .await;
        let d = evaluate(&server, gasoline("interact", "execute_js")).await;
        assert_eq!(d.reason, denied, "{empty:?}");
        let write = server
            .admin("admin-token")
            .update_team_admin_settings(pb::UpdateTeamAdminSettingsRequest {
                team_id: TEAM.into(),
                auto_run_controls: Some(pb::AutoRunControls::default()),
                expected_revision: None,
            })
            .await
            .unwrap_err();
        assert_eq!(write.code(), Code::FailedPrecondition, "{empty:?}");
        let out = check_config(dir.path(), &file).await;
        assert!(!out.status.success(), "check-config accepted {empty:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("teams: []"), "{stderr}");
        // back to the good file between tries, so each empty content is new
        std::fs::write(&file, ACME_JIRA).unwrap();
        status_until(&server, |s| s["last_error"].is_null()).await;
    }
    std::fs::write(&file, "teams: []\n").unwrap();
    status_until(&server, |s| s["teams"] == serde_json::json!([])).await;
    assert!(check_config(dir.path(), &file).await.status.success());
    server.stop().await;
}

/// Issue 13 item 8: a path that leads to a device or a FIFO is refused at once, by
/// the reloader and by `check-config`, and the reloader goes on (a FIFO used to
/// block it for good, `/dev/zero` to be read until memory ran out).
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread")]
async fn a_device_or_fifo_is_refused_without_blocking() {
    let (server, dir, file) = start_with(ACME_JIRA).await;
    let fifo = dir.path().join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    for (target, kind) in [
        (PathBuf::from("/dev/zero"), "a device"),
        (fifo.clone(), "a FIFO"),
        (dir.path().to_owned(), "a directory"),
    ] {
        std::fs::remove_file(&file).unwrap();
        std::os::unix::fs::symlink(&target, &file).unwrap();
        status_until(&server, |s| {
            s["last_error"]
                .as_str()
                .is_some_and(|e| e.contains(&format!("is not a regular file ({kind})")))
        })
        .await;
        let d = evaluate(&server, gasoline("interact", "execute_js")).await;
        assert_eq!(d.reason, pb::Reason::NotInFileAllowlist as i32, "{kind}");
        let out = check_config(dir.path(), &file).await;
        assert!(!out.status.success(), "{kind}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("not a regular file"), "{stderr}");
        // the reloader is not stuck: the real file back clears the error
        std::fs::remove_file(&file).unwrap();
        std::fs::write(&file, ACME_JIRA).unwrap();
        status_until(&server, |s| s["last_error"].is_null()).await;
    }
    // past the size cap: refused without reading it all
    let big = std::fs::File::create(dir.path().join("big.yaml")).unwrap();
    big.set_len(toolgate::policy_file::MAX_POLICY_BYTES as u64 + 1)
        .unwrap();
    std::fs::remove_file(&file).unwrap();
    std::os::unix::fs::symlink(dir.path().join("big.yaml"), &file).unwrap();
    status_until(&server, |s| {
        s["last_error"]
            .as_str()
            .is_some_and(|e| e.contains("is larger than"))
    })
    .await;
    server.stop().await;
}

/// A second policy: acme's MCP list changes and gasoline's list lets
/// `interact.execute_js` through.
const ACME_CONFLUENCE: &str = "\
teams:
  - team: acme
    auto_run_controls:
      enabled: true
      mcp_tool_allowlist: [\"jira:*\", \"confluence:*\"]
mcp_servers:
  - server: gasoline
    allowed_tools: [\"observe.*\", \"generate.*\", \"interact.navigate\", \"interact.execute_js\"]
";

/// The policy's fingerprint in decisions: the old file denies `execute_js`, the new
/// one does not; neither lets an unknown server's tool through unasked.
async fn which_policy(server: &TestServer) -> &'static str {
    let js = evaluate(server, gasoline("interact", "execute_js")).await;
    let other = evaluate(server, gasoline("interact", "type")).await;
    assert_eq!(
        other.reason,
        pb::Reason::NotInFileAllowlist as i32,
        "the file's list must hold in every state: {other:?}"
    );
    if js.reason == pb::Reason::NotInFileAllowlist as i32 {
        "old"
    } else {
        "new"
    }
}

/// Fault suite: the file swapped atomically (rename over it) goes from the old
/// policy to the new in one step, and decisions in between are one or the other.
#[tokio::test(flavor = "multi_thread")]
async fn an_atomic_swap_goes_from_old_to_new_with_nothing_between() {
    let (server, _dir, file) = start_with(ACME_JIRA).await;
    assert_eq!(which_policy(&server).await, "old");
    toolgate::files::write_atomic(
        &file,
        toolgate::files::Mode::KeepTarget,
        ACME_CONFLUENCE.as_bytes(),
    )
    .unwrap();
    let deadline = tokio::time::Instant::now() + WATCHER_DEADLINE;
    let mut seen_old = 0;
    while which_policy(&server).await == "old" {
        seen_old += 1;
        assert!(
            tokio::time::Instant::now() < deadline,
            "the new policy never came"
        );
    }
    let status = status_until(&server, |s| s["last_error"].is_null()).await;
    assert_eq!(status["teams"], serde_json::json!(["acme"]));
    assert_eq!(which_policy(&server).await, "new", "after {seen_old} old");
    server.stop().await;
}

/// Fault suite: the file rewritten in place in steps (truncated, then half
/// written, then finished) keeps the old policy in force at every step until the
/// new one is complete: no step opens the managed team or drops the lists.
#[tokio::test(flavor = "multi_thread")]
async fn a_file_rewritten_in_steps_keeps_the_old_policy_until_complete() {
    use std::io::Write;
    let (server, _dir, file) = start_with(ACME_JIRA).await;
    // cut inside the gasoline list: the half is not valid YAML
    let cut = ACME_CONFLUENCE.find("\"interact.navigate\"").unwrap();
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&file)
        .unwrap();
    status_until(&server, |s| {
        s["last_error"]
            .as_str()
            .is_some_and(|e| e.contains("teams: []"))
    })
    .await;
    assert_eq!(which_policy(&server).await, "old", "truncated");
    out.write_all(&ACME_CONFLUENCE.as_bytes()[..cut]).unwrap();
    out.flush().unwrap();
    status_until(&server, |s| {
        s["last_error"]
            .as_str()
            .is_some_and(|e| !e.contains("teams: []"))
    })
    .await;
    assert_eq!(which_policy(&server).await, "old", "half written");
    let write = server
        .admin("admin-token")
        .update_team_admin_settings(pb::UpdateTeamAdminSettingsRequest {
            team_id: TEAM.into(),
            auto_run_controls: Some(pb::AutoRunControls::default()),
            expected_revision: None,
        })
        .await
        .unwrap_err();
    assert_eq!(write.code(), Code::FailedPrecondition, "half written");
    out.write_all(&ACME_CONFLUENCE.as_bytes()[cut..]).unwrap();
    out.sync_all().unwrap();
    status_until(&server, |s| s["last_error"].is_null()).await;
    assert_eq!(which_policy(&server).await, "new", "complete");
    server.stop().await;
}

/// Fault suite: an edit made while the store cannot take writes (its file deleted)
/// is reported, the old policy stays in force, and the same content is applied once
/// the store is back, without another edit.
#[tokio::test(flavor = "multi_thread")]
async fn an_edit_the_store_could_not_take_is_applied_once_it_can() {
    let (server, dir, file) = start_with(ACME_JIRA).await;
    let db = dir.path().join("toolgate.db");
    // a hard link keeps the inode, to put the very file back afterwards
    let kept = dir.path().join("kept.db");
    std::fs::hard_link(&db, &kept).unwrap();
    std::fs::remove_file(&db).unwrap();
    std::fs::write(&file, ACME_CONFLUENCE).unwrap();
    status_until(&server, |s| {
        s["last_error"]
            .as_str()
            .is_some_and(|e| e.contains("cannot apply policy file"))
    })
    .await;
    assert_eq!(which_policy(&server).await, "old");

    std::fs::hard_link(&kept, &db).unwrap();
    status_until(&server, |s| s["last_error"].is_null()).await;
    assert_eq!(which_policy(&server).await, "new");
    server.stop().await;
}
