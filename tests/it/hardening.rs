//! Issue 13's hardening, one test per hole found: each failed before its fix.

use crate::support;

use support::*;
use tonic::Code;
use toolgate::proto::v1 as pb;
use toolgate::proto::v1::watch_policy_response::Event;

type Events = tonic::Streaming<pb::WatchPolicyResponse>;

/// The next event that is not a heartbeat, within a deadline.
async fn next(events: &mut Events) -> pb::WatchPolicyResponse {
    let deadline = std::time::Duration::from_secs(10);
    tokio::time::timeout(deadline, async {
        loop {
            let e = events.message().await.unwrap().expect("stream ended");
            if !matches!(e.event, Some(Event::Heartbeat(_))) {
                return e;
            }
        }
    })
    .await
    .expect("no event within the deadline")
}

fn kill_switch(on: bool) -> pb::AutoRunControls {
    pb::AutoRunControls {
        enabled: true,
        kill_switch: on,
        mcp_tool_allowlist: vec!["jira:*".into()],
        ..Default::default()
    }
}

/// Item 1: a watch resumed past the team's revision (a client from before a backup
/// restore, or a made-up revision) gets a resync snapshot, then every later change.
#[tokio::test]
async fn watch_resumed_past_the_head_resyncs_and_sees_the_kill_switch() {
    let (server, _dir) = start().await;
    server.set_controls(kill_switch(false)).await;
    let head = server.set_controls(kill_switch(false)).await;
    for after in [head + 1, 1_000_000_000_000, u64::MAX] {
        let mut events = server
            .policy("alice-token")
            .watch_policy(pb::WatchPolicyRequest {
                team_id: TEAM.into(),
                user_id: "alice".into(),
                after_revision: Some(after),
            })
            .await
            .unwrap()
            .into_inner();
        let first = next(&mut events).await;
        match &first.event {
            Some(Event::Snapshot(s)) => assert!(s.resync, "after {after}: {s:?}"),
            other => panic!("after {after}: expected a resync snapshot, got {other:?}"),
        }
        let on = server.set_controls(kill_switch(true)).await;
        let change = next(&mut events).await;
        assert_eq!(change.revision, on, "after {after}");
        match &change.event {
            Some(Event::AdminSettings(a)) => {
                assert!(a.auto_run_controls.as_ref().unwrap().kill_switch)
            }
            other => panic!("after {after}: expected the kill switch, got {other:?}"),
        }
        server.set_controls(kill_switch(false)).await;
    }
    server.stop().await;
}

/// Item 2: `GetServerConfig` shows principals and where the store and collector
/// are to operators only, and every credential redacted to everyone.
#[tokio::test]
async fn server_config_keeps_secrets_and_principals_from_members() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path());
    // App::build installs no exporter: the settings are only shown
    config.telemetry.otlp_endpoint =
        Some("https://otel:otelpass@otel.example:4317?token=t0k".into());
    config
        .telemetry
        .otlp_headers
        .insert("authorization".into(), "Bearer otel-secret".into());
    let server = TestServer::start(config).await;
    let secrets = ["otelpass", "t0k", "otel-secret"];
    let mut views = Vec::new();
    for token in [
        "operator-token",
        "admin-token",
        "alice-token",
        "service-token",
    ] {
        let json = server
            .info(token)
            .get_server_config(pb::GetServerConfigRequest {})
            .await
            .unwrap()
            .into_inner();
        let json = config_of(&json).to_string();
        for secret in secrets {
            assert!(!json.contains(secret), "{token} sees {secret}: {json}");
        }
        views.push((token, json));
    }
    let (_, operator) = &views[0];
    assert!(
        operator.contains("https://otel:***@otel.example:4317?token=***"),
        "{operator}"
    );
    assert!(
        operator.contains("\"name\":\"alice\""),
        "operators see principals"
    );
    for (token, json) in &views[1..] {
        for hidden in ["\"auth\"", "alice", "otel.example", "authorization"] {
            assert!(!json.contains(hidden), "{token} sees {hidden}: {json}");
        }
    }
    server.stop().await;
}

/// Item 9: `since` past the Timestamp range (9e18 seconds used to wrap around and
/// list every event) or with nanos outside 0..1e9 is INVALID_ARGUMENT naming it.
#[tokio::test]
async fn audit_since_out_of_range_is_invalid_argument() {
    let (server, _dir) = start().await;
    server.set_controls(kill_switch(false)).await;
    for (seconds, nanos) in [
        (9_000_000_000_000_000_000, 0),
        (i64::MIN, 0),
        (253_402_300_800, 0),
        (0, -1),
        (0, 1_000_000_000),
    ] {
        let e = server
            .admin("admin-token")
            .list_audit_events(pb::ListAuditEventsRequest {
                team_id: TEAM.into(),
                since: Some(prost_types::Timestamp { seconds, nanos }),
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{seconds}/{nanos}: {e:?}");
        assert!(e.message().starts_with("since: "), "{}", e.message());
    }
    // the last valid instant lists nothing, the first one everything
    for (seconds, want) in [(253_402_300_799, 0), (-62_135_596_800, 1)] {
        let events = server
            .admin("admin-token")
            .list_audit_events(pb::ListAuditEventsRequest {
                team_id: TEAM.into(),
                since: Some(prost_types::Timestamp {
                    seconds,
                    nanos: 999_999_999,
                }),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner()
            .events;
        assert_eq!(events.len(), want, "since {seconds}");
    }
    server.stop().await;
}

/// `EvaluateRequest` with its strings as bytes, to send what a well-behaved client
/// cannot: a team id that is not UTF-8.
#[derive(Clone, PartialEq, prost::Message)]
struct RawEvaluateRequest {
    #[prost(bytes = "vec", tag = "1")]
    team_id: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    user_id: Vec<u8>,
}

/// Item 9: a request that does not decode (invalid UTF-8 in a string field) is the
/// client's error: INVALID_ARGUMENT naming the field, not INTERNAL.
#[tokio::test]
async fn undecodable_request_is_invalid_argument() {
    let (server, _dir) = start().await;
    let mut grpc = tonic::client::Grpc::new(server.channel.clone());
    grpc.ready().await.unwrap();
    let mut request = tonic::Request::new(RawEvaluateRequest {
        team_id: b"ac\xffme".to_vec(),
        user_id: b"alice".to_vec(),
    });
    request
        .metadata_mut()
        .insert("authorization", "Bearer alice-token".parse().unwrap());
    let e = grpc
        .unary::<_, pb::Decision, _>(
            request,
            "/toolgate.v1.PolicyService/Evaluate".parse().unwrap(),
            tonic_prost::ProstCodec::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    assert!(e.message().contains("team_id"), "{}", e.message());
    server.stop().await;
}

/// Item 10: ids are taken in NFC and refused with invisible or control characters,
/// the error naming the field and the character.
#[tokio::test]
async fn ids_are_nfc_without_invisible_characters() {
    let (server, _dir) = start().await;
    for (user, code) in [
        ("ali\u{200b}ce", "U+200B"),
        ("ali\u{202e}ce", "U+202E"),
        ("ali\u{2028}ce", "U+2028"),
        ("ali\u{2066}ce", "U+2066"),
        ("ali\u{feff}ce", "U+FEFF"),
        ("ali\u{200f}ce", "U+200F"),
        ("ali\u{7f}ce", "U+007F"),
    ] {
        let e = server
            .users("admin-token")
            .update_user_settings(pb::UpdateUserSettingsRequest {
                settings: Some(user_settings(TEAM, user)),
                expected_revision: None,
                update_mask: None,
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{user:?}");
        assert!(
            e.message().starts_with("settings.user_id: ") && e.message().contains(code),
            "{user:?}: {}",
            e.message()
        );
        let e = server
            .policy("admin-token")
            .evaluate(pb::EvaluateRequest {
                approval: None,
                team_id: TEAM.into(),
                user_id: user.into(),
                call: Some(mcp("jira", "get_issue")),
                explain: false,
                agent: None,
                client: String::new(),
                tool_use_id: String::new(),
            })
            .await
            .unwrap_err();
        assert!(e.message().starts_with("user_id: ") && e.message().contains(code));
    }
    // josé typed with a combining accent is the same user as with é
    let mut s = user_settings(TEAM, "jose\u{301}");
    s.mcp_allowed_tools = vec!["jira:get_issue".into()];
    server
        .users("admin-token")
        .update_user_settings(pb::UpdateUserSettingsRequest {
            settings: Some(s),
            expected_revision: None,
            update_mask: None,
        })
        .await
        .unwrap();
    let got = server
        .users("admin-token")
        .get_user_settings(pb::GetUserSettingsRequest {
            team_id: TEAM.into(),
            user_id: "jos\u{e9}".into(),
        })
        .await
        .unwrap()
        .into_inner()
        .settings
        .unwrap();
    assert_eq!(got.mcp_allowed_tools, vec!["jira:get_issue".to_owned()]);
    server.stop().await;
}

/// Item 10: the data directory is created 0700 and the database, WAL and SHM files
/// 0600; a pre-existing bootstrap token others may read is refused, not adopted; a
/// new one is written 0600 with nothing left beside it.
#[cfg(unix)]
#[tokio::test]
async fn files_are_owner_only_and_a_readable_token_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("nested").join("data");
    let mut config = test_config(&data);
    config.auth.tokens.clear();
    let app = toolgate::server::App::build(config.clone()).await.unwrap();
    assert_eq!(mode(&data), 0o700);
    for name in ["toolgate.db", "toolgate.db-wal", "toolgate.db-shm"] {
        assert_eq!(mode(&data.join(name)), 0o600, "{name}");
    }
    let token_file = data.join(toolgate::server::BOOTSTRAP_TOKEN_FILE);
    assert_eq!(mode(&token_file), 0o600);
    let token = std::fs::read_to_string(&token_file).unwrap();
    let beside: Vec<_> = std::fs::read_dir(&data)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(beside.is_empty(), "{beside:?}");
    drop(app);

    // a 0600 token is kept across restarts
    let app = toolgate::server::App::build(config.clone()).await.unwrap();
    assert_eq!(std::fs::read_to_string(&token_file).unwrap(), token);
    drop(app);

    // one others may read is not adopted
    std::fs::write(&token_file, "tg_planted\n").unwrap();
    std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let e = toolgate::server::App::build(config.clone())
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("0644") && e.contains("bootstrap-token"), "{e}");

    // an old database file left 0644 is tightened
    std::fs::remove_file(&token_file).unwrap();
    std::fs::set_permissions(
        data.join("toolgate.db"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    let app = toolgate::server::App::build(config).await.unwrap();
    assert_eq!(mode(&data.join("toolgate.db")), 0o600);
    assert_ne!(std::fs::read_to_string(&token_file).unwrap(), token);
    drop(app);
}
