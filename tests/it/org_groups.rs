//! Organisation-wide group policies: kept once (the reserved team `*org`), written
//! by operators only, combined with each team's controls and group policies by the
//! one combination in every team, audited, and followed by the members' watch
//! streams in every team.

use crate::groups::{denies, evaluate_in, git_team, server_with_members, within};
use crate::support::{OTHER_TEAM, TEAM, TestServer};
use crate::watch::watch;
use tonic::Code;
use toolgate::auth::ORG_TEAM;
use toolgate::proto::v1 as pb;
use toolgate::proto::v1::watch_policy_response::Event;

/// carol (team acme) and dora (team globex) are both contractors; alice is in no group.
async fn two_teams(dir: &std::path::Path) -> TestServer {
    server_with_members(
        dir,
        &[
            ("carol", TEAM, &["contractors"]),
            ("dora", OTHER_TEAM, &["contractors"]),
        ],
    )
    .await
}

/// Writes the organisation's document with `token`.
async fn write_org(
    server: &TestServer,
    token: &str,
    controls: pb::AutoRunControls,
) -> Result<u64, tonic::Status> {
    let r = server
        .admin(token)
        .update_team_admin_settings(pb::UpdateTeamAdminSettingsRequest {
            team_id: ORG_TEAM.into(),
            auto_run_controls: Some(controls),
            expected_revision: None,
        })
        .await?;
    Ok(r.into_inner().settings.expect("settings").revision)
}

/// The organisation's document holding one group policy.
fn org_policy(group: &str, policy: pb::GroupPolicy) -> pb::AutoRunControls {
    pb::AutoRunControls {
        groups: [(group.to_owned(), policy)].into(),
        ..Default::default()
    }
}

#[tokio::test]
async fn an_org_wide_group_policy_applies_in_every_team_and_only_operators_write_it() {
    let dir = tempfile::tempdir().unwrap();
    let server = two_teams(dir.path()).await;
    // acme's own contractors policy allows `git push` for them: the organisation's
    // deny still stands (a deny beats an allow, whoever wrote it)
    let acme_contractors = pb::GroupPolicy {
        allowed: Some(pb::EntryList {
            entries: vec!["git push".into()],
        }),
        ..Default::default()
    };
    server
        .set_controls(git_team(vec![("contractors", acme_contractors)]))
        .await;
    server.yolo("alice").await;
    server.yolo("carol").await;

    // a team admin may not write (nor read) the organisation's policies
    for token in ["admin-token", "alice-token", "service-token"] {
        let refused = write_org(
            &server,
            token,
            org_policy("contractors", denies("git push")),
        )
        .await
        .expect_err("only an operator writes the organisation's policies");
        assert_eq!(
            refused.code(),
            Code::PermissionDenied,
            "{token}: {refused:?}"
        );
        assert!(
            refused.message().contains("only an operator"),
            "{token}: {}",
            refused.message()
        );
    }
    let read = server
        .admin("admin-token")
        .get_team_admin_settings(pb::GetTeamAdminSettingsRequest {
            team_id: ORG_TEAM.into(),
        })
        .await
        .expect_err("a team admin reads only its team");
    assert_eq!(read.code(), Code::PermissionDenied);
    // nothing but group policies in it, each field named
    let refused = write_org(
        &server,
        "operator-token",
        pb::AutoRunControls {
            kill_switch: true,
            ..org_policy("contractors", denies("git push"))
        },
    )
    .await
    .expect_err("a team's setting in the organisation's document");
    assert_eq!(refused.code(), Code::InvalidArgument);
    assert!(
        refused.message().contains("auto_run_controls.kill_switch"),
        "{}",
        refused.message()
    );
    // a bad group policy is refused with where it is, as in a team
    let refused = write_org(
        &server,
        "operator-token",
        org_policy("contractors", denies("")),
    )
    .await
    .expect_err("an empty entry");
    assert!(
        refused.message().contains("groups.contractors.denied"),
        "{}",
        refused.message()
    );

    let revision = write_org(
        &server,
        "operator-token",
        org_policy("contractors", denies("git push")),
    )
    .await
    .expect("an operator writes it");
    assert_eq!(revision, 1);

    let d = evaluate_in(&server, TEAM, "carol", "git push origin main").await;
    assert_eq!(d.reason(), pb::Reason::CommandDenied, "{d:?}");
    assert_eq!(d.origin, "org group contractors");
    let checks: Vec<&str> = d.explanation.iter().map(|c| c.result.as_str()).collect();
    assert!(
        checks.contains(&"member of contractors; policies of contractors applied"),
        "{checks:?}"
    );
    let d = evaluate_in(&server, OTHER_TEAM, "dora", "git push").await;
    assert_eq!(
        d.reason(),
        pb::Reason::CommandDenied,
        "in every team: {d:?}"
    );
    assert_eq!(d.origin, "org group contractors");
    let d = evaluate_in(&server, TEAM, "alice", "git push").await;
    assert_eq!(d.outcome(), pb::Outcome::Allow, "not a contractor: {d:?}");

    // the change is audited under the organisation's document, for operators
    let events = server
        .admin("operator-token")
        .list_audit_events(pb::ListAuditEventsRequest {
            team_id: ORG_TEAM.into(),
            limit: 100,
            ..Default::default()
        })
        .await
        .expect("an operator reads the organisation's audit")
        .into_inner()
        .events;
    assert!(
        events
            .iter()
            .any(|e| e.revision == 1 && e.actor == "operator" && e.team_id == ORG_TEAM),
        "{events:?}"
    );
    let refused = server
        .admin("admin-token")
        .list_audit_events(pb::ListAuditEventsRequest {
            team_id: ORG_TEAM.into(),
            limit: 100,
            ..Default::default()
        })
        .await
        .expect_err("a team admin audits only its team");
    assert_eq!(refused.code(), Code::PermissionDenied);
    // nobody decides in the organisation's document, an operator neither
    let refused = server
        .policy("operator-token")
        .evaluate(pb::EvaluateRequest {
            team_id: ORG_TEAM.into(),
            user_id: "x".into(),
            call: Some(crate::groups::shell("ls")),
            ..Default::default()
        })
        .await
        .expect_err("no decision in the organisation's document");
    assert_eq!(refused.code(), Code::PermissionDenied);

    // removed: the teams' own policies alone again, in both teams
    write_org(&server, "operator-token", pb::AutoRunControls::default())
        .await
        .expect("emptied");
    let d = evaluate_in(&server, TEAM, "carol", "git push").await;
    assert_eq!(d.outcome(), pb::Outcome::Allow, "{d:?}");
    let d = evaluate_in(&server, OTHER_TEAM, "dora", "git push").await;
    assert_ne!(d.outcome(), pb::Outcome::Deny, "{d:?}");
    server.stop().await;
}

/// The denied list of a watch snapshot, or a panic naming what came instead.
fn snapshot_denied(e: pb::WatchPolicyResponse) -> Vec<String> {
    match e.event {
        Some(Event::Snapshot(s)) => {
            s.policy
                .unwrap()
                .admin
                .unwrap()
                .auto_run_controls
                .unwrap()
                .denied
        }
        other => panic!("not a snapshot: {other:?}"),
    }
}

/// A change to an organisation-wide group reaches its members' streams in every
/// team as a fresh snapshot; a subscriber in no such group is not resynced (its next
/// event is its team's next change); a member resuming after a revision starts from
/// a snapshot, since the organisation's changes carry no team revision.
#[tokio::test]
async fn a_change_to_an_org_wide_group_reaches_its_members_in_every_team() {
    let dir = tempfile::tempdir().unwrap();
    let server = two_teams(dir.path()).await;
    let revision = server.set_controls(git_team(Vec::new())).await;
    let mut carol = watch(&server, "carol-token", TEAM, "carol", None).await;
    let mut dora = watch(&server, "dora-token", OTHER_TEAM, "dora", None).await;
    let mut alice = watch(&server, "alice-token", TEAM, "alice", None).await;
    for stream in [&mut carol, &mut dora, &mut alice] {
        assert!(snapshot_denied(within(stream).await).is_empty());
    }

    write_org(
        &server,
        "operator-token",
        org_policy("contractors", denies("git push")),
    )
    .await
    .expect("written");
    assert_eq!(snapshot_denied(within(&mut carol).await), ["git push"]);
    assert_eq!(snapshot_denied(within(&mut dora).await), ["git push"]);
    // alice's next event is her team's next change, not a snapshot
    server
        .set_controls(git_team(vec![("others", denies("rm"))]))
        .await;
    match within(&mut alice).await.event {
        Some(Event::AdminSettings(a)) => assert_eq!(a.revision, revision + 1),
        other => panic!("alice is in no org-wide group: {other:?}"),
    }
    // carol's view is combined, so her team's change is a snapshot too
    assert_eq!(snapshot_denied(within(&mut carol).await), ["git push"]);

    let mut resumed = watch(&server, "carol-token", TEAM, "carol", Some(revision + 1)).await;
    let first = within(&mut resumed).await;
    assert!(
        matches!(&first.event, Some(Event::Snapshot(s)) if s.resync),
        "{first:?}"
    );
    assert_eq!(snapshot_denied(first), ["git push"]);
    server.stop().await;
}

/// `toolgate group … --org`: an operator writes, lists, shows and deletes the
/// organisation's group policies; a team admin is refused with the reason.
#[tokio::test]
async fn the_group_commands_write_the_organisation_s_policies_with_org() {
    use crate::cli::{toolgate_as, write};
    let dir = tempfile::tempdir().unwrap();
    let server = two_teams(&dir.path().join("data")).await;
    let file = write(dir.path(), "contractors.yaml", "denied: [git push]\n");
    let set = ["group", "set", "--org", "contractors", "--file", &file];
    let run = toolgate_as(&server, "admin-token", &set).await;
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(run.stderr.contains("only an operator"), "{}", run.stderr);
    let run = toolgate_as(&server, "operator-token", &set).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .starts_with("group policy contractors of the organisation written (revision 1)"),
        "{}",
        run.stdout
    );
    let run = toolgate_as(&server, "operator-token", &["group", "list", "--org"]).await;
    assert!(run.stdout.contains("  contractors\n"), "{}", run.stdout);
    let run = toolgate_as(
        &server,
        "operator-token",
        &["group", "show", "--org", "contractors"],
    )
    .await;
    assert!(run.stdout.contains("- git push"), "{}", run.stdout);
    let d = evaluate_in(&server, OTHER_TEAM, "dora", "git push").await;
    assert_eq!(d.origin, "org group contractors", "{d:?}");
    // one of --team and --org
    let run = toolgate_as(
        &server,
        "operator-token",
        &["group", "list", "--org", "--team", TEAM],
    )
    .await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    let run = toolgate_as(
        &server,
        "operator-token",
        &["group", "delete", "--org", "contractors"],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let d = evaluate_in(&server, OTHER_TEAM, "dora", "git push").await;
    assert_ne!(d.outcome(), pb::Outcome::Deny, "{d:?}");
    server.stop().await;
}

/// Two replicas on one PostgreSQL share the organisation's group policies: an
/// operator's write through replica A is what replica B decides with, in every team,
/// and B's watcher in the group is sent it; a write through B reaches A the same way.
#[tokio::test]
async fn an_org_wide_change_on_one_replica_is_decided_and_watched_on_another() {
    use crate::groups::members_config;
    use crate::support::{EVENTUALLY, eventually, pg};
    let Some(url) = pg::fresh_database("org-wide groups on two replicas").await else {
        return;
    };
    let members: &[(&str, &str, &[&str])] = &[
        ("carol", TEAM, &["contractors"]),
        ("dora", OTHER_TEAM, &["contractors"]),
    ];
    let replica = |dir: &std::path::Path| {
        let mut config = members_config(dir, members);
        config.store.url = Some(url.clone());
        TestServer::start(config)
    };
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = replica(dir_a.path()).await;
    let b = replica(dir_b.path()).await;
    a.set_controls(git_team(Vec::new())).await;
    a.yolo("carol").await;
    // B learns of A's writes from the database's notices
    eventually(EVENTUALLY, "B decides with A's team controls", || async {
        evaluate_in(&b, TEAM, "carol", "git push").await.outcome() == pb::Outcome::Allow
    })
    .await;
    let mut carol_on_b = watch(&b, "carol-token", TEAM, "carol", None).await;
    assert!(snapshot_denied(within(&mut carol_on_b).await).is_empty());

    write_org(
        &a,
        "operator-token",
        org_policy("contractors", denies("git push")),
    )
    .await
    .expect("an operator writes through A");
    // the snapshot says B's hub holds it: B decides with it at once
    assert_eq!(snapshot_denied(within(&mut carol_on_b).await), ["git push"]);
    let d = evaluate_in(&b, TEAM, "carol", "git push origin main").await;
    assert_eq!(d.reason(), pb::Reason::CommandDenied, "{d:?}");
    assert_eq!(d.origin, "org group contractors");
    let d = evaluate_in(&b, OTHER_TEAM, "dora", "git push").await;
    assert_eq!(d.outcome(), pb::Outcome::Deny, "in every team: {d:?}");
    // B reads the organisation's document at A's revision
    let read = b
        .admin("operator-token")
        .get_team_admin_settings(pb::GetTeamAdminSettingsRequest {
            team_id: ORG_TEAM.into(),
        })
        .await
        .expect("an operator reads it on B")
        .into_inner()
        .settings
        .expect("settings");
    assert_eq!(read.revision, 1);

    // and the other way: emptied through B, A follows
    write_org(&b, "operator-token", pb::AutoRunControls::default())
        .await
        .expect("emptied through B");
    assert!(snapshot_denied(within(&mut carol_on_b).await).is_empty());
    eventually(EVENTUALLY, "A follows B's write", || async {
        evaluate_in(&a, TEAM, "carol", "git push").await.outcome() == pb::Outcome::Allow
    })
    .await;
    a.stop().await;
    b.stop().await;
}
