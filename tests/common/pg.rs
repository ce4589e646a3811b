//! PostgreSQL for tests: a fresh database per test on the server named by
//! `TOOLGATE_TEST_POSTGRES_URL`. Without it a test is skipped, loudly, except
//! under CI, where a skip is a failure.

use sqlx::Connection;

pub const URL_VAR: &str = "TOOLGATE_TEST_POSTGRES_URL";

/// A URL to a new empty database, or None (after saying so) when no server is configured.
pub async fn fresh_database(test: &str) -> Option<String> {
    let Ok(base) = std::env::var(URL_VAR) else {
        assert!(std::env::var_os("CI").is_none(), "{URL_VAR} must be set in CI: {test} needs PostgreSQL");
        eprintln!("skipped {test}: set {URL_VAR}=postgres://USER@HOST:PORT/postgres to run it");
        return None;
    };
    let name = format!("toolgate_test_{}", hex::encode(rand::random::<[u8; 8]>()));
    let mut conn = sqlx::PgConnection::connect(&base).await.expect("connect to test postgresql");
    sqlx::query(&format!("CREATE DATABASE {name}")).execute(&mut conn).await.expect("create test database");
    let (prefix, _) = base.rsplit_once('/').expect("url has a database path");
    Some(format!("{prefix}/{name}"))
}
