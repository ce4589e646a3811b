//! A replica cut off from the shared PostgreSQL stops saying yes: two replicas on one
//! database, one behind a TCP proxy the test pauses (a partition: no reset, no error,
//! just silence). A kill switch set through the other is enforced on the cut-off
//! replica or refused by it once `store.max_staleness_secs` has passed, its health
//! turns NOT_SERVING, Claude Code's hook never answers `allow` for the killed team
//! from then on, and once the partition heals the replica converges on the kill switch.
//! The real Claude Code CLI (when `TOOLGATE_TEST_CLAUDE` names it), its hook pointed
//! at the cut-off replica, runs alice's `Read` before the partition and never during
//! it: the model is sent no file content, only the refusal.
//! What the cut-off replica would show or stream (the effective policy, a watch) is
//! refused as well: a client acts on what it is shown.

use crate::claude_code::{Session, claude_binary, install_hook, run_claude};
use crate::hook::hook;
use crate::support;

use std::time::Duration;
use support::pause::PausableProxy;
use support::*;
use tonic::{Code, Status};
use tonic_health::ServingStatus;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;
use toolgate::proto::v1 as pb;
use toolgate::proto::v1::watch_policy_response::Event;

/// Every wait of this file ends by then.
const DEADLINE: Duration = Duration::from_secs(60);

/// The bound under test: short, so the test is quick.
const MAX_STALENESS_SECS: u64 = 2;

async fn replica(url: &str) -> (TestServer, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path());
    config.store.url = Some(url.to_owned());
    config.store.max_staleness_secs = MAX_STALENESS_SECS;
    config.store.check_secs = 1;
    (TestServer::start(config).await, dir)
}

/// The URL with its host and port replaced by `addr`.
fn through(url: &str, addr: std::net::SocketAddr) -> String {
    let (scheme, rest) = url.split_once("://").unwrap();
    let (authority, path) = rest.split_once('/').unwrap();
    let user = authority
        .rsplit_once('@')
        .map_or(String::new(), |(u, _)| format!("{u}@"));
    format!("{scheme}://{user}{addr}/{path}")
}

/// The database's address, from `postgres://USER@HOST:PORT/DB`.
fn database_addr(url: &str) -> std::net::SocketAddr {
    let rest = url.split_once("://").unwrap().1;
    let authority = rest.split_once('/').unwrap().0;
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    std::net::ToSocketAddrs::to_socket_addrs(host_port)
        .unwrap()
        .next()
        .unwrap()
}

fn read_call() -> pb::EvaluateRequest {
    pb::EvaluateRequest {
        approval: None,
        team_id: TEAM.into(),
        user_id: "alice".into(),
        call: Some(mcp("builtin", "Read")),
        explain: false,
        agent: None,
        client: String::new(),
        tool_use_id: String::new(),
    }
}

/// Claude Code's PreToolUse payload for a `Read`.
fn read_payload() -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "session_id": "s1", "cwd": "/home/dev/proj", "hook_event_name": "PreToolUse",
        "tool_name": "Read", "tool_input": {"file_path": "/home/dev/proj/src/main.rs"}
    }))
    .unwrap()
}

/// What `toolgate hook claude-code` answers on `server` for alice's `Read`: the
/// permission decision, or `blocked` when it exits 2 (Claude Code blocks the call).
async fn hook_answer(server: &TestServer) -> String {
    let out = hook(
        &format!("http://{}", server.addr),
        "alice-token",
        "claude-code",
        &[],
        read_payload(),
    )
    .await;
    if out.exit == 2 && out.stdout.is_empty() {
        return "blocked".into();
    }
    assert_eq!(out.exit, 0, "{}", out.stderr);
    let answer: serde_json::Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("hook answer {:?} ({e}): {}", out.stdout, out.stderr));
    answer["hookSpecificOutput"]["permissionDecision"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn alice_policy() -> pb::GetEffectivePolicyRequest {
    pb::GetEffectivePolicyRequest {
        team_id: TEAM.into(),
        user_id: "alice".into(),
    }
}

async fn watch_alice(
    server: &TestServer,
) -> Result<tonic::Streaming<pb::WatchPolicyResponse>, Status> {
    server
        .policy("alice-token")
        .watch_policy(pb::WatchPolicyRequest {
            team_id: TEAM.into(),
            user_id: "alice".into(),
            after_revision: None,
        })
        .await
        .map(tonic::Response::into_inner)
}

/// How a watch stream ends: the status it ends with (every wait within [`DEADLINE`]).
async fn watch_end(events: &mut tonic::Streaming<pb::WatchPolicyResponse>) -> Status {
    let ended = tokio::time::timeout(DEADLINE, async {
        loop {
            match events.message().await {
                Ok(Some(_)) => {}
                Ok(None) => panic!("the stream ended without a status"),
                Err(status) => return status,
            }
        }
    });
    ended.await.expect("the stream ends within the deadline")
}

/// A refusal that says why: the staleness and the bound.
fn assert_stale_refusal(e: &Status) {
    assert_eq!(e.code(), Code::Unavailable, "{e:?}");
    let bound = format!("store.max_staleness_secs ({MAX_STALENESS_SECS} s)");
    assert!(
        e.message().contains(&bound) && e.message().contains(" s ago"),
        "{e:?}"
    );
}

/// The text of the file Claude Code's `Read` is scripted to read.
const MARKER: &str = "the-notes-only-a-read-shows";

/// Claude Code, its hook asking `server`, runs alice's scripted `Read` of a file in
/// `dir` holding [`MARKER`]; returns the session and whether the file's text reached
/// the model (the call ran).
async fn claude_reads(
    claude: &std::path::Path,
    dir: &std::path::Path,
    server: &TestServer,
) -> (Session, bool) {
    let notes = dir.join("notes.txt");
    std::fs::write(&notes, MARKER).unwrap();
    let settings = install_hook(dir, server, "alice-token");
    let call =
        serde_json::json!({"name": "Read", "input": {"file_path": notes.display().to_string()}});
    let session = run_claude(claude, dir, &settings, call).await;
    let ran = session
        .tool_results
        .iter()
        .any(|r| r["content"].to_string().contains(MARKER));
    (session, ran)
}

async fn health(server: &TestServer, service: &str) -> i32 {
    HealthClient::new(server.channel.clone())
        .check(HealthCheckRequest {
            service: service.into(),
        })
        .await
        .unwrap()
        .into_inner()
        .status
}

/// Waits, by polling with a deadline, until `server`'s health for `service` (`""`:
/// the server's) is `want`: the health reporter follows the hub's state on its own
/// task, so it may trail what a call already sees.
async fn wait_health(server: &TestServer, service: &str, want: ServingStatus) {
    let deadline = tokio::time::Instant::now() + DEADLINE;
    while health(server, service).await != want as i32 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "health of {service:?} never became {want:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn postgres_a_cut_off_replica_stops_allowing_and_converges_after() {
    let Some(url) = support::pg::fresh_database("a partitioned replica").await else {
        return;
    };
    let proxy = PausableProxy::start(database_addr(&url)).await;
    let (a, _da) = replica(&url).await;
    let (b, _db) = replica(&through(&url, proxy.addr)).await;
    a.set_controls(pb::AutoRunControls {
        enabled: true,
        mcp_tool_allowlist: vec!["builtin:Read".into()],
        mcp_tool_blocklist: vec!["github:delete_repo".into()],
        ..Default::default()
    })
    .await;
    a.yolo("alice").await;
    // B follows A: alice's Read is allowed there, and B holds her and the team in memory
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        let d = b.policy("alice-token").evaluate(read_call()).await;
        let d = d.unwrap().into_inner().decision.unwrap();
        if d.outcome == pb::Outcome::Allow as i32 {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "B never allowed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    wait_health(&b, "", ServingStatus::Serving).await;
    assert_eq!(hook_answer(&b).await, "allow");
    // the real Claude Code through B: the Read runs while B can see
    let claude = claude_binary();
    let claude_dir = tempfile::tempdir().unwrap();
    if let Some(claude) = &claude {
        let (s, ran) = claude_reads(claude, claude_dir.path(), &b).await;
        assert!(
            ran,
            "the Read ran through B before the partition: {}",
            s.result
        );
    }
    let mut watching = watch_alice(&b).await.expect("B streams alice's policy");
    watching.message().await.unwrap().expect("the snapshot");

    proxy.pause();
    let killed = a
        .set_controls(pb::AutoRunControls {
            enabled: true,
            kill_switch: true,
            mcp_tool_allowlist: vec!["builtin:Read".into()],
            ..Default::default()
        })
        .await;
    // A enforces it at once
    let d = a.policy("alice-token").evaluate(read_call()).await;
    let d = d.unwrap().into_inner().decision.unwrap();
    assert_eq!(d.reason, pb::Reason::KillSwitch as i32);

    // B cannot see it: within the bound it may still answer from its memory; past
    // it, it reports NOT_SERVING and stops answering ALLOW
    wait_health(&b, "", ServingStatus::NotServing).await;
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        match b.policy("alice-token").evaluate(read_call()).await {
            Err(e) if e.code() == Code::Unavailable => break,
            Ok(d)
                if d.get_ref().decision.as_ref().unwrap().outcome == pb::Outcome::Allow as i32 =>
            {
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "B never stopped allowing"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            other => panic!("neither ALLOW from memory nor UNAVAILABLE: {other:?}"),
        }
    }
    wait_health(&b, "toolgate.v1.PolicyService", ServingStatus::NotServing).await;
    // nor does it show or stream the policy it cannot vouch for: the open stream ends
    // UNAVAILABLE (clients resume elsewhere), a new one and the effective policy are
    // refused
    assert_stale_refusal(&watch_end(&mut watching).await);
    let e = match watch_alice(&b).await {
        Ok(mut events) => watch_end(&mut events).await,
        Err(e) => e,
    };
    assert_stale_refusal(&e);
    let e = b
        .policy("alice-token")
        .get_effective_policy(alice_policy())
        .await
        .expect_err("no policy shown that cannot be shown current");
    assert_stale_refusal(&e);
    // from now on, until B reaches the store again, nothing is allowed there
    for _ in 0..3 {
        let e = b
            .policy("alice-token")
            .evaluate(read_call())
            .await
            .expect_err("no decision from a policy that cannot be shown current");
        assert_eq!(e.code(), Code::Unavailable, "{e:?}");
        assert!(e.message().contains("max_staleness_secs"), "{e:?}");
        assert_eq!(hook_answer(&b).await, "blocked");
    }
    // the real Claude Code pointed at B: its hook fails closed, the Read does not run
    // and the model is sent the refusal, not the file
    if let Some(claude) = &claude {
        let (s, ran) = claude_reads(claude, claude_dir.path(), &b).await;
        assert!(
            !ran,
            "nothing runs through a cut-off replica: {:?}",
            s.tool_results
        );
        assert_eq!(s.tool_results.len(), 1, "{:?}", s.tool_results);
        assert_eq!(s.tool_results[0]["is_error"], true, "{:?}", s.tool_results);
        let told = s.tool_results[0]["content"].to_string();
        assert!(
            told.contains("max_staleness_secs"),
            "the model was told: {told}"
        );
    }
    // what B's memory denies is still denied (and recorded): no newer policy can
    // make answering DENY unsafe
    let mut delete = read_call();
    delete.call = Some(mcp("github", "delete_repo"));
    let d = b.policy("alice-token").evaluate(delete).await;
    let d = d.unwrap().into_inner().decision.unwrap();
    assert_eq!(d.reason, pb::Reason::BlockedByAdmin as i32);
    // a user B never read is answered at once from what B knows, not after the
    // caller's deadline: the team's policy in memory does not deny, so UNAVAILABLE
    let mut bob = b.policy("bob-token");
    let mut call = read_call();
    call.user_id = "bob".into();
    let mut request = tonic::Request::new(call);
    request.set_timeout(Duration::from_secs(30));
    let e = bob.evaluate(request).await.unwrap_err();
    assert_eq!(e.code(), Code::Unavailable, "{e:?}");

    proxy.resume();
    wait_health(&b, "", ServingStatus::Serving).await;
    let d = b.policy("alice-token").evaluate(read_call()).await;
    let d = d.unwrap().into_inner().decision.unwrap();
    assert_eq!(
        (d.reason, d.revision),
        (pb::Reason::KillSwitch as i32, killed)
    );
    assert_eq!(hook_answer(&b).await, "deny");
    if let Some(claude) = &claude {
        let (s, ran) = claude_reads(claude, claude_dir.path(), &b).await;
        assert!(!ran, "the kill switch holds on B: {:?}", s.tool_results);
        let told = s.tool_results[0]["content"].to_string();
        assert!(told.contains("KILL_SWITCH"), "the model was told: {told}");
    }
    let mut policy = b.policy("alice-token");
    let shown = policy.get_effective_policy(alice_policy()).await.unwrap();
    let shown = shown.into_inner().policy.unwrap();
    let controls = shown.admin.unwrap().auto_run_controls.unwrap();
    assert!(controls.kill_switch);
    assert_eq!(shown.revision, killed);
    let mut events = watch_alice(&b).await.expect("B streams again");
    let first = events.message().await.unwrap().expect("the snapshot");
    assert!(
        matches!(first.event, Some(Event::Snapshot(ref s)) if s.policy.as_ref().unwrap().revision == killed),
        "{first:?}"
    );
    a.stop().await;
    b.stop().await;
}

/// A replica started while its database is down waits for it, serving health
/// NOT_SERVING meanwhile, and starts once the database is up.
#[tokio::test]
async fn postgres_a_replica_started_before_its_database_waits_for_it() {
    let Some(cluster) = support::pg::Cluster::start("a replica waiting for its database") else {
        return;
    };
    cluster.ctl("stop");
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path());
    config.store.url = Some(cluster.url());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    // beside the test rather than spawned: building the app is not a `Send` future
    let serving = toolgate::server::serve(listener, config, async {
        let _ = stopped.await;
    });
    let test = async {
        let channel = tonic::transport::Channel::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect_lazy();
        wait_for_health(&channel, ServingStatus::NotServing).await;
        assert_eq!(
            check(&channel, "toolgate.v1.PolicyService").await.unwrap(),
            ServingStatus::NotServing as i32
        );
        cluster.ctl("start");
        wait_for_health(&channel, ServingStatus::Serving).await;
        let mut policy =
            PolicyServiceClient::with_interceptor(channel.clone(), Auth::new("alice-token"));
        let d = policy.evaluate(read_call()).await.unwrap().into_inner();
        assert_eq!(d.decision.unwrap().revision, 0);
        let _ = stop.send(());
    };
    let (served, ()) = tokio::time::timeout(DEADLINE * 2, async { tokio::join!(serving, test) })
        .await
        .expect("the test and the replica end");
    served.expect("the replica waited, started and stopped");
}

async fn check(channel: &tonic::transport::Channel, service: &str) -> Result<i32, tonic::Status> {
    let mut request = tonic::Request::new(HealthCheckRequest {
        service: service.into(),
    });
    request.set_timeout(Duration::from_secs(10));
    HealthClient::new(channel.clone())
        .check(request)
        .await
        .map(|r| r.into_inner().status)
}

/// Waits for the overall health `want`, through the hand-over from the waiting
/// server to the real one (a call may fail while the connection is replaced).
async fn wait_for_health(channel: &tonic::transport::Channel, want: ServingStatus) {
    let deadline = tokio::time::Instant::now() + DEADLINE;
    while check(channel, "").await.ok() != Some(want as i32) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "health never became {want:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Stopped while it waits, the replica exits cleanly.
#[tokio::test]
async fn a_replica_waiting_for_its_database_stops_when_told() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path());
    // nothing listens there: the port of a listener just closed
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    config.store.url = Some(format!("postgres://postgres@127.0.0.1:{port}/postgres"));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = toolgate::server::serve(listener, config, async {
        let _ = stopped.await;
    });
    let test = async {
        let channel = tonic::transport::Channel::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect_lazy();
        wait_for_health(&channel, ServingStatus::NotServing).await;
        let _ = stop.send(());
    };
    let (served, ()) = tokio::time::timeout(DEADLINE, async { tokio::join!(serving, test) })
        .await
        .expect("the replica stops");
    served.unwrap();
}

/// A durable write whose commit reached the database but whose acknowledgement was
/// lost (the proxy drops the database's answer to `COMMIT` and closes the
/// connection) answers `UNKNOWN` with the reason `COMMIT_INDETERMINATE`, whatever
/// the write: a token issued (through the CLI, which prints the advice to read
/// first) and admin settings (through the API); reading back shows each committed.
#[tokio::test]
async fn postgres_a_commit_whose_answer_is_lost_is_indeterminate() {
    use tonic_types::StatusExt as _;
    let Some(url) = support::pg::fresh_database("a lost commit acknowledgement").await else {
        return;
    };
    let proxy = PausableProxy::start(database_addr(&url)).await;
    let (b, _db) = replica(&through(&url, proxy.addr)).await;

    // a token, through the CLI
    proxy.lose_commit_answer_after("INSERT INTO issued_tokens");
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["token", "create", "--server"])
        .arg(format!("http://{}", b.addr))
        .args(["--token", "admin-token", "--team", TEAM, "--user", "bob"])
        .env_remove("TOOLGATE_TOKEN")
        .env_remove("TOOLGATE_SERVER")
        .env("HOME", _db.path())
        .output();
    let out = tokio::time::timeout(DEADLINE, out)
        .await
        .expect("the CLI answers within the deadline")
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert_eq!(proxy.lost_answers(), 1, "{stderr}");
    assert!(stderr.contains("Unknown"), "{stderr}");
    assert!(stderr.contains("may have been committed"), "{stderr}");
    let listed = b.tokens("admin-token");
    let listed = listed
        .clone()
        .list_tokens(pb::ListTokensRequest::default())
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        listed
            .tokens
            .iter()
            .map(|t| t.user_id.as_str())
            .collect::<Vec<_>>(),
        ["bob"],
        "the token was committed though its answer was lost"
    );

    // admin settings, through the API
    proxy.lose_commit_answer_after("INSERT INTO admin_settings");
    let e = b
        .admin("admin-token")
        .update_team_admin_settings(pb::UpdateTeamAdminSettingsRequest {
            team_id: TEAM.into(),
            auto_run_controls: Some(pb::AutoRunControls {
                enabled: true,
                kill_switch: true,
                ..Default::default()
            }),
            expected_revision: Some(0),
        })
        .await
        .expect_err("the acknowledgement was lost");
    assert_eq!(proxy.lost_answers(), 2);
    assert_eq!(e.code(), Code::Unknown, "{e:?}");
    assert_eq!(
        e.get_details_error_info().map(|i| i.reason),
        Some(toolgate::grpc::COMMIT_INDETERMINATE.to_owned()),
        "{e:?}"
    );
    assert!(e.message().contains("read the revision"), "{e:?}");
    // reading shows it committed (applied here once the change's notice arrives)
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        let read = b
            .admin("admin-token")
            .get_team_admin_settings(pb::GetTeamAdminSettingsRequest {
                team_id: TEAM.into(),
            })
            .await;
        let settings = read.unwrap().into_inner().settings.unwrap();
        if settings.revision > 0 {
            assert!(settings.auto_run_controls.unwrap().kill_switch);
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the committed settings never showed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    b.stop().await;
}
