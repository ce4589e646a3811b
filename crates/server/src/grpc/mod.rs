//! The gRPC layer: tonic services over the domain [`Service`]. The only code that
//! sees protobuf and tonic types.

mod admin;
mod approvals;
mod client_telemetry;
pub mod convert;
mod decisions;
mod error;
pub use error::COMMIT_INDETERMINATE;
pub mod limits;
pub mod observe;
mod pins;
mod policy;
mod principal;
mod server_info;
mod tokens;
mod user_settings;
mod watch;

pub use toolgate_proto::codec;

use crate::auth::{Authenticator, Principal};
use crate::proto::v1 as pb;
use crate::service::{Service, ServiceError};
use server_info::{as_object, sign_in_of};
use std::sync::Arc;
use tonic::{Request, Status};

pub use approvals::ApprovalServiceServer;
pub use client_telemetry::{LogsServiceServer, MAX_RECORDS_PER_REQUEST, TOOL_DECISION_EVENT};
pub use decisions::DecisionLogServiceServer;
pub use pb::admin_service_server::AdminServiceServer;
pub use pb::policy_service_server::PolicyServiceServer;
pub use pb::server_info_service_server::ServerInfoServiceServer;
pub use pb::user_settings_service_server::UserSettingsServiceServer;
pub use pins::PinServiceServer;
pub use principal::PrincipalServiceServer;
pub use tokens::TokenServiceServer;
pub use watch::PolicyRouter;

/// Authenticates every request and leaves the [`Principal`] in its extensions.
pub fn auth_interceptor(
    auth: Arc<Authenticator>,
) -> impl FnMut(Request<()>) -> Result<Request<()>, Status> + Clone {
    move |mut req: Request<()>| {
        let principal = authenticate(&auth, &req)?;
        req.extensions_mut().insert(principal);
        Ok(req)
    }
}

/// For `ServerInfoService`, whose `GetSignIn` answers callers without a token: a
/// refused credential is kept in the extensions instead of ending the call, so every
/// other method still refuses it (`principal` returns it).
pub fn sign_in_interceptor(
    auth: Arc<Authenticator>,
) -> impl FnMut(Request<()>) -> Result<Request<()>, Status> + Clone {
    move |mut req: Request<()>| {
        match authenticate(&auth, &req) {
            Ok(principal) => {
                req.extensions_mut().insert(principal);
            }
            Err(refused) => {
                req.extensions_mut().insert(Refused(refused));
            }
        }
        Ok(req)
    }
}

/// Why a call's credential was refused, for the methods that need one.
#[derive(Clone)]
struct Refused(Status);

/// The principal of a bearer token, else of a verified client certificate.
fn authenticate<T>(auth: &Authenticator, req: &Request<T>) -> Result<Arc<Principal>, Status> {
    let header = match req.metadata().get("authorization") {
        Some(v) => Some(
            v.to_str()
                .map_err(|_| Status::unauthenticated("authorization is not ASCII"))?,
        ),
        None => None,
    };
    // a bearer token speaks for itself; without one, a verified client certificate
    let certificate = match header {
        Some(_) => None,
        None => req
            .extensions()
            .get::<crate::tls::PeerInfo>()
            .and_then(|peer| peer.certs.clone()),
    };
    let principal = match certificate.as_deref().and_then(|chain| chain.first()) {
        Some(leaf) => auth.authenticate_certificate(leaf),
        None => auth.authenticate(header),
    }
    .map_err(ServiceError::from)?;
    Ok(principal)
}

fn principal<T>(req: &Request<T>) -> Result<Arc<Principal>, Status> {
    if let Some(Refused(status)) = req.extensions().get::<Refused>() {
        return Err(status.clone());
    }
    req.extensions()
        .get::<Arc<Principal>>()
        .cloned()
        .ok_or_else(|| {
            ServiceError::Unauthenticated("no principal: the auth interceptor did not run").into()
        })
}

/// All four toolgate services share one implementation over the domain service.
#[derive(Debug, Clone)]
pub struct Api {
    service: Arc<Service>,
    config_views: Arc<ConfigViews>,
    streams: Arc<limits::StreamSlots>,
    /// The policy file's status, when the server runs with one.
    policy_file: Option<crate::managed::StatusCell>,
}

/// `GetServerConfig`'s answers, made once: the configuration never changes at run time.
#[derive(Debug)]
struct ConfigViews {
    /// For operators: redacted, with the principals.
    operator: serde_json::Map<String, serde_json::Value>,
    /// For everyone else: no principals, no store or collector address.
    team: serde_json::Map<String, serde_json::Value>,
    /// `GetSignIn`'s answer, for anyone.
    sign_in: pb::GetSignInResponse,
}

impl Api {
    pub fn new(service: Arc<Service>, config: &crate::config::Config) -> Self {
        Self {
            service,
            config_views: Arc::new(ConfigViews {
                operator: as_object(config.public_json()),
                team: as_object(config.team_json()),
                sign_in: sign_in_of(config),
            }),
            streams: limits::StreamSlots::new(config.limits.max_streams_per_principal),
            policy_file: None,
        }
    }

    /// Reports the policy file's status in `GetServerConfig`.
    pub fn with_policy_file(mut self, status: Option<crate::managed::StatusCell>) -> Self {
        self.policy_file = status;
        self
    }

    /// A place for one more watch stream of `p`, counted as a watcher while held.
    fn open_stream(&self, p: &Principal) -> Result<WatchSlot, Status> {
        let slot = self.streams.take(&p.name)?;
        crate::metrics::watchers(1.0);
        Ok(WatchSlot(slot))
    }
}

/// An open watch stream: its principal's slot and its place in the watcher gauge,
/// both given back when the stream ends.
#[derive(Debug)]
struct WatchSlot(#[allow(dead_code)] limits::StreamSlot);

impl Drop for WatchSlot {
    fn drop(&mut self) {
        crate::metrics::watchers(-1.0);
    }
}

/// A resync snapshot, counted on its way out.
fn count_resync(e: crate::service::WatchEvent) -> crate::service::WatchEvent {
    if let crate::service::WatchEvent::Snapshot { resync: true, .. } = &e {
        crate::metrics::resync();
    }
    e
}

/// Every gRPC path the server serves: the methods of every service in the
/// descriptor sets it registers for reflection.
pub fn served_paths() -> Vec<String> {
    use prost::Message as _;
    let sets = [
        crate::proto::FILE_DESCRIPTOR_SET,
        tonic_health::pb::FILE_DESCRIPTOR_SET,
        tonic_reflection::pb::v1::FILE_DESCRIPTOR_SET,
        tonic_reflection::pb::v1alpha::FILE_DESCRIPTOR_SET,
    ];
    let mut paths = Vec::new();
    for bytes in sets {
        let Ok(set) = prost_types::FileDescriptorSet::decode(bytes) else {
            continue;
        };
        for file in set.file {
            let package = file.package.unwrap_or_default();
            for service in file.service {
                let service_name = service.name.unwrap_or_default();
                for method in service.method {
                    let method = method.name.unwrap_or_default();
                    paths.push(if package.is_empty() {
                        format!("/{service_name}/{method}")
                    } else {
                        format!("/{package}.{service_name}/{method}")
                    });
                }
            }
        }
    }
    paths
}
