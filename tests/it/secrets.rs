//! Secrets masked before anything is stored, logged, shown or sent
//! (`tests/data/secrets.json`): each secret of the table, sent through `Evaluate` and
//! the hook, as an approval request and its webhook post, as a DENY, is absent from
//! the data directory, the webhook's bodies, the CLI's output and the API's answers;
//! and a masked line decides as the original over the shell and decision tables.

use crate::support;

use serde_json::{Value, json};
use std::time::Duration;
use support::*;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use toolgate::policy::{
    AdminControls, Call, CompiledAdmin, CompiledUser, Decision, ToolActionLists, UserSettings,
    decide_at,
};
use toolgate::proto::v1 as pb;
use toolgate::secrets::mask_call;

/// Every wait of these tests has this deadline.
const STEP: Duration = Duration::from_secs(60);

fn table() -> Value {
    serde_json::from_str(include_str!("../data/secrets.json")).unwrap()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

type Decided = (
    toolgate::policy::Outcome,
    toolgate::policy::Reason,
    Option<String>,
);

fn decided(d: &Decision) -> Decided {
    (
        d.outcome,
        d.reason,
        d.matched_entry.as_deref().map(str::to_owned),
    )
}

/// Where masking could change a decision, under the shell table's two policies.
struct Policies {
    files: ToolActionLists,
    pairs: Vec<(CompiledAdmin, CompiledUser)>,
}

impl Policies {
    fn shell_table(data: &Value) -> Self {
        let admin = CompiledAdmin::compile(&AdminControls {
            enabled: true,
            allowed: strings(&data["allowed"]),
            blocked: strings(&data["blocked"]),
            denied: strings(&data["denied"]),
            ..AdminControls::default()
        })
        .unwrap();
        let user = CompiledUser::compile(&UserSettings {
            use_yolo_mode: true,
            ..UserSettings::default()
        })
        .unwrap();
        let free_admin = CompiledAdmin::compile(&AdminControls {
            denied: strings(&data["denied"]),
            ..AdminControls::default()
        })
        .unwrap();
        let everything = CompiledUser::compile(&UserSettings {
            use_yolo_mode: true,
            yolo_enable_run_everything: true,
            command_denylist: strings(&data["blocked"]),
            ..UserSettings::default()
        })
        .unwrap();
        Self {
            files: ToolActionLists::default(),
            pairs: vec![(admin, user), (free_admin, everything)],
        }
    }

    /// The call and its masked form decide alike (when the masked one is decided
    /// again at all); how many were masked.
    fn check(&self, call: &Call, cwd: Option<&str>, failures: &mut Vec<String>) -> bool {
        let masked = mask_call(call);
        if !masked.masked() || !masked.redecidable {
            return masked.masked();
        }
        for (admin, user) in &self.pairs {
            let a = decide_at(&self.files, admin, user, call, cwd);
            let b = decide_at(&self.files, admin, user, &masked.call, cwd);
            if decided(&a) != decided(&b) {
                failures.push(format!(
                    "{call:?} decides {:?}, masked {:?} decides {:?}",
                    decided(&a),
                    masked.call,
                    decided(&b)
                ));
            }
        }
        true
    }
}

/// Secrets put into a line of another table, each in its own way.
fn with_secrets(line: &str) -> Vec<String> {
    vec![
        format!("API_TOKEN=s3cr3tv4lue {line}"),
        format!("{line} --token=abcdef123456"),
        format!("{line} && mysql -pTr0ub4dor app"),
        format!("{line} https://u:hunter2hunter2@example.com/x"),
        format!("curl -H 'Authorization: Bearer abc.def' x; {line}"),
        format!("{line} ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"),
    ]
}

#[test]
fn masked_lines_decide_as_the_originals() {
    let shell: Value = serde_json::from_str(include_str!("../data/shell_bypass.json")).unwrap();
    let policies = Policies::shell_table(&shell);
    let mut failures = Vec::new();
    let (mut masked, mut lines) = (0, 0);
    // the secrets table's own lines, under the shell table's policies
    for case in table()["cases"].as_array().unwrap() {
        let call = Call::Shell(case["line"].as_str().unwrap().to_owned());
        lines += 1;
        masked += usize::from(policies.check(&call, None, &mut failures));
    }
    // every line of the shell table, as it is and with secrets put in
    for case in shell["cases"].as_array().unwrap() {
        let line = case["line"].as_str().unwrap();
        let cwd = case["cwd"].as_str();
        for text in std::iter::once(line.to_owned()).chain(with_secrets(line)) {
            lines += 1;
            masked += usize::from(policies.check(&Call::Shell(text), cwd, &mut failures));
        }
    }
    // the decision vectors' command lines and paths, under each case's own policy
    for file in [
        include_str!("../data/decisions.json"),
        include_str!("../data/decisions_extra.json"),
        include_str!("../data/integrity.json"),
    ] {
        let data: Value = serde_json::from_str(file).unwrap();
        for case in data["cases"].as_array().unwrap() {
            let call = match (case["call"].get("shell"), case["call"].get("delete_file")) {
                (Some(line), _) => Call::Shell(line.as_str().unwrap().to_owned()),
                (_, Some(path)) => Call::DeleteFile(path.as_str().unwrap().to_owned()),
                _ => continue,
            };
            let admin: AdminControls = if case["admin"].is_null() {
                AdminControls::default()
            } else {
                serde_json::from_value(case["admin"].clone()).unwrap()
            };
            let user: UserSettings = serde_json::from_value(case["user"].clone()).unwrap();
            let own = Policies {
                files: ToolActionLists::default(),
                pairs: vec![(
                    CompiledAdmin::compile(&admin).unwrap(),
                    CompiledUser::compile(&user).unwrap(),
                )],
            };
            let texts = match &call {
                Call::Shell(line) => std::iter::once(line.clone())
                    .chain(with_secrets(line))
                    .map(Call::Shell)
                    .collect(),
                other => vec![other.clone()],
            };
            for call in texts {
                lines += 1;
                masked += usize::from(own.check(&call, None, &mut failures));
            }
        }
    }
    assert!(failures.is_empty(), "\n  {}", failures.join("\n  "));
    assert!(masked > 1000, "{masked} of {lines} lines held a secret");
}

/// A tiny HTTP receiver: each request's body, sent on the channel; answers 200.
async fn receiver() -> (String, tokio::sync::mpsc::Receiver<String>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let (tx, rx) = tokio::sync::mpsc::channel(256);
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let tx = tx.clone();
            tokio::spawn(async move {
                let (read, mut write) = socket.split();
                let mut reader = BufReader::new(read);
                let mut length = 0usize;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).await.unwrap_or(0) == 0 {
                        return;
                    }
                    let l = line.to_ascii_lowercase();
                    if let Some(v) = l.strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap_or(0);
                    }
                    if line == "\r\n" {
                        break;
                    }
                }
                let mut body = vec![0; length];
                tokio::io::AsyncReadExt::read_exact(&mut reader, &mut body)
                    .await
                    .unwrap();
                let _ = write
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
                    .await;
                let _ = tx.send(String::from_utf8_lossy(&body).into_owned()).await;
            });
        }
    });
    (url, rx)
}

/// The binary, with no `TOOLGATE_*` variable of ours leaking in from the test's env.
async fn toolgate(server: &TestServer, token: &str, args: &[&str], stdin: &str) -> String {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolgate"));
    for (key, _) in std::env::vars().filter(|(k, _)| k.starts_with("TOOLGATE_")) {
        cmd.env_remove(key);
    }
    let mut child = cmd
        .args(args)
        // as flags: a hook reads no environment
        .args([
            "--server",
            &format!("http://{}", server.addr),
            "--token",
            token,
        ])
        .env("HOME", "/nonexistent")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("run toolgate");
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.as_bytes()).await.unwrap();
    drop(input);
    let out = tokio::time::timeout(STEP, child.wait_with_output())
        .await
        .expect("toolgate finished in time")
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

fn shell(line: &str) -> pb::ToolCall {
    pb::ToolCall {
        kind: Some(pb::tool_call::Kind::Shell(line.into())),
        arguments: None,
    }
}

/// Every file under `dir`, read whole.
fn files_under(dir: &std::path::Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(bytes) = std::fs::read(&path) {
                out.push((path, bytes));
            }
        }
    }
    out
}

fn holds(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[tokio::test(flavor = "multi_thread")]
async fn no_secret_is_kept_shown_or_sent() {
    let data = table();
    let cases = data["cases"].as_array().unwrap();
    let secrets: Vec<&str> = cases
        .iter()
        .map(|c| c["secret"].as_str().unwrap())
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path());
    // the test's receiver listens on loopback, which webhooks reach only when allowed
    config.approvals.webhook_allow_loopback = true;
    let server = TestServer::start(config).await;
    let (url, mut posted) = receiver().await;
    // every call asks and goes to the approvers, who hear of it by the webhook
    let approvals = pb::ApprovalSettings {
        mode: pb::ApprovalMode::Always as i32,
        deadline_seconds: 600,
        webhook_url: url,
        ..Default::default()
    };
    server
        .set_controls(pb::AutoRunControls {
            enabled: true,
            allowed: vec!["git status".into()],
            approvals: Some(approvals),
            ..Default::default()
        })
        .await;
    server.yolo("alice").await;
    let mut answers = Vec::new();
    let mut ids = Vec::new();
    for case in cases {
        let line = case["line"].as_str().unwrap();
        let d = server
            .policy("alice-token")
            .evaluate(pb::EvaluateRequest {
                team_id: TEAM.into(),
                call: Some(shell(line)),
                approval: Some(pb::ApprovalCapability {
                    can_wait: true,
                    interactive: Some(false),
                    client: "test".into(),
                    session_id: "s1".into(),
                }),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner()
            .decision
            .unwrap();
        assert_eq!(d.outcome(), pb::Outcome::Ask, "{line}");
        ids.push(d.approval.expect("sent to the approvers").request_id);
    }
    let mut bodies = Vec::new();
    for _ in cases {
        let body = tokio::time::timeout(STEP, posted.recv())
            .await
            .expect("a webhook post within the deadline")
            .unwrap();
        bodies.push(body);
    }
    // the approvers' view: the list, each request, the CLI
    let mut client = pb::approval_service_client::ApprovalServiceClient::with_interceptor(
        server.channel.clone(),
        Auth::new("admin-token"),
    );
    let listed = client
        .list_approvals(pb::ListApprovalsRequest {
            team_id: TEAM.into(),
            pending_only: false,
            limit: 1000,
        })
        .await
        .unwrap()
        .into_inner();
    answers.push(format!("{listed:?}"));
    for id in &ids {
        let got = client
            .get_approval(pb::GetApprovalRequest {
                request_id: id.clone(),
            })
            .await
            .unwrap()
            .into_inner();
        answers.push(format!("{got:?}"));
    }
    // one is denied: its answer is logged as a DENY, with an audit record
    client
        .deny_request(pb::DenyRequestRequest {
            request_id: ids[0].clone(),
            reason: "no".into(),
        })
        .await
        .unwrap();
    answers.push(toolgate(&server, "admin-token", &["approvals", "list"], "").await);
    answers.push(
        toolgate(
            &server,
            "admin-token",
            &["--output", "json", "approvals", "list"],
            "",
        )
        .await,
    );

    // then every call is denied, through the hook: DENY audit records and records
    // that are never shed
    let programs: Vec<String> = cases
        .iter()
        .filter_map(|c| {
            let words = toolgate::policy::parse_command_line(c["line"].as_str().unwrap());
            let first = words.commands.first()?;
            first.words.get(first.command_at).cloned()
        })
        .collect();
    server
        .set_controls(pb::AutoRunControls {
            enabled: true,
            denied: programs,
            ..Default::default()
        })
        .await;
    let mut denied = 1; // the request denied above
    for case in cases {
        let line = case["line"].as_str().unwrap();
        let payload = json!({
            "session_id": "s1", "cwd": "/home/dev/proj", "hook_event_name": "PreToolUse",
            "tool_name": "Bash", "tool_input": {"command": line}
        })
        .to_string();
        // the hook's answer goes to the agent that sent the line: not checked
        let out = toolgate(&server, "alice-token", &["hook", "claude-code"], &payload).await;
        denied += usize::from(out.contains("\"deny\""));
    }
    assert!(denied > cases.len() / 2, "most lines are denied: {denied}");
    // the records are written off the decision path: wait until every DENY is listed
    let start = tokio::time::Instant::now();
    let filter = pb::DecisionFilter {
        team_id: TEAM.into(),
        outcome: pb::Outcome::Deny as i32,
        ..Default::default()
    };
    loop {
        let page = server
            .decisions("admin-token")
            .list_decisions(pb::ListDecisionsRequest {
                filter: Some(filter.clone()),
                page_size: 1000,
                page_token: String::new(),
            })
            .await
            .unwrap()
            .into_inner();
        if page.decisions.len() >= denied {
            answers.push(format!("{page:?}"));
            break;
        }
        assert!(start.elapsed() < STEP, "DENY records within {STEP:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let all = server
        .decisions("admin-token")
        .list_decisions(pb::ListDecisionsRequest {
            filter: Some(pb::DecisionFilter {
                team_id: TEAM.into(),
                ..Default::default()
            }),
            page_size: 1000,
            page_token: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    answers.push(format!("{all:?}"));
    let audit = server
        .admin("admin-token")
        .list_audit_events(pb::ListAuditEventsRequest {
            team_id: TEAM.into(),
            limit: 1000,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let denied_records = audit
        .events
        .iter()
        .filter(|e| e.kind() == pb::AuditEventKind::DecisionDenied)
        .count();
    assert!(
        denied_records >= denied - 1,
        "{denied_records} DENY audit records"
    );
    answers.push(format!("{audit:?}"));
    answers.push(toolgate(&server, "admin-token", &["decisions", "list"], "").await);
    answers.push(
        toolgate(
            &server,
            "admin-token",
            &["--output", "json", "decisions", "list", "--limit", "1000"],
            "",
        )
        .await,
    );
    server.stop().await;

    // the markers are there, the secrets nowhere
    let everything = answers.join("\n");
    assert!(everything.contains("__masked:"), "{everything}");
    let files = files_under(dir.path());
    assert!(!files.is_empty());
    let mut found = Vec::new();
    for secret in &secrets {
        for (i, a) in answers.iter().enumerate() {
            if a.contains(secret) {
                found.push(format!("answer {i} holds {secret:?}"));
            }
        }
        for b in &bodies {
            if b.contains(secret) {
                found.push(format!("a webhook body holds {secret:?}: {b}"));
            }
        }
        for (path, bytes) in &files {
            if holds(bytes, secret) {
                found.push(format!("{} holds {secret:?}", path.display()));
            }
        }
    }
    assert!(found.is_empty(), "\n  {}", found.join("\n  "));
}
