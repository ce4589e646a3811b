//! The deployment files: the Kubernetes manifests validate against the API schema
//! (`kubernetes-validate`, installed by .ci/run), the configuration they carry loads,
//! and the Grafana dashboard is JSON that queries toolgate's metrics.
//!
//! Without `kubernetes-validate` the schema check says it was skipped, except in CI.

use std::path::{Path, PathBuf};
use std::process::Command;
use toolgate::config::{CliOverrides, Config};

fn deploy(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("deploy")
        .join(path)
}

fn manifests() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(deploy("kubernetes"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
}

fn manifest(kind: &str) -> serde_json::Value {
    for file in manifests() {
        let value: serde_json::Value =
            serde_norway::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        if value["kind"] == kind {
            return value;
        }
    }
    panic!("no {kind} in deploy/kubernetes")
}

#[test]
fn kubernetes_manifests_validate_against_the_api_schema() {
    let files = manifests();
    assert!(files.len() >= 5, "{files:?}");
    let run = Command::new("kubernetes-validate")
        .arg("--strict")
        .args(&files)
        .output();
    let out = match run {
        Ok(out) => out,
        Err(e) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("CI=true but kubernetes-validate cannot run ({e}): .ci/run installs it")
        }
        Err(e) => {
            eprintln!(
                "skipped: kubernetes-validate cannot run ({e}): pip install kubernetes-validate"
            );
            return;
        }
    };
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert_eq!(
        text.matches(" passed for resource ").count(),
        files.len(),
        "{text}"
    );
    for kind in [
        "deployment",
        "service",
        "poddisruptionbudget",
        "configmap",
        "secret",
    ] {
        assert!(
            text.contains(&format!("resource {kind}/")),
            "{kind} missing: {text}"
        );
    }
}

#[test]
fn the_config_map_and_secret_make_a_valid_configuration() {
    let config_map = manifest("ConfigMap");
    let secret = manifest("Secret");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("toolgate.yaml");
    std::fs::write(&file, config_map["data"]["toolgate.yaml"].as_str().unwrap()).unwrap();
    let env = |placeholder: &str| -> Vec<(String, String)> {
        secret["stringData"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    v.as_str().unwrap().replace("REPLACE-ME", placeholder),
                )
            })
            .collect()
    };
    // as shipped, no token is usable: the server refuses to start until it is replaced
    let err = Config::load(Some(&file), env("REPLACE-ME"), &CliOverrides::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("sha256"), "{err}");
    let hash = toolgate::auth::hash_token("a-token-of-ours");
    let config = Config::load(Some(&file), env(&hash), &CliOverrides::default())
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(config.auth.tokens.len(), 1, "{config:?}");
    assert!(config.postgres_url().is_some());
    // the probes reach the port the server listens on
    let port = config.listen_addr().port();
    let container = &manifest("Deployment")["spec"]["template"]["spec"]["containers"][0];
    for probe in ["readinessProbe", "livenessProbe", "startupProbe"] {
        assert_eq!(container[probe]["grpc"]["port"], port, "{probe}");
    }
    assert_eq!(container["ports"][0]["containerPort"], port);
    // and the metrics port is the one the configuration serves
    let metrics: std::net::SocketAddr = config.metrics.listen.unwrap().parse().unwrap();
    assert_eq!(container["ports"][1]["containerPort"], metrics.port());
}

#[test]
fn the_dashboard_queries_toolgate_metrics() {
    let text = std::fs::read_to_string(deploy("grafana/toolgate-dashboard.json")).unwrap();
    let dashboard: serde_json::Value = serde_json::from_str(&text).unwrap();
    let panels = dashboard["panels"].as_array().unwrap();
    assert!(panels.len() >= 10);
    for panel in panels {
        for target in panel["targets"].as_array().unwrap() {
            let expr = target["expr"].as_str().unwrap();
            assert!(expr.contains("toolgate_"), "{expr}");
        }
    }
}

#[test]
fn the_release_profile_ships_no_debug_info() {
    let cargo: toml::Value = toml::from_str(
        &std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml")).unwrap(),
    )
    .unwrap();
    let release = &cargo["profile"]["release"];
    assert_eq!(release["debug"].as_bool(), Some(false));
    assert_eq!(release["strip"].as_str(), Some("symbols"));
    // profiles and benches keep line tables
    assert_eq!(cargo["profile"]["profiling"]["debug"].as_integer(), Some(1));
    assert_eq!(cargo["profile"]["bench"]["debug"].as_integer(), Some(1));
}

/// The compose configuration carries no usable token and, published on loopback only,
/// loads once its placeholders are replaced.
#[test]
fn the_compose_configuration_has_placeholders_not_tokens() {
    let text = std::fs::read_to_string(deploy("toolgate.yaml")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("toolgate.yaml");
    std::fs::write(&file, &text).unwrap();
    let err = Config::load(Some(&file), Vec::new(), &CliOverrides::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("sha256"), "{err}");
    let hash = toolgate::auth::hash_token("a-token-of-ours");
    std::fs::write(&file, text.replace("REPLACE-ME", &hash)).unwrap();
    Config::load(Some(&file), Vec::new(), &CliOverrides::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let compose = std::fs::read_to_string(deploy("compose.yaml")).unwrap();
    for line in compose.lines().filter(|l| l.contains("ports:")) {
        assert!(
            line.contains("127.0.0.1:"),
            "published beyond loopback: {line}"
        );
    }
}

/// The systemd recipe's configuration listens on loopback and is valid as written.
#[test]
fn the_systemd_configuration_is_valid_and_on_loopback() {
    let file = deploy("systemd/toolgate.yaml");
    let config = Config::load(Some(&file), Vec::new(), &CliOverrides::default())
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(config.listen_addr().ip().is_loopback());
}
