//! Seed 004's roles through the API: a roles document written with the admin
//! settings reaches a `WatchPolicy` subscriber and the next decision; calls naming an
//! agent are decided by it, calls naming none as before; session quotas are counted
//! by the server; the audit trail records allow-list changes.

use crate::support;

use futures::StreamExt;
use support::*;
use toolgate::proto::v1 as pb;
use toolgate::proto::v1::watch_policy_response::Event;

fn roles_json(forbidden: &str) -> String {
    serde_json::json!({
        "toolCategories": {
            "SYSTEM_OPERATIONS": {"tools": ["FILE_READ", "FILE_WRITE", "PROCESS_EXECUTE"]},
            "UI_OPERATIONS": {"tools": ["CREATE_COMPONENT"]}
        },
        "agentRoles": {"Explore": {"description": "Claude Code's read-only subagent"}},
        "allowLists": {
            "explore": {"roleId": "Explore", "contexts": {"default": {
                "allowedTools": {"SYSTEM_OPERATIONS": ["FILE_READ", "PROCESS_EXECUTE"]},
                "restrictions": {"forbiddenFiles": [forbidden], "maxQueryTime": "5s"}
            }}},
            "ui": {"agentId": "A", "contexts": {"UI_SANDBOX": {
                "allowedTools": {"UI_OPERATIONS": ["CREATE_COMPONENT"]},
                "restrictions": {"maxComponentsPerSession": 20, "sessionQuotas": {"CREATE_COMPONENT": 2}}
            }}}
        },
        "defaultContext": "default"
    })
    .to_string()
}

fn controls(forbidden: &str) -> pb::AutoRunControls {
    pb::AutoRunControls {
        mcp_tool_allowlist: vec!["*:*".into()],
        enabled: true,
        roles: roles(&roles_json(forbidden)),
        ..Default::default()
    }
}

/// The team's roles and admin controls, and alice in auto-run mode, so a call the
/// roles allow is the admin allowlist's ALLOW.
async fn set_up(server: &TestServer, forbidden: &str) {
    server.set_controls(controls(forbidden)).await;
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
        .expect("user write");
}

fn read(path: &str) -> pb::ToolCall {
    pb::ToolCall {
        arguments: Some(pb::CallArguments {
            tool_input: Some(pb_struct(&serde_json::json!({ "file_path": path }))),
            cwd: "/p".into(),
            ..Default::default()
        }),
        ..mcp("builtin", "Read")
    }
}

fn subagent() -> Option<pb::AgentContext> {
    Some(pb::AgentContext {
        agent_id: "a7f3c".into(),
        role: "Explore".into(),
        ..Default::default()
    })
}

async fn evaluate(
    server: &TestServer,
    call: pb::ToolCall,
    agent: Option<pb::AgentContext>,
) -> pb::Decision {
    server
        .policy("alice-token")
        .evaluate(pb::EvaluateRequest {
            approval: None,
            call: Some(call),
            agent,
            ..Default::default()
        })
        .await
        .expect("evaluate")
        .into_inner()
        .decision
        .unwrap()
}

fn outcome(d: &pb::Decision) -> (pb::Outcome, pb::Reason, &str) {
    (d.outcome(), d.reason(), d.message.as_str())
}

#[tokio::test]
async fn a_role_change_reaches_a_watcher_and_the_next_decision() {
    let (server, _dir) = start().await;
    set_up(&server, "*.pem").await;
    let mut events = server
        .policy("alice-token")
        .watch_policy(pb::WatchPolicyRequest {
            team_id: TEAM.into(),
            user_id: "alice".into(),
            after_revision: None,
        })
        .await
        .unwrap()
        .into_inner();
    let first = tokio::time::timeout(std::time::Duration::from_secs(10), events.next())
        .await
        .expect("snapshot in time")
        .unwrap()
        .unwrap();
    assert!(matches!(first.event, Some(Event::Snapshot(_))));

    let d = evaluate(&server, read("/p/.env"), subagent()).await;
    assert_eq!(d.outcome(), pb::Outcome::Allow, "{d:?}");
    assert_eq!(
        d.obligations,
        [pb::Obligation {
            name: "maxQueryTime".into(),
            value: "5s".into()
        }]
    );

    let revision = server.set_controls(controls(".env*")).await;
    let change = loop {
        let e = tokio::time::timeout(std::time::Duration::from_secs(10), events.next())
            .await
            .expect("change in time")
            .unwrap()
            .unwrap();
        if let Some(Event::AdminSettings(s)) = e.event {
            break s;
        }
    };
    assert_eq!(change.revision, revision);
    let roles = crate::support::roles_json(&change.auto_run_controls.unwrap().roles);
    assert_eq!(
        roles["allowLists"]["explore"]["contexts"]["default"]["restrictions"]["forbiddenFiles"],
        serde_json::json!([".env*"])
    );

    let d = evaluate(&server, read("/p/.env"), subagent()).await;
    assert_eq!(
        outcome(&d),
        (
            pb::Outcome::Deny,
            pb::Reason::Restricted,
            "File /p/.env matches forbiddenFiles .env*"
        )
    );
    assert_eq!(d.matched_entry, "forbiddenFiles");
    // another path, same agent and tool: never answered from a cache keyed without it
    let d = evaluate(&server, read("/p/src/main.rs"), subagent()).await;
    assert_eq!(d.outcome(), pb::Outcome::Allow, "{d:?}");
    server.stop().await;
}

#[tokio::test]
async fn calls_without_an_agent_are_decided_as_before() {
    let (server, _dir) = start().await;
    set_up(&server, "*.pem").await;
    // the subagent may not write; the same call without an agent is the admin's ALLOW
    // (in its working directory: a write tool's absolute path is placed against it)
    let write = pb::ToolCall {
        arguments: Some(pb::CallArguments {
            tool_input: Some(pb_struct(
                &serde_json::json!({"file_path": "/p/a.rs", "content": "x"}),
            )),
            cwd: "/p".into(),
            ..Default::default()
        }),
        ..mcp("builtin", "Write")
    };
    let d = evaluate(&server, write.clone(), subagent()).await;
    assert_eq!(
        outcome(&d),
        (
            pb::Outcome::Deny,
            pb::Reason::NotInRoleAllowlist,
            "Operation FILE_WRITE not in allow-list for SYSTEM_OPERATIONS"
        )
    );
    let d = evaluate(&server, write, None).await;
    assert_eq!(
        (d.outcome(), d.reason()),
        (pb::Outcome::Allow, pb::Reason::Allowlisted)
    );
    assert!(d.obligations.is_empty());
    // an unknown role in a team that uses roles: default deny
    let d = evaluate(
        &server,
        read("/p/a.rs"),
        Some(pb::AgentContext {
            role: "general-purpose".into(),
            ..Default::default()
        }),
    )
    .await;
    assert_eq!(
        outcome(&d),
        (
            pb::Outcome::Deny,
            pb::Reason::NoRoleAllowlist,
            "No allow-list found for role general-purpose in context default"
        )
    );
    // the kill switch still comes first
    let mut kill = controls("*.pem");
    kill.kill_switch = true;
    server.set_controls(kill).await;
    let d = evaluate(&server, read("/p/a.rs"), subagent()).await;
    assert_eq!(d.reason(), pb::Reason::KillSwitch);
    server.stop().await;
}

#[tokio::test]
async fn seed_004_examples_and_session_quotas_through_the_api() {
    let (server, _dir) = start().await;
    set_up(&server, "*.pem").await;
    let create = |count: u64| pb::ToolCall {
        arguments: Some(pb::CallArguments {
            operation: "CREATE_COMPONENT".into(),
            component_type: "Button".into(),
            component_count: Some(count),
            ..Default::default()
        }),
        ..mcp("ui", "create_component")
    };
    let agent = |session: &str| {
        Some(pb::AgentContext {
            agent_id: "A".into(),
            context_type: "UI_SANDBOX".into(),
            session_id: session.into(),
            ..Default::default()
        })
    };
    // seed 004 example 3
    let d = evaluate(&server, create(20), agent("s1")).await;
    assert_eq!(
        outcome(&d),
        (
            pb::Outcome::Deny,
            pb::Reason::Restricted,
            "Component limit 20 exceeded"
        )
    );
    // two calls per session, counted by the server; a new session starts again
    for _ in 0..2 {
        let d = evaluate(&server, create(1), agent("s1")).await;
        assert_eq!(d.outcome(), pb::Outcome::Allow, "{d:?}");
    }
    let d = evaluate(&server, create(1), agent("s1")).await;
    assert_eq!(
        outcome(&d),
        (
            pb::Outcome::Deny,
            pb::Reason::Restricted,
            "Session quota of 2 calls to CREATE_COMPONENT exhausted"
        )
    );
    let d = evaluate(&server, create(1), agent("s2")).await;
    assert_eq!(d.outcome(), pb::Outcome::Allow, "{d:?}");
    // no allow-list for the agent in the context (the issue's message)
    let d = evaluate(
        &server,
        create(1),
        Some(pb::AgentContext {
            agent_id: "B".into(),
            context_type: "UI_SANDBOX".into(),
            ..Default::default()
        }),
    )
    .await;
    assert_eq!(
        outcome(&d),
        (
            pb::Outcome::Deny,
            pb::Reason::NoRoleAllowlist,
            "No allow-list found for agent B in context UI_SANDBOX"
        )
    );
    // a DENY of the roles is audited like any other, and the document's write as
    // one allow_list_updated record per allow-list context
    let found = |kind: &'static str, text: &'static str| {
        let server = &server;
        async move {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            loop {
                let events = server
                    .admin("admin-token")
                    .list_audit_events(pb::ListAuditEventsRequest {
                        team_id: TEAM.into(),
                        kind: audit_kind(kind),
                        ..Default::default()
                    })
                    .await
                    .unwrap()
                    .into_inner()
                    .events;
                if events
                    .iter()
                    .any(|e| crate::support::detail(e).to_string().contains(text))
                {
                    return events;
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "no {kind} record with {text}: {events:?}"
                );
                tokio::task::yield_now().await;
            }
        }
    };
    found("decision_denied", "NO_ROLE_ALLOWLIST").await;
    let updates = found("allow_list_updated", "UI_SANDBOX").await;
    assert_eq!(updates[0].actor, "admin");
    assert!(
        updates
            .iter()
            .map(|e| crate::support::detail(e).to_string())
            .any(|d| d.contains(r#""context":"default""#) && d.contains(r#""change":"added""#)),
        "{updates:?}"
    );
    server.stop().await;
}

#[tokio::test]
async fn an_invalid_roles_document_is_refused_naming_the_field() {
    let (server, _dir) = start().await;
    let mut bad = controls("*.pem");
    bad.roles = roles(&roles_json("*.pem").replace("\"5s\"", "\"5s\", \"maxFileSize\": \"ten\""));
    let err = server
        .admin("admin-token")
        .update_team_admin_settings(pb::UpdateTeamAdminSettingsRequest {
            team_id: TEAM.into(),
            auto_run_controls: Some(bad),
            expected_revision: None,
        })
        .await
        .expect_err("invalid");
    assert_eq!(err.code(), tonic::Code::InvalidArgument, "{err:?}");
    assert!(
        err.message()
            .contains("roles.allowLists.explore.contexts.default.restrictions.maxFileSize"),
        "{}",
        err.message()
    );
    // a list of names holding something else is refused by its path
    let mut not_a_name = controls("*.pem");
    not_a_name
        .roles
        .as_mut()
        .and_then(|d| d.allow_lists.get_mut("explore"))
        .and_then(|l| l.contexts.get_mut("default"))
        .and_then(|c| c.allowed_tools.get_mut("SYSTEM_OPERATIONS"))
        .unwrap()
        .values
        .push(pb_value(&serde_json::json!(7)));
    let err = server
        .admin("admin-token")
        .update_team_admin_settings(pb::UpdateTeamAdminSettingsRequest {
            team_id: TEAM.into(),
            auto_run_controls: Some(not_a_name),
            expected_revision: None,
        })
        .await
        .expect_err("not a name");
    assert_eq!(err.code(), tonic::Code::InvalidArgument, "{err:?}");
    assert!(
        err.message().contains(
            "roles.allowLists.explore.contexts.default.allowedTools.SYSTEM_OPERATIONS[2]"
        ),
        "{}",
        err.message()
    );
    server.stop().await;
}

#[tokio::test]
async fn every_decision_is_logged_when_configured() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path());
    config.audit.decisions = toolgate::config::DecisionLog::All;
    let server = TestServer::start(config).await;
    set_up(&server, "*.pem").await;
    let d = evaluate(&server, read("/p/src/main.rs"), subagent()).await;
    assert_eq!(d.outcome(), pb::Outcome::Allow, "{d:?}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let events = server
            .admin("admin-token")
            .list_audit_events(pb::ListAuditEventsRequest {
                team_id: TEAM.into(),
                kind: audit_kind("decision_made"),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner()
            .events;
        if let Some(e) = events.first() {
            let detail = crate::support::detail(e).to_string();
            assert!(detail.contains(r#""outcome":"ALLOW""#), "{e:?}");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no decision_made record"
        );
        tokio::task::yield_now().await;
    }
    server.stop().await;
}

/// Issue 25: a session quota is counted per user (bob reusing alice's session id
/// spends only his own), and only an ALLOW consumes it: an ASK (bob without
/// auto-run) is not counted, and is refused once the quota is used up.
#[tokio::test]
async fn session_quotas_are_per_user_and_only_an_allow_counts() {
    let (server, _dir) = start().await;
    set_up(&server, "*.pem").await;
    let create = || pb::ToolCall {
        arguments: Some(pb::CallArguments {
            operation: "CREATE_COMPONENT".into(),
            component_type: "Button".into(),
            component_count: Some(1),
            ..Default::default()
        }),
        ..mcp("ui", "create_component")
    };
    let as_user = |token: &'static str, session: &'static str| {
        let server = &server;
        async move {
            server
                .policy(token)
                .evaluate(pb::EvaluateRequest {
                    approval: None,
                    call: Some(create()),
                    agent: Some(pb::AgentContext {
                        agent_id: "A".into(),
                        context_type: "UI_SANDBOX".into(),
                        session_id: session.into(),
                        ..Default::default()
                    }),
                    ..Default::default()
                })
                .await
                .expect("evaluate")
                .into_inner()
                .decision
                .unwrap()
        }
    };
    let exhausted = "Session quota of 2 calls to CREATE_COMPONENT exhausted";
    let bob_auto_run = |on: bool| {
        let server = &server;
        async move {
            server
                .users("bob-token")
                .update_user_settings(pb::UpdateUserSettingsRequest {
                    settings: Some(pb::UserSettings {
                        use_yolo_mode: on,
                        ..user_settings(TEAM, "bob")
                    }),
                    expected_revision: None,
                    update_mask: None,
                })
                .await
                .expect("bob's write");
        }
    };
    // bob is asked (no auto-run): as often as he likes, nothing counted
    for _ in 0..3 {
        let d = as_user("bob-token", "s1").await;
        assert_eq!(d.outcome(), pb::Outcome::Ask, "{d:?}");
    }
    // so alice, in the same session id, still has both calls, then none
    for _ in 0..2 {
        let d = as_user("alice-token", "s1").await;
        assert_eq!(d.outcome(), pb::Outcome::Allow, "{d:?}");
    }
    let d = as_user("alice-token", "s1").await;
    assert_eq!(
        outcome(&d),
        (pb::Outcome::Deny, pb::Reason::Restricted, exhausted)
    );
    // bob reusing her session id has his own quota: asked, then with auto-run allowed twice
    let d = as_user("bob-token", "s1").await;
    assert_eq!(d.outcome(), pb::Outcome::Ask, "{d:?}");
    bob_auto_run(true).await;
    for _ in 0..2 {
        let d = as_user("bob-token", "s1").await;
        assert_eq!(d.outcome(), pb::Outcome::Allow, "{d:?}");
    }
    let d = as_user("bob-token", "s1").await;
    assert_eq!(
        outcome(&d),
        (pb::Outcome::Deny, pb::Reason::Restricted, exhausted)
    );
    // once used up, what would be asked is refused: approving it would pass the quota
    bob_auto_run(false).await;
    let d = as_user("bob-token", "s1").await;
    assert_eq!(
        outcome(&d),
        (pb::Outcome::Deny, pb::Reason::Restricted, exhausted)
    );
    // and a fresh session of his is asked again
    let d = as_user("bob-token", "s2").await;
    assert_eq!(d.outcome(), pb::Outcome::Ask, "{d:?}");
    // a session id is a key in the store: bounded like an id
    let refused = server
        .policy("alice-token")
        .evaluate(pb::EvaluateRequest {
            approval: None,
            call: Some(create()),
            agent: Some(pb::AgentContext {
                agent_id: "A".into(),
                context_type: "UI_SANDBOX".into(),
                session_id: "s".repeat(300),
                ..Default::default()
            }),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::InvalidArgument, "{refused:?}");
    assert!(
        refused
            .message()
            .contains("agent.session_id: must be at most 256 characters"),
        "{refused:?}"
    );
    server.stop().await;
}
