//! Server limits seen by a client: streams past `limits.max_streams_per_principal`
//! are refused with RESOURCE_EXHAUSTED naming the setting, per principal, and a slot
//! comes back when its stream ends. (The deadline and the concurrency bound are
//! proven on the layer itself, in crates/server/src/grpc/limits.rs.)

use crate::support;

use std::time::Duration;
use support::*;
use toolgate::proto::v1 as pb;

async fn watch(
    server: &TestServer,
    token: &str,
    user: &str,
) -> Result<tonic::Streaming<pb::WatchPolicyResponse>, tonic::Status> {
    let mut events = server
        .policy(token)
        .watch_policy(pb::WatchPolicyRequest {
            team_id: TEAM.into(),
            user_id: user.into(),
            after_revision: None,
        })
        .await?
        .into_inner();
    // the snapshot: the stream is open on the server
    events.message().await?.expect("a snapshot");
    Ok(events)
}

#[tokio::test]
async fn streams_past_the_bound_per_principal_are_refused_until_one_ends() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path());
    config.limits.max_streams_per_principal = 2;
    let server = TestServer::start(config).await;

    let first = watch(&server, "alice-token", "alice").await.unwrap();
    let _second = watch(&server, "alice-token", "alice").await.unwrap();
    let refused = watch(&server, "alice-token", "alice").await.unwrap_err();
    assert_eq!(
        refused.code(),
        tonic::Code::ResourceExhausted,
        "{refused:?}"
    );
    assert!(
        refused
            .message()
            .contains("limits.max_streams_per_principal (2)"),
        "{refused:?}"
    );
    // another principal has its own
    let _bob = watch(&server, "bob-token", "bob").await.unwrap();

    // ending a stream gives its slot back once the server sees the reset
    drop(first);
    let reopened = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match watch(&server, "alice-token", "alice").await {
                Ok(events) => return events,
                Err(e) if e.code() == tonic::Code::ResourceExhausted => {
                    tokio::task::yield_now().await
                }
                Err(e) => panic!("{e:?}"),
            }
        }
    })
    .await
    .expect("the slot came back within 10 s");
    drop(reopened);
    server.stop().await;
}

/// Every kind of stream counts against the one bound: the policy's, the decision
/// log's, the approvals' and a hook's wait for an answer (refused before the request
/// it names is even looked up).
#[tokio::test]
async fn every_kind_of_stream_counts_against_the_bound() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path());
    config.limits.max_streams_per_principal = 2;
    let server = TestServer::start(config).await;
    let approvals = || {
        pb::approval_service_client::ApprovalServiceClient::with_interceptor(
            server.channel.clone(),
            Auth::new("admin-token"),
        )
    };
    let exhausted = |status: tonic::Status| {
        assert_eq!(status.code(), tonic::Code::ResourceExhausted, "{status:?}");
    };
    let _decisions = server
        .decisions("admin-token")
        .watch_decisions(pb::WatchDecisionsRequest {
            filter: Some(pb::DecisionFilter {
                team_id: TEAM.into(),
                ..Default::default()
            }),
        })
        .await
        .unwrap();
    let _approvals = approvals()
        .watch_approvals(pb::WatchApprovalsRequest {
            team_id: TEAM.into(),
        })
        .await
        .unwrap();
    exhausted(watch(&server, "admin-token", "alice").await.unwrap_err());
    exhausted(
        approvals()
            .watch_approvals(pb::WatchApprovalsRequest {
                team_id: TEAM.into(),
            })
            .await
            .unwrap_err(),
    );
    exhausted(
        approvals()
            .await_approval(pb::AwaitApprovalRequest {
                request_id: "no-such-request".into(),
            })
            .await
            .unwrap_err(),
    );
    server.stop().await;
}

#[tokio::test]
async fn a_zero_limit_is_refused_with_how_to_fix_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.yaml");
    std::fs::write(
        &file,
        "limits:\n  request_timeout_secs: 0\n  max_concurrent_requests: 0\n  max_streams_per_principal: 0\n",
    )
    .unwrap();
    let err = toolgate::config::Config::load(
        Some(&file),
        Vec::<(String, String)>::new(),
        &Default::default(),
    )
    .unwrap_err();
    let text = err.to_string();
    for field in [
        "limits.request_timeout_secs",
        "limits.max_concurrent_requests",
        "limits.max_streams_per_principal",
    ] {
        assert!(text.contains(field), "{field} in {text}");
    }
    assert!(text.contains("e.g. 30"), "{text}");
}
