//! `ReportTampering`: a machine's report of a managed file changed by someone else is
//! audited, for the reporter's own user only, every field checked and each principal's
//! reports bounded. (`managed_sync::` drives it end to end through `toolgate sync`.)

use crate::support;

use support::*;
use tonic::Code;
use toolgate::proto::v1 as pb;

fn report(user: &str, path: &str, host: &str, sha: &str) -> pb::ReportTamperingRequest {
    pb::ReportTamperingRequest {
        team_id: TEAM.into(),
        user_id: user.into(),
        file: pb::ManagedFile::GeminiPolicy as i32,
        path: path.into(),
        host: host.into(),
        found_sha256: sha.into(),
        restored: true,
    }
}

/// The team's tampering records once there are `n` (the writer stores them after the
/// answer, which waits only for the journal).
async fn tampering_events_once(server: &TestServer, n: usize) -> Vec<pb::AuditEvent> {
    eventually(EVENTUALLY, "the tampering records written", || async {
        tampering_events(server).await.len() >= n
    })
    .await;
    tampering_events(server).await
}

async fn tampering_events(server: &TestServer) -> Vec<pb::AuditEvent> {
    server
        .admin("admin-token")
        .list_audit_events(pb::ListAuditEventsRequest {
            team_id: TEAM.into(),
            kind: audit_kind("tampering_detected"),
            limit: 1000,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .events
}

#[tokio::test]
async fn a_report_is_audited_for_the_reporters_own_user_only() {
    let (server, _dir) = start().await;
    let sha = "ab".repeat(32);
    let got = server
        .policy("alice-token")
        .report_tampering(report(
            "",
            "/etc/gemini-cli/policies/toolgate.toml",
            "box-1",
            &sha,
        ))
        .await
        .unwrap()
        .into_inner();
    assert!(got.recorded);
    let events = tampering_events_once(&server, 1).await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].actor, "alice");
    assert_eq!(
        detail(&events[0]),
        serde_json::json!({"user": "alice", "file": "gemini_policy",
            "path": "/etc/gemini-cli/policies/toolgate.toml", "host": "box-1",
            "found_sha256": sha, "restored": true, "reports_suppressed": 0})
    );

    // a member may not report for another user, nor for another team
    let err = server
        .policy("bob-token")
        .report_tampering(report("alice", "/etc/x", "box-1", ""))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied, "{err:?}");
    let mut elsewhere = report("alice", "/etc/x", "box-1", "");
    elsewhere.team_id = OTHER_TEAM.into();
    let err = server
        .policy("alice-token")
        .report_tampering(elsewhere)
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied, "{err:?}");
    assert_eq!(tampering_events(&server).await.len(), 1);
    server.stop().await;
}

#[tokio::test]
async fn hostile_reports_are_refused_naming_the_field() {
    let (server, _dir) = start().await;
    let long = format!("/{}", "a".repeat(5000));
    let cases: Vec<(pb::ReportTamperingRequest, &str)> = vec![
        (report("alice", "relative/path", "h", ""), "path"),
        (report("alice", &long, "h", ""), "path"),
        (report("alice", "/etc/x\n{\"forged\": 1}", "h", ""), "path"),
        (report("alice", "/etc/x", "two words", ""), "host"),
        (
            report("alice", "/etc/x", "h", "not-a-digest"),
            "found_sha256",
        ),
        (
            pb::ReportTamperingRequest {
                file: 0,
                ..report("alice", "/etc/x", "h", "")
            },
            "file",
        ),
        (
            pb::ReportTamperingRequest {
                file: 99,
                ..report("alice", "/etc/x", "h", "")
            },
            "file",
        ),
    ];
    for (request, field) in cases {
        let err = server
            .policy("alice-token")
            .report_tampering(request.clone())
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument, "{request:?}");
        assert!(
            err.message().starts_with(&format!("{field}:")),
            "{field}: {}",
            err.message()
        );
    }
    assert!(tampering_events(&server).await.is_empty());
    server.stop().await;
}

/// A member sending reports in a loop gets only its allowance into the audit trail;
/// the rest are answered `recorded: false` (counted into its next recorded report).
#[tokio::test]
async fn a_flood_of_reports_is_bounded() {
    let (server, _dir) = start().await;
    let mut policy = server.policy("alice-token");
    let mut recorded = Vec::new();
    for i in 0..100 {
        let r = policy
            .report_tampering(report("alice", &format!("/etc/x{i}"), "h", ""))
            .await
            .unwrap()
            .into_inner();
        recorded.push(r.recorded);
    }
    let allowance = toolgate::service::TAMPER_REPORTS_PER_MINUTE as usize;
    assert!(
        recorded[..allowance].iter().all(|r| *r),
        "the first {allowance} are recorded: {recorded:?}"
    );
    let n = recorded.iter().filter(|r| **r).count();
    // refilled at a few a minute: a loop of 100 calls cannot earn many more
    assert!(n < 100, "{recorded:?}");
    assert_eq!(tampering_events_once(&server, n).await.len(), n);
    // another member has its own allowance
    let r = server
        .policy("bob-token")
        .report_tampering(report("bob", "/etc/x", "h", ""))
        .await
        .unwrap()
        .into_inner();
    assert!(r.recorded);
    server.stop().await;
}
