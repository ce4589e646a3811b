//! gRPC load against the real server binary: requests/s and latency of `Evaluate`,
//! `EvaluateBatch` and durable admin writes, next to `grpc.health.v1.Health/Check`
//! on the same server in the same run (the transport's own floor), then `Evaluate`
//! at half of its maximum rate.
//!
//! `cargo bench -p toolgate-benches --bench load -- [--connections 4] [--concurrency 64] [--duration 10]
//! [--batch 100] [--entries 1000] [--postgres] [--pin] [--rates R,R…] [--metrics]
//! [--tls] [--evaluate-only] [--deny] [--http] [--no-decision-log] [--no-budgets] [--otlp]
//! [--floor ROUNDS]`
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
//! `--floor ROUNDS` runs only the health check and `Evaluate`, alternately, the order
//! swapped each round, and reads each one's server CPU per request: `Evaluate`'s cost
//! against the transport's floor (health's µs over Evaluate's, 1.0 = no dearer).
//! The last line printed is the figures as JSON.

#[path = "../tests/support/mod.rs"]
mod support;

#[path = "load/callers.rs"]
mod callers;
#[path = "load/setup.rs"]
mod setup;

use callers::*;
use serde_json::json;
use setup::*;
use std::sync::Arc;
use std::time::Duration;
use support::*;
use tonic::transport::Channel;

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
    /// Rounds of health against `Evaluate`, nothing else (0: not this mode).
    floor: usize,
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
            floor: 0,
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
                "--floor" => args.floor = value().max(1),
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
    if args.floor > 0 {
        let mut rounds = Vec::new();
        for round in 0..args.floor {
            let order = if round % 2 == 0 {
                [Rpc::Health, evaluate]
            } else {
                [evaluate, Rpc::Health]
            };
            let mut figures = [None, None];
            for rpc in order {
                let m = run(rpc, None).await;
                let slot = usize::from(!matches!(rpc, Rpc::Health));
                figures[slot] = Some(m);
            }
            let [Some(health), Some(eval)] = figures else {
                unreachable!("both ran")
            };
            let (h, e) = (health.server_us_per_request(), eval.server_us_per_request());
            println!(
                "round {}: health {:.0}/s {h:.1} µs, evaluate {:.0}/s {e:.1} µs of server CPU per request: {:.3}",
                round + 1,
                health.rate(),
                eval.rate(),
                h / e
            );
            rounds.push(json!({"health": health.json(), "evaluate": eval.json(),
                               "health_us": h, "evaluate_us": e, "ratio": h / e}));
        }
        let mut ratios: Vec<f64> = rounds.iter().filter_map(|r| r["ratio"].as_f64()).collect();
        ratios.sort_by(f64::total_cmp);
        let median = ratios[ratios.len() / 2];
        println!(
            "evaluate against health, server CPU per request: median {median:.3} over {} rounds (min {:.3}, max {:.3})",
            ratios.len(),
            ratios[0],
            ratios[ratios.len() - 1]
        );
        println!(
            "{}",
            json!({"bench": "load", "floor": rounds, "median_ratio": median,
                   "decision_log": args.decision_log, "pinned": args.pin})
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
