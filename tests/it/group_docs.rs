//! `kind: group` documents in `admin diff` and `admin apply`: a team's and the
//! organisation's group policies as code, diffed, applied with the revision,
//! pruned with `--prune`, and hostile documents refused with the document, the
//! field and the fix (`tests/data/group_docs.json`), nothing applied.

use crate::cli::{toolgate, toolgate_as, write};
use crate::groups::{evaluate_in, git_team, server_with_members};
use crate::support::{OTHER_TEAM, TEAM};
use serde_json::Value;
use toolgate::proto::v1 as pb;

#[tokio::test]
async fn a_group_document_is_diffed_applied_and_pruned() {
    let dir = tempfile::tempdir().unwrap();
    let server = server_with_members(
        &dir.path().join("data"),
        &[
            ("carol", TEAM, &["contractors"]),
            ("dora", OTHER_TEAM, &["contractors", "pii"]),
        ],
    )
    .await;
    let pii = pb::GroupPolicy {
        delete_file_protection: true,
        ..Default::default()
    };
    let start = server.set_controls(git_team(vec![("pii", pii)])).await;
    let doc = write(
        dir.path(),
        "groups.yaml",
        "kind: group\nteam: acme\ngroups:\n  contractors:\n    denied: [git push]\n",
    );
    let run = toolgate(&server, &["admin", "diff", "-f", &doc]).await;
    assert_eq!(run.code, 3, "a change: {}{}", run.stdout, run.stderr);
    assert!(
        run.stdout
            .contains(r#"+ groups: {"contractors":{"allow_mode":"add","denied":["git push"]}}"#),
        "{}",
        run.stdout
    );
    assert!(
        run.stderr.contains("pii of team acme not in"),
        "{}",
        run.stderr
    );
    let run = toolgate(&server, &["admin", "apply", "-f", &doc, "--dry-run"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("dry run: nothing applied"),
        "{}",
        run.stdout
    );
    let run = toolgate(&server, &["admin", "apply", "-f", &doc]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .contains(&format!("applied: team acme is at revision {}", start + 1)),
        "{}",
        run.stdout
    );
    let d = evaluate_in(&server, TEAM, "carol", "git push").await;
    assert_eq!(
        (d.outcome(), d.origin.as_str()),
        (pb::Outcome::Deny, "group contractors")
    );
    // kept without --prune, deleted with it
    let run = toolgate(&server, &["group", "list", "--team", TEAM]).await;
    assert!(run.stdout.contains("  pii\n"), "{}", run.stdout);
    let run = toolgate(&server, &["admin", "diff", "-f", &doc]).await;
    assert_eq!(run.code, 0, "applied: {}", run.stdout);
    let run = toolgate(&server, &["admin", "apply", "-f", &doc, "--prune"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("- groups: \"pii\""), "{}", run.stdout);
    let run = toolgate(&server, &["group", "list", "--team", TEAM]).await;
    assert!(!run.stdout.contains("pii"), "{}", run.stdout);

    // a field changed is diffed by entry; a stale revision applies nothing
    let stale = write(
        dir.path(),
        "stale.yaml",
        &format!(
            "kind: group\nteam: acme\nrevision: {start}\ngroups:\n  contractors:\n    denied: [git push, rm]\n"
        ),
    );
    let run = toolgate(&server, &["admin", "apply", "-f", &stale]).await;
    assert_eq!(run.code, 4, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("+ groups.contractors.denied: \"rm\""),
        "{}",
        run.stdout
    );
    let d = evaluate_in(&server, TEAM, "carol", "rm x").await;
    assert_ne!(d.outcome(), pb::Outcome::Deny, "nothing applied: {d:?}");

    // the organisation's, by an operator: in force in the other team too
    let org = write(
        dir.path(),
        "org.yaml",
        "kind: group\norg: true\ngroups:\n  pii:\n    denied: [curl]\n",
    );
    let run = toolgate_as(&server, "operator-token", &["admin", "apply", "-f", &org]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("applied: team *org is at revision 1"),
        "{}",
        run.stdout
    );
    let d = evaluate_in(&server, OTHER_TEAM, "dora", "curl example.com").await;
    assert_eq!(
        (d.outcome(), d.origin.as_str()),
        (pb::Outcome::Deny, "org group pii")
    );
    server.stop().await;
}

#[tokio::test]
async fn hostile_group_documents_are_refused_naming_the_document_field_and_fix() {
    let dir = tempfile::tempdir().unwrap();
    let server = crate::groups::server_with_members(&dir.path().join("data"), &[]).await;
    let revision = server.set_controls(git_team(Vec::new())).await;
    let data: Value = serde_json::from_str(include_str!("../data/group_docs.json")).unwrap();
    let mut failures = Vec::new();
    let mut cases: Vec<(String, String, String)> = data["refused"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap().to_owned();
            (s("name"), s("doc"), s("error"))
        })
        .collect();
    // past the size every policy file is held to
    let mut big = "kind: group\nteam: acme\ngroups:\n  g:\n    denied:\n".to_owned();
    while big.len() <= 4 * 1024 * 1024 {
        big.push_str("      - git push --force-with-lease --no-verify\n");
    }
    cases.push(("oversized".into(), big, "is larger than".into()));
    for (i, (name, doc, want)) in cases.iter().enumerate() {
        let file = write(dir.path(), &format!("case{i}.yaml"), doc);
        for verb in ["diff", "apply"] {
            let run = toolgate(&server, &["admin", verb, "-f", &file]).await;
            if run.code == 0 || run.code == 3 || !run.stderr.contains(want.as_str()) {
                failures.push(format!(
                    "{name} ({verb}): exit {}, stderr {:?}, want {want:?}",
                    run.code, run.stderr
                ));
            }
            if !run.stderr.contains(&file) && !run.stderr.contains("permission") {
                failures.push(format!(
                    "{name} ({verb}): the document is not named: {:?}",
                    run.stderr
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let after = server
        .admin("admin-token")
        .get_team_admin_settings(pb::GetTeamAdminSettingsRequest {
            team_id: TEAM.into(),
        })
        .await
        .unwrap()
        .into_inner()
        .settings
        .unwrap()
        .revision;
    assert_eq!(after, revision, "nothing applied");
    server.stop().await;
}
