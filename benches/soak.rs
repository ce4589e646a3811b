//! A soak of the real server binary: decisions, writes, watchers joining and leaving,
//! slow watchers that never read, and members writing settings at their limits, for
//! minutes; the server's resident memory sampled throughout.
//!
//! `cargo bench -p toolgate-benches --bench soak -- [--secs 180] [--sample-secs 10] [--teams 8]
//! [--max-growth-mib 64]`
//!
//! Fails (exit 1) if the resident set grows more than `--max-growth-mib` from the
//! first sample after warm-up (a fifth of the run) to the largest later one, or if a
//! watcher that keeps reading misses an admin change (neither delivered nor covered
//! by a resync snapshot). Prints a table of samples, then the figures as JSON.

#[path = "../tests/support/mod.rs"]
mod support;

use serde_json::json;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use support::*;
use tonic::transport::Channel;
use toolgate::proto::v1 as pb;
use toolgate::proto::v1::watch_policy_response::Event;

struct Args {
    secs: u64,
    sample_secs: u64,
    teams: usize,
    max_growth_mib: f64,
}

impl Args {
    fn parse() -> Self {
        let mut args = Self {
            secs: 180,
            sample_secs: 10,
            teams: 8,
            max_growth_mib: 64.0,
        };
        let mut it = std::env::args().skip(1);
        while let Some(flag) = it.next() {
            let mut value = || it.next().unwrap_or_default();
            match flag.as_str() {
                "--secs" => args.secs = value().parse().expect("--secs N"),
                "--sample-secs" => args.sample_secs = value().parse().expect("--sample-secs N"),
                "--teams" => args.teams = value().parse().expect("--teams N"),
                "--max-growth-mib" => {
                    args.max_growth_mib = value().parse().expect("--max-growth-mib N")
                }
                // cargo passes --bench to every bench binary
                _ => {}
            }
        }
        args
    }
}

/// Operator-written teams: the test principals are scoped to one team, so the soak
/// uses the operator token everywhere.
const TOKEN: &str = "operator-token";

fn team(i: usize) -> String {
    format!("soak{i}")
}

async fn connect(addr: &str) -> Channel {
    Channel::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .expect("connect")
}

#[derive(Default)]
struct Counters {
    decisions: AtomicU64,
    writes: AtomicU64,
    watches_opened: AtomicU64,
    resyncs: AtomicU64,
}

/// Admin writes, round-robin over the teams; each acknowledged revision is recorded
/// for the watchers' check.
async fn admin_writer(
    addr: String,
    teams: usize,
    stop: Arc<AtomicBool>,
    counters: Arc<Counters>,
    acked: Arc<std::sync::Mutex<Vec<BTreeSet<u64>>>>,
) {
    let mut admin = AdminServiceClient::with_interceptor(connect(&addr).await, Auth::new(TOKEN));
    let mut i = 0usize;
    while !stop.load(Ordering::Relaxed) {
        let t = i % teams;
        let r = admin
            .update_team_admin_settings(pb::UpdateTeamAdminSettingsRequest {
                team_id: team(t),
                auto_run_controls: Some(pb::AutoRunControls {
                    enabled: true,
                    mcp_tool_allowlist: vec![format!("jira:*"), format!("s{i}:*")],
                    mcp_tool_blocklist: vec!["github:delete_*".into()],
                    ..Default::default()
                }),
                expected_revision: None,
            })
            .await
            .expect("admin write");
        acked.lock().unwrap()[t].insert(r.into_inner().settings.unwrap_or_default().revision);
        counters.writes.fetch_add(1, Ordering::Relaxed);
        i += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A member at its limits: command lists of long prefixes, about a megabyte a write.
async fn member_at_limits(addr: String, stop: Arc<AtomicBool>, counters: Arc<Counters>) {
    let mut users =
        UserSettingsServiceClient::with_interceptor(connect(&addr).await, Auth::new(TOKEN));
    let long = "x".repeat(toolgate::policy::MAX_PREFIX_LEN - 16);
    let mut i = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let mut s = user_settings(&team(0), "heavy");
        s.command_allowlist = (0..900).map(|j| format!("c{i}-{j} {long}")).collect();
        users
            .update_user_settings(pb::UpdateUserSettingsRequest {
                settings: Some(s),
                expected_revision: None,
                update_mask: None,
            })
            .await
            .expect("member write at the limits");
        counters.writes.fetch_add(1, Ordering::Relaxed);
        i += 1;
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

async fn decider(addr: String, teams: usize, stop: Arc<AtomicBool>, counters: Arc<Counters>) {
    let mut policy = PolicyServiceClient::with_interceptor(connect(&addr).await, Auth::new(TOKEN));
    let mut i = 0usize;
    while !stop.load(Ordering::Relaxed) {
        let calls = vec![
            mcp("jira", "create"),
            mcp("github", "delete_repo"),
            mcp("x", "y"),
        ];
        policy
            .evaluate_batch(pb::EvaluateBatchRequest {
                team_id: team(i % teams),
                user_id: format!("u{}", i % 500),
                calls,
                explain: false,
                agent: None,
                client: String::new(),
            })
            .await
            .expect("decision");
        counters.decisions.fetch_add(3, Ordering::Relaxed);
        i += 1;
    }
}

async fn watch(
    channel: Channel,
    team: String,
    user: &str,
) -> tonic::Streaming<pb::WatchPolicyResponse> {
    PolicyServiceClient::with_interceptor(channel, Auth::new(TOKEN))
        .watch_policy(pb::WatchPolicyRequest {
            team_id: team,
            user_id: user.into(),
            after_revision: None,
        })
        .await
        .expect("watch")
        .into_inner()
}

/// Watchers that join, read a few events, and leave; and slow ones that never read.
async fn churn(addr: String, teams: usize, stop: Arc<AtomicBool>, counters: Arc<Counters>) {
    let channel = connect(&addr).await;
    let mut slow = Vec::new();
    let mut i = 0usize;
    while !stop.load(Ordering::Relaxed) {
        let mut events = watch(channel.clone(), team(i % teams), "churn").await;
        counters.watches_opened.fetch_add(1, Ordering::Relaxed);
        for _ in 0..(i % 5) {
            if events.message().await.ok().flatten().is_none() {
                break;
            }
        }
        drop(events);
        // slow watchers: never read, held a while, replaced
        if i.is_multiple_of(10) {
            slow.push(watch(connect(&addr).await, team(0), "slow").await);
            if slow.len() > 20 {
                slow.remove(0);
            }
        }
        i += 1;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// How long a watcher may take, once the writers are done, to see every change that
/// was acknowledged: past it, what it has not seen counts as missed.
const SETTLE: Duration = Duration::from_secs(30);

/// The acknowledged revisions not sent, neither as a change nor under a snapshot (a
/// resync covers everything up to its revision).
fn unsent(acked: &BTreeSet<u64>, changes: &BTreeSet<u64>, snapshots: &[u64]) -> Vec<u64> {
    let newest_snapshot = snapshots.iter().copied().max().unwrap_or(0);
    acked
        .iter()
        .copied()
        .filter(|r| !changes.contains(r) && newest_snapshot < *r)
        .collect()
}

/// A watcher that keeps reading: the admin revisions it was sent, and the revisions
/// of the snapshots it was sent. Once the writers are done (`acked` is then whole)
/// it reads until it has seen every acknowledged change of its team, or for
/// [`SETTLE`].
async fn faithful(
    addr: String,
    t: usize,
    done: Arc<AtomicBool>,
    acked: Arc<std::sync::Mutex<Vec<BTreeSet<u64>>>>,
    counters: Arc<Counters>,
) -> (BTreeSet<u64>, Vec<u64>) {
    let mut events = watch(connect(&addr).await, team(t), "faithful").await;
    let (mut changes, mut snapshots) = (BTreeSet::new(), Vec::new());
    let mut settle_until = None;
    loop {
        if settle_until.is_none() && done.load(Ordering::Acquire) {
            settle_until = Some(Instant::now() + SETTLE);
        }
        if let Some(until) = settle_until
            && (unsent(&acked.lock().unwrap()[t], &changes, &snapshots).is_empty()
                || Instant::now() >= until)
        {
            return (changes, snapshots);
        }
        let next = tokio::time::timeout(Duration::from_millis(200), events.message()).await;
        match next {
            Ok(Ok(Some(e))) => match e.event {
                Some(Event::AdminSettings(_)) => {
                    changes.insert(e.revision);
                }
                Some(Event::Snapshot(s)) => {
                    if s.resync {
                        counters.resyncs.fetch_add(1, Ordering::Relaxed);
                    }
                    snapshots.push(e.revision);
                }
                _ => {}
            },
            Err(_) => {}
            Ok(other) => panic!("a faithful watcher's stream ended: {other:?}"),
        }
    }
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(&dir.path().join("data"));
    config.log.format = toolgate::config::LogFormat::Json;
    // warnings, and the "serving" line the harness waits for
    config.log.level = "warn,toolgate_server::server=info".into();
    config.watch.queue_bytes = 16 * 1024 * 1024;
    let config_path = dir.path().join("toolgate.yaml");
    std::fs::write(&config_path, serde_norway::to_string(&config).unwrap()).unwrap();
    let (mut child, addr) = spawn_binary(&config_path);
    let pid = child.id();

    let stop = Arc::new(AtomicBool::new(false));
    let counters = Arc::new(Counters::default());
    let acked = Arc::new(std::sync::Mutex::new(vec![BTreeSet::new(); args.teams]));
    let writers_done = Arc::new(AtomicBool::new(false));
    let mut faithful_tasks = Vec::new();
    for t in 0..args.teams {
        faithful_tasks.push(tokio::spawn(faithful(
            addr.clone(),
            t,
            writers_done.clone(),
            acked.clone(),
            counters.clone(),
        )));
    }
    let mut load = vec![
        tokio::spawn(admin_writer(
            addr.clone(),
            args.teams,
            stop.clone(),
            counters.clone(),
            acked.clone(),
        )),
        tokio::spawn(member_at_limits(
            addr.clone(),
            stop.clone(),
            counters.clone(),
        )),
        tokio::spawn(churn(
            addr.clone(),
            args.teams,
            stop.clone(),
            counters.clone(),
        )),
    ];
    for _ in 0..2 {
        load.push(tokio::spawn(decider(
            addr.clone(),
            args.teams,
            stop.clone(),
            counters.clone(),
        )));
    }

    let started = Instant::now();
    let mut samples = Vec::new();
    println!("| elapsed s | RSS MiB | decisions/s | writes/s | watches opened | resyncs |");
    println!("| ---: | ---: | ---: | ---: | ---: | ---: |");
    let (mut last_decisions, mut last_writes, mut last_at) = (0, 0, Instant::now());
    while started.elapsed() < Duration::from_secs(args.secs) {
        tokio::time::sleep(Duration::from_secs(args.sample_secs)).await;
        let rss = process_rss_bytes(pid) as f64 / 1_048_576.0;
        let (d, w) = (
            counters.decisions.load(Ordering::Relaxed),
            counters.writes.load(Ordering::Relaxed),
        );
        let dt = last_at.elapsed().as_secs_f64();
        println!(
            "| {} | {rss:.1} | {:.0} | {:.1} | {} | {} |",
            started.elapsed().as_secs(),
            (d - last_decisions) as f64 / dt,
            (w - last_writes) as f64 / dt,
            counters.watches_opened.load(Ordering::Relaxed),
            counters.resyncs.load(Ordering::Relaxed),
        );
        (last_decisions, last_writes, last_at) = (d, w, Instant::now());
        samples.push((started.elapsed().as_secs(), rss));
    }
    stop.store(true, Ordering::Relaxed);
    for task in load {
        task.await.expect("load task");
    }
    writers_done.store(true, Ordering::Release);
    let mut missed = 0usize;
    for (t, task) in faithful_tasks.into_iter().enumerate() {
        let (changes, snapshots) = task.await.expect("watcher");
        let lost = unsent(&acked.lock().unwrap()[t], &changes, &snapshots);
        if !lost.is_empty() {
            eprintln!(
                "team {}: revisions {lost:?} acknowledged, never sent within {SETTLE:?} (newest change sent {:?}, snapshots {snapshots:?})",
                team(t),
                changes.last()
            );
        }
        missed += lost.len();
    }
    child.kill().ok();
    child.wait().ok();

    let warm = samples.len() / 5;
    let baseline = samples.get(warm).map_or(0.0, |s| s.1);
    let peak = samples[warm..].iter().map(|s| s.1).fold(0.0, f64::max);
    let growth = peak - baseline;
    println!(
        "{}",
        json!({
            "bench": "soak",
            "secs": args.secs,
            "teams": args.teams,
            "rss_mib": samples.iter().map(|s| json!([s.0, (s.1 * 10.0).round() / 10.0])).collect::<Vec<_>>(),
            "rss_growth_after_warmup_mib": (growth * 10.0).round() / 10.0,
            "decisions": counters.decisions.load(Ordering::Relaxed),
            "writes": counters.writes.load(Ordering::Relaxed),
            "watches_opened": counters.watches_opened.load(Ordering::Relaxed),
            "faithful_resyncs": counters.resyncs.load(Ordering::Relaxed),
            "admin_changes_missed": missed,
        })
    );
    let mut failed = false;
    if growth > args.max_growth_mib {
        eprintln!(
            "resident memory grew {growth:.1} MiB after warm-up, more than --max-growth-mib {}",
            args.max_growth_mib
        );
        failed = true;
    }
    if missed > 0 {
        eprintln!("{missed} admin changes never reached a watcher that kept reading");
        failed = true;
    }
    if failed {
        std::process::exit(1);
    }
}
