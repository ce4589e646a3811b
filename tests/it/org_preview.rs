//! The impact preview of a change to an organisation-wide group policy: the logged
//! calls of every team with a member in a changed group are decided again and
//! reported per team; a team with no such member is not in the answer; operators
//! only; `admin diff --impact` of an `org: true` group document prints each team.

use crate::groups::{denies, evaluate_in, git_team, server_with_members};
use crate::support::{OTHER_TEAM, TEAM, TestServer, user_settings};
use tonic::Code;
use toolgate::auth::ORG_TEAM;
use toolgate::proto::v1 as pb;

/// A third team, whose only member is in no changed group.
const THIRD_TEAM: &str = "initech";

/// Every wait of these tests has this deadline.
const STEP: std::time::Duration = std::time::Duration::from_secs(60);

/// carol (acme) and dora (globex) are contractors, erin (initech) is in `everyone`;
/// alice (acme) is in no group. Each team allows `git`, each member runs in yolo
/// mode, and each has run `git push` once, its record listed.
async fn three_teams_with_calls(dir: &std::path::Path) -> TestServer {
    let server = server_with_members(
        dir,
        &[
            ("carol", TEAM, &["contractors"]),
            ("dora", OTHER_TEAM, &["contractors"]),
            ("erin", THIRD_TEAM, &["everyone"]),
        ],
    )
    .await;
    for team in [TEAM, OTHER_TEAM, THIRD_TEAM] {
        server
            .admin("operator-token")
            .update_team_admin_settings(pb::UpdateTeamAdminSettingsRequest {
                team_id: team.into(),
                auto_run_controls: Some(git_team(Vec::new())),
                expected_revision: None,
            })
            .await
            .expect("the team's controls");
    }
    let members = [
        (TEAM, "alice"),
        (TEAM, "carol"),
        (OTHER_TEAM, "dora"),
        (THIRD_TEAM, "erin"),
    ];
    for (team, user) in members {
        server
            .users(&format!("{user}-token"))
            .update_user_settings(pb::UpdateUserSettingsRequest {
                settings: Some(pb::UserSettings {
                    use_yolo_mode: true,
                    ..user_settings(team, user)
                }),
                expected_revision: None,
                update_mask: None,
            })
            .await
            .expect("user settings");
        let d = evaluate_in(&server, team, user, "git push origin main").await;
        assert_eq!(d.outcome(), pb::Outcome::Allow, "{user}: {d:?}");
    }
    // written off the decision path: wait until every team lists its records
    for (team, want) in [(TEAM, 2), (OTHER_TEAM, 1), (THIRD_TEAM, 1)] {
        server
            .team_decisions("operator-token", team, want, STEP)
            .await;
    }
    server
}

/// The organisation's document holding `contractors`' policy.
fn contractors(policy: pb::GroupPolicy) -> pb::AutoRunControls {
    pb::AutoRunControls {
        groups: [("contractors".to_owned(), policy)].into(),
        ..Default::default()
    }
}

async fn preview_org(
    server: &TestServer,
    token: &str,
    proposed: pb::AutoRunControls,
) -> Result<pb::PreviewTeamAdminSettingsResponse, tonic::Status> {
    Ok(server
        .decisions(token)
        .preview_team_admin_settings(pb::PreviewTeamAdminSettingsRequest {
            team_id: ORG_TEAM.into(),
            auto_run_controls: Some(proposed),
            window_seconds: 3600,
            examples_per_group: 2,
        })
        .await?
        .into_inner())
}

#[tokio::test]
async fn an_org_wide_group_change_previews_every_team_it_touches() {
    let dir = tempfile::tempdir().unwrap();
    let server = three_teams_with_calls(dir.path()).await;

    let impact = preview_org(&server, "operator-token", contractors(denies("git push")))
        .await
        .expect("an operator previews the organisation's document");
    let teams: Vec<&str> = impact.teams.iter().map(|t| t.team_id.as_str()).collect();
    assert_eq!(
        teams,
        [TEAM, OTHER_TEAM],
        "the teams with a contractor, never initech: {impact:?}"
    );
    for (team, member) in [(TEAM, "carol"), (OTHER_TEAM, "dora")] {
        let part = impact
            .teams
            .iter()
            .find(|t| t.team_id == team)
            .and_then(|t| t.impact.as_ref())
            .expect("the team's impact");
        // alice's call is not the contractors', so it is not counted
        assert_eq!(
            (part.decided, part.changed, part.unchanged),
            (1, 1, 0),
            "{team}: {part:?}"
        );
        assert_eq!(part.revision, 1, "{team}: the team's revision");
        let change = &part.transitions[0];
        assert_eq!(
            (change.from(), change.to(), change.count),
            (pb::Outcome::Allow, pb::Outcome::Deny, 1),
            "{team}: {change:?}"
        );
        let example = &change.examples[0];
        assert_eq!(example.record.as_ref().unwrap().user_id, member);
        assert_eq!(example.new_reason(), pb::Reason::CommandDenied);
        assert_eq!(example.new_matched_entry, "git push");
    }
    assert_eq!(
        (impact.decided, impact.changed, impact.unchanged),
        (2, 2, 0),
        "the sums: {impact:?}"
    );
    let total = &impact.transitions[0];
    assert_eq!((total.count, total.examples.len()), (2, 2), "{total:?}");
    assert_eq!(impact.groups[0].key, "git push");

    // nothing changes for the contractors: no team is touched
    let unchanged = preview_org(&server, "operator-token", pb::AutoRunControls::default())
        .await
        .expect("an empty proposal over an empty document");
    assert!(unchanged.teams.is_empty(), "{unchanged:?}");
    assert_eq!(unchanged.decided, 0);
    // a group the erin's team has, but whose policy only allows what was allowed
    let everyone = pb::AutoRunControls {
        groups: [("everyone".to_owned(), denies("rm"))].into(),
        ..Default::default()
    };
    let impact = preview_org(&server, "operator-token", everyone)
        .await
        .expect("preview");
    let teams: Vec<&str> = impact.teams.iter().map(|t| t.team_id.as_str()).collect();
    assert_eq!(teams, [THIRD_TEAM], "{impact:?}");
    assert_eq!((impact.decided, impact.changed), (1, 0), "{impact:?}");

    // operators only, as writing it; and the document holds groups only
    for token in ["admin-token", "other-admin-token", "alice-token"] {
        let refused = preview_org(&server, token, contractors(denies("git push")))
            .await
            .expect_err("only an operator previews the organisation's policies");
        assert_eq!(
            refused.code(),
            Code::PermissionDenied,
            "{token}: {refused:?}"
        );
    }
    let refused = preview_org(
        &server,
        "operator-token",
        pb::AutoRunControls {
            kill_switch: true,
            ..contractors(denies("git push"))
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
    server.stop().await;
}

#[tokio::test]
async fn admin_diff_impact_of_an_org_group_document_prints_each_team() {
    use crate::cli::{toolgate_as, write};
    let dir = tempfile::tempdir().unwrap();
    let server = three_teams_with_calls(&dir.path().join("data")).await;
    let file = write(
        dir.path(),
        "contractors.yaml",
        "kind: group\norg: true\ngroups:\n  contractors:\n    denied: [git push]\n",
    );
    let run = toolgate_as(
        &server,
        "operator-token",
        &["admin", "diff", "-f", &file, "--impact", "1h"],
    )
    .await;
    assert_eq!(run.code, 3, "a difference: {}{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("2 decided again: 2 change outcome"),
        "{}",
        run.stdout
    );
    for team in [TEAM, OTHER_TEAM] {
        assert!(
            run.stdout.contains(&format!("  team {team} (revision 1):")),
            "{team}: {}",
            run.stdout
        );
    }
    assert!(!run.stdout.contains(THIRD_TEAM), "{}", run.stdout);
    let run = toolgate_as(
        &server,
        "operator-token",
        &[
            "--output", "json", "admin", "diff", "-f", &file, "--impact", "1h",
        ],
    )
    .await;
    let json: serde_json::Value = serde_json::from_str(&run.stdout).expect(&run.stdout);
    let teams: Vec<&str> = json["impact"]["teams"]
        .as_array()
        .expect("teams")
        .iter()
        .map(|t| t["team"].as_str().unwrap())
        .collect();
    assert_eq!(teams, [TEAM, OTHER_TEAM], "{json}");
    assert_eq!(json["impact"]["teams"][0]["changed"], 1, "{json}");
    // a team admin gets the operator-only refusal, not a preview of one team
    let run = toolgate_as(
        &server,
        "admin-token",
        &["admin", "diff", "-f", &file, "--impact", "1h"],
    )
    .await;
    assert_ne!(run.code, 0, "{}", run.stdout);
    assert!(run.stderr.contains("only an operator"), "{}", run.stderr);
    server.stop().await;
}
