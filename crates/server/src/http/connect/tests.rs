//! The Connect protocol's errors and framing.

use super::frames::{envelope, take_frame};
use super::*;
use bytes::BytesMut;
use tonic::Code;

#[test]
fn envelopes_are_read_exactly() {
    let one = envelope(0, b"{}");
    assert_eq!(single_envelope(one.clone(), 1024).unwrap(), &b"{}"[..]);
    for bad in [
        Bytes::from_static(b"\0\0\0"),
        envelope(1, b"{}"),
        envelope(2, b"{}"),
        Bytes::from([&one[..], &one[..]].concat()),
        Bytes::from(one[..6].to_vec()),
    ] {
        let e = single_envelope(bad, 1024).unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument);
    }
    assert!(single_envelope(envelope(0, &[b' '; 100]), 10).is_err());
}

#[test]
fn frames_are_taken_whole() {
    let frame = grpc_frame(b"hello");
    let mut buf = BytesMut::from(&frame[..7]);
    assert_eq!(take_frame(&mut buf).unwrap(), None);
    buf.extend_from_slice(&frame[7..]);
    buf.extend_from_slice(&frame[..2]);
    assert_eq!(take_frame(&mut buf).unwrap().unwrap(), &b"hello"[..]);
    assert_eq!(buf.len(), 2);
}

#[test]
fn timeouts_are_digits_only() {
    let mut headers = HeaderMap::new();
    assert_eq!(grpc_timeout(&headers).unwrap(), None);
    headers.insert("connect-timeout-ms", HeaderValue::from_static("2500"));
    assert_eq!(grpc_timeout(&headers).unwrap().unwrap(), "2500m");
    for bad in ["", "-1", "1e3", "123456789", "10S"] {
        headers.insert("connect-timeout-ms", HeaderValue::from_static(bad));
        assert!(grpc_timeout(&headers).is_err(), "{bad}");
    }
}
