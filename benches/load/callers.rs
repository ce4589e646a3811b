//! The load generator: callers of each RPC, the closed and paced loops that drive
//! them over the channels, and what each RPC did over a run.

use crate::support::*;
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tonic::transport::Channel;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;
use toolgate::proto::v1 as pb;

/// What one RPC did over a run.
pub(crate) struct Measured {
    pub(crate) requests: u64,
    pub(crate) errors: u64,
    pub(crate) elapsed: Duration,
    /// Latencies in nanoseconds, sorted.
    pub(crate) latencies: Vec<u64>,
    /// The server's CPU use over the run, in cores (2.0 is all of a 2-core machine).
    pub(crate) server_cores: f64,
}

impl Measured {
    pub(crate) fn rate(&self) -> f64 {
        self.requests as f64 / self.elapsed.as_secs_f64()
    }

    /// The server's CPU time per request, in µs (both cores count).
    pub(crate) fn server_us_per_request(&self) -> f64 {
        self.server_cores * 1e6 / self.rate()
    }

    pub(crate) fn percentile_us(&self, p: f64) -> f64 {
        if self.latencies.is_empty() {
            return 0.0;
        }
        let i = ((self.latencies.len() - 1) as f64 * p).round() as usize;
        self.latencies[i] as f64 / 1_000.0
    }

    pub(crate) fn json(&self) -> serde_json::Value {
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

    pub(crate) fn print(&self, name: &str) {
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
pub(crate) enum Rpc {
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
pub(crate) struct Caller {
    pub(crate) health: HealthClient<Channel>,
    pub(crate) policy:
        PolicyServiceClient<tonic::service::interceptor::InterceptedService<Channel, Auth>>,
    pub(crate) admin:
        AdminServiceClient<tonic::service::interceptor::InterceptedService<Channel, Auth>>,
    pub(crate) batch: Arc<pb::EvaluateBatchRequest>,
    pub(crate) team: String,
    pub(crate) writes: u64,
    /// The HTTP client and `http://ADDR`, for `EvaluateJson`.
    pub(crate) http: reqwest::Client,
    pub(crate) base: String,
}

impl Caller {
    pub(crate) fn new(
        channel: Channel,
        batch: Arc<pb::EvaluateBatchRequest>,
        worker: usize,
    ) -> Self {
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

    pub(crate) async fn call(&mut self, rpc: Rpc) -> bool {
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
pub(crate) async fn drive(
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
