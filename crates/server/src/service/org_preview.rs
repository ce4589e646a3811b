//! The impact preview of a change to the organisation's group policies: the logged
//! calls of every team made by a member of a changed group, each decided again with
//! its team's controls under the organisation's policies in force and proposed, and
//! reported per team (never as one team's).

use super::decisions::{
    CancelOnDrop, CutShort, Impact, ImpactGroup, MAX_PAGE, PreviewRun, PreviewSlot, Tally,
    TeamImpact,
};
use super::{Service, ServiceError};
use crate::auth::ORG_TEAM;
use crate::policy::AdminControls;
use crate::policy::groups::GroupPolicies;
use crate::store::{DecisionQuery, StoredDecision};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

impl Service {
    /// [`Service::preview_admin`] of the organisation's document (the caller is an
    /// operator, the proposal checked): one pass over every team's records of the
    /// window, newest first, within the one record and time budget. A record counts
    /// only when its principal was in a group whose organisation-wide policy the
    /// proposal changes: no other call can change.
    pub(super) async fn preview_org(
        &self,
        proposed: AdminControls,
        window: Duration,
        examples: usize,
    ) -> Result<Impact, ServiceError> {
        let org = self.hub.org_groups().await?;
        let changed = changed_groups(&org.policies, &proposed.groups);
        let _slot = PreviewSlot::take(&self.previews, ORG_TEAM)?;
        let log = &self.decision_log;
        let deadline = Instant::now() + Duration::from_millis(log.preview_max_ms);
        let max_records = log.preview_max_records;
        let cancelled = Arc::new(AtomicBool::new(false));
        let _cancel = CancelOnDrop(cancelled.clone());
        let end = super::now_ms();
        let start = end.saturating_sub(i64::try_from(window.as_millis()).unwrap_or(i64::MAX));
        let mut total = Impact {
            revision: org.revision,
            window_start_ms: start,
            window_end_ms: end,
            ..Impact::default()
        };
        if changed.is_empty() {
            return Ok(total);
        }
        let proposed_org: Arc<GroupPolicies> = Arc::new(*proposed.groups);
        let place = self.preview_place(deadline).await?;
        if place.is_none() {
            total.cut_short = Some(CutShort::Time);
        }
        let mut runs: BTreeMap<String, PreviewRun> = BTreeMap::new();
        let mut seen = 0_u64;
        let mut query = DecisionQuery {
            since_ms: Some(start),
            until_ms: Some(end),
            limit: MAX_PAGE,
            ..DecisionQuery::default()
        };
        while place.is_some() {
            if Instant::now() >= deadline {
                total.cut_short = Some(CutShort::Time);
                break;
            }
            let page = self.store.list_decisions(&query).await?;
            let Some(last) = page.last() else { break };
            query.before = Some((last.decision.at_ms, last.id));
            let full = page.len() == MAX_PAGE as usize;
            let mut by_team: BTreeMap<String, Vec<StoredDecision>> = BTreeMap::new();
            for record in page {
                let d = &record.decision;
                let touched = d.groups.split(',').any(|g| changed.contains(g));
                if d.team_id == ORG_TEAM || !touched {
                    continue;
                }
                if seen == max_records {
                    total.cut_short = Some(CutShort::Records);
                    break;
                }
                seen += 1;
                by_team.entry(d.team_id.clone()).or_default().push(record);
            }
            for (team, records) in &by_team {
                if !runs.contains_key(team) {
                    let admin = self.hub.admin(team).await?;
                    runs.insert(
                        team.clone(),
                        PreviewRun {
                            impact: Impact {
                                revision: admin.revision(),
                                window_start_ms: start,
                                window_end_ms: end,
                                ..Impact::default()
                            },
                            tally: Tally::new(examples),
                            users: HashMap::new(),
                            proposed_admin: None,
                            proposed_defaults: None,
                            proposed: admin.stored().doc,
                            proposed_org: Some(proposed_org.clone()),
                            proposed_grouped: HashMap::new(),
                            seen: 0,
                        },
                    );
                }
                let Some(run) = runs.get_mut(team) else {
                    continue;
                };
                for record in records {
                    let user = &record.decision.user_id;
                    if !run.users.contains_key(user)
                        && let Ok(eff) = self.hub.effective(team, user).await
                    {
                        run.users.insert(user.clone(), eff);
                    }
                }
            }
            let cancel = cancelled.clone();
            let (back, more) = tokio::task::spawn_blocking(move || {
                let mut more = true;
                for (team, records) in by_team {
                    if let Some(run) = runs.get_mut(&team) {
                        more &= run.page(records, u64::MAX, deadline, &cancel);
                    }
                    if !more {
                        break;
                    }
                }
                (runs, more)
            })
            .await
            .map_err(|e| ServiceError::Internal(format!("the impact preview failed: {e}")))?;
            runs = back;
            if !more || !full || total.cut_short.is_some() {
                break;
            }
        }
        for (team_id, run) in runs {
            let mut impact = run.impact;
            (impact.transitions, impact.groups) = run.tally.finish();
            total.decided += impact.decided;
            total.unchanged += impact.unchanged;
            total.changed += impact.changed;
            total.unknown += impact.unknown;
            total.effects_unknown += impact.effects_unknown;
            total.cut_short = total.cut_short.or(impact.cut_short);
            total.teams.push(TeamImpact { team_id, impact });
        }
        total.transitions = summed(total.teams.iter().map(|t| &t.impact.transitions), examples);
        total.groups = summed(total.teams.iter().map(|t| &t.impact.groups), examples);
        Ok(total)
    }
}

/// The groups whose organisation-wide policy differs between `now` and `proposed`.
fn changed_groups(now: &GroupPolicies, proposed: &GroupPolicies) -> BTreeSet<String> {
    now.keys()
        .chain(proposed.keys())
        .filter(|name| now.get(*name) != proposed.get(*name))
        .cloned()
        .collect()
}

/// The teams' groups added up by from→to and key, the first `examples` of each kept,
/// biggest first as a team's are.
fn summed<'a>(
    teams: impl Iterator<Item = &'a Vec<ImpactGroup>>,
    examples: usize,
) -> Vec<ImpactGroup> {
    let mut sums: BTreeMap<(u8, u8, String), ImpactGroup> = BTreeMap::new();
    for group in teams.flatten() {
        let key = (group.from as u8, group.to as u8, group.key.clone());
        let sum = sums.entry(key).or_insert_with(|| ImpactGroup {
            examples: Vec::new(),
            count: 0,
            ..group.clone()
        });
        sum.count += group.count;
        let room = examples.saturating_sub(sum.examples.len());
        sum.examples
            .extend(group.examples.iter().take(room).cloned());
    }
    let mut out: Vec<ImpactGroup> = sums.into_values().collect();
    out.sort_by_key(|g| std::cmp::Reverse(g.count));
    out
}
