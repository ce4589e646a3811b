//! The budgets against a reference model: every DENY stays in a record, and what a
//! principal writes past its budget is bounded.

use super::*;
use proptest::prelude::*;

/// Budgets of `records` per minute for each principal (and ten times that per team),
/// with bytes enough that only the records count.
fn budgets(records: u64) -> Budgets {
    Budgets::new(&DecisionLogConfig {
        principal_records_per_minute: records,
        team_records_per_minute: records * 10,
        principal_bytes_per_minute: 1 << 40,
        team_bytes_per_minute: 1 << 40,
        ..DecisionLogConfig::default()
    })
}

/// A DENY's two records, as the service makes them.
fn deny(team: &str, principal: &str, call: &str, at_ms: i64) -> Vec<Record> {
    let mut texts = [""; TEXT_COUNT];
    texts[0] = team;
    texts[2] = principal;
    texts[11] = call;
    texts[13] = "DENY";
    vec![
        Record::Audit(NewAuditEvent {
            team_id: team.into(),
            revision: 1,
            actor: principal.into(),
            kind: AUDIT_DECISION_DENIED.into(),
            detail: serde_json::json!({ "call": call }),
        }),
        Record::Decision {
            decision: PackedDecision::new(at_ms, texts, call.len() as u64, 1),
        },
    ]
}

/// What the records written say about DENYs: for each principal, the DENYs their
/// audit records stand for (one each, or their count, or their shed event's
/// `denies_summarised`), and the records written.
fn tally(records: &[Record]) -> HashMap<String, (u64, u64)> {
    let mut by: HashMap<String, (u64, u64)> = HashMap::new();
    for r in records {
        let Record::Audit(e) = r else {
            continue;
        };
        let entry = by.entry(e.actor.clone()).or_default();
        entry.1 += 1;
        entry.0 += match e.kind.as_str() {
            AUDIT_DECISION_DENIED => e.detail.get("count").and_then(|c| c.as_u64()).unwrap_or(1),
            AUDIT_DECISIONS_SHED => e.detail["denies_summarised"].as_u64().unwrap(),
            _ => 0,
        };
    }
    by
}

#[test]
fn repeats_past_the_budget_are_one_record_with_a_count_and_a_time_range() {
    let b = budgets(4);
    let mut written = Vec::new();
    for i in 0..2 {
        written.extend(b.admit_denies(deny("t", "alice", &format!("rm {i}"), i)));
    }
    assert_eq!(written.len(), 4, "two DENYs' two records each are within 4");
    for i in 0..100 {
        assert!(
            b.admit_denies(deny("t", "alice", "rm -rf /", 10 + i))
                .is_empty()
        );
    }
    // another principal has its own budget
    assert_eq!(b.admit_denies(deny("t", "bob", "rm -rf /", 5)).len(), 2);
    let due = b.take_due();
    let decision = due
        .iter()
        .find_map(|r| match r {
            Record::Decision { decision } => Some(decision),
            Record::Audit(_) => None,
        })
        .expect("the counted call's log record");
    assert_eq!(
        (decision.count, decision.first_at_ms, decision.at_ms),
        (100, 10, 109)
    );
    assert_eq!(decision.texts()[11], "rm -rf /");
    let shed = due
        .iter()
        .find_map(|r| match r {
            Record::Audit(e) if e.kind == AUDIT_DECISIONS_SHED => Some(e),
            _ => None,
        })
        .expect("alice's shed event");
    assert_eq!((shed.actor.as_str(), shed.team_id.as_str()), ("alice", "t"));
    assert_eq!(shed.detail["denies_coalesced"], 100);
    assert_eq!(shed.detail["denies_summarised"], 0);
    // an audit record has no time of its own: the shed event's range is the server's
    let (first, last) = (
        shed.detail["first_at_ms"].as_i64(),
        shed.detail["last_at_ms"].as_i64(),
    );
    assert!(
        first.is_some_and(|f| f > 0) && first <= last,
        "{first:?} {last:?}"
    );
    // everything due was taken
    assert!(b.take_due().is_empty());
}

#[test]
fn distinct_calls_past_the_budget_are_counted_in_the_shed_event() {
    let b = budgets(2);
    assert_eq!(b.admit_denies(deny("t", "mallory", "x", 0)).len(), 2);
    let n = FOLDS_PER_PRINCIPAL * 10;
    for i in 0..n {
        assert!(
            b.admit_denies(deny("t", "mallory", &format!("x {i}"), 1))
                .is_empty()
        );
    }
    let due = b.take_due();
    // a record per call counted (two per DENY), then the shed event
    assert!(due.len() <= 2 * FOLDS_PER_PRINCIPAL + 1, "{}", due.len());
    assert_eq!(tally(&due)["mallory"].0, n as u64);
}

#[test]
fn a_team_budget_holds_all_of_its_principals() {
    let b = Budgets::new(&DecisionLogConfig {
        principal_records_per_minute: 100,
        team_records_per_minute: 100,
        ..DecisionLogConfig::default()
    });
    let mut written = 0;
    for p in 0..10 {
        for i in 0..20 {
            written += b
                .admit_denies(deny("t", &format!("p{p}"), &format!("c{i}"), i))
                .len();
        }
    }
    assert_eq!(written, 100);
    // another team is not held by it
    assert_eq!(b.admit_denies(deny("u", "p0", "c", 0)).len(), 2);
}

#[test]
fn allow_and_ask_records_past_the_budget_are_shed_and_counted() {
    let b = budgets(3);
    let mut texts = [""; TEXT_COUNT];
    texts[0] = "t";
    texts[2] = "ci \"bot\"";
    texts[13] = "ALLOW";
    let admitted: Vec<bool> = (0..5).map(|i| b.admit_offered(&texts, i)).collect();
    assert_eq!(admitted, [true, true, true, false, false]);
    let event = NewAuditEvent {
        team_id: "t".into(),
        revision: 1,
        actor: "ci \"bot\"".into(),
        kind: "decision_made".into(),
        detail: serde_json::json!({}),
    };
    assert!(!b.admit_audit(&event));
    let due = b.take_due();
    let [Record::Audit(shed)] = &due[..] else {
        panic!("one shed event: {due:?}")
    };
    assert_eq!(shed.actor, "ci \"bot\"");
    assert_eq!(shed.detail["records"], 3);
    assert!(shed.detail["bytes"].as_u64().unwrap() > 0);
}

#[test]
fn shed_principals_are_bounded() {
    let b = budgets(1);
    for p in 0..MAX_SHED_PRINCIPALS + 50 {
        let p = format!("p{p}");
        b.admit_denies(deny("t", &p, "c", 0));
        b.admit_denies(deny("t", &p, "d", 0));
    }
    let due = b.take_due();
    let events: Vec<_> = due
        .iter()
        .filter_map(|r| match r {
            Record::Audit(e) if e.kind == AUDIT_DECISIONS_SHED => Some(e),
            _ => None,
        })
        .collect();
    assert_eq!(events.len(), MAX_SHED_PRINCIPALS + 1);
    assert!(events.iter().any(|e| e.actor == OTHERS));
}

proptest! {
    /// Whatever the calls, every DENY is in a record written, and a principal writes
    /// at most its budget plus a record per call counted and its shed event.
    #[test]
    fn every_deny_is_recorded_and_writes_are_bounded(
        calls in proptest::collection::vec((0..3usize, 0..80usize), 0..600),
        budget in 1..40u64,
    ) {
        let b = budgets(budget);
        let mut written = Vec::new();
        let mut denies: HashMap<String, u64> = HashMap::new();
        for (i, (p, c)) in calls.iter().enumerate() {
            let p = format!("p{p}");
            *denies.entry(p.clone()).or_default() += 1;
            written.extend(b.admit_denies(deny("t", &p, &format!("c{c}"), i as i64)));
        }
        written.extend(b.take_due());
        let tally = tally(&written);
        for (p, n) in &denies {
            let (recorded, records) = tally[p];
            prop_assert_eq!(recorded, *n, "{}", p);
            // audit records: half the budget's records, a counted one per call, the event
            prop_assert!(records <= budget.div_ceil(2) + FOLDS_PER_PRINCIPAL as u64 + 1);
        }
    }

    /// Every ALLOW record offered is either admitted (at most the budget per
    /// principal) or counted in its principal's shed event: none is lost uncounted.
    #[test]
    fn every_offered_record_is_admitted_or_counted(
        offers in proptest::collection::vec(0..4usize, 0..400),
        budget in 1..40u64,
    ) {
        let b = budgets(budget);
        let mut offered: HashMap<String, u64> = HashMap::new();
        let mut admitted: HashMap<String, u64> = HashMap::new();
        for (i, p) in offers.iter().enumerate() {
            let p = format!("p{p}");
            let mut texts = [""; TEXT_COUNT];
            texts[TEAM_TEXT] = "t";
            texts[PRINCIPAL_TEXT] = &p;
            texts[13] = "ALLOW";
            *offered.entry(p.clone()).or_default() += 1;
            if b.admit_offered(&texts, i as i64) {
                *admitted.entry(p.clone()).or_default() += 1;
            }
        }
        let mut shed: HashMap<String, u64> = HashMap::new();
        for record in b.take_due() {
            if let Record::Audit(e) = record {
                prop_assert_eq!(e.kind.as_str(), AUDIT_DECISIONS_SHED);
                shed.insert(e.actor.clone(), e.detail["records"].as_u64().unwrap_or(0));
            }
        }
        for (p, n) in &offered {
            let kept = admitted.get(p).copied().unwrap_or(0);
            // a budget refills as the test runs: a record more at most
            prop_assert!(kept <= budget + 1, "{}: {} admitted", p, kept);
            prop_assert_eq!(kept + shed.get(p).copied().unwrap_or(0), *n, "{}", p);
        }
    }
}
