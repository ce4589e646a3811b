//! One store test suite, run against every backend: the embedded SQLite store and
//! PostgreSQL (`TOOLGATE_TEST_POSTGRES_URL`).

use crate::support;

use std::sync::Arc;
use support::pg;
use toolgate::policy::{AdminControls, Call, Outcome, Reason, UserSettings};
use toolgate::store::{
    Answer, Answered, ApprovalCall, ApprovalDecision, ApprovalState, AuditFilter, ChangeDoc,
    ClientDecision, DecisionQuery, EncodedDecisions, History, NewApproval, NewAuditEvent, NewGrant,
    PackedDecision, PostgresStore, QuotaKey, Retention, ScopeKind, SqliteStore, Store, StoreError,
};

/// Opens a store; calling the reopen closure again gives a new handle on the same data.
type Reopen = Box<dyn Fn(u64) -> futures::future::LocalBoxFuture<'static, Arc<dyn Store>>>;

async fn sqlite(_test: &str) -> Option<(Reopen, tempfile::TempDir)> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.db");
    let reopen: Reopen = Box::new(move |history| {
        let path = path.clone();
        Box::pin(async move {
            Arc::new(SqliteStore::open(&path, history).await.unwrap()) as Arc<dyn Store>
        })
    });
    Some((reopen, dir))
}

async fn postgres(test: &str) -> Option<(Reopen, tempfile::TempDir)> {
    let url = pg::fresh_database(test).await?;
    let reopen: Reopen = Box::new(move |history| {
        let url = url.clone();
        Box::pin(async move {
            Arc::new(PostgresStore::connect(&url, history).await.unwrap()) as Arc<dyn Store>
        })
    });
    Some((reopen, tempfile::tempdir().unwrap()))
}

fn admin(allow: &str) -> AdminControls {
    AdminControls {
        enabled: true,
        mcp_tool_allowlist: vec![allow.into()],
        ..Default::default()
    }
}

fn user(allow: &str) -> UserSettings {
    UserSettings {
        mcp_allowed_tools: vec![allow.into()],
        ..Default::default()
    }
}

async fn unset_documents_are_defaults_at_revision_zero(reopen: Reopen) {
    let store = reopen(100).await;
    assert_eq!(store.team_revision("t").await.unwrap(), 0);
    assert!(store.team_revisions().await.unwrap().is_empty());
    let a = store.get_admin("t").await.unwrap();
    assert_eq!((a.doc, a.revision), (AdminControls::default(), 0));
    let u = store.get_user("t", "alice").await.unwrap();
    assert!(
        u.doc.playwright_protection,
        "browser protection defaults on"
    );
    assert_eq!((u.doc, u.revision), (UserSettings::default(), 0));
}

async fn revisions_increase_per_team(reopen: Reopen) {
    let store = reopen(100).await;
    assert_eq!(
        store
            .put_admin("t", &admin("a:*"), None, "x")
            .await
            .unwrap()
            .revision,
        1
    );
    assert_eq!(
        store
            .put_user("t", "alice", &user("b:*"), None, "x")
            .await
            .unwrap()
            .revision,
        2
    );
    assert_eq!(
        store
            .put_admin("t", &admin("c:*"), Some(1), "x")
            .await
            .unwrap()
            .revision,
        3
    );
    assert_eq!(
        store
            .put_admin("other", &admin("d:*"), None, "x")
            .await
            .unwrap()
            .revision,
        1
    );
    assert_eq!(store.team_revision("t").await.unwrap(), 3);
    let mut all = store.team_revisions().await.unwrap();
    all.sort();
    assert_eq!(all, [("other".to_owned(), 1), ("t".to_owned(), 3)]);
    let a = store.get_admin("t").await.unwrap();
    assert_eq!(
        (a.doc, a.revision, a.updated_by.as_str()),
        (admin("c:*"), 3, "x")
    );
    assert_eq!(store.get_user("t", "alice").await.unwrap().revision, 2);
}

async fn stale_expected_revision_changes_nothing(reopen: Reopen) {
    let store = reopen(100).await;
    store
        .put_admin("t", &admin("a:*"), Some(0), "x")
        .await
        .unwrap();
    let err = store
        .put_admin("t", &admin("b:*"), Some(0), "y")
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::Conflict {
                expected: 0,
                actual: 1
            }
        ),
        "{err:?}"
    );
    let err = store
        .put_user("t", "alice", &user("b:*"), Some(4), "y")
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::Conflict {
                expected: 4,
                actual: 0
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        store.team_revision("t").await.unwrap(),
        1,
        "a refused write allocates no revision"
    );
    assert_eq!(store.get_admin("t").await.unwrap().doc, admin("a:*"));
    let History::Changes(changes) = store.changes_after("t", 0, 100).await.unwrap() else {
        panic!()
    };
    assert_eq!(changes.len(), 1);
}

async fn concurrent_writers_with_expected_revision_never_both_win(reopen: Reopen) {
    let store = reopen(100).await;
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .put_admin("t", &admin(&format!("s{i}:*")), Some(0), "x")
                    .await
            })
        })
        .collect();
    let mut wins = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(_) => wins += 1,
            Err(StoreError::Conflict { .. }) => {}
            Err(e) => panic!("{e:?}"),
        }
    }
    assert_eq!(wins, 1);
    assert_eq!(store.team_revision("t").await.unwrap(), 1);
}

async fn history_in_order_and_truncated_beyond_limit(reopen: Reopen) {
    let store = reopen(3).await;
    for i in 1..=5 {
        store
            .put_user("t", "alice", &user(&format!("s{i}:*")), None, "x")
            .await
            .unwrap();
    }
    let History::Changes(changes) = store.changes_after("t", 2, 100).await.unwrap() else {
        panic!("revision 2 is still retained")
    };
    let revisions: Vec<u64> = changes.iter().map(|c| c.revision).collect();
    assert_eq!(revisions, [3, 4, 5]);
    assert_eq!(
        changes[0].doc,
        ChangeDoc::User {
            user_id: "alice".into(),
            settings: user("s3:*")
        }
    );
    assert_eq!(
        store.changes_after("t", 1, 100).await.unwrap(),
        History::Truncated
    );
    let History::Changes(head) = store.changes_after("t", 5, 100).await.unwrap() else {
        panic!()
    };
    assert!(head.is_empty());
    let History::Changes(limited) = store.changes_after("t", 2, 2).await.unwrap() else {
        panic!()
    };
    assert_eq!(limited.len(), 2);
}

async fn audit_records_writes_and_filters(reopen: Reopen) {
    let store = reopen(100).await;
    store
        .put_admin("t", &admin("a:*"), None, "root")
        .await
        .unwrap();
    store
        .put_user("t", "alice", &user("b:*"), None, "alice")
        .await
        .unwrap();
    store
        .append_audit(&[NewAuditEvent {
            team_id: "t".into(),
            revision: 2,
            actor: "svc".into(),
            kind: "decision_denied".into(),
            detail: serde_json::json!({"reason": "KILL_SWITCH"}),
        }])
        .await
        .unwrap();
    store
        .put_admin("u", &admin("a:*"), None, "root")
        .await
        .unwrap();
    let all = store
        .list_audit(&AuditFilter {
            team_id: Some("t".into()),
            limit: 100,
            ..Default::default()
        })
        .await
        .unwrap();
    let kinds: Vec<&str> = all.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "admin_settings_updated",
            "user_settings_updated",
            "decision_denied"
        ]
    );
    assert_eq!(all[1].actor, "alice");
    assert_eq!(all[1].revision, 2);
    let by_actor = store
        .list_audit(&AuditFilter {
            actor: Some("root".into()),
            limit: 100,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(by_actor.len(), 2, "both teams");
    let page = store
        .list_audit(&AuditFilter {
            team_id: Some("t".into()),
            after_id: all[0].id,
            limit: 1,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(page.len(), 1);
    assert_eq!(page[0].id, all[1].id);
    let denied = store
        .list_audit(&AuditFilter {
            kind: Some("decision_denied".into()),
            limit: 100,
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(denied[0].detail_json.contains("KILL_SWITCH"));
}

async fn reopening_keeps_everything(reopen: Reopen) {
    let store = reopen(100).await;
    store
        .put_admin("t", &admin("a:*"), None, "x")
        .await
        .unwrap();
    store
        .put_user("t", "alice", &user("b:*"), None, "x")
        .await
        .unwrap();
    drop(store);
    let store = reopen(100).await;
    assert_eq!(store.team_revision("t").await.unwrap(), 2);
    assert_eq!(store.get_admin("t").await.unwrap().doc, admin("a:*"));
    assert_eq!(store.get_user("t", "alice").await.unwrap().doc, user("b:*"));
    assert_eq!(
        store
            .put_admin("t", &admin("c:*"), Some(1), "x")
            .await
            .unwrap()
            .revision,
        3
    );
}

fn quota<'a>(team: &'a str, user: &'a str, session: &'a str, operation: &'a str) -> QuotaKey<'a> {
    QuotaKey {
        team_id: team,
        user_id: user,
        session_id: session,
        operation,
    }
}

/// Seed 004's per-session quotas: counted to the limit, then refused; another
/// session, operation, team or user counts on its own (one user reusing another's
/// session id spends only their own); the count survives a reopen; two handles
/// (replicas) racing for the last call never both get it.
async fn session_quotas_count_and_survive(reopen: Reopen) {
    let store = reopen(100).await;
    let alice = quota("t", "alice", "s1", "CREATE");
    assert_eq!(store.quota_used(&alice).await.unwrap(), 0);
    for _ in 0..2 {
        assert!(store.consume_quota(&alice, 2).await.unwrap());
    }
    assert!(!store.consume_quota(&alice, 2).await.unwrap());
    assert_eq!(store.quota_used(&alice).await.unwrap(), 2);
    for (case, other) in [
        ("another session", quota("t", "alice", "s2", "CREATE")),
        ("another operation", quota("t", "alice", "s1", "DELETE")),
        ("another team", quota("u", "alice", "s1", "CREATE")),
        (
            "another user reusing the session id",
            quota("t", "mallory", "s1", "CREATE"),
        ),
    ] {
        assert!(store.consume_quota(&other, 2).await.unwrap(), "{case}");
        assert_eq!(store.quota_used(&other).await.unwrap(), 1, "{case}");
    }
    assert_eq!(store.quota_used(&alice).await.unwrap(), 2);
    assert!(
        !store
            .consume_quota(&quota("t", "alice", "s3", "CREATE"), 0)
            .await
            .unwrap()
    );
    drop(store);
    let store = reopen(100).await;
    assert!(!store.consume_quota(&alice, 2).await.unwrap());
    // a raised limit counts on from what was used
    assert!(store.consume_quota(&alice, 3).await.unwrap());
    let other = reopen(100).await;
    let race = quota("t", "alice", "race", "CREATE");
    let (a, b) = tokio::join!(store.consume_quota(&race, 1), other.consume_quota(&race, 1));
    assert_eq!(
        [a.unwrap(), b.unwrap()].iter().filter(|won| **won).count(),
        1
    );
}

/// Issued tokens: stored with their digest only, listed newest first per team, active
/// until revoked (once) or expired, each create and revoke audited with the token id
/// and never the digest; a second handle (a replica) sees them at once.
async fn issued_tokens_create_list_revoke(reopen: Reopen) {
    use toolgate::store::{AUDIT_TOKEN_CREATED, AUDIT_TOKEN_REVOKED, NewToken};
    let store = reopen(100).await;
    let now = toolgate::store::now_ms();
    let new = |id: &str, team: &str, expires_at_ms: i64| NewToken {
        token_id: id.into(),
        token_hash: toolgate::auth::hash_token(id),
        team_id: team.into(),
        user_id: "alice".into(),
        role: "member".into(),
        expires_at_ms,
        groups: Vec::new(),
    };
    let grouped = NewToken {
        groups: vec!["contractors".into(), "pii".into()],
        ..new("tok_a", "t", now + 60_000)
    };
    let a = store.create_token(&grouped, "op").await.unwrap();
    assert_eq!((a.created_by.as_str(), a.revoked_at_ms), ("op", None));
    assert_eq!(a.groups, ["contractors", "pii"]);
    let read = store.get_token("tok_a").await.unwrap().unwrap();
    assert_eq!(read.groups, ["contractors", "pii"], "the groups read back");
    store
        .create_token(&new("tok_b", "t", now - 1), "op")
        .await
        .unwrap();
    store
        .create_token(&new("tok_c", "u", now + 60_000), "op")
        .await
        .unwrap();
    // the same digest twice is refused (the secret must be fresh)
    assert!(
        store
            .create_token(&new("tok_a", "t", now), "op")
            .await
            .is_err()
    );
    let ids = |v: Vec<toolgate::store::IssuedToken>| {
        let mut ids: Vec<String> = v.into_iter().map(|t| t.token_id).collect();
        ids.sort();
        ids
    };
    assert_eq!(
        ids(store.list_tokens(Some("t"), None, 10).await.unwrap()),
        ["tok_a", "tok_b"]
    );
    // only those in force: tok_b has expired
    assert_eq!(
        ids(store.list_tokens(Some("t"), Some(now), 10).await.unwrap()),
        ["tok_a"]
    );
    assert_eq!(
        ids(store.list_tokens(None, None, 10).await.unwrap()).len(),
        3
    );
    let other = reopen(100).await;
    assert_eq!(
        ids(other.active_tokens(now).await.unwrap()),
        ["tok_a", "tok_c"]
    );
    let revoked = store.revoke_token("tok_a", "admin").await.unwrap().unwrap();
    assert_eq!(revoked.revoked_by.as_deref(), Some("admin"));
    assert!(revoked.revoked_at_ms.is_some());
    // again: nothing changes and no second record
    let again = store.revoke_token("tok_a", "other").await.unwrap().unwrap();
    assert_eq!(again.revoked_by.as_deref(), Some("admin"));
    assert_eq!(store.revoke_token("tok_zz", "admin").await.unwrap(), None);
    assert_eq!(ids(other.active_tokens(now).await.unwrap()), ["tok_c"]);
    assert_eq!(other.active_token_count("t", now).await.unwrap(), 0);
    let audit = store
        .list_audit(&AuditFilter {
            team_id: Some("t".into()),
            limit: 100,
            ..Default::default()
        })
        .await
        .unwrap();
    let kinds: Vec<&str> = audit.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            AUDIT_TOKEN_CREATED,
            AUDIT_TOKEN_CREATED,
            AUDIT_TOKEN_REVOKED
        ]
    );
    for e in &audit {
        assert!(e.detail_json.contains("tok_"), "{}", e.detail_json);
        assert!(
            !e.detail_json.contains(&toolgate::auth::hash_token("tok_a")),
            "a digest in the audit trail: {}",
            e.detail_json
        );
    }
    assert_eq!(audit[2].actor, "admin");
}

fn approval(id: &str, created: i64, deadline: i64) -> NewApproval {
    NewApproval {
        request_id: id.into(),
        team_id: "t".into(),
        user_id: "alice".into(),
        principal: "alice".into(),
        agent_id: String::new(),
        client: "claude-code".into(),
        session_id: "s1".into(),
        call: ApprovalCall {
            call: Call::Shell("make".into()),
            cwd: Some("/work".into()),
            original: None,
        },
        call_key: "shell:make".into(),
        summary: "shell: make".into(),
        decision: ApprovalDecision {
            outcome: Outcome::Ask,
            reason: Reason::AutoRunOff,
            message: "shell: make needs approval".into(),
            matched_entry: None,
            revision: 0,
            candidates: Vec::new(),
            command_candidates: vec!["make".into()],
        },
        created_at_ms: created,
        deadline_ms: deadline,
    }
}

fn answer(state: ApprovalState, at_ms: i64, grant: Option<NewGrant>) -> Answer {
    Answer {
        state,
        by: "admin".into(),
        at_ms,
        scope: grant.as_ref().map(|_| ScopeKind::Session),
        grant,
        reason: None,
        allowlist_entry: None,
        allowlist_revision: None,
    }
}

/// Requests are answered once (before their deadline; expired only from it) and a
/// grant covers its call up to the millisecond it ends, at explicit times.
async fn approvals_answer_once_and_grants_end_exactly(reopen: Reopen) {
    let store = reopen(100).await;
    store
        .create_approval(&approval("a1", 1_000, 5_000))
        .await
        .unwrap();
    let grant = NewGrant {
        session_id: Some("s1".into()),
        expires_at_ms: 3_000,
    };
    let won = store
        .answer_approval("a1", &answer(ApprovalState::Approved, 2_000, Some(grant)))
        .await
        .unwrap();
    assert!(
        matches!(won, Answered::Now(ref r) if r.state == ApprovalState::Approved),
        "{won:?}"
    );
    let late = store
        .answer_approval("a1", &answer(ApprovalState::Denied, 2_500, None))
        .await
        .unwrap();
    assert!(
        matches!(late, Answered::Already(ref r) if r.state == ApprovalState::Approved && r.answered_by.as_deref() == Some("admin")),
        "{late:?}"
    );
    let covers = |session: &'static str, user: &'static str, at: i64| {
        let store = store.clone();
        async move {
            store
                .find_grant("t", user, Some(session), "shell:make", at)
                .await
                .unwrap()
                .is_some()
        }
    };
    assert!(covers("s1", "alice", 2_999).await);
    assert!(!covers("s1", "alice", 3_000).await, "a grant ends exactly");
    assert!(!covers("s2", "alice", 2_000).await, "another session");
    assert!(!covers("s1", "bob", 2_000).await, "another user");
    assert!(
        store
            .find_grant("t", "alice", Some("s1"), "shell:other", 2_000)
            .await
            .unwrap()
            .is_none()
    );

    // at the deadline: no approval, only the expiry
    store
        .create_approval(&approval("a2", 1_000, 5_000))
        .await
        .unwrap();
    let early = store
        .answer_approval("a2", &answer(ApprovalState::Expired, 4_999, None))
        .await
        .unwrap();
    assert!(matches!(early, Answered::Already(ref r) if r.state == ApprovalState::Pending));
    let past = store
        .answer_approval("a2", &answer(ApprovalState::Approved, 5_000, None))
        .await
        .unwrap();
    assert!(matches!(past, Answered::Already(ref r) if r.state == ApprovalState::Pending));
    let expired = store
        .answer_approval("a2", &answer(ApprovalState::Expired, 5_000, None))
        .await
        .unwrap();
    assert!(matches!(expired, Answered::Now(ref r) if r.state == ApprovalState::Expired));
    assert_eq!(
        store
            .answer_approval("nope", &answer(ApprovalState::Approved, 1, None))
            .await
            .unwrap(),
        Answered::Missing
    );

    store
        .create_approval(&approval("a3", 2_000, 9_000))
        .await
        .unwrap();
    let pending: Vec<String> = store
        .list_approvals("t", true, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.new.request_id)
        .collect();
    assert_eq!(pending, ["a3"]);
    assert_eq!(store.list_approvals("t", false, 10).await.unwrap().len(), 3);
    let stored = store.get_approval("a3").await.unwrap().unwrap();
    assert_eq!(stored.new, approval("a3", 2_000, 9_000));
    let kinds: Vec<String> = store
        .list_audit(&AuditFilter {
            team_id: Some("t".into()),
            limit: 100,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.kind)
        .collect();
    assert_eq!(
        kinds,
        [
            "approval_requested",
            "approval_approved",
            "approval_requested",
            "approval_expired",
            "approval_requested"
        ]
    );
}

/// Tool pins: first sight pins (once, whoever races), a different definition is noted
/// once and waits for an admin, acceptance needs the reviewed hash, pins set ahead
/// replace, settings default to trust on first use; every write audited.
async fn tool_pins_first_sight_change_and_acceptance(reopen: Reopen) {
    use toolgate::store::{PinSettings, PinWrite, SeenTool};
    let store = reopen(100).await;
    let seen = |tool: &str, sha: &str| SeenTool {
        tool: tool.into(),
        sha256: sha.into(),
        definition: format!("{{\"name\":\"{tool}\",\"v\":\"{sha}\"}}"),
    };
    let member = PinWrite::Seen {
        pin_first: true,
        reviewed: false,
    };
    let (pins, wrote) = store
        .write_pins(
            "t",
            "gh",
            &[seen("a", "1"), seen("b", "1")],
            member,
            "alice",
        )
        .await
        .unwrap();
    assert!(wrote);
    assert_eq!(pins.len(), 2);
    assert_eq!(
        (
            pins[0].pinned.sha256.as_str(),
            pins[0].reviewed,
            pins[0].pinned.by.as_str()
        ),
        ("1", false, "alice")
    );
    // seen again, the same: nothing written
    let (_, wrote) = store
        .write_pins("t", "gh", &[seen("a", "1")], member, "bob")
        .await
        .unwrap();
    assert!(!wrote);
    // a caller that may not pin first: a new tool stays unpinned
    let (pins, wrote) = store
        .write_pins(
            "t",
            "gh",
            &[seen("c", "1")],
            PinWrite::Seen {
                pin_first: false,
                reviewed: false,
            },
            "bob",
        )
        .await
        .unwrap();
    assert!(pins.is_empty() && !wrote);
    // a change is noted once; a second different one waits behind it
    let (pins, wrote) = store
        .write_pins("t", "gh", &[seen("a", "2")], member, "bob")
        .await
        .unwrap();
    assert!(wrote);
    let changed = pins[0].changed.as_ref().unwrap();
    assert_eq!((changed.sha256.as_str(), changed.by.as_str()), ("2", "bob"));
    assert_eq!(pins[0].pinned.sha256, "1");
    let (pins, wrote) = store
        .write_pins("t", "gh", &[seen("a", "3")], member, "carol")
        .await
        .unwrap();
    assert!(!wrote);
    assert_eq!(pins[0].changed.as_ref().unwrap().sha256, "2");
    // other teams and servers are apart
    assert!(
        store
            .list_pins("u", None, false, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        store
            .list_pins("t", Some("gl"), false, 10)
            .await
            .unwrap()
            .len(),
        0
    );
    let changed_only = store.list_pins("t", None, true, 10).await.unwrap();
    assert_eq!(changed_only.len(), 1);
    assert_eq!(changed_only[0].tool, "a");
    // acceptance names the hash reviewed: another is refused, changing nothing
    assert!(
        store
            .accept_pin("t", "gh", "a", "3", "admin")
            .await
            .unwrap()
            .is_none()
    );
    let accepted = store
        .accept_pin("t", "gh", "a", "2", "admin")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            accepted.pinned.sha256.as_str(),
            accepted.reviewed,
            accepted.changed.is_none()
        ),
        ("2", true, true)
    );
    // the pinned one marked reviewed
    let b = store
        .accept_pin("t", "gh", "b", "1", "admin")
        .await
        .unwrap()
        .unwrap();
    assert!(b.reviewed && b.changed.is_none());
    // set ahead: replaces, reviewed
    let (pins, _) = store
        .write_pins(
            "t",
            "gh",
            &[seen("a", "9"), seen("d", "9")],
            PinWrite::Set,
            "admin",
        )
        .await
        .unwrap();
    assert!(pins.iter().all(|p| p.pinned.sha256 == "9" && p.reviewed));
    let all: Vec<String> = store
        .list_pins("t", Some("gh"), false, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.tool)
        .collect();
    assert_eq!(all, ["a", "b", "d"]);
    // settings
    assert_eq!(
        store.get_pin_settings("t").await.unwrap(),
        PinSettings::default()
    );
    let strict = PinSettings {
        members_pin_first: false,
        hide_flagged: true,
    };
    store.put_pin_settings("t", strict, "admin").await.unwrap();
    assert_eq!(store.get_pin_settings("t").await.unwrap(), strict);
    assert_eq!(
        store.get_pin_settings("u").await.unwrap(),
        PinSettings::default()
    );
    let kinds: Vec<String> = store
        .list_audit(&AuditFilter {
            team_id: Some("t".into()),
            limit: 100,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.kind)
        .collect();
    for kind in [
        "tool_pinned",
        "tool_changed",
        "tool_repinned",
        "pin_settings_updated",
    ] {
        assert!(kinds.iter().any(|k| k == kind), "{kind} in {kinds:?}");
    }
    // kept across a reopen
    drop(store);
    let store = reopen(100).await;
    assert_eq!(
        store.list_pins("t", None, false, 10).await.unwrap().len(),
        3
    );
}

/// The organisation's group policies are the document of a reserved team: kept,
/// revised, its history and audit of its own, apart from every team's, and read
/// back whole after a reopen.
async fn org_group_policies_keep_their_own_revision_history_and_audit(reopen: Reopen) {
    use toolgate::auth::ORG_TEAM;
    use toolgate::policy::groups::GroupControls;
    let store = reopen(100).await;
    store
        .put_admin("t", &admin("a:*"), None, "x")
        .await
        .unwrap();
    let org = |denied: &str| AdminControls {
        groups: Box::new(
            [(
                "contractors".to_owned(),
                GroupControls {
                    denied: vec![denied.into()],
                    ..Default::default()
                },
            )]
            .into(),
        ),
        ..Default::default()
    };
    let first = store
        .put_admin(ORG_TEAM, &org("git push"), Some(0), "op")
        .await
        .unwrap();
    assert_eq!(first.revision, 1);
    let second = store
        .put_admin(ORG_TEAM, &org("rm"), Some(1), "op")
        .await
        .unwrap();
    assert_eq!(second.revision, 2);
    assert!(matches!(
        store.put_admin(ORG_TEAM, &org("x"), Some(1), "op").await,
        Err(StoreError::Conflict {
            expected: 1,
            actual: 2
        })
    ));
    assert_eq!(
        store.team_revision("t").await.unwrap(),
        1,
        "apart from teams"
    );
    let History::Changes(changes) = store.changes_after(ORG_TEAM, 0, 100).await.unwrap() else {
        panic!("history truncated");
    };
    let denied: Vec<Vec<String>> = changes
        .iter()
        .map(|c| match &c.doc {
            ChangeDoc::Admin { controls } => controls.groups["contractors"].denied.clone(),
            ChangeDoc::User { .. } => panic!("a user change"),
        })
        .collect();
    assert_eq!(denied, [vec!["git push".to_owned()], vec!["rm".to_owned()]]);
    let audit = store
        .list_audit(&AuditFilter {
            team_id: Some(ORG_TEAM.into()),
            limit: 100,
            ..Default::default()
        })
        .await
        .unwrap();
    let seen: Vec<(u64, &str)> = audit
        .iter()
        .map(|e| (e.revision, e.actor.as_str()))
        .collect();
    assert_eq!(seen, [(1, "op"), (2, "op")]);
    let store = reopen(100).await;
    let read = store.get_admin(ORG_TEAM).await.unwrap();
    assert_eq!((read.doc, read.revision), (org("rm"), 2));
}

fn reported(user: &str, id: &str, decision: &str, at_ms: i64) -> ClientDecision {
    ClientDecision {
        team_id: "t".into(),
        user_id: user.into(),
        tool_use_id: id.into(),
        decision: decision.into(),
        source: "user_temporary".into(),
        tool_name: "Bash".into(),
        at_ms,
    }
}

/// The clients' own decisions: kept per team, user and id (a later report of a call
/// replaces the earlier), read back by team and ids, pruned with the decision log.
async fn client_decisions_kept_read_and_pruned(reopen: Reopen) {
    let store = reopen(100).await;
    let hostile = "toolu_\"'; DROP TABLE client_decisions; --";
    store
        .record_client_decisions(&[
            reported("alice", "toolu_1", "accept", 1_000),
            reported("bob", "toolu_1", "reject", 1_000),
            reported("alice", hostile, "accept", 5_000),
        ])
        .await
        .unwrap();
    // the same call reported again: the last word stands
    store
        .record_client_decisions(&[reported("alice", "toolu_1", "reject", 2_000)])
        .await
        .unwrap();
    let mut read = store
        .client_decisions("t", &["toolu_1", hostile, "toolu_none"])
        .await
        .unwrap();
    read.sort_by(|a, b| (&a.user_id, &a.tool_use_id).cmp(&(&b.user_id, &b.tool_use_id)));
    assert_eq!(
        read,
        vec![
            reported("alice", hostile, "accept", 5_000),
            reported("alice", "toolu_1", "reject", 2_000),
            reported("bob", "toolu_1", "reject", 1_000),
        ]
    );
    assert!(
        store
            .client_decisions("other", &["toolu_1"])
            .await
            .unwrap()
            .is_empty()
    );
    assert!(store.client_decisions("t", &[]).await.unwrap().is_empty());
    // a page's worth of ids in one read
    let many: Vec<String> = (0..1000).map(|i| format!("toolu_{i}")).collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    assert_eq!(store.client_decisions("t", &many).await.unwrap().len(), 2);
    // the longer of the decision log's two ages keeps them
    store
        .prune_decisions(&Retention {
            older_than_ms: 10_000,
            max_per_team: 100,
            deny_older_than_ms: 3_000,
            deny_max_per_team: 100,
            audit_older_than_ms: 0,
            audit_max_per_team: 100,
            max_removed: 100,
        })
        .await
        .unwrap();
    let store = reopen(100).await;
    let left = store
        .client_decisions("t", &["toolu_1", hostile])
        .await
        .unwrap();
    assert_eq!(left, vec![reported("alice", hostile, "accept", 5_000)]);
}

macro_rules! suite {
    ($($case:ident),* $(,)?) => {
        mod sqlite_backend {
            $(#[tokio::test]
            async fn $case() {
                let Some((reopen, _dir)) = super::sqlite(stringify!($case)).await else { return };
                super::$case(reopen).await;
            })*
        }
        mod postgres_backend {
            $(#[tokio::test]
            async fn $case() {
                let Some((reopen, _dir)) = super::postgres(concat!("postgres ", stringify!($case))).await else { return };
                super::$case(reopen).await;
            })*
        }
    };
}

suite!(
    unset_documents_are_defaults_at_revision_zero,
    revisions_increase_per_team,
    stale_expected_revision_changes_nothing,
    concurrent_writers_with_expected_revision_never_both_win,
    history_in_order_and_truncated_beyond_limit,
    audit_records_writes_and_filters,
    reopening_keeps_everything,
    session_quotas_count_and_survive,
    issued_tokens_create_list_revoke,
    approvals_answer_once_and_grants_end_exactly,
    tool_pins_first_sight_change_and_acceptance,
    org_group_policies_keep_their_own_revision_history_and_audit,
    client_decisions_kept_read_and_pruned,
);

/// A PostgreSQL database made before quotas were counted per user opens: its quota
/// table takes the new key (the old counts, which name no user, are dropped). The
/// SQLite twin is a unit test of the store.
#[tokio::test]
async fn postgres_old_quota_table_is_migrated() {
    let Some(url) = pg::fresh_database("postgres_old_quota_table_is_migrated").await else {
        return;
    };
    let store = PostgresStore::connect(&url, 100).await.unwrap();
    drop(store);
    // the database as the version before left it
    let pool = sqlx::PgPool::connect(&url).await.unwrap();
    sqlx::raw_sql(
        "DROP TABLE session_quotas;
         CREATE TABLE session_quotas (
             team_id TEXT NOT NULL, session_id TEXT NOT NULL, operation TEXT NOT NULL,
             used BIGINT NOT NULL, updated_at BIGINT NOT NULL,
             PRIMARY KEY (team_id, session_id, operation));
         INSERT INTO session_quotas VALUES ('t', 's1', 'CREATE', 5, 0);
         DROP TABLE issued_tokens;
         DROP TABLE decision_blocks;
         DROP TABLE decision_ids;
         DROP TABLE approvals;
         DROP TABLE approval_grants;
         DROP TABLE tool_pins;
         DROP TABLE pin_settings;
         DROP TABLE sign_ins;
         DROP TABLE client_decisions;
         DELETE FROM toolgate_schema WHERE version > 2;",
    )
    .execute(&pool)
    .await
    .unwrap();
    pool.close().await;

    let store = PostgresStore::connect(&url, 100).await.unwrap();
    let key = quota("t", "alice", "s1", "CREATE");
    assert_eq!(store.quota_used(&key).await.unwrap(), 0);
    assert!(store.consume_quota(&key, 1).await.unwrap());
    assert!(!store.consume_quota(&key, 1).await.unwrap());
}

/// A PostgreSQL database whose decision log was a row per record opens with its
/// records in blocks, each as it was written, and the ids go on after the last. The
/// SQLite twin is a unit test of the store.
#[tokio::test]
async fn postgres_decision_rows_move_into_blocks() {
    let Some(url) = pg::fresh_database("postgres_decision_rows_move_into_blocks").await else {
        return;
    };
    drop(PostgresStore::connect(&url, 100).await.unwrap());
    // the database as the version before left it, with two records
    let pool = sqlx::PgPool::connect(&url).await.unwrap();
    sqlx::raw_sql(
        "DROP TABLE decision_blocks;
         DROP TABLE decision_ids;
         CREATE TABLE decisions (
             id BIGSERIAL PRIMARY KEY, at BIGINT NOT NULL, team_id TEXT NOT NULL,
             user_id TEXT NOT NULL, principal TEXT NOT NULL, agent_id TEXT NOT NULL,
             role TEXT NOT NULL, client TEXT NOT NULL, source TEXT NOT NULL,
             kind TEXT NOT NULL, server TEXT NOT NULL, tool TEXT NOT NULL,
             action TEXT NOT NULL, subject TEXT NOT NULL, subject_bytes BIGINT NOT NULL,
             subject_sha256 TEXT NOT NULL, outcome TEXT NOT NULL, reason TEXT NOT NULL,
             matched_entry TEXT NOT NULL, revision BIGINT NOT NULL);
         CREATE INDEX decisions_team_at ON decisions (team_id, at, id);
         DROP TABLE tool_pins;
         DROP TABLE pin_settings;
         DROP TABLE sign_ins;
         DROP TABLE client_decisions;
         ALTER TABLE issued_tokens DROP COLUMN group_names;
         DELETE FROM toolgate_schema WHERE version > 7;",
    )
    .execute(&pool)
    .await
    .unwrap();
    let hostile = "a \"quoted\" \\ back\nslash é 🙂 \u{1}";
    for (id, at, subject) in [(3_i64, 10_i64, "git status"), (9, 20, hostile)] {
        sqlx::query(
            "INSERT INTO decisions (id, at, team_id, user_id, principal, agent_id, role,
             client, source, kind, server, tool, action, subject, subject_bytes,
             subject_sha256, outcome, reason, matched_entry, revision)
             VALUES ($1, $2, 't', 'u', 'p', '', '', 'codex', 'evaluate', 'shell', '', '', '',
             $3, $4, 'ab', 'ASK', 'COMMAND_NOT_ALLOWLISTED', '', 4611686018427387903)",
        )
        .bind(id)
        .bind(at)
        .bind(subject)
        .bind(subject.len() as i64)
        .execute(&pool)
        .await
        .unwrap();
    }
    pool.close().await;

    let store = PostgresStore::connect(&url, 100).await.unwrap();
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
