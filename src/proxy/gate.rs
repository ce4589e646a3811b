//! The proxy's side of the toolgate server: decisions and one live view per principal
//! of the tools it may see, through the domain-typed client of `crate::grpc::client`.

use super::admission::{self, Admitted};
use crate::grpc::client::{
    Client, ClientError, PinStatus, PolicyNotice, RemotePolicy, ToolDefinition,
};
use crate::policy::{
    Call, CompiledAdmin, CompiledUser, ToolActionList, ToolActionLists, decide_in,
};
use dashmap::DashMap;
use rmcp::model::Tool;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;
use toolgate_core::backoff::Backoff;
use tracing::{debug, warn};

pub use crate::grpc::client::RemoteDecision;

/// How soon a policy that could not be read is read again to judge the upstream.
const JUDGE_RETRY: Duration = Duration::from_secs(1);

/// How often the pin file is looked at for an admin's re-pin.
const PIN_FILE_POLL: Duration = Duration::from_secs(1);

/// Reconnect backoff of the watch stream.
const BACKOFF_MIN: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(5);

/// Whether an upstream server's tool name may be shown and called: seed 001's name
/// rules, and nothing a glob, a log or a person would read otherwise than the
/// upstream meant (`get_a/../delete_repo` under `github:get_*`, `dеlete_repo` with a
/// Cyrillic `е`): no control, invisible or bidirectional character, no `/`, no
/// surrounding whitespace, no Latin letters mixed with Cyrillic or Greek ones. `Err`
/// says which rule it breaks.
pub fn check_upstream_name(name: &str) -> Result<(), &'static str> {
    use crate::policy::Rule;
    match crate::policy::validate_call_name(name) {
        Ok(()) => {}
        Err(Rule::Empty) => return Err("is empty"),
        Err(Rule::TooLong) => return Err("is longer than 256 characters"),
        Err(Rule::Whitespace) => return Err("is only whitespace"),
        Err(_) => return Err("holds `:` or `*`, or is the wildcard"),
    }
    if name.chars().any(char::is_control) {
        return Err("holds a control character");
    }
    if name.contains('/') {
        return Err("holds a `/`");
    }
    if name.trim() != name {
        return Err("starts or ends with whitespace");
    }
    if name.chars().any(is_bidi) {
        return Err("holds a bidirectional control character");
    }
    if name.chars().any(is_invisible) {
        return Err("holds an invisible character");
    }
    if mixes_scripts(name) {
        return Err("mixes Latin letters with Cyrillic or Greek ones");
    }
    Ok(())
}

/// Bidirectional embeddings, overrides, isolates and marks: they reorder what a
/// person reads.
fn is_bidi(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{61c}')
}

/// Characters that take no room: two names that read the same are different names.
fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{ad}' | '\u{34f}' | '\u{115f}' | '\u{1160}' | '\u{17b4}' | '\u{17b5}' | '\u{180b}'..='\u{180f}'
        | '\u{200b}'..='\u{200d}' | '\u{2060}'..='\u{2064}' | '\u{3164}' | '\u{fe00}'..='\u{fe0f}'
        | '\u{feff}' | '\u{ffa0}' | '\u{e0000}'..='\u{e007f}')
}

/// The scripts whose letters pass for Latin ones.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Script {
    Latin,
    Cyrillic,
    Greek,
}

fn script(c: char) -> Option<Script> {
    match c {
        'a'..='z' | 'A'..='Z' | '\u{c0}'..='\u{24f}' | '\u{1e00}'..='\u{1eff}' => {
            Some(Script::Latin)
        }
        '\u{400}'..='\u{52f}'
        | '\u{1c80}'..='\u{1c8f}'
        | '\u{2de0}'..='\u{2dff}'
        | '\u{a640}'..='\u{a69f}' => Some(Script::Cyrillic),
        '\u{370}'..='\u{3ff}' | '\u{1f00}'..='\u{1fff}' => Some(Script::Greek),
        _ => None,
    }
}

/// Whether `name` holds Latin letters and Cyrillic or Greek ones (a name wholly in
/// one script passes).
fn mixes_scripts(name: &str) -> bool {
    let mut seen: Option<Script> = None;
    for s in name.chars().filter_map(script) {
        match seen {
            None => seen = Some(s),
            Some(first) if first != s => return true,
            Some(_) => {}
        }
    }
    false
}

/// A tool description longer than `max` bytes, cut at a character boundary with a
/// marker saying so: an upstream's instructions to the model are bounded.
pub fn cap_description(text: &str, max: usize) -> Option<String> {
    if text.len() <= max {
        return None;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Some(format!(
        "{}… [cut by toolgate: the description is {} bytes, more than the proxy's {max}]",
        &text[..end],
        text.len()
    ))
}

/// The longest tool description the proxy passes on by default.
pub const DEFAULT_MAX_DESCRIPTION_BYTES: usize = 4096;

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
    /// Longer tool descriptions are cut ([`cap_description`]).
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
    File(super::pins::Pins),
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

    /// Pins tools as `pins` says; a pin file is looked at every `PIN_FILE_POLL` for
    /// an admin's re-pin, the server's pins are watched per team (`follow`).
    #[must_use]
    pub fn with_pins(self: Arc<Self>, pins: PinKeeper) -> Arc<Self> {
        let mut gate = Arc::try_unwrap(self).unwrap_or_else(|_| unreachable!("not shared yet"));
        let path = match &pins {
            PinKeeper::File(file) => file.path().to_path_buf(),
            PinKeeper::Off | PinKeeper::Server => {
                gate.pins = pins;
                return Arc::new(gate);
            }
        };
        gate.pins = pins;
        let moved = gate.pins_moved.clone();
        tokio::spawn(async move {
            let stamp = |p: &std::path::Path| {
                std::fs::metadata(p)
                    .ok()
                    .map(|m| (m.modified().ok(), m.len()))
            };
            let mut last = stamp(&path);
            loop {
                tokio::time::sleep(PIN_FILE_POLL).await;
                let now = stamp(&path);
                if now != last {
                    last = now;
                    moved.send_modify(|g| *g += 1);
                }
                if moved.is_closed() {
                    return;
                }
            }
        });
        Arc::new(gate)
    }

    /// Why `tool` is held back for `team`, if it is (as of the last check).
    pub fn held(&self, team: &str, tool: &str) -> Option<Held> {
        self.held.get(team).and_then(|h| h.get(tool).copied())
    }

    /// Whether the pins are kept in the server's store.
    pub fn pins_on_server(&self) -> bool {
        matches!(self.pins, PinKeeper::Server)
    }

    /// Watches `team`'s pins on the server (once per team, for the proxy's life):
    /// each change bumps `pins_moved`, so every view of the team is checked again.
    fn watch_pins(self: &Arc<Self>, team: &str) {
        if !self.pins_on_server() || self.pin_watches.insert(team.to_owned(), ()).is_some() {
            return;
        }
        let gate = Arc::clone(self);
        let team = team.to_owned();
        tokio::spawn(async move {
            let mut backoff = Backoff::new(BACKOFF_MIN, BACKOFF_MAX);
            loop {
                match gate.client.watch_pins(&team, &gate.server_id).await {
                    Ok(mut stream) => {
                        // (re)opened: a change may have been missed meanwhile
                        gate.pins_moved.send_modify(|g| *g += 1);
                        loop {
                            match stream.next().await {
                                Ok(Some(true)) => {
                                    backoff.reset();
                                    gate.pins_moved.send_modify(|g| *g += 1);
                                }
                                Ok(Some(false)) => backoff.reset(),
                                Ok(None) => break,
                                Err(e) => {
                                    warn!(team = %team, error = %e, "pin watch ended");
                                    break;
                                }
                            }
                        }
                    }
                    Err(e) => warn!(team = %team, error = %e, "pin watch refused"),
                }
                tokio::time::sleep(backoff.next_wait()).await;
            }
        });
    }

    /// What the pins hold back of `tools` for `team`: the file's or the server's
    /// answer. `Err` (nothing may be shown) when the pins cannot be read.
    async fn held_back(
        &self,
        team: &str,
        tools: &[Tool],
    ) -> Result<BTreeMap<String, Held>, String> {
        match &self.pins {
            PinKeeper::Off => Ok(BTreeMap::new()),
            PinKeeper::File(pins) => Ok(pins
                .check(team, tools)?
                .into_iter()
                .map(|name| (name, Held::Changed))
                .collect()),
            PinKeeper::Server => {
                let definitions: Vec<ToolDefinition> = tools
                    .iter()
                    .map(|t| ToolDefinition {
                        name: t.name.to_string(),
                        description: t.description.as_deref().map(str::to_owned),
                        input_schema: serde_json::Value::Object((*t.input_schema).clone()),
                    })
                    .collect();
                let checks = self
                    .client
                    .check_tools(team, &self.server_id, &definitions)
                    .await
                    .map_err(|e| format!("toolgate could not check the tools' pins: {e}"))?;
                let mut held = BTreeMap::new();
                for check in checks {
                    if !check.flags.is_empty() {
                        warn!(team = %team, server = %self.server_id, tool = %check.name, flags = ?check.flags, "upstream tool description flagged");
                    }
                    let why = match (check.status, check.shown) {
                        (PinStatus::Pinned, true) => continue,
                        (PinStatus::Pinned, false) => Held::Flagged,
                        (PinStatus::Changed, _) => Held::Changed,
                        (PinStatus::NotPinned, _) => Held::NotPinned,
                    };
                    held.insert(check.name, why);
                }
                Ok(held)
            }
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

    /// `FilterTools` over `tools` whose names are valid; sorted by name for a stable
    /// order.
    async fn filter(&self, who: &Who, tools: &[Tool]) -> Result<(Vec<Tool>, u64), String> {
        // names the proxy would hide anyway are not reported (nor pinned)
        let valid: Vec<Tool> = tools
            .iter()
            .filter(|t| check_upstream_name(&t.name).is_ok())
            .cloned()
            .collect();
        let held = Arc::new(self.held_back(&who.team, &valid).await?);
        self.held.insert(who.team.clone(), Arc::clone(&held));
        let tools: Vec<&Tool> = tools
            .iter()
            .filter(|t| {
                let why = held.get(t.name.as_ref());
                if let Some(why) = why {
                    warn!(team = %who.team, server = %self.server_id, tool = %t.name, reason = why.reason(), "upstream tool hidden by its pin");
                }
                why.is_none()
            })
            .filter(|t| match check_upstream_name(&t.name) {
                Ok(()) => true,
                Err(why) => {
                    warn!(server = %self.server_id, tool = ?t.name, why, "upstream tool hidden: its name is invalid");
                    false
                }
            })
            .collect();
        let tools = serde_json::json!({ "tools": tools });
        let filtered = self
            .client
            .filter_tools(&who.team, &who.user, &self.server_id, &tools)
            .await
            .map_err(|e| format!("toolgate refused or is unreachable: {e}"))?;
        #[derive(serde::Deserialize)]
        struct Listed {
            tools: Vec<Tool>,
        }
        let mut kept = serde_json::from_value::<Listed>(filtered.tools)
            .map_err(|e| format!("decode filtered tools: {e}"))?
            .tools;
        kept.sort_by(|a, b| a.name.cmp(&b.name));
        for tool in &mut kept {
            let cut = tool
                .description
                .as_deref()
                .and_then(|d| cap_description(d, self.max_description_bytes));
            if let Some(cut) = cut {
                warn!(server = %self.server_id, tool = %tool.name, "upstream tool description cut to the limit");
                tool.description = Some(cut.into());
            }
        }
        Ok((kept, filtered.revision))
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
        let mut pins_moved = self.pins_moved.subscribe();
        self.watch_pins(&who.team);
        // the policy generation the upstream was last judged at
        let mut judged = None;
        loop {
            pins_moved.borrow_and_update();
            let policy = *policy_rx.borrow_and_update();
            let tools = upstream.borrow_and_update().clone();
            let mut deadline = None;
            if let Some(Ok(generation)) = policy
                && judged != Some(generation)
            {
                if self.judge(&who).await {
                    judged = Some(generation);
                } else {
                    // read again shortly: a refusal stands meanwhile
                    deadline = Some(Instant::now() + JUDGE_RETRY);
                }
            }
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
                (Some(Ok(_)), _) if self.refused(&who).is_some() => {
                    self.refused(&who).map(Visible::Closed)
                }
                (Some(Ok(_)), None) => None,
                (Some(Ok(_)), Some(tools)) => Some(match self.filter(&who, &tools).await {
                    Ok((tools, revision)) => {
                        self.remember_policy(&who).await;
                        Visible::Tools {
                            tools: Arc::new(tools),
                            revision,
                        }
                    }
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
                r = pins_moved.changed() => if r.is_err() { break },
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
        let mut backoff = Backoff::new(BACKOFF_MIN, BACKOFF_MAX);
        let mut generation = 0u64;
        loop {
            match self.client.watch_policy(&who.team, &who.user, after).await {
                Ok(mut stream) => {
                    // open again: refilter even if nothing changed while it was down
                    generation += 1;
                    let _ = state.send(Some(Ok(generation)));
                    loop {
                        match stream.next().await {
                            Ok(Some(PolicyNotice::Heartbeat)) => backoff.reset(),
                            Ok(Some(PolicyNotice::Changed { revision })) => {
                                backoff.reset();
                                after = Some(revision);
                                generation += 1;
                                debug!(team = %who.team, user = %who.user, revision, "policy event");
                                let _ = state.send(Some(Ok(generation)));
                            }
                            Ok(None) => break,
                            Err(e) => {
                                warn!(team = %who.team, user = %who.user, error = %e, "policy watch ended");
                                break;
                            }
                        }
                    }
                }
                Err(e) => {
                    warn!(team = %who.team, user = %who.user, error = %e, "policy watch refused");
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
            tokio::time::sleep(backoff.next_wait()).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{cap_description, check_upstream_name};

    #[test]
    fn long_descriptions_are_cut_with_a_marker() {
        assert_eq!(cap_description("short", 10), None);
        let cut = cap_description(&"é".repeat(100), 11).unwrap();
        assert!(cut.starts_with("ééééé…"), "{cut}");
        assert!(cut.contains("200 bytes, more than the proxy's 11"), "{cut}");
    }

    /// A lying upstream: names that globs would read as something else, or that seed
    /// 001 refuses, are hidden and refused; honest names pass.
    #[test]
    fn upstream_names_are_checked() {
        let refused = [
            "get_a/../delete_repo",
            "get_a\0",
            "get_issue ",
            " get_issue",
            "get\nissue",
            "get\u{7f}issue",
            "",
            "   ",
            "*",
            "a:b",
            "get_*",
            "dele\u{200b}te_repo",
            "get_issue\u{feff}",
            "get_\u{202e}txt.exe",
            "get_\u{2066}x\u{2069}",
            "get\u{200e}issue",
            "d\u{435}lete_repo",
            "\u{3b1}pi_call",
            "get_\u{ad}issue",
        ];
        for name in refused {
            assert!(check_upstream_name(name).is_err(), "{name:?}");
        }
        assert!(check_upstream_name(&"x".repeat(257)).is_err());
        for name in [
            "get_issue",
            "create-issue",
            "interact",
            "é",
            "get issue",
            "a.b",
            "найти_задачу",
            "λόγος",
            "créer_ticket",
            "获取问题",
        ] {
            assert_eq!(check_upstream_name(name), Ok(()), "{name:?}");
        }
    }
}
