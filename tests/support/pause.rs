//! A TCP proxy a test can pause: what either side sends meanwhile is held, as a
//! network partition holds it (no reset, no error: the peers just hear nothing),
//! and delivered once it resumes. It can also lose one commit's acknowledgement:
//! the database gets the `COMMIT` and answers, and the client hears only the
//! connection closing.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// The most client bytes kept per connection while looking for a marker.
const SEEN_LIMIT: usize = 1 << 20;

/// Forwards connections to `upstream` until dropped.
pub struct PausableProxy {
    pub addr: SocketAddr,
    paused: watch::Sender<bool>,
    /// The marker whose connection's next `COMMIT` loses its answer, until one has.
    lose_ack: Arc<Mutex<Option<Vec<u8>>>>,
    /// How many commits' answers were lost.
    lost: watch::Sender<usize>,
    task: tokio::task::JoinHandle<()>,
}

impl PausableProxy {
    pub async fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let paused = watch::Sender::new(false);
        let lose_ack: Arc<Mutex<Option<Vec<u8>>>> = Arc::default();
        let lost = watch::Sender::new(0);
        let gate = paused.subscribe();
        let (rule, count) = (lose_ack.clone(), lost.clone());
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let mut gate = gate.clone();
                let (rule, count) = (rule.clone(), count.clone());
                tokio::spawn(async move {
                    // a connection made during the partition gets through only after it
                    if gate.wait_for(|p| !*p).await.is_err() {
                        return;
                    }
                    let Ok(server) = TcpStream::connect(upstream).await else {
                        return;
                    };
                    let (cr, cw) = client.into_split();
                    let (sr, sw) = server.into_split();
                    // set by the client side once this connection's COMMIT is on its way
                    let cutting = watch::Sender::new(false);
                    let cut = Cut {
                        rule,
                        count,
                        cutting: cutting.clone(),
                    };
                    tokio::join!(
                        pipe(cr, sw, gate.clone(), Some(&cut)),
                        answers(sr, cw, gate, cutting.subscribe(), &cut)
                    );
                });
            }
        });
        Self {
            addr,
            paused,
            lose_ack,
            lost,
            task,
        }
    }

    /// Holds every byte in either direction until [`Self::resume`].
    pub fn pause(&self) {
        self.paused.send_replace(true);
    }

    pub fn resume(&self) {
        self.paused.send_replace(false);
    }

    /// The next connection that sends `marker` (a statement's text, e.g. a table
    /// name it writes) and then `COMMIT` has its commit go through and its
    /// answer lost: the proxy closes the connection to the client instead.
    pub fn lose_commit_answer_after(&self, marker: &str) {
        *self.lose_ack.lock().unwrap() = Some(marker.as_bytes().to_vec());
    }

    /// How many commits' answers were lost so far.
    pub fn lost_answers(&self) -> usize {
        *self.lost.borrow()
    }
}

impl Drop for PausableProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One connection's part in losing a commit's answer.
struct Cut {
    rule: Arc<Mutex<Option<Vec<u8>>>>,
    count: watch::Sender<usize>,
    cutting: watch::Sender<bool>,
}

impl Cut {
    /// Whether `seen` (the client's bytes so far) hold the armed marker and then a
    /// `COMMIT`: if so the rule is spent, and this connection loses the answer.
    fn fires(&self, seen: &[u8]) -> bool {
        let mut rule = self.rule.lock().unwrap();
        let Some(marker) = rule.as_deref() else {
            return false;
        };
        let after = find(seen, marker).map(|at| &seen[at + marker.len()..]);
        if after.is_none_or(|rest| find(rest, b"COMMIT").is_none()) {
            return false;
        }
        *rule = None;
        self.cutting.send_replace(true);
        true
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

async fn pipe(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut gate: watch::Receiver<bool>,
    cut: Option<&Cut>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    let mut seen = Vec::new();
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if gate.wait_for(|p| !*p).await.is_err() {
            break;
        }
        if let Some(cut) = cut
            && cut.rule.lock().unwrap().is_some()
        {
            if seen.len() + n > SEEN_LIMIT {
                seen.clear();
            }
            seen.extend_from_slice(&buf[..n]);
            // marked before the COMMIT leaves, so its answer is caught
            if cut.fires(&seen) {
                seen = Vec::new();
            }
        }
        if to.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    let _ = to.shutdown().await;
}

/// The database's side: forwarded, until this connection's COMMIT is cut; then its
/// answer is read, dropped, and the client's connection closed.
async fn answers(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut gate: watch::Receiver<bool>,
    cutting: watch::Receiver<bool>,
    cut: &Cut,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if gate.wait_for(|p| !*p).await.is_err() {
            break;
        }
        if *cutting.borrow() {
            // the commit was answered: it happened, and the client never hears so
            cut.count.send_modify(|n| *n += 1);
            break;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    let _ = to.shutdown().await;
}
