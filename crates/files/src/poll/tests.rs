//! The poller's behaviour: what is reported, when, and what stops it. Waits have a
//! deadline; "nothing reported" is checked on one synchronous poll, never by
//! waiting for silence.

use super::*;
use crate::{Mode, write_atomic};

/// Far above any poll's time: only a broken poller reaches it.
const DEADLINE: Duration = Duration::from_secs(10);
const FAST: Duration = Duration::from_millis(5);
const HOUR: Duration = Duration::from_secs(3600);

fn poller(paths: &[&Path], settle: u32, schedule: Schedule) -> Poller {
    let paths = paths.iter().map(|p| p.to_path_buf()).collect();
    let options = Options {
        settle,
        max_bytes: 64,
    };
    Poller::new(paths, options, schedule)
}

/// One file holding `text`, followed by a poller that has read it.
fn started(text: &str, settle: u32, schedule: Schedule) -> (tempfile::TempDir, PathBuf, Poller) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("followed");
    std::fs::write(&path, text).unwrap();
    let mut p = poller(&[&path], settle, schedule);
    assert_eq!(contents(p.read_all()), [text]);
    (dir, path, p)
}

/// A schedule never waited on: the test polls synchronously ([`poll`]).
fn idle() -> Schedule {
    Schedule::new(HOUR, CancellationToken::new())
}

fn fast(stop: &CancellationToken) -> Schedule {
    Schedule::new(FAST, stop.clone())
}

/// One poll now, as the waiting loop makes it.
fn poll(p: &mut Poller) -> Vec<Report> {
    poll_all(&p.paths, &mut p.states, p.options, SystemTime::now())
}

async fn next(p: &mut Poller) -> Vec<Report> {
    tokio::time::timeout(DEADLINE, p.next())
        .await
        .expect("a report within the deadline")
        .expect("not stopped")
}

/// The reports as (index, content or error kind), easy to compare.
fn seen(reports: &[Report]) -> Vec<(usize, String)> {
    reports
        .iter()
        .map(|r| {
            let what = match &r.read {
                Ok(c) => String::from_utf8_lossy(&c.bytes).into_owned(),
                Err(ReadError::Io(e)) => format!("error: {:?}", e.kind()),
                Err(e) => format!("error: {e}"),
            };
            (r.index, what)
        })
        .collect()
}

fn one(index: usize, what: &str) -> Vec<(usize, String)> {
    vec![(index, what.to_owned())]
}

fn contents(read: Vec<Result<Content, ReadError>>) -> Vec<String> {
    read.into_iter()
        .map(|r| String::from_utf8(r.unwrap().bytes).unwrap())
        .collect()
}

#[tokio::test]
async fn a_change_is_reported_once_and_the_start_read_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = (dir.path().join("cert"), dir.path().join("key"));
    std::fs::write(&cert, "cert one").unwrap();
    std::fs::write(&key, "key one").unwrap();
    let stop = CancellationToken::new();
    let mut p = poller(&[&cert, &key], 1, fast(&stop));
    assert_eq!(contents(p.read_all()), ["cert one", "key one"]);
    assert!(poll(&mut p).is_empty(), "the start's read is no change");

    write_atomic(&key, Mode::KeepTarget, b"key two").unwrap();
    assert_eq!(seen(&next(&mut p).await), one(1, "key two"));
    assert!(poll(&mut p).is_empty(), "reported once");

    // in place, and both files in one poll: one report of both
    std::fs::write(&cert, "cert three").unwrap();
    std::fs::write(&key, "key three").unwrap();
    assert_eq!(
        seen(&poll(&mut p)),
        [(0, "cert three".to_owned()), (1, "key three".to_owned())]
    );
}

#[test]
fn a_same_size_rewrite_that_keeps_the_modification_time_is_seen() {
    let (_dir, path, mut p) = started("aaaa", 1, idle());
    let old = SystemTime::now() - HOUR;
    let write = |text: &str| {
        std::fs::write(&path, text).unwrap();
        let file = std::fs::File::options().write(true).open(&path).unwrap();
        file.set_modified(old).unwrap();
    };
    write("aaaa");
    assert!(poll(&mut p).is_empty());
    // either the change time moved or the last read was too recent to trust the
    // stamp: read either way
    write("bbbb");
    assert_eq!(seen(&poll(&mut p)), one(0, "bbbb"));
}

/// A Kubernetes ConfigMap update: the path is a link through `..data`, swapped to
/// a new directory whose file has the same size and modification time.
#[cfg(unix)]
#[test]
fn a_link_swapped_to_another_file_is_seen() {
    let dir = tempfile::tempdir().unwrap();
    let old = SystemTime::now() - HOUR;
    for (version, text) in [("v1", "aaaa"), ("v2", "bbbb")] {
        std::fs::create_dir(dir.path().join(version)).unwrap();
        let file = dir.path().join(version).join("policy.yaml");
        std::fs::write(&file, text).unwrap();
        let handle = std::fs::File::options().write(true).open(&file).unwrap();
        handle.set_modified(old).unwrap();
    }
    let data = dir.path().join("..data");
    std::os::unix::fs::symlink("v1", &data).unwrap();
    let path = dir.path().join("policy.yaml");
    std::os::unix::fs::symlink("..data/policy.yaml", &path).unwrap();
    let mut p = poller(&[&path], 1, idle());
    assert_eq!(contents(p.read_all()), ["aaaa"]);
    let next = dir.path().join("..data_tmp");
    std::os::unix::fs::symlink("v2", &next).unwrap();
    std::fs::rename(&next, &data).unwrap();
    assert_eq!(seen(&poll(&mut p)), one(0, "bbbb"));
}

#[test]
fn a_racy_stamp_is_not_trusted_and_an_old_one_is() {
    let (_dir, path, mut p) = started("old!", 1, idle());
    // the content changes while the stamp stays (a coarse clock on a rewrite in the
    // same tick): only reading can tell
    std::fs::write(&path, "new!").unwrap();
    let stamp = Stamp::of(&std::fs::metadata(&path).unwrap());
    p.states[0].stamp = Some((stamp, true));
    assert_eq!(seen(&poll(&mut p)), one(0, "new!"));
    // a stamp older than RACY at the last read is trusted: no read
    std::fs::write(&path, "new?").unwrap();
    let stamp = Stamp::of(&std::fs::metadata(&path).unwrap());
    p.states[0].stamp = Some((stamp, false));
    assert!(poll(&mut p).is_empty());
}

#[test]
fn racy_is_recent_future_or_unknown() {
    let now = SystemTime::now();
    let stamp = |modified: Option<SystemTime>, changed: Option<SystemTime>| Stamp {
        len: 1,
        modified,
        changed,
        file_id: (1, 1),
    };
    let old = Some(now - Duration::from_secs(10));
    let recent = Some(now - Duration::from_secs(1));
    let future = Some(now + Duration::from_secs(60));
    assert!(!stamp(old, old).racy(now));
    assert!(stamp(old, None).racy(now), "no change time: always read");
    assert!(stamp(recent, old).racy(now));
    assert!(stamp(old, recent).racy(now), "the change time counts too");
    assert!(stamp(future, old).racy(now));
    assert!(stamp(None, old).racy(now));
}

#[test]
fn settling_waits_for_the_same_content_twice() {
    let (_dir, path, mut p) = started("old", 2, idle());
    std::fs::write(&path, "ha").unwrap();
    assert!(poll(&mut p).is_empty(), "half written, seen once");
    std::fs::write(&path, "half").unwrap();
    assert!(poll(&mut p).is_empty(), "other content, seen once");
    assert_eq!(seen(&poll(&mut p)), one(0, "half"));
    assert!(poll(&mut p).is_empty());
    // back to what was reported: nothing to settle, nothing to report
    std::fs::write(&path, "new").unwrap();
    assert!(poll(&mut p).is_empty());
    std::fs::write(&path, "half").unwrap();
    assert!(poll(&mut p).is_empty());
    assert!(poll(&mut p).is_empty());
}

#[tokio::test]
async fn a_removed_file_fails_at_every_poll_and_its_return_is_reported_even_unchanged() {
    let stop = CancellationToken::new();
    let (_dir, path, mut p) = started("cert", 1, fast(&stop));
    std::fs::remove_file(&path).unwrap();
    let gone = one(0, "error: NotFound");
    assert_eq!(seen(&next(&mut p).await), gone);
    assert_eq!(seen(&next(&mut p).await), gone);
    std::fs::write(&path, "cert").unwrap();
    assert_eq!(seen(&next(&mut p).await), one(0, "cert"));
    assert!(poll(&mut p).is_empty());
}

#[test]
fn a_path_missing_at_the_start_is_reported_once_it_appears() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("later.pem");
    let mut p = poller(&[&path], 1, idle());
    assert!(p.read_all()[0].is_err());
    std::fs::write(&path, "here").unwrap();
    assert_eq!(seen(&poll(&mut p)), one(0, "here"));
}

#[test]
fn again_reports_the_same_content_at_the_next_poll() {
    let (_dir, _path, mut p) = started("policy", 2, idle());
    p.again(0);
    assert_eq!(seen(&poll(&mut p)), one(0, "policy"), "settled already");
    assert!(poll(&mut p).is_empty());
}

#[test]
fn too_large_and_not_regular_are_failed_reads() {
    let dir = tempfile::tempdir().unwrap();
    let large = dir.path().join("large");
    std::fs::write(&large, [b'x'; 65]).unwrap();
    let mut p = poller(&[&large, dir.path()], 1, idle());
    let read = p.read_all();
    assert!(matches!(read[0], Err(ReadError::TooLarge(64))), "{read:?}");
    assert!(matches!(read[1], Err(ReadError::NotRegular("a directory"))));
    assert_eq!(
        seen(&poll(&mut p)),
        [
            (0, "error: is larger than 64 bytes".to_owned()),
            (1, "error: is not a regular file (a directory)".to_owned())
        ]
    );
}

#[cfg(unix)]
#[test]
fn a_fifo_is_refused_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.unwrap().success());
    let err = crate::read_regular(&fifo, 64).unwrap_err();
    assert!(matches!(err, ReadError::NotRegular("a FIFO")), "{err}");
}

#[tokio::test]
async fn a_stop_ends_a_waiting_poller_promptly() {
    let stop = CancellationToken::new();
    let (_dir, _path, mut p) = started("cert", 1, Schedule::new(HOUR, stop.clone()));
    let waiting = tokio::spawn(async move { p.next().await.map(|r| r.len()) });
    stop.cancel();
    let ended = tokio::time::timeout(DEADLINE, waiting).await;
    assert_eq!(ended.expect("stopped within the deadline").unwrap(), None);
}

#[tokio::test]
async fn a_wake_polls_before_the_interval() {
    let wake = Arc::new(Notify::new());
    let schedule = idle().wake_on(wake.clone(), Duration::ZERO);
    let (_dir, path, mut p) = started("one", 1, schedule);
    std::fs::write(&path, "two").unwrap();
    wake.notify_one();
    assert_eq!(seen(&next(&mut p).await), one(0, "two"));
}

#[tokio::test(start_paused = true)]
async fn a_wake_waits_out_the_minimum_gap() {
    let wake = Arc::new(Notify::new());
    let gap = Duration::from_secs(10);
    let mut schedule = idle().wake_on(wake.clone(), gap);
    let start = Instant::now();
    wake.notify_one();
    assert!(schedule.wait().await);
    // the paused clock moved exactly as far as the schedule slept
    assert_eq!(Instant::now() - start, gap);
    assert!(schedule.wait().await, "no wake: the interval");
    assert_eq!(Instant::now() - start, gap + HOUR);
}

/// What happens to the followed file between polls.
#[derive(Debug, Clone)]
enum Op {
    /// Truncated and written in place (same inode).
    Write(usize),
    /// In place, its modification time set back to one fixed instant.
    WriteKeepingTime(usize),
    /// Renamed over the path (another inode).
    Swap(usize),
    Remove,
    Poll,
}

/// Same-length contents (a rewrite the stamp's length cannot tell) and one other.
const TEXTS: [&str; 4] = ["aaaa", "bbbb", "cccc", "dd"];

fn op() -> impl proptest::strategy::Strategy<Value = Op> {
    use proptest::prelude::*;
    let text = 0..TEXTS.len();
    prop_oneof![
        text.clone().prop_map(Op::Write),
        text.clone().prop_map(Op::WriteKeepingTime),
        text.prop_map(Op::Swap),
        Just(Op::Remove),
        Just(Op::Poll),
        Just(Op::Poll),
    ]
}

/// The reference: every poll reads; content is reported once it has been read
/// `settle` polls in a row and differs from what was reported; a missing file is a
/// failure at every poll and forgets all.
#[derive(Default)]
struct Model {
    reported: Option<&'static str>,
    last: Option<&'static str>,
    polls: u32,
}

impl Model {
    fn poll(&mut self, file: Option<&'static str>, settle: u32) -> Vec<(usize, String)> {
        let Some(text) = file else {
            *self = Self::default();
            return one(0, "error: NotFound");
        };
        self.polls = if self.last == Some(text) {
            self.polls + 1
        } else {
            1
        };
        self.last = Some(text);
        if self.reported == Some(text) || self.polls < settle {
            return Vec::new();
        }
        self.reported = Some(text);
        one(0, text)
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// Whatever is done to the file, however fast (several writes in one tick of
    /// the filesystem's clock), the stat-first poller reports what the read-always
    /// reference does.
    #[test]
    fn the_poller_reports_what_reading_every_time_would(
        ops in proptest::collection::vec(op(), 1..40),
        settle in 1u32..3,
    ) {
        let (_dir, path, mut p) = started(TEXTS[0], settle, idle());
        let mut model = Model { reported: Some(TEXTS[0]), last: Some(TEXTS[0]), polls: settle };
        let mut file = Some(TEXTS[0]);
        let kept_time = SystemTime::now() - HOUR;
        for op in ops {
            match op {
                Op::Write(i) => {
                    std::fs::write(&path, TEXTS[i]).unwrap();
                    file = Some(TEXTS[i]);
                }
                Op::WriteKeepingTime(i) => {
                    std::fs::write(&path, TEXTS[i]).unwrap();
                    let handle = std::fs::File::options().write(true).open(&path).unwrap();
                    handle.set_modified(kept_time).unwrap();
                    file = Some(TEXTS[i]);
                }
                Op::Swap(i) => {
                    write_atomic(&path, Mode::KeepTarget, TEXTS[i].as_bytes()).unwrap();
                    file = Some(TEXTS[i]);
                }
                Op::Remove => {
                    let _ = std::fs::remove_file(&path);
                    file = None;
                }
                Op::Poll => {
                    proptest::prop_assert_eq!(seen(&poll(&mut p)), model.poll(file, settle));
                }
            }
        }
    }
}
