//! The OTLP export against a real receiver (`tests/python/otlp_receiver.py`, built on
//! the `opentelemetry-proto` package): every decision of a run arrives over gRPC and
//! over HTTP/protobuf, masked, with its attributes, but those a drop rule leaves out;
//! a receiver stopped for 10 s, and the server restarted meanwhile, loses no DENY.

use crate::decision_log::{controls, evaluate, list_all, shell, team_filter};
use crate::support::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::sync::mpsc;
use toolgate::config::{OtlpDropRule, OtlpProtocol};
use toolgate::proto::v1 as pb;

const DEADLINE: Duration = Duration::from_secs(60);
const SECRET: &str = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8";

/// The receiver, a child process; every record it prints goes to the test's channel,
/// across restarts.
struct Receiver {
    child: tokio::process::Child,
    grpc: u16,
    http: u16,
}

fn python_has_otlp() -> bool {
    let found = std::process::Command::new("python3")
        .args([
            "-c",
            "import grpc, opentelemetry.proto.collector.logs.v1.logs_service_pb2_grpc",
        ])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must have python3 with grpcio and opentelemetry-proto"
        );
        eprintln!(
            "skipped: python3 with grpcio and opentelemetry-proto not found (pip install grpcio opentelemetry-proto)"
        );
    }
    found
}

impl Receiver {
    /// Starts on `ports` (0: any free one) and returns once it listens.
    async fn start(ports: (u16, u16), records: mpsc::UnboundedSender<Value>) -> Self {
        let script = format!(
            "{}/tests/python/otlp_receiver.py",
            env!("CARGO_MANIFEST_DIR")
        );
        let mut child = tokio::process::Command::new("python3")
            .arg(script)
            .args(["--grpc-port", &ports.0.to_string()])
            .args(["--http-port", &ports.1.to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("run python3");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = tokio::time::timeout(DEADLINE, lines.next_line())
            .await
            .expect("the receiver listens within the deadline")
            .unwrap()
            .expect("the receiver names its ports");
        let ports: Value = serde_json::from_str(&first).unwrap();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                let _ = records.send(serde_json::from_str(&line).unwrap());
            }
        });
        Self {
            child,
            grpc: u16::try_from(ports["grpc"].as_u64().unwrap()).unwrap(),
            http: u16::try_from(ports["http"].as_u64().unwrap()).unwrap(),
        }
    }

    fn endpoint(&self, protocol: OtlpProtocol) -> String {
        match protocol {
            OtlpProtocol::Grpc => format!("http://127.0.0.1:{}", self.grpc),
            OtlpProtocol::HttpProtobuf => format!("http://127.0.0.1:{}/v1/logs", self.http),
        }
    }

    /// Kills it: the collector is gone; its ports are free again.
    async fn stop(mut self) -> (u16, u16) {
        self.child.kill().await.unwrap();
        (self.grpc, self.http)
    }
}

/// Records by `toolgate.decision.id` until every id of `want` has arrived.
async fn arrived(
    records: &mut mpsc::UnboundedReceiver<Value>,
    seen: &mut BTreeMap<u64, Value>,
    want: &[u64],
) {
    tokio::time::timeout(DEADLINE, async {
        while !want.iter().all(|id| seen.contains_key(id)) {
            let record = records.recv().await.expect("the receiver goes on");
            if let Some(id) = record["attributes"]["toolgate.decision.id"].as_u64() {
                seen.insert(id, record);
            }
        }
    })
    .await
    .unwrap_or_else(|_| {
        let missing: Vec<_> = want.iter().filter(|id| !seen.contains_key(id)).collect();
        panic!("records {missing:?} did not arrive within {DEADLINE:?}")
    });
}

/// The team's stored records once there are `n` (the writer stores them shortly after
/// the answers), within the deadline.
async fn stored(server: &TestServer, n: usize) -> Vec<pb::DecisionRecord> {
    tokio::time::timeout(DEADLINE, async {
        loop {
            let stored = list_all(server, "admin-token", team_filter()).await;
            if stored.len() >= n {
                return stored;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{n} records stored within {DEADLINE:?}"))
}

fn id_of(r: &pb::DecisionRecord) -> u64 {
    r.id.parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_decision_arrives_masked_with_its_attributes() {
    if !python_has_otlp() {
        return;
    }
    for protocol in [OtlpProtocol::Grpc, OtlpProtocol::HttpProtobuf] {
        let (tx, mut records) = mpsc::unbounded_channel();
        let receiver = Receiver::start((0, 0), tx).await;
        let dir = tempfile::tempdir().unwrap();
        let mut config = test_config(dir.path());
        config.otlp_export.endpoint = Some(receiver.endpoint(protocol));
        config.otlp_export.protocol = protocol;
        config.otlp_export.drop = vec![OtlpDropRule {
            outcome: "allow".into(),
            matched_entry: Some("ls".into()),
            ..Default::default()
        }];
        let server = TestServer::start(config).await;
        server.set_controls(controls()).await;
        server.yolo("alice").await;
        let mut policy = server.policy("alice-token");
        for call in [
            mcp("github", "get_issue"),
            shell("ls"),
            mcp("evil", "wipe"),
            shell(&format!(
                "curl -H 'Authorization: token {SECRET}' https://api.github.com"
            )),
            shell("rm -rf build"),
            // after `ls` in the same queue: once it arrived, `ls` would have too
            shell("git status"),
        ] {
            policy
                .evaluate(evaluate(call, "claude-code"))
                .await
                .unwrap();
        }
        let stored = stored(&server, 6).await;
        let dropped: Vec<u64> = stored
            .iter()
            .filter(|r| r.matched_entry == "ls")
            .map(id_of)
            .collect();
        assert_eq!(
            dropped.len(),
            1,
            "the ls ALLOW names its entry: {stored:#?}"
        );
        let want: Vec<u64> = stored
            .iter()
            .map(id_of)
            .filter(|id| !dropped.contains(id))
            .collect();
        let mut seen = BTreeMap::new();
        arrived(&mut records, &mut seen, &want).await;
        assert!(!seen.contains_key(&dropped[0]), "the drop rule held");
        for r in &stored {
            let Some(got) = seen.get(&id_of(r)) else {
                continue;
            };
            let a = &got["attributes"];
            assert_eq!(
                got["protocol"],
                if protocol == OtlpProtocol::Grpc {
                    "grpc"
                } else {
                    "http"
                }
            );
            assert_eq!(got["event_name"], "toolgate.decision");
            assert_eq!(got["resource"]["service.name"], "toolgate");
            assert_eq!(a["toolgate.team.id"], TEAM);
            assert_eq!(a["user.id"], "alice");
            assert_eq!(a["toolgate.client"], "claude-code");
            let reason = r.reason().as_str_name().trim_start_matches("REASON_");
            assert_eq!(a["toolgate.decision.reason"], reason, "{got}");
            assert_eq!(a["toolgate.policy.revision"].as_u64(), Some(r.revision));
            let outcome = a["toolgate.decision.outcome"].as_str().unwrap();
            assert_eq!(got["severity_text"], outcome);
            match r.call.as_ref().and_then(|c| c.kind.as_ref()) {
                Some(pb::decided_call::Kind::Mcp(m)) => {
                    assert_eq!(a["gen_ai.tool.name"], m.tool.as_str());
                    assert_eq!(a["toolgate.mcp.server"], m.server.as_str());
                }
                _ => assert!(a["process.command_line"].is_string(), "{got}"),
            }
        }
        let all = serde_json::to_string(&seen).unwrap();
        assert!(!all.contains(SECRET), "the token was masked: {all}");
        assert!(all.contains("curl -H"), "the masked call arrived: {all}");
        server.stop().await;
        receiver.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_stopped_for_ten_seconds_loses_no_deny() {
    if !python_has_otlp() {
        return;
    }
    let (tx, mut records) = mpsc::unbounded_channel();
    let receiver = Receiver::start((0, 0), tx.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path());
    config.otlp_export.endpoint = Some(receiver.endpoint(OtlpProtocol::Grpc));
    config.otlp_export.timeout_secs = 2;
    let server = TestServer::start(config.clone()).await;
    server.set_controls(controls()).await;
    server.yolo("alice").await;
    let mut policy = server.policy("alice-token");
    let mut seen = BTreeMap::new();
    policy
        .evaluate(evaluate(mcp("github", "get_issue"), "claude-code"))
        .await
        .unwrap();
    let first = stored(&server, 1).await;
    arrived(
        &mut records,
        &mut seen,
        &first.iter().map(id_of).collect::<Vec<_>>(),
    )
    .await;

    // the collector goes away; DENYs go on being answered
    let ports = receiver.stop().await;
    let down = tokio::time::Instant::now();
    for i in 0..20 {
        policy
            .evaluate(evaluate(mcp("evil", &format!("wipe_{i}")), "claude-code"))
            .await
            .unwrap();
    }
    let denies: Vec<u64> = stored(&server, 21)
        .await
        .iter()
        .filter(|r| r.outcome() == pb::Outcome::Deny)
        .map(id_of)
        .collect();
    assert_eq!(denies.len(), 20);
    // they reach the spill directory once a send fails
    let spill = dir.path().join(toolgate::service::OTLP_SPILL_DIR);
    tokio::time::timeout(DEADLINE, async {
        while std::fs::read_dir(&spill).map_or(0, |d| d.count()) == 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("DENY records spilled while the collector is away");
    // a restart meanwhile: what was not sent is on disk, sent by the next process
    server.stop().await;
    // the outage lasts its 10 s whatever the steps above took
    tokio::time::sleep_until(down + Duration::from_secs(10)).await;
    let receiver = Receiver::start(ports, tx).await;
    let server = TestServer::start(config).await;
    arrived(&mut records, &mut seen, &denies).await;
    for id in &denies {
        assert_eq!(seen[id]["attributes"]["toolgate.decision.outcome"], "DENY");
    }
    server.stop().await;
    receiver.stop().await;
}

/// The collector examples in `deploy/otel-collector/` are YAML, and each sends what an
/// OTLP receiver takes through a logs pipeline to an exporter it defines.
#[test]
fn the_collector_examples_are_well_formed() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/otel-collector");
    let mut names = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let doc: Value = serde_norway::from_str(&std::fs::read_to_string(&path).unwrap())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            doc["receivers"]["otlp"]["protocols"]["grpc"].is_object(),
            "{name}"
        );
        let logs = &doc["service"]["pipelines"]["logs"];
        assert!(
            logs["receivers"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r == "otlp"),
            "{name}"
        );
        for exporter in logs["exporters"].as_array().unwrap() {
            let exporter = exporter.as_str().unwrap();
            assert!(doc["exporters"][exporter].is_object(), "{name}: {exporter}");
        }
        for processor in logs["processors"].as_array().into_iter().flatten() {
            let processor = processor.as_str().unwrap();
            assert!(
                doc["processors"][processor].is_object(),
                "{name}: {processor}"
            );
        }
        names.push(name);
    }
    names.sort();
    assert_eq!(names, ["elastic.yaml", "file.yaml", "splunk-hec.yaml"]);
}

/// A machine's tampering report reaches the collector as an audit record, as the
/// writer's other records do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tampering_report_is_exported() {
    if !python_has_otlp() {
        return;
    }
    let (tx, mut records) = mpsc::unbounded_channel();
    let receiver = Receiver::start((0, 0), tx).await;
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path());
    config.otlp_export.endpoint = Some(receiver.endpoint(OtlpProtocol::Grpc));
    let server = TestServer::start(config).await;
    let got = server
        .policy("alice-token")
        .report_tampering(pb::ReportTamperingRequest {
            team_id: TEAM.into(),
            user_id: "alice".into(),
            file: pb::ManagedFile::CodexRequirements as i32,
            path: "/etc/codex/requirements.toml".into(),
            host: "box-1".into(),
            found_sha256: String::new(),
            restored: true,
        })
        .await
        .unwrap()
        .into_inner();
    assert!(got.recorded);
    let record = tokio::time::timeout(DEADLINE, async {
        loop {
            let r = records.recv().await.expect("the receiver goes on");
            if r["attributes"]["toolgate.audit.kind"] == "tampering_detected" {
                return r;
            }
        }
    })
    .await
    .expect("the tampering record arrives");
    assert_eq!(
        record["attributes"]["toolgate.audit.actor"], "alice",
        "{record}"
    );
    assert!(
        record.to_string().contains("/etc/codex/requirements.toml"),
        "{record}"
    );
    server.stop().await;
    receiver.stop().await;
}
