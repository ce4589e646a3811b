//! Server limits around every call: a deadline, a bound on calls being answered at
//! once (one tower layer, [`LimitsLayer`]), and a bound on the watch streams one
//! principal holds open ([`StreamSlots`]). A call past a limit is answered at once
//! with a status naming the setting, never queued.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tonic::Status;
use tonic::codegen::{BoxFuture, http};

/// A limit a call ran into; [`Status`] from it is in `error.rs`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LimitHit {
    #[error(
        "the call was not answered within limits.request_timeout_secs ({secs} s): retry, or raise the limit if such calls are expected"
    )]
    Deadline { secs: u64 },
    #[error(
        "the server is answering limits.max_concurrent_requests ({max}) calls already: retry with backoff, or raise the limit or add replicas"
    )]
    Concurrency { max: usize },
    #[error(
        "principal {principal:?} holds limits.max_streams_per_principal ({max}) watch streams already: close one (a client needs one per team and user), or raise the limit"
    )]
    Streams { principal: String, max: usize },
}

impl LimitHit {
    /// The label of `toolgate_limit_refusals_total`.
    pub fn label(&self) -> &'static str {
        match self {
            LimitHit::Deadline { .. } => "deadline",
            LimitHit::Concurrency { .. } => "concurrency",
            LimitHit::Streams { .. } => "streams",
        }
    }
}

/// One call's place among those being answered, given back when dropped: a counter
/// rather than a semaphore, since a call over the bound is refused, never queued
/// (and a semaphore's release takes a lock on every call).
struct Answering(Arc<AtomicUsize>);

impl Answering {
    fn take(answering: &Arc<AtomicUsize>, max: usize) -> Option<Self> {
        let before = answering.fetch_add(1, Ordering::AcqRel);
        if before >= max {
            answering.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        Some(Self(answering.clone()))
    }
}

impl Drop for Answering {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Health checks and reflection are never refused: a busy server must not look dead
/// to its orchestrator.
fn exempt(path: &str) -> bool {
    path.starts_with("/grpc.health.") || path.starts_with("/grpc.reflection.")
}

/// The deadline and the bound on calls being answered, for every service.
#[derive(Debug, Clone)]
pub struct LimitsLayer {
    timeout: Duration,
    answering: Arc<AtomicUsize>,
    max: usize,
}

impl LimitsLayer {
    pub fn new(limits: &crate::config::LimitsConfig) -> Self {
        Self {
            timeout: Duration::from_secs(limits.request_timeout_secs),
            answering: Arc::default(),
            max: limits.max_concurrent_requests,
        }
    }
}

impl<S> tower::Layer<S> for LimitsLayer {
    type Service = Limited<S>;

    fn layer(&self, inner: S) -> Limited<S> {
        Limited {
            inner,
            limits: self.clone(),
        }
    }
}

/// A service under [`LimitsLayer`].
#[derive(Debug, Clone)]
pub struct Limited<S> {
    inner: S,
    limits: LimitsLayer,
}

fn refuse(hit: LimitHit) -> http::Response<tonic::body::Body> {
    crate::metrics::limit_refused(hit.label());
    Status::from(hit).into_http()
}

impl<S, B> tower::Service<http::Request<B>> for Limited<S>
where
    S: tower::Service<
            http::Request<B>,
            Response = http::Response<tonic::body::Body>,
            Error = Infallible,
        >,
    S::Future: Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Infallible>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        if exempt(req.uri().path()) {
            return Box::pin(self.inner.call(req));
        }
        let Some(place) = Answering::take(&self.limits.answering, self.limits.max) else {
            let max = self.limits.max;
            return Box::pin(async move { Ok(refuse(LimitHit::Concurrency { max })) });
        };
        let call = self.inner.call(req);
        let timeout = self.limits.timeout;
        Box::pin(async move {
            let _place = place;
            match tokio::time::timeout(timeout, call).await {
                Ok(answer) => answer,
                Err(_) => Ok(refuse(LimitHit::Deadline {
                    secs: timeout.as_secs(),
                })),
            }
        })
    }
}

/// How many watch streams each principal holds open.
#[derive(Debug)]
pub struct StreamSlots {
    max: usize,
    open: Mutex<HashMap<String, usize>>,
}

impl StreamSlots {
    pub fn new(max: usize) -> Arc<Self> {
        Arc::new(Self {
            max,
            open: Mutex::new(HashMap::new()),
        })
    }

    /// A slot for one more stream of `principal`, given back when dropped.
    pub fn take(self: &Arc<Self>, principal: &str) -> Result<StreamSlot, LimitHit> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let count = open.entry(principal.to_owned()).or_insert(0);
        if *count >= self.max {
            let hit = LimitHit::Streams {
                principal: principal.to_owned(),
                max: self.max,
            };
            crate::metrics::limit_refused(hit.label());
            return Err(hit);
        }
        *count += 1;
        Ok(StreamSlot {
            slots: self.clone(),
            principal: principal.to_owned(),
        })
    }

    /// Streams `principal` holds open.
    pub fn open(&self, principal: &str) -> usize {
        let open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        open.get(principal).copied().unwrap_or(0)
    }
}

/// One open stream's place in [`StreamSlots`].
#[derive(Debug)]
pub struct StreamSlot {
    slots: Arc<StreamSlots>,
    principal: String,
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut open = self.slots.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = open.get_mut(&self.principal) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.principal);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower::{Layer, Service};

    fn limits(timeout_secs: u64, max: usize) -> LimitsLayer {
        LimitsLayer::new(&crate::config::LimitsConfig {
            request_timeout_secs: timeout_secs,
            max_concurrent_requests: max,
            ..Default::default()
        })
    }

    /// A service that answers each call when its sender is fired.
    #[derive(Clone)]
    struct Held(Arc<Mutex<Vec<tokio::sync::oneshot::Sender<()>>>>);

    impl tower::Service<http::Request<()>> for Held {
        type Response = http::Response<tonic::body::Body>;
        type Error = Infallible;
        type Future = BoxFuture<Self::Response, Infallible>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, _: http::Request<()>) -> Self::Future {
            let (tx, rx) = tokio::sync::oneshot::channel();
            self.0.lock().unwrap().push(tx);
            Box::pin(async move {
                let _ = rx.await;
                Ok(http::Response::new(tonic::body::Body::empty()))
            })
        }
    }

    fn request(path: &str) -> http::Request<()> {
        http::Request::builder().uri(path).body(()).unwrap()
    }

    fn status(answer: &http::Response<tonic::body::Body>) -> Option<(tonic::Code, String)> {
        let status = Status::from_header_map(answer.headers())?;
        Some((status.code(), status.message().to_owned()))
    }

    #[tokio::test]
    async fn calls_past_the_bound_are_refused_at_once_and_health_never() {
        let held = Held(Arc::default());
        let mut svc = limits(30, 2).layer(held.clone());
        let first = tokio::spawn(svc.call(request("/toolgate.v1.PolicyService/Evaluate")));
        let second = tokio::spawn(svc.call(request("/toolgate.v1.PolicyService/Evaluate")));
        let refused = svc
            .call(request("/toolgate.v1.PolicyService/Evaluate"))
            .await
            .unwrap();
        let (code, message) = status(&refused).expect("a status");
        assert_eq!(code, tonic::Code::ResourceExhausted);
        assert!(
            message.contains("limits.max_concurrent_requests (2)"),
            "{message}"
        );
        // health is answered whatever the load
        let health = tokio::spawn(svc.call(request("/grpc.health.v1.Health/Check")));
        // answering one call frees its place
        let senders: Vec<_> = std::mem::take(&mut *held.0.lock().unwrap());
        assert_eq!(
            senders.len(),
            3,
            "two calls and the health check reached the service"
        );
        for tx in senders {
            tx.send(()).unwrap();
        }
        for call in [first, second, health] {
            let answer = call.await.unwrap().unwrap();
            assert!(status(&answer).is_none());
        }
        let again = tokio::spawn(svc.call(request("/toolgate.v1.PolicyService/Evaluate")));
        let tx = held
            .0
            .lock()
            .unwrap()
            .pop()
            .expect("the call reached the service");
        tx.send(()).unwrap();
        assert!(status(&again.await.unwrap().unwrap()).is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_past_its_deadline_ends_with_deadline_exceeded() {
        let held = Held(Arc::default());
        let mut svc = limits(3, 10).layer(held.clone());
        // never answered: the paused clock jumps to the deadline
        let answer = svc
            .call(request("/toolgate.v1.PolicyService/Evaluate"))
            .await
            .unwrap();
        let (code, message) = status(&answer).expect("a status");
        assert_eq!(code, tonic::Code::DeadlineExceeded);
        assert!(
            message.contains("limits.request_timeout_secs (3 s)"),
            "{message}"
        );
        // and its place is free again
        assert_eq!(svc.limits.answering.load(Ordering::Acquire), 0);
    }

    #[test]
    fn stream_slots_bound_each_principal_and_come_back_when_dropped() {
        let slots = StreamSlots::new(2);
        let a = slots.take("alice").unwrap();
        let _b = slots.take("alice").unwrap();
        let hit = slots.take("alice").unwrap_err();
        assert!(
            hit.to_string()
                .contains("limits.max_streams_per_principal (2)"),
            "{hit}"
        );
        // another principal has slots of its own
        let _c = slots.take("bob").unwrap();
        drop(a);
        assert_eq!(slots.open("alice"), 1);
        let _d = slots.take("alice").unwrap();
    }
}
