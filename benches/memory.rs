//! Resident memory per allowlist entry: the real server binary, `--teams` teams
//! (default 5) each given `--entries` MCP allowlist entries (default 100,000) through
//! the API, the server's RSS read before and after.
//!
//! `cargo build --release && cargo bench -p toolgate-benches --bench memory -- [--teams 5] [--entries 100000]`
//!
//! Prints the figures as JSON; `bytes_per_entry` is (RSS after − RSS before) ÷
//! (teams × entries). Both readings follow a decision per team, so the compiled
//! lists the hub keeps are counted, and a settle of a few seconds, so freed request
//! buffers the allocator gives back are not.

#[path = "../tests/support/mod.rs"]
mod support;

use serde_json::json;
use std::time::Duration;
use support::*;
use tonic::transport::Channel;
use toolgate::proto::v1 as pb;

const TOKEN: &str = "operator-token";

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map_or(default, |v| v.parse().expect("a number"))
}

/// Entries as teams write them: a few hundred servers, distinct tools.
fn entries(team: usize, n: usize) -> Vec<String> {
    (0..n)
        .map(|i| format!("srv{}:tool_{team}_{i}", i % 300))
        .collect()
}

async fn decide(channel: &Channel, team: &str) {
    let mut policy = pb::policy_service_client::PolicyServiceClient::with_interceptor(
        channel.clone(),
        Auth::new(TOKEN),
    );
    policy
        .evaluate(pb::EvaluateRequest {
            team_id: team.into(),
            user_id: "alice".into(),
            call: Some(mcp("srv1", "tool_0_1")),
            explain: false,
            agent: None,
            client: String::new(),
            approval: None,
            tool_use_id: String::new(),
        })
        .await
        .expect("evaluate");
}

#[tokio::main]
async fn main() {
    let (teams, per_team) = (arg("--teams", 5), arg("--entries", 100_000));
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(&dir.path().join("data"));
    // JSON logs: the harness reads the serving line for the address
    config.log.format = toolgate::config::LogFormat::Json;
    config.log.level = "warn,toolgate_server::server=info".into();
    config.limits.max_request_bytes = 16 * 1024 * 1024;
    let config_path = dir.path().join("toolgate.yaml");
    std::fs::write(&config_path, serde_norway::to_string(&config).unwrap()).unwrap();
    let (child, addr) = spawn_binary(&config_path);
    let pid = child.id();
    let channel = Channel::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .expect("connect");
    let names: Vec<String> = (0..teams).map(|t| format!("mem{t}")).collect();
    for team in &names {
        decide(&channel, team).await;
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    let before = process_rss_bytes(pid);
    let mut admin = pb::admin_service_client::AdminServiceClient::with_interceptor(
        channel.clone(),
        Auth::new(TOKEN),
    )
    .max_encoding_message_size(64 * 1024 * 1024);
    for (t, team) in names.iter().enumerate() {
        admin
            .update_team_admin_settings(pb::UpdateTeamAdminSettingsRequest {
                team_id: team.clone(),
                auto_run_controls: Some(pb::AutoRunControls {
                    enabled: true,
                    mcp_tool_allowlist: entries(t, per_team),
                    ..Default::default()
                }),
                expected_revision: None,
            })
            .await
            .expect("write the allowlist");
        decide(&channel, team).await;
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    let after = process_rss_bytes(pid);
    let total = teams * per_team;
    #[allow(clippy::cast_precision_loss)] // figures for people
    let per_entry = (after.saturating_sub(before)) as f64 / total as f64;
    println!(
        "{}",
        json!({
            "teams": teams,
            "entries_per_team": per_team,
            "rss_before_bytes": before,
            "rss_after_bytes": after,
            "bytes_per_entry": (per_entry * 10.0).round() / 10.0,
        })
    );
    drop(child);
}
