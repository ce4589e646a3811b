//! The files the server follows (the TLS certificate, key and client CA, a JWKS
//! file) refuse hostile paths at start, at once and naming the setting: a FIFO
//! (which used to block the start for good), a device (`/dev/zero` used to be read
//! until memory ran out), a directory, a file past the size cap. The policy file's
//! cases are in `policy_file`.

use std::path::{Path, PathBuf};
use std::time::Duration;
use toolgate::config::TlsConfig;

/// Far above a refusal's time: only a blocked read reaches it.
const DEADLINE: Duration = Duration::from_secs(10);

/// (path, what the refusal says) for each hostile case, below `dir`; `too_large`
/// is how the caller words its cap.
fn hostile(dir: &Path, cap: usize, too_large: &str) -> Vec<(PathBuf, String)> {
    let fifo = dir.join("fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.unwrap().success());
    let large = dir.join("large");
    std::fs::write(&large, vec![b' '; cap + 1]).unwrap();
    vec![
        (fifo, "is not a regular file (a FIFO)".into()),
        (
            "/dev/zero".into(),
            "is not a regular file (a device)".into(),
        ),
        (dir.to_owned(), "is not a regular file (a directory)".into()),
        (large, too_large.into()),
    ]
}

#[cfg(unix)]
#[tokio::test]
async fn tls_files_refuse_hostile_paths_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let pem = dir.path().join("any.pem");
    std::fs::write(&pem, "not checked before every file is read").unwrap();
    let cap = toolgate::tls::MAX_PEM_BYTES;
    for (path, says) in hostile(dir.path(), cap, &format!("is larger than {cap} bytes")) {
        for field in ["cert", "key", "client_ca"] {
            let mut config = TlsConfig {
                cert: Some(pem.clone()),
                key: Some(pem.clone()),
                client_ca: Some(pem.clone()),
                ..TlsConfig::default()
            };
            let slot = match field {
                "cert" => &mut config.cert,
                "key" => &mut config.key,
                _ => &mut config.client_ca,
            };
            *slot = Some(path.clone());
            let checked = tokio::task::spawn_blocking(move || toolgate::tls::check(&config));
            let err = tokio::time::timeout(DEADLINE, checked)
                .await
                .expect("refused without blocking")
                .unwrap()
                .unwrap_err()
                .to_string();
            assert!(
                err.starts_with(&format!("tls.{field}: cannot read ")),
                "{err}"
            );
            assert!(err.contains(&says), "{field}: {says:?} not in {err}");
        }
    }
}

#[cfg(unix)]
#[tokio::test]
async fn a_jwks_file_refuses_hostile_paths() {
    let dir = tempfile::tempdir().unwrap();
    let cap = toolgate::jwt::MAX_JWKS_BYTES;
    for (path, says) in hostile(dir.path(), cap, ": larger than 1 MiB") {
        let config = crate::jwt::jwt_config(&path, 30);
        let stop = tokio_util::sync::CancellationToken::new();
        let started = toolgate::jwt::JwtVerifier::start(&config, stop);
        let err = tokio::time::timeout(DEADLINE, started)
            .await
            .expect("refused without blocking")
            .unwrap_err()
            .to_string();
        let name = path.display();
        assert!(
            err.starts_with(&format!("auth.jwt: cannot read the keys from {name}: ")),
            "{err}"
        );
        assert!(err.contains(&says), "{err}");
    }
}
