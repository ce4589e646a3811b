//! A real Prometheus (Debian's `prometheus`, installed by .ci/run) scrapes the metrics
//! endpoint: the target is up and toolgate's series are stored. Without the binary the
//! test says it was skipped, except in CI.

#[path = "support/mod.rs"]
mod support;

use std::time::Duration;
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The body of `GET path` from `addr`, or None when nothing answers yet.
async fn get(addr: std::net::SocketAddr, path: &str) -> Option<String> {
    let mut stream = tokio::net::TcpStream::connect(addr).await.ok()?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.ok()?;
    Some(answer.split_once("\r\n\r\n")?.1.to_owned())
}

#[tokio::test]
async fn prometheus_scrapes_the_endpoint() {
    let prometheus = match std::process::Command::new("prometheus")
        .arg("--version")
        .output()
    {
        Ok(out) if out.status.success() => "prometheus",
        _ if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("CI=true but prometheus cannot run: .ci/run installs it")
        }
        _ => {
            eprintln!("skipped: prometheus not found (apt-get install prometheus)");
            return;
        }
    };
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(&dir.path().join("data"));
    config.metrics.listen = Some("127.0.0.1:0".into());
    let app = toolgate::server::App::build(config).await.unwrap();
    let metrics = app.metrics_addr.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(toolgate::server::run(listener, app, async {
        let _ = stopped.await;
    }));

    // a free port for Prometheus' own listener (it takes no port 0)
    let web = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global: {{ scrape_interval: 1s }}\nscrape_configs:\n  - job_name: toolgate\n    static_configs: [{{ targets: ['{metrics}'] }}]\n"
        ),
    )
    .unwrap();
    let mut child = tokio::process::Command::new(prometheus)
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.path().join("tsdb").display()
        ))
        .arg(format!("--web.listen-address={web}"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();

    let query = "/api/v1/query?query=toolgate_watchers%7Bjob%3D%22toolgate%22%7D";
    let stored = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            if let Some(body) = get(web, query).await
                && body.contains("\"__name__\":\"toolgate_watchers\"")
            {
                return body;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await
    .expect("Prometheus stored a toolgate series within 60 s");
    assert!(stored.contains("\"job\":\"toolgate\""), "{stored}");
    let up = get(web, "/api/v1/query?query=up%7Bjob%3D%22toolgate%22%7D")
        .await
        .unwrap();
    assert!(up.contains(",\"1\"]"), "the target is up: {up}");

    child.kill().await.unwrap();
    let _ = stop.send(());
    task.await.unwrap().unwrap();
}
