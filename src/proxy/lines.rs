//! The stdio guard: every line from the client is checked before the MCP layer sees
//! it; one that is not JSON or is too long is answered with a JSON-RPC error (rmcp
//! drops such lines silently) and the session goes on.

use super::MAX_MESSAGE_BYTES;
use bytes::BytesMut;
use futures::{SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, DuplexStream};
use tokio::sync::mpsc;
use tokio_util::codec::{Decoder, FramedRead, LinesCodec, LinesCodecError};

/// A JSON-RPC error without an id (none can be read from the offending line).
fn error_line(code: i64, message: String) -> String {
    serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}})
        .to_string()
}

/// Puts the guard between `read`/`write` and the returned stream, which the MCP layer
/// then serves.
pub fn guard<R, W>(read: R, write: W) -> DuplexStream
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let (inner, outer) = tokio::io::duplex(1 << 16);
    let (outer_read, mut outer_write) = tokio::io::split(outer);
    let (errors_tx, mut errors_rx) = mpsc::channel::<String>(16);

    // client -> MCP layer; the codec is driven by hand because a framed stream ends
    // at its first error, and an over-long line must not end the session
    tokio::spawn(async move {
        let mut read = read;
        let mut codec = LinesCodec::new_with_max_length(MAX_MESSAGE_BYTES);
        let mut buf = BytesMut::with_capacity(1 << 16);
        loop {
            let line = match codec.decode(&mut buf) {
                Ok(Some(line)) => Ok(line),
                Ok(None) => match read.read_buf(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => continue,
                },
                Err(e) => Err(e),
            };
            let answer = match line {
                Ok(line) if line.trim().is_empty() => continue,
                Ok(line) => match serde_json::from_str::<serde_json::Value>(&line) {
                    Ok(_) => {
                        let forwarded = async {
                            outer_write.write_all(line.as_bytes()).await?;
                            outer_write.write_all(b"\n").await
                        };
                        if forwarded.await.is_err() {
                            return;
                        }
                        continue;
                    }
                    Err(e) => error_line(-32700, format!("parse error: {e}")),
                },
                Err(LinesCodecError::MaxLineLengthExceeded) => error_line(
                    -32600,
                    format!("message longer than {MAX_MESSAGE_BYTES} bytes: dropped"),
                ),
                Err(LinesCodecError::Io(_)) => break,
            };
            if errors_tx.send(answer).await.is_err() {
                return;
            }
        }
        // end of input: let the MCP layer see it
        let _ = outer_write.shutdown().await;
    });

    // MCP layer and guard errors -> client, a whole line at a time
    tokio::spawn(async move {
        let mut out = tokio_util::codec::FramedWrite::new(write, LinesCodec::new());
        let mut replies = FramedRead::new(outer_read, LinesCodec::new());
        loop {
            let line = tokio::select! {
                reply = replies.next() => match reply {
                    Some(Ok(line)) => line,
                    _ => return,
                },
                Some(error) = errors_rx.recv() => error,
            };
            if out.send(line).await.is_err() {
                return;
            }
        }
    });
    inner
}
