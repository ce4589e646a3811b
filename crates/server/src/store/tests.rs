//! The store's migrations and failures against real SQLite files: an older
//! database opened and migrated, a read-only one answered as unavailable.

use super::*;

/// A new SQLite database at `path` with only the first `migrations` applied, as a
/// release that knew no more left it.
async fn migrated_to(path: &std::path::Path, migrations: usize) -> sqlx::SqlitePool {
    let options = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true);
    let old = sqlx::SqlitePool::connect_with(options).await.unwrap();
    for (number, sql) in schema::pending_migrations(0, &schema::SQLITE)
        .unwrap()
        .into_iter()
        .take(migrations)
    {
        sqlx::raw_sql(&sql).execute(&old).await.unwrap();
        sqlx::raw_sql(&format!("PRAGMA user_version = {number}"))
            .execute(&old)
            .await
            .unwrap();
    }
    old
}

/// A database made before quotas were counted per user opens: the quota table
/// takes its new key (the old counts, which name no user, are dropped).
#[tokio::test]
async fn a_database_with_the_old_quota_table_is_migrated() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.db");
    let old = migrated_to(&path, 2).await;
    sqlx::query("INSERT INTO session_quotas VALUES ('t', 's1', 'CREATE', 5, 0)")
        .execute(&old)
        .await
        .unwrap();
    old.close().await;

    let store = SqliteStore::open(&path, 100).await.unwrap();
    let key = QuotaKey {
        team_id: "t",
        user_id: "alice",
        session_id: "s1",
        operation: "CREATE",
    };
    assert_eq!(store.quota_used(&key).await.unwrap(), 0);
    assert!(store.consume_quota(&key, 1).await.unwrap());
    assert!(!store.consume_quota(&key, 1).await.unwrap());
}

/// A database whose decision log was a row per record opens with its records
/// in blocks, each as it was written, and the ids go on after the last.
#[tokio::test]
async fn decision_rows_move_into_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.db");
    let old = migrated_to(&path, 7).await;
    let hostile = "a \"quoted\" \\ back\nslash é 🙂 \u{1}";
    for (id, at, subject) in [(3, 10, "git status"), (9, 20, hostile)] {
        sqlx::query(
            "INSERT INTO decisions (id, at, team_id, user_id, principal, agent_id, role,
             client, source, kind, server, tool, action, subject, subject_bytes,
             subject_sha256, outcome, reason, matched_entry, revision)
             VALUES (?, ?, 't', 'u', 'p', '', '', 'codex', 'evaluate', 'shell', '', '', '',
             ?, ?, 'ab', 'ASK', 'COMMAND_NOT_ALLOWLISTED', '', 4611686018427387903)",
        )
        .bind(id)
        .bind(at)
        .bind(subject)
        .bind(subject.len() as i64)
        .execute(&old)
        .await
        .unwrap();
    }
    old.close().await;

    let store = SqliteStore::open(&path, 100).await.unwrap();
    let query = DecisionQuery {
        team_id: Some("t".into()),
        limit: 10,
        ..DecisionQuery::default()
    };
    let listed = store.list_decisions(&query).await.unwrap();
    let read: Vec<_> = listed
        .iter()
        .map(|r| (r.id, r.decision.at_ms, r.decision.subject.as_str()))
        .collect();
    assert_eq!(read, [(9, 20, hostile), (3, 10, "git status")]);
    let d = &listed[0].decision;
    assert_eq!(
        (d.subject_bytes, d.revision),
        (hostile.len() as u64, u64::MAX >> 2)
    );
    assert_eq!(
        (d.client.as_str(), d.reason.as_str()),
        ("codex", "COMMAND_NOT_ALLOWLISTED")
    );
    let mut next = d.clone();
    next.at_ms = 30;
    let ids = store
        .append_records(
            &[],
            &EncodedDecisions::from(&[&PackedDecision::from(&next)][..]),
        )
        .await
        .unwrap();
    assert_eq!(ids, [10]);
}

/// Issue 13 item 9: a write refused because the database is read-only is an
/// outage with its reason, not an internal error.
#[tokio::test]
async fn a_read_only_database_is_unavailable_with_the_reason() {
    use sqlx::sqlite::SqliteConnectOptions;
    let dir = tempfile::tempdir().unwrap();
    let options = SqliteConnectOptions::new()
        .filename(dir.path().join("t.db"))
        .create_if_missing(true);
    let rw = sqlx::SqlitePool::connect_with(options.clone())
        .await
        .unwrap();
    sqlx::query("CREATE TABLE t (x)")
        .execute(&rw)
        .await
        .unwrap();
    rw.close().await;
    // what a file, directory or mount that cannot be written gives
    let pool = sqlx::SqlitePool::connect_with(options.read_only(true))
        .await
        .unwrap();
    let e: StoreError = sqlx::query("INSERT INTO t VALUES (1)")
        .execute(&pool)
        .await
        .unwrap_err()
        .into();
    match e {
        StoreError::Unavailable(reason) => assert!(reason.contains("read-only"), "{reason}"),
        other => panic!("expected unavailable, got {other:?}"),
    }
    let e: StoreError = sqlx::query("SELECT * FROM missing")
        .execute(&pool)
        .await
        .unwrap_err()
        .into();
    assert!(matches!(e, StoreError::Backend(_)), "{e:?}");
}
