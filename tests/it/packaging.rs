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

/// `args` as `toolgate` reads them: every flag known to `sync` (a usage error exits 2).
/// The server given is one nobody listens on, so it ends at once, refused.
fn sync_accepts(args: &[String]) {
    assert_eq!(args.first().map(String::as_str), Some("sync"), "{args:?}");
    let root = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolgate"));
    for (key, _) in std::env::vars().filter(|(k, _)| k.starts_with("TOOLGATE_")) {
        cmd.env_remove(key);
    }
    let out = cmd
        .args(args)
        .args([
            "--once",
            "--server",
            "http://127.0.0.1:9",
            "--timeout-ms",
            "2000",
        ])
        .arg("--root")
        .arg(root.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(
        !stderr.contains("unexpected argument"),
        "{args:?}: {stderr}"
    );
}

/// The macOS launchd daemon reads as a property list (Python's `plistlib`, as launchd's
/// format), runs `toolgate sync` as root at load and again when it stops, with flags
/// `sync` takes and the macOS places of Gemini CLI's and Cursor's files.
#[test]
fn the_launchd_daemon_is_a_property_list_running_sync() {
    let file = deploy("launchd/dev.toolgate.sync.plist");
    let out = Command::new("python3")
        .args([
            "-c",
            "import json, plistlib, sys; print(json.dumps(plistlib.load(open(sys.argv[1], 'rb'))))",
        ])
        .arg(&file)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plist: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(plist["Label"], "dev.toolgate.sync");
    assert_eq!(plist["UserName"], "root");
    assert_eq!(plist["RunAtLoad"], true);
    assert_eq!(plist["KeepAlive"], true);
    assert_eq!(plist["Umask"], 0o022);
    let args: Vec<String> = plist["ProgramArguments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(args[0], "/usr/local/bin/toolgate");
    for place in [
        "/Library/Application Support/GeminiCli/policies/toolgate.toml",
        "/Library/Application Support/GeminiCli/settings.json",
        "/Library/Application Support/Cursor/hooks.json",
    ] {
        assert!(args.iter().any(|a| a == place), "{place} in {args:?}");
    }
    sync_accepts(&args[1..]);
}

/// The Windows scheduled task is Task Scheduler XML (parsed by Python's ElementTree):
/// SYSTEM at boot, restarted on failure, no time limit, running `toolgate sync` with
/// flags it takes and the Windows places of Gemini CLI's and Cursor's files.
#[test]
fn the_windows_scheduled_task_is_task_xml_running_sync() {
    let file = deploy("windows/toolgate-sync.xml");
    let script = r#"
import json, sys, xml.etree.ElementTree as ET
ns = {"t": "http://schemas.microsoft.com/windows/2004/02/mit/task"}
root = ET.parse(sys.argv[1]).getroot()
def text(path):
    node = root.find(path, ns)
    return None if node is None else node.text
print(json.dumps({
    "tag": root.tag,
    "user": text("t:Principals/t:Principal/t:UserId"),
    "run_level": text("t:Principals/t:Principal/t:RunLevel"),
    "boot": root.find("t:Triggers/t:BootTrigger", ns) is not None,
    "time_limit": text("t:Settings/t:ExecutionTimeLimit"),
    "restart_every": text("t:Settings/t:RestartOnFailure/t:Interval"),
    "command": text("t:Actions/t:Exec/t:Command"),
    "arguments": text("t:Actions/t:Exec/t:Arguments"),
}))
"#;
    let out = Command::new("python3")
        .args(["-c", script])
        .arg(&file)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let task: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        task["tag"],
        "{http://schemas.microsoft.com/windows/2004/02/mit/task}Task"
    );
    assert_eq!(task["user"], "S-1-5-18", "SYSTEM: {task}");
    assert_eq!(task["run_level"], "HighestAvailable");
    assert_eq!(task["boot"], true);
    assert_eq!(task["time_limit"], "PT0S", "no time limit: {task}");
    assert_eq!(task["restart_every"], "PT1M");
    assert_eq!(task["command"], r"C:\Program Files\toolgate\toolgate.exe");
    // Windows' own splitting of the line: double quotes group, nothing else is special
    let line = task["arguments"].as_str().unwrap();
    let mut args = Vec::new();
    let (mut word, mut quoted, mut any) = (String::new(), false, false);
    for c in line.chars() {
        match c {
            '"' => (quoted, any) = (!quoted, true),
            ' ' if !quoted => {
                if any {
                    args.push(std::mem::take(&mut word));
                }
                any = false;
            }
            c => {
                word.push(c);
                any = true;
            }
        }
    }
    if any {
        args.push(word);
    }
    for place in [
        r"C:\ProgramData\gemini-cli\policies\toolgate.toml",
        r"C:\ProgramData\gemini-cli\settings.json",
        r"C:\ProgramData\Cursor\hooks.json",
    ] {
        assert!(args.iter().any(|a| a == place), "{place} in {args:?}");
    }
    sync_accepts(&args);
}
