//! One downstream MCP session: tools/list filtered by the principal's live policy,
//! tools/call decided by toolgate first, list changes announced, the rest passed on
//! through the session's own upstream connection (`relay.rs`) once it has
//! initialized, or the shared one (2026-07-28 clients, which have no session).

// logging and `resources/subscribe` are the older generation's, deprecated in rmcp
// for 2026-07-28, and what the proxy must relay
#![allow(deprecated)]

use super::gate::{Gate, RemoteDecision, Visible, Who};
use super::relay::{self, Downstream, Own};
use super::upstream::Upstream;
use crate::grpc::client::ClientError;
use crate::policy::Outcome;
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

    /// The session's own connection once it has initialized (opened again after the
    /// upstream ended, with the log level and subscriptions the client had set), or
    /// the shared one.
    async fn route(&self) -> Result<Route, ErrorData> {
        self.start_single();
        let down = match (self.down.get(), &self.shared.single) {
            (Some(down), None) => down,
            (down, _) => {
                return Ok(Route {
                    peer: self.upstream().await?,
                    down: down.cloned(),
                });
            }
        };
        let mut own = self.own.lock().await;
        if let Some((running, _)) = own.as_ref()
            && !running.is_transport_closed()
        {
            return Ok(Route {
                peer: running.peer().clone(),
                down: Some(down.clone()),
            });
        }
        // a closed connection's process has ended: its place is free again
        *own = None;
        let server = self.shared.gate.server_id().to_owned();
        let place = match self.shared.upstream.target() {
            super::Target::Command(_) => Some(
                Arc::clone(&self.shared.processes)
                    .try_acquire_owned()
                    .map_err(|_| {
                        ErrorData::internal_error(
                            format!(
                                "upstream server {server}: this proxy already runs {} upstream processes, one per MCP session, its most (--max-upstream-processes): end idle sessions or raise the limit",
                                self.shared.max_processes
                            ),
                            None,
                        )
                    })?,
            ),
            super::Target::Url(_) => None,
        };
        let opened = tokio::time::timeout(
            READY_WAIT,
            relay::open(self.shared.upstream.target(), down.clone()),
        )
        .await
        .unwrap_or_else(|_| Err("timed out".into()))
        .map_err(|e| {
            ErrorData::internal_error(
                format!("upstream server {server} is not running (restarting): {e}"),
                None,
            )
        })?;
        let peer = opened.peer().clone();
        let level = self.level.lock().ok().and_then(|l| *l);
        if let Some(level) = level {
            let _ = peer.set_level(SetLevelRequestParams::new(level)).await;
        }
        let subscribed: Vec<String> = self
            .subscribed
            .lock()
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default();
        for uri in subscribed {
            let _ = peer.subscribe(SubscribeRequestParams::new(uri)).await;
        }
        *own = Some((opened, place));
        Ok(Route {
            peer,
            down: Some(down.clone()),
        })
    }

    /// `request` sent upstream as the client sent it (see `relay::forward`).
    async fn relay(
        &self,
        request: ClientRequest,
        context: &RequestContext<RoleServer>,
    ) -> Result<ServerResult, ErrorData> {
        self.admit(&self.who(&context.extensions)?).await?;
        let route = self.route().await?;
        let down = route.down.as_ref();
        relay::forward(
            &route.peer,
            request,
            context,
            down.map(|d| &d.progress),
            down.map(|d| &d.inflight),
        )
        .await
        .map_err(to_mcp)
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

    async fn upstream(&self) -> Result<Peer<rmcp::service::RoleClient>, ErrorData> {
        self.shared.upstream.peer(READY_WAIT).await.ok_or_else(|| {
            ErrorData::internal_error(
                format!(
                    "upstream server {} is not running (restarting)",
                    self.shared.gate.server_id()
                ),
                None,
            )
        })
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

fn denied_text(server: &str, tool: &str, d: &RemoteDecision) -> String {
    format!(
        "toolgate denied {server}:{tool} ({}): {}",
        d.reason, d.message
    )
}

fn approval_text(server: &str, tool: &str, d: &RemoteDecision) -> String {
    format!(
        // the message says what would change the answer under the team's settings
        "toolgate: {server}:{tool} needs approval ({}): {}",
        d.reason, d.message
    )
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
        let who = self.who(&context.extensions)?;
        if let Err(e) = self.admit(&who).await {
            return Ok(CallToolResult::error(vec![ContentBlock::text(e.message)]).into());
        }
        self.start_single();
        let server = self.shared.gate.server_id().to_owned();
        let tool = request.name.to_string();
        // a name the upstream should not have listed is hidden, so unknown
        if let Err(why) = super::gate::check_upstream_name(&tool) {
            info!(team = %who.team, user = %who.user, server = %server, tool = ?tool, why, "tools/call of an invalid name refused");
            return Err(ErrorData::invalid_params(
                format!("Unknown tool: {tool}"),
                None,
            ));
        }
        let action = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("action"))
            .and_then(|a| a.as_str());
        let decision = match self.shared.gate.evaluate(&who, &tool, action).await {
            // an ASK the team's approvers answer: ALLOW or DENY once they have
            Ok(d) => self.shared.gate.settle(d).await,
            Err(e) => {
                let text = match e {
                    ClientError::Unreachable { .. } | ClientError::Timeout { .. } => format!(
                        "toolgate is unreachable ({e}): the call to {server}:{tool} was refused, try again later"
                    ),
                    other => format!(
                        "toolgate could not decide ({other}): the call to {server}:{tool} was refused"
                    ),
                };
                return Ok(CallToolResult::error(vec![ContentBlock::text(text)]).into());
            }
        };
        // a tool its pin holds back asks, whatever else allows it
        let held = match decision.outcome {
            Outcome::Deny => None,
            _ => self.shared.gate.held(&who.team, &tool),
        };
        let decision = if let Some(held) = held {
            RemoteDecision {
                outcome: Outcome::Ask,
                reason: held.reason().into(),
                message: held_message(held, &server, &tool, self.shared.gate.pins_on_server()),
                revision: decision.revision,
                approval: None,
                stays_inside: Vec::new(),
                effects_unknown: Vec::new(),
            }
        } else {
            decision
        };
        let outcome = decision.outcome;
        info!(team = %who.team, user = %who.user, server = %server, tool = %tool, outcome = ?outcome, revision = decision.revision, "tools/call decided");
        let shown = self.shared.was_shown(&who, &tool);
        let listed = || {
            let visible = self.shared.gate.view(&who).borrow().contains(&tool);
            visible || shown
        };
        match outcome {
            // neither listed now nor shown before: unknown, without asking anyone
            Outcome::Allow | Outcome::Ask if !listed() => {
                return Err(ErrorData::invalid_params(
                    format!("Unknown tool: {tool}"),
                    None,
                ));
            }
            Outcome::Allow => {}
            Outcome::Ask => {
                let asked = self.ask(&context.peer, &server, &tool, &decision).await;
                if let Err(text) = asked {
                    return Ok(CallToolResult::error(vec![ContentBlock::text(text)]).into());
                }
            }
            Outcome::Deny => {
                if !shown {
                    return Err(ErrorData::invalid_params(
                        format!("Unknown tool: {tool}"),
                        None,
                    ));
                }
                return Ok(CallToolResult::error(vec![ContentBlock::text(denied_text(
                    &server, &tool, &decision,
                ))])
                .into());
            }
        }
        let route = match self.route().await {
            Ok(route) => route,
            Err(e) => return Ok(CallToolResult::error(vec![ContentBlock::text(e.message)]).into()),
        };
        let down = route.down.as_ref();
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(request));
        let answer = relay::forward(
            &route.peer,
            request,
            &context,
            down.map(|d| &d.progress),
            down.map(|d| &d.inflight),
        )
        .await;
        match answer {
            Ok(ServerResult::CallToolResult(result)) => {
                Ok(complete(result, |r| &mut r.result_type).into())
            }
            Ok(ServerResult::InputRequiredResult(result)) => {
                Ok(CallToolResponse::InputRequired(result))
            }
            Ok(ServerResult::CreateTaskResult(result)) => Ok(CallToolResponse::Task(result)),
            Ok(_) => Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                "upstream server {server} answered tools/call with another result"
            ))])
            .into()),
            Err(ServiceError::McpError(e)) => Err(e),
            Err(e) => Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                "upstream server {server} failed during the call: {e}"
            ))])
            .into()),
        }
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

impl Session {
    /// Asks the user through MCP elicitation where the client offers it; Ok to go on.
    async fn ask(
        &self,
        peer: &Peer<RoleServer>,
        server: &str,
        tool: &str,
        decision: &RemoteDecision,
    ) -> Result<(), String> {
        let supported = peer
            .peer_info()
            .is_some_and(|info| info.capabilities.elicitation.is_some());
        if !supported {
            return Err(approval_text(server, tool, decision));
        }
        let message = format!(
            "toolgate: allow {server}:{tool} to run this once? {}",
            decision.message
        );
        let schema = ElicitationSchema::builder()
            .build()
            .map_err(|e| format!("elicitation schema: {e}"))?;
        let answer = peer
            .create_elicitation_with_timeout(
                ElicitRequestParams::FormElicitationParams {
                    meta: None,
                    message,
                    requested_schema: schema,
                },
                Some(ELICIT_WAIT),
            )
            .await;
        match answer {
            Ok(result) if result.action == ElicitationAction::Accept => Ok(()),
            Ok(_) => Err(format!(
                "the user did not approve {server}:{tool}: the call was not made"
            )),
            Err(e) => Err(format!(
                "{} (asking the user failed: {e})",
                approval_text(server, tool, decision)
            )),
        }
    }
}

/// What the user is told about a call its tool's pin holds back, and what an admin does.
fn held_message(held: super::gate::Held, server: &str, tool: &str, on_server: bool) -> String {
    use super::gate::Held;
    let what = match held {
        Held::Changed => format!("the definition of {server}:{tool} changed since it was pinned"),
        Held::NotPinned => {
            format!("{server}:{tool} is not pinned yet, and only an admin pins it first")
        }
        Held::Flagged => format!(
            "the description of {server}:{tool} was flagged, and the team hides flagged tools until an admin reviews them"
        ),
    };
    if on_server {
        format!(
            "{what}; an admin reviews it (toolgate pins list --server-id {server}) and accepts it (toolgate pins accept --server-id {server} {tool})"
        )
    } else {
        format!(
            "{what}; an admin reviews the change (toolgate proxy --server-id {server} --pins FILE --pins-status) and accepts it (--repin {tool})"
        )
    }
}
