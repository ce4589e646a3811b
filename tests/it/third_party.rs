//! Real third-party clients against the real server: Python grpcio by reflection.
//!
//! Needs `python3` with `grpcio` and `grpcio-reflection` (`.ci/run` installs them).
//! Without them the test says it was skipped, except under CI, where that fails.

use crate::support;

use serde_json::Value;
use support::*;

fn python_has_grpc() -> bool {
    std::process::Command::new("python3")
        .args(["-c", "import grpc, grpc_reflection"])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[tokio::test]
async fn python_grpcio_discovers_services_by_reflection_and_evaluates() {
    if !python_has_grpc() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must have python3 with grpcio and grpcio-reflection"
        );
        eprintln!(
            "skipped: python3 with grpcio and grpcio-reflection not found (pip install grpcio grpcio-reflection)"
        );
        return;
    }
    let (server, _dir) = start().await;
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/python/reflection_client.py"
    );
    let addr = server.addr.to_string();
    let output = tokio::process::Command::new("python3")
        .args([script, &addr, "operator-token"])
        .output()
        .await
        .expect("run python3");
    assert!(
        output.status.success(),
        "python client failed: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let seen: Value = serde_json::from_slice(&output.stdout).expect("one JSON line");
    let services: Vec<&str> = seen["services"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    for want in [
        "grpc.health.v1.Health",
        "grpc.reflection.v1alpha.ServerReflection",
        "toolgate.v1.AdminService",
        "toolgate.v1.PolicyService",
        "toolgate.v1.ServerInfoService",
        "toolgate.v1.UserSettingsService",
    ] {
        assert!(services.contains(&want), "{want} missing from {services:?}");
    }
    assert_eq!(seen["health"], "SERVING");
    assert_eq!(seen["outcome"], "OUTCOME_ALLOW");
    assert_eq!(seen["reason"], "REASON_ALLOWLISTED");
    assert_eq!(seen["matched_entry"], "github:*");
    assert_eq!(seen["unauthenticated_without_token"], true);
    server.stop().await;
}
