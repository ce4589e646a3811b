//! Approval rows as the database holds them: a row an earlier version wrote loads
//! typed, and a row whose columns do not parse fails closed, naming the request and
//! the column.

use crate::policy::{Call, Outcome, Reason};
use crate::store::{
    Answer, ApprovalCall, ApprovalDecision, ApprovalState, ScopeKind, SqliteStore, Store,
    StoreError,
};

const OLD_CALL: &str = r#"{"kind":"shell","command":"make test"}"#;
const OLD_DECISION: &str = r#"{"outcome":"ASK","reason":"COMMAND_NOT_ALLOWLISTED","message":"ask","matched_entry":null,"revision":3,"candidates":[],"command_candidates":["make test"]}"#;

/// A store and a second connection to its file, for writing rows by hand.
async fn store() -> (SqliteStore, sqlx::SqlitePool, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.db");
    let store = SqliteStore::open(&path, 100).await.unwrap();
    let raw =
        sqlx::SqlitePool::connect_with(sqlx::sqlite::SqliteConnectOptions::new().filename(&path))
            .await
            .unwrap();
    (store, raw, dir)
}

async fn insert(
    raw: &sqlx::SqlitePool,
    id: &str,
    call: &str,
    decision: &str,
    state: &str,
    scope: Option<&str>,
) {
    sqlx::query(
        "INSERT INTO approvals (request_id, team_id, user_id, principal, agent_id, client,
           session_id, call, call_key, summary, decision, created_at, deadline, state, scope)
         VALUES (?, 't', 'alice', 'alice', '', 'codex', 's1', ?, 'k', 'shell: make test', ?,
           1000, 5000, ?, ?)",
    )
    .bind(id)
    .bind(call)
    .bind(decision)
    .bind(state)
    .bind(scope)
    .execute(raw)
    .await
    .unwrap();
}

#[tokio::test]
async fn a_row_written_before_the_types_loads() {
    let (store, raw, _dir) = store().await;
    insert(
        &raw,
        "apr_old",
        OLD_CALL,
        OLD_DECISION,
        "approved",
        Some("session"),
    )
    .await;
    let r = store.get_approval("apr_old").await.unwrap().unwrap();
    assert_eq!(
        r.new.call,
        ApprovalCall {
            call: Call::Shell("make test".into()),
            cwd: None,
            original: None,
        }
    );
    let ApprovalDecision {
        outcome,
        reason,
        revision,
        command_candidates,
        ..
    } = r.new.decision;
    assert_eq!(
        (outcome, reason, revision, command_candidates),
        (
            Outcome::Ask,
            Reason::CommandNotAllowlisted,
            3,
            vec!["make test".to_owned()]
        )
    );
    assert_eq!(
        (r.state, r.scope),
        (ApprovalState::Approved, Some(ScopeKind::Session))
    );
    assert_eq!(store.list_approvals("t", false, 10).await.unwrap().len(), 1);
}

/// Each column that does not parse: the request cannot be read, listed or answered,
/// and the error names the request and the column.
#[tokio::test]
async fn a_row_that_does_not_parse_fails_closed_naming_the_request_and_column() {
    let cases = [
        (
            "call",
            r#"{"kind":"exec","command":"make"}"#,
            OLD_DECISION,
            "pending",
            None,
        ),
        ("call", "not json", OLD_DECISION, "pending", None),
        (
            "call",
            r#"{"kind":"shell","command":"x","sha256":"ab"}"#,
            OLD_DECISION,
            "pending",
            None,
        ),
        (
            "decision",
            OLD_CALL,
            r#"{"outcome":"ASK"}"#,
            "pending",
            None,
        ),
        (
            "decision",
            OLD_CALL,
            &OLD_DECISION.replace("COMMAND_NOT_ALLOWLISTED", "NEWER"),
            "pending",
            None,
        ),
        ("state", OLD_CALL, OLD_DECISION, "PENDING", None),
        ("scope", OLD_CALL, OLD_DECISION, "approved", Some("forever")),
    ];
    for (i, (column, call, decision, state, scope)) in cases.into_iter().enumerate() {
        let (store, raw, _dir) = store().await;
        let id = format!("apr_{i}");
        insert(&raw, &id, call, decision, state, scope).await;
        let e = store.get_approval(&id).await.expect_err(column);
        let StoreError::Corrupt(text) = &e else {
            panic!("{column}: {e:?} is not Corrupt");
        };
        assert!(
            text.contains(&format!("{id:?}")) && text.contains(&format!("`{column}`")),
            "{column}: {text}"
        );
        assert!(
            matches!(
                store.list_approvals("t", false, 10).await,
                Err(StoreError::Corrupt(_))
            ),
            "{column}: a list with the row fails too"
        );
        if state == "pending" {
            let answer = Answer {
                state: ApprovalState::Expired,
                by: String::new(),
                at_ms: 6_000,
                scope: None,
                grant: None,
                reason: None,
                allowlist_entry: None,
                allowlist_revision: None,
            };
            let answered = store.answer_approval(&id, &answer).await;
            assert!(
                matches!(answered, Err(StoreError::Corrupt(_))),
                "{column}: {answered:?}"
            );
        }
    }
}
