//! Every RPC over plain HTTP, on the gRPC port: gRPC-Web (`tonic-web`) for browsers
//! that speak protobuf, and the Connect protocol (JSON or protobuf bodies) for `curl`,
//! scripts and the console.
//!
//! [`HttpLayer`] is the outermost layer of the gRPC server. A request is routed by its
//! content type: gRPC goes on untouched; gRPC-Web is translated by `tonic-web`; a
//! Connect request is transcoded into a gRPC request (the JSON read through the
//! descriptor set the proto crate builds) and sent into the SAME tower stack, so
//! authentication, the limits, metrics and the error mapping are exactly gRPC's. A
//! service added to the proto files is reachable over HTTP with no change here.
//!
//! Architecture invariant: a Connect request reaches a service only as a gRPC
//! request through the inner stack, never by calling a service directly.

mod connect;
mod cors;
mod json;

use crate::config::HttpConfig;
use bytes::Bytes;
use futures::future::Either;
use http::header::{self, HeaderValue};
use http::{Method, Request, Response};
use prost_reflect::DescriptorPool;
use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tonic::body::Body;
use tonic::codegen::BoxFuture;

/// The errors of building the HTTP layer.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("the API's descriptor set does not decode: {0}")]
    Descriptors(#[from] prost_reflect::DescriptorError),
}

/// Served on every HTTP (not gRPC) answer: the API answers JSON and protobuf only, so
/// nothing may load, frame or cache it.
const CONTENT_SECURITY_POLICY: &str =
    "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/// What the layer shares between connections.
#[derive(Debug)]
struct Shared {
    /// Every service the proto crate compiles, and health.
    pool: DescriptorPool,
    /// The largest request body, the gRPC limit (`limits.max_request_bytes`).
    max_body: usize,
    /// How long reading a request body may take (`limits.request_timeout_secs`).
    read_timeout: Duration,
    /// Exact origins a browser page may call from (`http.cors_allowed_origins`).
    origins: Vec<String>,
    /// Off (`http.enabled: false`), every request goes to the gRPC stack as it came.
    enabled: bool,
    /// Bodies being read at once, bounded as gRPC's calls are
    /// (`limits.max_concurrent_requests`): a body is read before the call takes its
    /// place in the stack, and unbounded, slow bodies would hold memory unbounded.
    reading: Arc<tokio::sync::Semaphore>,
    max_reading: usize,
}

/// Routes each request by content type; see the module documentation.
#[derive(Debug, Clone)]
pub struct HttpLayer {
    shared: Arc<Shared>,
}

impl HttpLayer {
    pub fn new(http: &HttpConfig, limits: &crate::config::LimitsConfig) -> Result<Self, HttpError> {
        let mut pool = DescriptorPool::decode(crate::proto::FILE_DESCRIPTOR_SET)?;
        pool.decode_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)?;
        Ok(Self {
            shared: Arc::new(Shared {
                pool,
                max_body: limits.max_request_bytes,
                read_timeout: Duration::from_secs(limits.request_timeout_secs),
                origins: http.cors_allowed_origins.clone(),
                enabled: http.enabled,
                reading: Arc::new(tokio::sync::Semaphore::new(limits.max_concurrent_requests)),
                max_reading: limits.max_concurrent_requests,
            }),
        })
    }

    /// The full names of the services reachable over HTTP.
    pub fn services(&self) -> Vec<String> {
        self.shared
            .pool
            .services()
            .map(|s| s.full_name().to_owned())
            .collect()
    }

    /// A request of the method at `path` read from JSON as a Connect call reads it:
    /// protobuf bytes, or the refusal (the fuzz target's entry).
    pub fn json_to_request(&self, path: &str, json: &[u8]) -> Result<Vec<u8>, tonic::Status> {
        let method = connect::lookup(&self.shared, path)
            .ok_or_else(|| tonic::Status::unimplemented(format!("no method {path}")))?;
        json::to_protobuf(&method.input(), json)
    }

    /// A request of the method at `path` as JSON, as an answer would be written.
    pub fn request_to_json(&self, path: &str, bytes: &[u8]) -> Result<Vec<u8>, tonic::Status> {
        let method = connect::lookup(&self.shared, path)
            .ok_or_else(|| tonic::Status::unimplemented(format!("no method {path}")))?;
        json::to_json(&method.input(), bytes)
    }

    /// Every method reachable over HTTP: its path and whether the server streams.
    pub fn methods(&self) -> Vec<(String, bool)> {
        self.shared
            .pool
            .services()
            .flat_map(|s| s.methods().collect::<Vec<_>>())
            .map(|m| {
                (
                    format!("/{}/{}", m.parent_service().full_name(), m.name()),
                    m.is_server_streaming(),
                )
            })
            .collect()
    }
}

impl<S: Clone> tower::Layer<S> for HttpLayer {
    type Service = Http<S>;

    fn layer(&self, inner: S) -> Http<S> {
        Http {
            web: tower::Layer::layer(&tonic_web::GrpcWebLayer::new(), inner.clone()),
            inner,
            shared: self.shared.clone(),
        }
    }
}

/// The gRPC stack under [`HttpLayer`].
#[derive(Debug, Clone)]
pub struct Http<S> {
    inner: S,
    web: tonic_web::GrpcWebService<S>,
    shared: Arc<Shared>,
}

/// How a request is served, from its method and content type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    Grpc,
    GrpcWeb,
    Preflight,
    Connect,
    /// OTLP/HTTP logs (`POST /v1/logs`): the agent clients' own telemetry.
    Otlp,
}

fn route(req: &Request<Body>) -> Route {
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if content_type.starts_with("application/grpc-web") {
        Route::GrpcWeb
    } else if content_type.starts_with("application/grpc") {
        Route::Grpc
    } else if req.method() == Method::OPTIONS {
        Route::Preflight
    } else if req.uri().path() == connect::OTLP_LOGS_PATH {
        Route::Otlp
    } else {
        Route::Connect
    }
}

impl<S> tower::Service<Request<Body>> for Http<S>
where
    S: tower::Service<Request<Body>, Response = Response<Body>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    type Response = Response<Body>;
    type Error = Infallible;
    /// A gRPC call goes on as the inner future itself: no allocation per call for
    /// the layer (issue 23: every `Evaluate` passes through it).
    type Future = Either<S::Future, BoxFuture<Response<Body>, Infallible>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        let route = if self.shared.enabled {
            route(&req)
        } else {
            Route::Grpc
        };
        // gRPC clients speak HTTP/2 and send no Origin: their calls go on untouched.
        // Anything else that says gRPC can only be a page's fetch: checked as one
        let grpc_client =
            req.version() == http::Version::HTTP_2 && !req.headers().contains_key(header::ORIGIN);
        if route == Route::Grpc && (grpc_client || !self.shared.enabled) {
            return Either::Left(self.inner.call(req));
        }
        Either::Right(self.call_http(route, req))
    }
}

impl<S> Http<S>
where
    S: tower::Service<Request<Body>, Response = Response<Body>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    /// A call from a page or over HTTP/1.1: CORS, then gRPC-Web or Connect.
    fn call_http(
        &mut self,
        route: Route,
        req: Request<Body>,
    ) -> BoxFuture<Response<Body>, Infallible> {
        let shared = self.shared.clone();
        let origin = match cors::AllowedOrigin::of(&req, &shared.origins) {
            Ok(origin) => origin,
            Err(refused) => {
                return Box::pin(async move { Ok(secure(connect::error_response(&refused))) });
            }
        };
        if route != Route::Preflight
            && let Some(refused) = cors::credential_required(&req)
        {
            return Box::pin(async move { Ok(secure(connect::error_response(&refused))) });
        }
        match route {
            Route::Grpc if req.version() == http::Version::HTTP_2 => Box::pin(self.inner.call(req)),
            // tonic would answer it with its trailers lost
            Route::Grpc => {
                let refused = tonic::Status::invalid_argument(
                    "gRPC needs HTTP/2: over HTTP/1.1 send gRPC-Web (application/grpc-web+proto) or JSON (application/json)",
                );
                Box::pin(async move { Ok(secure(connect::error_response(&refused))) })
            }
            Route::Preflight => {
                Box::pin(async move { Ok(secure(cors::preflight(&req, origin.as_ref()))) })
            }
            Route::GrpcWeb => {
                if let Some(refused) = connect::refuse_query(&req) {
                    return Box::pin(async move { Ok(secure(connect::error_response(&refused))) });
                }
                let call = tower::Service::call(&mut self.web, req);
                Box::pin(async move {
                    let mut answer = call.await?;
                    cors::allow(
                        answer.headers_mut(),
                        origin.as_ref(),
                        cors::Protocol::GrpcWeb,
                    );
                    Ok(secure(answer))
                })
            }
            // no page sends telemetry: no CORS headers are given
            Route::Otlp => {
                let waiting = self.inner.clone();
                let ready = std::mem::replace(&mut self.inner, waiting);
                Box::pin(async move { Ok(secure(connect::serve_otlp(&shared, ready, req).await)) })
            }
            Route::Connect => {
                // the clone that was polled ready goes with the call; this one waits
                let waiting = self.inner.clone();
                let ready = std::mem::replace(&mut self.inner, waiting);
                Box::pin(async move {
                    let mut answer = connect::serve(&shared, ready, req).await;
                    cors::allow(
                        answer.headers_mut(),
                        origin.as_ref(),
                        cors::Protocol::Connect,
                    );
                    Ok(secure(answer))
                })
            }
        }
    }
}

/// The headers every HTTP answer carries.
fn secure(mut answer: Response<Body>) -> Response<Body> {
    let headers = answer.headers_mut();
    for (name, value) in [
        (
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CONTENT_SECURITY_POLICY),
        ),
        (
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ),
        (
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        ),
        (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
        (header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY")),
    ] {
        headers.insert(name, value);
    }
    answer
}

/// A body of one chunk.
fn full(bytes: impl Into<Bytes>) -> Body {
    Body::new(http_body_util::Full::new(bytes.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every service of every proto file the proto crate compiles is in the descriptor
    /// set, so a service added later is reachable over HTTP with no change here.
    #[test]
    fn every_service_of_the_proto_files_is_reachable() {
        let layer = HttpLayer::new(&HttpConfig::default(), &Default::default()).unwrap();
        let served = layer.services();
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../proto");
        let mut files = vec![root];
        let mut found = 0;
        while let Some(path) = files.pop() {
            if path.is_dir() {
                files.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
                continue;
            }
            if path.extension().is_none_or(|e| e != "proto") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let package = text
                .lines()
                .find_map(|l| l.trim().strip_prefix("package "))
                .map(|p| p.trim_end_matches(';').trim().to_owned())
                .unwrap_or_default();
            for name in text
                .lines()
                .filter_map(|l| l.trim().strip_prefix("service "))
                .filter_map(|l| l.split_whitespace().next())
            {
                let full = format!("{package}.{name}");
                assert!(
                    served.contains(&full),
                    "{full} ({}) is not in the descriptor set: list the file in crates/proto/build.rs",
                    path.display()
                );
                found += 1;
            }
        }
        assert!(found >= 5, "{found} services found");
        assert!(served.iter().any(|s| s == "grpc.health.v1.Health"));
    }
}
