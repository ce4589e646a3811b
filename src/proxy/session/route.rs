//! Where a session's request goes upstream: its own connection once the client has
//! initialized (opened on demand, within the proxy's limit of upstream processes, and
//! given the log level and subscriptions again when reopened), or the shared one.

// logging and `resources/subscribe` are the older generation's, deprecated in rmcp
// for 2026-07-28, and what the proxy must relay
#![allow(deprecated)]

use super::{READY_WAIT, Route, Session, to_mcp};
use crate::proxy::relay;
use crate::proxy::target::Target;
use rmcp::ErrorData;
use rmcp::model::*;
use rmcp::service::{Peer, RequestContext, RoleClient, RoleServer};
use std::sync::Arc;

impl Session {
    /// The session's own connection once it has initialized (opened again after the
    /// upstream ended, with the log level and subscriptions the client had set), or
    /// the shared one.
    pub(super) async fn route(&self) -> Result<Route, ErrorData> {
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
            Target::Command(_) => Some(
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
            Target::Url(_) => None,
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
    pub(super) async fn relay(
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

    /// The shared upstream connection, once it is up (within `READY_WAIT`).
    async fn upstream(&self) -> Result<Peer<RoleClient>, ErrorData> {
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
}
