//! Cross-replica propagation: two replicas on one PostgreSQL; the time from a write's
//! acknowledgement on replica A to its delivery to a WatchPolicy subscriber on B.
//!
//! `cargo bench -p toolgate-benches --bench propagation -- [writes]` on a throwaway PostgreSQL cluster of
//! its own (root and the server binaries, as the PostgreSQL tests), or on the server
//! `TOOLGATE_TEST_POSTGRES_URL` names.

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};
use support::*;
use toolgate::proto::v1 as pb;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

#[tokio::main]
async fn main() {
    let writes: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(500);
    let mut _cluster = None;
    let url = if std::env::var_os(support::pg::URL_VAR).is_some() {
        support::pg::fresh_database("propagation bench").await
    } else {
        _cluster = support::pg::Cluster::start("propagation bench");
        _cluster.as_ref().map(support::pg::Cluster::url)
    };
    let Some(url) = url else {
        return;
    };
    let replica = |url: String| async move {
        let dir = tempfile::tempdir().unwrap();
        let mut config = test_config(dir.path());
        config.store.url = Some(url);
        (TestServer::start(config).await, dir)
    };
    let (a, _da) = replica(url.clone()).await;
    let (b, _db) = replica(url).await;
    let mut events = b
        .policy("alice-token")
        .watch_policy(pb::WatchPolicyRequest {
            team_id: TEAM.into(),
            user_id: "alice".into(),
            after_revision: None,
        })
        .await
        .unwrap()
        .into_inner();
    let first = events.message().await.unwrap().unwrap().revision; // the snapshot
    // B's stream is read on its own task so each arrival is timed when it happens,
    // not when the writer gets round to looking
    let reader = tokio::spawn(async move {
        let mut arrived = Vec::with_capacity(writes);
        while arrived.len() < writes {
            let e = events.message().await.unwrap().unwrap();
            if e.revision > first
                && e.event
                    .is_some_and(|e| !matches!(e, pb::watch_policy_response::Event::Heartbeat(_)))
            {
                arrived.push((e.revision, Instant::now()));
            }
        }
        arrived
    });
    let mut admin = a.admin("admin-token");
    let mut sent_acked = Vec::with_capacity(writes);
    for i in 0..writes {
        let sent = Instant::now();
        let written = admin
            .update_team_admin_settings(pb::UpdateTeamAdminSettingsRequest {
                team_id: TEAM.into(),
                auto_run_controls: Some(pb::AutoRunControls {
                    enabled: true,
                    mcp_tool_allowlist: vec![format!("s{i}:*")],
                    ..Default::default()
                }),
                expected_revision: None,
            })
            .await
            .unwrap()
            .into_inner()
            .settings
            .unwrap();
        assert_eq!(written.revision, first + i as u64 + 1);
        sent_acked.push((sent, Instant::now()));
    }
    let arrived = reader.await.unwrap();
    let mut after_send = Vec::with_capacity(writes);
    let mut after_ack = Vec::with_capacity(writes);
    for (revision, at) in arrived {
        let (sent, acked) = sent_acked[(revision - first - 1) as usize];
        after_send.push(at.duration_since(sent));
        // B often has the change before A's answer reaches the writer: that is 0
        after_ack.push(at.saturating_duration_since(acked));
    }
    after_send.sort();
    after_ack.sort();
    let figures = |d: &[Duration]| (percentile(d, 0.5), percentile(d, 0.99), *d.last().unwrap());
    let (p50, p99, max) = figures(&after_send);
    let (ack_p50, ack_p99, ack_max) = figures(&after_ack);
    println!(
        "cross-replica propagation over {writes} writes, write sent on A to delivery on B: \
         p50 {p50:?}, p99 {p99:?}, max {max:?}; after A's acknowledgement: p50 {ack_p50:?}, \
         p99 {ack_p99:?}, max {ack_max:?}"
    );
    println!(
        "{}",
        serde_json::json!({
            "bench": "propagation", "writes": writes,
            "after_send_p50_us": p50.as_micros(), "after_send_p99_us": p99.as_micros(),
            "after_send_max_us": max.as_micros(),
            "after_ack_p50_us": ack_p50.as_micros(), "after_ack_p99_us": ack_p99.as_micros(),
            "after_ack_max_us": ack_max.as_micros(),
        })
    );
    a.stop().await;
    b.stop().await;
}
