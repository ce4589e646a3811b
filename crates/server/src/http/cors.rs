//! Cross-origin calls from browser pages: refused unless the page's origin is one of
//! `http.cors_allowed_origins` (exact `scheme://host[:port]` strings, never `*`).
//!
//! The API authenticates with a bearer token or a client certificate, never a cookie,
//! so no answer allows credentials. A request from another origin that is not allowed
//! is refused before it reaches a service: a browser holding a client certificate must
//! not run calls for a page it merely visited.

use http::header::{self, HeaderMap, HeaderValue};
use http::{Request, Response, StatusCode};
use tonic::Status;
use tonic::body::Body;

/// The request headers a page may send: the token, the body's type, Connect's and
/// gRPC-Web's own, and trace context.
const ALLOWED_HEADERS: &str = "authorization, content-type, connect-protocol-version, connect-timeout-ms, grpc-timeout, x-grpc-web, x-user-agent, traceparent, tracestate";

/// How long a browser may reuse a preflight's answer, in seconds.
const PREFLIGHT_MAX_AGE: &str = "600";

/// The origin of a cross-origin request that is allowed.
#[derive(Debug, Clone)]
pub struct AllowedOrigin(HeaderValue);

impl AllowedOrigin {
    /// `None` for a request without an `Origin` (curl, gRPC clients) or from the
    /// server's own origin; the origin when it is allowed; an error otherwise.
    pub fn of<B>(req: &Request<B>, allowed: &[String]) -> Result<Option<Self>, Status> {
        let Some(origin) = req.headers().get(header::ORIGIN) else {
            return Ok(None);
        };
        let text = origin.to_str().unwrap_or("");
        if allowed.iter().any(|a| a == text) {
            return Ok(Some(Self(origin.clone())));
        }
        let host = req
            .headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .or_else(|| req.uri().authority().map(|a| a.as_str()));
        let same_origin = text
            .split_once("://")
            .is_some_and(|(_, authority)| Some(authority) == host);
        if same_origin {
            return Ok(None);
        }
        Err(Status::permission_denied(format!(
            "origin {text:?} may not call this API from a browser: add it to http.cors_allowed_origins (exact scheme://host:port) if pages there should"
        )))
    }
}

/// A web page's call (one with an `Origin`) must bring its own credential, a token or
/// a client certificate: the anonymous principal is for tools on the loopback host,
/// and a page that reaches that host by DNS rebinding passes the same-origin check.
pub fn credential_required<B>(req: &Request<B>) -> Option<Status> {
    let from_page = req.headers().contains_key(header::ORIGIN);
    let token = req.headers().contains_key(header::AUTHORIZATION);
    let certificate = req
        .extensions()
        .get::<crate::tls::PeerInfo>()
        .is_some_and(|peer| peer.certs.is_some());
    (from_page && !token && !certificate).then(|| {
        Status::unauthenticated(
            "a call from a web page needs a token in the Authorization header (Bearer TOKEN): anonymous access is not given to pages",
        )
    })
}

/// What the answer exposes to the page, by protocol.
#[derive(Debug, Clone, Copy)]
pub enum Protocol {
    GrpcWeb,
    Connect,
}

/// Lets an allowed origin's page read the answer.
pub fn allow(headers: &mut HeaderMap, origin: Option<&AllowedOrigin>, protocol: Protocol) {
    let Some(AllowedOrigin(origin)) = origin else {
        return;
    };
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
    headers.append(header::VARY, HeaderValue::from_static("origin"));
    let exposed = match protocol {
        Protocol::GrpcWeb => "grpc-status, grpc-message, grpc-status-details-bin",
        Protocol::Connect => "content-type",
    };
    headers.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static(exposed),
    );
}

/// Answers an `OPTIONS` preflight: 204 with the CORS headers for an allowed origin,
/// 204 without them otherwise (the browser then refuses the call itself).
pub fn preflight<B>(req: &Request<B>, origin: Option<&AllowedOrigin>) -> Response<Body> {
    let mut answer = Response::new(Body::empty());
    *answer.status_mut() = StatusCode::NO_CONTENT;
    let asks_post = req
        .headers()
        .get(header::ACCESS_CONTROL_REQUEST_METHOD)
        .is_some_and(|m| m == "POST");
    if let (Some(AllowedOrigin(origin)), true) = (origin, asks_post) {
        let headers = answer.headers_mut();
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
        headers.insert(
            header::ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static("POST"),
        );
        headers.insert(
            header::ACCESS_CONTROL_ALLOW_HEADERS,
            HeaderValue::from_static(ALLOWED_HEADERS),
        );
        headers.insert(
            header::ACCESS_CONTROL_MAX_AGE,
            HeaderValue::from_static(PREFLIGHT_MAX_AGE),
        );
        headers.insert(header::VARY, HeaderValue::from_static("origin"));
    }
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(origin: Option<&str>, host: &str) -> Request<()> {
        let mut req = Request::builder().uri("/toolgate.v1.PolicyService/Evaluate");
        if let Some(origin) = origin {
            req = req.header(header::ORIGIN, origin);
        }
        req.header(header::HOST, host).body(()).unwrap()
    }

    #[test]
    fn origins_are_allowed_exactly_and_the_servers_own_needs_nothing() {
        let allowed = vec!["https://console.example.com".to_owned()];
        let of = |origin, host| AllowedOrigin::of(&request(origin, host), &allowed);
        assert!(of(None, "api:7070").unwrap().is_none());
        assert!(of(Some("http://api:7070"), "api:7070").unwrap().is_none());
        assert!(
            of(Some("https://console.example.com"), "api:7070")
                .unwrap()
                .is_some()
        );
        for refused in [
            "https://console.example.com.evil.test",
            "https://evil.test",
            "null",
            "http://console.example.com",
            "http://api:7071",
        ] {
            let e = of(Some(refused), "api:7070").unwrap_err();
            assert_eq!(e.code(), tonic::Code::PermissionDenied, "{refused}");
            assert!(e.message().contains("http.cors_allowed_origins"), "{e:?}");
        }
    }
}
