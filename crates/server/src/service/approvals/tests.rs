//! Central approvals' pure parts: what a waiting call is told, a request's call kept
//! masked and read back, and the fewest allowlist entries an approval adds.

use super::allowlist::needed_commands;
use super::request::{shown_of, stored_call};
use super::view::ApprovalView;
use crate::policy::{
    AdminControls, Call, Candidate, CompiledAdmin, CompiledUser, Decision, Outcome, Reason,
    UserSettings, decide,
};
use crate::service::ServiceError;
use crate::service::decisions::Shown;
use crate::store::{
    ApprovalCall, ApprovalDecision, ApprovalRecord, ApprovalState, NewApproval, Original, ScopeKind,
};

const GHP: &str = "ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

fn record(state: ApprovalState) -> ApprovalRecord {
    ApprovalRecord {
        new: NewApproval {
            request_id: "apr_1".into(),
            team_id: "t".into(),
            user_id: "alice".into(),
            principal: "alice".into(),
            agent_id: String::new(),
            client: "codex".into(),
            session_id: "s1".into(),
            call: ApprovalCall {
                call: Call::Shell("make".into()),
                cwd: None,
                original: None,
            },
            call_key: "k".into(),
            summary: "shell: make".into(),
            decision: ApprovalDecision {
                outcome: Outcome::Ask,
                reason: Reason::CommandNotAllowlisted,
                message: "ask".into(),
                matched_entry: None,
                revision: 2,
                candidates: Vec::new(),
                command_candidates: vec!["make".into()],
            },
            created_at_ms: 1_000,
            deadline_ms: 5_000,
        },
        state,
        answered_by: None,
        answered_at_ms: None,
        scope: None,
        grant_expires_at_ms: None,
        answer_reason: None,
        allowlist_entry: None,
        allowlist_revision: None,
    }
}

#[test]
fn a_pending_request_reads_as_expired_from_its_deadline() {
    let before = ApprovalView::at(record(ApprovalState::Pending), 4_999);
    assert_eq!(
        (before.state, before.answer),
        (ApprovalState::Pending, None)
    );
    let at = ApprovalView::at(record(ApprovalState::Pending), 5_000);
    assert_eq!(at.state, ApprovalState::Expired);
    let (outcome, reason, text) = at.answer.unwrap();
    assert_eq!((outcome, reason), (Outcome::Deny, Reason::ApprovalExpired));
    assert!(
        text.contains("within 4 seconds") && text.contains("apr_1"),
        "{text}"
    );
}

/// Each answer the waiting call gets: who answered, how far an approval reaches, and
/// the approver's words.
#[test]
fn each_answer_says_who_and_how_far() {
    let cases = [
        (
            ApprovalState::Approved,
            Some(ScopeKind::Once),
            Outcome::Allow,
            "approved by bob: ok",
        ),
        (
            ApprovalState::Approved,
            Some(ScopeKind::Session),
            Outcome::Allow,
            "approved by bob for the rest of this session: ok",
        ),
        (
            ApprovalState::Approved,
            Some(ScopeKind::Duration),
            Outcome::Allow,
            "approved by bob until 1970-01-01T00:00:09Z: ok",
        ),
        (
            ApprovalState::Approved,
            Some(ScopeKind::Allowlist),
            Outcome::Allow,
            "approved by bob and added make to the allowlist: ok",
        ),
        (
            ApprovalState::Denied,
            None,
            Outcome::Deny,
            "is denied by bob: ok",
        ),
        (ApprovalState::Abandoned, None, Outcome::Deny, "went away"),
    ];
    for (state, scope, outcome, says) in cases {
        let mut r = record(state);
        r.answered_by = Some("bob".into());
        r.answer_reason = Some("ok".into());
        r.scope = scope;
        r.grant_expires_at_ms = Some(9_000);
        r.allowlist_entry = Some("make".into());
        let (got, _, text) = ApprovalView::at(r, 2_000).answer.unwrap();
        assert_eq!(got, outcome, "{state:?} {scope:?}");
        assert!(text.contains(says), "{state:?} {scope:?}: {text}");
    }
}

/// A call is stored masked with its original's digest, and read back as it was shown.
#[test]
fn a_masked_call_reads_back_as_it_was_shown() {
    let secret = Call::Shell(format!("curl -H 'Authorization: token {GHP}' x"));
    let cases = [
        (secret, Some(format!("/w/{GHP}"))),
        (Call::Shell("make".into()), None),
        (Call::DeleteFile(format!("/tmp/{GHP}")), None),
        (
            Call::Mcp {
                server: "github".into(),
                tool: "create_issue".into(),
            },
            Some("/w".into()),
        ),
    ];
    for (call, cwd) in cases {
        let shown = Shown::of(&call);
        let stored = stored_call(&shown, cwd.as_deref());
        let text = serde_json::to_string(&stored).unwrap();
        assert!(!text.contains(GHP), "a secret stored: {text}");
        assert_eq!(&stored.call, shown.call());
        let read: ApprovalCall = serde_json::from_str(&text).unwrap();
        let back = shown_of(&read);
        assert_eq!(back.call(), shown.call(), "{text}");
        assert_eq!(
            (&back.sha256, back.bytes, back.masked.redecidable),
            (&shown.sha256, shown.bytes, shown.masked.redecidable),
            "{text}"
        );
        let mcp = matches!(call, Call::Mcp { .. });
        assert_eq!(stored.original.is_none(), mcp, "{text}");
    }
}

/// A decision on `make` whose command candidates are `left`.
fn asking(left: &[&str]) -> Decision {
    let admin = CompiledAdmin::compile(&AdminControls::default()).unwrap();
    let user = CompiledUser::compile(&UserSettings::default()).unwrap();
    Decision {
        candidates: left
            .iter()
            .map(|c| Candidate::Command((*c).into()))
            .collect(),
        ..decide(&admin, &user, &Call::Shell("make".into()))
    }
}

fn plain() -> ApprovalCall {
    record(ApprovalState::Pending).new.call
}

/// The reference: `timeout 60 npm test` once allowed covers `npm test`; each other
/// entry covers itself.
fn uncovered(candidates: &[&str], extra: &[String]) -> Decision {
    let covered = |c: &str| {
        extra.iter().any(|e| e == c)
            || (c == "npm test" && extra.iter().any(|e| e == "timeout 60 npm test"))
    };
    let left: Vec<&str> = candidates.iter().copied().filter(|c| !covered(c)).collect();
    asking(&left)
}

#[test]
fn an_allowlist_approval_adds_only_the_entries_still_needed() {
    let all = ["timeout 60 npm test", "npm test", "make"];
    let owned: Vec<String> = all.iter().map(|c| (*c).to_owned()).collect();
    let chosen = needed_commands("apr_1", &owned, &plain(), |extra| {
        Some(uncovered(&all, extra))
    });
    assert_eq!(chosen.unwrap(), ["timeout 60 npm test", "make"]);
    // a call the lists already let by needs nothing: refused, approve it once instead
    let none = needed_commands("apr_1", &owned, &plain(), |_| Some(asking(&[])));
    assert!(matches!(none, Err(ServiceError::FailedPrecondition(m)) if m.contains("apr_1")));
}

#[test]
fn an_allowlist_approval_of_a_masked_call_is_refused() {
    let masked_candidate = vec![format!("curl {}x", crate::secrets::MARKER_PREFIX)];
    let decides_otherwise = ApprovalCall {
        original: Some(Original {
            sha256: "ab".into(),
            bytes: 9,
            redecidable: false,
        }),
        ..plain()
    };
    let make = vec!["make".to_owned()];
    for (candidates, stored) in [(&masked_candidate, plain()), (&make, decides_otherwise)] {
        let got = needed_commands("apr_1", candidates, &stored, |_| Some(asking(&["make"])));
        assert!(
            matches!(&got, Err(ServiceError::FailedPrecondition(m)) if m.contains("holds a secret")),
            "{got:?}"
        );
    }
    let redecidable = ApprovalCall {
        original: Some(Original {
            sha256: "ab".into(),
            bytes: 4,
            redecidable: true,
        }),
        ..plain()
    };
    let got = needed_commands("apr_1", &make, &redecidable, |extra| {
        Some(uncovered(&["make"], extra))
    });
    assert_eq!(got.unwrap(), ["make"]);
}
