//! The run's surroundings: the team's seeded policy, CPU pinning, TLS, a null OTLP
//! receiver, and what is read back from the server (log records, metrics).

use crate::support::*;
use std::sync::Arc;
use std::time::Duration;
use tonic::transport::Channel;
use toolgate::proto::v1 as pb;

/// Every thread of process `pid` (and those it starts later) onto one CPU.
pub(crate) fn pin(pid: u32, cpu: usize) {
    let status = std::process::Command::new("taskset")
        .args(["-a", "-c", "-p", &cpu.to_string(), &pid.to_string()])
        .stdout(std::process::Stdio::null())
        .status()
        .expect("taskset (util-linux) is needed for --pin");
    assert!(status.success(), "taskset -p {cpu} {pid} failed");
}

/// An admin allowlist of `n` entries (exact, `server:*`, `*:tool` and globs) that
/// lets `jira:*` auto-run, and alice in auto-run mode; with `deny`, `github:delete_repo`
/// blocked too (only then: the ALLOW runs stay as they were).
pub(crate) async fn seed(channel: &Channel, n: usize, deny: bool) {
    let mut allowlist: Vec<String> = (0..n.saturating_sub(1))
        .map(|i| match i % 10 {
            0 => format!("srv{i}:*"),
            1 => format!("*:tool{i}"),
            2 => format!("srv{i}:get_*"),
            _ => format!("srv{i}:tool{i}"),
        })
        .collect();
    allowlist.push("jira:*".into());
    AdminServiceClient::with_interceptor(channel.clone(), Auth::new("admin-token"))
        .update_team_admin_settings(pb::UpdateTeamAdminSettingsRequest {
            team_id: TEAM.into(),
            auto_run_controls: Some(pb::AutoRunControls {
                enabled: true,
                mcp_tool_allowlist: allowlist,
                mcp_tool_blocklist: if deny {
                    vec!["github:delete_repo".into()]
                } else {
                    Vec::new()
                },
                ..Default::default()
            }),
            expected_revision: None,
        })
        .await
        .expect("seed admin settings");
    UserSettingsServiceClient::with_interceptor(channel.clone(), Auth::new("admin-token"))
        .update_user_settings(pb::UpdateUserSettingsRequest {
            settings: Some(pb::UserSettings {
                use_yolo_mode: true,
                ..user_settings(TEAM, "alice")
            }),
            expected_revision: None,
            update_mask: None,
        })
        .await
        .expect("seed user settings");
}

/// A batch of `n` calls: allowed, unlisted and globbed tools, no denials (a DENY
/// writes an audit record, which is another benchmark).
pub(crate) fn batch_request(n: usize) -> pb::EvaluateBatchRequest {
    pb::EvaluateBatchRequest {
        team_id: TEAM.into(),
        user_id: "alice".into(),
        calls: (0..n)
            .map(|i| match i % 4 {
                0 => mcp("jira", &format!("tool{i}")),
                1 => mcp("github", "create_issue"),
                2 => mcp(&format!("srv{}", 10 * i + 2), "get_thing"),
                _ => mcp(
                    &format!("srv{}", 10 * i + 3),
                    &format!("tool{}", 10 * i + 3),
                ),
            })
            .collect(),
        explain: false,
        agent: None,
        client: String::new(),
    }
}

/// The records the decision log holds for the team, once the writer has caught up
/// with `decided` (or has stopped growing for a while: what is missing was shed).
pub(crate) async fn logged_records(channel: &Channel, decided: u64) -> u64 {
    let mut log =
        DecisionLogServiceClient::with_interceptor(channel.clone(), Auth::new("admin-token"));
    let count = |log: &mut DecisionLogServiceClient<_>| {
        let mut log = log.clone();
        async move {
            let mut n = 0u64;
            let mut page_token = String::new();
            loop {
                let page = log
                    .list_decisions(pb::ListDecisionsRequest {
                        filter: Some(pb::DecisionFilter {
                            team_id: TEAM.into(),
                            ..Default::default()
                        }),
                        page_size: 1000,
                        page_token,
                    })
                    .await
                    .expect("list decisions")
                    .into_inner();
                n += page.decisions.len() as u64;
                if page.next_page_token.is_empty() {
                    return n;
                }
                page_token = page.next_page_token;
            }
        }
    };
    let mut last = 0;
    loop {
        let n = count(&mut log).await;
        if n >= decided || (n == last && n > 0) {
            return n;
        }
        last = n;
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

/// The metrics endpoint's text.
pub(crate) async fn scrape(addr: &str) -> String {
    reqwest::get(format!("http://{addr}/metrics"))
        .await
        .expect("scrape the metrics")
        .text()
        .await
        .expect("the metrics' text")
}

/// A counter's value in the metrics' text (0 when it is not there: never counted).
pub(crate) fn counter(text: &str, name: &str) -> u64 {
    text.lines()
        .find(|l| l.starts_with(name) && l[name.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .map_or(0, |v| v as u64)
}

/// A self-signed certificate for `localhost` served by the listener; returns its PEM
/// for the clients to trust.
pub(crate) fn serve_tls(config: &mut toolgate::config::Config, dir: &std::path::Path) -> String {
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["localhost".to_owned()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let (cert_path, key_path) = (dir.join("server.pem"), dir.join("server.key"));
    std::fs::write(&cert_path, cert.pem()).unwrap();
    std::fs::write(&key_path, key.serialize_pem()).unwrap();
    config.tls.cert = Some(cert_path);
    config.tls.key = Some(key_path);
    cert.pem()
}

/// An OTLP logs receiver that takes every request and counts its records; its
/// endpoint.
pub(crate) async fn null_receiver(count: Arc<std::sync::atomic::AtomicU64>) -> String {
    use opentelemetry_proto::tonic::collector::logs::v1::logs_service_server::{
        LogsService, LogsServiceServer,
    };
    use opentelemetry_proto::tonic::collector::logs::v1::{
        ExportLogsServiceRequest, ExportLogsServiceResponse,
    };
    struct Null(Arc<std::sync::atomic::AtomicU64>);
    #[tonic::async_trait]
    impl LogsService for Null {
        async fn export(
            &self,
            request: tonic::Request<ExportLogsServiceRequest>,
        ) -> Result<tonic::Response<ExportLogsServiceResponse>, tonic::Status> {
            let n: usize = request
                .into_inner()
                .resource_logs
                .iter()
                .flat_map(|r| &r.scope_logs)
                .map(|s| s.log_records.len())
                .sum();
            self.0
                .fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
            Ok(tonic::Response::new(ExportLogsServiceResponse::default()))
        }
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(LogsServiceServer::new(Null(count)))
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
    );
    format!("http://{addr}")
}
