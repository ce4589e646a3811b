//! OTLP/HTTP logs on the same port: an export answered as a call of OTLP's gRPC
//! `LogsService/Export` through the same stack.

use super::errors::{RpcStatus, http_status};
use super::{PASSED_ON, Refusal, refuse_query};

use super::answers::unary_message;
use super::frames::{grpc_frame, read_body};
use crate::grpc::limits::LimitHit;
use crate::http::{Shared, full};
use http::header::{self, HeaderMap, HeaderValue};
use http::{Method, Request, Response, StatusCode, Uri};
use std::convert::Infallible;
use tonic::body::Body;
use tonic::{Code, Status};

/// Where OTLP/HTTP sends logs.
pub(in crate::http) const OTLP_LOGS_PATH: &str = "/v1/logs";
/// The gRPC method an OTLP/HTTP logs export is answered by.
pub(super) const OTLP_LOGS_METHOD: &str =
    "/opentelemetry.proto.collector.logs.v1.LogsService/Export";

/// Serves an OTLP/HTTP logs export (`POST /v1/logs`, `application/x-protobuf`) as a
/// call of OTLP's gRPC `LogsService/Export` through `inner`, so it is authenticated,
/// bounded and counted as every call. The body is taken uncompressed only: a
/// compressed one could hold far more than the body's bound once inflated.
pub(in crate::http) async fn serve_otlp<S>(
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
pub(super) fn otlp_error(http: StatusCode, status: &Status) -> Response<Body> {
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
