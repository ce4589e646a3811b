//! PostgreSQL for tests: a fresh database per test on the server named by
//! `TOOLGATE_TEST_POSTGRES_URL`. Without it a test is skipped, loudly, except
//! under CI, where a skip is a failure.

use sqlx::Connection;

pub const URL_VAR: &str = "TOOLGATE_TEST_POSTGRES_URL";

/// A URL to a new empty database, or None (after saying so) when no server is configured.
pub async fn fresh_database(test: &str) -> Option<String> {
    let Ok(base) = std::env::var(URL_VAR) else {
        assert!(
            std::env::var_os("CI").is_none(),
            "{URL_VAR} must be set in CI: {test} needs PostgreSQL"
        );
        eprintln!("skipped {test}: set {URL_VAR}=postgres://USER@HOST:PORT/postgres to run it");
        return None;
    };
    let name = format!("toolgate_test_{}", hex::encode(rand::random::<[u8; 8]>()));
    let mut conn = sqlx::PgConnection::connect(&base)
        .await
        .expect("connect to test postgresql");
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&mut conn)
        .await
        .expect("create test database");
    let (prefix, _) = base.rsplit_once('/').expect("url has a database path");
    Some(format!("{prefix}/{name}"))
}

/// A private PostgreSQL cluster for tests that stop and start the database. Needs
/// the server binaries (`TOOLGATE_TEST_PG_BIN`, default /usr/lib/postgresql/15/bin)
/// and root (to run them as `postgres`).
pub struct Cluster {
    bin: std::path::PathBuf,
    dir: tempfile::TempDir,
    pub port: u16,
}

impl Cluster {
    /// Starts a fresh cluster, or None (after saying so) where that cannot be done.
    pub fn start(test: &str) -> Option<Self> {
        let bin = std::path::PathBuf::from(
            std::env::var("TOOLGATE_TEST_PG_BIN")
                .unwrap_or_else(|_| "/usr/lib/postgresql/15/bin".into()),
        );
        let usable = bin.join("initdb").exists()
            && std::process::Command::new("id")
                .arg("-u")
                .output()
                .is_ok_and(|o| o.stdout.starts_with(b"0\n"));
        if !usable {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI must run {test} (postgresql binaries and root)"
            );
            eprintln!(
                "skipped {test}: needs postgresql server binaries in {} and root",
                bin.display()
            );
            return None;
        }
        let dir = tempfile::Builder::new()
            .prefix("toolgate-pg")
            .tempdir()
            .unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let cluster = Self { bin, dir, port };
        cluster.su(
            &format!(
                "chmod 700 {0} && {1}/initdb -D {0}/data -A trust -U postgres",
                cluster.path(),
                cluster.bin.display()
            ),
            true,
        );
        cluster.ctl("start");
        Some(cluster)
    }

    fn path(&self) -> String {
        self.dir.path().display().to_string()
    }

    fn su(&self, command: &str, chown: bool) {
        if chown {
            let ok = std::process::Command::new("chown")
                .args(["postgres", &self.path()])
                .status()
                .unwrap();
            assert!(ok.success());
        }
        let out = std::process::Command::new("su")
            .args(["postgres", "-c", command])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{command}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// `pg_ctl start|stop`, waiting until done.
    pub fn ctl(&self, action: &str) {
        let opts = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1",
            self.port,
            self.path()
        );
        self.su(
            &format!(
                "{}/pg_ctl -D {}/data -w -m fast -l {}/log -o '{opts}' {action}",
                self.bin.display(),
                self.path(),
                self.path()
            ),
            false,
        );
    }

    /// Stops the server as a crash would (`pg_ctl -m immediate`: no shutdown checkpoint).
    pub fn kill(&self) {
        self.su(
            &format!(
                "{}/pg_ctl -D {}/data -w -m immediate stop",
                self.bin.display(),
                self.path()
            ),
            false,
        );
    }

    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = std::process::Command::new("su")
            .args([
                "postgres",
                "-c",
                &format!(
                    "{}/pg_ctl -D {}/data -m immediate stop",
                    self.bin.display(),
                    self.path()
                ),
            ])
            .output();
    }
}
