//! A TCP proxy a test can pause: what either side sends meanwhile is held, as a
//! network partition holds it (no reset, no error: the peers just hear nothing),
//! and delivered once it resumes.

use std::net::SocketAddr;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// Forwards connections to `upstream` until dropped.
pub struct PausableProxy {
    pub addr: SocketAddr,
    paused: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl PausableProxy {
    pub async fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let paused = watch::Sender::new(false);
        let gate = paused.subscribe();
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let mut gate = gate.clone();
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
                    tokio::join!(pipe(cr, sw, gate.clone()), pipe(sr, cw, gate));
                });
            }
        });
        Self { addr, paused, task }
    }

    /// Holds every byte in either direction until [`Self::resume`].
    pub fn pause(&self) {
        self.paused.send_replace(true);
    }

    pub fn resume(&self) {
        self.paused.send_replace(false);
    }
}

impl Drop for PausableProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn pipe(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut gate: watch::Receiver<bool>,
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
        if to.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    let _ = to.shutdown().await;
}
