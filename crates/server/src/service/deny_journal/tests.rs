//! The DENY journal: appends read back, segments go once stored, a crash replays.

use super::*;
use crate::store::NewAuditEvent;

fn record(i: u64) -> Record {
    Record::Audit(NewAuditEvent {
        team_id: "t".into(),
        revision: i,
        actor: "a".into(),
        kind: "decision_denied".into(),
        detail: serde_json::json!({ "i": i }),
    })
}

fn files(dir: &Path) -> Vec<u64> {
    segment_numbers(dir).unwrap()
}

/// Appended records come back at the next open until they are stored; a segment
/// whose records are all stored is removed.
#[tokio::test]
async fn records_are_replayed_until_stored() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j");
    let journal = DenyJournal::open(&path, u64::MAX, None, None).unwrap();
    assert!(journal.take_replayed().is_empty());
    let a = journal.append(&[record(1), record(2)]).await.unwrap();
    let b = journal.append(&[record(3)]).await.unwrap();
    assert_eq!(a, b, "one segment");
    // a second server on the same directory is refused
    assert!(matches!(
        DenyJournal::open(&path, u64::MAX, None, None),
        Err(JournalError::InUse { .. })
    ));
    journal.stored(a, 2);
    journal.close();
    drop(journal);
    let journal = DenyJournal::open(&path, u64::MAX, None, None).unwrap();
    let replayed = journal.take_replayed();
    // closing does not lose the record not yet stored
    let records: Vec<Record> = replayed.iter().map(|(r, _)| r.clone()).collect();
    assert_eq!(records, vec![record(1), record(2), record(3)]);
    for (_, number) in &replayed {
        journal.stored(*number, 1);
    }
    assert!(files(&path).is_empty(), "{:?}", files(&path));
    assert_eq!(journal.bytes(), 0);
}

/// A torn last line (a crash mid-append) is skipped, the rest replayed.
#[test]
fn a_torn_line_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = serde_json::to_vec(&record(1)).unwrap();
    text.extend_from_slice(b"\n{\"team_id\":\"t\",\"rev");
    std::fs::write(segment_path(dir.path(), 7), text).unwrap();
    let journal = DenyJournal::open(dir.path(), u64::MAX, None, None).unwrap();
    assert_eq!(journal.take_replayed(), vec![(record(1), 7)]);
    drop(journal);
}

/// An older version's spill file is moved in and replayed.
#[test]
fn a_legacy_spill_file_is_moved_in() {
    let dir = tempfile::tempdir().unwrap();
    let spill = dir.path().join("audit-spill.jsonl");
    std::fs::write(&spill, serde_json::to_vec(&record(5)).unwrap()).unwrap();
    let journal = DenyJournal::open(&dir.path().join("j"), u64::MAX, None, Some(&spill)).unwrap();
    assert_eq!(journal.take_replayed().len(), 1);
    assert!(!spill.exists());
}

/// Past its bound the journal refuses appends (the caller is told), and takes
/// them again once room is made.
#[tokio::test]
async fn the_bound_refuses_appends() {
    let dir = tempfile::tempdir().unwrap();
    let line = serde_json::to_vec(&record(1)).unwrap().len() as u64 + 1;
    let journal = DenyJournal::open(dir.path(), line * 2, None, None).unwrap();
    let a = journal.append(&[record(1), record(2)]).await.unwrap();
    assert_eq!(journal.append(&[record(3)]).await, None);
    journal.stored(a, 2);
    // the segment is still open: the room comes back once it is closed
    journal.close();
}

/// What a DENY's wait for the journal costs on this machine's disk: one caller at
/// a time (an fsync each), and 64 at once (sharing fsyncs). A measurement, not a
/// test: `cargo test -p toolgate-server --lib journal_cost -- --ignored --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "a measurement; prints figures"]
async fn journal_cost() {
    let dir =
        tempfile::tempdir_in(std::env::var("JOURNAL_COST_DIR").unwrap_or(".".into())).unwrap();
    let journal = Arc::new(DenyJournal::open(dir.path(), u64::MAX, None, None).unwrap());
    // a DENY's two records, about a kilobyte of JSON
    let records = vec![record(1), record(2)];
    let start = std::time::Instant::now();
    const ONE: u32 = 300;
    for _ in 0..ONE {
        journal.append(&records).await.unwrap();
    }
    let one = start.elapsed() / ONE;
    const CALLERS: usize = 64;
    const EACH: usize = 100;
    let start = std::time::Instant::now();
    let tasks: Vec<_> = (0..CALLERS)
        .map(|_| {
            let (journal, records) = (journal.clone(), records.clone());
            tokio::spawn(async move {
                let mut worst = Duration::ZERO;
                for _ in 0..EACH {
                    let t = std::time::Instant::now();
                    journal.append(&records).await.unwrap();
                    worst = worst.max(t.elapsed());
                }
                worst
            })
        })
        .collect();
    let mut worst = Duration::ZERO;
    for t in tasks {
        worst = worst.max(t.await.unwrap());
    }
    let all = start.elapsed();
    let n = (CALLERS * EACH) as u32;
    println!(
        "one caller: {one:?} per DENY; {CALLERS} callers: {:?} per DENY on average ({:.0} DENYs/s), worst wait {worst:?}",
        all / n,
        f64::from(n) / all.as_secs_f64()
    );
}
