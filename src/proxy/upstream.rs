//! The proxied MCP server: a child process or a Streamable HTTP URL, kept connected
//! (restarted with backoff after a crash), with its full tool list kept current.
//!
//! With one client (stdio), this shared connection is also that client's: it opens
//! once the client has initialized, with the client's capabilities, and relays to it
//! (`relay.rs`), so one upstream process serves it. With many (HTTP), each session
//! opens its own besides.

// sampling and roots are the older generation's, deprecated in rmcp for 2026-07-28
#![allow(deprecated)]

use super::gate::UpstreamTools;
use super::relay::{Downstream, Relay};
use super::target::{Target, connect};
use rmcp::ClientHandler;
use rmcp::ErrorData;
use rmcp::model::*;
use rmcp::service::{NotificationContext, Peer, RequestContext, RoleClient};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Notify, broadcast, watch};
use tokio::time::Instant;
use toolgate_core::backoff::Backoff;
use tracing::{info, warn};

const BACKOFF_MIN: Duration = Duration::from_millis(200);
const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// A connection that lived this long resets the backoff.
const HEALTHY_AFTER: Duration = Duration::from_secs(30);
/// At most this many tools are taken from an upstream listing; more is refused.
pub const MAX_TOOLS: usize = 10_000;

/// The upstream connection as the downstream sessions see it.
pub struct Upstream {
    target: Target,
    peer: watch::Sender<Option<Peer<RoleClient>>>,
    tools: watch::Sender<UpstreamTools>,
    /// The upstream's notifications other than the tool list's (prompts and resources
    /// changed, resource updated, log messages), for the sessions to pass on.
    notices: broadcast::Sender<ServerNotification>,
    /// stdio: the one client, once it has initialized; the connection waits for it.
    single: Option<watch::Receiver<Option<Option<Downstream>>>>,
}

/// Handles what the upstream sends on its own.
#[derive(Clone)]
struct Listener {
    tools_changed: Arc<Notify>,
    notices: broadcast::Sender<ServerNotification>,
    /// The one client this connection also serves (stdio).
    relay: Option<Relay>,
}

impl ClientHandler for Listener {
    fn get_info(&self) -> ClientInfo {
        match &self.relay {
            Some(relay) => relay.get_info(),
            None => ClientInfo::default(),
        }
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        match &self.relay {
            Some(relay) => relay.create_message(params, context).await,
            None => Err(ErrorData::method_not_found::<CreateMessageRequestMethod>()),
        }
    }

    async fn create_elicitation(
        &self,
        params: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        match &self.relay {
            Some(relay) => relay.create_elicitation(params, context).await,
            None => Err(ErrorData::method_not_found::<ElicitationCreateRequestMethod>()),
        }
    }

    async fn list_roots(
        &self,
        context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        match &self.relay {
            Some(relay) => relay.list_roots(context).await,
            None => Ok(ListRootsResult::default()),
        }
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        context: NotificationContext<RoleClient>,
    ) {
        if let Some(relay) = &self.relay {
            relay.on_progress(params, context).await;
        }
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        context: NotificationContext<RoleClient>,
    ) {
        if let Some(relay) = &self.relay {
            relay.on_logging_message(params, context).await;
        }
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        context: NotificationContext<RoleClient>,
    ) {
        if let Some(relay) = &self.relay {
            relay.on_resource_updated(params, context).await;
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.tools_changed.notify_one();
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self
            .notices
            .send(ServerNotification::PromptListChangedNotification(
                Default::default(),
            ));
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self
            .notices
            .send(ServerNotification::ResourceListChangedNotification(
                Default::default(),
            ));
    }
}

impl Upstream {
    /// Starts the connection loop.
    pub fn start(
        target: Target,
        single: Option<watch::Receiver<Option<Option<Downstream>>>>,
    ) -> Arc<Self> {
        let (notices, _) = broadcast::channel(64);
        let upstream = Arc::new(Self {
            target,
            peer: watch::channel(None).0,
            tools: watch::channel(None).0,
            notices,
            single,
        });
        tokio::spawn(Arc::clone(&upstream).supervise());
        upstream
    }

    /// The full tool list, as last fetched.
    pub fn tools(&self) -> watch::Receiver<UpstreamTools> {
        self.tools.subscribe()
    }

    /// Notifications to pass on to every session.
    pub fn notices(&self) -> broadcast::Receiver<ServerNotification> {
        self.notices.subscribe()
    }

    /// The connected upstream, if it is.
    pub fn current(&self) -> Option<Peer<RoleClient>> {
        self.peer.borrow().clone()
    }

    /// The connected upstream, waiting up to `wait` for a (re)connection.
    pub async fn peer(&self, wait: Duration) -> Option<Peer<RoleClient>> {
        let mut rx = self.peer.subscribe();
        let found = tokio::time::timeout(wait, rx.wait_for(Option::is_some)).await;
        match found {
            Ok(Ok(peer)) => peer.clone(),
            _ => None,
        }
    }

    /// Connects, lists, follows list changes; after a crash or a failed start waits
    /// with backoff and starts again.
    async fn supervise(self: Arc<Self>) {
        let mut backoff = Backoff::new(BACKOFF_MIN, BACKOFF_MAX);
        let mut single = self.single.clone();
        loop {
            let relay = match single.as_mut() {
                None => None,
                Some(rx) => match rx.wait_for(Option::is_some).await {
                    Ok(down) => down.clone().flatten().map(Relay::new),
                    // the client is gone: nothing to serve
                    Err(_) => return,
                },
            };
            let listener = Listener {
                tools_changed: Arc::new(Notify::new()),
                notices: self.notices.clone(),
                relay,
            };
            let started = Instant::now();
            match self.connect(listener.clone()).await {
                Ok(running) => {
                    let peer = running.peer().clone();
                    self.peer.send_replace(Some(peer.clone()));
                    info!(target_ = ?self.target, "upstream connected");
                    let waiting = running.waiting();
                    tokio::pin!(waiting);
                    loop {
                        match list_all(&peer).await {
                            Ok(tools) => {
                                self.tools.send_replace(Some(Arc::new(tools)));
                            }
                            Err(e) => warn!(error = %e, "upstream tools/list failed"),
                        }
                        tokio::select! {
                            () = listener.tools_changed.notified() => continue,
                            quit = &mut waiting => {
                                warn!(reason = ?quit, "upstream ended");
                                break;
                            }
                        }
                    }
                    self.peer.send_replace(None);
                }
                Err(e) => warn!(error = %e, target_ = ?self.target, "upstream failed to start"),
            }
            if started.elapsed() >= HEALTHY_AFTER {
                backoff.reset();
            }
            tokio::time::sleep(backoff.next_wait()).await;
        }
    }

    async fn connect(
        &self,
        listener: Listener,
    ) -> Result<rmcp::service::RunningService<RoleClient, Listener>, String> {
        connect(&self.target, listener).await
    }

    /// Where the upstream is: each downstream session opens its own connection there.
    pub fn target(&self) -> &Target {
        &self.target
    }
}

/// Every page of the upstream's tools/list.
async fn list_all(peer: &Peer<RoleClient>) -> Result<Vec<Tool>, String> {
    let tools = peer.list_all_tools().await.map_err(|e| e.to_string())?;
    if tools.len() > MAX_TOOLS {
        return Err(format!(
            "upstream lists {} tools, more than the limit of {MAX_TOOLS}",
            tools.len()
        ));
    }
    Ok(tools)
}
