//! The Connect protocol (connectrpc.com/docs/protocol) over the gRPC stack: a unary
//! call is `POST /package.Service/Method` with a JSON (`application/json`) or protobuf
//! (`application/proto`) body; a server stream takes and answers enveloped messages
//! (`application/connect+json`, `application/connect+proto`) and ends with an
//! end-of-stream message that carries the status.
//!
//! Each call becomes one gRPC request (the message in a gRPC frame, the caller's
//! `authorization` as metadata) sent into the same tower stack gRPC clients reach,
//! and the gRPC answer is read back into Connect's form.

use super::{Shared, full, json};
use crate::grpc::limits::LimitHit;
use bytes::{Buf, BufMut, Bytes, BytesMut};
use futures::StreamExt as _;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Method, Request, Response, StatusCode, Uri};
use http_body::Frame;
use http_body_util::BodyExt as _;
use prost_reflect::MethodDescriptor;
use serde_json::json;
use std::convert::Infallible;
use tonic::body::Body;
use tonic::{Code, Status};

/// The request headers passed on to the gRPC call; any other (a cookie, above all)
/// is not.
const PASSED_ON: [HeaderName; 3] = [
    header::AUTHORIZATION,
    HeaderName::from_static("traceparent"),
    HeaderName::from_static("tracestate"),
];

/// The content types a Connect call may have, for `Accept-Post` and the 415 answer.
const CONTENT_TYPES: &str =
    "application/json, application/proto, application/connect+json, application/connect+proto";

/// A message's encoding in a Connect call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Codec {
    Json,
    Proto,
}

/// A Connect request's shape, from its content type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Shape {
    codec: Codec,
    stream: bool,
}

impl Shape {
    fn of(headers: &HeaderMap) -> Option<Self> {
        let value = headers.get(header::CONTENT_TYPE)?.to_str().ok()?;
        let essence = value.split(';').next()?.trim().to_ascii_lowercase();
        let (codec, stream) = match essence.as_str() {
            "application/json" => (Codec::Json, false),
            "application/proto" => (Codec::Proto, false),
            "application/connect+json" => (Codec::Json, true),
            "application/connect+proto" => (Codec::Proto, true),
            _ => return None,
        };
        Some(Self { codec, stream })
    }

    fn content_type(self) -> &'static str {
        match (self.codec, self.stream) {
            (Codec::Json, false) => "application/json",
            (Codec::Proto, false) => "application/proto",
            (Codec::Json, true) => "application/connect+json",
            (Codec::Proto, true) => "application/connect+proto",
        }
    }
}

/// Serves one Connect call through `inner`, the gRPC stack.
pub(super) async fn serve<S>(shared: &Shared, inner: S, req: Request<Body>) -> Response<Body>
where
    S: tower::Service<Request<Body>, Response = Response<Body>, Error = Infallible>,
{
    let Some(method) = lookup(shared, req.uri().path()) else {
        let e = Status::unimplemented(format!(
            "no method {}: call POST /package.Service/Method, such as /toolgate.v1.PolicyService/Evaluate",
            req.uri().path()
        ));
        return error_with(StatusCode::NOT_FOUND, &e);
    };
    if req.method() != Method::POST {
        let e = Status::unimplemented(format!(
            "{} is not answered: call {} with POST",
            req.method(),
            req.uri().path()
        ));
        let mut answer = error_with(StatusCode::METHOD_NOT_ALLOWED, &e);
        answer
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("POST"));
        return answer;
    }
    if let Some(refused) = refuse_query(&req) {
        return error_response(&refused);
    }
    let streams = method.is_server_streaming();
    let shape = match Shape::of(req.headers()) {
        Some(shape) if shape.stream == streams && !method.is_client_streaming() => shape,
        _ => {
            let want = if streams {
                "application/connect+json (or application/connect+proto): this method streams"
            } else {
                "application/json (or application/proto)"
            };
            let e = Status::invalid_argument(format!(
                "content-type {:?} is not taken here: send {want}",
                req.headers()
                    .get(header::CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
            ));
            let mut answer = error_with(StatusCode::UNSUPPORTED_MEDIA_TYPE, &e);
            answer
                .headers_mut()
                .insert("accept-post", HeaderValue::from_static(CONTENT_TYPES));
            return answer;
        }
    };
    match call(shared, inner, req, &method, shape).await {
        Ok(answer) => answer,
        Err(Refusal { status, .. }) if shape.stream => stream_error(shape, &status),
        Err(Refusal { status, http }) => {
            error_with(http.unwrap_or_else(|| http_status(status.code())), &status)
        }
    }
}

/// Why a call was not made or failed: the status, and the HTTP status when it is
/// not the one Connect maps the code to.
#[derive(Debug)]
struct Refusal {
    status: Status,
    http: Option<StatusCode>,
}

impl From<Status> for Refusal {
    fn from(status: Status) -> Self {
        Self { status, http: None }
    }
}

/// The method a path names, in the descriptor set.
pub(super) fn lookup(shared: &Shared, path: &str) -> Option<MethodDescriptor> {
    let (service, method) = path.strip_prefix('/')?.split_once('/')?;
    shared
        .pool
        .get_service_by_name(service)?
        .methods()
        .find(|m| m.name() == method)
}

/// A refusal of any query string: the token is read from the `Authorization` header
/// only, and a token in a URL ends up in proxies' and browsers' logs.
pub(super) fn refuse_query<B>(req: &Request<B>) -> Option<Status> {
    req.uri().query().map(|_| {
        Status::invalid_argument(
            "the URL has a query string, which this API does not read: send the message in the body and the token in the Authorization header (Bearer TOKEN)",
        )
    })
}

async fn call<S>(
    shared: &Shared,
    mut inner: S,
    req: Request<Body>,
    method: &MethodDescriptor,
    shape: Shape,
) -> Result<Response<Body>, Refusal>
where
    S: tower::Service<Request<Body>, Response = Response<Body>, Error = Infallible>,
{
    if let Some(encoding) = ["content-encoding", "connect-content-encoding"]
        .iter()
        .find_map(|h| req.headers().get(*h))
        .filter(|v| *v != "identity")
    {
        return Err(Refusal {
            status: Status::invalid_argument(format!(
                "content encoding {encoding:?} is not taken: send the body uncompressed"
            )),
            http: Some(StatusCode::UNSUPPORTED_MEDIA_TYPE),
        });
    }
    let timeout = grpc_timeout(req.headers())?;
    let (mut parts, body) = req.into_parts();
    let Ok(reading) = shared.reading.clone().try_acquire_owned() else {
        let hit = LimitHit::Concurrency {
            max: shared.max_reading,
        };
        crate::metrics::limit_refused(hit.label());
        return Err(Status::from(hit).into());
    };
    let body = read_body(shared, body, parts.headers.get(header::CONTENT_LENGTH)).await?;
    let message = if shape.stream {
        single_envelope(body, shared.max_body)?
    } else {
        body
    };
    let message = match shape.codec {
        Codec::Json => Bytes::from(json::to_protobuf(&method.input(), &message)?),
        Codec::Proto => message,
    };
    // the call takes a place of its own in the stack below
    drop(reading);
    let mut headers = HeaderMap::new();
    for name in PASSED_ON {
        if let Some(value) = parts.headers.get(&name) {
            headers.insert(name, value.clone());
        }
    }
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/grpc"),
    );
    headers.insert(header::TE, HeaderValue::from_static("trailers"));
    if let Some(timeout) = timeout {
        headers.insert("grpc-timeout", timeout);
    }
    // the extensions stay: the TLS peer's certificate authenticates as on gRPC
    parts.headers = headers;
    parts.version = http::Version::HTTP_2;
    parts.uri = Uri::builder()
        .path_and_query(parts.uri.path())
        .build()
        .map_err(|e| Status::invalid_argument(format!("path: {e}")))?;
    let request = Request::from_parts(parts, full(grpc_frame(&message)));
    std::future::poll_fn(|cx| inner.poll_ready(cx))
        .await
        .unwrap_or_else(|never| match never {});
    let answer = inner
        .call(request)
        .await
        .unwrap_or_else(|never| match never {});
    if shape.stream {
        Ok(stream_answer(answer, method.clone(), shape))
    } else {
        Ok(unary_answer(answer, method, shape.codec).await?)
    }
}

/// Where OTLP/HTTP sends logs.
pub(super) const OTLP_LOGS_PATH: &str = "/v1/logs";
/// The gRPC method an OTLP/HTTP logs export is answered by.
const OTLP_LOGS_METHOD: &str = "/opentelemetry.proto.collector.logs.v1.LogsService/Export";

/// Serves an OTLP/HTTP logs export (`POST /v1/logs`, `application/x-protobuf`) as a
/// call of OTLP's gRPC `LogsService/Export` through `inner`, so it is authenticated,
/// bounded and counted as every call. The body is taken uncompressed only: a
/// compressed one could hold far more than the body's bound once inflated.
pub(super) async fn serve_otlp<S>(
    shared: &Shared,
    mut inner: S,
    req: Request<Body>,
) -> Response<Body>
where
    S: tower::Service<Request<Body>, Response = Response<Body>, Error = Infallible>,
{
    let refuse = |http: StatusCode, status: Status| otlp_error(http, &status);
    if req.method() != Method::POST {
        let mut answer = refuse(
            StatusCode::METHOD_NOT_ALLOWED,
            Status::unimplemented(format!(
                "{} is not answered: send logs with POST",
                req.method()
            )),
        );
        answer
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("POST"));
        return answer;
    }
    if let Some(refused) = refuse_query(&req) {
        return refuse(StatusCode::BAD_REQUEST, refused);
    }
    let essence = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase())
        .unwrap_or_default();
    if essence != "application/x-protobuf" {
        return refuse(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Status::invalid_argument(format!(
                "content-type {essence:?} is not taken at {OTLP_LOGS_PATH}: send OTLP protobuf (application/x-protobuf; OTEL_EXPORTER_OTLP_LOGS_PROTOCOL=http/protobuf)"
            )),
        );
    }
    if let Some(encoding) = req
        .headers()
        .get(header::CONTENT_ENCODING)
        .filter(|v| *v != "identity")
    {
        return refuse(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Status::invalid_argument(format!(
                "content encoding {encoding:?} is not taken: send the logs uncompressed (OTEL_EXPORTER_OTLP_LOGS_COMPRESSION=none)"
            )),
        );
    }
    let (mut parts, body) = req.into_parts();
    let Ok(reading) = shared.reading.clone().try_acquire_owned() else {
        let hit = LimitHit::Concurrency {
            max: shared.max_reading,
        };
        crate::metrics::limit_refused(hit.label());
        return refuse(StatusCode::TOO_MANY_REQUESTS, Status::from(hit));
    };
    let message = match read_body(shared, body, parts.headers.get(header::CONTENT_LENGTH)).await {
        Ok(message) => message,
        Err(Refusal { status, http }) => {
            return refuse(http.unwrap_or_else(|| http_status(status.code())), status);
        }
    };
    drop(reading);
    let mut headers = HeaderMap::new();
    for name in PASSED_ON {
        if let Some(value) = parts.headers.get(&name) {
            headers.insert(name, value.clone());
        }
    }
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/grpc"),
    );
    headers.insert(header::TE, HeaderValue::from_static("trailers"));
    parts.headers = headers;
    parts.version = http::Version::HTTP_2;
    parts.uri = Uri::from_static(OTLP_LOGS_METHOD);
    let request = Request::from_parts(parts, full(grpc_frame(&message)));
    std::future::poll_fn(|cx| inner.poll_ready(cx))
        .await
        .unwrap_or_else(|never| match never {});
    let answer = inner
        .call(request)
        .await
        .unwrap_or_else(|never| match never {});
    match unary_message(answer).await {
        Ok(message) => {
            let mut answer = Response::new(full(message));
            answer.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/x-protobuf"),
            );
            answer
        }
        // tonic says INTERNAL of a body it cannot decode: the sender's fault here
        Err(status)
            if status.code() == Code::Internal
                && status
                    .message()
                    .starts_with("failed to decode Protobuf message") =>
        {
            refuse(
                StatusCode::BAD_REQUEST,
                Status::invalid_argument(format!(
                    "the body is not an OTLP ExportLogsServiceRequest ({}): send OTLP protobuf",
                    status.message()
                )),
            )
        }
        Err(status) => refuse(http_status(status.code()), status),
    }
}

/// An OTLP/HTTP error: the status as a protobuf `google.rpc.Status`, as OTLP's
/// specification asks of a protobuf request.
fn otlp_error(http: StatusCode, status: &Status) -> Response<Body> {
    use prost::Message as _;
    let body = RpcStatus {
        code: status.code() as i32,
        message: status.message().to_owned(),
        details: Vec::new(),
    }
    .encode_to_vec();
    let mut answer = Response::new(full(body));
    *answer.status_mut() = http;
    answer.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/x-protobuf"),
    );
    answer
}

/// `Connect-Timeout-Ms` as a `grpc-timeout`, so the service's deadline is the same.
fn grpc_timeout(headers: &HeaderMap) -> Result<Option<HeaderValue>, Status> {
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
async fn read_body(
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
fn single_envelope(mut body: Bytes, max: usize) -> Result<Bytes, Status> {
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
fn grpc_frame(message: &[u8]) -> Bytes {
    let mut frame = BytesMut::with_capacity(5 + message.len());
    frame.put_u8(0);
    frame.put_u32(message.len() as u32);
    frame.put_slice(message);
    frame.freeze()
}

/// The next whole gRPC frame's message from `buf`, if it holds one.
fn take_frame(buf: &mut BytesMut) -> Result<Option<Bytes>, Status> {
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

/// The status in `headers`, if they carry one.
fn status_in(headers: &HeaderMap) -> Option<Status> {
    Status::from_header_map(headers)
}

async fn unary_answer(
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
async fn unary_message(answer: Response<Body>) -> Result<Bytes, Status> {
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

/// A Connect envelope: flags, length, payload.
fn envelope(flags: u8, payload: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(5 + payload.len());
    out.put_u8(flags);
    out.put_u32(payload.len() as u32);
    out.put_slice(payload);
    out.freeze()
}

/// The end-of-stream envelope: `{}` when the stream ended well, the error otherwise.
fn end_of_stream(status: Option<&Status>) -> Bytes {
    let body = match status.filter(|s| s.code() != Code::Ok) {
        Some(status) => json!({ "error": error_json(status) }),
        None => json!({}),
    };
    envelope(0x02, body.to_string().as_bytes())
}

fn stream_response(shape: Shape, body: Body) -> Response<Body> {
    let mut answer = Response::new(body);
    answer.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(shape.content_type()),
    );
    answer
}

/// A stream that ended before it began: HTTP 200 and only the end-of-stream message,
/// as Connect streams report errors.
fn stream_error(shape: Shape, status: &Status) -> Response<Body> {
    stream_response(shape, full(end_of_stream(Some(status))))
}

/// The gRPC stream's messages as Connect envelopes, as they come.
fn stream_answer(answer: Response<Body>, method: MethodDescriptor, shape: Shape) -> Response<Body> {
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

/// Connect's name of a code.
fn code_name(code: Code) -> &'static str {
    match code {
        Code::Ok => "ok",
        Code::Cancelled => "canceled",
        Code::Unknown => "unknown",
        Code::InvalidArgument => "invalid_argument",
        Code::DeadlineExceeded => "deadline_exceeded",
        Code::NotFound => "not_found",
        Code::AlreadyExists => "already_exists",
        Code::PermissionDenied => "permission_denied",
        Code::ResourceExhausted => "resource_exhausted",
        Code::FailedPrecondition => "failed_precondition",
        Code::Aborted => "aborted",
        Code::OutOfRange => "out_of_range",
        Code::Unimplemented => "unimplemented",
        Code::Internal => "internal",
        Code::Unavailable => "unavailable",
        Code::DataLoss => "data_loss",
        Code::Unauthenticated => "unauthenticated",
    }
}

/// The HTTP status Connect gives a code.
fn http_status(code: Code) -> StatusCode {
    match code {
        Code::Ok => StatusCode::OK,
        Code::Cancelled => StatusCode::from_u16(499).unwrap_or(StatusCode::BAD_REQUEST),
        Code::Unknown | Code::Internal | Code::DataLoss => StatusCode::INTERNAL_SERVER_ERROR,
        Code::InvalidArgument | Code::FailedPrecondition | Code::OutOfRange => {
            StatusCode::BAD_REQUEST
        }
        Code::DeadlineExceeded => StatusCode::GATEWAY_TIMEOUT,
        Code::NotFound => StatusCode::NOT_FOUND,
        Code::AlreadyExists | Code::Aborted => StatusCode::CONFLICT,
        Code::PermissionDenied => StatusCode::FORBIDDEN,
        Code::ResourceExhausted => StatusCode::TOO_MANY_REQUESTS,
        Code::Unimplemented => StatusCode::NOT_IMPLEMENTED,
        Code::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        Code::Unauthenticated => StatusCode::UNAUTHORIZED,
    }
}

/// A status as Connect's error JSON: the code's name, the message, and the details
/// (a bad request's field violations readable under `debug`).
fn error_json(status: &Status) -> serde_json::Value {
    let mut error = json!({
        "code": code_name(status.code()),
        "message": status.message(),
    });
    let details = details_json(status);
    if !details.is_empty() {
        error["details"] = serde_json::Value::Array(details);
    }
    error
}

/// `google.rpc.Status`, whose `details` tonic carries encoded.
#[derive(Clone, PartialEq, prost::Message)]
struct RpcStatus {
    #[prost(int32, tag = "1")]
    code: i32,
    #[prost(string, tag = "2")]
    message: String,
    #[prost(message, repeated, tag = "3")]
    details: Vec<prost_types::Any>,
}

fn details_json(status: &Status) -> Vec<serde_json::Value> {
    use base64::Engine as _;
    use prost::Message as _;
    use tonic_types::StatusExt as _;
    if status.details().is_empty() {
        return Vec::new();
    }
    let Ok(decoded) = RpcStatus::decode(status.details()) else {
        return Vec::new();
    };
    let violations = status.get_details_bad_request().map(|bad| {
        bad.field_violations
            .into_iter()
            .map(|v| json!({ "field": v.field, "description": v.description }))
            .collect::<Vec<_>>()
    });
    decoded
        .details
        .into_iter()
        .map(|any| {
            let kind = any
                .type_url
                .rsplit_once('/')
                .map_or(any.type_url.as_str(), |(_, name)| name)
                .to_owned();
            let mut detail = json!({
                "type": kind,
                "value": base64::engine::general_purpose::STANDARD_NO_PAD.encode(&any.value),
            });
            if kind == "google.rpc.BadRequest"
                && let Some(violations) = &violations
            {
                detail["debug"] = json!({ "fieldViolations": violations });
            }
            detail
        })
        .collect()
}

/// A unary call's error: the HTTP status Connect maps the code to, the error JSON.
pub(super) fn error_response(status: &Status) -> Response<Body> {
    error_with(http_status(status.code()), status)
}

fn error_with(http: StatusCode, status: &Status) -> Response<Body> {
    let mut answer = Response::new(full(error_json(status).to_string()));
    *answer.status_mut() = http;
    answer.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
