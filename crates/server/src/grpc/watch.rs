//! `WatchPolicy` served with a codec of its own, so a change fanned out to many
//! subscribers is encoded once and the same bytes go to every stream.
//!
//! The generated `PolicyServiceServer` encodes every message of every stream; a
//! change reaching 10,000 subscribers would be converted and encoded 10,000 times.
//! [`PolicyRouter`] takes the `WatchPolicy` path out of the generated server and
//! serves it with [`WatchCodec`], whose items are either a message built for one
//! subscriber (its snapshot, a heartbeat) or the shared bytes of a change. The wire
//! format is the same `WatchPolicyResponse`: clients see no difference.

use super::convert::watch_event_to_pb;
use super::{Api, PolicyServiceServer, count_resync, principal};
use crate::proto::v1 as pb;
use crate::service::WatchEvent;
use bytes::{BufMut, Bytes};
use futures::{Stream, StreamExt};
use prost::Message;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use tonic::codec::{Codec, EncodeBuf, Encoder};
use tonic::codegen::{Body, BoxFuture, StdError, http};
use tonic::server::{Grpc, NamedService, ServerStreamingService};
use tonic::{Request, Response, Status};

const WATCH_POLICY_PATH: &str = "/toolgate.v1.PolicyService/WatchPolicy";

/// One item of a `WatchPolicy` stream on the wire.
#[derive(Debug, Clone)]
pub enum WireEvent {
    /// Built for this subscriber: its snapshot, a heartbeat.
    Message(Box<pb::WatchPolicyResponse>),
    /// A `WatchPolicyResponse` already encoded: a change, the same for every subscriber it
    /// reaches.
    Encoded(Bytes),
}

/// A `WatchPolicyResponse` for one subscriber. A change is encoded by the first subscriber
/// that sends it, into the slot the hub keeps beside it, and shared from there: its
/// event depends on the change alone (the team's, or this very user's, settings).
pub fn wire_event(team_id: &str, user_id: &str, event: WatchEvent) -> WireEvent {
    match event {
        WatchEvent::Change(published) => {
            let bytes = published.wire.get_or_init(|| {
                let event =
                    watch_event_to_pb(team_id, user_id, WatchEvent::Change(published.clone()));
                Bytes::from(event.encode_to_vec())
            });
            WireEvent::Encoded(bytes.clone())
        }
        other => WireEvent::Message(Box::new(watch_event_to_pb(team_id, user_id, other))),
    }
}

/// Encodes [`WireEvent`]s, decodes `WatchPolicyRequest`s.
#[derive(Debug, Clone, Copy, Default)]
pub struct WatchCodec;

impl Codec for WatchCodec {
    type Encode = WireEvent;
    type Decode = pb::WatchPolicyRequest;
    type Encoder = WireEncoder;
    type Decoder = super::codec::RequestDecoder<pb::WatchPolicyRequest>;

    fn encoder(&mut self) -> Self::Encoder {
        WireEncoder
    }

    fn decoder(&mut self) -> Self::Decoder {
        super::codec::RequestDecoder::default()
    }
}

#[derive(Debug, Clone, Copy, Default)]
pub struct WireEncoder;

impl Encoder for WireEncoder {
    type Item = WireEvent;
    type Error = Status;

    fn encode(&mut self, item: WireEvent, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        match item {
            WireEvent::Message(message) => message
                .encode(dst)
                .map_err(|e| Status::internal(format!("encoding a policy event: {e}"))),
            WireEvent::Encoded(bytes) => {
                dst.put_slice(&bytes);
                Ok(())
            }
        }
    }
}

/// The `WatchPolicy` method over the domain service.
struct WatchPolicy(Api);

type WireStream = Pin<Box<dyn Stream<Item = Result<WireEvent, Status>> + Send + 'static>>;

impl ServerStreamingService<pb::WatchPolicyRequest> for WatchPolicy {
    type Response = WireEvent;
    type ResponseStream = WireStream;
    type Future = BoxFuture<Response<WireStream>, Status>;

    fn call(&mut self, req: Request<pb::WatchPolicyRequest>) -> Self::Future {
        let api = self.0.clone();
        Box::pin(async move {
            let p = principal(&req)?;
            let slot = api.open_stream(&p)?;
            let r = req.into_inner();
            let events = api
                .service
                .watch(&p, &r.team_id, &r.user_id, r.after_revision)
                .await?;
            let (team, user) = (r.team_id, r.user_id);
            let stream = events.map(move |e| {
                let _held = &slot;
                e.map(|e| wire_event(&team, &user, count_resync(e)))
                    .map_err(Status::from)
            });
            Ok(Response::new(Box::pin(stream) as WireStream))
        })
    }
}

/// `toolgate.v1.PolicyService`: the generated server, but `WatchPolicy` served by
/// `WatchPolicy` with `WatchCodec`.
#[derive(Debug, Clone)]
pub struct PolicyRouter {
    generated: PolicyServiceServer<Api>,
    api: Api,
    max_decoding_message_size: usize,
}

impl PolicyRouter {
    pub fn new(api: Api, max_decoding_message_size: usize) -> Self {
        Self {
            generated: PolicyServiceServer::new(api.clone())
                .max_decoding_message_size(max_decoding_message_size),
            api,
            max_decoding_message_size,
        }
    }
}

impl NamedService for PolicyRouter {
    const NAME: &'static str = <PolicyServiceServer<Api> as NamedService>::NAME;
}

impl<B> tonic::codegen::Service<http::Request<B>> for PolicyRouter
where
    B: Body + Send + 'static,
    B::Error: Into<StdError> + Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        if req.uri().path() != WATCH_POLICY_PATH {
            return self.generated.call(req);
        }
        let method = WatchPolicy(self.api.clone());
        let limit = self.max_decoding_message_size;
        Box::pin(async move {
            let mut grpc = Grpc::new(WatchCodec).apply_max_message_size_config(Some(limit), None);
            Ok(grpc.server_streaming(method, req).await)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::AdminControls;
    use crate::service::{Change, ChangeDoc, Published};
    use std::sync::Arc;

    #[test]
    fn a_change_is_encoded_once_and_decodes_as_its_message() {
        let published = Arc::new(Published::new(Change {
            team_id: "acme".into(),
            revision: 7,
            doc: ChangeDoc::Admin {
                controls: AdminControls {
                    enabled: true,
                    mcp_tool_allowlist: vec!["jira:*".into(), "github:get_*".into()],
                    ..AdminControls::default()
                },
            },
            at_ms: 1_700_000_000_000,
            actor: "acme-admin".into(),
        }));
        let alice = wire_event("acme", "alice", WatchEvent::Change(published.clone()));
        let bob = wire_event("acme", "bob", WatchEvent::Change(published.clone()));
        let (WireEvent::Encoded(alice), WireEvent::Encoded(bob)) = (alice, bob) else {
            panic!("a change goes out encoded");
        };
        assert_eq!(
            alice.as_ptr(),
            bob.as_ptr(),
            "bob's stream shares alice's bytes"
        );
        let want = watch_event_to_pb("acme", "bob", WatchEvent::Change(published));
        assert_eq!(pb::WatchPolicyResponse::decode(alice).unwrap(), want);
    }
}
