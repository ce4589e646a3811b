//! The decision log's unit tests: retention's clock, page tokens, preview places,
//! client names and what a record keeps.

use super::impact::{group_key, stored_call};
use super::listing::{make_token, parse_token};
use super::origin::check_client;
use super::preview::{PreviewSlot, Previews};
use super::record::{MAX_EFFECTS_UNKNOWN_BYTES, Shown, describe_call, effects_unknown_text};
use super::retention::RetentionClock;
use crate::policy::{self, Call};
use crate::service::ServiceError;
use crate::store::PackedDecision;
use std::time::Duration;

/// Retention's time follows the wall clock, but never runs ahead of the newest
/// record at start plus the real time elapsed.
#[test]
fn retention_time_does_not_follow_a_clock_jump() {
    const DAY: i64 = 86_400_000;
    let t0 = 1_000 * DAY;
    let secs = Duration::from_secs;
    // an ordinary start: the newest record a moment ago
    let clock = RetentionClock::start(t0, Some(t0 - 1_000));
    assert_eq!(clock.now_after(t0 + 60_000, secs(60)), t0 - 1_000 + 60_000);
    // the clock stepped a month ahead while running: retention's time does not
    assert_eq!(
        clock.now_after(t0 + 31 * DAY, secs(60)),
        t0 - 1_000 + 60_000
    );
    // a start under a clock a month ahead: retention counts from the newest record
    let jumped = RetentionClock::start(t0 + 31 * DAY, Some(t0));
    assert_eq!(jumped.now_after(t0 + 31 * DAY, secs(0)), t0);
    // records dated in the future (written under a jumped clock) do not pull it on
    let future = RetentionClock::start(t0, Some(t0 + 31 * DAY));
    assert_eq!(future.now_after(t0 + 10, secs(0)), t0);
    // a clock stepped back: the wall clock, which keeps more
    assert_eq!(clock.now_after(t0 - DAY, secs(60)), t0 - DAY);
    // an empty log: the wall clock at start
    let empty = RetentionClock::start(t0, None);
    assert_eq!(empty.now_after(t0 + 5_000, secs(5)), t0 + 5_000);
}

#[test]
fn page_tokens_round_trip_and_are_bound_to_their_filter() {
    let token = make_token(1_700_000_000_000, 42, "abcd");
    assert_eq!(
        parse_token(&token, "abcd").unwrap(),
        (1_700_000_000_000, 42)
    );
    assert!(parse_token(&token, "other").is_err());
    for bad in ["", "zz", &hex::encode("1.2"), &hex::encode("a.b.abcd")] {
        assert!(parse_token(bad, "abcd").is_err(), "{bad}");
    }
}

#[test]
fn one_preview_per_team_at_a_time() {
    let running = Previews::default();
    let a = PreviewSlot::take(&running, "acme").unwrap();
    let second = PreviewSlot::take(&running, "acme");
    assert!(
        matches!(&second, Err(ServiceError::ResourceExhausted(m)) if m.contains("already running")),
        "{:?}",
        second.err()
    );
    let b = PreviewSlot::take(&running, "globex").unwrap();
    drop(a);
    let again = PreviewSlot::take(&running, "acme");
    assert!(again.is_ok());
    drop((b, again));
}

#[test]
fn clients_are_short_plain_names() {
    for good in ["", "claude-code", "codex", "mcp-proxy", "gemini2"] {
        assert!(check_client(good).is_ok(), "{good}");
    }
    for bad in ["Claude", "a b", "x".repeat(33).as_str(), "é", "a\n"] {
        assert!(check_client(bad).is_err(), "{bad:?}");
    }
}

/// A record's unknown effects: one a line, masked, and bounded however many
/// programs the line named.
#[test]
fn unknown_effects_are_kept_masked_and_bounded() {
    let names = |n: &[&str]| n.iter().map(|p| p.to_string()).collect::<Vec<_>>();
    assert_eq!(effects_unknown_text(&[]), "");
    assert_eq!(
        effects_unknown_text(&names(&["zip", "fakeroot"])),
        "zip\nfakeroot"
    );
    let secret = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
    let masked = effects_unknown_text(&names(&[secret]));
    assert!(!masked.contains("ghp_abcdef"), "{masked}");
    let many: Vec<String> = (0..1000).map(|i| format!("prog{i:04}")).collect();
    let kept = effects_unknown_text(&many);
    assert!(
        kept.len() <= MAX_EFFECTS_UNKNOWN_BYTES + 16,
        "{}",
        kept.len()
    );
    let last = kept.lines().last().unwrap();
    let listed = kept.lines().count() - 1;
    assert_eq!(last, format!("({} more)", 1000 - listed));
    assert!(kept.starts_with("prog0000\nprog0001\n"));
    let huge = effects_unknown_text(&["x".repeat(5000)]);
    assert_eq!(huge, "(1 more)");
}

#[test]
fn long_commands_keep_a_cut_subject_and_cannot_be_decided_again() {
    // the record the service would log for `call`
    let record = |call: &Call| {
        let shown = Shown::of(call);
        let d = describe_call(&shown, 256);
        let texts = [
            "t",
            "u",
            "p",
            "",
            "",
            "",
            "evaluate",
            d.kind,
            d.server,
            d.tool,
            d.action,
            &d.subject,
            &d.subject_sha256,
            "ASK",
            "COMMAND_NOT_ALLOWLISTED",
            "",
            "",
            "",
            "",
            "",
        ];
        PackedDecision::new(0, texts, d.subject_bytes, 1).unpack()
    };
    let r = record(&Call::Shell("échoé ".repeat(100)));
    assert!(r.subject.len() <= 256 && !r.complete());
    assert_eq!(r.subject_bytes, 800);
    assert_eq!(stored_call(&r), None);
    let r = record(&Call::Shell("git push origin main".into()));
    assert!(r.complete());
    assert_eq!(r.kind, "shell");
    assert_eq!(group_key(&r), "git push");
    assert_eq!(
        stored_call(&r),
        Some(Call::Shell("git push origin main".into()))
    );
    let r = record(&Call::Shell("rm -rf /tmp/x".into()));
    assert_eq!(group_key(&r), "rm");
    let r = record(&Call::McpAction {
        server: "gh".into(),
        tool: "pr".into(),
        action: "merge".into(),
    });
    assert_eq!(
        (r.kind.as_str(), r.server.as_str(), r.tool.as_str()),
        ("mcp", "gh", "pr")
    );
    assert_eq!((r.action.as_str(), r.subject.as_str()), ("merge", "gh:pr"));
    assert_eq!((r.subject_bytes, r.subject_sha256.as_str()), (5, ""));
    // an agent's write tool is decided by the files its input names, which the
    // record does not keep: the preview counts it as unknown, never as allowed
    for tool in [
        "write_file",
        "Write",
        "edit_file",
        "MultiEdit",
        "apply_patch",
    ] {
        let r = record(&Call::Mcp {
            server: policy::BUILTIN_SERVER.into(),
            tool: tool.into(),
        });
        assert_eq!(stored_call(&r), None, "{tool}");
    }
    let r = record(&Call::Mcp {
        server: policy::BUILTIN_SERVER.into(),
        tool: "read_file".into(),
    });
    assert!(stored_call(&r).is_some());
}
