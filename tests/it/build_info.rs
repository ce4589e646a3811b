//! The build a binary says it is: `toolgate --version` and `GetServerConfig` report the
//! version and the commit the top-level `build.rs` embedded.

use crate::support::{Auth, binary_config_file, spawn_binary, toolgate_binary};
use toolgate::proto::v1 as pb;
use toolgate::proto::v1::server_info_service_client::ServerInfoServiceClient;

/// What `build.rs` embedded in this package (the test binary and `toolgate` alike).
const COMMIT: &str = env!("TOOLGATE_COMMIT");

/// git's short hash of HEAD, when the sources are a checkout and git is installed.
fn git_head() -> Option<String> {
    let out = std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

#[test]
fn version_names_the_commit_the_binary_was_built_from() {
    let out = std::process::Command::new(toolgate_binary())
        .arg("--version")
        .output()
        .expect("run toolgate --version");
    assert!(out.status.success(), "{out:?}");
    let printed = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        printed.trim_end(),
        format!("toolgate {} ({COMMIT})", env!("CARGO_PKG_VERSION"))
    );
    // a commit given in the environment stands in for git's (an image without .git)
    if std::env::var_os("TOOLGATE_COMMIT").is_none()
        && let Some(head) = git_head()
    {
        assert_eq!(COMMIT, head, "the embedded commit is HEAD's");
    }
}

#[tokio::test]
async fn the_server_reports_the_build_it_runs() {
    let dir = tempfile::tempdir().unwrap();
    let (_child, addr) = spawn_binary(&binary_config_file(dir.path()));
    let channel = tonic::transport::Channel::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let answer = ServerInfoServiceClient::with_interceptor(channel, Auth::new("admin-token"))
        .get_server_config(pb::GetServerConfigRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        (answer.version.as_str(), answer.commit.as_str()),
        (env!("CARGO_PKG_VERSION"), COMMIT)
    );
}
