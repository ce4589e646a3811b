//! One downstream MCP session: tools/list filtered by the principal's live policy,
//! tools/call decided by toolgate first, list changes announced, the rest passed on.

use super::gate::{Gate, RemoteDecision, Visible, Who};
use super::upstream::Upstream;
use crate::grpc::client::ClientError;
use crate::policy::Outcome;
use dashmap::DashMap;
use rmcp::model::*;
use rmcp::service::{
    NotificationContext, Peer, RequestContext, RoleServer, ServiceError, SubscriptionContext,
};
use rmcp::{ErrorData, ServerHandler};
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use tracing::{debug, info};

/// How long a request waits for a first policy view or a (re)started upstream.
const READY_WAIT: Duration = Duration::from_secs(10);
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
}

impl Session {
    pub fn new(shared: Arc<Shared>) -> Self {
        Self {
            shared,
            who: Arc::new(OnceLock::new()),
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
    /// changes, and passes on the upstream's other list changes, until the peer is gone.
    fn announce(&self, who: Who, peer: Peer<RoleServer>) {
        let mut view = self.shared.gate.view(&who);
        let mut notices = self.shared.upstream.notices();
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
                    notice = notices.recv() => match notice {
                        Ok(n) => peer.send_notification(n).await,
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                        Err(_) => break,
                    },
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
                let mut info = InitializeResult::new(peer.capabilities.clone());
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
        self.who(&context.extensions)?;
        // the capabilities answered are the upstream's: wait for it briefly
        let _ = self.shared.upstream.peer(READY_WAIT).await;
        context.peer.set_peer_info(request.clone());
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
        let peer = match self.upstream().await {
            Ok(peer) => peer,
            Err(e) => return Ok(CallToolResult::error(vec![ContentBlock::text(e.message)]).into()),
        };
        match peer.call_tool(request).await {
            Ok(result) => Ok(complete(result, |r| &mut r.result_type).into()),
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
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let result = self.upstream().await?.list_prompts(request).await;
        result
            .map(|r| complete(r, |r| &mut r.result_type))
            .map_err(to_mcp)
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let result = self.upstream().await?.get_prompt(request).await;
        result
            .map(|r| complete(r, |r| &mut r.result_type).into())
            .map_err(to_mcp)
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let result = self.upstream().await?.list_resources(request).await;
        result
            .map(|r| complete(r, |r| &mut r.result_type))
            .map_err(to_mcp)
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let result = self
            .upstream()
            .await?
            .list_resource_templates(request)
            .await;
        result
            .map(|r| complete(r, |r| &mut r.result_type))
            .map_err(to_mcp)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let result = self.upstream().await?.read_resource(request).await;
        result
            .map(|r| complete(r, |r| &mut r.result_type).into())
            .map_err(to_mcp)
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let result = self.upstream().await?.complete(request).await;
        result
            .map(|r| complete(r, |r| &mut r.result_type))
            .map_err(to_mcp)
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
