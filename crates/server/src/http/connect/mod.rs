//! The Connect protocol (connectrpc.com/docs/protocol) over the gRPC stack: a unary
//! call is `POST /package.Service/Method` with a JSON (`application/json`) or protobuf
//! (`application/proto`) body; a server stream takes and answers enveloped messages
//! (`application/connect+json`, `application/connect+proto`) and ends with an
//! end-of-stream message that carries the status.
//!
//! Each call becomes one gRPC request (the message in a gRPC frame, the caller's
//! `authorization` as metadata) sent into the same tower stack gRPC clients reach,
//! and the gRPC answer is read back into Connect's form.

mod answers;
mod errors;
mod frames;
mod otlp;
#[cfg(test)]
mod tests;

use super::{Shared, full, json};
use crate::grpc::limits::LimitHit;
use answers::{stream_answer, stream_error, unary_answer};
use bytes::Bytes;
pub(super) use errors::error_response;
use errors::{error_with, http_status};
use frames::{grpc_frame, grpc_timeout, read_body, single_envelope};
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Method, Request, Response, StatusCode, Uri};
pub(super) use otlp::{OTLP_LOGS_PATH, serve_otlp};
use prost_reflect::MethodDescriptor;
use std::convert::Infallible;
use tonic::Status;
use tonic::body::Body;

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
