//! Every call observed on its way through: counted and timed by method and status
//! code for the metrics ([`RpcMetricsLayer`]), and its span made a child of the
//! caller's trace when the call carries a W3C `traceparent` ([`rpc_span`]).

use std::convert::Infallible;
use std::task::{Context, Poll};
use std::time::Instant;
use tonic::codegen::{BoxFuture, http};

/// Counts and times every call (health and reflection included: a probe storm shows).
/// The code is the `grpc-status` of the answer's headers: an error answered at once
/// carries it there; a call answered normally carries OK in its trailers and counts
/// as OK, a stream as OK once started.
#[derive(Debug, Clone, Copy, Default)]
pub struct RpcMetricsLayer;

impl<S> tower::Layer<S> for RpcMetricsLayer {
    type Service = RpcMetrics<S>;

    fn layer(&self, inner: S) -> RpcMetrics<S> {
        RpcMetrics { inner }
    }
}

#[derive(Debug, Clone)]
pub struct RpcMetrics<S> {
    inner: S,
}

impl<S, B, R> tower::Service<http::Request<B>> for RpcMetrics<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<R>, Error = Infallible>,
    S::Future: Send + 'static,
{
    type Response = http::Response<R>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Infallible>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        // looked up before the call (the path is borrowed from the request): the
        // handles are static, so nothing is copied per call
        let observed = crate::metrics::rpc(req.uri().path()).map(|h| (h, Instant::now()));
        let call = self.inner.call(req);
        Box::pin(async move {
            let answer = call.await?;
            if let Some((handles, started)) = observed {
                let code = answer
                    .headers()
                    .get("grpc-status")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.parse::<i32>().ok())
                    .map_or(tonic::Code::Ok, tonic::Code::from_i32);
                handles.record(code, started.elapsed());
            }
            Ok(answer)
        })
    }
}

/// `traceparent` and `tracestate` of a request, for the propagator.
struct Headers<'a>(&'a http::HeaderMap);

impl opentelemetry::propagation::Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(|k| k.as_str()).collect()
    }
}

/// The span of one call: a child of the caller's trace when spans are exported and
/// the call carries a valid `traceparent`; otherwise a root (and without an endpoint
/// the headers are not even read).
pub fn rpc_span(req: &http::Request<()>, exporting: bool) -> tracing::Span {
    let span = tracing::info_span!("rpc", path = %req.uri().path());
    if exporting && req.headers().contains_key("traceparent") {
        use opentelemetry::propagation::TextMapPropagator as _;
        use tracing_opentelemetry::OpenTelemetrySpanExt as _;
        let parent = opentelemetry_sdk::propagation::TraceContextPropagator::new()
            .extract(&Headers(req.headers()));
        let _ = span.set_parent(parent);
    }
    span
}
