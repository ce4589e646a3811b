//! The impact preview of a team's proposed controls: its logged calls of a window
//! decided again, now and under the proposal, page by page on the blocking pool,
//! within a record and a time budget, one preview per team at a time.

use super::impact::{
    CutShort, DEFAULT_EXAMPLES, DEFAULT_WINDOW, Impact, MAX_EXAMPLES, MAX_WINDOW, Tally,
    stored_call,
};
use super::listing::MAX_PAGE;
use super::origin::DecisionSource;
use crate::auth::{Action, ORG_TEAM, Principal, authorize};
use crate::policy::group_set::GroupSet;
use crate::policy::groups::{GroupPolicies, GroupedAdmin};
use crate::policy::roles::{self, AgentSpec, CallArgs};
use crate::policy::{
    self, AdminControls, Call, CompiledAdmin, CompiledUser, Outcome, PolicyError, Reason,
    ToolActionLists,
};
use crate::service::settings::check_org_doc;
use crate::service::{Effective, Service, ServiceError, check_id};
use crate::store::{DecisionQuery, StoredDecision};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The teams whose impact preview is running, and the places on the blocking pool
/// previews share: half the cores (at least one), so however many teams preview at
/// once, the other half stays free for decisions.
#[derive(Debug)]
pub(in crate::service) struct Previews(
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
pub(in crate::service) struct PreviewSlot<'a> {
    running: &'a Previews,
    team: String,
}

impl<'a> PreviewSlot<'a> {
    /// The team's place, or a refusal when one of its previews is running: a second
    /// is refused at once rather than queued, so previews cannot pile up.
    pub(in crate::service) fn take(
        running: &'a Previews,
        team: &str,
    ) -> Result<Self, ServiceError> {
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
pub(in crate::service) struct CancelOnDrop(pub(in crate::service) Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// What a preview carries from page to page (moved to the blocking pool and back).
pub(in crate::service) struct PreviewRun {
    pub(in crate::service) impact: Impact,
    pub(in crate::service) tally: Tally,
    pub(in crate::service) users: HashMap<String, Effective>,
    /// None: the team's controls as they are (an organisation-wide preview).
    pub(in crate::service) proposed_admin: Option<CompiledAdmin>,
    pub(in crate::service) proposed_defaults: Option<CompiledUser>,
    /// The proposal combined with each set of groups records were decided under
    /// (None: none of them has a policy in it), as `Evaluate` combines them.
    pub(in crate::service) proposed: AdminControls,
    /// The organisation's group policies proposed (None: those in force).
    pub(in crate::service) proposed_org: Option<Arc<GroupPolicies>>,
    pub(in crate::service) proposed_grouped:
        HashMap<String, Result<Option<Arc<GroupedAdmin>>, PolicyError>>,
    pub(in crate::service) seen: u64,
}

impl PreviewRun {
    /// Decides one page of records again, newest first, within the budget; `false`
    /// once the preview must stop (a budget reached, or the caller gone).
    pub(in crate::service) fn page(
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
    pub(in crate::service) async fn preview_place(
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
        let end = crate::service::now_ms();
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
