//! One downstream MCP session: tools/list filtered by the principal's live policy,
//! tools/call decided by toolgate first, list changes announced, the rest passed on
//! through the session's own upstream connection (`relay.rs`) once it has
//! initialized, or the shared one (2026-07-28 clients, which have no session).

// logging and `resources/subscribe` are the older generation's, deprecated in rmcp
// for 2026-07-28, and what the proxy must relay
#![allow(deprecated)]

mod call;
mod route;

use super::gate::{Gate, Visible, Who};
use super::relay::{Downstream, Own};
use super::upstream::Upstream;
use dashmap::DashMap;
use rmcp::model::*;
use rmcp::service::{
    NotificationContext, Peer, RequestContext, RoleServer, ServiceError, SubscriptionContext,
};
use rmcp::{ErrorData, ServerHandler};
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tracing::{debug, info};

/// How long a request waits for a first policy view or a (re)started upstream.
const READY_WAIT: Duration = Duration::from_secs(10);
/// How often an announcer looks whether its session has ended.
const CLOSED_POLL: Duration = Duration::from_secs(5);
/// How long a user has to answer an approval asked through elicitation.
const ELICIT_WAIT: Duration = Duration::from_secs(600);

/// What every session of one proxy shares.
pub struct Shared {
    pub gate: Arc<Gate>,
    pub upstream: Arc<Upstream>,
    /// The principal of every session (stdio); None when each request names its own
    /// (HTTP, from the bearer token).
    pub fixed: Option<Who>,
    /// The tool names each principal was shown, and when last: a call to one of them
    /// that is denied now is answered as denied, not as unknown. Kept per principal,
    /// not per session, because 2026-07-28 clients have no session.
    pub shown: DashMap<Who, HashMap<String, Instant>>,
    /// stdio: the one client, handed to the shared upstream connection once it has
    /// initialized (that connection is the client's own).
    /// None: not yet; Some(None): a client without a session (2026-07-28).
    pub single: Option<tokio::sync::watch::Sender<Option<Option<Downstream>>>>,
    /// Places for the upstream processes sessions run (HTTP, a command upstream: one
    /// per session), and how many there are.
    pub processes: Arc<tokio::sync::Semaphore>,
    pub max_processes: usize,
}

/// How long a listed tool counts as shown to its principal.
const SHOWN_FOR: Duration = Duration::from_secs(3600);

impl Shared {
    fn remember_shown(&self, who: &Who, tools: &[Tool]) {
        let now = Instant::now();
        let mut shown = self.shown.entry(who.clone()).or_default();
        shown.retain(|_, at| now.duration_since(*at) < SHOWN_FOR);
        for t in tools {
            shown.insert(t.name.to_string(), now);
        }
    }

    fn was_shown(&self, who: &Who, tool: &str) -> bool {
        self.shown
            .get(who)
            .and_then(|shown| shown.get(tool).map(|at| at.elapsed() < SHOWN_FOR))
            .unwrap_or(false)
    }
}

/// The handler of one downstream session (one per stdio connection, one per HTTP
/// session or stateless request).
#[derive(Clone)]
pub struct Session {
    shared: Arc<Shared>,
    who: Arc<OnceLock<Who>>,
    /// Set by `initialize`: what the session's own upstream connection relays to.
    down: Arc<OnceLock<Downstream>>,
    /// The session's own upstream connection, (re)opened on demand, with its place
    /// among the proxy's upstream processes (none for a URL upstream).
    own: Arc<tokio::sync::Mutex<Option<OwnConnection>>>,
    /// What the client set upstream, set again on a reopened connection.
    level: Arc<Mutex<Option<LoggingLevel>>>,
    subscribed: Arc<Mutex<BTreeSet<String>>>,
}

/// A session's own connection and its place among the proxy's upstream processes
/// (none for a URL upstream), given back when dropped.
type OwnConnection = (Own, Option<tokio::sync::OwnedSemaphorePermit>);

/// The upstream a request goes to, with what its relaying needs.
struct Route {
    peer: Peer<rmcp::service::RoleClient>,
    down: Option<Downstream>,
}

impl Session {
    pub fn new(shared: Arc<Shared>) -> Self {
        Self {
            shared,
            who: Arc::new(OnceLock::new()),
            down: Arc::new(OnceLock::new()),
            own: Arc::new(tokio::sync::Mutex::new(None)),
            level: Arc::new(Mutex::new(None)),
            subscribed: Arc::new(Mutex::new(BTreeSet::new())),
        }
    }

    /// stdio: a client that never initializes (2026-07-28) has the shared connection
    /// opened at its first request, without a relay.
    fn start_single(&self) {
        if let Some(single) = &self.shared.single {
            single.send_if_modified(|current| {
                let first = current.is_none();
                if first {
                    *current = Some(None);
                }
                first
            });
        }
    }

    /// The principal: fixed (stdio), the session's, or the request's (set by the HTTP
    /// layer from the bearer token).
    fn who(&self, extensions: &Extensions) -> Result<Who, ErrorData> {
        if let Some(who) = &self.shared.fixed {
            return Ok(who.clone());
        }
        if let Some(who) = extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Who>())
        {
            let _ = self.who.set(who.clone());
            return Ok(who.clone());
        }
        self.who
            .get()
            .cloned()
            .ok_or_else(|| ErrorData::invalid_request("no principal: send a bearer token", None))
    }

    /// Whether the upstream may run for `who` (its identity by the team's policy):
    /// nothing is relayed, nor the upstream started, before it may.
    async fn admit(&self, who: &Who) -> Result<(), ErrorData> {
        self.shared
            .gate
            .admitted(who, READY_WAIT)
            .await
            .map_err(|why| ErrorData::invalid_request(why, None))
    }

    /// The principal's view once it is known, or a fail-closed one after a deadline.
    async fn visible(&self, who: &Who) -> Visible {
        let mut view = self.shared.gate.view(who);
        let ready = tokio::time::timeout(
            READY_WAIT,
            view.wait_for(|v| !matches!(v, Visible::Pending)),
        )
        .await;
        match ready {
            Ok(Ok(visible)) => visible.clone(),
            _ => {
                Visible::Closed("the policy or the upstream tool list is not available yet".into())
            }
        }
    }

    /// Sends `notifications/tools/list_changed` whenever the principal's visible set
    /// changes, until the peer is gone (the upstream's other notifications come
    /// through the session's own connection).
    fn announce(&self, who: Who, peer: Peer<RoleServer>) {
        let mut view = self.shared.gate.view(&who);
        tokio::spawn(async move {
            let mut was_pending = matches!(*view.borrow_and_update(), Visible::Pending);
            loop {
                let sent = tokio::select! {
                    r = view.changed() => {
                        if r.is_err() { break }
                        let pending = was_pending;
                        was_pending = matches!(*view.borrow_and_update(), Visible::Pending);
                        if pending { continue }
                        peer.notify_tool_list_changed().await
                    }
                    () = peer_closed(&peer) => break,
                };
                if sent.is_err() {
                    break;
                }
            }
            debug!("session announcer ended");
        });
    }
}

/// An upstream on an older generation leaves `resultType` out; 2026-07-28 clients
/// require it (rmcp strips it again for older clients).
fn complete<T>(mut result: T, field: impl FnOnce(&mut T) -> &mut Option<ResultType>) -> T {
    field(&mut result).get_or_insert(ResultType::COMPLETE);
    result
}

fn to_mcp(e: ServiceError) -> ErrorData {
    match e {
        ServiceError::McpError(e) => e,
        other => ErrorData::internal_error(format!("upstream: {other}"), None),
    }
}

impl ServerHandler for Session {
    fn get_info(&self) -> ServerConfig {
        let upstream = self
            .shared
            .upstream
            .current()
            .and_then(|peer| peer.peer_info());
        let mut info = match upstream {
            Some(peer) => {
                // only what the proxy serves: not the upstream's experimental or
                // extension capabilities, which it does not relay
                let theirs = &peer.capabilities;
                let mut served = ServerCapabilities::default();
                served.logging = theirs.logging.clone();
                served.completions = theirs.completions.clone();
                served.prompts = theirs.prompts.clone();
                served.resources = theirs.resources.clone();
                let mut info = InitializeResult::new(served);
                if let Some(server) = &peer.server_info {
                    info = info.with_server_info(server.clone());
                }
                if let Some(text) = &peer.instructions {
                    info = info.with_instructions(text.clone());
                }
                info
            }
            None => InitializeResult::new(
                ServerCapabilities::builder()
                    .enable_prompts()
                    .enable_resources()
                    .build(),
            ),
        };
        // the proxy always announces list changes, whatever the upstream does
        info.capabilities.tools = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .build()
            .tools;
        info
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        let who = self.who(&context.extensions)?;
        self.admit(&who).await?;
        context.peer.set_peer_info(request.clone());
        let down = Downstream {
            peer: context.peer.clone(),
            info: Arc::new(request.clone()),
            who,
            gate: Arc::clone(&self.shared.gate),
            progress: Default::default(),
            inflight: Default::default(),
        };
        let _ = self.down.set(down.clone());
        match &self.shared.single {
            // stdio: the shared connection opens now, as this client's
            Some(single) => {
                single.send_if_modified(|current| {
                    let first = current.is_none();
                    if first {
                        *current = Some(Some(down));
                    }
                    first
                });
            }
            // the upstream learns the client's capabilities now, not at the first call
            None => {
                if let Err(e) = self.route().await {
                    debug!(error = %e.message, "the session's upstream connection is not open yet");
                }
            }
        }
        // the capabilities answered are the upstream's: wait for it briefly
        let _ = self.shared.upstream.peer(READY_WAIT).await;
        self.negotiate_initialize(&request)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        // older protocol generations: list_changed goes to every initialized client
        if let Ok(who) = self.who(&context.extensions) {
            self.announce(who, context.peer);
        }
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(requested.clone())
    }

    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        // 2026-07-28: notifications only on the stream the client opened for them
        let who = self.who(&subscription.request_context().extensions)?;
        self.admit(&who).await?;
        self.start_single();
        let mut view = self.shared.gate.view(&who);
        let mut notices = self.shared.upstream.notices();
        let sink = subscription.sink().clone();
        let mut was_pending = matches!(*view.borrow_and_update(), Visible::Pending);
        loop {
            let sent = tokio::select! {
                () = subscription.cancelled() => return Ok(()),
                r = view.changed() => {
                    if r.is_err() { return Ok(()) }
                    let pending = was_pending;
                    was_pending = matches!(*view.borrow_and_update(), Visible::Pending);
                    if pending { continue }
                    sink.notify_tool_list_changed().await
                }
                notice = notices.recv() => match notice {
                    Ok(n) => sink.send(n).await,
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(_) => return Ok(()),
                },
            };
            if let Err(e) = sent {
                debug!(error = %e, "subscription send failed");
            }
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let who = self.who(&context.extensions)?;
        if let Err(e) = self.admit(&who).await {
            info!(team = %who.team, user = %who.user, why = %e.message, "tools/list answered empty");
            return Ok(ListToolsResult::with_all_items(Vec::new()));
        }
        self.start_single();
        let visible = self.visible(&who).await;
        if let Visible::Closed(why) = &visible {
            info!(team = %who.team, user = %who.user, why = %why, "tools/list answered empty");
        }
        let tools = visible.tools().to_vec();
        self.shared.remember_shown(&who, &tools);
        // every page fetched upstream, answered as one
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.call(request, context).await
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let request = ClientRequest::ListPromptsRequest(ListPromptsRequest {
            params: request,
            ..Default::default()
        });
        match self.relay(request, &context).await? {
            ServerResult::ListPromptsResult(r) => Ok(complete(r, |r| &mut r.result_type)),
            _ => Err(unexpected("prompts/list")),
        }
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let request = ClientRequest::GetPromptRequest(GetPromptRequest::new(request));
        match self.relay(request, &context).await? {
            ServerResult::GetPromptResult(r) => Ok(complete(r, |r| &mut r.result_type).into()),
            ServerResult::InputRequiredResult(r) => Ok(GetPromptResponse::InputRequired(r)),
            _ => Err(unexpected("prompts/get")),
        }
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let request = ClientRequest::ListResourcesRequest(ListResourcesRequest {
            params: request,
            ..Default::default()
        });
        match self.relay(request, &context).await? {
            ServerResult::ListResourcesResult(r) => Ok(complete(r, |r| &mut r.result_type)),
            _ => Err(unexpected("resources/list")),
        }
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let request = ClientRequest::ListResourceTemplatesRequest(ListResourceTemplatesRequest {
            params: request,
            ..Default::default()
        });
        match self.relay(request, &context).await? {
            ServerResult::ListResourceTemplatesResult(r) => Ok(complete(r, |r| &mut r.result_type)),
            _ => Err(unexpected("resources/templates/list")),
        }
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let request = ClientRequest::ReadResourceRequest(ReadResourceRequest::new(request));
        match self.relay(request, &context).await? {
            ServerResult::ReadResourceResult(r) => Ok(complete(r, |r| &mut r.result_type).into()),
            ServerResult::InputRequiredResult(r) => Ok(ReadResourceResponse::InputRequired(r)),
            _ => Err(unexpected("resources/read")),
        }
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let request = ClientRequest::CompleteRequest(CompleteRequest::new(request));
        match self.relay(request, &context).await? {
            ServerResult::CompleteResult(r) => Ok(complete(r, |r| &mut r.result_type)),
            _ => Err(unexpected("completion/complete")),
        }
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if let Ok(mut level) = self.level.lock() {
            *level = Some(request.level);
        }
        let request = ClientRequest::SetLevelRequest(SetLevelRequest::new(request));
        self.relay(request, &context).await.map(drop)
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let uri = request.uri.clone();
        let request = ClientRequest::SubscribeRequest(SubscribeRequest::new(request));
        self.relay(request, &context).await?;
        if let Ok(mut subscribed) = self.subscribed.lock() {
            subscribed.insert(uri);
        }
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if let Ok(mut subscribed) = self.subscribed.lock() {
            subscribed.remove(&request.uri);
        }
        let request = ClientRequest::UnsubscribeRequest(UnsubscribeRequest::new(request));
        self.relay(request, &context).await.map(drop)
    }
}

fn unexpected(method: &str) -> ErrorData {
    ErrorData::internal_error(
        format!("the upstream answered {method} with another result"),
        None,
    )
}

/// Resolves once `peer`'s session has ended.
async fn peer_closed(peer: &Peer<RoleServer>) {
    while !peer.is_transport_closed() {
        tokio::time::sleep(CLOSED_POLL).await;
    }
}
