//! Test helper: starts the real server on 127.0.0.1:0 with a token per role, and
//! builds authenticated clients.

#![allow(dead_code)]

pub mod pause;
pub mod pg;

use std::path::Path;
use std::time::Duration;
use tempfile::TempDir;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tonic::metadata::MetadataValue;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;
use toolgate::auth::{Role, hash_token};
use toolgate::config::{Config, TokenConfig};
use toolgate::proto::v1 as pb;
use toolgate::server::{App, run};

pub use pb::admin_service_client::AdminServiceClient;
pub use pb::decision_log_service_client::DecisionLogServiceClient;
pub use pb::policy_service_client::PolicyServiceClient;
pub use pb::server_info_service_client::ServerInfoServiceClient;
pub use pb::token_service_client::TokenServiceClient;
pub use pb::user_settings_service_client::UserSettingsServiceClient;

/// The team most tests use, and a second one for isolation checks.
pub const TEAM: &str = "acme";
pub const OTHER_TEAM: &str = "globex";

/// Principals configured on every test server: (token, role, team, user).
pub const PRINCIPALS: &[(&str, Role, Option<&str>, Option<&str>)] = &[
    ("operator-token", Role::Operator, None, None),
    ("admin-token", Role::Admin, Some(TEAM), None),
    ("alice-token", Role::Member, Some(TEAM), Some("alice")),
    ("bob-token", Role::Member, Some(TEAM), Some("bob")),
    ("service-token", Role::Service, Some(TEAM), None),
    ("other-admin-token", Role::Admin, Some(OTHER_TEAM), None),
];

pub fn test_config(data_dir: &Path) -> Config {
    let mut config = Config {
        listen: "127.0.0.1:0".into(),
        data_dir: data_dir.to_owned(),
        shutdown_grace_secs: 5,
        ..Default::default()
    };
    config.auth.tokens = PRINCIPALS
        .iter()
        .map(|(token, role, team, user)| TokenConfig {
            groups: Vec::new(),
            name: token.trim_end_matches("-token").to_owned(),
            sha256: hash_token(token),
            role: *role,
            team: team.map(Into::into),
            user: user.map(Into::into),
        })
        .collect();
    config
}

/// A running server; dropping it without `stop` aborts it.
pub struct TestServer {
    pub addr: std::net::SocketAddr,
    /// The console's address, when `console.listen` was set.
    pub console: Option<std::net::SocketAddr>,
    pub channel: Channel,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl TestServer {
    /// Starts a server with `config`.
    pub async fn start(config: Config) -> Self {
        let app = App::build(config).await.expect("build app");
        let console = app.console_addr;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            run(listener, app, async {
                let _ = stopped.await;
            })
            .await
            .expect("server run");
        });
        // connect() retries nothing: the listener is already bound, so it succeeds at once
        let channel = Channel::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect_timeout(Duration::from_secs(5))
            .connect()
            .await
            .expect("connect");
        Self {
            addr,
            console,
            channel,
            stop: Some(stop),
            task: Some(task),
        }
    }

    /// Stops gracefully and waits until the server has finished.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            task.await.expect("server task");
        }
    }

    pub fn admin(&self, token: &str) -> AdminServiceClient<InterceptedService<Channel, Auth>> {
        AdminServiceClient::with_interceptor(self.channel.clone(), Auth::new(token))
    }

    pub fn users(
        &self,
        token: &str,
    ) -> UserSettingsServiceClient<InterceptedService<Channel, Auth>> {
        UserSettingsServiceClient::with_interceptor(self.channel.clone(), Auth::new(token))
    }

    pub fn policy(&self, token: &str) -> PolicyServiceClient<InterceptedService<Channel, Auth>> {
        PolicyServiceClient::with_interceptor(self.channel.clone(), Auth::new(token))
    }

    pub fn pins(
        &self,
        token: &str,
    ) -> pb::pin_service_client::PinServiceClient<InterceptedService<Channel, Auth>> {
        pb::pin_service_client::PinServiceClient::with_interceptor(
            self.channel.clone(),
            Auth::new(token),
        )
    }

    pub fn tokens(&self, token: &str) -> TokenServiceClient<InterceptedService<Channel, Auth>> {
        TokenServiceClient::with_interceptor(self.channel.clone(), Auth::new(token))
    }

    pub fn decisions(
        &self,
        token: &str,
    ) -> DecisionLogServiceClient<InterceptedService<Channel, Auth>> {
        DecisionLogServiceClient::with_interceptor(self.channel.clone(), Auth::new(token))
    }

    /// The records of `team` listed with `token`, once there are at least `at_least`
    /// (the log is written off the decision path), looked at again until `within`.
    pub async fn team_decisions(
        &self,
        token: &str,
        team: &str,
        at_least: usize,
        within: Duration,
    ) -> Vec<pb::DecisionRecord> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let listed = self
                .decisions(token)
                .list_decisions(pb::ListDecisionsRequest {
                    filter: Some(pb::DecisionFilter {
                        team_id: team.into(),
                        ..Default::default()
                    }),
                    page_size: 1000,
                    page_token: String::new(),
                })
                .await
                .expect("list decisions")
                .into_inner()
                .decisions;
            if listed.len() >= at_least {
                return listed;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "team {team}: {} of {at_least} records within {within:?}",
                listed.len()
            );
            // the writer batches on its own schedule: look again shortly
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub fn info(&self, token: &str) -> ServerInfoServiceClient<InterceptedService<Channel, Auth>> {
        ServerInfoServiceClient::with_interceptor(self.channel.clone(), Auth::new(token))
    }

    /// Writes the admin controls of team [`TEAM`] as its admin; the revision written.
    pub async fn set_controls(&self, controls: pb::AutoRunControls) -> u64 {
        self.admin("admin-token")
            .update_team_admin_settings(pb::UpdateTeamAdminSettingsRequest {
                team_id: TEAM.into(),
                auto_run_controls: Some(controls),
                expected_revision: None,
            })
            .await
            .expect("admin write")
            .into_inner()
            .settings
            .expect("the settings written")
            .revision
    }

    /// Turns yolo mode on for `user` of team [`TEAM`], as the user (`<user>-token`).
    pub async fn yolo(&self, user: &str) {
        self.users(&format!("{user}-token"))
            .update_user_settings(pb::UpdateUserSettingsRequest {
                settings: Some(pb::UserSettings {
                    use_yolo_mode: true,
                    ..user_settings(TEAM, user)
                }),
                expected_revision: None,
                update_mask: None,
            })
            .await
            .expect("user settings");
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

/// Adds `authorization: Bearer <token>` (nothing for an empty token).
#[derive(Clone)]
pub struct Auth(Option<MetadataValue<tonic::metadata::Ascii>>);

impl Auth {
    pub fn new(token: &str) -> Self {
        Self((!token.is_empty()).then(|| format!("Bearer {token}").parse().unwrap()))
    }
}

impl tonic::service::Interceptor for Auth {
    fn call(&mut self, mut req: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(v) = &self.0 {
            req.metadata_mut().insert("authorization", v.clone());
        }
        Ok(req)
    }
}

/// A server on a fresh data directory (kept alive by the returned TempDir).
pub async fn start() -> (TestServer, TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(test_config(dir.path())).await;
    (server, dir)
}

pub fn mcp(server: &str, tool: &str) -> pb::ToolCall {
    pb::ToolCall {
        kind: Some(pb::tool_call::Kind::Mcp(pb::McpCall {
            server: server.into(),
            tool: tool.into(),
            action: String::new(),
        })),
        arguments: None,
    }
}

pub fn user_settings(team: &str, user: &str) -> pb::UserSettings {
    pb::UserSettings {
        team_id: team.into(),
        user_id: user.into(),
        ..Default::default()
    }
}

/// A server process started by a test: killed and reaped when dropped, so a test that
/// panics before its own `kill` leaves no server running. Derefs to the `Child`.
#[derive(Debug)]
pub struct ServerProcess(pub std::process::Child);

impl std::ops::Deref for ServerProcess {
    type Target = std::process::Child;
    fn deref(&self) -> &std::process::Child {
        &self.0
    }
}

impl std::ops::DerefMut for ServerProcess {
    fn deref_mut(&mut self) -> &mut std::process::Child {
        &mut self.0
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        // already exited (the test waited for it) is fine: kill then fails, wait returns
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The `toolgate` binary: Cargo's, for the integration tests; for the benches (a
/// package of their own, which Cargo builds no binary for) the one beside them in
/// the target directory: `cargo build --release` first.
pub fn toolgate_binary() -> std::path::PathBuf {
    if let Some(path) = option_env!("CARGO_BIN_EXE_toolgate") {
        return path.into();
    }
    // target/<profile>/deps/<bench> → target/<profile>/toolgate
    let exe = std::env::current_exe().expect("the running executable's path");
    let bin = exe
        .parent()
        .and_then(Path::parent)
        .map(|dir| dir.join("toolgate"))
        .expect("the target directory");
    assert!(
        bin.exists(),
        "{} is missing: run `cargo build --release` before the benches",
        bin.display()
    );
    bin
}

/// `test_config` as a file the real binary reads (`dir/toolgate.yaml`, data under
/// `dir/data`, JSON logs as [`spawn_binary`] expects them).
pub fn binary_config_file(dir: &Path) -> std::path::PathBuf {
    binary_config_file_with(dir, |_| {})
}

/// [`binary_config_file`] with `edit` applied to the configuration first.
pub fn binary_config_file_with(dir: &Path, edit: impl FnOnce(&mut Config)) -> std::path::PathBuf {
    let mut config = test_config(&dir.join("data"));
    config.log.format = toolgate::config::LogFormat::Json;
    edit(&mut config);
    let path = dir.join("toolgate.yaml");
    std::fs::write(&path, serde_norway::to_string(&config).unwrap()).unwrap();
    path
}

/// [`binary_config_file`] on the store at `store_url` (the embedded one when `None`),
/// its reachability checked every second, as the tests of a store's loss want.
pub fn checked_store_config_file(dir: &Path, store_url: Option<&str>) -> std::path::PathBuf {
    binary_config_file_with(dir, |c| {
        c.store.url = store_url.map(Into::into);
        c.store.check_secs = 1;
    })
}

/// Starts the real `toolgate serve --config FILE` (JSON logs expected) and returns it
/// with the address it logged. `TOOLGATE_*` variables of the test's own environment
/// are not passed on.
pub fn spawn_binary(config: &Path) -> (ServerProcess, String) {
    let mut command = std::process::Command::new(toolgate_binary());
    command.args(["serve", "--config"]).arg(config);
    spawn_server(command)
}

/// Starts `command`, a toolgate server logging JSON to stderr, without the test's own
/// `TOOLGATE_*` variables; waits for its serving line and returns the child with the
/// address it logged. The rest of the log is drained.
pub fn spawn_server(mut command: std::process::Command) -> (ServerProcess, String) {
    use std::io::{BufRead, BufReader};
    for (key, _) in std::env::vars().filter(|(k, _)| k.starts_with("TOOLGATE_")) {
        command.env_remove(key);
    }
    let mut child = ServerProcess(
        command
            .stderr(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("spawn toolgate"),
    );
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = Vec::new();
    let addr = loop {
        let Some(Ok(line)) = lines.next() else {
            panic!("toolgate exited before serving: {seen:#?}");
        };
        seen.push(line.clone());
        let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) else {
            continue;
        };
        if v["fields"]["message"] == "serving" {
            break v["fields"]["addr"].as_str().unwrap().to_owned();
        }
    };
    // keep draining the log so the child never blocks on a full pipe
    std::thread::spawn(move || for _ in lines {});
    (child, addr)
}

/// A process's resident set in bytes, from /proc (for benches).
pub fn process_rss_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .expect("VmRSS")
        * 1024
}

/// CPU time a process has used, user and system, from /proc (clock ticks of 10 ms).
pub fn process_cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("proc stat");
    // the fields after the command name, which is in parentheses and may hold spaces
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    Duration::from_millis(ticks * 10)
}

/// An audit event's detail as JSON (null when it has none).
pub fn detail(e: &pb::AuditEvent) -> serde_json::Value {
    e.detail.as_ref().map_or(serde_json::Value::Null, |d| {
        serde_json::Value::Object(toolgate::proto::json::object_from_pb(d, "detail").unwrap())
    })
}

/// An audit kind by the name the store writes (`admin_settings_updated`).
pub fn audit_kind(name: &str) -> i32 {
    pb::AuditEventKind::from_str_name(&format!("AUDIT_EVENT_KIND_{}", name.to_uppercase()))
        .unwrap_or_else(|| panic!("{name} is no audit kind")) as i32
}

/// A roles document, written as its JSON, as the API's message.
pub fn roles(json: &str) -> Option<pb::RolesDocument> {
    let doc: toolgate::policy::roles::RolesDocument =
        serde_json::from_str(json).expect("a roles document");
    toolgate::proto::roles::roles_to_pb(&doc)
}

/// The API's roles message as the document's JSON (null when unset).
pub fn roles_json(doc: &Option<pb::RolesDocument>) -> serde_json::Value {
    doc.clone().map_or(serde_json::Value::Null, |d| {
        let doc = toolgate::proto::roles::roles_from_pb(d, "roles").unwrap();
        serde_json::to_value(doc).unwrap()
    })
}

/// JSON as a protobuf `Value` / `Struct`.
pub fn pb_value(v: &serde_json::Value) -> prost_types::Value {
    toolgate::proto::json::value_to_pb(v)
}

pub fn pb_struct(v: &serde_json::Value) -> prost_types::Struct {
    toolgate::proto::json::object_to_pb(v.as_object().expect("a JSON object"))
}

/// A protobuf `Value` as JSON.
pub fn json_of(v: &Option<prost_types::Value>) -> serde_json::Value {
    toolgate::proto::json::value_from_pb(v.as_ref().expect("a value"), "value").unwrap()
}

/// `GetServerConfig`'s configuration as JSON.
pub fn config_of(r: &pb::GetServerConfigResponse) -> serde_json::Value {
    serde_json::Value::Object(
        toolgate::proto::json::object_from_pb(r.config.as_ref().expect("a config"), "config")
            .unwrap(),
    )
}

/// How long [`eventually`] waits for one replica to hear of another's change.
pub const EVENTUALLY: Duration = Duration::from_secs(10);

/// Waits until `check` holds, or panics naming `what` after `deadline`: for what
/// another replica learns from PostgreSQL's notices.
pub async fn eventually<F, Fut>(deadline: Duration, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    tokio::time::timeout(deadline, async {
        while !check().await {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{what}: not within {deadline:?}"));
}
