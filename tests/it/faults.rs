//! The fault suite: the store's file deleted, replaced, made read-only or full; a
//! catch-up that fails; PostgreSQL killed and restarted; a replica killed mid-stream.
//! Each asserts what users were promised: no acknowledged write is lost, decisions
//! keep serving, writes fail with a clear status, and service recovers without a
//! restart.

use crate::support;

use std::path::{Path, PathBuf};
use std::time::Duration;
use support::*;
use tonic::Code;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;
use toolgate::proto::v1 as pb;

/// Every wait in this file ends by this deadline.
const DEADLINE: Duration = Duration::from_secs(30);

/// A server whose store checks itself every second.
async fn start_checked(dir: &Path) -> TestServer {
    let mut config = test_config(dir);
    config.store.check_secs = 1;
    TestServer::start(config).await
}

fn db_path(dir: &Path) -> PathBuf {
    dir.join("toolgate.db")
}

/// Writes alice's allowlist as `[entry]`; the revision, or the status.
async fn write(server: &TestServer, entry: &str) -> Result<u64, tonic::Status> {
    let mut s = user_settings(TEAM, "alice");
    s.mcp_allowed_tools = vec![entry.to_owned()];
    server
        .users("admin-token")
        .update_user_settings(pb::UpdateUserSettingsRequest {
            settings: Some(s),
            expected_revision: None,
            update_mask: None,
        })
        .await
        .map(|r| r.into_inner().settings.unwrap().revision)
}

/// A decision for alice: serving means answering, whatever the store is doing.
async fn decide(server: &TestServer) -> pb::Decision {
    server
        .policy("alice-token")
        .evaluate(pb::EvaluateRequest {
            approval: None,
            team_id: TEAM.into(),
            user_id: "alice".into(),
            call: Some(mcp("jira", "create")),
            explain: false,
            agent: None,
            client: String::new(),
            tool_use_id: String::new(),
        })
        .await
        .expect("decisions keep serving")
        .into_inner()
        .decision
        .unwrap()
}

/// Waits until the server's overall health is `want`, through the health Watch stream.
async fn wait_health(server: &TestServer, want: ServingStatus) {
    let mut health = HealthClient::new(server.channel.clone());
    let mut stream = health
        .watch(HealthCheckRequest {
            service: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    tokio::time::timeout(DEADLINE, async {
        loop {
            let status = stream
                .message()
                .await
                .unwrap()
                .expect("health stream ended");
            if status.status == want as i32 {
                return;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("health never became {want:?}"));
}

/// Retries a write until it succeeds (the store is back), by the deadline.
async fn write_until_ok(server: &TestServer, entry: &str) -> u64 {
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        match write(server, entry).await {
            Ok(revision) => return revision,
            Err(e) if e.code() == Code::Unavailable && tokio::time::Instant::now() < deadline => {
                tokio::task::yield_now().await;
            }
            Err(e) => panic!("writes did not recover: {e:?}"),
        }
    }
}

/// After a restart on the same directory, alice's history holds every acknowledged
/// write, in order.
async fn assert_acknowledged_survive(dir: &Path, acked: &[(u64, String)]) {
    let server = TestServer::start(test_config(dir)).await;
    let mut events = server
        .policy("alice-token")
        .watch_policy(pb::WatchPolicyRequest {
            team_id: TEAM.into(),
            user_id: "alice".into(),
            after_revision: Some(0),
        })
        .await
        .unwrap()
        .into_inner();
    let last = acked.last().unwrap().0;
    let mut seen = Vec::new();
    tokio::time::timeout(DEADLINE, async {
        while seen.last().is_none_or(|(rev, _)| *rev < last) {
            let e = events.message().await.unwrap().expect("stream ended");
            if let Some(pb::watch_policy_response::Event::UserSettings(u)) = e.event {
                seen.push((e.revision, u.mcp_allowed_tools[0].clone()));
            }
        }
    })
    .await
    .expect("history replayed");
    for ack in acked {
        assert!(
            seen.contains(ack),
            "acknowledged write {ack:?} lost: {seen:?}"
        );
    }
    server.stop().await;
}

/// The file deleted while serving: writes refused (not acknowledged and then lost),
/// decisions served, health NOT_SERVING; back once the file is put back.
#[tokio::test]
async fn sqlite_file_deleted_refuses_writes_until_put_back() {
    let dir = tempfile::tempdir().unwrap();
    let server = start_checked(dir.path()).await;
    let mut acked = vec![(write(&server, "a:1").await.unwrap(), "a:1".to_owned())];
    // alice's settings in memory: the promise is that decisions made from memory keep
    // serving (a user never seen needs the store)
    assert_eq!(decide(&server).await.revision, 1);
    let db = db_path(dir.path());
    // a hard link keeps the inode, to put the very file back afterwards
    let kept = dir.path().join("kept.db");
    std::fs::hard_link(&db, &kept).unwrap();
    std::fs::remove_file(&db).unwrap();

    let err = write(&server, "a:lost").await.unwrap_err();
    assert_eq!(err.code(), Code::Unavailable, "{err:?}");
    assert!(err.message().contains("was deleted"), "{}", err.message());
    assert_eq!(decide(&server).await.revision, 1);
    wait_health(&server, ServingStatus::NotServing).await;

    std::fs::hard_link(&kept, &db).unwrap();
    let revision = write_until_ok(&server, "a:2").await;
    acked.push((revision, "a:2".to_owned()));
    wait_health(&server, ServingStatus::Serving).await;
    server.stop().await;
    assert_acknowledged_survive(dir.path(), &acked).await;
}

/// The file replaced by another while serving: the same, until the original is back.
#[tokio::test]
async fn sqlite_file_replaced_refuses_writes_until_put_back() {
    let dir = tempfile::tempdir().unwrap();
    let server = start_checked(dir.path()).await;
    let mut acked = vec![(write(&server, "a:1").await.unwrap(), "a:1".to_owned())];
    let db = db_path(dir.path());
    let original = dir.path().join("original.db");
    std::fs::rename(&db, &original).unwrap();
    std::fs::copy(&original, &db).unwrap();

    let err = write(&server, "a:lost").await.unwrap_err();
    assert_eq!(err.code(), Code::Unavailable, "{err:?}");
    assert!(err.message().contains("was replaced"), "{}", err.message());
    assert_eq!(decide(&server).await.revision, 1);
    wait_health(&server, ServingStatus::NotServing).await;

    std::fs::rename(&original, &db).unwrap();
    let revision = write_until_ok(&server, "a:2").await;
    acked.push((revision, "a:2".to_owned()));
    wait_health(&server, ServingStatus::Serving).await;
    server.stop().await;
    assert_acknowledged_survive(dir.path(), &acked).await;
}

/// `chattr +i` stops writes even for root (file modes do not): the filesystem must
/// support it (ext4, xfs, btrfs; not tmpfs or overlayfs).
fn chattr(path: &Path, flag: &str) -> bool {
    std::process::Command::new("chattr")
        .arg(flag)
        .arg(path)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The files made read-only (immutable) while serving: writes UNAVAILABLE with the
/// reason, decisions served; writable again, writes go on without a restart.
#[tokio::test]
async fn sqlite_read_only_refuses_writes_until_writable() {
    // the temp directory, else cargo's own (on the checkout's filesystem): /tmp may be
    // a tmpfs or an overlay, which have no immutable flag
    let Some(dir) = [
        std::env::temp_dir(),
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")),
    ]
    .into_iter()
    .filter_map(|base| tempfile::tempdir_in(base).ok())
    .find(|dir| {
        let probe = dir.path().join("probe");
        std::fs::write(&probe, b"").is_ok() && chattr(&probe, "+i") && chattr(&probe, "-i")
    }) else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run the read-only fault: chattr +i, as root, on the temp directory's or the target directory's filesystem"
        );
        eprintln!(
            "skipped the read-only fault: chattr +i is not possible here (needs root and an ext4-like filesystem)"
        );
        return;
    };
    let server = start_checked(dir.path()).await;
    let mut acked = vec![(write(&server, "a:1").await.unwrap(), "a:1".to_owned())];
    let db = db_path(dir.path());
    let wal = dir.path().join("toolgate.db-wal");
    assert!(chattr(&wal, "+i"));
    chattr(&db, "+i");
    let err = write(&server, "a:lost").await.unwrap_err();
    chattr(&wal, "-i");
    chattr(&db, "-i");
    assert_eq!(err.code(), Code::Unavailable, "{err:?}");
    assert_eq!(decide(&server).await.revision, 1);

    let revision = write_until_ok(&server, "a:2").await;
    acked.push((revision, "a:2".to_owned()));
    server.stop().await;
    assert_acknowledged_survive(dir.path(), &acked).await;
}

/// The file corrupted in place while serving (same inode, so the identity check
/// cannot see it): the integrity check or the write itself finds it, writes are then
/// refused UNAVAILABLE saying to restore from a backup, health turns NOT_SERVING, and
/// decisions keep serving from memory.
#[tokio::test]
async fn sqlite_file_corrupted_refuses_writes() {
    let dir = tempfile::tempdir().unwrap();
    let server = start_checked(dir.path()).await;
    for i in 0..20 {
        write(&server, &format!("a:{i}")).await.unwrap();
    }
    let db = db_path(dir.path());
    // everything into the main file first, so the damage is what the server reads
    let mut conn = <sqlx::SqliteConnection as sqlx::Connection>::connect(&format!(
        "sqlite://{}",
        db.display()
    ))
    .await
    .unwrap();
    sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
        .execute(&mut conn)
        .await
        .unwrap();
    drop(conn);
    {
        use std::io::{Seek, SeekFrom, Write};
        let len = std::fs::metadata(&db).unwrap().len();
        assert!(
            len > 8192,
            "the database has more than one page ({len} bytes)"
        );
        let mut file = std::fs::OpenOptions::new().write(true).open(&db).unwrap();
        // every page but the first (the header) overwritten with a pattern that is no
        // b-tree page
        file.seek(SeekFrom::Start(4096)).unwrap();
        file.write_all(&vec![0xA5; (len - 4096) as usize]).unwrap();
        file.sync_all().unwrap();
    }

    let deadline = tokio::time::Instant::now() + DEADLINE;
    let err = loop {
        match write(&server, "a:after").await {
            Err(e) => break e,
            Ok(_) if tokio::time::Instant::now() < deadline => tokio::task::yield_now().await,
            Ok(_) => panic!("writes to a corrupted file were still acknowledged at the deadline"),
        }
    };
    assert_eq!(err.code(), Code::Unavailable, "{err:?}");
    wait_health(&server, ServingStatus::NotServing).await;
    let err = write(&server, "a:refused").await.unwrap_err();
    assert_eq!(err.code(), Code::Unavailable, "{err:?}");
    assert!(
        err.message().contains("restore it from a backup"),
        "{}",
        err.message()
    );
    assert!(decide(&server).await.revision >= 20);
    server.stop().await;
}

/// A catch-up that fails after a commit: the write is answered UNAVAILABLE saying it
/// committed, the team is reported stale, and the hub retries until it applies, with
/// no further write. The same holds for a catch-up on a notice from another replica.
#[tokio::test]
async fn failed_catch_up_is_retried_until_applied() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use toolgate::auth::{Principal, Role};
    use toolgate::hub::{Hub, Lag};
    use toolgate::policy::AdminControls;
    use toolgate::service::{Service, ServiceError};
    use toolgate::store::{Notice, SqliteStore, Store};

    let dir = tempfile::tempdir().unwrap();
    let inner = SqliteStore::open(&dir.path().join("t.db"), 100)
        .await
        .unwrap();
    let broken = Arc::new(AtomicBool::new(false));
    let store: Arc<dyn Store> = Arc::new(flaky::Flaky {
        inner,
        broken: broken.clone(),
    });
    let hub = Arc::new(Hub::new(store.clone(), 16, 100));
    let service = Service::new(
        hub.clone(),
        Default::default(),
        Duration::from_secs(15),
        Default::default(),
        None,
    );
    let admin = Principal {
        groups: Default::default(),
        name: "admin".into(),
        role: Role::Admin,
        team: Some(TEAM.into()),
        user: None,
    };
    let kill = AdminControls {
        kill_switch: true,
        ..Default::default()
    };
    // the team is read (cached at revision 0) before the reads break
    assert_eq!(hub.revision(TEAM).await.unwrap(), 0);
    broken.store(true, Ordering::SeqCst);
    let err = service
        .update_admin(&admin, TEAM, kill.clone(), None)
        .await
        .unwrap_err();
    let ServiceError::Unavailable(message) = &err else {
        panic!("{err:?}")
    };
    assert!(message.contains("committed at revision 1"), "{message}");
    assert!(hub.health().borrow().stale.contains_key(TEAM));
    assert_eq!(hub.revision(TEAM).await.unwrap(), 0);
    let behind = Lag {
        max_revisions: 1,
        teams_behind: 1,
    };
    assert_eq!(hub.lag().await.unwrap(), behind, "the metric shows the lag");

    // reads come back: the monitor applies the change with no further write
    let mut health = hub.health();
    tokio::spawn(
        hub.clone()
            .monitor(Duration::from_millis(50), Duration::from_secs(600)),
    );
    broken.store(false, Ordering::SeqCst);
    tokio::time::timeout(DEADLINE, health.wait_for(|h| h.stale.is_empty()))
        .await
        .expect("the team caught up")
        .unwrap();
    assert_eq!(hub.revision(TEAM).await.unwrap(), 1);
    assert!(hub.admin(TEAM).await.unwrap().stored().doc.kill_switch);
    assert_eq!(hub.lag().await.unwrap(), Lag::default());

    // another replica's commit, announced while reads fail
    broken.store(true, Ordering::SeqCst);
    store
        .put_admin(TEAM, &AdminControls::default(), None, "other")
        .await
        .unwrap();
    let (notices, rx) = futures::channel::mpsc::unbounded();
    tokio::spawn(hub.clone().follow(Box::pin(rx)));
    notices.unbounded_send(Notice::Team(TEAM.into())).unwrap();
    tokio::time::timeout(DEADLINE, health.wait_for(|h| !h.stale.is_empty()))
        .await
        .expect("the team is reported stale")
        .unwrap();
    assert_eq!(hub.lag().await.unwrap(), behind);
    broken.store(false, Ordering::SeqCst);
    tokio::time::timeout(DEADLINE, health.wait_for(|h| h.stale.is_empty()))
        .await
        .expect("the team caught up")
        .unwrap();
    assert_eq!(hub.revision(TEAM).await.unwrap(), 2);
    assert_eq!(hub.lag().await.unwrap(), Lag::default());
}

mod flaky {
    //! A store whose change history cannot be read while `broken` is set.
    use async_trait::async_trait;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use toolgate::policy::{AdminControls, UserSettings};
    use toolgate::store::*;

    pub struct Flaky {
        pub inner: SqliteStore,
        pub broken: Arc<AtomicBool>,
    }

    #[async_trait]
    impl Store for Flaky {
        async fn team_revision(&self, team_id: &str) -> Result<u64, StoreError> {
            self.inner.team_revision(team_id).await
        }
        async fn team_revisions(&self) -> Result<Vec<(String, u64)>, StoreError> {
            self.inner.team_revisions().await
        }
        async fn get_admin(&self, team_id: &str) -> Result<Versioned<AdminControls>, StoreError> {
            self.inner.get_admin(team_id).await
        }
        async fn put_admin(
            &self,
            team_id: &str,
            controls: &AdminControls,
            expected: Option<u64>,
            actor: &str,
        ) -> Result<Versioned<AdminControls>, StoreError> {
            self.inner
                .put_admin(team_id, controls, expected, actor)
                .await
        }
        async fn get_user(
            &self,
            team_id: &str,
            user_id: &str,
        ) -> Result<Versioned<UserSettings>, StoreError> {
            self.inner.get_user(team_id, user_id).await
        }
        async fn put_user(
            &self,
            team_id: &str,
            user_id: &str,
            settings: &UserSettings,
            expected: Option<u64>,
            actor: &str,
        ) -> Result<Versioned<UserSettings>, StoreError> {
            self.inner
                .put_user(team_id, user_id, settings, expected, actor)
                .await
        }
        async fn changes_after(
            &self,
            team_id: &str,
            after: u64,
            limit: u32,
        ) -> Result<History, StoreError> {
            if self.broken.load(Ordering::SeqCst) {
                return Err(StoreError::Corrupt(
                    "injected: change history unreadable".into(),
                ));
            }
            self.inner.changes_after(team_id, after, limit).await
        }
        async fn append_audit(&self, events: &[NewAuditEvent]) -> Result<(), StoreError> {
            self.inner.append_audit(events).await
        }
        async fn list_audit(&self, filter: &AuditFilter) -> Result<Vec<AuditEvent>, StoreError> {
            self.inner.list_audit(filter).await
        }
        async fn consume_quota(&self, key: &QuotaKey<'_>, max: u64) -> Result<bool, StoreError> {
            self.inner.consume_quota(key, max).await
        }
        async fn quota_used(&self, key: &QuotaKey<'_>) -> Result<u64, StoreError> {
            self.inner.quota_used(key).await
        }
        async fn append_records(
            &self,
            audit: &[&NewAuditEvent],
            decisions: &EncodedDecisions,
        ) -> Result<Vec<u64>, StoreError> {
            self.inner.append_records(audit, decisions).await
        }
        async fn list_decisions(
            &self,
            query: &DecisionQuery,
        ) -> Result<Vec<StoredDecision>, StoreError> {
            self.inner.list_decisions(query).await
        }
        async fn decisions_between(
            &self,
            first: u64,
            last: u64,
            limit: u32,
        ) -> Result<Vec<StoredDecision>, StoreError> {
            self.inner.decisions_between(first, last, limit).await
        }
        async fn prune_decisions(&self, retention: &Retention) -> Result<Pruned, StoreError> {
            self.inner.prune_decisions(retention).await
        }
        fn disk_full(&self) -> bool {
            self.inner.disk_full()
        }
        async fn newest_decision_at(&self) -> Result<Option<i64>, StoreError> {
            self.inner.newest_decision_at().await
        }
        async fn create_token(
            &self,
            token: &NewToken,
            actor: &str,
        ) -> Result<IssuedToken, StoreError> {
            self.inner.create_token(token, actor).await
        }
        async fn revoke_token(
            &self,
            token_id: &str,
            actor: &str,
        ) -> Result<Option<IssuedToken>, StoreError> {
            self.inner.revoke_token(token_id, actor).await
        }
        async fn list_tokens(
            &self,
            team_id: Option<&str>,
            active_at: Option<i64>,
            limit: u32,
        ) -> Result<Vec<IssuedToken>, StoreError> {
            self.inner.list_tokens(team_id, active_at, limit).await
        }
        async fn get_token(&self, token_id: &str) -> Result<Option<IssuedToken>, StoreError> {
            self.inner.get_token(token_id).await
        }
        async fn active_token_count(&self, team_id: &str, now_ms: i64) -> Result<u64, StoreError> {
            self.inner.active_token_count(team_id, now_ms).await
        }
        async fn active_tokens(&self, now_ms: i64) -> Result<Vec<IssuedToken>, StoreError> {
            self.inner.active_tokens(now_ms).await
        }
        async fn write_pins(
            &self,
            team_id: &str,
            server: &str,
            tools: &[SeenTool],
            how: PinWrite,
            actor: &str,
        ) -> Result<(Vec<StoredPin>, bool), StoreError> {
            self.inner
                .write_pins(team_id, server, tools, how, actor)
                .await
        }
        async fn accept_pin(
            &self,
            team_id: &str,
            server: &str,
            tool: &str,
            sha256: &str,
            actor: &str,
        ) -> Result<Option<StoredPin>, StoreError> {
            self.inner
                .accept_pin(team_id, server, tool, sha256, actor)
                .await
        }
        async fn list_pins(
            &self,
            team_id: &str,
            server: Option<&str>,
            changed_only: bool,
            limit: u32,
        ) -> Result<Vec<StoredPin>, StoreError> {
            self.inner
                .list_pins(team_id, server, changed_only, limit)
                .await
        }
        async fn get_pin_settings(&self, team_id: &str) -> Result<PinSettings, StoreError> {
            self.inner.get_pin_settings(team_id).await
        }
        async fn put_pin_settings(
            &self,
            team_id: &str,
            settings: PinSettings,
            actor: &str,
        ) -> Result<(), StoreError> {
            self.inner.put_pin_settings(team_id, settings, actor).await
        }
        async fn record_client_decisions(&self, rows: &[ClientDecision]) -> Result<(), StoreError> {
            self.inner.record_client_decisions(rows).await
        }
        async fn client_decisions(
            &self,
            team_id: &str,
            tool_use_ids: &[&str],
        ) -> Result<Vec<ClientDecision>, StoreError> {
            self.inner.client_decisions(team_id, tool_use_ids).await
        }
        async fn record_sign_in(&self, sign_in: &SignIn) -> Result<(), StoreError> {
            self.inner.record_sign_in(sign_in).await
        }
        async fn list_sign_ins(
            &self,
            team_id: Option<&str>,
            limit: u32,
        ) -> Result<Vec<SignIn>, StoreError> {
            self.inner.list_sign_ins(team_id, limit).await
        }
        async fn create_approval(&self, approval: &NewApproval) -> Result<(), StoreError> {
            self.inner.create_approval(approval).await
        }
        async fn answer_approval(
            &self,
            request_id: &str,
            answer: &Answer,
        ) -> Result<Answered, StoreError> {
            self.inner.answer_approval(request_id, answer).await
        }
        async fn get_approval(
            &self,
            request_id: &str,
        ) -> Result<Option<ApprovalRecord>, StoreError> {
            self.inner.get_approval(request_id).await
        }
        async fn list_approvals(
            &self,
            team_id: &str,
            pending_only: bool,
            limit: u32,
        ) -> Result<Vec<ApprovalRecord>, StoreError> {
            self.inner
                .list_approvals(team_id, pending_only, limit)
                .await
        }
        async fn find_grant(
            &self,
            team_id: &str,
            user_id: &str,
            session_id: Option<&str>,
            call_key: &str,
            now_ms: i64,
        ) -> Result<Option<(String, i64)>, StoreError> {
            self.inner
                .find_grant(team_id, user_id, session_id, call_key, now_ms)
                .await
        }
        async fn notices(&self) -> Result<Option<NoticeStream>, StoreError> {
            self.inner.notices().await
        }
        async fn check(&self) -> Result<(), StoreError> {
            self.inner.check().await
        }
    }
}

/// `toolgate serve --config FILE` through `sh`, with SIGXFSZ ignored so a file-size
/// limit fails writes (EFBIG) instead of killing the process; its address and pid.
fn spawn_ignoring_xfsz(config: &Path) -> (ServerProcess, String) {
    let mut command = std::process::Command::new("sh");
    command
        .arg("-c")
        .arg(r#"trap '' XFSZ; exec "$0" serve --config "$1""#)
        .arg(env!("CARGO_BIN_EXE_toolgate"))
        .arg(config);
    spawn_server(command)
}

/// A client of a server run as a separate process.
async fn remote(addr: &str) -> TestClient {
    let channel = tonic::transport::Channel::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    TestClient { channel }
}

/// The calls the helpers above make, on any channel.
struct TestClient {
    channel: tonic::transport::Channel,
}

impl TestClient {
    async fn write(&self, entry: &str) -> Result<u64, tonic::Status> {
        let mut s = user_settings(TEAM, "alice");
        s.mcp_allowed_tools = vec![entry.to_owned()];
        UserSettingsServiceClient::with_interceptor(self.channel.clone(), Auth::new("admin-token"))
            .update_user_settings(pb::UpdateUserSettingsRequest {
                settings: Some(s),
                expected_revision: None,
                update_mask: None,
            })
            .await
            .map(|r| r.into_inner().settings.unwrap().revision)
    }

    async fn write_until_ok(&self, entry: &str) -> u64 {
        let deadline = tokio::time::Instant::now() + DEADLINE;
        loop {
            match self.write(entry).await {
                Ok(revision) => return revision,
                Err(e)
                    if e.code() == Code::Unavailable && tokio::time::Instant::now() < deadline =>
                {
                    tokio::task::yield_now().await;
                }
                Err(e) => panic!("writes did not recover: {e:?}"),
            }
        }
    }

    async fn decide(&self) -> pb::Decision {
        PolicyServiceClient::with_interceptor(self.channel.clone(), Auth::new("alice-token"))
            .evaluate(pb::EvaluateRequest {
                approval: None,
                team_id: TEAM.into(),
                user_id: "alice".into(),
                call: Some(mcp("jira", "create")),
                explain: false,
                agent: None,
                client: String::new(),
                tool_use_id: String::new(),
            })
            .await
            .expect("decisions keep serving")
            .into_inner()
            .decision
            .unwrap()
    }
}

fn prlimit_fsize(pid: u32, limit: &str) {
    let ok = std::process::Command::new("prlimit")
        .args(["--pid", &pid.to_string(), &format!("--fsize={limit}")])
        .status()
        .expect("prlimit (util-linux)");
    assert!(ok.success());
}

/// The disk full, as a file-size limit on the real process (`RLIMIT_FSIZE`, no mount
/// or root needed): writes UNAVAILABLE, decisions served; room again, writes go on.
#[tokio::test]
async fn disk_full_refuses_writes_until_there_is_room() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = checked_store_config_file(dir.path(), None);
    let (mut child, addr) = spawn_ignoring_xfsz(&yaml);
    let client = remote(&addr).await;
    let mut acked = vec![(client.write("a:1").await.unwrap(), "a:1".to_owned())];
    // big writes, so the WAL must grow past what it already holds
    prlimit_fsize(child.id(), "1:unlimited");
    let err = client.write("a:lost").await.unwrap_err();
    assert_eq!(err.code(), Code::Unavailable, "{err:?}");
    assert_eq!(client.decide().await.revision, 1);

    prlimit_fsize(child.id(), "unlimited:unlimited");
    let revision = client.write_until_ok("a:2").await;
    acked.push((revision, "a:2".to_owned()));
    child.kill().unwrap();
    child.wait().unwrap();
    assert_acknowledged_survive(&dir.path().join("data"), &acked).await;
}

/// PostgreSQL crashes (immediate stop) under two replicas and comes back: writes
/// UNAVAILABLE meanwhile, decisions served from the cache, writes and watchers go on
/// without a restart, and nothing acknowledged is lost.
#[tokio::test]
async fn postgres_killed_and_restarted_under_two_replicas() {
    let Some(cluster) = support::pg::Cluster::start("postgres killed under replicas") else {
        return;
    };
    let replica = |url: String| async move {
        let dir = tempfile::tempdir().unwrap();
        let mut config = test_config(dir.path());
        config.store.url = Some(url);
        config.store.check_secs = 1;
        // riding out the crash from memory is the subject here; past the bound on
        // staleness only DENYs are answered (tests/it/partition.rs)
        config.store.max_staleness_secs = 300;
        (TestServer::start(config).await, dir)
    };
    let (a, _da) = replica(cluster.url()).await;
    let (b, _db) = replica(cluster.url()).await;
    let mut acked = vec![(write(&a, "a:1").await.unwrap(), "a:1".to_owned())];
    let mut on_b = b
        .policy("alice-token")
        .watch_policy(pb::WatchPolicyRequest {
            team_id: TEAM.into(),
            user_id: "alice".into(),
            after_revision: Some(0),
        })
        .await
        .unwrap()
        .into_inner();

    // each replica decides for alice once, so she is in its cache (a user never seen
    // cannot be decided while the store is away: that call fails, it does not guess)
    assert_eq!(decide(&a).await.revision, 1);
    assert_eq!(decide(&b).await.revision, 1);
    cluster.kill();
    let err = write(&a, "a:lost").await.unwrap_err();
    assert_eq!(err.code(), Code::Unavailable, "{err:?}");
    assert_eq!(decide(&a).await.revision, 1);
    assert_eq!(decide(&b).await.revision, 1);

    cluster.ctl("start");
    let revision = write_until_ok(&a, "a:2").await;
    acked.push((revision, "a:2".to_owned()));
    // B's watcher gets every acknowledged write, the one after the crash included
    let mut seen = Vec::new();
    tokio::time::timeout(DEADLINE, async {
        while seen.last().is_none_or(|(rev, _)| *rev < revision) {
            let e = on_b.message().await.unwrap().expect("stream ended");
            if let Some(pb::watch_policy_response::Event::UserSettings(u)) = e.event {
                seen.push((e.revision, u.mcp_allowed_tools[0].clone()));
            }
        }
    })
    .await
    .expect("the watcher on the other replica caught up");
    for ack in &acked {
        assert!(seen.contains(ack), "{ack:?} not seen on B: {seen:?}");
    }
    a.stop().await;
    b.stop().await;
}

/// A replica killed (SIGKILL) in the middle of a stream of writes: the other replica
/// keeps deciding and taking writes, and its watcher has every write the killed one
/// acknowledged.
#[tokio::test]
async fn postgres_replica_killed_mid_stream() {
    let Some(cluster) = support::pg::Cluster::start("replica killed mid-stream") else {
        return;
    };
    let url = cluster.url();
    let dir_a = tempfile::tempdir().unwrap();
    let dir_b = tempfile::tempdir().unwrap();
    let (mut child_a, addr_a) = spawn_binary(&checked_store_config_file(dir_a.path(), Some(&url)));
    let (mut child_b, addr_b) = spawn_binary(&checked_store_config_file(dir_b.path(), Some(&url)));
    let (a, b) = (remote(&addr_a).await, remote(&addr_b).await);
    let mut on_b =
        PolicyServiceClient::with_interceptor(b.channel.clone(), Auth::new("alice-token"))
            .watch_policy(pb::WatchPolicyRequest {
                team_id: TEAM.into(),
                user_id: "alice".into(),
                after_revision: Some(0),
            })
            .await
            .unwrap()
            .into_inner();
    let writer = tokio::spawn(async move {
        let mut acked = Vec::new();
        for i in 0u64.. {
            let entry = format!("s{i}:*");
            match a.write(&entry).await {
                Ok(revision) => acked.push((revision, entry)),
                Err(_) => break,
            }
        }
        acked
    });
    // kill A once B has seen a good number of its writes
    let mut seen = Vec::new();
    tokio::time::timeout(DEADLINE, async {
        while seen.len() < 20 {
            let e = on_b.message().await.unwrap().expect("stream ended");
            if let Some(pb::watch_policy_response::Event::UserSettings(u)) = e.event {
                seen.push((e.revision, u.mcp_allowed_tools[0].clone()));
            }
        }
    })
    .await
    .expect("writes through A reach B");
    child_a.kill().unwrap();
    child_a.wait().unwrap();
    let acked = writer.await.unwrap();
    let last_b = b.write_until_ok("after:kill").await;
    assert!(b.decide().await.revision >= last_b);
    tokio::time::timeout(DEADLINE, async {
        while seen.last().is_none_or(|(rev, _)| *rev < last_b) {
            let e = on_b.message().await.unwrap().expect("stream ended");
            if let Some(pb::watch_policy_response::Event::UserSettings(u)) = e.event {
                seen.push((e.revision, u.mcp_allowed_tools[0].clone()));
            }
        }
    })
    .await
    .expect("B's own write reaches its watcher");
    for ack in &acked {
        assert!(
            seen.contains(ack),
            "{ack:?} acknowledged by A, not seen on B"
        );
    }
    child_b.kill().unwrap();
    child_b.wait().unwrap();
}
