//! A team's tool categories as `@category` allowlist entries through the API: a
//! category change reaches a `WatchPolicy` subscriber and the next decision, an
//! unknown `@name` is refused at write time, and a category deleted while the
//! allowlist names it leaves an entry that matches nothing.

use crate::support;

use futures::StreamExt;
use std::time::Duration;
use support::*;
use toolgate::proto::v1 as pb;
use toolgate::proto::v1::watch_policy_response::Event;

fn controls(allowlist: &[&str], categories: serde_json::Value) -> pb::AutoRunControls {
    pb::AutoRunControls {
        mcp_tool_allowlist: allowlist.iter().map(|e| (*e).to_owned()).collect(),
        enabled: true,
        roles: roles(&serde_json::json!({ "toolCategories": categories }).to_string()),
        ..Default::default()
    }
}

async fn decide(server: &TestServer, tool: &str) -> (pb::Outcome, pb::Reason, String) {
    let d = server
        .policy("alice-token")
        .evaluate(pb::EvaluateRequest {
            approval: None,
            call: Some(mcp("builtin", tool)),
            ..Default::default()
        })
        .await
        .expect("evaluate")
        .into_inner()
        .decision
        .unwrap();
    (d.outcome(), d.reason(), d.matched_entry.clone())
}

/// The next admin settings event of the stream, by its revision.
async fn next_admin_revision(
    events: &mut (impl futures::Stream<Item = Result<pb::WatchPolicyResponse, tonic::Status>> + Unpin),
) -> u64 {
    loop {
        let e = tokio::time::timeout(Duration::from_secs(10), events.next())
            .await
            .expect("change in time")
            .expect("stream open")
            .expect("event");
        if let Some(Event::AdminSettings(s)) = e.event {
            return s.revision;
        }
    }
}

#[tokio::test]
async fn a_category_change_reaches_a_watcher_and_the_next_decision() {
    let (server, _dir) = start().await;
    server
        .set_controls(controls(
            &["@FILES"],
            serde_json::json!({"FILES": {"tools": ["FILE_READ"]}}),
        ))
        .await;
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
    let first = tokio::time::timeout(Duration::from_secs(10), events.next())
        .await
        .expect("snapshot in time")
        .unwrap()
        .unwrap();
    assert!(matches!(first.event, Some(Event::Snapshot(_))));
    let allowed = |entry: &str| {
        (
            pb::Outcome::Allow,
            pb::Reason::Allowlisted,
            entry.to_owned(),
        )
    };
    let asked = (
        pb::Outcome::Ask,
        pb::Reason::NotInAdminAllowlist,
        String::new(),
    );
    assert_eq!(decide(&server, "Read").await, allowed("@FILES"));
    assert_eq!(decide(&server, "Write").await, asked);

    // the category now holds writes, not reads
    let revision = server
        .set_controls(controls(
            &["@FILES"],
            serde_json::json!({"FILES": {"tools": ["FILE_WRITE"]}}),
        ))
        .await;
    assert_eq!(next_admin_revision(&mut events).await, revision);
    assert_eq!(decide(&server, "Read").await, asked);
    assert_eq!(decide(&server, "Write").await, allowed("@FILES"));

    // an @name the team does not define is refused, naming the entry and the fix
    let refused = server
        .admin("admin-token")
        .update_team_admin_settings(pb::UpdateTeamAdminSettingsRequest {
            team_id: TEAM.into(),
            auto_run_controls: Some(controls(
                &["@FILES", "@NOPE"],
                serde_json::json!({"FILES": {"tools": ["FILE_WRITE"]}}),
            )),
            expected_revision: None,
        })
        .await
        .expect_err("an unknown category is refused");
    assert_eq!(refused.code(), tonic::Code::InvalidArgument);
    for part in [
        "auto_run_controls.mcp_tool_allowlist[1]",
        "@NOPE",
        "the team's tool categories are @FILES",
        "define toolCategories.NOPE in the roles document or remove the entry",
    ] {
        assert!(refused.message().contains(part), "{part:?} in {refused:?}");
    }

    // the category deleted while the allowlist names it: the write stands, the entry
    // matches nothing, and nothing it used to allow is allowed
    let revision = server
        .set_controls(controls(
            &["@FILES"],
            serde_json::json!({"OTHER": {"tools": ["FILE_READ"]}}),
        ))
        .await;
    assert_eq!(next_admin_revision(&mut events).await, revision);
    assert_eq!(decide(&server, "Write").await, asked);
    assert_eq!(decide(&server, "Read").await, asked);
    // and it comes back with the category
    let revision = server
        .set_controls(controls(
            &["@FILES"],
            serde_json::json!({"FILES": {"tools": ["FILE_READ"]}}),
        ))
        .await;
    assert_eq!(next_admin_revision(&mut events).await, revision);
    assert_eq!(decide(&server, "Read").await, allowed("@FILES"));
    server.stop().await;
}
