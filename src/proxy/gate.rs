//! The proxy's side of the toolgate server: a gRPC connection (small on purpose; to be
//! merged with the CLI's and the hooks' client module), decisions, and one live view
//! per principal of the tools it may see.

use super::ProxyError;
use crate::proto::v1 as pb;
use crate::proto::v1::policy_service_client::PolicyServiceClient;
use dashmap::DashMap;
use rmcp::model::Tool;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;
use tonic::metadata::MetadataValue;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, Endpoint};
use tracing::{debug, warn};

/// How long a gRPC call to toolgate may take before the proxy treats it as unreachable.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// Reconnect backoff of the watch stream.
const BACKOFF_MIN: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(5);

/// Whose policy applies: the user a call is evaluated for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Who {
    pub team: String,
    pub user: String,
}

/// Adds the bearer token to every call.
#[derive(Clone)]
pub struct Bearer(Option<MetadataValue<tonic::metadata::Ascii>>);

impl tonic::service::Interceptor for Bearer {
    fn call(&mut self, mut req: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(value) = &self.0 {
            req.metadata_mut().insert("authorization", value.clone());
        }
        Ok(req)
    }
}

type Client = PolicyServiceClient<InterceptedService<Channel, Bearer>>;

/// The tools one principal may see right now, or why none.
#[derive(Debug, Clone, PartialEq)]
pub enum Visible {
    /// Not known yet (the first policy snapshot or upstream listing has not arrived).
    Pending,
    /// Filtered by the policy at `revision`, sorted by name.
    Tools {
        tools: Arc<Vec<Tool>>,
        revision: u64,
    },
    /// Fail closed: nothing is visible, for this reason.
    Closed(String),
}

impl Visible {
    pub fn tools(&self) -> &[Tool] {
        match self {
            Visible::Tools { tools, .. } => tools,
            _ => &[],
        }
    }

    pub fn contains(&self, name: &str) -> bool {
        self.tools().iter().any(|t| t.name == name)
    }
}

/// The upstream's full tool list, as last fetched.
pub type UpstreamTools = Option<Arc<Vec<Tool>>>;

/// The connection to toolgate and the live views of the principals served.
pub struct Gate {
    client: Client,
    server_id: String,
    staleness: Duration,
    upstream: watch::Receiver<UpstreamTools>,
    views: DashMap<Who, watch::Receiver<Visible>>,
}

impl Gate {
    /// Connects lazily: an unreachable toolgate is a state the proxy lives with, not an
    /// error at start.
    pub fn new(
        server: &str,
        token: Option<&str>,
        server_id: String,
        staleness: Duration,
        upstream: watch::Receiver<UpstreamTools>,
    ) -> Result<Arc<Self>, ProxyError> {
        // `127.0.0.1:7070` is what `serve --listen` takes: accept it here too
        let address = if server.contains("://") {
            server.to_owned()
        } else {
            format!("http://{server}")
        };
        let endpoint = Endpoint::from_shared(address)
            .map_err(|e| {
                ProxyError::Config(format!(
                    "server: {server:?} is not a url: {e}; give e.g. http://127.0.0.1:7070"
                ))
            })?
            .connect_timeout(Duration::from_secs(5))
            .timeout(CALL_TIMEOUT)
            .http2_keep_alive_interval(Duration::from_secs(20))
            .keep_alive_while_idle(true);
        let bearer = match token {
            Some(t) => Some(
                format!("Bearer {}", t.trim())
                    .parse()
                    .map_err(|_| ProxyError::Config("token: not a valid header value; give the token as printed by `toolgate new-token`".into()))?,
            ),
            None => None,
        };
        let channel = endpoint.connect_lazy();
        Ok(Arc::new(Self {
            client: PolicyServiceClient::with_interceptor(channel, Bearer(bearer)),
            server_id,
            staleness,
            upstream,
            views: DashMap::new(),
        }))
    }

    /// The MCP server id the proxied tools belong to.
    pub fn server_id(&self) -> &str {
        &self.server_id
    }

    /// The live view of `who`, started on first use and kept for the proxy's life
    /// (principals come from configuration, so they are few).
    pub fn view(self: &Arc<Self>, who: &Who) -> watch::Receiver<Visible> {
        if let Some(view) = self.views.get(who) {
            return view.clone();
        }
        self.views
            .entry(who.clone())
            .or_insert_with(|| {
                let (tx, rx) = watch::channel(Visible::Pending);
                tokio::spawn(Arc::clone(self).follow(who.clone(), tx));
                rx
            })
            .clone()
    }

    /// The decision for calling `tool` of the proxied server as `who`.
    pub async fn evaluate(&self, who: &Who, tool: &str) -> Result<pb::Decision, tonic::Status> {
        let request = pb::EvaluateRequest {
            team_id: who.team.clone(),
            user_id: who.user.clone(),
            call: Some(pb::ToolCall {
                kind: Some(pb::tool_call::Kind::Mcp(pb::McpCall {
                    server: self.server_id.clone(),
                    tool: tool.to_owned(),
                    action: String::new(),
                })),
                arguments: None,
            }),
            explain: false,
            agent: None,
        };
        Ok(self.client.clone().evaluate(request).await?.into_inner())
    }

    /// `FilterTools` over `tools`; sorted by name for a stable order.
    async fn filter(&self, who: &Who, tools: &[Tool]) -> Result<(Vec<Tool>, u64), String> {
        let tools_json = serde_json::to_string(&serde_json::json!({ "tools": tools }))
            .map_err(|e| format!("encode tools: {e}"))?;
        let response = self
            .client
            .clone()
            .filter_tools(pb::FilterToolsRequest {
                team_id: who.team.clone(),
                user_id: who.user.clone(),
                server: self.server_id.clone(),
                tools_json,
            })
            .await
            .map_err(|s| format!("toolgate refused or is unreachable: {}", s.message()))?
            .into_inner();
        #[derive(serde::Deserialize)]
        struct Listed {
            tools: Vec<Tool>,
        }
        let mut kept = serde_json::from_str::<Listed>(&response.tools_json)
            .map_err(|e| format!("decode filtered tools: {e}"))?
            .tools;
        kept.sort_by(|a, b| a.name.cmp(&b.name));
        Ok((kept, response.revision))
    }

    /// Keeps `who`'s view current: watches the policy, refilters on every change of
    /// policy or upstream list, fails closed while toolgate is unreachable (after the
    /// configured staleness).
    async fn follow(self: Arc<Self>, who: Who, view: watch::Sender<Visible>) {
        // Ok(generation), bumped on every policy event; Err(since when the stream has
        // been down); None before the first attempt has ended.
        let (policy_tx, mut policy_rx) = watch::channel::<Option<Result<u64, Instant>>>(None);
        let watcher = tokio::spawn(Arc::clone(&self).watch_policy(who.clone(), policy_tx));
        let mut upstream = self.upstream.clone();
        loop {
            let policy = *policy_rx.borrow_and_update();
            let tools = upstream.borrow_and_update().clone();
            let mut deadline = None;
            let next = match (policy, tools) {
                (None, _) => None,
                (Some(Err(since)), _) => {
                    let until = since + self.staleness;
                    if Instant::now() < until && matches!(*view.borrow(), Visible::Tools { .. }) {
                        deadline = Some(until);
                        None
                    } else {
                        Some(Visible::Closed(
                            "toolgate is unreachable: no tool is shown until it is back".into(),
                        ))
                    }
                }
                (Some(Ok(_)), None) => None,
                (Some(Ok(_)), Some(tools)) => Some(match self.filter(&who, &tools).await {
                    Ok((tools, revision)) => Visible::Tools {
                        tools: Arc::new(tools),
                        revision,
                    },
                    Err(e) => {
                        warn!(team = %who.team, user = %who.user, error = %e, "filter failed: no tool shown");
                        Visible::Closed(e)
                    }
                }),
            };
            if let Some(next) = next {
                view.send_if_modified(|current| {
                    let same = match (&*current, &next) {
                        (Visible::Tools { tools: a, .. }, Visible::Tools { tools: b, .. }) => {
                            a == b
                        }
                        (Visible::Closed(_), Visible::Closed(_)) => true,
                        _ => false,
                    };
                    // a change of revision alone is not a change of the list
                    *current = next;
                    !same
                });
            }
            let sleep = async {
                match deadline {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                r = policy_rx.changed() => if r.is_err() { break },
                r = upstream.changed() => if r.is_err() { break },
                () = sleep => {}
                () = view.closed() => break,
            }
        }
        watcher.abort();
    }

    /// WatchPolicy for `who`, reconnecting with backoff and resuming after the last
    /// revision seen.
    async fn watch_policy(
        self: Arc<Self>,
        who: Who,
        state: watch::Sender<Option<Result<u64, Instant>>>,
    ) {
        let mut after = None;
        let mut backoff = BACKOFF_MIN;
        let mut generation = 0u64;
        loop {
            let request = pb::WatchPolicyRequest {
                team_id: who.team.clone(),
                user_id: who.user.clone(),
                after_revision: after,
            };
            // the stream is long-lived: no per-call timeout on it
            let mut client = self.client.clone();
            let mut req = tonic::Request::new(request);
            req.set_timeout(Duration::from_secs(365 * 24 * 3600));
            match client.watch_policy(req).await {
                Ok(stream) => {
                    // open again: refilter even if nothing changed while it was down
                    generation += 1;
                    let _ = state.send(Some(Ok(generation)));
                    let mut stream = stream.into_inner();
                    loop {
                        match stream.message().await {
                            Ok(Some(event)) => {
                                backoff = BACKOFF_MIN;
                                if matches!(
                                    event.event,
                                    Some(pb::policy_event::Event::Heartbeat(_))
                                ) {
                                    continue;
                                }
                                after = Some(event.revision);
                                generation += 1;
                                debug!(team = %who.team, user = %who.user, revision = event.revision, "policy event");
                                let _ = state.send(Some(Ok(generation)));
                            }
                            Ok(None) => break,
                            Err(status) => {
                                warn!(team = %who.team, user = %who.user, code = ?status.code(), message = status.message(), "policy watch ended");
                                break;
                            }
                        }
                    }
                }
                Err(status) => {
                    warn!(team = %who.team, user = %who.user, code = ?status.code(), message = status.message(), "policy watch refused");
                }
            }
            state.send_if_modified(|s| {
                if matches!(s, Some(Err(_))) {
                    false
                } else {
                    *s = Some(Err(Instant::now()));
                    true
                }
            });
            if state.is_closed() {
                return;
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(BACKOFF_MAX);
        }
    }
}
