//! The Connect protocol's framing: the request body read under its bounds, gRPC
//! frames and Connect envelopes, and the timeout header carried across.

use super::Refusal;
use super::errors::error_json;

use crate::http::Shared;
use bytes::{Buf, BufMut, Bytes, BytesMut};
use http::StatusCode;
use http::header::{HeaderMap, HeaderValue};
use http_body_util::BodyExt as _;
use serde_json::json;
use tonic::body::Body;
use tonic::{Code, Status};

/// `Connect-Timeout-Ms` as a `grpc-timeout`, so the service's deadline is the same.
pub(super) fn grpc_timeout(headers: &HeaderMap) -> Result<Option<HeaderValue>, Status> {
    let Some(value) = headers.get("connect-timeout-ms") else {
        return Ok(None);
    };
    match value
        .to_str()
        .ok()
        .filter(|v| (1..=8).contains(&v.len()) && v.bytes().all(|b| b.is_ascii_digit()))
    {
        Some(ms) => Ok(HeaderValue::from_str(&format!("{ms}m")).ok()),
        None => Err(Status::invalid_argument(format!(
            "connect-timeout-ms: {value:?} is not a number of milliseconds: give 1 to 99999999 digits, or leave it out"
        ))),
    }
}

/// The request body, refused past `limits.max_request_bytes` (read no further) or
/// when it has not arrived within `limits.request_timeout_secs`.
pub(super) async fn read_body(
    shared: &Shared,
    body: Body,
    length: Option<&HeaderValue>,
) -> Result<Bytes, Refusal> {
    let too_large = || Refusal {
        status: Status::resource_exhausted(format!(
            "the request body is larger than limits.max_request_bytes ({} bytes): send less, or raise the limit",
            shared.max_body
        )),
        http: Some(StatusCode::PAYLOAD_TOO_LARGE),
    };
    let declared = length
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > shared.max_body as u64) {
        return Err(too_large());
    }
    let limited = http_body_util::Limited::new(body, shared.max_body);
    match tokio::time::timeout(shared.read_timeout, limited.collect()).await {
        Err(_) => Err(Status::deadline_exceeded(format!(
            "the request body did not arrive within limits.request_timeout_secs ({} s)",
            shared.read_timeout.as_secs()
        ))
        .into()),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(too_large()),
        Ok(Err(e)) => {
            Err(Status::invalid_argument(format!("the request body could not be read: {e}")).into())
        }
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
    }
}

/// The one message of a server-streaming call's request: one envelope, uncompressed.
pub(super) fn single_envelope(mut body: Bytes, max: usize) -> Result<Bytes, Status> {
    let bad = |why: &str| {
        Status::invalid_argument(format!(
            "the request body is not one Connect envelope ({why}): send flags 0, a 4-byte big-endian length and the message"
        ))
    };
    if body.len() < 5 {
        return Err(bad("shorter than its 5-byte prefix"));
    }
    let flags = body.get_u8();
    let length = body.get_u32() as usize;
    if flags != 0 {
        return Err(bad("flags other than 0: compressed or end-of-stream"));
    }
    if length > max || length != body.len() {
        return Err(bad("its length is not the rest of the body"));
    }
    Ok(body)
}

/// `message` in a gRPC frame: uncompressed, its length.
pub(super) fn grpc_frame(message: &[u8]) -> Bytes {
    let mut frame = BytesMut::with_capacity(5 + message.len());
    frame.put_u8(0);
    frame.put_u32(message.len() as u32);
    frame.put_slice(message);
    frame.freeze()
}

/// The next whole gRPC frame's message from `buf`, if it holds one.
pub(super) fn take_frame(buf: &mut BytesMut) -> Result<Option<Bytes>, Status> {
    if buf.len() < 5 {
        return Ok(None);
    }
    if buf[0] != 0 {
        return Err(Status::internal(
            "a compressed gRPC answer: not expected here",
        ));
    }
    let length = u32::from_be_bytes([buf[1], buf[2], buf[3], buf[4]]) as usize;
    if buf.len() < 5 + length {
        return Ok(None);
    }
    buf.advance(5);
    Ok(Some(buf.split_to(length).freeze()))
}

/// A Connect envelope: flags, length, payload.
pub(super) fn envelope(flags: u8, payload: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(5 + payload.len());
    out.put_u8(flags);
    out.put_u32(payload.len() as u32);
    out.put_slice(payload);
    out.freeze()
}

/// The end-of-stream envelope: `{}` when the stream ended well, the error otherwise.
pub(super) fn end_of_stream(status: Option<&Status>) -> Bytes {
    let body = match status.filter(|s| s.code() != Code::Ok) {
        Some(status) => json!({ "error": error_json(status) }),
        None => json!({}),
    };
    envelope(0x02, body.to_string().as_bytes())
}
