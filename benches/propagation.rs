//! Cross-replica propagation: two replicas on one PostgreSQL; the time from a write's
//! acknowledgement on replica A to its delivery to a WatchPolicy subscriber on B.
//!
//! `TOOLGATE_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/postgres cargo bench --bench propagation -- [writes]`

#[path = "../tests/common/mod.rs"]
mod common;

use common::*;
use std::time::{Duration, Instant};
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
    let Some(url) = common::pg::fresh_database("propagation bench").await else {
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
    events.message().await.unwrap().unwrap(); // the snapshot
    let mut admin = a.admin("admin-token");
    let mut samples = Vec::with_capacity(writes);
    for i in 0..writes {
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
            .into_inner();
        let acked = Instant::now();
        loop {
            let e = events.message().await.unwrap().unwrap();
            if e.revision == written.revision {
                break;
            }
        }
        samples.push(acked.elapsed());
    }
    samples.sort();
    let (p50, p99, max) = (
        percentile(&samples, 0.5),
        percentile(&samples, 0.99),
        *samples.last().unwrap(),
    );
    println!(
        "cross-replica propagation over {writes} writes: p50 {p50:?}, p99 {p99:?}, max {max:?}"
    );
    println!(
        "{}",
        serde_json::json!({
            "bench": "propagation", "writes": writes,
            "p50_us": p50.as_micros(), "p99_us": p99.as_micros(), "max_us": max.as_micros(),
        })
    );
    a.stop().await;
    b.stop().await;
}
