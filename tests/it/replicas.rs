//! Several replicas on one PostgreSQL: one truth, changes reach watchers on every
//! replica, expected revisions hold across replicas, and a replica rides out a
//! database restart.

use crate::support;

use support::*;
use tonic::Code;
use toolgate::proto::v1 as pb;
use toolgate::proto::v1::watch_policy_response::Event;

async fn replica(url: &str) -> (TestServer, tempfile::TempDir) {
    // these tests are about riding out an outage; the bound on staleness is
    // partition.rs's (past it, only DENYs are answered)
    replica_with(url, 300).await
}

/// A replica on the database at `url`, pinging its listener every
/// `max_staleness_secs / 4`.
pub(crate) async fn replica_with(
    url: &str,
    max_staleness_secs: u64,
) -> (TestServer, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path());
    config.store.url = Some(url.to_owned());
    config.store.max_staleness_secs = max_staleness_secs;
    (TestServer::start(config).await, dir)
}

fn update(allow: &str, expected: Option<u64>) -> pb::UpdateTeamAdminSettingsRequest {
    pb::UpdateTeamAdminSettingsRequest {
        team_id: TEAM.into(),
        auto_run_controls: Some(pb::AutoRunControls {
            enabled: true,
            mcp_tool_allowlist: vec![allow.into()],
            ..Default::default()
        }),
        expected_revision: expected,
    }
}

async fn next_change(
    events: &mut tonic::Streaming<pb::WatchPolicyResponse>,
) -> pb::WatchPolicyResponse {
    loop {
        let e = events.message().await.unwrap().expect("stream ended");
        match e.event {
            Some(Event::Heartbeat(_)) => continue,
            _ => return e,
        }
    }
}

fn allowlist(e: &pb::WatchPolicyResponse) -> Vec<String> {
    match &e.event {
        Some(Event::AdminSettings(a)) => a.auto_run_controls.clone().unwrap().mcp_tool_allowlist,
        other => panic!("expected admin settings, got {other:?}"),
    }
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

#[tokio::test]
async fn postgres_write_through_one_replica_reaches_a_watcher_on_another() {
    let Some(url) = support::pg::fresh_database("postgres replicas").await else {
        return;
    };
    let (a, _da) = replica(&url).await;
    let (b, _db) = replica(&url).await;
    let mut on_b = watch(&b).await;
    assert!(matches!(
        next_change(&mut on_b).await.event,
        Some(Event::Snapshot(_))
    ));
    for (i, allow) in ["jira:*", "github:*", "slack:*"].iter().enumerate() {
        let written = a
            .admin("admin-token")
            .update_team_admin_settings(update(allow, None))
            .await
            .unwrap()
            .into_inner()
            .settings
            .unwrap();
        let e = next_change(&mut on_b).await;
        assert_eq!(e.revision, written.revision);
        assert_eq!(e.revision, i as u64 + 1);
        assert_eq!(allowlist(&e), [*allow]);
    }
    // B decides with what A wrote
    let d = b
        .policy("alice-token")
        .evaluate(pb::EvaluateRequest {
            approval: None,
            team_id: TEAM.into(),
            user_id: "alice".into(),
            call: Some(mcp("slack", "post")),
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
    assert_eq!(d.revision, 3);
    assert_eq!(
        d.matched_entry, "",
        "auto-run is off for alice, so no entry decides"
    );
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn postgres_concurrent_writers_on_two_replicas_never_both_win() {
    let Some(url) = support::pg::fresh_database("postgres concurrent replicas").await else {
        return;
    };
    let (a, _da) = replica(&url).await;
    let (b, _db) = replica(&url).await;
    for round in 0..10u64 {
        let (mut ca, mut cb) = (a.admin("admin-token"), b.admin("admin-token"));
        let (ra, rb) = tokio::join!(
            ca.update_team_admin_settings(update("a:*", Some(round))),
            cb.update_team_admin_settings(update("b:*", Some(round))),
        );
        let codes = [
            ra.as_ref().err().map(tonic::Status::code),
            rb.as_ref().err().map(tonic::Status::code),
        ];
        let wins = codes.iter().filter(|c| c.is_none()).count();
        assert_eq!(wins, 1, "round {round}: {codes:?}");
        assert!(
            codes.contains(&Some(Code::Aborted)),
            "round {round}: {codes:?}"
        );
    }
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn postgres_restart_under_a_running_replica() {
    let Some(cluster) = support::pg::Cluster::start("postgres restart under a replica") else {
        return;
    };
    let (a, _da) = replica(&cluster.url()).await;
    let (b, _db) = replica(&cluster.url()).await;
    a.admin("admin-token")
        .update_team_admin_settings(update("jira:*", None))
        .await
        .unwrap();
    let mut on_a = watch(&a).await;
    assert!(matches!(
        next_change(&mut on_a).await.event,
        Some(Event::Snapshot(_))
    ));
    let evaluate = pb::EvaluateRequest {
        approval: None,
        team_id: TEAM.into(),
        user_id: "alice".into(),
        call: Some(mcp("jira", "create")),
        explain: false,
        agent: None,
        client: String::new(),
        tool_use_id: String::new(),
    };

    cluster.ctl("stop");
    // writes fail fast; decisions keep coming from the last known policy
    let err = a
        .admin("admin-token")
        .update_team_admin_settings(update("down:*", None))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Unavailable, "{err:?}");
    let d = a
        .policy("alice-token")
        .evaluate(evaluate.clone())
        .await
        .unwrap()
        .into_inner()
        .decision
        .unwrap();
    assert_eq!(d.revision, 1);

    cluster.ctl("start");
    // the pool reconnects by itself; a write through B may land before A listens again
    let written = loop {
        match b
            .admin("admin-token")
            .update_team_admin_settings(update("back:*", None))
            .await
        {
            Ok(w) => break w.into_inner().settings.unwrap(),
            Err(e) if e.code() == Code::Unavailable => tokio::task::yield_now().await,
            Err(e) => panic!("{e:?}"),
        }
    };
    assert_eq!(written.revision, 2);
    let e = next_change(&mut on_a).await;
    assert_eq!((e.revision, allowlist(&e)), (2, vec!["back:*".to_owned()]));
    let d = a
        .policy("alice-token")
        .evaluate(evaluate)
        .await
        .unwrap()
        .into_inner()
        .decision
        .unwrap();
    assert_eq!(d.revision, 2);
    a.stop().await;
    b.stop().await;
}

/// DENY records made while PostgreSQL is down are kept and written once it is back;
/// the decisions themselves never wait for it.
#[tokio::test]
async fn postgres_outage_keeps_deny_records_until_it_is_back() {
    const DENIALS: usize = 20;
    let Some(cluster) = support::pg::Cluster::start("deny records across a postgres outage") else {
        return;
    };
    let (a, _da) = replica(&cluster.url()).await;
    a.set_controls(pb::AutoRunControls {
        kill_switch: true,
        ..Default::default()
    })
    .await;
    let mut policy = a.policy("alice-token");
    let deny = || pb::EvaluateRequest {
        approval: None,
        team_id: TEAM.into(),
        user_id: "alice".into(),
        call: Some(mcp("jira", "create")),
        explain: false,
        agent: None,
        client: String::new(),
        tool_use_id: String::new(),
    };
    // one decision before the outage puts the team and alice in the replica's cache
    let d = policy
        .evaluate(deny())
        .await
        .unwrap()
        .into_inner()
        .decision
        .unwrap();
    assert_eq!(d.reason, pb::Reason::KillSwitch as i32);

    cluster.ctl("stop");
    for _ in 0..DENIALS {
        let d = policy
            .evaluate(deny())
            .await
            .unwrap()
            .into_inner()
            .decision
            .unwrap();
        assert_eq!(d.reason, pb::Reason::KillSwitch as i32);
    }
    // the scenario: an outage that outlasts several failed writes of those records
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    cluster.ctl("start");

    // the writer retries with backoff (at most 5 s apart); a deadline turns a lost
    // record into a failure instead of a hang
    let mut admin = a.admin("admin-token");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let denied = match admin
            .list_audit_events(pb::ListAuditEventsRequest {
                team_id: TEAM.into(),
                limit: 1_000,
                kind: audit_kind("decision_denied"),
                ..Default::default()
            })
            .await
        {
            Ok(r) => r.into_inner().events.len(),
            // the pool may not have reconnected yet
            Err(e) if e.code() == Code::Unavailable => 0,
            Err(e) => panic!("{e:?}"),
        };
        if denied == DENIALS + 1 || std::time::Instant::now() > deadline {
            assert_eq!(denied, DENIALS + 1, "every denial has its record");
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    a.stop().await;
}
