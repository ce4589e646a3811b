//! TLS and mTLS on the listener, seen by a third-party client (Python grpcio) with
//! certificates made here: handshakes succeed and fail as configured, client
//! certificates map to principals, and a renewed certificate is served without a
//! restart. The CLI's --ca/--cert/--key reach the same server.
//!
//! Needs `python3` with `grpcio` (`.ci/run` installs it); without it the test says it
//! was skipped, except in CI.

use crate::support;

use prost::Message;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};
use std::path::{Path, PathBuf};
use std::time::Duration;
use support::*;
use toolgate::auth::Role;
use toolgate::config::CertificateConfig;
use toolgate::proto::v1 as pb;

pub(crate) struct Ca(CertifiedIssuer<'static, KeyPair>);

impl Ca {
    pub(crate) fn new(name: &str) -> Self {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        Self(CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap())
    }

    /// (certificate PEM, key PEM) for `cn` with the DNS names `sans`.
    pub(crate) fn issue(&self, cn: &str, sans: &[&str]) -> (String, String) {
        let mut params =
            CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
        params.distinguished_name.push(DnType::CommonName, cn);
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &*self.0).unwrap();
        (cert.pem(), key.serialize_pem())
    }

    pub(crate) fn pem(&self) -> String {
        self.0.pem()
    }
}

pub(crate) fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    // atomically: the server never reads half a file
    toolgate::files::write_atomic(&path, toolgate::files::Mode::KeepTarget, text.as_bytes())
        .unwrap();
    path
}

fn python_ready() -> bool {
    let ok = std::process::Command::new("python3")
        .args(["-c", "import grpc"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI must have python3 with grpcio"
        );
        eprintln!("skipped: python3 with grpcio not found (pip install grpcio)");
    }
    ok
}

const CONFIG: &str = "/toolgate.v1.ServerInfoService/GetServerConfig";
const EVALUATE: &str = "/toolgate.v1.PolicyService/Evaluate";

fn evaluate_for(user: &str) -> String {
    hex::encode(
        pb::EvaluateRequest {
            approval: None,
            team_id: TEAM.into(),
            user_id: user.into(),
            call: Some(mcp("github", "get_issue")),
            explain: false,
            agent: None,
            client: String::new(),
            tool_use_id: String::new(),
        }
        .encode_to_vec(),
    )
}

/// Each call's status code name, as the Python client saw it.
async fn python(
    addr: std::net::SocketAddr,
    ca: Option<&Path>,
    identity: Option<(&Path, &Path)>,
    token: Option<&str>,
    calls: &[(&str, String)],
) -> Vec<String> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/tls_client.py");
    let path = |p: Option<&Path>| p.map_or("-".to_owned(), |p| p.display().to_string());
    let mut command = tokio::process::Command::new("python3");
    command
        .arg(script)
        .arg(addr.to_string())
        .arg(path(ca))
        .arg(path(identity.map(|i| i.0)))
        .arg(path(identity.map(|i| i.1)))
        .arg(token.unwrap_or("-"));
    for (method, request) in calls {
        command.arg(method).arg(request);
    }
    let out = tokio::time::timeout(Duration::from_secs(60), command.output())
        .await
        .expect("the python client finished within 60 s")
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn tls_and_mtls_handshakes_succeed_and_fail_as_configured() {
    if !python_ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("toolgate test ca");
    let (cert, key) = ca.issue("localhost", &["localhost"]);
    let clients = Ca::new("toolgate test clients");
    let (alice_cert, alice_key) = clients.issue("alice", &["alice.acme.example"]);
    let (carol_cert, carol_key) = clients.issue("carol", &[]);
    let stranger = Ca::new("someone else");
    let (mallory_cert, mallory_key) = stranger.issue("alice", &[]);
    let files = dir.path();
    let ca_pem = write(files, "ca.pem", &ca.pem());
    let other_ca_pem = write(files, "other-ca.pem", &stranger.pem());
    let alice = (
        write(files, "alice.pem", &alice_cert),
        write(files, "alice.key", &alice_key),
    );
    let carol = (
        write(files, "carol.pem", &carol_cert),
        write(files, "carol.key", &carol_key),
    );
    let mallory = (
        write(files, "mallory.pem", &mallory_cert),
        write(files, "mallory.key", &mallory_key),
    );

    let mut config = test_config(&files.join("data"));
    config.tls.cert = Some(write(files, "server.pem", &cert));
    config.tls.key = Some(write(files, "server.key", &key));
    config.tls.client_ca = Some(write(files, "clients.pem", &clients.pem()));
    config.tls.require_client_cert = false;
    config.tls.reload_secs = 1;
    config.auth.certificates = vec![CertificateConfig {
        groups: Vec::new(),
        name: "alice-cert".into(),
        subject_cn: None,
        san: Some("dns:alice.acme.example".into()),
        role: Role::Member,
        team: Some(TEAM.into()),
        user: Some("alice".into()),
    }];
    let app = toolgate::server::App::build(config.clone()).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(toolgate::server::run(listener, app, async {
        let _ = stopped.await;
    }));

    let config_call = || (CONFIG, String::new());
    // TLS with a bearer token
    let seen = python(
        addr,
        Some(&ca_pem),
        None,
        Some("alice-token"),
        &[config_call()],
    )
    .await;
    assert_eq!(seen, ["OK"]);
    // a client that does not trust the server's CA, or speaks plaintext, gets nowhere
    let seen = python(
        addr,
        Some(&other_ca_pem),
        None,
        Some("alice-token"),
        &[config_call()],
    )
    .await;
    assert_eq!(seen, ["UNAVAILABLE"]);
    let seen = python(addr, None, None, Some("alice-token"), &[config_call()]).await;
    assert_eq!(seen, ["UNAVAILABLE"]);
    // mTLS: alice's certificate (mapped by SAN) is alice, with no token
    let seen = python(
        addr,
        Some(&ca_pem),
        Some((&alice.0, &alice.1)),
        None,
        &[
            (EVALUATE, evaluate_for("alice")),
            (EVALUATE, evaluate_for("bob")),
        ],
    )
    .await;
    assert_eq!(seen, ["OK", "PERMISSION_DENIED"]);
    // a verified certificate that maps to no principal
    let seen = python(
        addr,
        Some(&ca_pem),
        Some((&carol.0, &carol.1)),
        None,
        &[config_call()],
    )
    .await;
    assert_eq!(seen, ["UNAUTHENTICATED"]);
    // a certificate from another CA fails the handshake, whatever its name
    let seen = python(
        addr,
        Some(&ca_pem),
        Some((&mallory.0, &mallory.1)),
        None,
        &[config_call()],
    )
    .await;
    assert_eq!(seen, ["UNAVAILABLE"]);

    // a renewed certificate, from a new CA, is served without a restart
    let renewed = Ca::new("toolgate renewed ca");
    let (cert, key) = renewed.issue("localhost", &["localhost"]);
    let renewed_pem = write(files, "renewed-ca.pem", &renewed.pem());
    // key first: a poll between the two renames sees a mismatch and keeps the old pair
    write(files, "server.key", &key);
    write(files, "server.pem", &cert);
    let served = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let seen = python(
                addr,
                Some(&renewed_pem),
                None,
                Some("alice-token"),
                &[config_call()],
            )
            .await;
            if seen == ["OK"] {
                return;
            }
        }
    })
    .await;
    assert!(
        served.is_ok(),
        "the renewed certificate was not served within 30 s"
    );
    let seen = python(
        addr,
        Some(&ca_pem),
        None,
        Some("alice-token"),
        &[config_call()],
    )
    .await;
    assert_eq!(
        seen,
        ["UNAVAILABLE"],
        "the old certificate is no longer served"
    );

    // the CLI takes --ca, --cert and --key
    let cli = |args: Vec<String>| async move {
        let run = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolgate"))
            .env_remove("TOOLGATE_TOKEN")
            .env_remove("TOOLGATE_SERVER")
            .args(["--server", &format!("https://localhost:{}", addr.port())])
            .args(args)
            .args(["admin", "get", "--team", TEAM])
            .output();
        tokio::time::timeout(Duration::from_secs(60), run)
            .await
            .expect("the cli finished within 60 s")
            .unwrap()
    };
    let token = || ["--token".to_owned(), "admin-token".to_owned()];
    let renewed_ca = renewed_pem.display().to_string();
    let ok = cli([vec!["--ca".into(), renewed_ca], token().to_vec()].concat()).await;
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let old_ca = ca_pem.display().to_string();
    let untrusted = cli([vec!["--ca".into(), old_ca], token().to_vec()].concat()).await;
    assert!(!untrusted.status.success());

    let _ = stop.send(());
    task.await.unwrap().unwrap();
    drop(config);
}

#[tokio::test]
async fn required_client_certificates_refuse_a_client_without_one() {
    if !python_ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let files = dir.path();
    let ca = Ca::new("toolgate test ca");
    let (cert, key) = ca.issue("localhost", &["localhost"]);
    let clients = Ca::new("toolgate test clients");
    let (alice_cert, alice_key) = clients.issue("alice", &[]);
    let ca_pem = write(files, "ca.pem", &ca.pem());
    let alice = (
        write(files, "alice.pem", &alice_cert),
        write(files, "alice.key", &alice_key),
    );
    let mut config = test_config(&files.join("data"));
    config.tls.cert = Some(write(files, "server.pem", &cert));
    config.tls.key = Some(write(files, "server.key", &key));
    config.tls.client_ca = Some(write(files, "clients.pem", &clients.pem()));
    config.auth.certificates = vec![CertificateConfig {
        groups: Vec::new(),
        name: "alice".into(),
        subject_cn: Some("alice".into()),
        san: None,
        role: Role::Member,
        team: Some(TEAM.into()),
        user: None,
    }];
    let app = toolgate::server::App::build(config).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(toolgate::server::run(listener, app, async {
        let _ = stopped.await;
    }));
    // a token is not enough: the handshake wants a certificate
    let seen = python(
        addr,
        Some(&ca_pem),
        None,
        Some("alice-token"),
        &[(CONFIG, String::new())],
    )
    .await;
    assert_eq!(seen, ["UNAVAILABLE"]);
    // alice's certificate, mapped by its subject CN
    let seen = python(
        addr,
        Some(&ca_pem),
        Some((&alice.0, &alice.1)),
        None,
        &[(EVALUATE, evaluate_for("alice"))],
    )
    .await;
    assert_eq!(seen, ["OK"]);
    let _ = stop.send(());
    task.await.unwrap().unwrap();
}
