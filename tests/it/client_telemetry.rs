//! The agent clients' own telemetry: OTLP/HTTP logs at `POST /v1/logs`, their
//! `claude_code.tool_decision` events joined to toolgate's records of the same calls
//! by `tool_use_id` (each member's only to its own), and the hostile requests of
//! `tests/data/client_telemetry.json`.

use crate::decision_log::{controls, list_all, shell, team_filter};
use crate::http::{Answer, send};
use crate::support::*;
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs};
use prost::Message as _;
use serde_json::Value;
use std::time::Duration;
use toolgate::proto::v1 as pb;

const DEADLINE: Duration = Duration::from_secs(30);

fn attribute(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(value.into())),
        }),
        ..Default::default()
    }
}

/// An export of `records`, as Claude Code's exporter sends it.
fn export(records: Vec<LogRecord>) -> Vec<u8> {
    ExportLogsServiceRequest {
        resource_logs: vec![ResourceLogs {
            scope_logs: vec![ScopeLogs {
                log_records: records,
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
    .encode_to_vec()
}

/// Claude Code's `tool_decision` event for the call `tool_use_id`, with the
/// decision of the table's `decision`.
pub(crate) fn tool_decision(tool_use_id: &str, decision: &Value) -> LogRecord {
    let text = |k: &str| decision[k].as_str().unwrap_or_default();
    LogRecord {
        event_name: "claude_code.tool_decision".into(),
        body: Some(AnyValue {
            value: Some(any_value::Value::StringValue(
                "claude_code.tool_decision".into(),
            )),
        }),
        attributes: vec![
            attribute("event.name", "tool_decision"),
            attribute("decision", text("decision")),
            attribute("source", text("source")),
            attribute("tool_name", text("tool_name")),
            attribute("tool_use_id", tool_use_id),
            attribute("tool_parameters", "{\"command\":\"git status\"}"),
        ],
        ..Default::default()
    }
}

/// A case's body, as its `body` says.
fn body(spec: &Value, decision: &Value) -> Vec<u8> {
    if let Some(id) = spec["decision"].as_str() {
        return export(vec![tool_decision(id, decision)]);
    }
    if let Some(n) = spec["unknown_events"].as_u64() {
        let other = LogRecord {
            event_name: "claude_code.api_request".into(),
            attributes: vec![attribute("model", "claude")],
            ..Default::default()
        };
        return export(vec![other; n as usize]);
    }
    if spec["oversized"].as_bool() == Some(true) {
        return vec![0; 4 * 1024 * 1024 + 1];
    }
    if spec["gzip_bomb"].as_bool() == Some(true) {
        // a gzip header and a run of compressed zeros: never inflated
        let mut bomb = vec![0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0, 0x03];
        bomb.extend(std::iter::repeat_n(0xed, 4096));
        return bomb;
    }
    if let Some(hex) = spec["hex"].as_str() {
        return (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect();
    }
    spec["text"].as_str().expect("a body").as_bytes().to_vec()
}

/// POSTs an OTLP body to `/v1/logs` (or the case's `path`) as a case says.
async fn send_case(server: &TestServer, case: &Value, body: Vec<u8>) -> Answer {
    let auth = case["token"].as_str().map(|t| format!("Bearer {t}"));
    let mut headers = Vec::new();
    if let Some(auth) = &auth {
        headers.push(("authorization", auth.as_str()));
    }
    if let Some(ct) = case["content_type"].as_str() {
        headers.push(("content-type", ct));
    }
    if let Some(encoding) = case["encoding"].as_str() {
        headers.push(("content-encoding", encoding));
    }
    let method = match case["method"].as_str() {
        Some("GET") => reqwest::Method::GET,
        _ => reqwest::Method::POST,
    };
    let path = case["path"].as_str().unwrap_or("/v1/logs");
    send(server, method, path, &headers, body).await
}

/// The team's records, once `n` are listed.
async fn records(server: &TestServer, n: usize) -> Vec<pb::DecisionRecord> {
    let start = tokio::time::Instant::now();
    loop {
        let all = list_all(server, "admin-token", team_filter()).await;
        if all.len() >= n {
            return all;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "{n} records within {DEADLINE:?}"
        );
        // the log's writer flushes on its own timer
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// alice's and bob's calls, each with the client's id.
async fn decide_calls(server: &TestServer) {
    server.set_controls(controls()).await;
    for (token, user, id) in [
        ("alice-token", "alice", "toolu_alice_1"),
        ("bob-token", "bob", "toolu_bob_1"),
    ] {
        server
            .policy(token)
            .evaluate(pb::EvaluateRequest {
                team_id: TEAM.into(),
                user_id: user.into(),
                call: Some(shell("rm -rf build")),
                client: "claude-code".into(),
                tool_use_id: id.into(),
                ..Default::default()
            })
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn client_decisions_join_their_own_calls_and_hostile_exports_are_refused() {
    let table: Value = serde_json::from_str(include_str!("../data/client_telemetry.json")).unwrap();
    let (server, _dir) = start().await;
    decide_calls(&server).await;
    let before = records(&server, 2).await;
    let ids: Vec<&str> = before.iter().map(|r| r.tool_use_id.as_str()).collect();
    assert!(
        ids.contains(&"toolu_alice_1") && ids.contains(&"toolu_bob_1"),
        "{ids:?}"
    );
    assert!(before.iter().all(|r| r.client_decision.is_none()));

    let decision = &table["decision"];
    for case in table["cases"].as_array().unwrap() {
        let name = case["case"].as_str().unwrap();
        let answer = send_case(&server, case, body(&case["body"], decision)).await;
        assert_eq!(
            u64::from(answer.status),
            case["status"].as_u64().unwrap(),
            "{name}: {}",
            String::from_utf8_lossy(&answer.body)
        );
        let content_type = answer.headers.get("content-type").unwrap();
        assert_eq!(content_type, "application/x-protobuf", "{name}");
        if answer.status != 200 {
            // OTLP's error body: a google.rpc.Status whose message says what to fix
            let status = tonic_types::Status::decode(&answer.body[..])
                .unwrap_or_else(|e| panic!("{name}: the error is not a Status: {e}"));
            assert!(!status.message.is_empty(), "{name}");
        }
    }

    let after = list_all(&server, "admin-token", team_filter()).await;
    let joined: Vec<&str> = after
        .iter()
        .filter(|r| r.client_decision.is_some())
        .map(|r| r.tool_use_id.as_str())
        .collect();
    let want: Vec<&str> = table["joins"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(joined, want);
    let alice = after
        .iter()
        .find(|r| r.tool_use_id == "toolu_alice_1")
        .unwrap();
    let shown = alice.client_decision.as_ref().unwrap();
    assert_eq!(
        (
            shown.decision.as_str(),
            shown.source.as_str(),
            shown.tool_name.as_str()
        ),
        (
            decision["decision"].as_str().unwrap(),
            decision["source"].as_str().unwrap(),
            decision["tool_name"].as_str().unwrap()
        )
    );
    assert!(shown.at.is_some());
    // the member sees its own record joined too
    let own = list_all(&server, "alice-token", team_filter()).await;
    assert!(own.iter().all(|r| r.client_decision.is_some()), "{own:?}");
    server.stop().await;
}

#[tokio::test]
async fn otlp_grpc_export_joins_too_and_a_bad_tool_use_id_in_evaluate_is_refused() {
    use opentelemetry_proto::tonic::collector::logs::v1::logs_service_client::LogsServiceClient;
    let (server, _dir) = start().await;
    decide_calls(&server).await;
    records(&server, 2).await;
    let decision =
        serde_json::json!({"decision": "reject", "source": "user_reject", "tool_name": "Bash"});
    // watchers in scope are told of the report as it arrives; bob's own too, not alice
    let mut watches = Vec::new();
    for token in ["admin-token", "bob-token", "alice-token"] {
        let watch = server
            .decisions(token)
            .watch_decisions(pb::WatchDecisionsRequest {
                filter: Some(team_filter()),
            })
            .await
            .unwrap()
            .into_inner();
        watches.push(watch);
    }
    let mut logs =
        LogsServiceClient::with_interceptor(server.channel.clone(), Auth::new("bob-token"));
    let answer = logs
        .export(
            ExportLogsServiceRequest::decode(
                &export(vec![tool_decision("toolu_bob_1", &decision)])[..],
            )
            .unwrap(),
        )
        .await
        .unwrap()
        .into_inner();
    assert!(answer.partial_success.is_none(), "{answer:?}");
    let all = list_all(&server, "admin-token", team_filter()).await;
    let bob = all.iter().find(|r| r.tool_use_id == "toolu_bob_1").unwrap();
    assert_eq!(bob.client_decision.as_ref().unwrap().decision, "reject");
    let mut alice_watch = watches.pop().unwrap();
    for mut watch in watches {
        let event = tokio::time::timeout(DEADLINE, watch.message())
            .await
            .expect("the report within the deadline")
            .unwrap()
            .unwrap()
            .event;
        let Some(pb::watch_decisions_response::Event::ClientDecision(report)) = event else {
            panic!("a client decision, not {event:?}");
        };
        assert_eq!(
            (report.user_id.as_str(), report.tool_use_id.as_str()),
            ("bob", "toolu_bob_1")
        );
        assert_eq!(report.decision.unwrap().source, "user_reject");
    }
    // alice's watch stays quiet: her next event is her own next call's record
    server
        .policy("alice-token")
        .evaluate(pb::EvaluateRequest {
            call: Some(shell("ls")),
            ..Default::default()
        })
        .await
        .unwrap();
    let event = tokio::time::timeout(DEADLINE, alice_watch.message())
        .await
        .expect("alice's record within the deadline")
        .unwrap()
        .unwrap()
        .event;
    assert!(
        matches!(
            event,
            Some(pb::watch_decisions_response::Event::Decision(_))
        ),
        "{event:?}"
    );

    for bad in ["a b", "tab\there", &"x".repeat(257), "é"] {
        let refused = server
            .policy("alice-token")
            .evaluate(pb::EvaluateRequest {
                call: Some(shell("ls")),
                tool_use_id: bad.into(),
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_eq!(refused.code(), tonic::Code::InvalidArgument, "{bad:?}");
        assert!(
            refused.message().contains("tool_use_id"),
            "{}",
            refused.message()
        );
    }
    server.stop().await;
}

/// The real Claude Code CLI with `hook install --telemetry`: the hook answers ASK,
/// the scripted person (Claude Code's permission prompt tool) accepts, and Claude
/// Code's own `tool_decision` event reaches toolgate over OTLP/HTTP, is joined to
/// the hook's decision by `tool_use_id`, and `decisions list` shows both.
#[tokio::test]
async fn claude_codes_own_decision_is_joined_and_listed() {
    use crate::claude_code::{FAKES, claude_binary, claude_output_with};
    use std::os::unix::fs::PermissionsExt as _;
    let Some(claude) = claude_binary() else {
        return;
    };
    let (server, _data) = start().await;
    server
        .set_controls(pb::AutoRunControls {
            enabled: true,
            blocked: vec!["mkdir".into()],
            ..Default::default()
        })
        .await;
    server.yolo("alice").await;
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let token_file = dir.join("alice.token");
    std::fs::write(&token_file, "alice-token\n").unwrap();
    std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let exe = env!("CARGO_BIN_EXE_toolgate");
    let install = std::process::Command::new(exe)
        .args([
            "hook",
            "install",
            "claude-code",
            "--scope",
            "project",
            "--telemetry",
        ])
        .arg("--path")
        .arg(dir)
        .args([
            "--command",
            exe,
            "--server",
            &format!("http://{}", server.addr),
        ])
        .arg("--token-file")
        .arg(&token_file)
        .env_remove("TOOLGATE_TOKEN")
        .output()
        .unwrap();
    assert!(install.status.success(), "{install:?}");
    let settings = dir.join(".claude/settings.json");
    let written = std::fs::read_to_string(&settings).unwrap();
    assert!(
        !written.contains("alice-token"),
        "a token in the settings: {written}"
    );
    let doc: Value = serde_json::from_str(&written).unwrap();
    assert_eq!(doc["env"]["OTEL_LOGS_EXPORTER"], "otlp");
    assert!(
        doc["otelHeadersHelper"]
            .as_str()
            .unwrap()
            .contains(" hook otel-headers --server ")
    );

    let made = dir.join("made-dir");
    let call = serde_json::json!({"name": "Bash", "input": {
        "command": format!("mkdir {}", made.display()), "description": "make a directory"}});
    let approver = serde_json::json!({"mcpServers": {"approver": {"command": "python3",
        "args": [std::path::Path::new(FAKES).join("mcp_approver.py"), dir.join("asked.jsonl")]}}});
    let (out, _model) = claude_output_with(
        &claude,
        dir,
        &settings,
        &approver,
        call,
        &["--permission-prompt-tool", "mcp__approver__approve"],
    )
    .await;
    assert!(out.status.success(), "{out:?}");
    assert!(made.is_dir(), "the accepted call ran: {out:?}");
    assert!(dir.join("asked.jsonl").exists(), "the person was asked");

    // Claude Code exports on its own schedule: wait for its report to be joined
    let start = tokio::time::Instant::now();
    let record = loop {
        let all = list_all(&server, "admin-token", team_filter()).await;
        if let Some(r) = all
            .into_iter()
            .find(|r| r.client == "claude-code" && r.client_decision.is_some())
        {
            break r;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "Claude Code's tool_decision was not joined within {DEADLINE:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(record.outcome(), pb::Outcome::Ask);
    assert!(record.tool_use_id.starts_with("toolu_"), "{record:?}");
    let client = record.client_decision.unwrap();
    assert_eq!(
        (client.decision.as_str(), client.source.as_str()),
        ("accept", "user_temporary")
    );
    assert_eq!(client.tool_name, "Bash");

    let listed = crate::cli::toolgate(&server, &["decisions", "list", "--team", TEAM]).await;
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    assert!(
        listed.stdout.contains("ASK")
            && listed.stdout.contains("(client: accept by user_temporary)"),
        "{}",
        listed.stdout
    );
    server.stop().await;
}
