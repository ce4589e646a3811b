//! The gRPC layer: tonic services over the domain [`Service`]. The only code that
//! sees protobuf and tonic types.

mod approvals;
mod client_telemetry;
pub mod convert;
mod decisions;
mod error;
pub use error::COMMIT_INDETERMINATE;
pub mod limits;
pub mod observe;
mod pins;
mod principal;
mod tokens;
mod watch;

pub use toolgate_proto::codec;

use crate::auth::{Action, Authenticator, Principal, authorize};
use crate::proto::v1 as pb;
use crate::service::AuditFilter;
use crate::service::{Service, ServiceError, check_id};
use convert::*;
use futures::Stream;
use pb::admin_service_server::AdminService;
use pb::policy_service_server::PolicyService;
use pb::server_info_service_server::ServerInfoService;
use pb::user_settings_service_server::UserSettingsService;
use std::pin::Pin;
use std::sync::Arc;
use tonic::{Request, Response, Status};

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

/// The config's JSON as an object (it always is one).
fn as_object(v: serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
    match v {
        serde_json::Value::Object(map) => map,
        _ => serde_json::Map::new(),
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

/// Each decision, counted by outcome and reason.
fn count_decisions(decisions: &[crate::policy::Decision]) {
    for d in decisions {
        crate::metrics::decision(d.outcome, d.reason);
    }
}

#[tonic::async_trait]
impl AdminService for Api {
    async fn get_team_admin_settings(
        &self,
        req: Request<pb::GetTeamAdminSettingsRequest>,
    ) -> Result<Response<pb::GetTeamAdminSettingsResponse>, Status> {
        let p = principal(&req)?;
        let team = req.into_inner().team_id;
        let admin = self.service.get_admin(&p, &team).await?;
        Ok(Response::new(pb::GetTeamAdminSettingsResponse {
            settings: Some(admin_to_pb(&team, &admin.stored())),
            managed_by: self.service.managed_by(&team).unwrap_or_default(),
        }))
    }

    async fn update_team_admin_settings(
        &self,
        req: Request<pb::UpdateTeamAdminSettingsRequest>,
    ) -> Result<Response<pb::UpdateTeamAdminSettingsResponse>, Status> {
        let p = principal(&req)?;
        let r = req.into_inner();
        let controls = r
            .auto_run_controls
            .ok_or_else(|| ServiceError::InvalidArgument {
                field: "auto_run_controls".into(),
                message: "must be set: send the complete controls (they replace the current ones)"
                    .into(),
            })?;
        let controls = controls_from_pb(controls).map_err(ServiceError::from)?;
        let warnings = warnings_to_pb(&controls);
        let stored = self
            .service
            .update_admin(&p, &r.team_id, controls, r.expected_revision)
            .await?;
        Ok(Response::new(pb::UpdateTeamAdminSettingsResponse {
            settings: Some(admin_to_pb(&r.team_id, &stored)),
            warnings,
        }))
    }

    async fn validate_team_admin_settings(
        &self,
        req: Request<pb::ValidateTeamAdminSettingsRequest>,
    ) -> Result<Response<pb::ValidateTeamAdminSettingsResponse>, Status> {
        let p = principal(&req)?;
        let r = req.into_inner();
        let controls = r
            .auto_run_controls
            .ok_or_else(|| ServiceError::InvalidArgument {
                field: "auto_run_controls".into(),
                message: "must be set: send the complete controls to check".into(),
            })?;
        let controls = controls_from_pb(controls).map_err(ServiceError::from)?;
        let current = self
            .service
            .validate_admin(&p, &r.team_id, &controls, r.expected_revision)
            .await?;
        Ok(Response::new(pb::ValidateTeamAdminSettingsResponse {
            settings: Some(admin_to_pb(&r.team_id, &current)),
            warnings: warnings_to_pb(&controls),
        }))
    }

    async fn list_audit_events(
        &self,
        req: Request<pb::ListAuditEventsRequest>,
    ) -> Result<Response<pb::ListAuditEventsResponse>, Status> {
        let p = principal(&req)?;
        let r = req.into_inner();
        let non_empty = |s: String| (!s.is_empty()).then_some(s);
        let filter = AuditFilter {
            team_id: non_empty(r.team_id),
            after_id: r.after_id,
            limit: r.limit,
            kind: audit_kind_from_pb(r.kind).map_err(ServiceError::from)?,
            actor: non_empty(r.actor),
            since_ms: r
                .since
                .map(|t| convert::timestamp_ms("since", &t))
                .transpose()
                .map_err(ServiceError::from)?,
        };
        let events = self.service.list_audit(&p, filter).await?;
        let next_after_id = events.last().map_or(0, |e| e.id);
        Ok(Response::new(pb::ListAuditEventsResponse {
            events: events.into_iter().map(audit_to_pb).collect(),
            next_after_id,
        }))
    }
}

#[tonic::async_trait]
impl UserSettingsService for Api {
    async fn get_user_settings(
        &self,
        req: Request<pb::GetUserSettingsRequest>,
    ) -> Result<Response<pb::GetUserSettingsResponse>, Status> {
        let p = principal(&req)?;
        let r = req.into_inner();
        // empty ids are the token's own, as for decisions
        let (team, user_id) = crate::service::own_subject(&p, &r.team_id, &r.user_id);
        let user = self.service.get_user(&p, team, user_id).await?;
        Ok(Response::new(pb::GetUserSettingsResponse {
            settings: Some(user_to_pb(team, user_id, &user.stored)),
        }))
    }

    async fn update_user_settings(
        &self,
        req: Request<pb::UpdateUserSettingsRequest>,
    ) -> Result<Response<pb::UpdateUserSettingsResponse>, Status> {
        let p = principal(&req)?;
        let r = req.into_inner();
        let settings = r.settings.ok_or_else(|| ServiceError::InvalidArgument {
            field: "settings".into(),
            message: "must be set: send the settings with their team_id and user_id (and update_mask to change only some fields)"
                .into(),
        })?;
        let (team, user) = (settings.team_id.clone(), settings.user_id.clone());
        if let Some(mask) = r.update_mask.filter(|m| !m.paths.is_empty()) {
            // empty ids are the token's own: a member changes a setting with no ids
            let (team, user) = crate::service::own_subject(&p, &team, &user);
            let (team, user) = (team.to_owned(), user.to_owned());
            let fields = toolgate_proto::convert::user_fields_from_mask(&mask)
                .map_err(ServiceError::from)?;
            let stored = self
                .service
                .update_user_fields(
                    &p,
                    &team,
                    &user,
                    &user_from_pb(settings),
                    &fields,
                    r.expected_revision,
                )
                .await?;
            return Ok(Response::new(pb::UpdateUserSettingsResponse {
                settings: Some(user_to_pb(&team, &user, &stored)),
            }));
        }
        let stored = self
            .service
            .update_user(
                &p,
                &team,
                &user,
                user_from_pb(settings),
                r.expected_revision,
            )
            .await?;
        Ok(Response::new(pb::UpdateUserSettingsResponse {
            settings: Some(user_to_pb(&team, &user, &stored)),
        }))
    }

    async fn add_to_allowlist(
        &self,
        req: Request<pb::AddToAllowlistRequest>,
    ) -> Result<Response<pb::AddToAllowlistResponse>, Status> {
        let p = principal(&req)?;
        let r = req.into_inner();
        let change = self
            .service
            .add_to_allowlist(&p, &r.team_id, &r.user_id, &r.server, &r.tool)
            .await?;
        Ok(Response::new(pb::AddToAllowlistResponse {
            settings: Some(user_to_pb(&r.team_id, &r.user_id, &change.settings)),
            changed: change.changed,
            detail: change.detail,
            note: change.note,
        }))
    }

    async fn remove_from_allowlist(
        &self,
        req: Request<pb::RemoveFromAllowlistRequest>,
    ) -> Result<Response<pb::RemoveFromAllowlistResponse>, Status> {
        let p = principal(&req)?;
        let r = req.into_inner();
        let change = self
            .service
            .remove_from_allowlist(&p, &r.team_id, &r.user_id, &r.entry)
            .await?;
        Ok(Response::new(pb::RemoveFromAllowlistResponse {
            settings: Some(user_to_pb(&r.team_id, &r.user_id, &change.settings)),
            changed: change.changed,
            detail: change.detail,
        }))
    }
}

type EventStream = Pin<Box<dyn Stream<Item = Result<pb::WatchPolicyResponse, Status>> + Send>>;

#[tonic::async_trait]
impl PolicyService for Api {
    async fn evaluate(
        &self,
        req: Request<pb::EvaluateRequest>,
    ) -> Result<Response<pb::EvaluateResponse>, Status> {
        let p = principal(&req)?;
        let r = req.into_inner();
        let mut call = r.call;
        let args =
            convert::arguments_from_pb(call.as_mut().and_then(|c| c.arguments.take()), &"call")
                .map_err(ServiceError::from)?;
        let call = call_from_pb(&"call", call).map_err(ServiceError::from)?;
        let origin = crate::service::Origin {
            source: crate::service::DecisionSource::Evaluate,
            client: r.client,
            tool_use_id: r.tool_use_id,
        };
        let agent = convert::agent_from_pb(r.agent);
        let (mut decisions, revision) = self
            .service
            .evaluate_from(
                &p,
                &r.team_id,
                &r.user_id,
                std::slice::from_ref(&call),
                r.explain,
                &agent,
                std::slice::from_ref(&args),
                &origin,
            )
            .await?;
        let decision = decisions
            .pop()
            .ok_or_else(|| ServiceError::Internal("no decision".into()))?;
        // an ASK may be covered by a grant, or go to the team's approvers (never a
        // check's: nobody is waiting for its answer)
        let ask = r
            .approval
            .filter(|_| !origin.is_check())
            .map(|a| crate::service::ApprovalAsk {
                can_wait: a.can_wait,
                interactive: a.interactive,
                client: a.client,
                session_id: Some(a.session_id)
                    .filter(|s| !s.is_empty())
                    .or(agent.session.clone()),
                cwd: args.cwd.clone(),
            });
        let (decision, ticket) = self
            .service
            .settle_ask(
                &p,
                &r.team_id,
                &r.user_id,
                &call,
                decision,
                revision,
                agent.id.as_deref(),
                &ask.unwrap_or_default(),
            )
            .await?;
        count_decisions(std::slice::from_ref(&decision));
        let mut reply = decision_to_pb(decision, &call, revision);
        reply.approval = ticket.map(|t| pb::ApprovalTicket {
            request_id: t.request_id,
            deadline: toolgate_proto::convert::timestamp(t.deadline_ms),
        });
        Ok(Response::new(pb::EvaluateResponse {
            decision: Some(reply),
        }))
    }

    async fn evaluate_batch(
        &self,
        req: Request<pb::EvaluateBatchRequest>,
    ) -> Result<Response<pb::EvaluateBatchResponse>, Status> {
        let p = principal(&req)?;
        let r = req.into_inner();
        // one pass, the arguments taken rather than copied
        let mut args = Vec::with_capacity(r.calls.len());
        let mut calls = Vec::with_capacity(r.calls.len());
        for (i, mut c) in r.calls.into_iter().enumerate() {
            let field = convert::BatchCall(i);
            args.push(
                convert::arguments_from_pb(c.arguments.take(), &field)
                    .map_err(ServiceError::from)?,
            );
            calls.push(call_from_pb(&field, Some(c)).map_err(ServiceError::from)?);
        }
        let origin = crate::service::Origin {
            source: crate::service::DecisionSource::EvaluateBatch,
            client: r.client,
            tool_use_id: String::new(),
        };
        let (decisions, revision) = self
            .service
            .evaluate_from(
                &p,
                &r.team_id,
                &r.user_id,
                &calls,
                r.explain,
                &convert::agent_from_pb(r.agent),
                &args,
                &origin,
            )
            .await?;
        count_decisions(&decisions);
        Ok(Response::new(pb::EvaluateBatchResponse {
            decisions: decisions
                .into_iter()
                .zip(&calls)
                .map(|(d, c)| decision_to_pb(d, c, revision))
                .collect(),
            revision,
        }))
    }

    async fn filter_tools(
        &self,
        req: Request<pb::FilterToolsRequest>,
    ) -> Result<Response<pb::FilterToolsResponse>, Status> {
        let p = principal(&req)?;
        let r = req.into_inner();
        let tools = r.tools.ok_or_else(|| ServiceError::InvalidArgument {
            field: "tools".into(),
            message:
                "must be set: send the tools/list result, {\"tools\": [...]} or the bare array"
                    .into(),
        })?;
        let tools = toolgate_proto::json::value_from_pb(&tools, "tools")
            .map_err(ServiceError::from)?
            .to_string();
        let (filtered, revision) = self
            .service
            .filter_tools_from(&p, &r.team_id, &r.user_id, &r.server, &tools, &r.client)
            .await?;
        Ok(Response::new(pb::FilterToolsResponse {
            tools: Some(toolgate_proto::json::value_to_pb(&filtered.tools)),
            removed: filtered.removed,
            malformed_skipped: u32::try_from(filtered.malformed_skipped).unwrap_or(u32::MAX),
            revision,
        }))
    }

    async fn get_effective_policy(
        &self,
        req: Request<pb::GetEffectivePolicyRequest>,
    ) -> Result<Response<pb::GetEffectivePolicyResponse>, Status> {
        let p = principal(&req)?;
        let r = req.into_inner();
        let eff = self.service.effective(&p, &r.team_id, &r.user_id).await?;
        // empty ids stand for the token's own: answer with those, so a client learns
        // whom it is deciding for (`toolgate hook check`, `toolgate login`)
        let own = |given: &str, token: &Option<String>| match (given, token) {
            ("", Some(t)) => t.clone(),
            _ => given.to_owned(),
        };
        let (team, user) = (own(&r.team_id, &p.team), own(&r.user_id, &p.user));
        Ok(Response::new(pb::GetEffectivePolicyResponse {
            policy: Some(effective_to_pb(&team, &user, &eff)),
        }))
    }

    type WatchPolicyStream = EventStream;

    /// Never reached: [`PolicyRouter`] takes the `WatchPolicy` path before the
    /// generated server sees it, and serves it once, sharing each change's encoding
    /// between streams (`watch.rs`).
    async fn watch_policy(
        &self,
        _req: Request<pb::WatchPolicyRequest>,
    ) -> Result<Response<Self::WatchPolicyStream>, Status> {
        Err(Status::internal(
            "WatchPolicy is served by PolicyRouter: mount PolicyRouter, not the generated PolicyServiceServer",
        ))
    }

    async fn report_tampering(
        &self,
        req: Request<pb::ReportTamperingRequest>,
    ) -> Result<Response<pb::ReportTamperingResponse>, Status> {
        let p = principal(&req)?;
        let r = req.into_inner();
        let report = crate::service::TamperReport {
            file: managed_file_from_pb(r.file).map_err(ServiceError::from)?,
            path: r.path,
            host: r.host,
            found_sha256: r.found_sha256,
            restored: r.restored,
        };
        let recorded = self
            .service
            .report_tampering(&p, &r.team_id, &r.user_id, &report)
            .await?;
        Ok(Response::new(pb::ReportTamperingResponse { recorded }))
    }
}

#[tonic::async_trait]
impl ServerInfoService for Api {
    async fn get_server_config(
        &self,
        req: Request<pb::GetServerConfigRequest>,
    ) -> Result<Response<pb::GetServerConfigResponse>, Status> {
        let p = principal(&req)?;
        let team = p.team.clone().unwrap_or_default();
        if !team.is_empty() {
            check_id("team_id", &team).map_err(ServiceError::from)?;
        }
        authorize(&p, &team, Action::ReadServerInfo).map_err(ServiceError::from)?;
        // secrets and principals are the operators' business alone
        let view = if p.role == crate::auth::Role::Operator {
            &self.config_views.operator
        } else {
            &self.config_views.team
        };
        let mut config = view.clone();
        // the file's state changes at run time; the rest of the config does not
        if let Some(status) = self.policy_file.as_ref().and_then(|cell| cell.get()) {
            config.insert("policy_file".to_owned(), status.to_json());
        }
        Ok(Response::new(pb::GetServerConfigResponse {
            version: env!("CARGO_PKG_VERSION").to_owned(),
            config: Some(toolgate_proto::json::object_to_pb(&config)),
        }))
    }

    async fn get_sign_in(
        &self,
        _req: Request<pb::GetSignInRequest>,
    ) -> Result<Response<pb::GetSignInResponse>, Status> {
        // no principal needed: nothing here is secret, and who asks has no token yet
        Ok(Response::new(self.config_views.sign_in.clone()))
    }
}

/// `GetSignIn`'s answer, from `auth.jwt` (none without `auth.jwt.sign_in`).
fn sign_in_of(config: &crate::config::Config) -> pb::GetSignInResponse {
    use crate::config::{SignInBearer, SignInFlow};
    let sign_in = config.auth.jwt.as_ref().and_then(|jwt| {
        let s = jwt.sign_in.as_ref()?;
        Some(pb::SignIn {
            issuer: jwt.issuer.clone(),
            client_id: s.client_id.clone(),
            scopes: s.scopes.clone(),
            flows: s
                .flows
                .iter()
                .map(|f| match f {
                    SignInFlow::Device => pb::SignInFlow::Device,
                    SignInFlow::Browser => pb::SignInFlow::Browser,
                } as i32)
                .collect(),
            bearer: match s.bearer {
                SignInBearer::IdToken => pb::SignInBearer::IdToken,
                SignInBearer::AccessToken => pb::SignInBearer::AccessToken,
            } as i32,
            allow_loopback_http: s.allow_loopback_http,
        })
    });
    pb::GetSignInResponse { sign_in }
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

/// The policy's warnings about admin controls (what `admin apply` prints), for the
/// console and other clients of the API.
fn warnings_to_pb(controls: &crate::policy::AdminControls) -> Vec<pb::PolicyWarning> {
    crate::policy::warnings(controls)
        .into_iter()
        .map(|w| pb::PolicyWarning {
            field: format!("auto_run_controls.{}", w.field),
            message: w.message,
        })
        .collect()
}
