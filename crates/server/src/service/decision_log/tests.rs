//! The decision log's writer: its records read back, its offered queue is bounded.

use super::offered::Offered;
use super::record::Record;
use crate::store::{EncodedDecisions, TEXT_COUNT};

/// A spill file from before the decision log holds bare audit records; they still
/// read, and decision records read back as written.
#[test]
fn spill_lines_of_both_kinds_read_back() {
    let audit = r#"{"team_id":"t","revision":1,"actor":"a","kind":"decision_denied","detail":{"user_id":"u"}}"#;
    let Record::Audit(event) = serde_json::from_str::<Record>(audit).unwrap() else {
        panic!("an old audit line reads as an audit record")
    };
    assert_eq!(event.kind, "decision_denied");
    let decision = crate::store::NewDecision {
        at_ms: 1,
        team_id: "t".into(),
        user_id: "u".into(),
        principal: "p".into(),
        agent_id: String::new(),
        role: String::new(),
        client: "codex".into(),
        source: "evaluate".into(),
        kind: "shell".into(),
        server: String::new(),
        tool: String::new(),
        action: String::new(),
        subject: "rm -rf /".into(),
        subject_bytes: 8,
        subject_sha256: "ab".into(),
        outcome: "DENY".into(),
        reason: "COMMAND_DENIED".into(),
        matched_entry: "rm".into(),
        revision: 3,
        count: 4,
        first_at_ms: -5,
        groups: "contractors".into(),
        effects_unknown: "zip\nfakeroot".into(),
        cwd: "/home/dev/proj".into(),
        tool_use_id: String::new(),
    };
    let record = Record::Decision {
        decision: decision.into(),
    };
    let line = serde_json::to_string(&record).unwrap();
    assert_eq!(serde_json::from_str::<Record>(&line).unwrap(), record);
}

/// The offered queue keeps what fits, sheds the rest, and gives back every
/// record kept, from every thread, once.
#[test]
fn the_offered_queue_is_bounded_and_taken_whole() {
    fn offer(q: &Offered, i: usize) {
        let t: [String; TEXT_COUNT] = std::array::from_fn(|k| format!("{i}.{k}"));
        q.offer(i as i64, std::array::from_fn(|k| t[k].as_str()), 1, 2);
    }
    let q = Offered::new(3);
    for i in 0..5 {
        offer(&q, i);
    }
    assert_eq!(q.waiting(), 3);
    let (mut into, mut spare) = Default::default();
    assert_eq!(q.take(&mut into, &mut spare), 3);
    assert_eq!((q.waiting(), into.len()), (0, 3));
    assert_eq!(into.decode(2, 9).unwrap().decision.user_id, "2.1");
    // past the count's step, from several threads
    let q = std::sync::Arc::new(Offered::new(100_000));
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let q = q.clone();
            std::thread::spawn(move || (0..1000).for_each(|i| offer(&q, t * 1000 + i)))
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    let mut into = EncodedDecisions::default();
    assert_eq!(q.take(&mut into, &mut spare), 4000);
    assert_eq!(q.count.load(std::sync::atomic::Ordering::Relaxed), 0);
    let mut at: Vec<i64> = (0..4000)
        .map(|i| into.decode(i, 0).unwrap().decision.at_ms)
        .collect();
    at.sort_unstable();
    assert_eq!(at, (0..4000).collect::<Vec<_>>());
}
