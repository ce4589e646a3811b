//! Connect's errors: a status as its code name, HTTP status and error JSON (with a
//! bad request's field violations).

use crate::http::full;
use http::header::{self, HeaderValue};
use http::{Response, StatusCode};
use serde_json::json;
use tonic::body::Body;
use tonic::{Code, Status};

/// Connect's name of a code.
pub(super) fn code_name(code: Code) -> &'static str {
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
pub(super) fn http_status(code: Code) -> StatusCode {
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
pub(super) fn error_json(status: &Status) -> serde_json::Value {
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
pub(super) struct RpcStatus {
    #[prost(int32, tag = "1")]
    pub(super) code: i32,
    #[prost(string, tag = "2")]
    pub(super) message: String,
    #[prost(message, repeated, tag = "3")]
    pub(super) details: Vec<prost_types::Any>,
}

pub(super) fn details_json(status: &Status) -> Vec<serde_json::Value> {
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
pub(in crate::http) fn error_response(status: &Status) -> Response<Body> {
    error_with(http_status(status.code()), status)
}

pub(super) fn error_with(http: StatusCode, status: &Status) -> Response<Body> {
    let mut answer = Response::new(full(error_json(status).to_string()));
    *answer.status_mut() = http;
    answer.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    answer
}
