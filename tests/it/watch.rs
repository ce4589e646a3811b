//! WatchPolicy: snapshot first, one event per relevant change in revision order,
//! resume without gap or duplicate, resync when history or the queue runs out.

use crate::support;

use futures::StreamExt;
use support::*;
use tonic::Code;
use toolgate::proto::v1 as pb;
use toolgate::proto::v1::watch_policy_response::Event;

pub(crate) type Events = tonic::Streaming<pb::WatchPolicyResponse>;

pub(crate) async fn watch(
    server: &TestServer,
    token: &str,
    team: &str,
    user: &str,
    after: Option<u64>,
) -> Events {
    server
        .policy(token)
        .watch_policy(pb::WatchPolicyRequest {
            team_id: team.into(),
            user_id: user.into(),
            after_revision: after,
        })
        .await
        .unwrap()
        .into_inner()
}

/// The next event that is not a heartbeat.
pub(crate) async fn next(events: &mut Events) -> pb::WatchPolicyResponse {
    loop {
        let e = events.message().await.unwrap().expect("stream ended");
        if !matches!(e.event, Some(Event::Heartbeat(_))) {
            return e;
        }
    }
}

async fn set_admin(server: &TestServer, team: &str, allow: &str) -> u64 {
    let token = if team == TEAM {
        "admin-token"
    } else {
        "operator-token"
    };
    server
        .admin(token)
        .update_team_admin_settings(pb::UpdateTeamAdminSettingsRequest {
            team_id: team.into(),
            auto_run_controls: Some(pb::AutoRunControls {
                enabled: true,
                mcp_tool_allowlist: vec![allow.into()],
                ..Default::default()
            }),
            expected_revision: None,
        })
        .await
        .unwrap()
        .into_inner()
        .settings
        .unwrap()
        .revision
}

async fn set_user(server: &TestServer, user: &str, allow: &str) -> u64 {
    let mut s = user_settings(TEAM, user);
    s.mcp_allowed_tools = vec![allow.into()];
    server
        .users("admin-token")
        .update_user_settings(pb::UpdateUserSettingsRequest {
            settings: Some(s),
            expected_revision: None,
            update_mask: None,
        })
        .await
        .unwrap()
        .into_inner()
        .settings
        .unwrap()
        .revision
}

fn snapshot(e: &pb::WatchPolicyResponse) -> (&pb::PolicySnapshot, u64) {
    match &e.event {
        Some(Event::Snapshot(s)) => (s, e.revision),
        other => panic!("expected a snapshot, got {other:?}"),
    }
}

fn admin_allow(e: &pb::WatchPolicyResponse) -> (u64, String) {
    match &e.event {
        Some(Event::AdminSettings(a)) => (
            e.revision,
            a.auto_run_controls
                .as_ref()
                .unwrap()
                .mcp_tool_allowlist
                .join(","),
        ),
        other => panic!("expected admin settings, got {other:?}"),
    }
}

fn user_allow(e: &pb::WatchPolicyResponse) -> (u64, String, String) {
    match &e.event {
        Some(Event::UserSettings(u)) => {
            (e.revision, u.user_id.clone(), u.mcp_allowed_tools.join(","))
        }
        other => panic!("expected user settings, got {other:?}"),
    }
}

#[tokio::test]
async fn snapshot_first_then_changes_to_every_team_subscriber_only() {
    let (server, _dir) = start().await;
    set_admin(&server, TEAM, "jira:*").await;
    let mut a = watch(&server, "alice-token", TEAM, "alice", None).await;
    let mut b = watch(&server, "service-token", TEAM, "bob", None).await;
    let mut other = watch(&server, "other-admin-token", OTHER_TEAM, "carol", None).await;
    for events in [&mut a, &mut b] {
        let first = next(events).await;
        let (snap, rev) = snapshot(&first);
        assert_eq!(rev, 1);
        assert!(!snap.resync);
        let policy = snap.policy.as_ref().unwrap();
        assert_eq!(
            policy
                .admin
                .as_ref()
                .unwrap()
                .auto_run_controls
                .as_ref()
                .unwrap()
                .mcp_tool_allowlist,
            ["jira:*"]
        );
    }
    assert_eq!(snapshot(&next(&mut other).await).1, 0);

    let rev = set_admin(&server, TEAM, "github:*").await;
    assert_eq!(rev, 2);
    assert_eq!(admin_allow(&next(&mut a).await), (2, "github:*".into()));
    assert_eq!(admin_allow(&next(&mut b).await), (2, "github:*".into()));
    // the other team's first event is its own change, not acme's
    set_admin(&server, OTHER_TEAM, "slack:*").await;
    assert_eq!(admin_allow(&next(&mut other).await), (1, "slack:*".into()));
    server.stop().await;
}

#[tokio::test]
async fn user_change_reaches_only_that_user() {
    let (server, _dir) = start().await;
    let mut alice = watch(&server, "alice-token", TEAM, "alice", None).await;
    let mut bob = watch(&server, "bob-token", TEAM, "bob", None).await;
    snapshot(&next(&mut alice).await);
    snapshot(&next(&mut bob).await);
    set_user(&server, "bob", "github:*").await;
    set_admin(&server, TEAM, "jira:*").await;
    assert_eq!(
        user_allow(&next(&mut bob).await),
        (1, "bob".into(), "github:*".into())
    );
    assert_eq!(admin_allow(&next(&mut bob).await), (2, "jira:*".into()));
    // alice skips bob's change: her next event is the admin change
    assert_eq!(admin_allow(&next(&mut alice).await), (2, "jira:*".into()));
    server.stop().await;
}

#[tokio::test]
async fn resume_replays_exactly_the_missed_changes() {
    let (server, _dir) = start().await;
    let mut first = watch(&server, "alice-token", TEAM, "alice", None).await;
    assert_eq!(snapshot(&next(&mut first).await).1, 0);
    set_admin(&server, TEAM, "a:*").await;
    assert_eq!(admin_allow(&next(&mut first).await).0, 1);
    drop(first);

    set_user(&server, "alice", "b:*").await; // 2
    set_user(&server, "bob", "c:*").await; // 3, not alice's
    set_admin(&server, TEAM, "d:*").await; // 4
    let mut resumed = watch(&server, "alice-token", TEAM, "alice", Some(1)).await;
    assert_eq!(
        user_allow(&next(&mut resumed).await),
        (2, "alice".into(), "b:*".into())
    );
    assert_eq!(admin_allow(&next(&mut resumed).await), (4, "d:*".into()));
    // then live changes, with nothing repeated
    set_admin(&server, TEAM, "e:*").await; // 5
    assert_eq!(admin_allow(&next(&mut resumed).await), (5, "e:*".into()));

    // resuming at the head sends nothing until the next change
    let mut at_head = watch(&server, "alice-token", TEAM, "alice", Some(5)).await;
    set_user(&server, "alice", "f:*").await; // 6
    assert_eq!(
        user_allow(&next(&mut at_head).await),
        (6, "alice".into(), "f:*".into())
    );
    server.stop().await;
}

#[tokio::test]
async fn revision_older_than_history_gets_a_resync_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path());
    config.watch.history_per_team = 2;
    let server = TestServer::start(config).await;
    for i in 0..5 {
        set_admin(&server, TEAM, &format!("s{i}:*")).await;
    }
    let mut events = watch(&server, "alice-token", TEAM, "alice", Some(1)).await;
    let e = next(&mut events).await;
    let (snap, rev) = snapshot(&e);
    assert!(snap.resync);
    assert_eq!(rev, 5);
    // a revision still in the history replays normally
    let mut events = watch(&server, "alice-token", TEAM, "alice", Some(3)).await;
    assert_eq!(admin_allow(&next(&mut events).await), (4, "s3:*".into()));
    assert_eq!(admin_allow(&next(&mut events).await), (5, "s4:*".into()));
    server.stop().await;
}

/// On a quiet stream a heartbeat comes every `watch.heartbeat_secs`, with the current
/// revision. Driven at the service layer with tokio's clock paused: the wait is
/// skipped, not slept.
#[tokio::test]
async fn heartbeats_carry_the_current_revision() {
    use toolgate::policy::AdminControls;
    use toolgate::service::WatchEvent;
    let dir = tempfile::tempdir().unwrap();
    let config = test_config(dir.path());
    let every = std::time::Duration::from_secs(config.watch.heartbeat_secs);
    let app = toolgate::server::App::build(config).await.unwrap();
    let service = app.service.clone();
    let admin = team_admin();
    service
        .update_admin(&admin, TEAM, AdminControls::default(), None)
        .await
        .unwrap();
    let mut events = Box::pin(service.watch(&admin, TEAM, "alice", None).await.unwrap());
    assert!(matches!(
        events.next().await,
        Some(Ok(WatchEvent::Snapshot { .. }))
    ));
    tokio::time::pause();
    let quiet_from = tokio::time::Instant::now();
    for _ in 0..2 {
        match events.next().await {
            Some(Ok(WatchEvent::Heartbeat { revision })) => assert_eq!(revision, 1),
            other => panic!("expected a heartbeat, got {other:?}"),
        }
    }
    // the paused clock moved two heartbeat intervals (and the timer's 1 ms rounding)
    let waited = quiet_from.elapsed();
    assert!(
        waited >= 2 * every && waited < 2 * every + std::time::Duration::from_secs(1),
        "{waited:?} for two heartbeats {every:?} apart"
    );
}

#[tokio::test]
async fn shutdown_ends_streams_with_unavailable() {
    let (server, _dir) = start().await;
    let mut events = watch(&server, "alice-token", TEAM, "alice", None).await;
    snapshot(&next(&mut events).await);
    let stopping = tokio::spawn(server.stop());
    let status = loop {
        match events.message().await {
            Ok(Some(_)) => continue,
            Ok(None) => panic!("stream ended without a status"),
            Err(status) => break status,
        }
    };
    assert_eq!(status.code(), Code::Unavailable, "{status:?}");
    stopping.await.unwrap();
}

/// A subscriber that stops reading never delays writers or other subscribers, and
/// is resynced when it reads again. Driven at the service layer, where "stops
/// reading" is exact (no transport buffers in between).
#[tokio::test]
async fn slow_subscriber_is_resynced_and_blocks_nobody() {
    use toolgate::policy::AdminControls;
    use toolgate::service::WatchEvent;
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path());
    config.watch.queue_size = 4;
    let app = toolgate::server::App::build(config).await.unwrap();
    let service = app.service.clone();
    let admin = team_admin();
    let mut slow = Box::pin(service.watch(&admin, TEAM, "alice", None).await.unwrap());
    let mut fast = Box::pin(service.watch(&admin, TEAM, "bob", None).await.unwrap());
    assert!(matches!(
        slow.next().await,
        Some(Ok(WatchEvent::Snapshot { resync: false, .. }))
    ));
    assert!(matches!(
        fast.next().await,
        Some(Ok(WatchEvent::Snapshot { resync: false, .. }))
    ));
    for i in 1..=20u64 {
        let controls = AdminControls {
            mcp_tool_allowlist: vec![format!("s{i}:*")],
            ..Default::default()
        };
        // acknowledged although `slow` has not read anything since its snapshot
        let stored = service
            .update_admin(&admin, TEAM, controls, None)
            .await
            .unwrap();
        assert_eq!(stored.revision, i);
        match fast.next().await {
            Some(Ok(WatchEvent::Change(change))) => assert_eq!(change.revision, i),
            other => panic!("fast subscriber: {other:?}"),
        }
    }
    match slow.next().await {
        Some(Ok(WatchEvent::Snapshot { effective, resync })) => {
            assert!(resync);
            assert_eq!(effective.revision, 20);
            assert_eq!(effective.admin.stored().doc.mcp_tool_allowlist, ["s20:*"]);
        }
        other => panic!("slow subscriber: {other:?}"),
    }
}

/// The hub keeps at most `limits.max_cached_users_per_team` users compiled; the ones
/// it lets go are read again from the store, so no decision sees stale settings.
#[tokio::test]
async fn cached_users_are_bounded_and_never_stale() {
    use toolgate::policy::{Call, Outcome, UserSettings};
    const USERS: usize = 60;
    const CAP: usize = 10;
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path());
    config.limits.max_cached_users_per_team = CAP;
    let app = toolgate::server::App::build(config).await.unwrap();
    let service = app.service.clone();
    let admin = team_admin();
    let allowing = |entry: String| UserSettings {
        use_yolo_mode: true,
        mcp_allowed_tools: vec![entry],
        ..UserSettings::default()
    };
    let outcome = |user: usize, tool: &str| {
        let service = service.clone();
        let admin = admin.clone();
        let tool = tool.to_owned();
        async move {
            let call = Call::Mcp {
                server: format!("s{user}"),
                tool,
            };
            let (decisions, _) = service
                .evaluate(&admin, TEAM, &format!("user{user}"), &[call], false)
                .await
                .unwrap();
            decisions[0].outcome
        }
    };
    for round in ["a", "b"] {
        for u in 0..USERS {
            service
                .update_user(
                    &admin,
                    TEAM,
                    &format!("user{u}"),
                    allowing(format!("s{u}:{round}")),
                    None,
                )
                .await
                .unwrap();
        }
        for u in 0..USERS {
            assert_eq!(
                outcome(u, round).await,
                Outcome::Allow,
                "user{u} round {round}"
            );
            let other = if round == "a" { "b" } else { "a" };
            assert_eq!(
                outcome(u, other).await,
                Outcome::Ask,
                "user{u} round {round}"
            );
        }
        let cached = service.hub().cached_users(TEAM);
        assert!(cached <= CAP, "{cached} users cached, limit {CAP}");
    }
}

/// The admin of team [`TEAM`], for tests that drive the domain service directly.
fn team_admin() -> toolgate::auth::Principal {
    toolgate::auth::Principal {
        groups: Default::default(),
        name: "admin".into(),
        role: toolgate::auth::Role::Admin,
        team: Some(TEAM.into()),
        user: None,
    }
}
