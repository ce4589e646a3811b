//! Accepted connections under limits: at most `connections.max` open at once, and a
//! connection silent for `connections.idle_timeout_secs` is closed.
//!
//! Silent means no byte received. Live HTTP/2 clients answer the server's keepalive
//! pings (`connections.keepalive_interval_secs`, shorter than the idle timeout), so
//! only peers that never speak, or stopped answering, are closed.

use futures::{Stream, StreamExt};
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::{Instant, Sleep};
use tonic::transport::server::{Connected, TcpConnectInfo, TcpIncoming};

/// How often at most a refused connection is logged.
const REFUSED_LOG_EVERY: Duration = Duration::from_secs(10);

/// The file descriptors kept for everything but connections (the store, logs, files).
const FDS_KEPT: usize = 128;

/// How many connections may be open: the configured limit, lowered to what the
/// process's open-file limit leaves room for.
pub fn effective_max(configured: usize) -> usize {
    match open_files_limit() {
        Some(fds) if fds.saturating_sub(FDS_KEPT) < configured => {
            let max = fds.saturating_sub(FDS_KEPT).max(1);
            tracing::warn!(
                configured,
                open_files_limit = fds,
                max,
                "connections.max is above what the open-file limit allows: lowered; raise the limit (ulimit -n) to allow more"
            );
            max
        }
        _ => configured,
    }
}

/// The soft open-file limit, from `/proc/self/limits` where there is one.
fn open_files_limit() -> Option<usize> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

/// The listener's connections, each counted while open and closed when idle. At the
/// limit, a new connection is closed at once and the refusal logged (at most every
/// `REFUSED_LOG_EVERY`, with how many were refused).
pub fn incoming(
    listener: TcpIncoming,
    max: usize,
    idle: Duration,
) -> impl Stream<Item = io::Result<Connection>> + Send {
    let open = Arc::new(AtomicUsize::new(0));
    let refused = AtomicU64::new(0);
    let mut last_log: Option<Instant> = None;
    listener.filter_map(move |accepted| {
        let item = match accepted {
            Err(e) => Some(Err(e)),
            Ok(stream) if open.load(Ordering::Acquire) >= max => {
                drop(stream);
                let n = refused.fetch_add(1, Ordering::Relaxed) + 1;
                if last_log.is_none_or(|at| at.elapsed() >= REFUSED_LOG_EVERY) {
                    last_log = Some(Instant::now());
                    refused.store(0, Ordering::Relaxed);
                    tracing::warn!(
                        max,
                        refused = n,
                        "connection limit reached: new connections are closed (connections.max)"
                    );
                }
                None
            }
            Ok(stream) => {
                open.fetch_add(1, Ordering::AcqRel);
                Some(Ok(Connection {
                    stream,
                    idle,
                    deadline: Box::pin(tokio::time::sleep(idle)),
                    open: open.clone(),
                }))
            }
        };
        std::future::ready(item)
    })
}

/// An accepted connection, counted until dropped, failing its reads once the peer
/// has been silent for the idle timeout (the server then closes it).
#[derive(Debug)]
pub struct Connection {
    stream: TcpStream,
    idle: Duration,
    deadline: Pin<Box<Sleep>>,
    open: Arc<AtomicUsize>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.open.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Connected for Connection {
    type ConnectInfo = TcpConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.stream.connect_info()
    }
}

impl AsyncRead for Connection {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        match Pin::new(&mut self.stream).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if buf.filled().len() > before {
                    let next = Instant::now() + self.idle;
                    self.deadline.as_mut().reset(next);
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => match self.deadline.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "connection idle past connections.idle_timeout_secs",
                ))),
                Poll::Pending => Poll::Pending,
            },
        }
    }
}

impl AsyncWrite for Connection {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}
