//! The browser console: its files, built into the binary from `console/dist/`, served
//! on `console.listen` by the same server as the API they call, so the page and the
//! API share one origin and CORS stays off.
//!
//! [`ConsoleLayer`] is the outermost layer of the gRPC server. On the console's
//! listener it answers `GET`/`HEAD` of the console's files itself; every other request
//! (the page's API calls) goes on to the HTTP layer and the gRPC stack below, exactly
//! as on the gRPC port. On any other listener it does nothing: the gRPC port serves no
//! page.
//!
//! Architecture invariant: the console holds no credential and calls no service
//! directly; the page calls the API as any HTTP client does, with the user's token.

mod assets;

use bytes::Bytes;
use futures::future::Either;
use http::header::{self, HeaderName, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use std::convert::Infallible;
use std::future::Ready;
use std::net::SocketAddr;
use std::task::{Context, Poll};
use tonic::body::Body;

pub use assets::{ASSETS, Asset};

/// The content security policy of the console's files: scripts, styles and calls from
/// this origin only, nothing inline, no `eval`, no framing, no forms posted elsewhere.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The headers every answer of the console's own carries (the API's answers carry the
/// HTTP layer's, stricter still: `default-src 'none'`).
pub const SECURITY_HEADERS: [(&str, &str); 6] = [
    ("content-security-policy", CONTENT_SECURITY_POLICY),
    ("x-frame-options", "DENY"),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
    ("cross-origin-opener-policy", "same-origin"),
    ("cross-origin-resource-policy", "same-origin"),
];

/// Serves the console's files on the listener bound to `addr`; `None`, no console.
#[derive(Debug, Clone, Copy)]
pub struct ConsoleLayer {
    addr: Option<SocketAddr>,
}

impl ConsoleLayer {
    pub fn new(addr: Option<SocketAddr>) -> Self {
        Self { addr }
    }
}

impl<S> tower::Layer<S> for ConsoleLayer {
    type Service = Console<S>;

    fn layer(&self, inner: S) -> Console<S> {
        Console {
            inner,
            addr: self.addr,
        }
    }
}

/// The stack under [`ConsoleLayer`].
#[derive(Debug, Clone)]
pub struct Console<S> {
    inner: S,
    addr: Option<SocketAddr>,
}

impl<S> Console<S> {
    /// Whether `req` came in on the console's listener: the connection's local address
    /// is the one the console is bound to (any address of the host when it is bound to
    /// an unspecified one, `0.0.0.0:PORT`).
    fn on_console<B>(&self, req: &Request<B>) -> bool {
        let Some(console) = self.addr else {
            return false;
        };
        let local = req
            .extensions()
            .get::<crate::tls::PeerInfo>()
            .and_then(|peer| peer.tcp.local_addr());
        local.is_some_and(|local| {
            local.port() == console.port()
                && (console.ip().is_unspecified() || local.ip() == console.ip())
        })
    }
}

impl<S> tower::Service<Request<Body>> for Console<S>
where
    S: tower::Service<Request<Body>, Response = Response<Body>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    type Response = Response<Body>;
    type Error = Infallible;
    /// The API's calls go on as the inner future itself: no allocation per call for
    /// the layer (issue 23: every `Evaluate` passes through it).
    type Future = Either<S::Future, Ready<Result<Response<Body>, Infallible>>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        if self.on_console(&req) && (req.method() == Method::GET || req.method() == Method::HEAD) {
            let answer = page(req.uri().path(), req.method() == Method::HEAD);
            return Either::Right(std::future::ready(Ok(answer)));
        }
        Either::Left(self.inner.call(req))
    }
}

/// The answer to `GET path`: a file of the console, or 404. The API is called with
/// `POST` only, so no `GET` is the API's.
pub fn page(path: &str, head: bool) -> Response<Body> {
    let (status, content_type, body): (_, _, &'static [u8]) =
        match ASSETS.iter().find(|a| a.path == path) {
            Some(asset) => (StatusCode::OK, asset.content_type, asset.body),
            None => (
                StatusCode::NOT_FOUND,
                "text/plain; charset=utf-8",
                b"not found: the console is at /\n",
            ),
        };
    let body = if head {
        Body::empty()
    } else {
        Body::new(http_body_util::Full::new(Bytes::from_static(body)))
    };
    let mut answer = Response::new(body);
    *answer.status_mut() = status;
    let headers = answer.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    // the files change with the binary: always revalidate
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    for (name, value) in SECURITY_HEADERS {
        headers.insert(
            HeaderName::from_static(name),
            HeaderValue::from_static(value),
        );
    }
    answer
}
