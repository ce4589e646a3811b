//! Integration tests: the real server on an ephemeral port, driven through the
//! generated clients.

use crate::support;

use serde_json::Value;
use support::*;
use tonic::Code;
use toolgate::proto::v1 as pb;

fn strs(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| a.iter().map(|s| s.as_str().unwrap().to_owned()).collect())
        .unwrap_or_default()
}

fn flag(v: &Value, key: &str) -> bool {
    v.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn controls_from_json(v: &Value) -> pb::AutoRunControls {
    pb::AutoRunControls {
        enabled: flag(v, "enabled"),
        allowed: strs(v, "allowed"),
        blocked: strs(v, "blocked"),
        denied: strs(v, "denied"),
        disable_mcp_auto_run: flag(v, "disable_mcp_auto_run"),
        delete_file_protection: flag(v, "delete_file_protection"),
        enable_run_everything: flag(v, "enable_run_everything"),
        mcp_tool_allowlist: strs(v, "mcp_tool_allowlist"),
        browser_protection: flag(v, "browser_protection"),
        mcp_tool_blocklist: strs(v, "mcp_tool_blocklist"),
        kill_switch: flag(v, "kill_switch"),
        browser_server_ids: strs(v, "browser_server_ids"),
        list_mode: match v.get("list_mode").and_then(Value::as_str) {
            Some("union") => pb::ListMode::Union as i32,
            _ => pb::ListMode::Unspecified as i32,
        },
        mcp_access_mode: match v.get("mcp_access_mode").and_then(Value::as_str) {
            Some("allowlist") => pb::McpAccessMode::Allowlist as i32,
            _ => pb::McpAccessMode::Unspecified as i32,
        },
        mcp_access_allowlist: strs(v, "mcp_access_allowlist"),
        sandboxing_controls: None,
        roles: None,
        default_user_settings: None,
        approvals: None,
        groups: Default::default(),
        managed: None,
        rates: None,
    }
}

fn user_from_json(team: &str, user: &str, v: &Value) -> pb::UserSettings {
    pb::UserSettings {
        team_id: team.into(),
        user_id: user.into(),
        mcp_allowed_tools: strs(v, "mcp_allowed_tools"),
        yolo_mcp_tools_disabled: flag(v, "yolo_mcp_tools_disabled"),
        playwright_protection: v.get("playwright_protection").and_then(Value::as_bool),
        use_yolo_mode: flag(v, "use_yolo_mode"),
        yolo_enable_run_everything: flag(v, "yolo_enable_run_everything"),
        command_allowlist: strs(v, "command_allowlist"),
        command_denylist: strs(v, "command_denylist"),
        ..Default::default()
    }
}

fn call_from_json(v: &Value) -> pb::ToolCall {
    use pb::tool_call::Kind;
    let kind = if let Some(m) = v.get("mcp") {
        Kind::Mcp(pb::McpCall {
            server: m["server"].as_str().unwrap().into(),
            tool: m["tool"].as_str().unwrap().into(),
            action: m["action"].as_str().unwrap_or_default().into(),
        })
    } else if let Some(m) = v.get("mcp_internal") {
        Kind::McpInternal(pb::McpInternalCall {
            name: m["name"].as_str().unwrap().into(),
            fallback_server: m["fallback_server"].as_str().unwrap_or_default().into(),
        })
    } else if let Some(s) = v.get("shell") {
        Kind::Shell(s.as_str().unwrap().into())
    } else if let Some(s) = v.get("delete_file") {
        Kind::DeleteFile(s.as_str().unwrap().into())
    } else {
        panic!("unknown call {v}")
    };
    pb::ToolCall {
        kind: Some(kind),
        arguments: None,
    }
}

/// Every decision vector, through Evaluate: each case on a team of its own.
#[tokio::test]
async fn decision_vectors_through_evaluate() {
    let (server, _dir) = start().await;
    let n =
        vectors_through_evaluate(&server, "vector", include_str!("../data/decisions.json")).await;
    assert_eq!(n, 28);
    server.stop().await;
}

/// The integrity vectors (DENY first, aliases, shell spellings, UTF-16 lengths),
/// through Evaluate like the decision vectors.
#[tokio::test]
async fn integrity_vectors_through_evaluate() {
    let (server, _dir) = start().await;
    let n = vectors_through_evaluate(&server, "integrity", include_str!("../data/integrity.json"))
        .await;
    assert_eq!(n, 17);
    server.stop().await;
}

/// Runs every case of a vector file (the format of `decisions.json`) through
/// Evaluate, each on a team of its own; answers how many ran.
async fn vectors_through_evaluate(server: &TestServer, prefix: &str, text: &str) -> usize {
    let data: Value = serde_json::from_str(text).expect("the vectors parse");
    let mut admin = server.admin("operator-token");
    let mut users = server.users("operator-token");
    let mut policy = server.policy("operator-token");
    for (i, case) in data["cases"].as_array().unwrap().iter().enumerate() {
        let name = case["name"].as_str().unwrap();
        let team = format!("{prefix}-{i}");
        if !case["admin"].is_null() {
            admin
                .update_team_admin_settings(pb::UpdateTeamAdminSettingsRequest {
                    team_id: team.clone(),
                    auto_run_controls: Some(controls_from_json(&case["admin"])),
                    expected_revision: None,
                })
                .await
                .unwrap_or_else(|e| panic!("{name}: admin settings: {e}"));
        }
        users
            .update_user_settings(pb::UpdateUserSettingsRequest {
                settings: Some(user_from_json(&team, "u", &case["user"])),
                expected_revision: None,
                update_mask: None,
            })
            .await
            .unwrap_or_else(|e| panic!("{name}: user settings: {e}"));
        let d = policy
            .evaluate(pb::EvaluateRequest {
                approval: None,
                team_id: team.clone(),
                user_id: "u".into(),
                call: Some(call_from_json(&case["call"])),
                explain: true,
                agent: None,
                client: String::new(),
                tool_use_id: String::new(),
            })
            .await
            .unwrap_or_else(|e| panic!("{name}: evaluate: {e}"))
            .into_inner()
            .decision
            .unwrap();
        let expect = &case["expect"];
        let outcome = format!("OUTCOME_{}", expect["outcome"].as_str().unwrap());
        assert_eq!(
            pb::Outcome::try_from(d.outcome).unwrap().as_str_name(),
            outcome,
            "{name}"
        );
        // a case may leave the reason open (only the outcome is promised)
        if let Some(reason) = expect["reason"].as_str() {
            assert_eq!(
                pb::Reason::try_from(d.reason).unwrap().as_str_name(),
                format!("REASON_{reason}"),
                "{name}"
            );
        }
        assert_eq!(d.need_approval, outcome != "OUTCOME_ALLOW", "{name}");
        assert!(
            d.revision >= 1,
            "{name}: a decision says which revision it saw"
        );
        assert!(!d.explanation.is_empty(), "{name}: explanation asked for");
        if let Some(m) = expect.get("matched_entry") {
            assert_eq!(d.matched_entry, m.as_str().unwrap(), "{name}");
        }
        if let Some(c) = expect.get("candidates") {
            let want: Vec<(String, String)> = c
                .as_array()
                .unwrap()
                .iter()
                .map(|c| {
                    (
                        c["server"].as_str().unwrap().into(),
                        c["tool"].as_str().unwrap().into(),
                    )
                })
                .collect();
            let got: Vec<(String, String)> = d
                .candidates_for_allowlist
                .iter()
                .map(|c| (c.server.clone(), c.tool.clone()))
                .collect();
            assert_eq!(got, want, "{name}");
        }
    }
    data["cases"].as_array().unwrap().len()
}

#[tokio::test]
async fn add_to_allowlist_follows_seed_rules() {
    let (server, _dir) = start().await;
    let mut users = server.users("alice-token");
    let add = |server: &str, tool: &str| pb::AddToAllowlistRequest {
        team_id: TEAM.into(),
        user_id: "alice".into(),
        server: server.into(),
        tool: tool.into(),
    };
    let r = users
        .add_to_allowlist(add("github", "create_issue"))
        .await
        .unwrap()
        .into_inner();
    assert!(r.changed);
    assert_eq!(
        r.settings.unwrap().mcp_allowed_tools,
        ["github:create_issue"]
    );
    let r = users
        .add_to_allowlist(add("github", "create_issue"))
        .await
        .unwrap()
        .into_inner();
    assert!(!r.changed, "duplicate entries are not added");
    assert!(r.detail.contains("already"), "{}", r.detail);
    users.add_to_allowlist(add("github", "*")).await.unwrap();
    let r = users
        .add_to_allowlist(add("github", "merge_pr"))
        .await
        .unwrap()
        .into_inner();
    assert!(!r.changed, "an entry covered by server:* is not added");
    assert!(r.detail.contains("github:*"), "{}", r.detail);
    let settings = r.settings.unwrap();
    assert_eq!(
        settings.mcp_allowed_tools,
        ["github:create_issue", "github:*"]
    );
    let err = users
        .add_to_allowlist(add("git:hub", "x"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    let r = users
        .remove_from_allowlist(pb::RemoveFromAllowlistRequest {
            team_id: TEAM.into(),
            user_id: "alice".into(),
            entry: "github:create_issue".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(r.changed);
    assert_eq!(r.settings.unwrap().mcp_allowed_tools, ["github:*"]);
    server.stop().await;
}

#[tokio::test]
async fn restart_keeps_every_setting_and_revision() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(test_config(dir.path())).await;
    let controls = pb::AutoRunControls {
        enabled: true,
        mcp_tool_allowlist: vec!["jira:*".into()],
        mcp_tool_blocklist: vec!["github:delete_*".into()],
        kill_switch: false,
        list_mode: pb::ListMode::Union as i32,
        ..Default::default()
    };
    let before_admin = server
        .admin("admin-token")
        .update_team_admin_settings(pb::UpdateTeamAdminSettingsRequest {
            team_id: TEAM.into(),
            auto_run_controls: Some(controls),
            expected_revision: Some(0),
        })
        .await
        .unwrap()
        .into_inner()
        .settings
        .unwrap();
    let mut settings = user_settings(TEAM, "alice");
    settings.use_yolo_mode = true;
    settings.playwright_protection = Some(false);
    settings.mcp_allowed_tools = vec!["github:create_issue".into()];
    let before_user = server
        .users("alice-token")
        .update_user_settings(pb::UpdateUserSettingsRequest {
            settings: Some(settings),
            expected_revision: None,
            update_mask: None,
        })
        .await
        .unwrap()
        .into_inner()
        .settings
        .unwrap();
    assert_eq!((before_admin.revision, before_user.revision), (1, 2));
    server.stop().await;

    let server = TestServer::start(test_config(dir.path())).await;
    let after_admin = server
        .admin("alice-token")
        .get_team_admin_settings(pb::GetTeamAdminSettingsRequest {
            team_id: TEAM.into(),
        })
        .await
        .unwrap()
        .into_inner()
        .settings
        .unwrap();
    let after_user = server
        .users("alice-token")
        .get_user_settings(pb::GetUserSettingsRequest {
            team_id: TEAM.into(),
            user_id: "alice".into(),
        })
        .await
        .unwrap()
        .into_inner()
        .settings
        .unwrap();
    assert_eq!(after_admin, before_admin);
    assert_eq!(after_user, before_user);
    let eff = server
        .policy("alice-token")
        .get_effective_policy(pb::GetEffectivePolicyRequest {
            team_id: TEAM.into(),
            user_id: "alice".into(),
        })
        .await
        .unwrap()
        .into_inner()
        .policy
        .unwrap();
    assert_eq!(eff.revision, 2);
    // the next write continues the team's revisions
    let next = server
        .admin("admin-token")
        .update_team_admin_settings(pb::UpdateTeamAdminSettingsRequest {
            team_id: TEAM.into(),
            auto_run_controls: Some(pb::AutoRunControls::default()),
            expected_revision: Some(1),
        })
        .await
        .unwrap()
        .into_inner()
        .settings
        .unwrap();
    assert_eq!(next.revision, 3);
    server.stop().await;
}

#[tokio::test]
async fn stale_expected_revision_is_refused_and_changes_nothing() {
    let (server, _dir) = start().await;
    let mut admin = server.admin("admin-token");
    let update = |allow: &str, expected| pb::UpdateTeamAdminSettingsRequest {
        team_id: TEAM.into(),
        auto_run_controls: Some(pb::AutoRunControls {
            enabled: true,
            mcp_tool_allowlist: vec![allow.into()],
            ..Default::default()
        }),
        expected_revision: expected,
    };
    let first = admin
        .update_team_admin_settings(update("jira:*", Some(0)))
        .await
        .unwrap()
        .into_inner()
        .settings
        .unwrap();
    let err = admin
        .update_team_admin_settings(update("github:*", Some(0)))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Aborted, "{err:?}");
    assert!(err.message().contains("revision 1"), "{}", err.message());
    let now = admin
        .get_team_admin_settings(pb::GetTeamAdminSettingsRequest {
            team_id: TEAM.into(),
        })
        .await
        .unwrap()
        .into_inner()
        .settings
        .unwrap();
    assert_eq!(now, first);
    // same for user settings
    let mut users = server.users("alice-token");
    let s = users
        .update_user_settings(pb::UpdateUserSettingsRequest {
            settings: Some(user_settings(TEAM, "alice")),
            expected_revision: Some(0),
            update_mask: None,
        })
        .await
        .unwrap()
        .into_inner()
        .settings
        .unwrap();
    let err = users
        .update_user_settings(pb::UpdateUserSettingsRequest {
            settings: Some(user_settings(TEAM, "alice")),
            expected_revision: Some(0),
            update_mask: None,
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Aborted);
    let again = users
        .get_user_settings(pb::GetUserSettingsRequest {
            team_id: TEAM.into(),
            user_id: "alice".into(),
        })
        .await
        .unwrap()
        .into_inner()
        .settings
        .unwrap();
    assert_eq!(again, s);
    server.stop().await;
}

#[tokio::test]
async fn invalid_entries_name_field_entry_and_rule() {
    let (server, _dir) = start().await;
    let err = server
        .admin("admin-token")
        .update_team_admin_settings(pb::UpdateTeamAdminSettingsRequest {
            team_id: TEAM.into(),
            auto_run_controls: Some(pb::AutoRunControls {
                enabled: true,
                mcp_tool_allowlist: vec![
                    "ok:fine".into(),
                    "no-separator".into(),
                    format!("s:{}", "x".repeat(257)),
                ],
                ..Default::default()
            }),
            expected_revision: None,
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    let msg = err.message();
    assert!(
        msg.contains("auto_run_controls.mcp_tool_allowlist[1]"),
        "{msg}"
    );
    assert!(
        msg.contains("auto_run_controls.mcp_tool_allowlist[2]"),
        "{msg}"
    );
    use tonic_types::StatusExt;
    let details = err.get_error_details();
    let bad = details.bad_request().expect("BadRequest details");
    assert_eq!(bad.field_violations.len(), 2, "{bad:?}");
    // nothing was written
    let now = server
        .admin("admin-token")
        .get_team_admin_settings(pb::GetTeamAdminSettingsRequest {
            team_id: TEAM.into(),
        })
        .await
        .unwrap()
        .into_inner()
        .settings
        .unwrap();
    assert_eq!(now.revision, 0);

    let err = server
        .policy("alice-token")
        .evaluate(pb::EvaluateRequest {
            approval: None,
            team_id: TEAM.into(),
            user_id: "alice".into(),
            call: None,
            explain: false,
            agent: None,
            client: String::new(),
            tool_use_id: String::new(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().starts_with("call:"), "{}", err.message());

    // an empty team id stands for the token's own; an operator's token names none
    let err = server
        .users("operator-token")
        .get_user_settings(pb::GetUserSettingsRequest {
            team_id: String::new(),
            user_id: "alice".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().starts_with("team_id:"), "{}", err.message());
    server.stop().await;
}

#[tokio::test]
async fn filter_tools_hides_denied_and_skips_malformed() {
    let (server, _dir) = start().await;
    server
        .set_controls(pb::AutoRunControls {
            mcp_tool_blocklist: vec!["github:delete_*".into()],
            ..Default::default()
        })
        .await;
    let tools = r#"{"tools":[{"name":"create_issue"},{"name":"delete_repo"},{"description":"no name"},7],"nextCursor":"x"}"#;
    let r = server
        .policy("service-token")
        .filter_tools(pb::FilterToolsRequest {
            team_id: TEAM.into(),
            user_id: "alice".into(),
            server: "github".into(),
            tools: Some(pb_value(&serde_json::from_str(tools).unwrap())),
            client: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.removed, ["delete_repo"]);
    assert_eq!(r.malformed_skipped, 2);
    let kept: Value = json_of(&r.tools);
    assert_eq!(kept["tools"], serde_json::json!([{"name": "create_issue"}]));
    assert_eq!(kept["nextCursor"], "x");
    let err = server
        .policy("service-token")
        .filter_tools(pb::FilterToolsRequest {
            team_id: TEAM.into(),
            user_id: "alice".into(),
            server: "github".into(),
            tools: Some(pb_value(&serde_json::json!("not a list"))),
            client: String::new(),
        })
        .await
        .unwrap_err();
    assert_eq!(
        err.code(),
        Code::InvalidArgument,
        "fails closed on a bad list"
    );
    // an invalid server is refused (seed 003 fails closed), naming the field
    for bad in ["", "  ", "git:hub", "git*"] {
        let err = server
            .policy("service-token")
            .filter_tools(pb::FilterToolsRequest {
                team_id: TEAM.into(),
                user_id: "alice".into(),
                server: bad.into(),
                tools: Some(pb_value(&serde_json::from_str(tools).unwrap())),
                client: String::new(),
            })
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument, "server {bad:?}");
        assert!(err.message().contains("server"), "{}", err.message());
    }
    server.stop().await;
}

/// A tool with a malformed name is hidden wherever a valid one of its server is.
#[tokio::test]
async fn filter_tools_hides_malformed_names_of_a_blocked_server() {
    let (server, _dir) = start().await;
    server
        .set_controls(pb::AutoRunControls {
            mcp_tool_blocklist: vec!["evil:*".into()],
            ..Default::default()
        })
        .await;
    let tools = r#"{"tools":[{"name":"x*"},{"name":"run:now"},{"name":"ok"}]}"#;
    let filter = |s: &'static str| {
        let mut client = server.policy("service-token");
        async move {
            client
                .filter_tools(pb::FilterToolsRequest {
                    team_id: TEAM.into(),
                    user_id: "alice".into(),
                    server: s.into(),
                    tools: Some(pb_value(&serde_json::from_str(tools).unwrap())),
                    client: String::new(),
                })
                .await
                .unwrap()
                .into_inner()
        }
    };
    assert_eq!(filter("evil").await.removed, ["x*", "run:now", "ok"]);
    // elsewhere a malformed name is not denied: a call of it asks
    assert!(filter("good").await.removed.is_empty());
    server.stop().await;
}

#[tokio::test]
async fn deny_decisions_and_changes_are_audited() {
    let (server, _dir) = start().await;
    server
        .set_controls(pb::AutoRunControls {
            kill_switch: true,
            ..Default::default()
        })
        .await;
    let d = server
        .policy("alice-token")
        .evaluate(pb::EvaluateRequest {
            approval: None,
            team_id: TEAM.into(),
            user_id: "alice".into(),
            call: Some(mcp("fs", "read")),
            explain: false,
            agent: None,
            client: String::new(),
            tool_use_id: String::new(),
        })
        .await
        .unwrap()
        .into_inner()
        .decision
        .unwrap();
    assert_eq!(d.reason, pb::Reason::KillSwitch as i32);
    // the deny record is written in the background: poll until it lands
    let mut admin = server.admin("admin-token");
    let events = loop {
        let events = admin
            .list_audit_events(pb::ListAuditEventsRequest {
                team_id: TEAM.into(),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner()
            .events;
        if events
            .iter()
            .any(|e| e.kind == audit_kind("decision_denied"))
        {
            break events;
        }
        tokio::task::yield_now().await;
    };
    assert_eq!(events[0].kind, audit_kind("admin_settings_updated"));
    assert_eq!(events[0].actor, "admin");
    assert_eq!(events[0].revision, 1);
    let deny = events
        .iter()
        .find(|e| e.kind == audit_kind("decision_denied"))
        .unwrap();
    assert_eq!(deny.actor, "alice");
    let detail = crate::support::detail(deny).to_string();
    assert!(detail.contains("KILL_SWITCH"), "{detail}");
    server.stop().await;
}

/// A burst of denials larger than the audit queue: every one is recorded (a full
/// queue slows the denying calls down; it never drops a record).
#[tokio::test]
async fn a_flood_of_denials_loses_no_audit_record() {
    const BATCHES: usize = 12;
    const CALLS: usize = 1_000;
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path());
    // 12,000 distinct denials from one principal in a burst: past the default
    // per-principal budget, which would count the rest in a shed event; this test
    // is about the writer's queue, so the budgets are out of its way
    let log = &mut config.decision_log;
    log.principal_records_per_minute = 1_000_000;
    log.principal_bytes_per_minute = 1 << 30;
    log.team_records_per_minute = 1_000_000;
    log.team_bytes_per_minute = 1 << 30;
    let server = TestServer::start(config).await;
    server
        .set_controls(pb::AutoRunControls {
            mcp_tool_blocklist: vec!["x:*".into()],
            ..Default::default()
        })
        .await;
    let floods = (0..BATCHES).map(|b| {
        let mut policy = server.policy("alice-token");
        async move {
            policy
                .evaluate_batch(pb::EvaluateBatchRequest {
                    team_id: TEAM.into(),
                    user_id: "alice".into(),
                    calls: (0..CALLS).map(|i| mcp("x", &format!("t{b}_{i}"))).collect(),
                    explain: false,
                    agent: None,
                    client: String::new(),
                })
                .await
                .unwrap()
        }
    });
    futures::future::join_all(floods).await;
    // the records are written in the background: count them until all are in, with
    // a deadline so that a lost record fails the test instead of hanging it
    let mut admin = server.admin("admin-token");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let (mut count, mut after_id) = (0, 0);
        loop {
            let page = admin
                .list_audit_events(pb::ListAuditEventsRequest {
                    team_id: TEAM.into(),
                    after_id,
                    limit: 1_000,
                    kind: audit_kind("decision_denied"),
                    ..Default::default()
                })
                .await
                .unwrap()
                .into_inner()
                .events;
            let Some(last) = page.last() else { break };
            after_id = last.id;
            count += page.len();
        }
        if count == BATCHES * CALLS || std::time::Instant::now() > deadline {
            assert_eq!(count, BATCHES * CALLS, "every denial has its record");
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    server.stop().await;
}

#[tokio::test]
async fn health_and_server_config() {
    use tonic_health::pb::health_client::HealthClient;
    let (server, _dir) = start().await;
    let mut health = HealthClient::new(server.channel.clone());
    for service in ["", "toolgate.v1.PolicyService"] {
        let r = health
            .check(tonic_health::pb::HealthCheckRequest {
                service: service.into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(
            r.status,
            tonic_health::pb::health_check_response::ServingStatus::Serving as i32
        );
    }
    let config = |token: &'static str| {
        let mut info = server.info(token);
        async move {
            let cfg = info
                .get_server_config(pb::GetServerConfigRequest {})
                .await
                .unwrap()
                .into_inner();
            config_of(&cfg)
        }
    };
    let json = config("operator-token").await;
    assert!(
        json["auth"]["tokens"][0].get("sha256").is_none(),
        "token hashes are not exposed"
    );
    assert_eq!(json["auth"]["tokens"][0]["name"], "operator");
    // principals are for operators only
    let json = config("alice-token").await;
    assert!(json.get("auth").is_none(), "{json}");
    server.stop().await;
}

#[tokio::test]
async fn bootstrap_token_is_written_owner_only_and_works() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path());
    config.auth.tokens.clear();
    let server = TestServer::start(config).await;
    let path = dir.path().join(toolgate::server::BOOTSTRAP_TOKEN_FILE);
    let token = std::fs::read_to_string(&path).unwrap().trim().to_owned();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
    server
        .admin(&token)
        .get_team_admin_settings(pb::GetTeamAdminSettingsRequest {
            team_id: TEAM.into(),
        })
        .await
        .unwrap();
    let err = server
        .admin("")
        .get_team_admin_settings(pb::GetTeamAdminSettingsRequest {
            team_id: TEAM.into(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Unauthenticated);
    server.stop().await;
}

const OK: Code = Code::Ok;
const PD: Code = Code::PermissionDenied;
const UA: Code = Code::Unauthenticated;

/// The callers of [`ROLE_MATRIX`]: operator, admin, alice, bob, service, admin of
/// another team, no token, bad token.
pub(crate) const CALLERS: [&str; 8] = [
    "operator-token",
    "admin-token",
    "alice-token",
    "bob-token",
    "service-token",
    "other-admin-token",
    "",
    "bad",
];

/// Every RPC against every kind of caller ([`CALLERS`]); targets are team acme, user
/// alice. Run over gRPC here and over HTTP in `http.rs`: the same table for both.
pub(crate) const ROLE_MATRIX: &[(&str, [Code; 8])] = &[
    ("GetTeamAdminSettings", [OK, OK, OK, OK, OK, PD, UA, UA]),
    ("UpdateTeamAdminSettings", [OK, OK, PD, PD, PD, PD, UA, UA]),
    (
        "ValidateTeamAdminSettings",
        [OK, OK, PD, PD, PD, PD, UA, UA],
    ),
    ("ListAuditEvents", [OK, OK, PD, PD, PD, PD, UA, UA]),
    ("GetUserSettings", [OK, OK, OK, PD, OK, PD, UA, UA]),
    ("UpdateUserSettings", [OK, OK, OK, PD, PD, PD, UA, UA]),
    ("AddToAllowlist", [OK, OK, OK, PD, PD, PD, UA, UA]),
    ("RemoveFromAllowlist", [OK, OK, OK, PD, PD, PD, UA, UA]),
    ("Evaluate", [OK, OK, OK, PD, OK, PD, UA, UA]),
    ("EvaluateBatch", [OK, OK, OK, PD, OK, PD, UA, UA]),
    ("FilterTools", [OK, OK, OK, PD, OK, PD, UA, UA]),
    ("GetEffectivePolicy", [OK, OK, OK, PD, OK, PD, UA, UA]),
    ("WatchPolicy", [OK, OK, OK, PD, OK, PD, UA, UA]),
    ("ReportTampering", [OK, OK, OK, PD, OK, PD, UA, UA]),
    ("GetServerConfig", [OK, OK, OK, OK, OK, OK, UA, UA]),
    // how to sign in: asked before there is a token, so a bad one is no matter
    ("GetSignIn", [OK, OK, OK, OK, OK, OK, OK, OK]),
    ("GetPrincipal", [OK, OK, OK, OK, OK, OK, UA, UA]),
    ("ListSignIns", [OK, OK, PD, PD, PD, PD, UA, UA]),
];

#[tokio::test]
async fn role_matrix() {
    let (server, _dir) = start().await;
    for (rpc, codes) in ROLE_MATRIX {
        for (token, want) in CALLERS.iter().zip(codes) {
            let got = call_rpc(&server, token, rpc).await;
            assert_eq!(got, *want, "{rpc} as {token:?}");
        }
    }
    server.stop().await;
}

async fn call_rpc(server: &TestServer, token: &str, rpc: &str) -> Code {
    let team = || TEAM.to_owned();
    let alice = || "alice".to_owned();
    let result = match rpc {
        "GetTeamAdminSettings" => server
            .admin(token)
            .get_team_admin_settings(pb::GetTeamAdminSettingsRequest { team_id: team() })
            .await
            .map(drop),
        "UpdateTeamAdminSettings" => server
            .admin(token)
            .update_team_admin_settings(pb::UpdateTeamAdminSettingsRequest {
                team_id: team(),
                auto_run_controls: Some(pb::AutoRunControls::default()),
                expected_revision: None,
            })
            .await
            .map(drop),
        "ValidateTeamAdminSettings" => server
            .admin(token)
            .validate_team_admin_settings(pb::ValidateTeamAdminSettingsRequest {
                team_id: team(),
                auto_run_controls: Some(pb::AutoRunControls::default()),
                expected_revision: None,
            })
            .await
            .map(drop),
        "ListAuditEvents" => server
            .admin(token)
            .list_audit_events(pb::ListAuditEventsRequest {
                team_id: team(),
                ..Default::default()
            })
            .await
            .map(drop),
        "GetUserSettings" => server
            .users(token)
            .get_user_settings(pb::GetUserSettingsRequest {
                team_id: team(),
                user_id: alice(),
            })
            .await
            .map(drop),
        "UpdateUserSettings" => server
            .users(token)
            .update_user_settings(pb::UpdateUserSettingsRequest {
                settings: Some(user_settings(TEAM, "alice")),
                expected_revision: None,
                update_mask: None,
            })
            .await
            .map(drop),
        "AddToAllowlist" => server
            .users(token)
            .add_to_allowlist(pb::AddToAllowlistRequest {
                team_id: team(),
                user_id: alice(),
                server: "github".into(),
                tool: "create_issue".into(),
            })
            .await
            .map(drop),
        "RemoveFromAllowlist" => server
            .users(token)
            .remove_from_allowlist(pb::RemoveFromAllowlistRequest {
                team_id: team(),
                user_id: alice(),
                entry: "github:create_issue".into(),
            })
            .await
            .map(drop),
        "Evaluate" => server
            .policy(token)
            .evaluate(pb::EvaluateRequest {
                approval: None,
                team_id: team(),
                user_id: alice(),
                call: Some(mcp("github", "create_issue")),
                explain: false,
                agent: None,
                client: String::new(),
                tool_use_id: String::new(),
            })
            .await
            .map(drop),
        "EvaluateBatch" => server
            .policy(token)
            .evaluate_batch(pb::EvaluateBatchRequest {
                team_id: team(),
                user_id: alice(),
                calls: vec![mcp("github", "create_issue")],
                explain: false,
                agent: None,
                client: String::new(),
            })
            .await
            .map(drop),
        "FilterTools" => server
            .policy(token)
            .filter_tools(pb::FilterToolsRequest {
                team_id: team(),
                user_id: alice(),
                server: "github".into(),
                tools: Some(pb_value(&serde_json::json!([]))),
                client: String::new(),
            })
            .await
            .map(drop),
        "GetEffectivePolicy" => server
            .policy(token)
            .get_effective_policy(pb::GetEffectivePolicyRequest {
                team_id: team(),
                user_id: alice(),
            })
            .await
            .map(drop),
        "WatchPolicy" => server
            .policy(token)
            .watch_policy(pb::WatchPolicyRequest {
                team_id: team(),
                user_id: alice(),
                after_revision: None,
            })
            .await
            .map(drop),
        "ReportTampering" => server
            .policy(token)
            .report_tampering(pb::ReportTamperingRequest {
                team_id: team(),
                user_id: alice(),
                file: pb::ManagedFile::CodexRequirements as i32,
                path: "/etc/codex/requirements.toml".into(),
                host: "box-1".into(),
                found_sha256: String::new(),
                restored: true,
            })
            .await
            .map(drop),
        "GetServerConfig" => server
            .info(token)
            .get_server_config(pb::GetServerConfigRequest {})
            .await
            .map(drop),
        "GetSignIn" => server
            .info(token)
            .get_sign_in(pb::GetSignInRequest {})
            .await
            .map(drop),
        "GetPrincipal" => pb::principal_service_client::PrincipalServiceClient::with_interceptor(
            server.channel.clone(),
            Auth::new(token),
        )
        .get_principal(pb::GetPrincipalRequest {})
        .await
        .map(drop),
        "ListSignIns" => pb::principal_service_client::PrincipalServiceClient::with_interceptor(
            server.channel.clone(),
            Auth::new(token),
        )
        .list_sign_ins(pb::ListSignInsRequest { team_id: team() })
        .await
        .map(drop),
        other => panic!("unknown rpc {other}"),
    };
    match result {
        Ok(()) => Code::Ok,
        Err(status) => status.code(),
    }
}

/// Reflection v1 (grpcurl's default) lists every service, and health answers SERVING
/// for each of toolgate's; v1alpha is covered by the Python client in
/// `third_party.rs`.
#[tokio::test]
async fn reflection_v1_lists_services() {
    use tonic_reflection::pb::v1::ServerReflectionRequest;
    use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
    use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
    use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;
    let (server, _dir) = start().await;
    let mut client = ServerReflectionClient::new(server.channel.clone());
    let request = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut responses = client
        .server_reflection_info(futures::stream::iter([request]))
        .await
        .unwrap()
        .into_inner();
    let response = responses.message().await.unwrap().unwrap();
    let Some(MessageResponse::ListServicesResponse(list)) = response.message_response else {
        panic!("unexpected reflection response {response:?}");
    };
    let names: Vec<String> = list.service.into_iter().map(|s| s.name).collect();
    for want in [
        "toolgate.v1.PolicyService",
        "toolgate.v1.AdminService",
        "grpc.health.v1.Health",
        "grpc.reflection.v1.ServerReflection",
        "grpc.reflection.v1alpha.ServerReflection",
    ] {
        assert!(
            names.iter().any(|n| n == want),
            "{want} missing from {names:?}"
        );
    }
    let mut health = tonic_health::pb::health_client::HealthClient::new(server.channel.clone());
    for name in names.iter().filter(|n| n.starts_with("toolgate.")) {
        let status = health
            .check(tonic_health::pb::HealthCheckRequest {
                service: name.clone(),
            })
            .await
            .map(|r| r.into_inner().status);
        assert_eq!(
            status.ok(),
            Some(tonic_health::pb::health_check_response::ServingStatus::Serving as i32),
            "health does not answer for {name}: its service is missing from the descriptor set (crates/proto/build.rs)"
        );
    }
    server.stop().await;
}

/// Two servers on one data directory: the second refuses before it touches the store
/// (its policy file's team is not written), naming the directory and the holder; once
/// the first has stopped, the directory is free again.
#[tokio::test(flavor = "multi_thread")]
async fn a_second_server_on_one_data_directory_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let first = TestServer::start(test_config(dir.path())).await;

    let policy = dir.path().join("second-policy.yaml");
    std::fs::write(
        &policy,
        "teams:\n  - team: acme\n    auto_run_controls:\n      enabled: true\n",
    )
    .unwrap();
    let mut second = test_config(dir.path());
    second.policy_file = Some(policy);
    let err = toolgate::server::App::build(second.clone())
        .await
        .expect_err("a second server on the same data directory");
    let text = err.to_string();
    assert!(text.contains(&dir.path().display().to_string()), "{text}");
    assert!(
        text.contains(&format!("pid {}", std::process::id())),
        "{text}"
    );
    assert!(text.contains("--data-dir"), "{text}");

    let admin = first
        .admin("admin-token")
        .get_team_admin_settings(pb::GetTeamAdminSettingsRequest {
            team_id: TEAM.into(),
        })
        .await
        .unwrap()
        .into_inner()
        .settings
        .unwrap();
    assert_eq!(admin.revision, 0, "the refused server wrote nothing");

    first.stop().await;
    let app = toolgate::server::App::build(second)
        .await
        .expect("the directory is free once the first server stopped");
    drop(app);
}
