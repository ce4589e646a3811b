//! The server's policy file: applied at start, reloaded on change (streamed to
//! watchers, audited), invalid edits kept out and reported, managed teams read-only,
//! and an invalid file at start stops the binary.

mod common;

use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tonic::Code;
use toolgate::proto::v1 as pb;
use toolgate::proto::v1::policy_event::Event;

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

async fn watch(server: &TestServer) -> tonic::Streaming<pb::PolicyEvent> {
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
async fn next(events: &mut tonic::Streaming<pb::PolicyEvent>) -> pb::PolicyEvent {
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
    let config: Value = serde_json::from_str(&config.config_json).unwrap();
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
            team_id: TEAM.into(),
            user_id: "alice".into(),
            call: Some(call),
            explain: false,
        })
        .await
        .unwrap()
        .into_inner()
}

fn gasoline(tool: &str, action: &str) -> pb::ToolCall {
    pb::ToolCall {
        kind: Some(pb::tool_call::Kind::Mcp(pb::McpCall {
            server: "gasoline".into(),
            tool: tool.into(),
            action: action.into(),
        })),
    }
}

async fn audit(server: &TestServer, team: &str, kind: &str) -> Vec<pb::AuditEvent> {
    server
        .admin("operator-token")
        .list_audit_events(pb::ListAuditEventsRequest {
            team_id: team.into(),
            kind: kind.into(),
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
        .into_inner();
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
            tools_json: r#"{"tools":[{"name":"observe"},{"name":"interact"},{"name":"execute"}]}"#
                .into(),
        })
        .await;
    assert_eq!(filtered.unwrap_err().code(), Code::PermissionDenied);
    let filtered = server
        .policy("service-token")
        .filter_tools(pb::FilterToolsRequest {
            team_id: TEAM.into(),
            user_id: "alice".into(),
            server: "gasoline".into(),
            tools_json: r#"{"tools":[{"name":"observe"},{"name":"interact"},{"name":"execute"}]}"#
                .into(),
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
    let detail: Value = serde_json::from_str(&reloads[2].detail_json).unwrap();
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
        .into_inner();
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
