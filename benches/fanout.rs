//! WatchPolicy fan-out against the real server binary: with N subscribers of one team
//! watching, the time from an admin write to its delivery at every subscriber
//! (p50, p99, max over all deliveries), and the server's resident memory per idle
//! subscriber.
//!
//! `cargo bench -p toolgate-benches --bench fanout -- [--subscribers 1000,10000] [--per-connection 100]
//! [--writes 20] [--entries 100]`
//!
//! Each write waits until every subscriber has it before the next is sent, so a
//! figure is one write's fan-out, not a queue of them. Delivery is timed from the
//! writer's acknowledgement (a subscriber may see the change before the writer sees
//! its answer: that counts as 0) and, separately, from the moment it was sent. The
//! last line printed is the figures as JSON.

#[path = "../tests/support/mod.rs"]
mod support;

use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use support::*;
use tokio::sync::Notify;
use tonic::transport::Channel;
use toolgate::proto::v1 as pb;

struct Args {
    subscribers: Vec<usize>,
    per_connection: usize,
    writes: usize,
    /// Entries in the admin allowlist each write carries: what each subscriber is sent.
    entries: usize,
}

impl Args {
    fn parse() -> Self {
        let mut args = Self {
            subscribers: vec![1_000, 10_000],
            per_connection: 100,
            writes: 20,
            entries: 100,
        };
        let mut it = std::env::args().skip(1);
        while let Some(flag) = it.next() {
            // only a known flag takes the next argument as its value
            let mut value = || it.next().unwrap_or_default();
            let mut number = || -> usize {
                value()
                    .parse()
                    .unwrap_or_else(|_| panic!("{flag} takes a whole number"))
            };
            match flag.as_str() {
                "--subscribers" => {
                    args.subscribers = value()
                        .split(',')
                        .map(|n| n.trim().parse().expect("--subscribers takes N[,N…]"))
                        .collect();
                }
                "--per-connection" => args.per_connection = number().max(1),
                "--writes" => args.writes = number().max(1),
                "--entries" => args.entries = number().max(1),
                // cargo passes --bench to every bench binary
                _ => {}
            }
        }
        args
    }
}

fn percentile_us(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i].as_secs_f64() * 1e6
}

async fn connect(addr: &str) -> Channel {
    Channel::from_shared(format!("http://{addr}"))
        .unwrap()
        .tcp_nodelay(true)
        .connect()
        .await
        .expect("connect")
}

/// Only the revision of a `WatchPolicyResponse`. The bench times the server's fan-out;
/// decoding every document on this same 2-core machine would charge the clients'
/// work to it.
#[derive(Clone, PartialEq, prost::Message)]
struct RevisionOnly {
    #[prost(uint64, tag = "1")]
    revision: u64,
}

/// A WatchPolicy stream as the service's subscriber sees it, decoding revisions only.
async fn watch_revisions(channel: Channel, user: String) -> tonic::Streaming<RevisionOnly> {
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready().await.expect("channel ready");
    let mut request = tonic::Request::new(pb::WatchPolicyRequest {
        team_id: TEAM.into(),
        user_id: user,
        after_revision: None,
    });
    request
        .metadata_mut()
        .insert("authorization", "Bearer service-token".parse().unwrap());
    let path = tonic::codegen::http::uri::PathAndQuery::from_static(
        "/toolgate.v1.PolicyService/WatchPolicy",
    );
    grpc.server_streaming(request, path, tonic_prost::ProstCodec::default())
        .await
        .expect("watch")
        .into_inner()
}

/// Counts deliveries of the write in flight and wakes the writer when all have it.
struct Progress {
    delivered: AtomicUsize,
    all: Notify,
}

async fn measure(addr: &str, pid: u32, n: usize, args: &Args) -> serde_json::Value {
    let (per_connection, writes) = (args.per_connection, args.writes);
    let admin_channel = connect(addr).await;
    let mut admin = AdminServiceClient::with_interceptor(admin_channel, Auth::new("admin-token"));
    let before = process_rss_bytes(pid);

    let progress = Arc::new(Progress {
        delivered: AtomicUsize::new(0),
        all: Notify::new(),
    });
    let mut channels = Vec::new();
    for _ in 0..n.div_ceil(per_connection) {
        channels.push(connect(addr).await);
    }
    let opening = Instant::now();
    let mut opened = Vec::with_capacity(n);
    for i in 0..n {
        let channel = channels[i / per_connection].clone();
        opened.push(tokio::spawn(async move {
            let mut events = watch_revisions(channel, format!("user{i}")).await;
            let snapshot = events.message().await.expect("snapshot").expect("snapshot");
            (events, snapshot.revision)
        }));
    }
    let mut streams = Vec::with_capacity(n);
    for o in opened {
        streams.push(o.await.expect("open"));
    }
    let open_secs = opening.elapsed().as_secs_f64();
    let start_revision = streams.iter().map(|(_, r)| *r).max().unwrap_or(0);
    // let the server finish what opening cost it before reading its memory
    tokio::time::sleep(Duration::from_millis(500)).await;
    let idle = process_rss_bytes(pid);

    let mut readers = Vec::with_capacity(n);
    for (mut events, _) in streams {
        let progress = progress.clone();
        let last = start_revision + writes as u64;
        readers.push(tokio::spawn(async move {
            let mut received = Vec::with_capacity(writes);
            let mut seen = start_revision;
            while let Some(event) = events.message().await.expect("event") {
                // a heartbeat carries the revision already seen
                if event.revision <= seen {
                    continue;
                }
                seen = event.revision;
                received.push((event.revision, Instant::now()));
                if progress.delivered.fetch_add(1, Ordering::AcqRel) + 1 == n {
                    progress.all.notify_one();
                }
                if event.revision >= last {
                    break;
                }
            }
            received
        }));
    }

    let cpu_before = process_cpu_time(pid);
    let mut sent_at = Vec::with_capacity(writes);
    let mut acked_at = Vec::with_capacity(writes);
    for w in 0..writes {
        progress.delivered.store(0, Ordering::Release);
        let all = progress.all.notified();
        let sent = Instant::now();
        let reply = admin
            .update_team_admin_settings(pb::UpdateTeamAdminSettingsRequest {
                team_id: TEAM.into(),
                auto_run_controls: Some(pb::AutoRunControls {
                    enabled: true,
                    mcp_tool_allowlist: (0..args.entries)
                        .map(|i| format!("srv{i}:tool{w}"))
                        .collect(),
                    ..Default::default()
                }),
                expected_revision: Some(start_revision + w as u64),
            })
            .await
            .expect("admin write")
            .into_inner()
            .settings
            .unwrap();
        assert_eq!(reply.revision, start_revision + w as u64 + 1);
        acked_at.push(Instant::now());
        sent_at.push(sent);
        all.await;
    }

    let server_cpu_per_write = (process_cpu_time(pid) - cpu_before) / writes as u32;
    let mut after_ack = Vec::with_capacity(n * writes);
    let mut after_send = Vec::with_capacity(n * writes);
    for r in readers {
        for (revision, at) in r.await.expect("reader") {
            let w = (revision - start_revision - 1) as usize;
            after_ack.push(at.saturating_duration_since(acked_at[w]));
            after_send.push(at.duration_since(sent_at[w]));
        }
    }
    assert_eq!(
        after_ack.len(),
        n * writes,
        "every subscriber got every write"
    );
    after_ack.sort_unstable();
    after_send.sort_unstable();
    let per_sub = idle.saturating_sub(before) as f64 / n as f64;
    println!(
        "{n:>6} subscribers ({} connections, opened in {open_secs:.1} s): after ack p50 {:.0} µs, p99 {:.0} µs, max {:.0} µs; \
         after send p50 {:.0} µs, p99 {:.0} µs; {:.1} KiB resident per idle subscriber; \
         server CPU {server_cpu_per_write:?} per write",
        channels.len(),
        percentile_us(&after_ack, 0.5),
        percentile_us(&after_ack, 0.99),
        percentile_us(&after_ack, 1.0),
        percentile_us(&after_send, 0.5),
        percentile_us(&after_send, 0.99),
        per_sub / 1024.0,
    );
    drop(channels);
    json!({
        "subscribers": n,
        "connections": n.div_ceil(per_connection),
        "writes": writes,
        "entries_per_write": args.entries,
        "after_ack_p50_us": percentile_us(&after_ack, 0.5).round(),
        "after_ack_p99_us": percentile_us(&after_ack, 0.99).round(),
        "after_ack_max_us": percentile_us(&after_ack, 1.0).round(),
        "after_send_p50_us": percentile_us(&after_send, 0.5).round(),
        "after_send_p99_us": percentile_us(&after_send, 0.99).round(),
        "after_send_max_us": percentile_us(&after_send, 1.0).round(),
        "rss_before_mib": before as f64 / 1048576.0,
        "rss_idle_mib": idle as f64 / 1048576.0,
        "bytes_per_idle_subscriber": per_sub.round(),
        "server_cpu_ms_per_write": server_cpu_per_write.as_secs_f64() * 1e3,
    })
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    let mut results = Vec::new();
    for &n in &args.subscribers {
        // a fresh server per size, so one size's memory does not count in the next
        let dir = tempfile::tempdir().unwrap();
        let mut config = test_config(&dir.path().join("data"));
        config.log.format = toolgate::config::LogFormat::Json;
        let config_path = dir.path().join("toolgate.yaml");
        std::fs::write(&config_path, serde_norway::to_string(&config).unwrap()).unwrap();
        let (mut child, addr) = spawn_binary(&config_path);
        results.push(measure(&addr, child.id(), n, &args).await);
        child.kill().ok();
        child.wait().ok();
    }
    println!("{}", json!({ "bench": "fanout", "results": results }));
}
