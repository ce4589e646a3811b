//! Committed changes applied to the hub's cache, in revision order: a team's
//! catch-up from the store's history (or a reload past it), each change compiled,
//! applied and broadcast to the team's subscribers; and the teams and users the
//! hub lets go of.

use super::compile::{compile_admin, compile_stored_admin, compile_user};
use super::team::{Published, Subscription, Team};
use super::{Hub, HubError};
use crate::store::{Change, ChangeDoc, History, Versioned};
use dashmap::mapref::entry::Entry;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::sync::broadcast;

/// How many changes one catch-up reads at a time.
const CATCH_UP_BATCH: u32 = 1_000;

impl Hub {
    /// Subscribes to the team's changes. Subscribe before reading a snapshot or the
    /// history so that nothing committed in between is missed.
    pub async fn subscribe(&self, team_id: &str) -> Result<Subscription, HubError> {
        loop {
            self.team(team_id).await?;
            // under the map's lock: an idle team is never let go between being found
            // and being subscribed to (see `let_idle_teams_go`)
            if let Some(team) = self.teams.get(team_id) {
                let tx = team
                    .tx
                    .get_or_init(|| broadcast::channel(self.queue_size).0);
                return Ok(Subscription { rx: tx.subscribe() });
            }
        }
    }

    /// Lets go of teams nobody watches that were not read or written for `idle`,
    /// with their cached users: the store has them when next needed.
    pub fn let_idle_teams_go(&self, idle: Duration) -> usize {
        let now = self.now_secs();
        let before = self.teams.len();
        self.teams.retain(|team_id, team| {
            // the organisation's policies are followed on every replica at all times
            team_id == crate::auth::ORG_TEAM
                || team.watched()
                || now.saturating_sub(team.touched.load(Ordering::Relaxed)) < idle.as_secs()
        });
        before - self.teams.len()
    }

    /// How many teams are held in memory (the organisation's policies, always held,
    /// are no team).
    pub fn teams(&self) -> usize {
        self.teams.len() - usize::from(self.teams.contains_key(crate::auth::ORG_TEAM))
    }

    /// Whether the team holds a broadcast ring (it has had a subscriber).
    pub fn has_ring(&self, team_id: &str) -> bool {
        self.teams
            .get(team_id)
            .is_some_and(|t| t.tx.get().is_some())
    }

    /// Changes the hub holds queued for the team's subscribers, and their weight.
    pub fn queued(&self, team_id: &str) -> (usize, usize) {
        self.teams.get(team_id).map_or((0, 0), |t| {
            let queued = t.queued.lock().unwrap_or_else(|e| e.into_inner());
            (queued.0.len(), queued.1)
        })
    }

    /// Applies and broadcasts every change of the team committed since the last
    /// catch-up. Called after each local commit and on each notice from elsewhere.
    pub async fn catch_up(&self, team_id: &str) -> Result<(), HubError> {
        let team = self.team(team_id).await?;
        let _guard = team.catch_up.lock().await;
        // what this catch-up reads is the store as of now or later
        let read_at = self.currency.now_ms();
        self.catch_up_team(team_id, &team).await?;
        Self::confirm(&team, read_at);
        Ok(())
    }

    async fn catch_up_team(&self, team_id: &str, team: &Team) -> Result<(), HubError> {
        loop {
            let after = team.published.load(Ordering::Acquire);
            match self
                .store
                .changes_after(team_id, after, CATCH_UP_BATCH)
                .await?
            {
                History::Truncated => {
                    self.reload(team_id, team).await?;
                    team.resync();
                    return Ok(());
                }
                History::Changes(changes) => {
                    let full = changes.len() == CATCH_UP_BATCH as usize;
                    for change in changes {
                        self.apply(team_id, team, &change)?;
                        team.published.store(change.revision, Ordering::Release);
                        team.broadcast(
                            Arc::new(Published::new(change)),
                            self.queue_size,
                            self.queue_bytes,
                        );
                    }
                    if !full {
                        return Ok(());
                    }
                }
            }
        }
    }

    fn apply(&self, team_id: &str, team: &Team, change: &Change) -> Result<(), HubError> {
        fn versioned<T>(change: &Change, doc: T) -> Versioned<T> {
            Versioned {
                doc,
                revision: change.revision,
                updated_at_ms: change.at_ms,
                updated_by: change.actor.clone(),
            }
        }
        match &change.doc {
            ChangeDoc::Admin { controls } => {
                // compiled from the change itself: the document is not copied to be kept
                let cached = Arc::new(compile_admin(team_id, controls, versioned(change, ()))?);
                team.admin.store(cached);
                if team_id == crate::auth::ORG_TEAM {
                    self.set_org(change.revision, &controls.groups);
                }
            }
            ChangeDoc::User { user_id, settings } => {
                let cached = Arc::new(compile_user(team_id, versioned(change, settings.clone()))?);
                // inserted even when not cached: a load racing with this change then
                // keeps it over an older read (see `effective`); a load that already
                // read a newer document keeps that
                match team.users.entry(user_id.clone()) {
                    Entry::Occupied(mut held) => {
                        if held.get().stored.revision <= change.revision {
                            held.insert(cached);
                        }
                    }
                    Entry::Vacant(slot) => {
                        slot.insert(cached);
                    }
                }
                self.trim_users(team, user_id);
            }
        }
        Ok(())
    }

    /// Past the limit, lets a tenth of the team's cached users go (any but `keep`):
    /// they are read again from the store, which is at least as new, when next needed.
    pub(super) fn trim_users(&self, team: &Team, keep: &str) {
        let len = team.users.len();
        if len <= self.max_cached_users {
            return;
        }
        let target = self.max_cached_users - self.max_cached_users / 10;
        let keys: Vec<String> = team
            .users
            .iter()
            .map(|u| u.key().clone())
            .filter(|k| k != keep)
            .take(len - target)
            .collect();
        team.evict(Some(keys));
    }

    /// How many users of all teams are held compiled in memory.
    pub fn cached_users_total(&self) -> usize {
        self.teams.iter().map(|t| t.users.len()).sum()
    }

    /// How many users of the team are held compiled in memory.
    pub fn cached_users(&self, team_id: &str) -> usize {
        self.teams.get(team_id).map_or(0, |t| t.users.len())
    }

    /// Rebuilds the team's cache from the store (the history no longer reaches back).
    async fn reload(&self, team_id: &str, team: &Team) -> Result<(), HubError> {
        let revision = self.store.team_revision(team_id).await?;
        let stored = self.store.get_admin(team_id).await?;
        if team_id == crate::auth::ORG_TEAM {
            self.set_org(revision, &stored.doc.groups);
        }
        let admin = compile_stored_admin(team_id, stored)?;
        team.admin.store(Arc::new(admin));
        team.evict(None);
        team.published.store(revision, Ordering::Release);
        Ok(())
    }
}
