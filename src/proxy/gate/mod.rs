//! The proxy's side of the toolgate server: decisions and one live view per principal
//! of the tools it may see, through the domain-typed client of `crate::grpc::client`.
//! The live views are kept in `view.rs`, the tool pins in `pins.rs`.

mod pins;
mod view;

use super::admission::{self, Admitted};
use super::names::DEFAULT_MAX_DESCRIPTION_BYTES;
use crate::grpc::client::{Client, ClientError, RemotePolicy};
use crate::policy::{
    Call, CompiledAdmin, CompiledUser, ToolActionList, ToolActionLists, decide_in,
};
use dashmap::DashMap;
use rmcp::model::Tool;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tracing::warn;

pub use crate::grpc::client::RemoteDecision;

/// Reconnect backoff of the watch streams (the policy's and the pins').
const BACKOFF_MIN: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(5);

/// Whose policy applies: the user a call is evaluated for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Who {
    pub team: String,
    pub user: String,
}

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
    /// Each principal's policy as last known, compiled, kept only with a staleness
    /// allowance: what calls are decided by while toolgate is unreachable.
    last: DashMap<Who, Arc<LastPolicy>>,
    approvals: super::ApprovalWait,
    /// This proxy's session id for "approve for the session" grants: one per process.
    session: String,
    /// Longer tool descriptions are cut ([`crate::proxy::names::cap_description`]).
    max_description_bytes: usize,
    /// Tool pinning, when on: where the pins are kept, each team's tools held back
    /// (and why), and a generation bumped when the pins change (an admin re-pinned:
    /// the pin file changed, or the server said so).
    pins: PinKeeper,
    held: DashMap<String, Arc<BTreeMap<String, Held>>>,
    /// The teams whose server pins are watched (one stream per team).
    pin_watches: DashMap<String, ()>,
    pins_moved: watch::Sender<u64>,
    /// Held so the pin file's poller runs as long as the gate lives.
    _pins_kept: watch::Receiver<u64>,
    /// The upstream as its identity is judged (none: not judged, in unit tests).
    target: Option<super::Target>,
    /// Each principal's verdict on the upstream, kept by `follow`.
    admitted: DashMap<Who, watch::Sender<Admitted>>,
}

/// Where the proxy's pins are kept.
pub enum PinKeeper {
    Off,
    /// In the toolgate server's store (`CheckTools`, `WatchPins`).
    Server,
    File(crate::proxy::pins::Pins),
}

/// Why a tool the upstream lists is held back: hidden, and its calls ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Held {
    /// Its definition differs from the pinned one.
    Changed,
    /// Not pinned, and this proxy's principal may not pin it first.
    NotPinned,
    /// The description checks flagged it and the team hides flagged tools.
    Flagged,
}

impl Held {
    /// The reason a call's ASK names.
    pub fn reason(self) -> &'static str {
        match self {
            Held::Changed => "TOOL_CHANGED",
            Held::NotPinned => "TOOL_NOT_PINNED",
            Held::Flagged => "TOOL_FLAGGED",
        }
    }
}

/// A principal's effective policy, compiled for local decisions.
struct LastPolicy {
    files: ToolActionLists,
    admin: CompiledAdmin,
    user: CompiledUser,
    revision: u64,
}

impl LastPolicy {
    fn compile(p: &RemotePolicy) -> Result<Self, String> {
        let lists = p
            .file_allowlists
            .iter()
            .map(|(server, patterns)| {
                ToolActionList::compile("file_allowlists", server, patterns)
                    .map_err(|problems| format!("{problems:?}"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            files: ToolActionLists::new(lists).map_err(|problems| format!("{problems:?}"))?,
            admin: CompiledAdmin::compile(&p.admin).map_err(|e| e.to_string())?,
            user: CompiledUser::compile(&p.user).map_err(|e| e.to_string())?,
            revision: p.revision,
        })
    }
}

impl Gate {
    /// Over `client`, connected lazily: an unreachable toolgate is a state the proxy
    /// lives with, not an error at start.
    pub fn new(
        client: Client,
        server_id: String,
        staleness: Duration,
        upstream: watch::Receiver<UpstreamTools>,
    ) -> Arc<Self> {
        let (pins_moved, _pins_kept) = watch::channel(0);
        Arc::new(Self {
            client,
            server_id,
            staleness,
            upstream,
            views: DashMap::new(),
            last: DashMap::new(),
            approvals: super::ApprovalWait::default(),
            session: format!("proxy-{}", std::process::id()),
            max_description_bytes: DEFAULT_MAX_DESCRIPTION_BYTES,
            pins: PinKeeper::Off,
            held: DashMap::new(),
            pin_watches: DashMap::new(),
            pins_moved,
            _pins_kept,
            target: None,
            admitted: DashMap::new(),
        })
    }

    /// Judges the upstream `target` by each principal's MCP servers by identity.
    #[must_use]
    pub fn with_target(self: Arc<Self>, target: super::Target) -> Arc<Self> {
        let mut gate = Arc::try_unwrap(self).unwrap_or_else(|_| unreachable!("not shared yet"));
        gate.target = Some(target);
        Arc::new(gate)
    }

    /// Whether the upstream may run for `who`, waiting up to `wait` for the first
    /// verdict; not known by then is a refusal (fail closed).
    pub async fn admitted(self: &Arc<Self>, who: &Who, wait: Duration) -> Result<(), String> {
        if self.target.is_none() {
            return Ok(());
        }
        let _view = self.view(who);
        let mut verdict = self
            .admitted
            .entry(who.clone())
            .or_insert_with(|| watch::channel(Admitted::Pending).0)
            .subscribe();
        let ready = tokio::time::timeout(wait, verdict.wait_for(|a| *a != Admitted::Pending)).await;
        let known = match ready {
            Ok(Ok(verdict)) => Some(verdict.clone()),
            _ => None,
        };
        match known {
            Some(Admitted::Yes) => Ok(()),
            Some(Admitted::No(why)) => Err(why),
            _ => Err(format!(
                "upstream server {}: the team policy that says whether it may run is not available yet",
                self.server_id
            )),
        }
    }

    /// Reads `who`'s policy and records its verdict on the upstream; whether it could
    /// be read.
    async fn judge(&self, who: &Who) -> bool {
        let Some(target) = &self.target else {
            return true;
        };
        let (verdict, read) = match self.client.effective_policy_as(&who.team, &who.user).await {
            Ok(p) => (
                admission::judge(&who.team, &self.server_id, target, &p),
                true,
            ),
            Err(e) => (
                Admitted::No(format!(
                    "upstream server {}: the team policy could not be read ({e}), so it does not run",
                    self.server_id
                )),
                false,
            ),
        };
        if let Admitted::No(why) = &verdict {
            warn!(team = %who.team, user = %who.user, server = %self.server_id, why = %why, "upstream refused for this principal");
        }
        self.set_admitted(who, verdict);
        read
    }

    fn set_admitted(&self, who: &Who, verdict: Admitted) {
        self.admitted
            .entry(who.clone())
            .or_insert_with(|| watch::channel(Admitted::Pending).0)
            .send_replace(verdict);
    }

    fn refused(&self, who: &Who) -> Option<String> {
        match &*self.admitted.get(who)?.borrow() {
            Admitted::No(why) => Some(why.clone()),
            _ => None,
        }
    }

    /// Cuts tool descriptions longer than `max` bytes.
    #[must_use]
    pub fn with_max_description(self: Arc<Self>, max: usize) -> Arc<Self> {
        match Arc::try_unwrap(self) {
            Ok(mut gate) => {
                gate.max_description_bytes = max;
                Arc::new(gate)
            }
            Err(shared) => shared,
        }
    }

    /// Takes part in central approvals as `approvals` says.
    #[must_use]
    pub fn with_approvals(self: Arc<Self>, approvals: super::ApprovalWait) -> Arc<Self> {
        let mut gate = Arc::try_unwrap(self).unwrap_or_else(|_| unreachable!("not shared yet"));
        gate.approvals = approvals;
        Arc::new(gate)
    }

    /// Waits (within the proxy's approval wait) for the answer to an ASK that went to
    /// the team's approvers; the decision as it was otherwise.
    pub async fn settle(&self, decision: RemoteDecision) -> RemoteDecision {
        match &decision.approval {
            Some(ticket) => {
                let give_up = tokio::time::Instant::now() + self.approvals.wait;
                self.client.await_answer(ticket, give_up).await
            }
            None => decision,
        }
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

    /// The decision for calling `tool` of the proxied server as `who`, with the call's
    /// seed 000 `action` argument if it names one: toolgate's, or while it is
    /// unreachable and the principal's tools are still shown (within the staleness
    /// allowed), the last known policy's.
    pub async fn evaluate(
        &self,
        who: &Who,
        tool: &str,
        action: Option<&str>,
    ) -> Result<RemoteDecision, ClientError> {
        let call = match action.filter(|a| !a.is_empty()) {
            Some(action) => Call::McpAction {
                server: self.server_id.clone(),
                tool: tool.to_owned(),
                action: action.to_owned(),
            },
            None => Call::Mcp {
                server: self.server_id.clone(),
                tool: tool.to_owned(),
            },
        };
        let asked = if self.approvals.wait.is_zero() {
            self.client.evaluate_as(&who.team, &who.user, &call).await
        } else {
            let ask = crate::grpc::client::ApprovalAsk {
                interactive: self.approvals.headless.then_some(false),
                client: "proxy".into(),
                session_id: self.session.clone(),
            };
            self.client
                .evaluate_waiting(&who.team, &who.user, &call, None, &ask)
                .await
        };
        let error = match asked {
            Ok(d) => return Ok(d),
            Err(e @ (ClientError::Unreachable { .. } | ClientError::Timeout { .. })) => e,
            Err(e) => return Err(e),
        };
        let shown = self
            .views
            .get(who)
            .is_some_and(|view| matches!(*view.borrow(), Visible::Tools { .. }));
        let last = self.last.get(who).map(|l| Arc::clone(&l));
        let (true, Some(last)) = (shown, last) else {
            return Err(error);
        };
        let d = decide_in(&last.files, &last.admin, &last.user, &call);
        // not audited by toolgate, which is away: the log is the record
        warn!(team = %who.team, user = %who.user, server = %self.server_id, tool, outcome = ?d.outcome, reason = d.reason.as_str(), revision = last.revision, error = %error, "decided from the last known policy");
        Ok(RemoteDecision {
            outcome: d.outcome,
            reason: d.reason.as_str().to_owned(),
            message: format!(
                "{} (decided by the last known policy, revision {}: toolgate is unreachable)",
                d.message(&call),
                last.revision
            ),
            revision: last.revision,
            approval: None,
            stays_inside: d.unchecked.stays_inside,
            effects_unknown: d.unchecked.effects_unknown,
        })
    }

    /// Keeps the principal's effective policy for local decisions, when a staleness
    /// is allowed; without one (or when it cannot be had) calls fail closed at once.
    async fn remember_policy(&self, who: &Who) {
        if self.staleness.is_zero() {
            return;
        }
        let fetched = self
            .client
            .effective_policy_as(&who.team, &who.user)
            .await
            .map_err(|e| e.to_string())
            .and_then(|p| LastPolicy::compile(&p));
        match fetched {
            Ok(last) => {
                self.last.insert(who.clone(), Arc::new(last));
            }
            Err(e) => {
                self.last.remove(who);
                warn!(team = %who.team, user = %who.user, error = %e, "last known policy not kept: calls fail closed while toolgate is unreachable");
            }
        }
    }
}
