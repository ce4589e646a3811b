//! The decision log in the service: each decision becomes a record (sampled for
//! ALLOW, handed to the writer off the decision path), records are listed and followed
//! within the caller's scope, and a team's logged calls are decided again under
//! proposed controls (the impact preview).
//!
//! A record keeps a command line or path, its secrets masked ([`Shown`]), whole up to
//! `decision_log.max_stored_command_bytes`, because the impact preview must decide the
//! call again; it hands out only an excerpt with the length and SHA-256, as the DENY
//! audit records do, to admins as to members: the whole text stays in the store.

use super::decision_log::record::{Record, excerpt};
use super::settings::check_org_doc;
use super::{Service, ServiceError, check_id};
use crate::auth::{Action, ORG_TEAM, Principal, Role, authorize};
use crate::config::DecisionLogConfig;
use crate::hub::{DecisionsCommitted, Hub};
use crate::policy::group_set::GroupSet;
use crate::policy::groups::{GroupPolicies, GroupedAdmin};
use crate::policy::roles::{self, AgentSpec, CallArgs};
use crate::policy::{
    self, AdminControls, Call, CompiledAdmin, CompiledUser, Outcome, PolicyError, Reason,
    ToolActionLists,
};
use crate::secrets;
use crate::store::{
    DecisionQuery, EFFECTS_UNKNOWN_SEPARATOR, NewDecision, PackedDecision, Retention, Store,
    StoredDecision, TEXT_COUNT,
};
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

/// Records one page holds when the caller names no size, and at most.
pub const DEFAULT_PAGE: u32 = 100;
pub const MAX_PAGE: u32 = 1000;
/// The longest tool or command prefix a filter may give.
pub const MAX_PREFIX_BYTES: usize = 1024;
/// The longest client name a request may give.
pub const MAX_CLIENT_BYTES: usize = 32;
/// The impact preview's window when none is given, and the longest.
pub const DEFAULT_WINDOW: Duration = Duration::from_secs(7 * 24 * 3600);
pub const MAX_WINDOW: Duration = Duration::from_secs(90 * 24 * 3600);
/// Examples per group when none is asked for, and the most.
pub const DEFAULT_EXAMPLES: usize = 3;
pub const MAX_EXAMPLES: usize = 20;

/// Where a decision was asked for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, strum::IntoStaticStr, strum::EnumString)]
#[strum(serialize_all = "snake_case")]
pub enum DecisionSource {
    #[default]
    Evaluate,
    EvaluateBatch,
    FilterTools,
    /// An approver's answer to an approval request, or a grant that let an ASK run.
    Approval,
}

impl DecisionSource {
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    pub fn parse(s: &str) -> Option<Self> {
        s.parse().ok()
    }
}

/// Where a request came from, for its records.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Origin {
    pub source: DecisionSource,
    /// The agent client, as the request named it (checked by [`check_client`]).
    pub client: String,
    /// The client's own id for the call (Claude Code's `tool_use_id`), empty when
    /// it sent none (checked by [`check_tool_use_id`]).
    pub tool_use_id: String,
}

/// The client `toolgate hook check` names for its sample call: a check of the
/// installation, not an agent's call, so its ALLOW or ASK is kept out of the decision
/// log (a DENY is still recorded, as every DENY is).
pub const CHECK_CLIENT: &str = "hook-check";

impl Origin {
    /// Whether the request only checks an installation (its ALLOW or ASK unrecorded).
    pub fn is_check(&self) -> bool {
        self.client == CHECK_CLIENT
    }
}

/// A request's `client`: empty, or lowercase letters, digits and `-`, at most
/// `MAX_CLIENT_BYTES` (32).
pub fn check_client(client: &str) -> Result<(), ServiceError> {
    let ok = client.len() <= MAX_CLIENT_BYTES
        && client
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(ServiceError::invalid(
            "client",
            format!(
                "{:?} is not a client name: use lowercase letters, digits and `-`, at most {MAX_CLIENT_BYTES} bytes (e.g. claude-code), or leave it empty",
                excerpt(client)
            ),
        ))
    }
}

/// The longest `tool_use_id` a request may name.
pub const MAX_TOOL_USE_ID_BYTES: usize = 256;

/// A request's `tool_use_id`: empty, or printable ASCII without spaces, at most
/// `MAX_TOOL_USE_ID_BYTES` (256). The clients' ids (`toolu_01…`, `call_…`) are; the rule
/// keeps control characters and look-alikes out of the log that shows it.
pub fn check_tool_use_id(id: &str) -> Result<(), ServiceError> {
    if id.len() <= MAX_TOOL_USE_ID_BYTES && id.bytes().all(|b| b.is_ascii_graphic()) {
        Ok(())
    } else {
        Err(ServiceError::invalid(
            "tool_use_id",
            format!(
                "{:?} is not a tool-use id: use printable ASCII without spaces, at most {MAX_TOOL_USE_ID_BYTES} bytes (the client's own id, e.g. toolu_01…), or leave it empty",
                excerpt(id)
            ),
        ))
    }
}

/// The stable name of an outcome, as records keep it.
pub fn outcome_name(o: Outcome) -> &'static str {
    o.as_str()
}

pub fn parse_outcome(s: &str) -> Option<Outcome> {
    s.parse().ok()
}

pub fn parse_reason(s: &str) -> Option<Reason> {
    s.parse().ok()
}

/// What a filter selects, before the caller's scope is applied.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DecisionFilter {
    pub team_id: String,
    pub user_id: String,
    pub agent_id: String,
    pub outcome: Option<Outcome>,
    pub reason: Option<Reason>,
    pub tool_prefix: String,
    pub command_prefix: String,
    pub since_ms: Option<i64>,
    pub until_ms: Option<i64>,
}

/// One page of records and the token of the next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecisionPage {
    pub decisions: Vec<StoredDecision>,
    /// What the clients reported doing with the calls, by record id (their own
    /// telemetry, joined by the client's id for the call).
    pub client_decisions: std::collections::HashMap<u64, crate::store::ClientDecision>,
    /// Empty when there is no further page.
    pub next_page_token: String,
}

/// An item of a decision watch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecisionEvent {
    Decision(Box<StoredDecision>),
    /// This many records were not sent: the subscriber fell behind, or another
    /// replica's could not be read (0: how many is not known, its notices were missed).
    Lagged(u64),
    /// A client's report of what it did with a call, as it arrived here.
    ClientDecision(Box<crate::store::ClientDecision>),
}

/// A live stream of records matching a filter, within the caller's scope.
#[derive(Debug)]
pub struct DecisionWatch {
    query: DecisionQuery,
    /// This replica's records, as its writer stores them.
    rx: broadcast::Receiver<Arc<StoredDecision>>,
    /// Other replicas' records, as [`relay`] reads them.
    relayed: broadcast::Receiver<Relayed>,
    /// The clients' reports this replica receives.
    pub(super) reports: broadcast::Receiver<Arc<crate::store::ClientDecision>>,
    shutdown: CancellationToken,
}

impl DecisionWatch {
    /// The next matching record, word of a lag, or `None` once the server stops.
    pub async fn next(&mut self) -> Option<DecisionEvent> {
        loop {
            let received = tokio::select! {
                () = self.shutdown.cancelled() => return None,
                received = self.rx.recv() => received.map(Relayed::Record),
                received = self.relayed.recv() => received,
                report = self.reports.recv() => match report {
                    // the caller's scope: its team, and its own user for a member
                    Ok(r) if self.query.team_id.as_deref().is_none_or(|t| t == r.team_id)
                        && self.query.user_id.as_deref().is_none_or(|u| u == r.user_id) =>
                    {
                        return Some(DecisionEvent::ClientDecision(Box::new((*r).clone())));
                    }
                    Ok(_) => continue,
                    Err(broadcast::error::RecvError::Lagged(n)) => {
                        return Some(DecisionEvent::Lagged(n));
                    }
                    Err(broadcast::error::RecvError::Closed) => continue,
                },
            };
            match received {
                Ok(Relayed::Record(record)) if self.query.matches(&record.decision) => {
                    return Some(DecisionEvent::Decision(Box::new(handed_out(&record))));
                }
                Ok(Relayed::Record(_)) => {}
                Ok(Relayed::Missed(n)) | Err(broadcast::error::RecvError::Lagged(n)) => {
                    return Some(DecisionEvent::Lagged(n));
                }
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }
}

/// How many calls change from one outcome to another, in one group.
#[derive(Debug, Clone, PartialEq)]
pub struct ImpactGroup {
    pub from: Outcome,
    pub to: Outcome,
    /// `server:tool`, a command's first words, or `delete_file`; empty for the
    /// from→to total.
    pub key: String,
    pub count: u64,
    pub examples: Vec<ImpactExample>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ImpactExample {
    pub record: StoredDecision,
    pub new_reason: Reason,
    pub new_matched_entry: Option<String>,
}

/// What proposed controls would change among a team's logged calls.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Impact {
    pub decided: u64,
    pub unchanged: u64,
    pub changed: u64,
    /// Records that cannot be decided again (their command was kept cut short, or
    /// an agent's write tool, whose files were not kept).
    pub unknown: u64,
    /// Calls the proposal would ALLOW resting on programs whose effects toolgate
    /// does not know (no row of its table, or a code runner): what they run, write
    /// or delete would go unchecked.
    pub effects_unknown: u64,
    pub transitions: Vec<ImpactGroup>,
    pub groups: Vec<ImpactGroup>,
    pub revision: u64,
    pub window_start_ms: i64,
    pub window_end_ms: i64,
    /// Why the preview stopped before the window's oldest record, when it did: only
    /// the newest were decided again.
    pub cut_short: Option<CutShort>,
    /// For a change to the organisation's group policies: each team with logged
    /// calls of a member of a changed group, its own impact (the fields above are
    /// their sums); empty for a team's preview.
    pub teams: Vec<TeamImpact>,
}

/// One team's part of an organisation-wide preview.
#[derive(Debug, Clone, PartialEq)]
pub struct TeamImpact {
    pub team_id: String,
    pub impact: Impact,
}

/// Why an impact preview stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CutShort {
    /// The window held more than `decision_log.preview_max_records`.
    Records,
    /// It ran past `decision_log.preview_max_ms`.
    Time,
}

/// The teams whose impact preview is running, and the places on the blocking pool
/// previews share: half the cores (at least one), so however many teams preview at
/// once, the other half stays free for decisions.
#[derive(Debug)]
pub(super) struct Previews(
    std::sync::Mutex<std::collections::HashSet<String>>,
    tokio::sync::Semaphore,
);

impl Default for Previews {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        Self(
            Default::default(),
            tokio::sync::Semaphore::new((cores / 2).max(1)),
        )
    }
}

/// A team's place in [`Previews`], held while its preview runs.
pub(super) struct PreviewSlot<'a> {
    running: &'a Previews,
    team: String,
}

impl<'a> PreviewSlot<'a> {
    /// The team's place, or a refusal when one of its previews is running: a second
    /// is refused at once rather than queued, so previews cannot pile up.
    pub(super) fn take(running: &'a Previews, team: &str) -> Result<Self, ServiceError> {
        let mut teams = running
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !teams.insert(team.to_owned()) {
            return Err(ServiceError::ResourceExhausted(format!(
                "an impact preview of team {team:?} is already running: wait for its answer, then preview again"
            )));
        }
        Ok(Self {
            running,
            team: team.to_owned(),
        })
    }
}

impl Drop for PreviewSlot<'_> {
    fn drop(&mut self) {
        self.running
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&self.team);
    }
}

/// Set when the preview's caller goes away (its future is dropped): the page being
/// decided on the blocking pool stops at its next record.
pub(super) struct CancelOnDrop(pub(super) Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// What a preview carries from page to page (moved to the blocking pool and back).
pub(super) struct PreviewRun {
    pub(super) impact: Impact,
    pub(super) tally: Tally,
    pub(super) users: HashMap<String, super::Effective>,
    /// None: the team's controls as they are (an organisation-wide preview).
    pub(super) proposed_admin: Option<CompiledAdmin>,
    pub(super) proposed_defaults: Option<CompiledUser>,
    /// The proposal combined with each set of groups records were decided under
    /// (None: none of them has a policy in it), as `Evaluate` combines them.
    pub(super) proposed: AdminControls,
    /// The organisation's group policies proposed (None: those in force).
    pub(super) proposed_org: Option<Arc<GroupPolicies>>,
    pub(super) proposed_grouped: HashMap<String, Result<Option<Arc<GroupedAdmin>>, PolicyError>>,
    pub(super) seen: u64,
}

impl PreviewRun {
    /// Decides one page of records again, newest first, within the budget; `false`
    /// once the preview must stop (a budget reached, or the caller gone).
    pub(super) fn page(
        &mut self,
        page: Vec<StoredDecision>,
        max_records: u64,
        deadline: Instant,
        cancelled: &AtomicBool,
    ) -> bool {
        for (i, record) in page.into_iter().enumerate() {
            if self.seen == max_records {
                self.impact.cut_short = Some(CutShort::Records);
                return false;
            }
            // the clock is read every few records: a record takes microseconds
            if i % 32 == 0 {
                if cancelled.load(Ordering::Relaxed) {
                    return false;
                }
                if Instant::now() >= deadline {
                    self.impact.cut_short = Some(CutShort::Time);
                    return false;
                }
            }
            self.seen += 1;
            self.impact.decided += 1;
            let Some(call) = stored_call(&record.decision) else {
                self.impact.unknown += 1;
                continue;
            };
            let Some(eff) = self.users.get(&record.decision.user_id) else {
                self.impact.unknown += 1;
                continue;
            };
            let user_now = &eff.user.compiled;
            // a user who never wrote settings of their own decides with the
            // team's defaults, which the proposal may change too
            let user_then = match (&self.proposed_defaults, eff.user.stored.revision) {
                (Some(defaults), 0) => defaults,
                _ => user_now,
            };
            let files = &eff.tool_actions;
            // a call decided under group policies is decided again under the same
            // groups' policies, now and in the proposal
            let groups = GroupSet::new(
                record
                    .decision
                    .groups
                    .split(',')
                    .filter(|g| !g.is_empty())
                    .map(str::to_owned)
                    .collect(),
            );
            let Ok(now) = eff.admin.compiled.for_groups(&eff.org, &groups) else {
                self.impact.unknown += 1;
                continue;
            };
            let proposed = &self.proposed;
            let then = self
                .proposed_grouped
                .entry(record.decision.groups.clone())
                .or_insert_with(|| {
                    let org = self.proposed_org.as_deref().unwrap_or(&eff.org.policies);
                    let says = groups
                        .iter()
                        .any(|g| proposed.groups.contains_key(g) || org.contains_key(g));
                    says.then(|| GroupedAdmin::compile_in(proposed, org, &groups).map(Arc::new))
                        .transpose()
                });
            let Ok(then) = then else {
                self.impact.unknown += 1;
                continue;
            };
            let admin_now = now.as_deref().map_or(&*eff.admin.compiled, |g| &g.compiled);
            let proposed_admin = self.proposed_admin.as_ref().unwrap_or(&*eff.admin.compiled);
            let admin_then = then.as_deref().map_or(proposed_admin, |g| &g.compiled);
            let (before, _) = redecide(files, admin_now, user_now, &record, &call);
            let (after, unchecked) = redecide(files, admin_then, user_then, &record, &call);
            if after.0 == Outcome::Allow && unchecked {
                self.impact.effects_unknown += 1;
            }
            if before.0 == after.0 {
                self.impact.unchanged += 1;
            } else {
                self.impact.changed += 1;
                self.tally.add(before.0, after, &record);
            }
        }
        true
    }
}

impl Service {
    /// A place on the blocking pool for a preview: another team's preview may hold
    /// them, so it waits within the time budget (None: the budget ran out).
    pub(super) async fn preview_place(
        &self,
        deadline: Instant,
    ) -> Result<Option<tokio::sync::SemaphorePermit<'_>>, ServiceError> {
        let wait = tokio::time::Instant::from_std(deadline);
        match tokio::time::timeout_at(wait, self.previews.1.acquire()).await {
            Ok(place) => Ok(Some(place.map_err(|_| {
                ServiceError::Internal("the impact preview's places were closed".into())
            })?)),
            Err(_) => Ok(None),
        }
    }

    /// The decision log's settings.
    pub fn decision_log(&self) -> &DecisionLogConfig {
        &self.decision_log
    }

    /// The record of one decision, or `None` when the log is off or an ALLOW is not
    /// sampled.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn decision_record<'a>(
        &self,
        p: &'a Principal,
        team: &'a str,
        user: &'a str,
        agent: &'a AgentSpec,
        origin: &'a Origin,
        revision: u64,
        call: &'a Shown<'a>,
        (outcome, reason, matched): (Outcome, Reason, Option<&'a str>),
    ) -> Option<DecisionRecord<'a>> {
        let log = &self.decision_log;
        if !log.enabled {
            return None;
        }
        if outcome == Outcome::Allow
            && log.allow_sample_rate < 1.0
            && rand::random::<f64>() >= log.allow_sample_rate
        {
            return None;
        }
        Some(DecisionRecord {
            at_ms: super::now_ms(),
            revision,
            team,
            user,
            principal: &p.name,
            agent_id: agent.id.as_deref().unwrap_or_default(),
            role: agent.role.as_deref().unwrap_or_default(),
            client: &origin.client,
            source: origin.source.as_str(),
            described: describe_call(call, log.max_stored_command_bytes),
            outcome: outcome_name(outcome),
            reason: reason.as_str(),
            matched: matched.unwrap_or_default(),
            // the groups the call was decided under (no allocation for none)
            groups: super::decide::caller_groups(p, team, user).join(","),
            effects_unknown: String::new(),
            cwd: "",
            tool_use_id: &origin.tool_use_id,
        })
    }

    /// Hands a decision's record to the writer: a DENY's waits for room with its
    /// audit record (never shed), an ALLOW's or ASK's is offered and shed when the
    /// log's queue is full.
    pub(super) async fn log_decision(&self, record: DecisionRecord<'_>, deny: bool) {
        if deny {
            self.audit
                .record_deny(vec![Record::Decision {
                    decision: record.packed(),
                }])
                .await;
        } else {
            self.audit.offer(
                record.at_ms,
                record.texts(),
                record.described.subject_bytes,
                record.revision,
            );
        }
    }

    /// One record per tool a `tools/list` decided.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn log_listing(
        &self,
        p: &Principal,
        team: &str,
        user: &str,
        origin: &Origin,
        revision: u64,
        server: &str,
        decided: &[policy::ListedTool],
    ) {
        // the listing's DENY records are journaled together: one wait, not one a tool
        let mut denied = Vec::new();
        for tool in decided {
            let call = Call::Mcp {
                server: server.to_owned(),
                tool: tool.name.clone(),
            };
            let call = Shown::of(&call);
            let agent = AgentSpec::default();
            let decided = (tool.outcome, tool.reason, tool.matched_entry.as_deref());
            let Some(record) =
                self.decision_record(p, team, user, &agent, origin, revision, &call, decided)
            else {
                continue;
            };
            if tool.outcome == Outcome::Deny {
                denied.push(Record::Decision {
                    decision: record.packed(),
                });
            } else {
                self.log_decision(record, false).await;
            }
        }
        if !denied.is_empty() {
            self.audit.record_deny(denied).await;
        }
    }

    /// The team and user a listing or a watch may see, checked: a member only its own
    /// calls, an admin its team, an operator the team it names.
    fn decision_scope(
        &self,
        p: &Principal,
        filter: &DecisionFilter,
    ) -> Result<DecisionQuery, ServiceError> {
        let team = match (filter.team_id.as_str(), p.team.as_deref()) {
            ("", Some(own)) => own.to_owned(),
            ("", None) => {
                return Err(ServiceError::invalid(
                    "filter.team_id",
                    "must be set for an operator: name the team whose decisions to list",
                ));
            }
            (team, _) => team.to_owned(),
        };
        let team = check_id("filter.team_id", &team)?.into_owned();
        let mut user = (!filter.user_id.is_empty())
            .then(|| check_id("filter.user_id", &filter.user_id).map(|u| u.into_owned()))
            .transpose()?;
        if p.role == Role::Member && user.is_none() {
            // a member's listing is of its own calls
            user = p.user.clone();
        }
        authorize(p, &team, Action::ReadDecisions(user.as_deref()))?;
        let agent = (!filter.agent_id.is_empty())
            .then(|| check_id("filter.agent_id", &filter.agent_id).map(|a| a.into_owned()))
            .transpose()?;
        for (field, prefix) in [
            ("filter.tool_prefix", &filter.tool_prefix),
            ("filter.command_prefix", &filter.command_prefix),
        ] {
            if prefix.len() > MAX_PREFIX_BYTES {
                return Err(ServiceError::invalid(
                    field,
                    format!(
                        "is {} bytes, more than the limit of {MAX_PREFIX_BYTES}: give a shorter prefix",
                        prefix.len()
                    ),
                ));
            }
        }
        if let (Some(since), Some(until)) = (filter.since_ms, filter.until_ms)
            && since >= until
        {
            return Err(ServiceError::invalid(
                "filter.until",
                "is not after filter.since: give a time range that is not empty",
            ));
        }
        let non_empty = |s: &str| (!s.is_empty()).then(|| s.to_owned());
        Ok(DecisionQuery {
            team_id: Some(team),
            user_id: user,
            agent_id: agent,
            outcome: filter.outcome.map(|o| outcome_name(o).to_owned()),
            reason: filter.reason.map(|r| r.as_str().to_owned()),
            tool_prefix: non_empty(&filter.tool_prefix),
            command_prefix: non_empty(&filter.command_prefix),
            since_ms: filter.since_ms,
            until_ms: filter.until_ms,
            before: None,
            limit: 0,
        })
    }

    /// One page of the log, newest first. The page token is a keyset on (time, id)
    /// bound to the filter, so records written meanwhile never shift later pages.
    pub async fn list_decisions(
        &self,
        p: &Principal,
        filter: &DecisionFilter,
        page_size: u32,
        page_token: &str,
    ) -> Result<DecisionPage, ServiceError> {
        let mut query = self.decision_scope(p, filter)?;
        if page_size > MAX_PAGE {
            return Err(ServiceError::invalid(
                "page_size",
                format!("{page_size} is more than {MAX_PAGE}: ask for fewer and page"),
            ));
        }
        let size = if page_size == 0 {
            DEFAULT_PAGE
        } else {
            page_size
        };
        let fingerprint = fingerprint(&query);
        if !page_token.is_empty() {
            query.before = Some(parse_token(page_token, &fingerprint)?);
        }
        query.limit = size + 1;
        let mut records = self.store.list_decisions(&query).await?;
        let more = records.len() > size as usize;
        records.truncate(size as usize);
        let next_page_token = match (more, records.last()) {
            (true, Some(last)) => make_token(last.decision.at_ms, last.id, &fingerprint),
            _ => String::new(),
        };
        let client_decisions = self.joined_client_decisions(&records).await?;
        Ok(DecisionPage {
            decisions: records.iter().map(handed_out).collect(),
            client_decisions,
            next_page_token,
        })
    }

    /// Records matching `filter` as they are written, within the caller's scope.
    pub fn watch_decisions(
        &self,
        p: &Principal,
        filter: &DecisionFilter,
    ) -> Result<DecisionWatch, ServiceError> {
        let query = self.decision_scope(p, filter)?;
        Ok(DecisionWatch {
            query,
            rx: self.audit.subscribe(),
            relayed: self.relayed.subscribe(),
            reports: self.client_reports.subscribe(),
            shutdown: self.shutdown.clone(),
        })
    }

    /// Decides the team's logged calls of the last `window` again, under the current
    /// controls and under `proposed`, and counts those whose outcome changes. Admins
    /// only (it reads every call of the team); changes nothing.
    pub async fn preview_admin(
        &self,
        p: &Principal,
        team: &str,
        proposed: AdminControls,
        window: Option<Duration>,
        examples: Option<usize>,
    ) -> Result<Impact, ServiceError> {
        let team: &str = &check_id("team_id", team)?;
        authorize(p, team, Action::WriteTeam)?;
        let window = window.unwrap_or(DEFAULT_WINDOW);
        if window > MAX_WINDOW || window.is_zero() {
            return Err(ServiceError::invalid(
                "window_seconds",
                format!(
                    "{} s is outside 1 s to {} s (90 days): give a shorter window",
                    window.as_secs(),
                    MAX_WINDOW.as_secs()
                ),
            ));
        }
        let examples = examples.unwrap_or(DEFAULT_EXAMPLES);
        if examples > MAX_EXAMPLES {
            return Err(ServiceError::invalid(
                "examples_per_group",
                format!("{examples} is more than {MAX_EXAMPLES}: ask for fewer"),
            ));
        }
        let current = self.hub.admin(team).await?;
        let current_doc = current.stored().doc;
        self.check_doc("auto_run_controls.", &proposed.lists(), || {
            CompiledAdmin::compile_write(&proposed, &current_doc).map(drop)
        })?;
        let proposed_admin = CompiledAdmin::compile_write(&proposed, &current_doc)
            .map_err(|e| ServiceError::entries("auto_run_controls.", e))?;
        let proposed_defaults = match &proposed.default_user_settings {
            Some(defaults) => Some(CompiledUser::compile(defaults).map_err(|e| {
                ServiceError::entries("auto_run_controls.default_user_settings.", e)
            })?),
            None => None,
        };
        if team == ORG_TEAM {
            check_org_doc(team, &proposed)?;
            return self.preview_org(proposed, window, examples).await;
        }
        // one preview per team at a time, within a record and a time budget, decided
        // on the blocking pool, stopped when the caller goes away
        let _slot = PreviewSlot::take(&self.previews, team)?;
        let log = &self.decision_log;
        let deadline = Instant::now() + Duration::from_millis(log.preview_max_ms);
        let max_records = log.preview_max_records;
        let cancelled = Arc::new(AtomicBool::new(false));
        let _cancel = CancelOnDrop(cancelled.clone());
        let end = super::now_ms();
        let start = end.saturating_sub(i64::try_from(window.as_millis()).unwrap_or(i64::MAX));
        let mut run = Some(PreviewRun {
            impact: Impact {
                revision: current.revision(),
                window_start_ms: start,
                window_end_ms: end,
                ..Impact::default()
            },
            tally: Tally::new(examples),
            users: HashMap::new(),
            proposed_admin: Some(proposed_admin),
            proposed_defaults,
            proposed,
            proposed_org: None,
            proposed_grouped: HashMap::new(),
            seen: 0,
        });
        let mut query = DecisionQuery {
            team_id: Some(team.to_owned()),
            since_ms: Some(start),
            until_ms: Some(end),
            limit: MAX_PAGE,
            ..DecisionQuery::default()
        };
        let place = self.preview_place(deadline).await?;
        if place.is_none()
            && let Some(state) = run.as_mut()
        {
            state.impact.cut_short = Some(CutShort::Time);
        }
        loop {
            if place.is_none() {
                break;
            }
            let mut state = run.take().ok_or_else(|| {
                ServiceError::Internal("the impact preview lost its state".into())
            })?;
            if Instant::now() >= deadline {
                state.impact.cut_short = Some(CutShort::Time);
                run = Some(state);
                break;
            }
            let page = self.store.list_decisions(&query).await?;
            let Some(last) = page.last() else {
                run = Some(state);
                break;
            };
            query.before = Some((last.decision.at_ms, last.id));
            let full = page.len() == MAX_PAGE as usize;
            // the page's users, compiled (a cache read once each is loaded)
            for record in &page {
                let user = &record.decision.user_id;
                if !state.users.contains_key(user)
                    && let Ok(eff) = self.hub.effective(team, user).await
                {
                    state.users.insert(user.clone(), eff);
                }
            }
            let cancel = cancelled.clone();
            let (state, more) = tokio::task::spawn_blocking(move || {
                let more = state.page(page, max_records, deadline, &cancel);
                (state, more)
            })
            .await
            .map_err(|e| ServiceError::Internal(format!("the impact preview failed: {e}")))?;
            run = Some(state);
            if !more || !full {
                break;
            }
        }
        let mut run =
            run.ok_or_else(|| ServiceError::Internal("the impact preview lost its state".into()))?;
        (run.impact.transitions, run.impact.groups) = run.tally.finish();
        Ok(run.impact)
    }
}

/// The outcome, reason and matched entry of a logged call under `admin` and `user`:
/// a listing's as `tools/list` decides it, a call's as `Evaluate` does, with the
/// roles' verdict when the call named an agent (what it touched was not kept, so a
/// restriction that needs it asks, under both policies alike).
fn redecide(
    files: &ToolActionLists,
    admin: &CompiledAdmin,
    user: &CompiledUser,
    record: &StoredDecision,
    call: &Call,
) -> ((Outcome, Reason, Option<String>), bool) {
    let r = &record.decision;
    if DecisionSource::parse(&r.source) == Some(DecisionSource::FilterTools) {
        let (o, reason, m) = policy::decide_listing(files, admin, user, &r.server, &r.tool);
        return ((o, reason, m.map(|m| m.to_string())), false);
    }
    // a command line's writes are placed against the directory it was made in
    let cwd = Some(r.cwd.as_str()).filter(|c| !c.is_empty());
    let mut d = policy::decide_at(files, admin, user, call, policy::Site::at(cwd));
    let agent = AgentSpec {
        id: (!r.agent_id.is_empty()).then(|| r.agent_id.clone()),
        role: (!r.role.is_empty()).then(|| r.role.clone()),
        context: None,
        session: None,
    };
    let compiled = admin.roles();
    if agent.is_named() && !compiled.is_empty() && d.outcome != Outcome::Deny {
        let verdict = roles::judge(compiled, &agent, call, &CallArgs::default());
        d = roles::apply(d, verdict);
    }
    (
        (
            d.outcome,
            d.reason,
            d.matched_entry.as_deref().map(str::to_owned),
        ),
        !d.unchecked.effects_unknown.is_empty(),
    )
}

/// Counts changed calls by from→to and by from→to and key, keeping the first
/// examples of each (the newest: records come newest first).
pub(super) struct Tally {
    examples: usize,
    transitions: BTreeMap<(u8, u8), ImpactGroup>,
    groups: BTreeMap<(u8, u8, String), ImpactGroup>,
}

impl Tally {
    pub(super) fn new(examples: usize) -> Self {
        Self {
            examples,
            transitions: BTreeMap::new(),
            groups: BTreeMap::new(),
        }
    }

    fn add(
        &mut self,
        from: Outcome,
        (to, reason, matched): (Outcome, Reason, Option<String>),
        record: &StoredDecision,
    ) {
        let example = ImpactExample {
            record: handed_out(record),
            new_reason: reason,
            new_matched_entry: matched,
        };
        let key = group_key(&record.decision);
        let rank = |o: Outcome| o as u8;
        let examples = self.examples;
        let bump = |group: &mut ImpactGroup| {
            group.count += 1;
            if group.examples.len() < examples {
                group.examples.push(example.clone());
            }
        };
        let empty = |key: String| ImpactGroup {
            from,
            to,
            key,
            count: 0,
            examples: Vec::new(),
        };
        bump(
            self.transitions
                .entry((rank(from), rank(to)))
                .or_insert_with(|| empty(String::new())),
        );
        bump(
            self.groups
                .entry((rank(from), rank(to), key.clone()))
                .or_insert_with(|| empty(key)),
        );
    }

    /// Biggest first; ties in a stable order.
    pub(super) fn finish(self) -> (Vec<ImpactGroup>, Vec<ImpactGroup>) {
        let sorted = |groups: Vec<ImpactGroup>| {
            let mut groups = groups;
            groups.sort_by_key(|g| std::cmp::Reverse(g.count));
            groups
        };
        (
            sorted(self.transitions.into_values().collect()),
            sorted(self.groups.into_values().collect()),
        )
    }
}

/// What a change is grouped by: `server:tool`, a command's program (and its
/// subcommand, a second word of letters: `git push`), or `delete_file`.
pub fn group_key(r: &NewDecision) -> String {
    match r.kind.as_str() {
        "mcp" => format!("{}:{}", r.server, r.tool),
        "shell" => {
            let mut words = r.subject.split_whitespace();
            let first = words.next().unwrap_or_default();
            match words.next() {
                Some(second)
                    if second
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-')
                        && second.starts_with(|c: char| c.is_ascii_alphabetic()) =>
                {
                    format!("{first} {second}")
                }
                _ => first.to_owned(),
            }
        }
        other => other.to_owned(),
    }
}

/// The call a record keeps, or `None` when it cannot be decided again (a command or
/// path kept cut short, or an agent's write tool: its decision rests on the files its
/// input names, which the record does not keep, since that input holds the files'
/// contents; decided without them it would look allowed wherever the tool is).
pub fn stored_call(r: &NewDecision) -> Option<Call> {
    match r.kind.as_str() {
        "mcp" if r.server == policy::BUILTIN_SERVER && policy::is_write_tool(&r.tool) => None,
        "mcp" if r.action.is_empty() => Some(Call::Mcp {
            server: r.server.clone(),
            tool: r.tool.clone(),
        }),
        "mcp" => Some(Call::McpAction {
            server: r.server.clone(),
            tool: r.tool.clone(),
            action: r.action.clone(),
        }),
        "shell" if r.complete() => Some(Call::Shell(r.subject.clone())),
        "delete_file" if r.complete() => Some(Call::DeleteFile(r.subject.clone())),
        _ => None,
    }
}

/// The call's part of a record.
struct DescribedCall<'a> {
    kind: &'static str,
    server: &'a str,
    tool: &'a str,
    action: &'a str,
    /// `server:tool` for MCP; the command line or path, whole up to the log's
    /// `max_stored_command_bytes`, else cut.
    subject: Cow<'a, str>,
    subject_bytes: u64,
    /// Hex; empty for MCP.
    subject_sha256: String,
}

/// One decision's record, borrowed from the decision: a DENY's is packed for the
/// writer's waiting queue, an ALLOW's or ASK's written straight into the log's queue.
pub(super) struct DecisionRecord<'a> {
    at_ms: i64,
    revision: u64,
    team: &'a str,
    user: &'a str,
    principal: &'a str,
    agent_id: &'a str,
    role: &'a str,
    client: &'a str,
    source: &'static str,
    described: DescribedCall<'a>,
    outcome: &'static str,
    reason: &'static str,
    matched: &'a str,
    /// The caller's groups applied to the decision, joined by `,`.
    groups: String,
    /// The programs an ALLOW rests on whose effects are unknown, one a line.
    effects_unknown: String,
    /// The client's working directory for a command line or a deletion.
    cwd: &'a str,
    tool_use_id: &'a str,
}

impl<'a> DecisionRecord<'a> {
    /// The texts in the store's order (`PackedDecision::texts`).
    fn texts(&self) -> [&str; TEXT_COUNT] {
        let d = &self.described;
        [
            self.team,
            self.user,
            self.principal,
            self.agent_id,
            self.role,
            self.client,
            self.source,
            d.kind,
            d.server,
            d.tool,
            d.action,
            &d.subject,
            &d.subject_sha256,
            self.outcome,
            self.reason,
            self.matched,
            &self.groups,
            &self.effects_unknown,
            self.cwd,
            self.tool_use_id,
        ]
    }

    pub(super) fn packed(&self) -> PackedDecision {
        PackedDecision::new(
            self.at_ms,
            self.texts(),
            self.described.subject_bytes,
            self.revision,
        )
    }

    /// Keeps the programs whose effects the decision could not check (an ALLOW's
    /// `effects_unknown`), masked as the call is and bounded: they come from the
    /// line, which the record may keep only the start of.
    pub(super) fn with_effects_unknown(mut self, programs: &[String]) -> Self {
        self.effects_unknown = effects_unknown_text(programs);
        self
    }

    /// Keeps the client's working directory of a command line or a deletion, so the
    /// impact preview places its writes where they were; none past the size the
    /// approvals take, or holding a control character (the preview then decides
    /// without one).
    pub(super) fn with_cwd(mut self, cwd: Option<&'a str>) -> Self {
        let placed = matches!(self.described.kind, "shell" | "delete_file");
        self.cwd = cwd
            .filter(|c| placed && c.len() <= MAX_CWD_BYTES && !c.chars().any(char::is_control))
            .unwrap_or_default();
        self
    }
}

/// Bytes of a working directory a record keeps (as an approval request does).
const MAX_CWD_BYTES: usize = 4096;

/// Bytes of program names a record keeps; the names past it are counted instead.
const MAX_EFFECTS_UNKNOWN_BYTES: usize = 1024;

/// `programs` as a record's `effects_unknown` text: one a line, their secrets masked,
/// the names past [`MAX_EFFECTS_UNKNOWN_BYTES`] left out and counted (`(3 more)`).
fn effects_unknown_text(programs: &[String]) -> String {
    let mut text = String::new();
    for (i, program) in programs.iter().enumerate() {
        let program = secrets::mask(program);
        if text.len() + program.len() + 1 > MAX_EFFECTS_UNKNOWN_BYTES {
            text.push_str(&format!("({} more)", programs.len() - i));
            break;
        }
        text.push_str(&program);
        text.push(EFFECTS_UNKNOWN_SEPARATOR);
    }
    if text.ends_with(EFFECTS_UNKNOWN_SEPARATOR) {
        text.pop();
    }
    text
}

/// A call as every record shows it: with its secrets masked (`toolgate_core::secrets`),
/// while its SHA-256 stays the original's, so identical calls still group.
pub(super) struct Shown<'a> {
    pub(super) masked: secrets::MaskedCall<'a>,
    /// Hex SHA-256 of the original command line or path; empty for MCP.
    pub(super) sha256: String,
    /// The original's length in bytes.
    pub(super) bytes: usize,
}

impl<'a> Shown<'a> {
    /// Masks `call`: the one place a record's call is taken from the call as sent.
    pub(super) fn of(call: &'a Call) -> Self {
        let (sha256, bytes) = match call {
            Call::Shell(text) | Call::DeleteFile(text) => {
                use sha2::Digest as _;
                (
                    hex::encode(sha2::Sha256::digest(text.as_bytes())),
                    text.len(),
                )
            }
            _ => (String::new(), 0),
        };
        Self {
            masked: secrets::mask_call(call),
            sha256,
            bytes,
        }
    }

    /// A call kept masked (an approval request's), with the original's digest and
    /// length as kept beside it.
    pub(super) fn kept(masked: &'a Call, redecidable: bool, sha256: String, bytes: usize) -> Self {
        Self {
            masked: secrets::MaskedCall {
                call: Cow::Borrowed(masked),
                redecidable,
            },
            sha256,
            bytes,
        }
    }

    pub(super) fn call(&self) -> &Call {
        &self.masked.call
    }
}

/// Describes a call for its record: MCP calls by server and tool, a command line or
/// path (masked) whole up to `max_stored` bytes, else cut, with its SHA-256. The
/// length is the stored text's when it is whole and decides as the original, else
/// one the stored text is shorter than, so the preview never decides it again.
fn describe_call<'a>(shown: &'a Shown<'a>, max_stored: usize) -> DescribedCall<'a> {
    let call = shown.call();
    fn mcp<'a>(server: &'a str, tool: &'a str, action: &'a str) -> DescribedCall<'a> {
        let subject = format!("{server}:{tool}");
        DescribedCall {
            kind: "mcp",
            server,
            tool,
            action,
            subject_bytes: subject.len() as u64,
            subject: Cow::Owned(subject),
            subject_sha256: String::new(),
        }
    }
    let (kind, text) = match call {
        Call::Mcp { server, tool } => return mcp(server, tool, ""),
        Call::McpAction {
            server,
            tool,
            action,
        } => return mcp(server, tool, action),
        Call::McpInternal {
            name,
            fallback_server,
        } => {
            let (server, tool) = policy::split_internal_name(name, fallback_server);
            return mcp(server, tool, "");
        }
        Call::Shell(line) => ("shell", line),
        Call::DeleteFile(path) => ("delete_file", path),
    };
    let subject = cut(text, max_stored);
    let whole = subject.len() == text.len() && shown.masked.redecidable;
    let subject_bytes = if whole {
        subject.len()
    } else {
        shown.bytes.max(subject.len() + 1)
    };
    DescribedCall {
        kind,
        server: "",
        tool: "",
        action: "",
        subject: Cow::Borrowed(subject),
        subject_bytes: subject_bytes as u64,
        subject_sha256: shown.sha256.clone(),
    }
}

/// The first `max` bytes of `text`, cut at a character boundary.
fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let end = (0..=max)
        .rev()
        .find(|&n| text.is_char_boundary(n))
        .unwrap_or(0);
    &text[..end]
}

/// A record as the API hands it out: a command line or path as an excerpt only.
fn handed_out(record: &StoredDecision) -> StoredDecision {
    let mut out = record.clone();
    if out.decision.kind != "mcp" {
        out.decision.subject = excerpt(&out.decision.subject);
    }
    out
}

/// What a page token is bound to: the scoped filter, without the keyset and size.
fn fingerprint(q: &DecisionQuery) -> String {
    use sha2::Digest as _;
    let mut q = q.clone();
    q.before = None;
    q.limit = 0;
    hex::encode(&sha2::Sha256::digest(format!("{q:?}").as_bytes())[..8])
}

fn make_token(at_ms: i64, id: u64, fingerprint: &str) -> String {
    hex::encode(format!("{at_ms}.{id}.{fingerprint}"))
}

fn parse_token(token: &str, fingerprint: &str) -> Result<(i64, u64), ServiceError> {
    let bad = |why: &str| {
        ServiceError::invalid(
            "page_token",
            format!(
                "{why}: pass the next_page_token of the previous page with the same filter, or none to start again"
            ),
        )
    };
    let text = hex::decode(token)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(|| bad("is not a page token"))?;
    let mut parts = text.split('.');
    let (Some(at), Some(id), Some(fp), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad("is not a page token"));
    };
    if fp != fingerprint {
        return Err(bad("was made for another filter"));
    }
    match (at.parse(), id.parse()) {
        (Ok(at), Ok(id)) => Ok((at, id)),
        _ => Err(bad("is not a page token")),
    }
}

/// What [`relay`] passes to this replica's watchers.
#[derive(Debug, Clone)]
pub(super) enum Relayed {
    /// A record another replica wrote.
    Record(Arc<StoredDecision>),
    /// This many records could not be read (0: how many is not known).
    Missed(u64),
}

/// Records read per query when a notice names many.
const RELAY_PAGE: u32 = 1000;

/// Reads the records other replicas announce and passes them to this replica's
/// watchers (their writers are serialised, so a notice's id range is exactly one
/// commit's records); reads nothing while nobody here watches.
pub(super) async fn relay(
    hub: Arc<Hub>,
    store: Arc<dyn Store>,
    tx: broadcast::Sender<Relayed>,
    stop: CancellationToken,
) {
    let mut notices = hub.decision_notices();
    loop {
        let notice = tokio::select! {
            () = stop.cancelled() => return,
            notice = notices.recv() => notice,
        };
        let (first, last) = match notice {
            Ok(DecisionsCommitted::Range { first, last }) => (first, last),
            Ok(DecisionsCommitted::Missed) | Err(broadcast::error::RecvError::Lagged(_)) => {
                let _ = tx.send(Relayed::Missed(0));
                continue;
            }
            Err(broadcast::error::RecvError::Closed) => return,
        };
        let mut from = first;
        while from <= last && tx.receiver_count() > 0 {
            match store.decisions_between(from, last, RELAY_PAGE).await {
                Ok(page) => {
                    let Some(end) = page.last().map(|r| r.id) else {
                        break;
                    };
                    let full = page.len() == RELAY_PAGE as usize;
                    for record in page {
                        // no receiver left is not an error: the last watcher went
                        let _ = tx.send(Relayed::Record(Arc::new(record)));
                    }
                    if !full {
                        break;
                    }
                    from = end + 1;
                }
                Err(e) => {
                    warn!(error = %e, first = from, last, "cannot read another replica's decision records: this replica's watchers are told they missed them");
                    let _ = tx.send(Relayed::Missed(last - from + 1));
                    break;
                }
            }
        }
    }
}

/// Removes records past the age and size limits every `prune_interval_secs`, until
/// the server stops. Age is measured on [`RetentionClock`], not the wall clock alone:
/// a clock that jumped forward deletes nothing that was not due.
pub(super) async fn prune(store: Arc<dyn Store>, log: DecisionLogConfig, stop: CancellationToken) {
    let mut every = tokio::time::interval(Duration::from_secs(log.prune_interval_secs));
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let days = |d: u64| i64::try_from(d.saturating_mul(86_400_000)).unwrap_or(i64::MAX);
    let (max_age, deny_max_age) = (days(log.max_age_days), days(log.deny_max_age_days));
    let audit_max_age = days(log.audit_max_age_days);
    let mut clock: Option<RetentionClock> = None;
    let mut capped = false;
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = every.tick() => {}
        }
        let wall = super::now_ms();
        let now = match &clock {
            Some(clock) => clock.now(wall),
            None => match store.newest_decision_at().await {
                Ok(newest) => clock.insert(RetentionClock::start(wall, newest)).now(wall),
                Err(e) => {
                    warn!(error = %e, "cannot read the decision log's newest record: retention waits for the next pass");
                    continue;
                }
            },
        };
        let retention = Retention {
            older_than_ms: now.saturating_sub(max_age),
            max_per_team: log.max_records_per_team,
            deny_older_than_ms: now.saturating_sub(deny_max_age),
            deny_max_per_team: log.deny_max_records_per_team,
            audit_older_than_ms: now.saturating_sub(audit_max_age),
            audit_max_per_team: log.audit_max_records_per_team,
            max_removed: log.max_pruned_per_pass,
        };
        match store.prune_decisions(&retention).await {
            Ok(pruned) => {
                debug!(
                    removed = pruned.removed,
                    audit_removed = pruned.audit_removed,
                    retention_now_ms = now,
                    wall_ms = wall,
                    "retention pass"
                );
                // once per run of capped passes, not every pass
                if pruned.capped && !std::mem::replace(&mut capped, true) {
                    warn!(
                        max = log.max_pruned_per_pass,
                        "more records are past the retention than one pass removes (decision_log.max_pruned_per_pass): the rest go in later passes"
                    );
                } else if !pruned.capped {
                    capped = false;
                }
            }
            Err(e) => {
                warn!(error = %e, "cannot remove old decision log records: retrying at the next pass")
            }
        }
    }
}

/// The time retention measures age from: the wall clock, but never ahead of the
/// newest record stored when the server started plus the time elapsed since on the
/// monotonic clock. A clock stepped a month forward (at start or while running) thus
/// deletes nothing that was not due, and records written under it, dated in the
/// future, do not make older ones look due. A server that was stopped for a while
/// counts retention from its newest record: records are kept longer, never less.
#[derive(Debug, Clone, Copy)]
pub(super) struct RetentionClock {
    anchor_ms: i64,
    started: std::time::Instant,
}

impl RetentionClock {
    fn start(wall_ms: i64, newest_ms: Option<i64>) -> Self {
        Self {
            anchor_ms: newest_ms.map_or(wall_ms, |n| n.min(wall_ms)),
            started: std::time::Instant::now(),
        }
    }

    fn now(&self, wall_ms: i64) -> i64 {
        self.now_after(wall_ms, self.started.elapsed())
    }

    fn now_after(&self, wall_ms: i64, elapsed: Duration) -> i64 {
        let elapsed = i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX);
        wall_ms.min(self.anchor_ms.saturating_add(elapsed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Retention's time follows the wall clock, but never runs ahead of the newest
    /// record at start plus the real time elapsed.
    #[test]
    fn retention_time_does_not_follow_a_clock_jump() {
        const DAY: i64 = 86_400_000;
        let t0 = 1_000 * DAY;
        let secs = Duration::from_secs;
        // an ordinary start: the newest record a moment ago
        let clock = RetentionClock::start(t0, Some(t0 - 1_000));
        assert_eq!(clock.now_after(t0 + 60_000, secs(60)), t0 - 1_000 + 60_000);
        // the clock stepped a month ahead while running: retention's time does not
        assert_eq!(
            clock.now_after(t0 + 31 * DAY, secs(60)),
            t0 - 1_000 + 60_000
        );
        // a start under a clock a month ahead: retention counts from the newest record
        let jumped = RetentionClock::start(t0 + 31 * DAY, Some(t0));
        assert_eq!(jumped.now_after(t0 + 31 * DAY, secs(0)), t0);
        // records dated in the future (written under a jumped clock) do not pull it on
        let future = RetentionClock::start(t0, Some(t0 + 31 * DAY));
        assert_eq!(future.now_after(t0 + 10, secs(0)), t0);
        // a clock stepped back: the wall clock, which keeps more
        assert_eq!(clock.now_after(t0 - DAY, secs(60)), t0 - DAY);
        // an empty log: the wall clock at start
        let empty = RetentionClock::start(t0, None);
        assert_eq!(empty.now_after(t0 + 5_000, secs(5)), t0 + 5_000);
    }

    #[test]
    fn page_tokens_round_trip_and_are_bound_to_their_filter() {
        let token = make_token(1_700_000_000_000, 42, "abcd");
        assert_eq!(
            parse_token(&token, "abcd").unwrap(),
            (1_700_000_000_000, 42)
        );
        assert!(parse_token(&token, "other").is_err());
        for bad in ["", "zz", &hex::encode("1.2"), &hex::encode("a.b.abcd")] {
            assert!(parse_token(bad, "abcd").is_err(), "{bad}");
        }
    }

    #[test]
    fn one_preview_per_team_at_a_time() {
        let running = Previews::default();
        let a = PreviewSlot::take(&running, "acme").unwrap();
        let second = PreviewSlot::take(&running, "acme");
        assert!(
            matches!(&second, Err(ServiceError::ResourceExhausted(m)) if m.contains("already running")),
            "{:?}",
            second.err()
        );
        let b = PreviewSlot::take(&running, "globex").unwrap();
        drop(a);
        let again = PreviewSlot::take(&running, "acme");
        assert!(again.is_ok());
        drop((b, again));
    }

    #[test]
    fn clients_are_short_plain_names() {
        for good in ["", "claude-code", "codex", "mcp-proxy", "gemini2"] {
            assert!(check_client(good).is_ok(), "{good}");
        }
        for bad in ["Claude", "a b", "x".repeat(33).as_str(), "é", "a\n"] {
            assert!(check_client(bad).is_err(), "{bad:?}");
        }
    }

    /// A record's unknown effects: one a line, masked, and bounded however many
    /// programs the line named.
    #[test]
    fn unknown_effects_are_kept_masked_and_bounded() {
        let names = |n: &[&str]| n.iter().map(|p| p.to_string()).collect::<Vec<_>>();
        assert_eq!(effects_unknown_text(&[]), "");
        assert_eq!(
            effects_unknown_text(&names(&["zip", "fakeroot"])),
            "zip\nfakeroot"
        );
        let secret = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
        let masked = effects_unknown_text(&names(&[secret]));
        assert!(!masked.contains("ghp_abcdef"), "{masked}");
        let many: Vec<String> = (0..1000).map(|i| format!("prog{i:04}")).collect();
        let kept = effects_unknown_text(&many);
        assert!(
            kept.len() <= MAX_EFFECTS_UNKNOWN_BYTES + 16,
            "{}",
            kept.len()
        );
        let last = kept.lines().last().unwrap();
        let listed = kept.lines().count() - 1;
        assert_eq!(last, format!("({} more)", 1000 - listed));
        assert!(kept.starts_with("prog0000\nprog0001\n"));
        let huge = effects_unknown_text(&["x".repeat(5000)]);
        assert_eq!(huge, "(1 more)");
    }

    #[test]
    fn long_commands_keep_a_cut_subject_and_cannot_be_decided_again() {
        // the record the service would log for `call`
        let record = |call: &Call| {
            let shown = Shown::of(call);
            let d = describe_call(&shown, 256);
            let texts = [
                "t",
                "u",
                "p",
                "",
                "",
                "",
                "evaluate",
                d.kind,
                d.server,
                d.tool,
                d.action,
                &d.subject,
                &d.subject_sha256,
                "ASK",
                "COMMAND_NOT_ALLOWLISTED",
                "",
                "",
                "",
                "",
                "",
            ];
            PackedDecision::new(0, texts, d.subject_bytes, 1).unpack()
        };
        let r = record(&Call::Shell("échoé ".repeat(100)));
        assert!(r.subject.len() <= 256 && !r.complete());
        assert_eq!(r.subject_bytes, 800);
        assert_eq!(stored_call(&r), None);
        let r = record(&Call::Shell("git push origin main".into()));
        assert!(r.complete());
        assert_eq!(r.kind, "shell");
        assert_eq!(group_key(&r), "git push");
        assert_eq!(
            stored_call(&r),
            Some(Call::Shell("git push origin main".into()))
        );
        let r = record(&Call::Shell("rm -rf /tmp/x".into()));
        assert_eq!(group_key(&r), "rm");
        let r = record(&Call::McpAction {
            server: "gh".into(),
            tool: "pr".into(),
            action: "merge".into(),
        });
        assert_eq!(
            (r.kind.as_str(), r.server.as_str(), r.tool.as_str()),
            ("mcp", "gh", "pr")
        );
        assert_eq!((r.action.as_str(), r.subject.as_str()), ("merge", "gh:pr"));
        assert_eq!((r.subject_bytes, r.subject_sha256.as_str()), (5, ""));
        // an agent's write tool is decided by the files its input names, which the
        // record does not keep: the preview counts it as unknown, never as allowed
        for tool in [
            "write_file",
            "Write",
            "edit_file",
            "MultiEdit",
            "apply_patch",
        ] {
            let r = record(&Call::Mcp {
                server: policy::BUILTIN_SERVER.into(),
                tool: tool.into(),
            });
            assert_eq!(stored_call(&r), None, "{tool}");
        }
        let r = record(&Call::Mcp {
            server: policy::BUILTIN_SERVER.into(),
            tool: "read_file".into(),
        });
        assert!(stored_call(&r).is_some());
    }
}
