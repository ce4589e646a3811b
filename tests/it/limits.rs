//! Limits on what a member, an idle peer or a stop can do, each tested past its
//! bound: command and entry lengths, DENY records of huge commands, the bytes queued
//! for a slow watcher, teams kept in memory, idle and excess connections, and DENY
//! records across a stop or a crash during a store outage.

use crate::support;

use std::time::Duration;
use support::*;
use tonic::Code;
use toolgate::proto::v1 as pb;

/// Every wait in this file ends by this deadline.
const DEADLINE: Duration = Duration::from_secs(30);

fn shell(line: String) -> pb::ToolCall {
    pb::ToolCall {
        kind: Some(pb::tool_call::Kind::Shell(line)),
        arguments: None,
    }
}

fn evaluate(call: pb::ToolCall) -> pb::EvaluateRequest {
    pb::EvaluateRequest {
        approval: None,
        team_id: TEAM.into(),
        user_id: "alice".into(),
        call: Some(call),
        explain: false,
        agent: None,
        client: String::new(),
        tool_use_id: String::new(),
    }
}

#[tokio::test]
async fn command_past_the_limit_is_invalid_argument_naming_field_and_limit() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path());
    config.limits.max_command_bytes = 1_000;
    let server = TestServer::start(config).await;
    let mut policy = server.policy("alice-token");
    policy
        .evaluate(evaluate(shell("x".repeat(1_000))))
        .await
        .expect("at the limit");
    let err = policy
        .evaluate(evaluate(shell("x".repeat(1_001))))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    for needle in [
        "call.shell",
        "1001 bytes",
        "1000",
        "limits.max_command_bytes",
    ] {
        assert!(
            err.message().contains(needle),
            "{needle}: {}",
            err.message()
        );
    }
    let err = policy
        .evaluate_batch(pb::EvaluateBatchRequest {
            team_id: TEAM.into(),
            user_id: "alice".into(),
            calls: vec![mcp("a", "b"), shell("y".repeat(2_000))],
            explain: false,
            agent: None,
            client: String::new(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    assert!(
        err.message().contains("calls[1].shell"),
        "{}",
        err.message()
    );
    // a batch's bad call is named by its index: no kind, or arguments holding a value with no kind
    let mut bad_arguments = mcp("a", "c");
    bad_arguments.arguments = Some(pb::CallArguments {
        tool_input: Some(prost_types::Struct {
            fields: [("x".to_owned(), prost_types::Value { kind: None })].into(),
        }),
        ..Default::default()
    });
    let no_kind = pb::ToolCall::default();
    for (calls, field) in [
        (vec![mcp("a", "b"), mcp("a", "b"), no_kind], "calls[2]"),
        (
            vec![mcp("a", "b"), bad_arguments],
            "calls[1].arguments.tool_input.x",
        ),
    ] {
        let err = policy
            .evaluate_batch(pb::EvaluateBatchRequest {
                team_id: TEAM.into(),
                user_id: "alice".into(),
                calls,
                explain: false,
                agent: None,
                client: String::new(),
            })
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
        assert!(err.message().contains(field), "{field}: {}", err.message());
    }
    server.stop().await;
}

#[tokio::test]
async fn command_prefix_past_its_length_limit_is_refused_and_not_echoed() {
    let (server, _dir) = start().await;
    // a literal size past the 1,024-byte limit, not the constant: the test must fail
    // if the limit is lifted
    let huge = format!("git {}", "a".repeat(2_000));
    let mut s = user_settings(TEAM, "alice");
    s.command_allowlist = vec!["git status".into(), huge];
    let err = server
        .users("alice-token")
        .update_user_settings(pb::UpdateUserSettingsRequest {
            settings: Some(s),
            expected_revision: None,
            update_mask: None,
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    assert!(
        err.message().contains("settings.command_allowlist[1]"),
        "{}",
        err.message()
    );
    assert!(err.message().len() < 1_000, "the entry is echoed whole");
    let err = server
        .admin("admin-token")
        .update_team_admin_settings(pb::UpdateTeamAdminSettingsRequest {
            team_id: TEAM.into(),
            auto_run_controls: Some(pb::AutoRunControls {
                blocked: vec!["rm".repeat(1_000)],
                ..Default::default()
            }),
            expected_revision: None,
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    assert!(err.message().contains("blocked[0]"), "{}", err.message());
    server.stop().await;
}

/// A DENY of a huge command keeps an excerpt with the command's length and SHA-256.
#[tokio::test]
async fn deny_record_of_a_huge_command_is_bounded() {
    let (server, _dir) = start().await;
    server
        .set_controls(pb::AutoRunControls {
            kill_switch: true,
            ..Default::default()
        })
        .await;
    let line = format!("rm {}", "f".repeat(60_000));
    let d = server
        .policy("alice-token")
        .evaluate(evaluate(shell(line.clone())))
        .await
        .unwrap()
        .into_inner()
        .decision
        .unwrap();
    assert_eq!(d.outcome, pb::Outcome::Deny as i32);
    let mut admin = server.admin("admin-token");
    let event = tokio::time::timeout(DEADLINE, async {
        loop {
            let events = admin
                .list_audit_events(pb::ListAuditEventsRequest {
                    team_id: TEAM.into(),
                    kind: audit_kind("decision_denied"),
                    ..Default::default()
                })
                .await
                .unwrap()
                .into_inner()
                .events;
            if let Some(e) = events.into_iter().next() {
                return e;
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the deny record is written");
    let detail = crate::support::detail(&event);
    assert!(
        detail.to_string().len() < 10 * 1024,
        "{} bytes",
        detail.to_string().len()
    );
    assert!(detail["call_bytes"].as_u64().unwrap() > 60_000, "{detail}");
    assert_eq!(detail["call_sha256"].as_str().unwrap().len(), 64);
    server.stop().await;
}

/// A subscriber that stops reading holds at most the byte budget of changes; when it
/// reads again it is resynced. Driven at the service layer, where "stops reading" is
/// exact.
#[tokio::test]
async fn slow_subscriber_past_the_byte_budget_is_resynced() {
    use futures::StreamExt;
    use toolgate::auth::{Principal, Role};
    use toolgate::policy::UserSettings;
    use toolgate::service::WatchEvent;
    const BUDGET: usize = 64 * 1024;
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path());
    config.watch.queue_size = 1_000;
    config.watch.queue_bytes = BUDGET;
    let app = toolgate::server::App::build(config).await.unwrap();
    let service = app.service.clone();
    let alice = Principal {
        groups: Default::default(),
        name: "alice".into(),
        role: Role::Member,
        team: Some(TEAM.into()),
        user: Some("alice".into()),
    };
    let mut slow = Box::pin(service.watch(&alice, TEAM, "alice", None).await.unwrap());
    assert!(matches!(
        slow.next().await,
        Some(Ok(WatchEvent::Snapshot { .. }))
    ));
    // 40 writes of ~20 KiB each: 800 KiB queued without a budget
    for i in 0..40 {
        let settings = UserSettings {
            command_allowlist: (0..200)
                .map(|j| format!("tool{i}-{j} {}", "x".repeat(90)))
                .collect(),
            ..Default::default()
        };
        service
            .update_user(&alice, TEAM, "alice", settings, None)
            .await
            .unwrap();
    }
    let (count, bytes) = service.hub().queued(TEAM);
    assert!(count < 40, "{count} changes queued");
    assert!(bytes <= BUDGET, "{bytes} bytes queued past the budget");
    // the slow subscriber lost changes to the budget: it is told with a snapshot
    let mut saw_resync = false;
    loop {
        match tokio::time::timeout(DEADLINE, slow.next()).await.unwrap() {
            Some(Ok(WatchEvent::Snapshot { resync, effective })) => {
                assert!(resync);
                saw_resync = true;
                if effective.revision == 40 {
                    break;
                }
            }
            Some(Ok(WatchEvent::Change(c))) if c.revision == 40 => break,
            Some(Ok(_)) => {}
            other => panic!("{other:?}"),
        }
    }
    assert!(saw_resync, "no resync for a subscriber past the budget");
}

/// A team decided on holds no broadcast ring; one nobody watches or touches is let go.
#[tokio::test]
async fn teams_hold_no_ring_until_watched_and_are_let_go_when_idle() {
    use futures::StreamExt;
    use toolgate::auth::{Principal, Role};
    let dir = tempfile::tempdir().unwrap();
    let app = toolgate::server::App::build(test_config(dir.path()))
        .await
        .unwrap();
    let service = app.service.clone();
    let hub = service.hub().clone();
    let alice = Principal {
        groups: Default::default(),
        name: "alice".into(),
        role: Role::Member,
        team: Some(TEAM.into()),
        user: Some("alice".into()),
    };
    let other = Principal {
        groups: Default::default(),
        name: "op".into(),
        role: Role::Operator,
        team: None,
        user: None,
    };
    service
        .evaluate(&other, OTHER_TEAM, "bob", &[], false)
        .await
        .unwrap();
    assert!(
        !hub.has_ring(OTHER_TEAM),
        "a ring for a team nobody watches"
    );
    let mut watching = Box::pin(service.watch(&alice, TEAM, "alice", None).await.unwrap());
    watching.next().await.unwrap().unwrap();
    assert!(hub.has_ring(TEAM));
    assert_eq!(hub.teams(), 2);
    // everything is idle for a zero idle time: only the watched team stays
    assert_eq!(hub.let_idle_teams_go(Duration::ZERO), 1);
    assert_eq!(hub.teams(), 1);
    drop(watching);
    assert_eq!(hub.let_idle_teams_go(Duration::ZERO), 1);
    assert_eq!(hub.teams(), 0);
    // and it comes back from the store when needed
    service
        .evaluate(&other, OTHER_TEAM, "bob", &[], false)
        .await
        .unwrap();
    assert_eq!(hub.teams(), 1);
}

async fn channel(addr: &str) -> tonic::transport::Channel {
    tonic::transport::Channel::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap()
}

async fn kill_switch_on(addr: &str) {
    AdminServiceClient::with_interceptor(channel(addr).await, Auth::new("admin-token"))
        .update_team_admin_settings(pb::UpdateTeamAdminSettingsRequest {
            team_id: TEAM.into(),
            auto_run_controls: Some(pb::AutoRunControls {
                kill_switch: true,
                ..Default::default()
            }),
            expected_revision: None,
        })
        .await
        .unwrap();
}

/// `n` denials in batches of 1,000.
async fn deny(addr: &str, n: usize) {
    let mut policy =
        PolicyServiceClient::with_interceptor(channel(addr).await, Auth::new("alice-token"));
    let mut left = n;
    while left > 0 {
        let k = left.min(1_000);
        let r = policy
            .evaluate_batch(pb::EvaluateBatchRequest {
                team_id: TEAM.into(),
                user_id: "alice".into(),
                calls: vec![mcp("jira", "create"); k],
                explain: false,
                agent: None,
                client: String::new(),
            })
            .await
            .unwrap()
            .into_inner();
        assert!(
            r.decisions
                .iter()
                .all(|d| d.outcome == pb::Outcome::Deny as i32)
        );
        left -= k;
    }
}

async fn denials_stored(data: &std::path::Path) -> usize {
    use toolgate::store::{AuditFilter, SqliteStore, Store};
    let store = SqliteStore::open(&data.join("toolgate.db"), 100)
        .await
        .unwrap();
    let mut after_id = 0;
    let mut n = 0;
    loop {
        let page = store
            .list_audit(&AuditFilter {
                after_id,
                limit: 1_000,
                kind: Some("decision_denied".into()),
                ..Default::default()
            })
            .await
            .unwrap();
        let Some(last) = page.last() else { return n };
        after_id = last.id;
        n += page.len();
    }
}

fn signal(child: &std::process::Child, name: &str) {
    let ok = std::process::Command::new("kill")
        .args([name, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
}

/// The real binary, as `spawn_binary` starts it, with its log lines on a channel.
fn spawn_with_log(
    config: &std::path::Path,
) -> (
    ServerProcess,
    String,
    std::sync::mpsc::Receiver<serde_json::Value>,
) {
    use std::io::{BufRead, BufReader};
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_toolgate"));
    for (key, _) in std::env::vars().filter(|(k, _)| k.starts_with("TOOLGATE_")) {
        command.env_remove(key);
    }
    let mut child = ServerProcess(
        command
            .args(["serve", "--config"])
            .arg(config)
            .stderr(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("spawn toolgate"),
    );
    let (tx, rx) = std::sync::mpsc::channel();
    let lines = BufReader::new(child.stderr.take().unwrap()).lines();
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) {
                let _ = tx.send(v);
            }
        }
    });
    let addr = wait_log(&rx, |v| v["fields"]["message"] == "serving")["fields"]["addr"]
        .as_str()
        .unwrap()
        .to_owned();
    (child, addr, rx)
}

/// The first log line that `want` accepts, by the deadline.
fn wait_log(
    rx: &std::sync::mpsc::Receiver<serde_json::Value>,
    want: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let deadline = std::time::Instant::now() + DEADLINE;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let line = rx.recv_timeout(left).expect("log line by the deadline");
        if want(&line) {
            return line;
        }
    }
}

/// A clean stop writes the DENY records still queued: here they wait for the store,
/// which is back just before the stop, while the writer sleeps before its next try
/// (the real binary, whose process ends when `run` returns).
#[tokio::test]
async fn queued_deny_records_are_written_at_a_clean_stop() {
    // few enough to write well within the grace on a loaded machine: what is tested is
    // that the drain wakes the writer from its backoff
    const DENIALS: usize = 200;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let yaml = checked_store_config_file(dir.path(), None);
    // a short grace: the drain deadline passes (an idle client connection may hold it)
    // while the audit writer still sleeps
    let mut config: toolgate::config::Config =
        serde_norway::from_str(&std::fs::read_to_string(&yaml).unwrap()).unwrap();
    config.shutdown_grace_secs = 1;
    // the writer's later tries are logged at debug: the outage's start alone is a warning
    config.log.level = "info,toolgate_server::service=debug".into();
    std::fs::write(&yaml, serde_norway::to_string(&config).unwrap()).unwrap();
    let (mut child, addr, log) = spawn_with_log(&yaml);
    kill_switch_on(&addr).await;
    deny(&addr, 1).await;
    // the first record written, so the move below cannot race its commit
    let deadline = std::time::Instant::now() + DEADLINE;
    while denials_stored(&data).await < 1 {
        assert!(
            std::time::Instant::now() < deadline,
            "first record not written"
        );
        tokio::task::yield_now().await;
    }
    let db = data.join("toolgate.db");
    let away = dir.path().join("away.db");
    std::fs::rename(&db, &away).unwrap();
    deny(&addr, DENIALS).await;
    // the writer now waits seconds between tries
    wait_log(&log, |v| {
        v["fields"]["message"] == "cannot write deny audit records: retrying"
            && v["fields"]["retry_ms"].as_u64() >= Some(3_200)
    });
    std::fs::rename(&away, &db).unwrap();
    signal(&child, "-TERM");
    assert!(child.wait().unwrap().success());
    assert_eq!(denials_stored(&data).await, DENIALS + 1);
    assert!(
        journal_segments(&data).is_empty(),
        "written records left in the deny journal"
    );
}

/// The DENY journal's segments in a data directory.
pub(crate) fn journal_segments(data: &std::path::Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(data.join(toolgate::service::JOURNAL_DIR))
        .map(|dir| {
            dir.filter_map(|e| Some(e.ok()?.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "journal"))
                .collect()
        })
        .unwrap_or_default()
}

/// DENY records made while the store refuses writes are in the DENY journal before
/// they are answered: a process killed meanwhile loses none, and the next start
/// writes them and removes the journal's segments.
#[tokio::test]
async fn deny_records_of_an_outage_survive_a_crash_in_the_journal() {
    const DENIALS: usize = 500;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let yaml = checked_store_config_file(dir.path(), None);
    let (mut child, addr) = spawn_binary(&yaml);
    kill_switch_on(&addr).await;
    deny(&addr, 1).await;
    // an outage: the database file moved away (writes refused), put back later
    let db = data.join("toolgate.db");
    let away = dir.path().join("away.db");
    std::fs::rename(&db, &away).unwrap();
    deny(&addr, DENIALS).await;
    let segments = journal_segments(&data);
    assert!(!segments.is_empty(), "the answered denials are journaled");
    #[cfg(unix)]
    for segment in &segments {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(segment).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "journal segment mode {mode:o}");
    }
    // killed as soon as the last denial is answered
    signal(&child, "-KILL");
    child.wait().unwrap();
    std::fs::rename(&away, &db).unwrap();

    let (mut child, _addr) = spawn_binary(&yaml);
    let deadline = std::time::Instant::now() + DEADLINE;
    while !journal_segments(&data).is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "deny journal not replayed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    signal(&child, "-TERM");
    child.wait().unwrap();
    assert!(
        denials_stored(&data).await > DENIALS,
        "every denial has its record"
    );
}

/// Idle connections past the limit are closed at once, idle ones within it after the
/// idle timeout; a live client keeps being served throughout.
#[tokio::test]
async fn idle_and_excess_connections_are_closed() {
    use tokio::io::AsyncReadExt;
    use tonic_health::pb::HealthCheckRequest;
    use tonic_health::pb::health_client::HealthClient;
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path());
    config.connections.max = 8;
    config.connections.idle_timeout_secs = 3;
    config.connections.keepalive_interval_secs = 1;
    let server = TestServer::start(config).await;
    let mut idle = Vec::new();
    for _ in 0..20 {
        idle.push(tokio::net::TcpStream::connect(server.addr).await.unwrap());
    }
    let mut health = HealthClient::new(server.channel.clone());
    health
        .check(HealthCheckRequest::default())
        .await
        .expect("the live client is served at the limit");
    for mut socket in idle {
        // the server may greet with its HTTP/2 settings first; closed is end of
        // stream, or a reset
        let mut buf = [0u8; 256];
        tokio::time::timeout(DEADLINE, async {
            while let Ok(n) = socket.read(&mut buf).await
                && n > 0
            {}
        })
        .await
        .expect("an idle connection is closed");
    }
    let fresh = tonic::transport::Channel::from_shared(format!("http://{}", server.addr))
        .unwrap()
        .connect()
        .await
        .unwrap();
    HealthClient::new(fresh)
        .check(HealthCheckRequest::default())
        .await
        .expect("new connections are taken once idle ones are gone");
    server.stop().await;
}
