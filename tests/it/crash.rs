//! Crash safety: the real binary is killed with SIGKILL in the middle of a stream of
//! writes; after a restart every acknowledged write is there, in order. And a test
//! that fails leaves no server process behind.

use crate::support;

use support::*;
use toolgate::proto::v1 as pb;

async fn client(
    addr: &str,
) -> UserSettingsServiceClient<
    tonic::service::interceptor::InterceptedService<tonic::transport::Channel, Auth>,
> {
    let channel = tonic::transport::Channel::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    UserSettingsServiceClient::with_interceptor(channel, Auth::new("admin-token"))
}

async fn kill_mid_stream_and_check(store_url: Option<&str>) {
    let dir = tempfile::tempdir().unwrap();
    let yaml = binary_config_file_with(dir.path(), |c| c.store.url = store_url.map(Into::into));
    let (mut child, addr) = spawn_binary(&yaml);
    let mut users = client(&addr).await;
    let writer = tokio::spawn(async move {
        let mut acked = Vec::new();
        for i in 0u64.. {
            let mut s = user_settings(TEAM, "alice");
            s.mcp_allowed_tools = vec![format!("s{i}:*")];
            match users
                .update_user_settings(pb::UpdateUserSettingsRequest {
                    settings: Some(s),
                    expected_revision: None,
                    update_mask: None,
                })
                .await
            {
                Ok(r) => acked.push((r.into_inner().settings.unwrap().revision, format!("s{i}:*"))),
                Err(_) => break,
            }
        }
        acked
    });
    // let a good number of writes through, then kill while more are in flight
    let policy_addr = addr.clone();
    let channel = tonic::transport::Channel::from_shared(format!("http://{policy_addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut policy = PolicyServiceClient::with_interceptor(channel, Auth::new("admin-token"));
    loop {
        let eff = policy
            .get_effective_policy(pb::GetEffectivePolicyRequest {
                team_id: TEAM.into(),
                user_id: "alice".into(),
            })
            .await
            .unwrap()
            .into_inner()
            .policy
            .unwrap();
        if eff.revision >= 40 {
            break;
        }
        tokio::task::yield_now().await;
    }
    child.kill().expect("SIGKILL");
    child.wait().unwrap();
    let acked = writer.await.unwrap();
    // the write in flight at the kill may have committed without its answer arriving
    assert!(acked.len() >= 39, "{} writes acknowledged", acked.len());

    let (mut child, addr) = spawn_binary(&yaml);
    let channel = tonic::transport::Channel::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut policy = PolicyServiceClient::with_interceptor(channel, Auth::new("admin-token"));
    let mut events = policy
        .watch_policy(pb::WatchPolicyRequest {
            team_id: TEAM.into(),
            user_id: "alice".into(),
            after_revision: Some(0),
        })
        .await
        .unwrap()
        .into_inner();
    let mut history = Vec::new();
    let last = acked.last().unwrap().0;
    while history.last().is_none_or(|(rev, _)| *rev < last) {
        let e = events.message().await.unwrap().unwrap();
        if let Some(pb::watch_policy_response::Event::UserSettings(u)) = e.event {
            history.push((e.revision, u.mcp_allowed_tools[0].clone()));
        }
    }
    // every acknowledged write is there, with its revision, in order
    assert_eq!(&history[..acked.len()], &acked[..]);
    let revisions: Vec<u64> = history.iter().map(|(r, _)| *r).collect();
    assert!(revisions.windows(2).all(|w| w[0] < w[1]));
    child.kill().unwrap();
    child.wait().unwrap();
}

#[tokio::test]
async fn sqlite_acknowledged_writes_survive_sigkill() {
    kill_mid_stream_and_check(None).await;
}

#[tokio::test]
async fn postgres_acknowledged_writes_survive_sigkill() {
    let Some(url) = support::pg::fresh_database("postgres crash safety").await else {
        return;
    };
    kill_mid_stream_and_check(Some(&url)).await;
}

/// A test that fails between starting the binary and killing it leaves no server
/// behind: the handle kills and reaps it as the panic unwinds.
#[test]
fn a_failing_test_leaves_no_server_running() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = binary_config_file(dir.path());
    let pid = std::sync::atomic::AtomicU32::new(0);
    let failed = std::panic::catch_unwind(|| {
        let (child, _addr) = spawn_binary(&yaml);
        pid.store(child.id(), std::sync::atomic::Ordering::SeqCst);
        panic!("a failed assertion");
    });
    assert!(failed.is_err());
    let pid = pid.load(std::sync::atomic::Ordering::SeqCst);
    assert_ne!(pid, 0);
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "server {pid} still running after the test failed"
    );
}
