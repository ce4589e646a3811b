//! User settings changed field by field (the update mask), and a team's default user
//! settings: what a user who never wrote settings gets, in decisions, reads, the
//! effective policy and watch snapshots.

use crate::support;

use support::*;
use tonic::Code;
use toolgate::proto::v1 as pb;
use toolgate::proto::v1::watch_policy_response::Event;

fn mask(paths: &[&str]) -> Option<prost_types::FieldMask> {
    Some(prost_types::FieldMask {
        paths: paths.iter().map(|p| (*p).to_owned()).collect(),
    })
}

/// The user's own document before each case: an allowlist, a command list, auto-run off.
fn before(user: &str) -> pb::UserSettings {
    pb::UserSettings {
        mcp_allowed_tools: vec!["github:*".into()],
        command_allowlist: vec!["git status".into()],
        yolo_enable_run_everything: true,
        ..user_settings(TEAM, user)
    }
}

/// What the settings look like after the update, as (auto-run, run-everything,
/// browser protection, allowlist, command allowlist).
type Shape = (bool, bool, bool, Vec<String>, Vec<String>);

fn shape(s: &pb::UserSettings) -> Shape {
    (
        s.use_yolo_mode,
        s.yolo_enable_run_everything,
        s.playwright_protection.unwrap_or(true),
        s.mcp_allowed_tools.clone(),
        s.command_allowlist.clone(),
    )
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

#[tokio::test]
async fn a_masked_update_changes_only_the_fields_it_names() {
    let (server, _dir) = start().await;
    // (case, paths, the patch sent, expected: Ok(shape) or Err(code, text in the message))
    let patch = pb::UserSettings {
        use_yolo_mode: true,
        playwright_protection: Some(false),
        ..pb::UserSettings::default()
    };
    type Want = Result<Shape, (Code, &'static str)>;
    let table: Vec<(&str, Vec<&str>, Want)> = vec![
        (
            "auto-run only: the lists stay",
            vec!["use_yolo_mode"],
            Ok((
                true,
                true,
                true,
                strings(&["github:*"]),
                strings(&["git status"]),
            )),
        ),
        (
            "two fields",
            vec!["use_yolo_mode", "playwright_protection"],
            Ok((
                true,
                true,
                false,
                strings(&["github:*"]),
                strings(&["git status"]),
            )),
        ),
        (
            "a list named is replaced, here emptied",
            vec!["mcp_allowed_tools"],
            Ok((false, true, true, vec![], strings(&["git status"]))),
        ),
        (
            "run-everything named and sent false",
            vec!["yolo_enable_run_everything"],
            Ok((
                false,
                false,
                true,
                strings(&["github:*"]),
                strings(&["git status"]),
            )),
        ),
        (
            "an unknown path is refused with its index",
            vec!["use_yolo_mode", "use_yolo"],
            Err((Code::InvalidArgument, "update_mask.paths[1]")),
        ),
        (
            "a field the server sets is refused",
            vec!["revision"],
            Err((Code::InvalidArgument, "update_mask.paths[0]")),
        ),
        (
            "a path relative to the request is refused",
            vec!["settings.use_yolo_mode"],
            Err((Code::InvalidArgument, "update_mask.paths[0]")),
        ),
    ];
    for (i, (case, paths, want)) in table.into_iter().enumerate() {
        let user = format!("u{i}");
        server
            .users("admin-token")
            .update_user_settings(pb::UpdateUserSettingsRequest {
                settings: Some(before(&user)),
                expected_revision: None,
                update_mask: None,
            })
            .await
            .unwrap();
        let got = server
            .users("admin-token")
            .update_user_settings(pb::UpdateUserSettingsRequest {
                settings: Some(pb::UserSettings {
                    team_id: TEAM.into(),
                    user_id: user.clone(),
                    ..patch.clone()
                }),
                expected_revision: None,
                update_mask: mask(&paths),
            })
            .await;
        match (got, want) {
            (Ok(s), Ok(shape_wanted)) => {
                assert_eq!(
                    shape(s.get_ref().settings.as_ref().unwrap()),
                    shape_wanted,
                    "{case}"
                );
                // what is stored is what was answered
                let read = server
                    .users("admin-token")
                    .get_user_settings(pb::GetUserSettingsRequest {
                        team_id: TEAM.into(),
                        user_id: user.clone(),
                    })
                    .await
                    .unwrap()
                    .into_inner()
                    .settings
                    .unwrap();
                assert_eq!(shape(&read), shape_wanted, "{case}: stored");
            }
            (Err(e), Err((code, text))) => {
                assert_eq!(e.code(), code, "{case}: {e:?}");
                assert!(e.message().contains(text), "{case}: {}", e.message());
                // nothing changed
                let read = server
                    .users("admin-token")
                    .get_user_settings(pb::GetUserSettingsRequest {
                        team_id: TEAM.into(),
                        user_id: user.clone(),
                    })
                    .await
                    .unwrap()
                    .into_inner()
                    .settings
                    .unwrap();
                assert_eq!(shape(&read), shape(&before(&user)), "{case}: unchanged");
            }
            (got, want) => panic!("{case}: got {got:?}, wanted {want:?}"),
        }
    }
    server.stop().await;
}

#[tokio::test]
async fn an_empty_mask_replaces_the_document_and_a_stale_revision_changes_nothing() {
    let (server, _dir) = start().await;
    let written = server
        .users("alice-token")
        .update_user_settings(pb::UpdateUserSettingsRequest {
            settings: Some(before("alice")),
            expected_revision: None,
            update_mask: None,
        })
        .await
        .unwrap()
        .into_inner()
        .settings
        .unwrap();
    let e = server
        .users("alice-token")
        .update_user_settings(pb::UpdateUserSettingsRequest {
            settings: Some(pb::UserSettings {
                use_yolo_mode: true,
                ..user_settings(TEAM, "alice")
            }),
            expected_revision: Some(written.revision - 1),
            update_mask: mask(&["use_yolo_mode"]),
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::Aborted, "{e:?}");
    // an empty mask: the whole document, as before masks existed
    let replaced = server
        .users("alice-token")
        .update_user_settings(pb::UpdateUserSettingsRequest {
            settings: Some(pb::UserSettings {
                use_yolo_mode: true,
                ..user_settings(TEAM, "alice")
            }),
            expected_revision: Some(written.revision),
            update_mask: mask(&[]),
        })
        .await
        .unwrap()
        .into_inner()
        .settings
        .unwrap();
    assert_eq!(shape(&replaced), (true, false, true, vec![], vec![]));
    // a member may not change another user's settings field by field either
    let e = server
        .users("alice-token")
        .update_user_settings(pb::UpdateUserSettingsRequest {
            settings: Some(user_settings(TEAM, "bob")),
            expected_revision: None,
            update_mask: mask(&["use_yolo_mode"]),
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied);
    server.stop().await;
}

fn defaults(auto_run: bool, run_everything: bool) -> pb::AutoRunControls {
    pb::AutoRunControls {
        default_user_settings: Some(pb::UserSettings {
            use_yolo_mode: auto_run,
            yolo_enable_run_everything: run_everything,
            ..pb::UserSettings::default()
        }),
        ..pb::AutoRunControls::default()
    }
}

async fn decide(server: &TestServer, user: &str) -> (pb::Outcome, pb::Reason) {
    let d = server
        .policy("service-token")
        .evaluate(pb::EvaluateRequest {
            approval: None,
            team_id: TEAM.into(),
            user_id: user.into(),
            call: Some(mcp("github", "get_issue")),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .decision
        .unwrap();
    (d.outcome(), d.reason())
}

#[tokio::test]
async fn a_user_without_settings_gets_the_teams_defaults() {
    use pb::{Outcome::*, Reason};
    let (server, _dir) = start().await;
    // toolgate's defaults: auto-run off
    assert_eq!(decide(&server, "carol").await, (Ask, Reason::AutoRunOff));
    server.set_controls(defaults(true, true)).await;
    // carol has written nothing: the team's defaults decide
    assert_eq!(
        decide(&server, "carol").await,
        (Allow, Reason::RunEverything)
    );
    let read = server
        .users("service-token")
        .get_user_settings(pb::GetUserSettingsRequest {
            team_id: TEAM.into(),
            user_id: "carol".into(),
        })
        .await
        .unwrap()
        .into_inner()
        .settings
        .unwrap();
    assert_eq!((read.revision, read.use_yolo_mode), (0, true));
    let effective = server
        .policy("service-token")
        .get_effective_policy(pb::GetEffectivePolicyRequest {
            team_id: TEAM.into(),
            user_id: "carol".into(),
        })
        .await
        .unwrap()
        .into_inner()
        .policy
        .unwrap();
    assert!(effective.user.unwrap().yolo_enable_run_everything);
    // dave writes his own settings: they decide for him, not the defaults
    server
        .users("admin-token")
        .update_user_settings(pb::UpdateUserSettingsRequest {
            settings: Some(user_settings(TEAM, "dave")),
            expected_revision: None,
            update_mask: None,
        })
        .await
        .unwrap();
    assert_eq!(decide(&server, "dave").await, (Ask, Reason::AutoRunOff));
    // a field-level change by a user without settings starts from the defaults
    let erin = server
        .users("admin-token")
        .update_user_settings(pb::UpdateUserSettingsRequest {
            settings: Some(user_settings(TEAM, "erin")),
            expected_revision: None,
            update_mask: mask(&["yolo_enable_run_everything"]),
        })
        .await
        .unwrap()
        .into_inner()
        .settings
        .unwrap();
    assert!(erin.use_yolo_mode && !erin.yolo_enable_run_everything && erin.revision > 0);
    assert_eq!(decide(&server, "erin").await, (Ask, Reason::NotAllowlisted));
    // the defaults' lists are checked as a user's are, named under their field
    let e = server
        .admin("admin-token")
        .update_team_admin_settings(pb::UpdateTeamAdminSettingsRequest {
            team_id: TEAM.into(),
            auto_run_controls: Some(pb::AutoRunControls {
                default_user_settings: Some(pb::UserSettings {
                    mcp_allowed_tools: vec!["no-colon".into()],
                    ..pb::UserSettings::default()
                }),
                ..pb::AutoRunControls::default()
            }),
            expected_revision: None,
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(
        format!("{e:?}").contains("default_user_settings.mcp_allowed_tools"),
        "{e:?}"
    );
    // cleared: back to toolgate's defaults
    server.set_controls(pb::AutoRunControls::default()).await;
    assert_eq!(decide(&server, "carol").await, (Ask, Reason::AutoRunOff));
    server.stop().await;
}

async fn next_event(
    events: &mut tonic::Streaming<pb::WatchPolicyResponse>,
) -> pb::WatchPolicyResponse {
    tokio::time::timeout(std::time::Duration::from_secs(10), async {
        loop {
            let e = events.message().await.unwrap().expect("stream ended");
            if !matches!(e.event, Some(Event::Heartbeat(_))) {
                return e;
            }
        }
    })
    .await
    .expect("an event within 10 s")
}

fn snapshot_auto_run(e: &pb::WatchPolicyResponse) -> bool {
    match &e.event {
        Some(Event::Snapshot(s)) => {
            s.policy
                .as_ref()
                .unwrap()
                .user
                .as_ref()
                .unwrap()
                .use_yolo_mode
        }
        other => panic!("expected a snapshot, got {other:?}"),
    }
}

/// A watcher following the team's defaults is sent a fresh snapshot when an admin
/// change sets, changes or clears them; one with settings of their own gets the
/// admin event as before.
#[tokio::test]
async fn a_watcher_on_the_defaults_gets_a_snapshot_when_they_change() {
    let (server, _dir) = start().await;
    let watch = |user: &str| {
        let mut client = server.policy("service-token");
        let user = user.to_owned();
        async move {
            client
                .watch_policy(pb::WatchPolicyRequest {
                    team_id: TEAM.into(),
                    user_id: user,
                    after_revision: None,
                })
                .await
                .unwrap()
                .into_inner()
        }
    };
    server
        .users("admin-token")
        .update_user_settings(pb::UpdateUserSettingsRequest {
            settings: Some(user_settings(TEAM, "own")),
            expected_revision: None,
            update_mask: None,
        })
        .await
        .unwrap();
    let mut carol = watch("carol").await;
    let mut own = watch("own").await;
    assert!(!snapshot_auto_run(&next_event(&mut carol).await));
    next_event(&mut own).await;

    let revision = server.set_controls(defaults(true, false)).await;
    let e = next_event(&mut carol).await;
    assert!(snapshot_auto_run(&e));
    assert_eq!(e.revision, revision);
    assert!(matches!(
        next_event(&mut own).await.event,
        Some(Event::AdminSettings(_))
    ));

    // cleared: carol is told she is back to toolgate's defaults
    server.set_controls(pb::AutoRunControls::default()).await;
    assert!(!snapshot_auto_run(&next_event(&mut carol).await));
    // no defaults before or after: an admin event, as always
    server
        .set_controls(pb::AutoRunControls {
            kill_switch: true,
            ..Default::default()
        })
        .await;
    assert!(matches!(
        next_event(&mut carol).await.event,
        Some(Event::AdminSettings(_))
    ));
    server.stop().await;
}

/// `AddToAllowlist` adds the entry and says when it changes no decision now, and
/// why, per the team's settings.
#[tokio::test]
async fn an_added_entry_that_cannot_matter_comes_with_a_note() {
    let (server, _dir) = start().await;
    let controls =
        |enabled: bool, union: bool, allow: &[&str], block: &[&str]| pb::AutoRunControls {
            enabled,
            list_mode: if union {
                pb::ListMode::Union
            } else {
                pb::ListMode::Replace
            } as i32,
            mcp_tool_allowlist: strings(allow),
            mcp_tool_blocklist: strings(block),
            ..Default::default()
        };
    let user = |auto_run: bool, everything: bool| pb::UserSettings {
        use_yolo_mode: auto_run,
        yolo_enable_run_everything: everything,
        ..Default::default()
    };
    // (case, team controls, user settings, entry, what the note must say; "" none)
    let table = [
        (
            "counts",
            controls(false, false, &[], &[]),
            user(true, false),
            "github:get_issue",
            "",
        ),
        (
            "a wildcard that counts",
            controls(false, false, &[], &[]),
            user(true, false),
            "github:*",
            "",
        ),
        (
            "auto-run off",
            controls(false, false, &[], &[]),
            user(false, false),
            "github:get_issue",
            "toolgate user set --auto-run on",
        ),
        (
            "the team's list replaces the user's",
            controls(true, false, &["jira:*"], &[]),
            user(true, false),
            "github:get_issue",
            "ask an admin to add github:get_issue to the team's allowlist",
        ),
        (
            "run-everything already allows it",
            controls(false, false, &[], &[]),
            user(true, true),
            "github:get_issue",
            "run-everything mode is on",
        ),
        (
            "the admin blocks it",
            controls(false, false, &[], &["github:*"]),
            user(true, false),
            "github:get_issue",
            "only an admin can lift it",
        ),
        (
            "union: the team's list already has it",
            controls(true, true, &["github:*"], &[]),
            user(true, false),
            "github:get_issue",
            "already allowed by github:*",
        ),
    ];
    for (i, (case, controls, settings, entry, want)) in table.into_iter().enumerate() {
        let team = format!("note-{i}");
        server
            .admin("operator-token")
            .update_team_admin_settings(pb::UpdateTeamAdminSettingsRequest {
                team_id: team.clone(),
                auto_run_controls: Some(controls),
                expected_revision: None,
            })
            .await
            .unwrap();
        server
            .users("operator-token")
            .update_user_settings(pb::UpdateUserSettingsRequest {
                settings: Some(pb::UserSettings {
                    team_id: team.clone(),
                    user_id: "u".into(),
                    ..settings
                }),
                expected_revision: None,
                update_mask: None,
            })
            .await
            .unwrap();
        let (server_id, tool) = entry.split_once(':').unwrap();
        let r = server
            .users("operator-token")
            .add_to_allowlist(pb::AddToAllowlistRequest {
                team_id: team,
                user_id: "u".into(),
                server: server_id.into(),
                tool: tool.into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert!(r.changed, "{case}: the entry is added all the same");
        if want.is_empty() {
            assert_eq!(r.note, "", "{case}");
        } else {
            assert!(r.note.contains(want), "{case}: {}", r.note);
            assert!(
                r.note.starts_with(&format!("{entry} changes nothing now")),
                "{case}: {}",
                r.note
            );
        }
    }
    server.stop().await;
}

/// A watcher that resumes after a revision and missed a change of the defaults it
/// follows is sent a snapshot, not the admin event alone.
#[tokio::test]
async fn a_resumed_watcher_on_the_defaults_gets_a_snapshot() {
    let (server, _dir) = start().await;
    let before = server
        .set_controls(pb::AutoRunControls {
            kill_switch: false,
            ..Default::default()
        })
        .await;
    let now = server.set_controls(defaults(true, false)).await;
    let mut events = server
        .policy("service-token")
        .watch_policy(pb::WatchPolicyRequest {
            team_id: TEAM.into(),
            user_id: "carol".into(),
            after_revision: Some(before),
        })
        .await
        .unwrap()
        .into_inner();
    let e = next_event(&mut events).await;
    assert!(snapshot_auto_run(&e));
    assert_eq!(e.revision, now);
    server.stop().await;
}
