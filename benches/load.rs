//! gRPC load against the real server binary: requests/s and latency of `Evaluate`,
//! `EvaluateBatch` and durable admin writes, next to `grpc.health.v1.Health/Check`
//! on the same server in the same run (the transport's own floor), then `Evaluate`
//! at half of its maximum rate.
//!
//! `cargo bench -p toolgate-benches --bench load -- [--connections 4] [--concurrency 64] [--duration 10]
//! [--batch 100] [--entries 1000] [--postgres] [--pin] [--rates R,R…] [--metrics]
//! [--tls] [--evaluate-only] [--deny] [--http] [--no-decision-log] [--no-budgets] [--otlp]`
//!
//! The server runs as its own process (`toolgate serve`, the bench profile's build) on
//! a fresh data directory; `--postgres` puts its store on a throwaway PostgreSQL
//! cluster instead (needs root and the server binaries, as the PostgreSQL tests do).
//! `--pin` gives the server CPU 0 and this load generator CPU 1 (with `taskset`), so
//! neither steals the other's core: the way to read latency at a given rate on a
//! 2-core machine, where the generator otherwise competes with the server.
//! `--rates` runs only `Evaluate`, paced at each rate given, to read its latency.
//! `--metrics` turns the Prometheus endpoint on (what recording costs), `--tls` serves
//! TLS with a certificate made here (what the handshake and encryption cost), and
//! `--evaluate-only` runs only the closed-loop `Evaluate`: run it alternately with and
//! without a flag to compare on a busy machine. `--http` with `--evaluate-only` runs
//! the same `Evaluate` as JSON over HTTP/1.1 (the Connect protocol, one keep-alive
//! connection per worker) after the gRPC run: what the transcoding costs. `--deny`
//! with `--evaluate-only` makes the evaluated call one the team blocks, so every
//! call is a DENY and writes its record through the DENY journal: the DENY path's
//! cost, next to the same run without the flag.
//! The decision log is on, as by default; `--no-decision-log` turns it off (what
//! recording every decision costs). With it on, `--evaluate-only` then counts the
//! records the log holds against the decisions made, and with `--metrics` reads the
//! server's own counts of records written and shed from its metrics endpoint.
//! The per-principal and per-team write budgets are the defaults, which this one
//! principal's load passes within a second (past them, repeated DENYs are counted into
//! one record and other records shed); `--no-budgets` lifts them so that every
//! decision is written, as on a build from before the budgets.
//! `--otlp` turns the OTLP export on, to a null receiver in this process that takes
//! every request and counts its records (what exporting every decision costs).
//! The last line printed is the figures as JSON.

#[path = "../tests/support/mod.rs"]
mod support;

use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::*;
use tonic::transport::Channel;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;
use toolgate::proto::v1 as pb;

#[derive(Debug, Clone)]
struct Args {
    connections: usize,
    concurrency: usize,
    duration: Duration,
    batch: usize,
    entries: usize,
    postgres: bool,
    pin: bool,
    /// Only `Evaluate` at each of these rates (requests/s), nothing else.
    rates: Vec<f64>,
    metrics: bool,
    tls: bool,
    evaluate_only: bool,
    /// `--evaluate-only`'s call is one the team blocks: every answer a DENY.
    deny: bool,
    decision_log: bool,
    /// The decision log's write budgets lifted: every decision written.
    budgets: bool,
    http: bool,
    otlp: bool,
}

impl Args {
    fn parse() -> Self {
        let mut args = Self {
            connections: 4,
            concurrency: 64,
            duration: Duration::from_secs(10),
            batch: 100,
            entries: 1_000,
            postgres: false,
            pin: false,
            rates: Vec::new(),
            metrics: false,
            tls: false,
            evaluate_only: false,
            deny: false,
            decision_log: true,
            budgets: true,
            http: false,
            otlp: false,
        };
        let mut it = std::env::args().skip(1);
        while let Some(flag) = it.next() {
            let mut value = || -> usize {
                it.next()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or_else(|| panic!("{flag} takes a whole number"))
            };
            match flag.as_str() {
                "--connections" => args.connections = value().max(1),
                "--concurrency" => args.concurrency = value().max(1),
                "--duration" => args.duration = Duration::from_secs(value() as u64),
                "--batch" => args.batch = value().max(1),
                "--entries" => args.entries = value(),
                "--postgres" => args.postgres = true,
                "--pin" => args.pin = true,
                "--metrics" => args.metrics = true,
                "--tls" => args.tls = true,
                "--evaluate-only" => args.evaluate_only = true,
                "--deny" => args.deny = true,
                "--no-decision-log" => args.decision_log = false,
                "--no-budgets" => args.budgets = false,
                "--http" => args.http = true,
                "--otlp" => args.otlp = true,
                "--rates" => {
                    args.rates = it
                        .next()
                        .unwrap_or_default()
                        .split(',')
                        .map(|r| r.trim().parse().expect("--rates takes R[,R…] requests/s"))
                        .collect();
                }
                // cargo passes --bench to every bench binary
                _ => {}
            }
        }
        args
    }
}

/// What one RPC did over a run.
struct Measured {
    requests: u64,
    errors: u64,
    elapsed: Duration,
    /// Latencies in nanoseconds, sorted.
    latencies: Vec<u64>,
    /// The server's CPU use over the run, in cores (2.0 is all of a 2-core machine).
    server_cores: f64,
}

impl Measured {
    fn rate(&self) -> f64 {
        self.requests as f64 / self.elapsed.as_secs_f64()
    }

    fn percentile_us(&self, p: f64) -> f64 {
        if self.latencies.is_empty() {
            return 0.0;
        }
        let i = ((self.latencies.len() - 1) as f64 * p).round() as usize;
        self.latencies[i] as f64 / 1_000.0
    }

    fn json(&self) -> serde_json::Value {
        json!({
            "requests": self.requests,
            "errors": self.errors,
            "rps": self.rate().round(),
            "p50_us": self.percentile_us(0.5),
            "p99_us": self.percentile_us(0.99),
            "max_us": self.percentile_us(1.0),
            "server_cores": (self.server_cores * 100.0).round() / 100.0,
        })
    }

    fn print(&self, name: &str) {
        println!(
            "{name:<18} {:>10.0} req/s   p50 {:>8.1} µs   p99 {:>8.1} µs   max {:>9.1} µs   server {:.2} cores   ({} requests, {} errors)",
            self.rate(),
            self.percentile_us(0.5),
            self.percentile_us(0.99),
            self.percentile_us(1.0),
            self.server_cores,
            self.requests,
            self.errors
        );
    }
}

#[derive(Debug, Clone, Copy)]
enum Rpc {
    Health,
    Evaluate,
    /// `Evaluate` of a call the team blocks (`--deny`): a DENY, recorded.
    EvaluateDeny,
    /// `Evaluate` as Connect JSON over HTTP/1.1.
    EvaluateJson,
    EvaluateBatch,
    /// A durable admin write, each worker on a team of its own.
    Update,
}

/// One request of `rpc`; the worker's index picks its team for writes.
struct Caller {
    health: HealthClient<Channel>,
    policy: PolicyServiceClient<tonic::service::interceptor::InterceptedService<Channel, Auth>>,
    admin: AdminServiceClient<tonic::service::interceptor::InterceptedService<Channel, Auth>>,
    batch: Arc<pb::EvaluateBatchRequest>,
    team: String,
    writes: u64,
    /// The HTTP client and `http://ADDR`, for `EvaluateJson`.
    http: reqwest::Client,
    base: String,
}

impl Caller {
    fn new(channel: Channel, batch: Arc<pb::EvaluateBatchRequest>, worker: usize) -> Self {
        Self {
            health: HealthClient::new(channel.clone()),
            policy: PolicyServiceClient::with_interceptor(
                channel.clone(),
                Auth::new("service-token"),
            ),
            admin: AdminServiceClient::with_interceptor(channel, Auth::new("operator-token")),
            batch,
            team: format!("bench-writes-{worker}"),
            writes: 0,
            http: reqwest::Client::new(),
            base: String::new(),
        }
    }

    async fn call(&mut self, rpc: Rpc) -> bool {
        match rpc {
            Rpc::Health => self
                .health
                .check(HealthCheckRequest {
                    service: String::new(),
                })
                .await
                .is_ok(),
            Rpc::Evaluate => self
                .policy
                .evaluate(pb::EvaluateRequest {
                    approval: None,
                    team_id: TEAM.into(),
                    user_id: "alice".into(),
                    call: Some(mcp("jira", "create_ticket")),
                    explain: false,
                    agent: None,
                    client: String::new(),
                    tool_use_id: String::new(),
                })
                .await
                .is_ok_and(|r| {
                    r.get_ref()
                        .decision
                        .as_ref()
                        .is_some_and(|d| d.outcome == pb::Outcome::Allow as i32)
                }),
            Rpc::EvaluateDeny => self
                .policy
                .evaluate(pb::EvaluateRequest {
                    approval: None,
                    team_id: TEAM.into(),
                    user_id: "alice".into(),
                    call: Some(mcp("github", "delete_repo")),
                    explain: false,
                    agent: None,
                    client: String::new(),
                    tool_use_id: String::new(),
                })
                .await
                .is_ok_and(|r| {
                    r.get_ref()
                        .decision
                        .as_ref()
                        .is_some_and(|d| d.outcome == pb::Outcome::Deny as i32)
                }),
            Rpc::EvaluateJson => {
                let answer = self
                    .http
                    .post(format!(
                        "{}/toolgate.v1.PolicyService/Evaluate",
                        self.base
                    ))
                    .bearer_auth("service-token")
                    .header("content-type", "application/json")
                    .body(
                        r#"{"teamId":"acme","userId":"alice","call":{"mcp":{"server":"jira","tool":"create_ticket"}}}"#,
                    )
                    .send()
                    .await;
                match answer {
                    Ok(answer) if answer.status().is_success() => answer
                        .bytes()
                        .await
                        .is_ok_and(|b| b.windows(13).any(|w| w == b"OUTCOME_ALLOW")),
                    _ => false,
                }
            }
            Rpc::EvaluateBatch => self
                .policy
                .evaluate_batch((*self.batch).clone())
                .await
                .is_ok_and(|r| r.get_ref().decisions.len() == self.batch.calls.len()),
            Rpc::Update => {
                self.writes += 1;
                self.admin
                    .update_team_admin_settings(pb::UpdateTeamAdminSettingsRequest {
                        team_id: self.team.clone(),
                        auto_run_controls: Some(pb::AutoRunControls {
                            enabled: true,
                            mcp_tool_allowlist: vec![format!("jira:tool{}", self.writes)],
                            ..Default::default()
                        }),
                        expected_revision: Some(self.writes - 1),
                    })
                    .await
                    .is_ok()
            }
        }
    }
}

/// `concurrency` workers spread over `channels`. Closed loop (`rate: None`): each
/// sends its next request as soon as the last is answered. Open loop: a pacing thread
/// hands out send times at `rate` requests/s, round robin, and latency counts from
/// the intended send time, so a request that waited for a busy worker is charged for
/// the wait (no coordinated omission). A thread, not tokio's timer: the timer's 1 ms
/// ticks would send in bursts.
#[allow(clippy::too_many_arguments)]
async fn drive(
    base: &str,
    server_pid: u32,
    channels: &[Channel],
    concurrency: usize,
    duration: Duration,
    rpc: Rpc,
    batch: &Arc<pb::EvaluateBatchRequest>,
    rate: Option<f64>,
) -> Measured {
    let cpu_before = process_cpu_time(server_pid);
    let start = Instant::now();
    let deadline = start + duration;
    let mut workers = Vec::with_capacity(concurrency);
    let mut pacer_txs = Vec::new();
    for w in 0..concurrency {
        let mut caller = Caller::new(channels[w % channels.len()].clone(), batch.clone(), w);
        caller.base = base.to_owned();
        let mut paced = rate.map(|_| {
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Instant>();
            pacer_txs.push(tx);
            rx
        });
        workers.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(1 << 14);
            let mut errors = 0u64;
            loop {
                let sent = match paced.as_mut() {
                    Some(rx) => match rx.recv().await {
                        Some(at) => at,
                        None => break,
                    },
                    None => Instant::now(),
                };
                if sent >= deadline {
                    break;
                }
                if !caller.call(rpc).await {
                    errors += 1;
                }
                latencies.push(sent.elapsed().as_nanos() as u64);
            }
            (latencies, errors)
        }));
    }
    if let Some(rate) = rate {
        let interval = Duration::from_secs_f64(1.0 / rate);
        std::thread::spawn(move || {
            let mut next = start;
            let mut i = 0usize;
            while next < deadline {
                let now = Instant::now();
                while next <= now && next < deadline {
                    let _ = pacer_txs[i % pacer_txs.len()].send(next);
                    i += 1;
                    next += interval;
                }
                std::thread::sleep(next.saturating_duration_since(Instant::now()));
            }
            // dropping the senders ends the workers
        });
    }
    let mut latencies = Vec::new();
    let mut errors = 0;
    for w in workers {
        let (l, e) = w.await.expect("worker");
        latencies.extend(l);
        errors += e;
    }
    let elapsed = start.elapsed();
    let server_cores =
        (process_cpu_time(server_pid) - cpu_before).as_secs_f64() / elapsed.as_secs_f64();
    latencies.sort_unstable();
    Measured {
        requests: latencies.len() as u64,
        errors,
        elapsed,
        latencies,
        server_cores,
    }
}

/// Every thread of process `pid` (and those it starts later) onto one CPU.
fn pin(pid: u32, cpu: usize) {
    let status = std::process::Command::new("taskset")
        .args(["-a", "-c", "-p", &cpu.to_string(), &pid.to_string()])
        .stdout(std::process::Stdio::null())
        .status()
        .expect("taskset (util-linux) is needed for --pin");
    assert!(status.success(), "taskset -p {cpu} {pid} failed");
}

/// An admin allowlist of `n` entries (exact, `server:*`, `*:tool` and globs) that
/// lets `jira:*` auto-run, and alice in auto-run mode; with `deny`, `github:delete_repo`
/// blocked too (only then: the ALLOW runs stay as they were).
async fn seed(channel: &Channel, n: usize, deny: bool) {
    let mut allowlist: Vec<String> = (0..n.saturating_sub(1))
        .map(|i| match i % 10 {
            0 => format!("srv{i}:*"),
            1 => format!("*:tool{i}"),
            2 => format!("srv{i}:get_*"),
            _ => format!("srv{i}:tool{i}"),
        })
        .collect();
    allowlist.push("jira:*".into());
    AdminServiceClient::with_interceptor(channel.clone(), Auth::new("admin-token"))
        .update_team_admin_settings(pb::UpdateTeamAdminSettingsRequest {
            team_id: TEAM.into(),
            auto_run_controls: Some(pb::AutoRunControls {
                enabled: true,
                mcp_tool_allowlist: allowlist,
                mcp_tool_blocklist: if deny {
                    vec!["github:delete_repo".into()]
                } else {
                    Vec::new()
                },
                ..Default::default()
            }),
            expected_revision: None,
        })
        .await
        .expect("seed admin settings");
    UserSettingsServiceClient::with_interceptor(channel.clone(), Auth::new("admin-token"))
        .update_user_settings(pb::UpdateUserSettingsRequest {
            settings: Some(pb::UserSettings {
                use_yolo_mode: true,
                ..user_settings(TEAM, "alice")
            }),
            expected_revision: None,
            update_mask: None,
        })
        .await
        .expect("seed user settings");
}

/// A batch of `n` calls: allowed, unlisted and globbed tools, no denials (a DENY
/// writes an audit record, which is another benchmark).
fn batch_request(n: usize) -> pb::EvaluateBatchRequest {
    pb::EvaluateBatchRequest {
        team_id: TEAM.into(),
        user_id: "alice".into(),
        calls: (0..n)
            .map(|i| match i % 4 {
                0 => mcp("jira", &format!("tool{i}")),
                1 => mcp("github", "create_issue"),
                2 => mcp(&format!("srv{}", 10 * i + 2), "get_thing"),
                _ => mcp(
                    &format!("srv{}", 10 * i + 3),
                    &format!("tool{}", 10 * i + 3),
                ),
            })
            .collect(),
        explain: false,
        agent: None,
        client: String::new(),
    }
}

/// The records the decision log holds for the team, once the writer has caught up
/// with `decided` (or has stopped growing for a while: what is missing was shed).
async fn logged_records(channel: &Channel, decided: u64) -> u64 {
    let mut log =
        DecisionLogServiceClient::with_interceptor(channel.clone(), Auth::new("admin-token"));
    let count = |log: &mut DecisionLogServiceClient<_>| {
        let mut log = log.clone();
        async move {
            let mut n = 0u64;
            let mut page_token = String::new();
            loop {
                let page = log
                    .list_decisions(pb::ListDecisionsRequest {
                        filter: Some(pb::DecisionFilter {
                            team_id: TEAM.into(),
                            ..Default::default()
                        }),
                        page_size: 1000,
                        page_token,
                    })
                    .await
                    .expect("list decisions")
                    .into_inner();
                n += page.decisions.len() as u64;
                if page.next_page_token.is_empty() {
                    return n;
                }
                page_token = page.next_page_token;
            }
        }
    };
    let mut last = 0;
    loop {
        let n = count(&mut log).await;
        if n >= decided || (n == last && n > 0) {
            return n;
        }
        last = n;
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    let dir = tempfile::tempdir().unwrap();
    let cluster = if args.postgres {
        Some(support::pg::Cluster::start("load bench on postgresql").expect("postgresql"))
    } else {
        None
    };
    let mut config = test_config(&dir.path().join("data"));
    config.log.format = toolgate::config::LogFormat::Json;
    config.store.url = cluster.as_ref().map(support::pg::Cluster::url);
    config.limits.max_batch_calls = config.limits.max_batch_calls.max(args.batch);
    if args.metrics {
        // a port of its own, so the counts can be read afterwards: a bench may race
        // for a free port as a test may not
        let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        config.metrics.listen = Some(free.local_addr().unwrap().to_string());
    }
    config.decision_log.enabled = args.decision_log;
    if !args.budgets {
        let log = &mut config.decision_log;
        log.principal_records_per_minute = 1 << 50;
        log.principal_bytes_per_minute = 1 << 50;
        log.team_records_per_minute = 1 << 50;
        log.team_bytes_per_minute = 1 << 50;
    }
    let exported = Arc::new(std::sync::atomic::AtomicU64::new(0));
    if args.otlp {
        config.otlp_export.endpoint = Some(null_receiver(exported.clone()).await);
    }
    let ca = args.tls.then(|| serve_tls(&mut config, dir.path()));
    let config_path = dir.path().join("toolgate.yaml");
    std::fs::write(&config_path, serde_norway::to_string(&config).unwrap()).unwrap();
    let (mut child, addr) = spawn_binary(&config_path);
    if args.pin {
        pin(child.id(), 0);
        pin(std::process::id(), 1);
    }

    let mut channels = Vec::new();
    for _ in 0..args.connections {
        // one TCP connection each: a Channel built by connect() never pools
        let scheme = if ca.is_some() { "https" } else { "http" };
        let mut endpoint = Channel::from_shared(format!("{scheme}://{addr}"))
            .unwrap()
            .tcp_nodelay(true);
        if let Some(ca) = &ca {
            endpoint = endpoint
                .tls_config(
                    tonic::transport::ClientTlsConfig::new()
                        .ca_certificate(tonic::transport::Certificate::from_pem(ca))
                        .domain_name("localhost"),
                )
                .unwrap();
        }
        let channel = endpoint.connect().await.expect("connect");
        channels.push(channel);
    }
    seed(&channels[0], args.entries, args.deny).await;
    let batch = Arc::new(batch_request(args.batch));

    println!(
        "load: {} connections, {} concurrent requests, {:?} per run, store {}, {} admin allowlist entries{}{}{}{}",
        args.connections,
        args.concurrency,
        args.duration,
        if args.postgres {
            "postgresql"
        } else {
            "sqlite"
        },
        args.entries,
        if args.pin {
            ", server on CPU 0 and load on CPU 1"
        } else {
            ""
        },
        if args.metrics { ", metrics on" } else { "" },
        if args.tls { ", TLS" } else { "" },
        if args.decision_log {
            ", decision log on"
        } else {
            ", decision log off"
        },
    );
    // a short warm-up so connections, caches and the allocator are settled
    let server_pid = child.id();
    let base = format!("http://{addr}");
    assert!(
        !args.deny || args.evaluate_only,
        "--deny measures the closed-loop Evaluate: add --evaluate-only"
    );
    let evaluate = if args.deny {
        Rpc::EvaluateDeny
    } else {
        Rpc::Evaluate
    };
    assert!(
        !(args.http && args.tls),
        "--http measures plaintext HTTP: leave out --tls"
    );
    let warm_up = drive(
        &base,
        server_pid,
        &channels,
        args.concurrency,
        Duration::from_secs(1),
        evaluate,
        &batch,
        None,
    )
    .await;
    let run = |rpc, rate| {
        drive(
            &base,
            server_pid,
            &channels,
            args.concurrency,
            args.duration,
            rpc,
            &batch,
            rate,
        )
    };
    if args.evaluate_only {
        let m = run(evaluate, None).await;
        m.print(if args.deny {
            "evaluate (DENY)"
        } else {
            "evaluate"
        });
        let json_run = if args.http {
            let j = run(Rpc::EvaluateJson, None).await;
            j.print("evaluate as JSON over HTTP/1.1");
            Some(j.json())
        } else {
            None
        };
        let log = if args.decision_log {
            let decided = warm_up.requests + m.requests;
            let logged = logged_records(&channels[0], decided).await;
            println!(
                "decision log: {logged} of {decided} decisions recorded ({} missing), {:.0} records/s during the run",
                decided - logged,
                m.requests as f64 / m.elapsed.as_secs_f64()
            );
            let mut figures =
                json!({"decided": decided, "logged": logged, "missing": decided - logged});
            if let Some(addr) = &config.metrics.listen {
                let text = scrape(addr).await;
                let written = counter(&text, "toolgate_decision_log_records_written_total");
                let shed = counter(&text, "toolgate_decision_log_records_shed_total");
                println!("decision log, the server's counts: {written} written, {shed} shed");
                figures["written"] = json!(written);
                figures["shed"] = json!(shed);
            }
            figures
        } else {
            serde_json::Value::Null
        };
        let exported = exported.load(std::sync::atomic::Ordering::Relaxed);
        if args.otlp {
            println!("OTLP export: {exported} records reached the null receiver");
        }
        println!(
            "{}",
            json!({"bench": "load", "metrics": args.metrics, "tls": args.tls, "deny": args.deny,
                   "decision_log": args.decision_log, "budgets": args.budgets, "otlp": args.otlp,
                   "exported": exported, "evaluate": m.json(), "evaluate_json": json_run, "log": log})
        );
        child.kill().ok();
        child.wait().ok();
        return;
    }
    if !args.rates.is_empty() {
        let mut results = Vec::new();
        for &rate in &args.rates {
            let m = run(Rpc::Evaluate, Some(rate)).await;
            m.print(&format!("evaluate at {rate:.0}/s"));
            let mut figures = m.json();
            figures["target_rps"] = json!(rate);
            results.push(figures);
        }
        println!(
            "{}",
            json!({"bench": "load", "pinned": args.pin, "evaluate_at_rates": results})
        );
        child.kill().ok();
        child.wait().ok();
        return;
    }
    let health = run(Rpc::Health, None).await;
    health.print("health/check");
    let evaluate = run(Rpc::Evaluate, None).await;
    evaluate.print("evaluate");
    let batched = run(Rpc::EvaluateBatch, None).await;
    batched.print(&format!("evaluate_batch×{}", args.batch));
    let half_rate = evaluate.rate() / 2.0;
    let half = run(Rpc::Evaluate, Some(half_rate)).await;
    half.print("evaluate at ½ max");
    let writes = run(Rpc::Update, None).await;
    writes.print("admin update");

    let ratio = evaluate.rate() / health.rate();
    println!(
        "evaluate runs at {:.0}% of the health-check floor; {:.0} decisions/s batched",
        ratio * 100.0,
        batched.rate() * args.batch as f64
    );
    let mut batch_json = batched.json();
    batch_json["decisions_per_s"] = json!((batched.rate() * args.batch as f64).round());
    let mut half_json = half.json();
    half_json["target_rps"] = json!(half_rate.round());
    println!(
        "{}",
        json!({
            "bench": "load",
            "store": if args.postgres { "postgresql" } else { "sqlite" },
            "pinned": args.pin,
            "metrics": args.metrics,
            "tls": args.tls,
            "connections": args.connections,
            "concurrency": args.concurrency,
            "duration_s": args.duration.as_secs(),
            "entries": args.entries,
            "batch": args.batch,
            "health": health.json(),
            "evaluate": evaluate.json(),
            "evaluate_batch": batch_json,
            "evaluate_at_half_max": half_json,
            "admin_update": writes.json(),
            "evaluate_vs_health": (ratio * 100.0).round() / 100.0,
        })
    );
    child.kill().ok();
    child.wait().ok();
}

/// The metrics endpoint's text.
async fn scrape(addr: &str) -> String {
    reqwest::get(format!("http://{addr}/metrics"))
        .await
        .expect("scrape the metrics")
        .text()
        .await
        .expect("the metrics' text")
}

/// A counter's value in the metrics' text (0 when it is not there: never counted).
fn counter(text: &str, name: &str) -> u64 {
    text.lines()
        .find(|l| l.starts_with(name) && l[name.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .map_or(0, |v| v as u64)
}

/// A self-signed certificate for `localhost` served by the listener; returns its PEM
/// for the clients to trust.
fn serve_tls(config: &mut toolgate::config::Config, dir: &std::path::Path) -> String {
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["localhost".to_owned()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let (cert_path, key_path) = (dir.join("server.pem"), dir.join("server.key"));
    std::fs::write(&cert_path, cert.pem()).unwrap();
    std::fs::write(&key_path, key.serialize_pem()).unwrap();
    config.tls.cert = Some(cert_path);
    config.tls.key = Some(key_path);
    cert.pem()
}

/// An OTLP logs receiver that takes every request and counts its records; its
/// endpoint.
async fn null_receiver(count: Arc<std::sync::atomic::AtomicU64>) -> String {
    use opentelemetry_proto::tonic::collector::logs::v1::logs_service_server::{
        LogsService, LogsServiceServer,
    };
    use opentelemetry_proto::tonic::collector::logs::v1::{
        ExportLogsServiceRequest, ExportLogsServiceResponse,
    };
    struct Null(Arc<std::sync::atomic::AtomicU64>);
    #[tonic::async_trait]
    impl LogsService for Null {
        async fn export(
            &self,
            request: tonic::Request<ExportLogsServiceRequest>,
        ) -> Result<tonic::Response<ExportLogsServiceResponse>, tonic::Status> {
            let n: usize = request
                .into_inner()
                .resource_logs
                .iter()
                .flat_map(|r| &r.scope_logs)
                .map(|s| s.log_records.len())
                .sum();
            self.0
                .fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
            Ok(tonic::Response::new(ExportLogsServiceResponse::default()))
        }
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(LogsServiceServer::new(Null(count)))
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
    );
    format!("http://{addr}")
}
