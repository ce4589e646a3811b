//! A downstream session's own upstream connection: opened with the real client's
//! capabilities and name, so what the upstream says to that client (log messages,
//! progress, resource updates, sampling and elicitation requests) reaches that client
//! and no other, and a request's `_meta`, progress token and cancellation go upstream
//! as the client sent them.

// logging, sampling, roots and `resources/subscribe` are the older generation's,
// deprecated in rmcp for 2026-07-28, and what the proxy must relay
#![allow(deprecated)]

use super::gate::{Gate, Who};
use super::target::{Target, connect};
use crate::policy::Outcome;
use dashmap::DashMap;
use rmcp::model::*;
use rmcp::service::{
    NotificationContext, OriginatingRequestId, Peer, PeerRequestOptions, RequestContext,
    RoleClient, RoleServer, RunningService, ServiceError,
};
use rmcp::{ClientHandler, ErrorData};
use std::sync::{Arc, Mutex};
use tracing::{debug, info};

/// The pseudo-tool names a team's policy decides server-to-client requests by, as
/// `<server-id>:sampling/createMessage` and `<server-id>:elicitation/create`: no
/// upstream tool can take them (a tool name holding `/` is hidden), so an entry for
/// one never matches a real tool.
pub const SAMPLING: &str = "sampling/createMessage";
pub const ELICITATION: &str = "elicitation/create";

/// Upstream progress tokens (the proxy's own, one per forwarded request) to the
/// client's.
pub type ProgressMap = Arc<DashMap<ProgressToken, ProgressToken>>;

/// What the relay needs from the downstream session.
#[derive(Clone)]
pub struct Downstream {
    pub peer: Peer<RoleServer>,
    /// The client's `initialize`: its capabilities and name, given to the upstream.
    pub info: Arc<InitializeRequestParams>,
    pub who: Who,
    pub gate: Arc<Gate>,
    pub progress: ProgressMap,
    /// The client's requests being relayed, oldest first: a request the upstream
    /// makes is sent on the newest one's stream (stdio upstreams cannot say which).
    pub inflight: Arc<Mutex<Vec<RequestId>>>,
}

/// The upstream's side of a session's connection.
#[derive(Clone)]
pub struct Relay(Downstream);

impl Relay {
    pub fn new(down: Downstream) -> Self {
        Self(down)
    }
}

/// A session's open connection.
pub type Own = RunningService<RoleClient, Relay>;

/// Opens `down`'s own connection to the upstream at `target`.
pub async fn open(target: &Target, down: Downstream) -> Result<Own, String> {
    connect(target, Relay(down)).await
}

impl Relay {
    /// Whether the team's policy refuses the upstream's `method`: DENY refuses it;
    /// ALLOW and ASK relay it, since the client puts it before its user. An
    /// unreachable toolgate refuses it too.
    async fn refused(&self, method: &str) -> Option<ErrorData> {
        let d = &self.0;
        let server = d.gate.server_id().to_owned();
        match d.gate.evaluate(&d.who, method, None).await {
            Ok(decision) if decision.outcome != Outcome::Deny => None,
            Ok(decision) => {
                info!(team = %d.who.team, user = %d.who.user, server = %server, method, reason = %decision.reason, "server-to-client request refused by policy");
                Some(ErrorData::invalid_request(
                    format!(
                        "toolgate denied {server}:{method} ({}): {}",
                        decision.reason, decision.message
                    ),
                    None,
                ))
            }
            Err(e) => Some(ErrorData::internal_error(
                format!("toolgate could not decide {server}:{method} ({e}): refused"),
                None,
            )),
        }
    }

    /// Sends `request` to the client on the stream of the request it belongs to.
    async fn ask_client(&self, mut request: ServerRequest) -> Result<ClientResult, ErrorData> {
        let newest = self.0.inflight.lock().ok().and_then(|l| l.last().cloned());
        if let Some(id) = newest {
            request.extensions_mut().insert(OriginatingRequestId(id));
        }
        // a fresh task: the task-local request id of the upstream's request must not
        // name the stream
        let peer = self.0.peer.clone();
        let sent = tokio::spawn(async move { peer.send_request(request).await }).await;
        match sent {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(ServiceError::McpError(e))) => Err(e),
            Ok(Err(e)) => Err(ErrorData::internal_error(
                format!("the client did not answer: {e}"),
                None,
            )),
            Err(e) => Err(ErrorData::internal_error(e.to_string(), None)),
        }
    }
}

impl ClientHandler for Relay {
    fn get_info(&self) -> ClientInfo {
        let client = &self.0.info;
        // only what the proxy relays; not the client's experimental or extension ones
        let mut capabilities = ClientCapabilities::default();
        capabilities.roots = client.capabilities.roots.clone();
        capabilities.sampling = client.capabilities.sampling.clone();
        capabilities.elicitation = client.capabilities.elicitation.clone();
        let mut info = InitializeRequestParams::new(capabilities, client.client_info.clone());
        info.protocol_version = client.protocol_version.clone();
        info
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        if let Some(refused) = self.refused(SAMPLING).await {
            return Err(refused);
        }
        let request = ServerRequest::CreateMessageRequest(CreateMessageRequest::new(params));
        match self.ask_client(request).await? {
            ClientResult::CreateMessageResult(result) => Ok(*result),
            _ => Err(ErrorData::internal_error(
                "the client answered sampling with another result",
                None,
            )),
        }
    }

    async fn create_elicitation(
        &self,
        params: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        if let Some(refused) = self.refused(ELICITATION).await {
            return Err(refused);
        }
        let request = ServerRequest::ElicitRequest(ElicitRequest::new(params));
        match self.ask_client(request).await? {
            ClientResult::ElicitResult(result) => Ok(result),
            _ => Err(ErrorData::internal_error(
                "the client answered elicitation with another result",
                None,
            )),
        }
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        let request = ServerRequest::ListRootsRequest(ListRootsRequest {
            method: Default::default(),
            extensions: Default::default(),
        });
        match self.ask_client(request).await? {
            ClientResult::ListRootsResult(result) => Ok(result),
            _ => Err(ErrorData::internal_error(
                "the client answered roots/list with another result",
                None,
            )),
        }
    }

    async fn on_progress(
        &self,
        mut params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        // the client asked for progress under its own token; none asked, none passed
        let Some(token) = self
            .0
            .progress
            .get(&params.progress_token)
            .map(|t| t.clone())
        else {
            return;
        };
        params.progress_token = token;
        if let Err(e) = self.0.peer.notify_progress(params).await {
            debug!(error = %e, "progress not passed on");
        }
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        if let Err(e) = self.0.peer.notify_logging_message(params).await {
            debug!(error = %e, "log message not passed on");
        }
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        if let Err(e) = self.0.peer.notify_resource_updated(params).await {
            debug!(error = %e, "resource update not passed on");
        }
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.0.peer.notify_resource_list_changed().await;
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.0.peer.notify_prompt_list_changed().await;
    }

    // the tool list is the shared connection's: filtered by policy, announced by the
    // session's announcer
}

/// Sends `request` upstream on `peer` as the client sent it: its `_meta` kept, its
/// progress token mapped to the proxy's, and a cancellation by the client passed on.
pub async fn forward(
    peer: &Peer<RoleClient>,
    mut request: ClientRequest,
    context: &RequestContext<RoleServer>,
    progress: Option<&ProgressMap>,
    inflight: Option<&Arc<Mutex<Vec<RequestId>>>>,
) -> Result<ServerResult, ServiceError> {
    let mut meta = context.meta.clone();
    let client_token = meta.get_progress_token();
    meta.0.remove("progressToken");
    // the client's connection to the proxy (2026-07-28's protocol version, client info
    // and capabilities, log level): rmcp describes the upstream connection itself
    meta.0
        .retain(|key, _| !key.starts_with("io.modelcontextprotocol/"));
    // rmcp sets the request's meta from the options (and its own progress token)
    *request.get_meta_mut() = RequestMetaObject::default();
    let mut options = PeerRequestOptions::no_options();
    if !meta.is_empty() {
        options = options.with_meta(meta);
    }
    let handle = peer.send_request_with_option(request, options).await?;
    let upstream_token = handle.progress_token.clone();
    let (id, upstream) = (handle.id.clone(), handle.peer.clone());
    if let (Some(token), Some(map)) = (client_token, progress) {
        map.insert(upstream_token.clone(), token);
    }
    if let Some(list) = inflight
        && let Ok(mut list) = list.lock()
    {
        list.push(context.id.clone());
    }
    let result = tokio::select! {
        r = handle.await_response() => r,
        () = context.ct.cancelled() => {
            // the client stopped the call: the upstream stops it too
            let cancel = CancelledNotification::new(CancelledNotificationParam::new(
                Some(id),
                Some("cancelled by the client".into()),
            ));
            let _ = upstream.send_notification(cancel.into()).await;
            Err(ServiceError::Cancelled { reason: Some("cancelled by the client".into()) })
        }
    };
    if let Some(map) = progress {
        map.remove(&upstream_token);
    }
    if let Some(list) = inflight
        && let Ok(mut list) = list.lock()
    {
        list.retain(|r| *r != context.id);
    }
    result
}
