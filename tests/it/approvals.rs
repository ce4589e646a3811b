//! Central approvals: an ASK that goes to the team's approvers becomes a request, the
//! waiting side gets the answer (approved, denied with the reason, expired), grants
//! for the session or a time let the same call by, refusals say why, every step is
//! audited, the webhook is posted without delaying anything, and (with PostgreSQL) a
//! request made on one replica is answered on another. The real Claude Code CLI in
//! `-p` mode and the Python `mcp` client through `toolgate proxy` wait on it too.

use crate::support;

use serde_json::{Value, json};
use std::process::Stdio;
use std::time::Duration;
use support::*;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;
use toolgate::proto::v1 as pb;

type Approvals =
    pb::approval_service_client::ApprovalServiceClient<InterceptedService<Channel, Auth>>;

/// Every wait of these tests has this deadline.
const STEP: Duration = Duration::from_secs(60);

fn approvals(server: &TestServer, token: &str) -> Approvals {
    pb::approval_service_client::ApprovalServiceClient::with_interceptor(
        server.channel.clone(),
        Auth::new(token),
    )
}

fn settings(mode: pb::ApprovalMode, deadline_seconds: u32) -> pb::ApprovalSettings {
    pb::ApprovalSettings {
        mode: mode as i32,
        deadline_seconds,
        ..Default::default()
    }
}

/// Team acme: admin controls on, `git status` allowed, every other command asks;
/// the approval settings as given; alice in auto-run mode.
async fn team(server: &TestServer, approvals: pb::ApprovalSettings) {
    server
        .set_controls(pb::AutoRunControls {
            enabled: true,
            allowed: vec!["git status".into()],
            mcp_tool_allowlist: vec!["demo:echo".into()],
            approvals: Some(approvals),
            ..Default::default()
        })
        .await;
    server.yolo("alice").await;
    server.yolo("bob").await;
}

fn shell(line: &str) -> pb::ToolCall {
    pb::ToolCall {
        kind: Some(pb::tool_call::Kind::Shell(line.into())),
        arguments: None,
    }
}

fn waiting(session: &str, interactive: Option<bool>) -> pb::ApprovalCapability {
    pb::ApprovalCapability {
        can_wait: true,
        interactive,
        client: "test".into(),
        session_id: session.into(),
    }
}

async fn evaluate(
    server: &TestServer,
    token: &str,
    call: pb::ToolCall,
    approval: Option<pb::ApprovalCapability>,
) -> pb::Decision {
    server
        .policy(token)
        .evaluate(pb::EvaluateRequest {
            team_id: TEAM.into(),
            user_id: String::new(),
            call: Some(call),
            explain: false,
            agent: None,
            approval,
            client: String::new(),
            tool_use_id: String::new(),
        })
        .await
        .expect("evaluate")
        .into_inner()
        .decision
        .expect("a decision")
}

/// Opens `AwaitApproval` and returns the first message (the request as it stands)
/// and the stream.
async fn await_open(
    server: &TestServer,
    token: &str,
    id: &str,
) -> (pb::Approval, tonic::Streaming<pb::AwaitApprovalResponse>) {
    let mut stream = approvals(server, token)
        .await_approval(pb::AwaitApprovalRequest {
            request_id: id.into(),
        })
        .await
        .expect("await")
        .into_inner();
    let first = next_approval(&mut stream).await;
    (first, stream)
}

async fn next_approval(stream: &mut tonic::Streaming<pb::AwaitApprovalResponse>) -> pb::Approval {
    loop {
        let m = tokio::time::timeout(STEP, stream.message())
            .await
            .expect("an event within the deadline")
            .expect("stream")
            .expect("not ended");
        if let Some(pb::await_approval_response::Event::Approval(a)) = m.event {
            return a;
        }
    }
}

fn answer(a: &pb::Approval) -> (pb::Outcome, pb::Reason, String) {
    let d = a.answer.clone().expect("answered");
    (d.outcome(), d.reason(), d.message)
}

fn ticket(d: &pb::Decision) -> String {
    d.approval.clone().expect("sent to approvers").request_id
}

async fn approve(
    server: &TestServer,
    token: &str,
    id: &str,
    scope: pb::ApprovalScope,
    seconds: u64,
) -> Result<pb::Approval, tonic::Status> {
    approvals(server, token)
        .approve_request(pb::ApproveRequestRequest {
            request_id: id.into(),
            scope: scope as i32,
            duration_seconds: seconds,
            note: String::new(),
            expected_revision: None,
        })
        .await
        .map(|r| r.into_inner().approval.unwrap())
}

async fn deny(
    server: &TestServer,
    token: &str,
    id: &str,
    reason: &str,
) -> Result<pb::Approval, tonic::Status> {
    approvals(server, token)
        .deny_request(pb::DenyRequestRequest {
            request_id: id.into(),
            reason: reason.into(),
        })
        .await
        .map(|r| r.into_inner().approval.unwrap())
}

#[tokio::test]
async fn an_ask_goes_to_the_approvers_and_the_waiting_side_gets_each_answer() {
    let (server, _dir) = start().await;
    team(&server, settings(pb::ApprovalMode::Always, 60)).await;

    // approvers see the request live
    let mut watch = approvals(&server, "admin-token")
        .watch_approvals(pb::WatchApprovalsRequest::default())
        .await
        .unwrap()
        .into_inner();
    let first = tokio::time::timeout(STEP, watch.message())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(
        matches!(first.event, Some(pb::watch_approvals_response::Event::Snapshot(ref s)) if s.pending.is_empty())
    );

    let d = evaluate(
        &server,
        "alice-token",
        shell("make deploy"),
        Some(waiting("s1", None)),
    )
    .await;
    assert_eq!(d.outcome(), pb::Outcome::Ask);
    let id = ticket(&d);
    let (pending, mut stream) = await_open(&server, "alice-token", &id).await;
    assert_eq!(pending.state(), pb::ApprovalState::Pending);
    assert_eq!(pending.summary, "shell: make deploy");
    assert_eq!(pending.user_id, "alice");
    assert!(
        pending
            .decision
            .unwrap()
            .message
            .contains("not every command is allowlisted")
    );
    let seen = loop {
        let m = tokio::time::timeout(STEP, watch.message())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        if let Some(pb::watch_approvals_response::Event::Approval(a)) = m.event {
            break a;
        }
    };
    assert_eq!(seen.request_id, id);

    // approved once: the waiting side is told who approved
    let approved = approve(&server, "admin-token", &id, pb::ApprovalScope::Once, 0)
        .await
        .unwrap();
    assert_eq!(approved.state(), pb::ApprovalState::Approved);
    let done = next_approval(&mut stream).await;
    let (outcome, reason, message) = answer(&done);
    assert_eq!(
        (outcome, reason),
        (pb::Outcome::Allow, pb::Reason::Approved)
    );
    assert!(message.contains("approved by admin"), "{message}");
    // once means once: the same call asks again
    let again = evaluate(
        &server,
        "alice-token",
        shell("make deploy"),
        Some(waiting("s1", None)),
    )
    .await;
    assert_eq!(again.outcome(), pb::Outcome::Ask);

    // denied with a reason: the waiting side gets the reason
    let id = ticket(&again);
    let (_, mut stream) = await_open(&server, "alice-token", &id).await;
    deny(&server, "admin-token", &id, "not on a Friday")
        .await
        .unwrap();
    let (outcome, reason, message) = answer(&next_approval(&mut stream).await);
    assert_eq!(
        (outcome, reason),
        (pb::Outcome::Deny, pb::Reason::ApprovalDenied)
    );
    assert!(
        message.contains("not on a Friday") && message.contains("admin"),
        "{message}"
    );

    // a caller that cannot wait gets the ASK as before, with no request made
    let plain = evaluate(&server, "alice-token", shell("make deploy"), None).await;
    assert_eq!(plain.outcome(), pb::Outcome::Ask);
    assert!(plain.approval.is_none());
    // an ALLOW or a DENY never makes a request
    let allowed = evaluate(
        &server,
        "alice-token",
        shell("git status"),
        Some(waiting("s1", None)),
    )
    .await;
    assert_eq!(allowed.outcome(), pb::Outcome::Allow);
    assert!(allowed.approval.is_none());

    // every step is in the audit trail
    let events = server
        .admin("admin-token")
        .list_audit_events(pb::ListAuditEventsRequest {
            team_id: TEAM.into(),
            limit: 1000,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .events;
    use pb::AuditEventKind as K;
    let kinds: Vec<K> = events
        .iter()
        .map(|e| e.kind())
        .filter(|k| k.as_str_name().starts_with("AUDIT_EVENT_KIND_APPROVAL_"))
        .collect();
    assert_eq!(
        kinds,
        [
            K::ApprovalRequested,
            K::ApprovalApproved,
            K::ApprovalRequested,
            K::ApprovalDenied
        ]
    );

    // and each answer is a decision in the log: the approver decided the call
    let answers = tokio::time::timeout(STEP, async {
        loop {
            let listed = server
                .decisions("admin-token")
                .list_decisions(pb::ListDecisionsRequest {
                    filter: Some(pb::DecisionFilter {
                        team_id: TEAM.into(),
                        ..Default::default()
                    }),
                    page_size: 1000,
                    page_token: String::new(),
                })
                .await
                .unwrap()
                .into_inner()
                .decisions;
            let answers: Vec<(pb::Outcome, pb::Reason, String, String)> = listed
                .iter()
                .filter(|r| r.source() == pb::DecisionSource::Approval)
                .map(|r| {
                    (
                        r.outcome(),
                        r.reason(),
                        r.principal.clone(),
                        r.user_id.clone(),
                    )
                })
                .collect();
            if answers.len() >= 2 {
                break answers;
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("both answers logged");
    // newest first
    assert_eq!(
        answers,
        [
            (
                pb::Outcome::Deny,
                pb::Reason::ApprovalDenied,
                "admin".to_owned(),
                "alice".to_owned()
            ),
            (
                pb::Outcome::Allow,
                pb::Reason::Approved,
                "admin".to_owned(),
                "alice".to_owned()
            ),
        ]
    );
    server.stop().await;
}

#[tokio::test]
async fn headless_mode_sends_only_what_nobody_at_the_client_can_answer() {
    let (server, _dir) = start().await;
    team(&server, settings(pb::ApprovalMode::Headless, 60)).await;
    for (interactive, central) in [(Some(false), true), (Some(true), false), (None, false)] {
        let d = evaluate(
            &server,
            "alice-token",
            shell("make"),
            Some(waiting("s", interactive)),
        )
        .await;
        assert_eq!(d.outcome(), pb::Outcome::Ask);
        assert_eq!(d.approval.is_some(), central, "{interactive:?}");
    }
    // off: nothing goes central
    team(&server, settings(pb::ApprovalMode::Off, 60)).await;
    let d = evaluate(
        &server,
        "alice-token",
        shell("make"),
        Some(waiting("s", Some(false))),
    )
    .await;
    assert!(d.approval.is_none());
    server.stop().await;
}

#[tokio::test]
async fn grants_for_the_session_or_a_time_let_the_same_call_by() {
    let (server, _dir) = start().await;
    team(&server, settings(pb::ApprovalMode::Always, 60)).await;
    let d = evaluate(
        &server,
        "alice-token",
        shell("make test"),
        Some(waiting("s1", None)),
    )
    .await;
    approve(
        &server,
        "admin-token",
        &ticket(&d),
        pb::ApprovalScope::Session,
        0,
    )
    .await
    .unwrap();
    // the same call in the same session: allowed without asking anyone
    let same = evaluate(
        &server,
        "alice-token",
        shell("make test"),
        Some(waiting("s1", None)),
    )
    .await;
    assert_eq!(
        (same.outcome(), same.reason()),
        (pb::Outcome::Allow, pb::Reason::Approved)
    );
    assert!(same.approval.is_none());
    assert!(
        same.message.contains("approved by admin"),
        "{}",
        same.message
    );
    // another session, another call, another user: asked again
    for (token, line, session) in [
        ("alice-token", "make test", "s2"),
        ("alice-token", "make lint", "s1"),
        ("bob-token", "make test", "s1"),
    ] {
        let d = evaluate(&server, token, shell(line), Some(waiting(session, None))).await;
        assert_eq!(d.outcome(), pb::Outcome::Ask, "{token} {line} {session}");
    }

    // for a time: any session of the user, until it ends
    let d = evaluate(
        &server,
        "alice-token",
        shell("make bench"),
        Some(waiting("s1", None)),
    )
    .await;
    let a = approve(
        &server,
        "admin-token",
        &ticket(&d),
        pb::ApprovalScope::Duration,
        3600,
    )
    .await
    .unwrap();
    assert!(a.grant_expires_at.is_some());
    let other = evaluate(
        &server,
        "alice-token",
        shell("make bench"),
        Some(waiting("s9", None)),
    )
    .await;
    assert_eq!(other.outcome(), pb::Outcome::Allow);
    // past the team's longest grant: refused, naming the field
    let d = evaluate(
        &server,
        "alice-token",
        shell("make long"),
        Some(waiting("s1", None)),
    )
    .await;
    let e = approve(
        &server,
        "admin-token",
        &ticket(&d),
        pb::ApprovalScope::Duration,
        90 * 86_400,
    )
    .await
    .unwrap_err();
    assert_eq!(e.code(), tonic::Code::InvalidArgument);
    assert!(e.message().contains("duration_seconds"), "{}", e.message());
    // a session grant needs a session
    let d = evaluate(
        &server,
        "alice-token",
        shell("make nosession"),
        Some(waiting("", None)),
    )
    .await;
    let e = approve(
        &server,
        "admin-token",
        &ticket(&d),
        pb::ApprovalScope::Session,
        0,
    )
    .await
    .unwrap_err();
    assert_eq!(e.code(), tonic::Code::FailedPrecondition);
    server.stop().await;
}

#[tokio::test]
async fn adding_the_entry_to_the_allowlist_goes_through_the_settings_write() {
    let (server, _dir) = start().await;
    team(&server, settings(pb::ApprovalMode::Always, 60)).await;
    let before = server
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
    // an MCP tool the admin's list does not name
    let d = evaluate(
        &server,
        "alice-token",
        mcp("demo", "ask_me"),
        Some(waiting("s1", None)),
    )
    .await;
    assert_eq!(d.reason(), pb::Reason::NotInAdminAllowlist);
    let a = approve(
        &server,
        "admin-token",
        &ticket(&d),
        pb::ApprovalScope::Allowlist,
        0,
    )
    .await
    .unwrap();
    assert_eq!(a.allowlist_entry, "demo:ask_me");
    assert!(a.allowlist_revision > before);
    let after = server
        .admin("admin-token")
        .get_team_admin_settings(pb::GetTeamAdminSettingsRequest {
            team_id: TEAM.into(),
        })
        .await
        .unwrap()
        .into_inner()
        .settings
        .unwrap();
    assert_eq!(after.revision, a.allowlist_revision);
    assert!(
        after
            .auto_run_controls
            .unwrap()
            .mcp_tool_allowlist
            .contains(&"demo:ask_me".to_owned())
    );
    let now = evaluate(
        &server,
        "alice-token",
        mcp("demo", "ask_me"),
        Some(waiting("s1", None)),
    )
    .await;
    assert_eq!(
        (now.outcome(), now.reason()),
        (pb::Outcome::Allow, pb::Reason::Allowlisted)
    );
    // a command: its unlisted part goes to the team's allowed commands
    let d = evaluate(
        &server,
        "alice-token",
        shell("cargo fmt"),
        Some(waiting("s1", None)),
    )
    .await;
    let a = approve(
        &server,
        "admin-token",
        &ticket(&d),
        pb::ApprovalScope::Allowlist,
        0,
    )
    .await
    .unwrap();
    assert_eq!(a.allowlist_entry, "cargo fmt");
    let now = evaluate(
        &server,
        "alice-token",
        shell("cargo fmt"),
        Some(waiting("s1", None)),
    )
    .await;
    assert_eq!(now.outcome(), pb::Outcome::Allow);
    server.stop().await;
}

#[tokio::test]
async fn refusals_say_why() {
    let (server, _dir) = start().await;
    team(&server, settings(pb::ApprovalMode::Always, 60)).await;
    let d = evaluate(
        &server,
        "alice-token",
        shell("make x"),
        Some(waiting("s1", None)),
    )
    .await;
    let id = ticket(&d);
    // a member who is not an approver
    let e = approve(&server, "bob-token", &id, pb::ApprovalScope::Once, 0)
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::PermissionDenied);
    assert!(e.message().contains("not an approver"), "{}", e.message());
    // nor may a service, nor another team's admin
    for token in ["service-token", "other-admin-token"] {
        let e = approve(&server, token, &id, pb::ApprovalScope::Once, 0)
            .await
            .unwrap_err();
        assert_eq!(e.code(), tonic::Code::PermissionDenied, "{token}");
    }
    // named approvers may, but not their own requests
    team(
        &server,
        pb::ApprovalSettings {
            approver_users: vec!["bob".into(), "alice".into()],
            ..settings(pb::ApprovalMode::Always, 60)
        },
    )
    .await;
    let e = approve(&server, "alice-token", &id, pb::ApprovalScope::Once, 0)
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::PermissionDenied);
    assert!(
        e.message().contains("you made this request"),
        "{}",
        e.message()
    );
    // a denial needs a reason
    let e = deny(&server, "bob-token", &id, "  ").await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::InvalidArgument);
    assert!(e.message().starts_with("reason:"), "{}", e.message());
    approve(&server, "bob-token", &id, pb::ApprovalScope::Once, 0)
        .await
        .unwrap();
    // answered already
    let e = deny(&server, "admin-token", &id, "too late")
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::FailedPrecondition);
    assert!(
        e.message().contains("already approved by bob"),
        "{}",
        e.message()
    );
    // no such request
    let e = approve(
        &server,
        "admin-token",
        "apr_nope",
        pb::ApprovalScope::Once,
        0,
    )
    .await
    .unwrap_err();
    assert_eq!(e.code(), tonic::Code::NotFound);
    // another team's member cannot even wait on it
    let e = approvals(&server, "other-admin-token")
        .await_approval(pb::AwaitApprovalRequest {
            request_id: id.clone(),
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::PermissionDenied);
    // with self-approval allowed, a requester may answer their own
    team(
        &server,
        pb::ApprovalSettings {
            approver_users: vec!["alice".into()],
            allow_self_approval: true,
            ..settings(pb::ApprovalMode::Always, 60)
        },
    )
    .await;
    let d = evaluate(
        &server,
        "alice-token",
        shell("make y"),
        Some(waiting("s1", None)),
    )
    .await;
    approve(
        &server,
        "alice-token",
        &ticket(&d),
        pb::ApprovalScope::Once,
        0,
    )
    .await
    .unwrap();
    server.stop().await;
}

#[tokio::test]
async fn a_request_nobody_answers_expires_and_the_call_is_refused() {
    let (server, _dir) = start().await;
    team(&server, settings(pb::ApprovalMode::Always, 1)).await;
    let d = evaluate(
        &server,
        "alice-token",
        shell("make slow"),
        Some(waiting("s1", None)),
    )
    .await;
    let id = ticket(&d);
    let (_, mut stream) = await_open(&server, "alice-token", &id).await;
    // the stream ends the wait at the deadline (an event, not a sleep of ours)
    let done = next_approval(&mut stream).await;
    assert_eq!(done.state(), pb::ApprovalState::Expired);
    let (outcome, reason, message) = answer(&done);
    assert_eq!(
        (outcome, reason),
        (pb::Outcome::Deny, pb::Reason::ApprovalExpired)
    );
    assert!(
        message.contains("nobody approved it within 1 seconds"),
        "{message}"
    );
    let e = approve(&server, "admin-token", &id, pb::ApprovalScope::Once, 0)
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::FailedPrecondition);
    assert!(e.message().contains("expired"), "{}", e.message());
    server.stop().await;
}

#[tokio::test]
async fn invalid_settings_are_refused_naming_the_field() {
    let (server, _dir) = start().await;
    let e = server
        .admin("admin-token")
        .update_team_admin_settings(pb::UpdateTeamAdminSettingsRequest {
            team_id: TEAM.into(),
            auto_run_controls: Some(pb::AutoRunControls {
                approvals: Some(pb::ApprovalSettings {
                    deadline_seconds: 99_999,
                    webhook_url: "http://example.com/hook".into(),
                    ..settings(pb::ApprovalMode::Always, 0)
                }),
                ..Default::default()
            }),
            expected_revision: None,
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::InvalidArgument);
    assert!(
        e.message().contains("approvals.deadline_seconds"),
        "{}",
        e.message()
    );
    assert!(
        e.message().contains("approvals.webhook_url"),
        "{}",
        e.message()
    );
    server.stop().await;
}

/// A tiny HTTP receiver: each request's body, sent on the channel; answers 200.
async fn receiver() -> (String, tokio::sync::mpsc::Receiver<Value>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let (tx, rx) = tokio::sync::mpsc::channel(16);
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let tx = tx.clone();
            tokio::spawn(async move {
                let (read, mut write) = socket.split();
                let mut reader = BufReader::new(read);
                let mut length = 0usize;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).await.unwrap_or(0) == 0 {
                        return;
                    }
                    let l = line.to_ascii_lowercase();
                    if let Some(v) = l.strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap_or(0);
                    }
                    if line == "\r\n" {
                        break;
                    }
                }
                let mut body = vec![0; length];
                tokio::io::AsyncReadExt::read_exact(&mut reader, &mut body)
                    .await
                    .unwrap();
                let _ = write
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
                    .await;
                let _ = tx
                    .send(serde_json::from_slice(&body).unwrap_or(Value::Null))
                    .await;
            });
        }
    });
    (url, rx)
}

#[tokio::test]
async fn the_webhook_gets_each_request_and_a_receiver_down_delays_nothing() {
    // the receiver is a local relay on loopback, which the configuration must allow
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path());
    config.approvals.webhook_allow_loopback = true;
    let server = TestServer::start(config).await;
    let (url, mut posted) = receiver().await;
    team(
        &server,
        pb::ApprovalSettings {
            webhook_url: url,
            ..settings(pb::ApprovalMode::Always, 60)
        },
    )
    .await;
    let d = evaluate(
        &server,
        "alice-token",
        shell("make deploy"),
        Some(waiting("s1", None)),
    )
    .await;
    let id = ticket(&d);
    let body = tokio::time::timeout(STEP, posted.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(body["request"]["request_id"], json!(id));
    assert_eq!(body["request"]["user_id"], "alice");
    let text = body["text"].as_str().unwrap();
    assert!(text.contains("make deploy") && text.contains(&id), "{text}");
    assert!(body["links"]["approve"].as_str().unwrap().contains(&id));

    // a receiver that is down (a port nobody listens on): the decision comes back
    // with its request all the same; the post is retried in the background
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let down = format!("http://{}/hook", closed.local_addr().unwrap());
    drop(closed);
    team(
        &server,
        pb::ApprovalSettings {
            webhook_url: down,
            ..settings(pb::ApprovalMode::Always, 60)
        },
    )
    .await;
    for n in 0..5 {
        let d = evaluate(
            &server,
            "alice-token",
            shell(&format!("make {n}")),
            Some(waiting("s1", None)),
        )
        .await;
        assert!(d.approval.is_some());
    }
    server.stop().await;
}

#[tokio::test]
async fn a_lost_server_fails_the_wait_closed_and_the_request_outlives_it() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(test_config(dir.path())).await;
    team(&server, settings(pb::ApprovalMode::Always, 300)).await;
    let client = toolgate::grpc::client::Client::connect(toolgate::grpc::client::ClientConfig {
        server: format!("http://{}", server.addr),
        token: Some("alice-token".into()),
        deadline: Duration::from_secs(10),
        ..Default::default()
    })
    .await
    .unwrap();
    let ask = toolgate::grpc::client::ApprovalAsk {
        interactive: None,
        client: "test".into(),
        session_id: "s1".into(),
    };
    let call = toolgate::policy::Call::Shell("make deploy".into());
    let d = client
        .evaluate_waiting("", "", &call, None, &ask)
        .await
        .unwrap();
    let t = d.approval.clone().expect("a request");
    // the server goes away while the client waits: the wait fails closed (a DENY),
    // within the client's own limit
    let waiting = tokio::spawn({
        let client = client.clone();
        let t = t.clone();
        async move {
            client
                .await_answer(&t, tokio::time::Instant::now() + Duration::from_secs(3))
                .await
        }
    });
    server.stop().await;
    let lost = tokio::time::timeout(STEP, waiting).await.unwrap().unwrap();
    assert_eq!(lost.outcome, toolgate::policy::Outcome::Deny);
    assert!(lost.message.contains(&t.request_id), "{}", lost.message);
    // the request is durable: after a restart it is still pending, and a wait resumed
    // with the same id gets the answer given then
    let server = TestServer::start(test_config(dir.path())).await;
    let (pending, mut stream) = await_open(&server, "alice-token", &t.request_id).await;
    assert_eq!(pending.state(), pb::ApprovalState::Pending);
    approve(
        &server,
        "admin-token",
        &t.request_id,
        pb::ApprovalScope::Once,
        0,
    )
    .await
    .unwrap();
    let (outcome, _, _) = answer(&next_approval(&mut stream).await);
    assert_eq!(outcome, pb::Outcome::Allow);
    server.stop().await;
}

/// PostgreSQL: a request made on one replica is approved on the other, and the side
/// waiting on the first gets the answer at once (NOTIFY), as does a watcher there.
#[tokio::test]
async fn postgres_a_request_made_on_one_replica_is_answered_on_another() {
    let Some(url) = support::pg::fresh_database("approvals_replicas").await else {
        return;
    };
    let config = |dir: &std::path::Path| {
        let mut c = test_config(dir);
        c.store.url = Some(url.clone());
        c
    };
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let one = TestServer::start(config(d1.path())).await;
    let two = TestServer::start(config(d2.path())).await;
    team(&one, settings(pb::ApprovalMode::Always, 300)).await;
    let mut watch = approvals(&one, "admin-token")
        .watch_approvals(pb::WatchApprovalsRequest::default())
        .await
        .unwrap()
        .into_inner();
    let d = evaluate(
        &one,
        "alice-token",
        shell("make deploy"),
        Some(waiting("s1", None)),
    )
    .await;
    let id = ticket(&d);
    let (_, mut stream) = await_open(&one, "alice-token", &id).await;
    // replica two sees it, and answers it
    let listed = approvals(&two, "admin-token")
        .list_approvals(pb::ListApprovalsRequest {
            pending_only: true,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .approvals;
    assert!(listed.iter().any(|a| a.request_id == id));
    approve(&two, "admin-token", &id, pb::ApprovalScope::Session, 0)
        .await
        .unwrap();
    let (outcome, _, message) = answer(&next_approval(&mut stream).await);
    assert_eq!(outcome, pb::Outcome::Allow, "{message}");
    // the watcher on replica one saw it made and answered
    let mut states = Vec::new();
    while states.last() != Some(&pb::ApprovalState::Approved) {
        let m = tokio::time::timeout(STEP, watch.message())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        if let Some(pb::watch_approvals_response::Event::Approval(a)) = m.event {
            states.push(a.state());
        }
    }
    // the session grant made on two is honoured on one
    let same = evaluate(
        &one,
        "alice-token",
        shell("make deploy"),
        Some(waiting("s1", None)),
    )
    .await;
    assert_eq!(same.outcome(), pb::Outcome::Allow);
    one.stop().await;
    two.stop().await;
}

/// Waits (on the approvers' stream) for the next pending request; its id.
async fn next_pending(watch: &mut tonic::Streaming<pb::WatchApprovalsResponse>) -> pb::Approval {
    loop {
        let m = tokio::time::timeout(STEP * 2, watch.message())
            .await
            .expect("a request within the deadline")
            .unwrap()
            .unwrap();
        if let Some(pb::watch_approvals_response::Event::Approval(a)) = m.event
            && a.state() == pb::ApprovalState::Pending
        {
            return a;
        }
    }
}

async fn watch_team(server: &TestServer) -> tonic::Streaming<pb::WatchApprovalsResponse> {
    approvals(server, "admin-token")
        .watch_approvals(pb::WatchApprovalsRequest::default())
        .await
        .unwrap()
        .into_inner()
}

/// The real Claude Code CLI in `-p` mode (nobody to ask): a command that needs
/// approval waits in the hook; approved with `toolgate approvals approve` it runs;
/// denied, the model receives the approver's reason; unanswered, it is refused when
/// the deadline passes.
#[tokio::test]
async fn claude_code_in_print_mode_waits_for_the_approvers() {
    use std::path::Path;
    let Some(claude) = crate::claude_code::claude_binary() else {
        return;
    };
    let (server, _data) = start().await;
    team(&server, settings(pb::ApprovalMode::Headless, 120)).await;
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let exe = env!("CARGO_BIN_EXE_toolgate");
    let install = std::process::Command::new(exe)
        .args([
            "hook",
            "install",
            "claude-code",
            "--scope",
            "project",
            "--approval-wait",
            "150",
            "--path",
        ])
        .arg(dir)
        .arg("--command")
        .arg(format!(
            "{exe} hook claude-code --server http://{} --token alice-token",
            server.addr
        ))
        .output()
        .unwrap();
    assert!(install.status.success(), "{install:?}");
    let settings_file = dir.join(".claude/settings.json");
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(&settings_file).unwrap()).unwrap();
    // the client's hook timeout outlasts the hook's wait
    assert_eq!(
        written["hooks"]["PreToolUse"][0]["hooks"][0]["timeout"],
        180
    );
    let command = written["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap();
    assert!(command.ends_with(" --wait-ms 150000"), "{command}");
    assert!(written.get("env").is_none(), "{written}");
    let up = format!("http://{}", server.addr);
    let touch = |path: &Path| {
        json!({"name": "Bash", "input": {"command": format!("touch {}", path.display()),
                                          "description": "make a marker"}})
    };
    let told = |s: &crate::claude_code::Session| {
        s.tool_results
            .iter()
            .map(|r| r["content"].to_string())
            .collect::<Vec<_>>()
            .join("\n")
    };
    let mut watch = watch_team(&server).await;

    // approved through the CLI: the command runs
    let approved = dir.join("approved-marker");
    let approver = async {
        let a = next_pending(&mut watch).await;
        assert_eq!(a.client, "claude-code");
        assert!(
            !a.session_id.is_empty(),
            "the session id came from the hook payload"
        );
        let out = tokio::process::Command::new(exe)
            .args(["approvals", "approve", &a.request_id])
            .env("TOOLGATE_SERVER", &up)
            .env("TOOLGATE_TOKEN", "admin-token")
            .output()
            .await
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("approved"),
            "{out:?}"
        );
    };
    let (s, ()) = tokio::join!(
        crate::claude_code::run_claude(&claude, dir, &settings_file, touch(&approved)),
        approver
    );
    assert!(approved.exists(), "the approved command ran: {}", s.result);

    // denied with a reason: the model is told it
    let denied = dir.join("denied-marker");
    let approver = async {
        let a = next_pending(&mut watch).await;
        let out = tokio::process::Command::new(exe)
            .args([
                "approvals",
                "deny",
                &a.request_id,
                "--reason",
                "not during the freeze",
            ])
            .env("TOOLGATE_SERVER", &up)
            .env("TOOLGATE_TOKEN", "admin-token")
            .output()
            .await
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    };
    let (s, ()) = tokio::join!(
        crate::claude_code::run_claude(&claude, dir, &settings_file, touch(&denied)),
        approver
    );
    assert!(!denied.exists(), "the denied command did not run");
    let text = told(&s);
    assert!(
        text.contains("APPROVAL_DENIED") && text.contains("not during the freeze"),
        "model received: {text}"
    );

    // nobody answers: refused at the deadline
    team(&server, settings(pb::ApprovalMode::Headless, 2)).await;
    let late = dir.join("late-marker");
    let s = crate::claude_code::run_claude(&claude, dir, &settings_file, touch(&late)).await;
    assert!(!late.exists(), "the unanswered command did not run");
    let text = told(&s);
    assert!(
        text.contains("APPROVAL_EXPIRED") && text.contains("nobody approved it"),
        "model received: {text}"
    );
    server.stop().await;
}

fn python_has_mcp() -> bool {
    let found = std::process::Command::new("python3")
        .args(["-c", "import mcp"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must have python3 with mcp==2.3.0"
        );
        eprintln!("skipped: python3 with the mcp package not found (pip install mcp==2.3.0)");
    }
    found
}

/// The same through `toolgate proxy --headless --approval-wait` with the Python `mcp`
/// client: an approved call runs, a denied one is an error carrying the reason, an
/// unanswered one is refused at the deadline.
#[tokio::test]
async fn the_proxy_waits_for_the_approvers() {
    if !python_has_mcp() {
        return;
    }
    let (server, _dir) = start().await;
    team(&server, settings(pb::ApprovalMode::Headless, 120)).await;
    let python = |name: &str| format!("{}/tests/python/{name}", env!("CARGO_MANIFEST_DIR"));
    let mut child = tokio::process::Command::new("python3")
        .arg(python("mcp_approval_client.py"))
        .arg("3")
        .arg(env!("CARGO_BIN_EXE_toolgate"))
        .args([
            "proxy",
            "--server-id",
            "demo",
            "--headless",
            "--approval-wait",
            "150s",
            "--",
            "python3",
        ])
        .arg(python("mcp_upstream.py"))
        .env("TOOLGATE_SERVER", format!("http://{}", server.addr))
        .env("TOOLGATE_TOKEN", "alice-token")
        .env("TOOLGATE_TEAM", TEAM)
        .env("TOOLGATE_USER", "alice")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("run python3");
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next = async || -> Value {
        let line = tokio::time::timeout(STEP * 3, lines.next_line())
            .await
            .expect("the client went on within the deadline")
            .unwrap()
            .expect("a line");
        serde_json::from_str(&line).unwrap()
    };
    let mut watch = watch_team(&server).await;
    let mut results = Vec::new();
    for n in 0..3 {
        let ready = next().await;
        assert_eq!(ready["step"], "ready", "{ready}");
        if n == 2 {
            team(&server, settings(pb::ApprovalMode::Headless, 2)).await;
        }
        stdin.write_all(b"go\n").await.unwrap();
        match n {
            0 => {
                let a = next_pending(&mut watch).await;
                assert_eq!(
                    (a.client.as_str(), a.summary.as_str()),
                    ("proxy", "demo:ask_me")
                );
                approve(
                    &server,
                    "admin-token",
                    &a.request_id,
                    pb::ApprovalScope::Once,
                    0,
                )
                .await
                .unwrap();
            }
            1 => {
                let a = next_pending(&mut watch).await;
                deny(&server, "admin-token", &a.request_id, "ask me tomorrow")
                    .await
                    .unwrap();
            }
            _ => {}
        }
        results.push(next().await);
    }
    assert_eq!(results[0]["is_error"], false, "{}", results[0]);
    assert_eq!(results[0]["text"], "approved and ran");
    assert_eq!(results[1]["is_error"], true, "{}", results[1]);
    let text = results[1]["text"].as_str().unwrap();
    assert!(
        text.contains("ask me tomorrow") && text.contains("APPROVAL_DENIED"),
        "{text}"
    );
    assert_eq!(results[2]["is_error"], true, "{}", results[2]);
    let text = results[2]["text"].as_str().unwrap();
    assert!(
        text.contains("APPROVAL_EXPIRED") && text.contains("nobody approved it"),
        "{text}"
    );
    drop(stdin);
    let _ = tokio::time::timeout(STEP, child.wait()).await;
    server.stop().await;
}

/// `toolgate hook codex` (a client that can never ask) waits for the approvers under
/// the headless mode, and the approver's denial is its answer.
#[tokio::test]
async fn a_codex_hook_waits_and_answers_with_the_denial() {
    let (server, _dir) = start().await;
    team(&server, settings(pb::ApprovalMode::Headless, 120)).await;
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolgate"));
    for (key, _) in std::env::vars().filter(|(k, _)| k.starts_with("TOOLGATE_")) {
        cmd.env_remove(key);
    }
    let mut child = cmd
        .args([
            "hook",
            "codex",
            "--wait-ms",
            "150000",
            "--token",
            "alice-token",
        ])
        .arg("--server")
        .arg(format!("http://{}", server.addr))
        .env("HOME", "/nonexistent")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let payload = json!({"session_id": "codex-1", "cwd": "/tmp", "hook_event_name": "PreToolUse",
        "tool_name": "shell_command", "tool_input": {"command": "make deploy"}, "tool_use_id": "t1",
        "model": "m", "permission_mode": "default", "transcript_path": "/tmp/t", "turn_id": "1"});
    let mut input = child.stdin.take().unwrap();
    input
        .write_all(payload.to_string().as_bytes())
        .await
        .unwrap();
    drop(input);
    let mut watch = watch_team(&server).await;
    let a = next_pending(&mut watch).await;
    assert_eq!(
        (a.client.as_str(), a.session_id.as_str()),
        ("codex", "codex-1")
    );
    deny(
        &server,
        "admin-token",
        &a.request_id,
        "use the staging target",
    )
    .await
    .unwrap();
    let out = tokio::time::timeout(STEP, child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("deny")
            && stdout.contains("use the staging target")
            && stdout.contains("APPROVAL_DENIED"),
        "{stdout}"
    );
    server.stop().await;
}

fn in_dir(line: &str, cwd: &str) -> pb::ToolCall {
    pb::ToolCall {
        kind: Some(pb::tool_call::Kind::Shell(line.into())),
        arguments: Some(pb::CallArguments {
            cwd: cwd.into(),
            ..Default::default()
        }),
    }
}

async fn evaluate_as(
    server: &TestServer,
    token: &str,
    user: &str,
    call: pb::ToolCall,
    approval: pb::ApprovalCapability,
) -> pb::Decision {
    server
        .policy(token)
        .evaluate(pb::EvaluateRequest {
            team_id: TEAM.into(),
            user_id: user.into(),
            call: Some(call),
            approval: Some(approval),
            ..Default::default()
        })
        .await
        .expect("evaluate")
        .into_inner()
        .decision
        .expect("a decision")
}

#[tokio::test]
async fn grants_do_not_stretch_past_their_call_directory_or_session() {
    let (server, _dir) = start().await;
    team(&server, settings(pb::ApprovalMode::Always, 60)).await;
    // for an hour, in one directory: not in another, nor with no directory named
    let d = evaluate(
        &server,
        "alice-token",
        in_dir("python3 build.py", "/home/alice/projA"),
        Some(waiting("s1", None)),
    )
    .await;
    approve(
        &server,
        "admin-token",
        &ticket(&d),
        pb::ApprovalScope::Duration,
        3600,
    )
    .await
    .unwrap();
    let again = |line: &'static str, cwd: &'static str| {
        let server = &server;
        async move {
            let call = if cwd.is_empty() {
                shell(line)
            } else {
                in_dir(line, cwd)
            };
            evaluate(server, "alice-token", call, Some(waiting("s2", None))).await
        }
    };
    let same = again("python3 build.py", "/home/alice/projA").await;
    assert_eq!(same.outcome(), pb::Outcome::Allow, "{}", same.message);
    for (line, cwd) in [
        ("python3 build.py", "/home/alice/projB"),
        ("python3 build.py", "/home/alice/projA/sub"),
        ("python3 build.py", ""),
        ("python3 build.py --evil", "/home/alice/projA"),
    ] {
        let d = again(line, cwd).await;
        assert_eq!(d.outcome(), pb::Outcome::Ask, "{line} in {cwd:?}");
    }

    // for the session: of the principal and client that asked, not of whoever names it
    let d = evaluate(
        &server,
        "alice-token",
        shell("make test"),
        Some(waiting("s1", None)),
    )
    .await;
    approve(
        &server,
        "admin-token",
        &ticket(&d),
        pb::ApprovalScope::Session,
        0,
    )
    .await
    .unwrap();
    let same = evaluate(
        &server,
        "alice-token",
        shell("make test"),
        Some(waiting("s1", None)),
    )
    .await;
    assert_eq!(same.outcome(), pb::Outcome::Allow, "{}", same.message);
    // the team's service token acting for alice, with her session id
    let other = evaluate_as(
        &server,
        "service-token",
        "alice",
        shell("make test"),
        waiting("s1", None),
    )
    .await;
    assert_eq!(other.outcome(), pb::Outcome::Ask, "{}", other.message);
    // another client claiming the session
    let codex = pb::ApprovalCapability {
        client: "codex".into(),
        ..waiting("s1", None)
    };
    let other = evaluate(&server, "alice-token", shell("make test"), Some(codex)).await;
    assert_eq!(other.outcome(), pb::Outcome::Ask, "{}", other.message);
    server.stop().await;
}

#[tokio::test]
async fn adding_to_the_allowlist_adds_exactly_the_call_never_a_wrapped_or_broader_entry() {
    let (server, _dir) = start().await;
    team(&server, settings(pb::ApprovalMode::Always, 60)).await;
    let d = evaluate(
        &server,
        "alice-token",
        shell("timeout 60 npm test"),
        Some(waiting("s1", None)),
    )
    .await;
    let a = approve(
        &server,
        "admin-token",
        &ticket(&d),
        pb::ApprovalScope::Allowlist,
        0,
    )
    .await
    .unwrap();
    assert_eq!(a.allowlist_entry, "timeout 60 npm test");
    let allowed = server
        .admin("admin-token")
        .get_team_admin_settings(pb::GetTeamAdminSettingsRequest {
            team_id: TEAM.into(),
        })
        .await
        .unwrap()
        .into_inner()
        .settings
        .unwrap()
        .auto_run_controls
        .unwrap()
        .allowed;
    assert_eq!(allowed, ["git status", "timeout 60 npm test"]);
    let now = evaluate(&server, "alice-token", shell("timeout 60 npm test"), None).await;
    assert_eq!(now.outcome(), pb::Outcome::Allow, "{}", now.message);
    for broader in ["npm test", "npm test -- --evil", "timeout 600 npm test"] {
        let d = evaluate(&server, "bob-token", shell(broader), None).await;
        assert_eq!(d.outcome(), pb::Outcome::Ask, "{broader}");
    }
    // a call holding a secret: its entry would hold the marker, not the call
    let d = evaluate(
        &server,
        "alice-token",
        shell("mysql -pTr0ub4dor app"),
        Some(waiting("s1", None)),
    )
    .await;
    let e = approve(
        &server,
        "admin-token",
        &ticket(&d),
        pb::ApprovalScope::Allowlist,
        0,
    )
    .await
    .unwrap_err();
    assert_eq!(e.code(), tonic::Code::FailedPrecondition);
    assert!(e.message().contains("secret"), "{}", e.message());
    assert!(!e.message().contains("Tr0ub4dor"), "{}", e.message());
    server.stop().await;
}

/// Polls a request until it reaches `state`, within the deadline.
async fn until_state(server: &TestServer, id: &str, state: pb::ApprovalState) -> pb::Approval {
    let start = tokio::time::Instant::now();
    loop {
        let a = approvals(server, "admin-token")
            .get_approval(pb::GetApprovalRequest {
                request_id: id.into(),
            })
            .await
            .unwrap()
            .into_inner()
            .approval
            .unwrap();
        if a.state() == state {
            return a;
        }
        assert!(
            start.elapsed() < STEP,
            "{id} is {:?}, not {state:?}",
            a.state()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_request_whose_caller_went_away_is_abandoned_and_cannot_be_approved() {
    let (server, _dir) = start().await;
    team(&server, settings(pb::ApprovalMode::Always, 600)).await;
    let d = evaluate(
        &server,
        "alice-token",
        shell("make deploy"),
        Some(waiting("s1", None)),
    )
    .await;
    let id = ticket(&d);
    // an approver following it and leaving abandons nothing
    let (_, follower) = await_open(&server, "admin-token", &id).await;
    drop(follower);
    // the caller waits, then gives up
    let (first, stream) = await_open(&server, "alice-token", &id).await;
    assert_eq!(first.state(), pb::ApprovalState::Pending);
    drop(stream);
    let a = until_state(&server, &id, pb::ApprovalState::Abandoned).await;
    let (outcome, _, message) = answer(&a);
    assert_eq!(outcome, pb::Outcome::Deny);
    assert!(message.contains("went away"), "{message}");
    // out of the inbox
    let pending = approvals(&server, "admin-token")
        .list_approvals(pb::ListApprovalsRequest {
            team_id: TEAM.into(),
            pending_only: true,
            limit: 100,
        })
        .await
        .unwrap()
        .into_inner()
        .approvals;
    assert!(pending.iter().all(|a| a.request_id != id));
    // and cannot be answered
    let e = approve(&server, "admin-token", &id, pb::ApprovalScope::Once, 0)
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::FailedPrecondition);
    assert!(e.message().contains("abandoned"), "{}", e.message());
    let e = deny(&server, "admin-token", &id, "no").await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::FailedPrecondition);
    // audited once
    let events = server
        .admin("admin-token")
        .list_audit_events(pb::ListAuditEventsRequest {
            team_id: TEAM.into(),
            limit: 1000,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .events;
    let abandoned = events
        .iter()
        .filter(|e| e.kind() == pb::AuditEventKind::ApprovalAbandoned)
        .count();
    assert_eq!(abandoned, 1);

    // a wait that ends with its answer abandons nothing
    let d = evaluate(
        &server,
        "alice-token",
        shell("make ok"),
        Some(waiting("s1", None)),
    )
    .await;
    let id = ticket(&d);
    let (_, mut stream) = await_open(&server, "alice-token", &id).await;
    approve(&server, "admin-token", &id, pb::ApprovalScope::Once, 0)
        .await
        .unwrap();
    let a = next_approval(&mut stream).await;
    assert_eq!(a.state(), pb::ApprovalState::Approved);
    drop(stream);
    server.stop().await;
}
