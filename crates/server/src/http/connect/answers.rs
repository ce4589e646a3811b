//! A gRPC answer read back into Connect's form: a unary call's message, a server
//! stream's messages as envelopes.

use super::frames::{end_of_stream, envelope, take_frame};
use super::{Codec, Shape};

use crate::http::{full, json};
use bytes::{Bytes, BytesMut};
use futures::StreamExt as _;
use http::Response;
use http::header::{self, HeaderMap, HeaderValue};
use http_body::Frame;
use http_body_util::BodyExt as _;
use prost_reflect::MethodDescriptor;
use tonic::body::Body;
use tonic::{Code, Status};

/// The status in `headers`, if they carry one.
pub(super) fn status_in(headers: &HeaderMap) -> Option<Status> {
    Status::from_header_map(headers)
}

pub(super) async fn unary_answer(
    answer: Response<Body>,
    method: &MethodDescriptor,
    codec: Codec,
) -> Result<Response<Body>, Status> {
    let message = unary_message(answer).await?;
    let (body, content_type) = match codec {
        Codec::Json => (
            Bytes::from(json::to_json(&method.output(), &message)?),
            "application/json",
        ),
        Codec::Proto => (message, "application/proto"),
    };
    let mut answer = Response::new(full(body));
    answer
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    Ok(answer)
}

/// A unary gRPC answer's one message, or its status when that is not OK.
pub(super) async fn unary_message(answer: Response<Body>) -> Result<Bytes, Status> {
    let (parts, body) = answer.into_parts();
    if let Some(status) = status_in(&parts.headers).filter(|s| s.code() != Code::Ok) {
        return Err(status);
    }
    let collected = body.collect().await?;
    if let Some(status) = collected
        .trailers()
        .and_then(status_in)
        .filter(|s| s.code() != Code::Ok)
    {
        return Err(status);
    }
    let mut data = BytesMut::from(collected.to_bytes());
    take_frame(&mut data)?.ok_or_else(|| Status::internal("the gRPC answer carried no message"))
}

pub(super) fn stream_response(shape: Shape, body: Body) -> Response<Body> {
    let mut answer = Response::new(body);
    answer.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(shape.content_type()),
    );
    answer
}

/// A stream that ended before it began: HTTP 200 and only the end-of-stream message,
/// as Connect streams report errors.
pub(super) fn stream_error(shape: Shape, status: &Status) -> Response<Body> {
    stream_response(shape, full(end_of_stream(Some(status))))
}

/// The gRPC stream's messages as Connect envelopes, as they come.
pub(super) fn stream_answer(
    answer: Response<Body>,
    method: MethodDescriptor,
    shape: Shape,
) -> Response<Body> {
    let (parts, mut body) = answer.into_parts();
    if let Some(status) = status_in(&parts.headers) {
        return stream_error(shape, &status);
    }
    let output = method.output();
    let frames = async_stream::stream! {
        let mut buf = BytesMut::new();
        let mut end = None;
        'read: while let Some(frame) = body.frame().await {
            let frame = match frame {
                Ok(frame) => frame,
                Err(status) => {
                    end = Some(status);
                    break;
                }
            };
            match frame.into_data() {
                Ok(data) => {
                    buf.extend_from_slice(&data);
                    loop {
                        let message = match take_frame(&mut buf) {
                            Ok(Some(message)) => message,
                            Ok(None) => break,
                            Err(status) => {
                                end = Some(status);
                                break 'read;
                            }
                        };
                        let payload = match shape.codec {
                            Codec::Json => match json::to_json(&output, &message) {
                                Ok(json) => Bytes::from(json),
                                Err(status) => {
                                    end = Some(status);
                                    break 'read;
                                }
                            },
                            Codec::Proto => message,
                        };
                        yield Ok::<_, Status>(Frame::data(envelope(0, &payload)));
                    }
                }
                Err(frame) => {
                    if let Some(trailers) = frame.trailers_ref() {
                        end = status_in(trailers);
                    }
                }
            }
        }
        yield Ok(Frame::data(end_of_stream(end.as_ref())));
    };
    stream_response(
        shape,
        Body::new(http_body_util::StreamBody::new(frames.boxed())),
    )
}
