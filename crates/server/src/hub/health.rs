//! Whether a replica's view can be trusted: the store's fitness for writes, the teams
//! whose catch-up failed (retried until it succeeds), and how far the cached teams
//! are behind the store.

use super::currency::MONITOR_DEADLINE;
use super::{Hub, HubError};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::sync::watch;

/// Whether this replica's view can be trusted, for the health service.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HubHealth {
    /// Why the store refuses writes, when it does.
    pub store: Option<String>,
    /// Teams whose latest catch-up failed (team → error): their committed changes
    /// may not be applied here yet.
    pub stale: BTreeMap<String, String>,
    /// Whether the change listener hears its own pings (`None`: the store has no
    /// listener, being this process's alone).
    pub listener: Option<bool>,
    /// Why the replica's policy is not shown current within the bound, when it is not.
    pub behind: Option<String>,
    /// Why the data directory's disk is unfit (nearly full), when it is.
    pub disk: Option<String>,
}

impl HubHealth {
    /// Whether writes can be taken here: the store fit and reached, the disk not full.
    pub fn writable(&self) -> bool {
        self.store.is_none() && self.disk.is_none()
    }

    /// Whether decisions can be trusted here: no team waits for a failed catch-up and
    /// the policy was confirmed within the bound.
    pub fn current(&self) -> bool {
        self.stale.is_empty() && self.behind.is_none()
    }
}

/// How far a replica is behind the store (the changes committed that it has not
/// applied yet): zero but for a moment after each commit, unless catch-ups fail.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Lag {
    /// The most revisions any cached team is behind.
    pub max_revisions: u64,
    /// Cached teams behind at all.
    pub teams_behind: usize,
}

impl Hub {
    /// Health as it changes.
    pub fn health(&self) -> watch::Receiver<HubHealth> {
        self.health.subscribe()
    }

    fn set_stale(&self, team_id: &str, error: Option<&HubError>) {
        self.health.send_if_modified(|h| match error {
            Some(e) => {
                if !h.stale.contains_key(team_id) {
                    tracing::error!(team = %team_id, error = %e, "catch-up failed: committed changes of this team may not be applied on this replica; retrying until it succeeds");
                }
                h.stale.insert(team_id.to_owned(), e.to_string()) != Some(e.to_string())
            }
            None => {
                let was = h.stale.remove(team_id).is_some();
                if was {
                    tracing::info!(team = %team_id, "catch-up succeeded: the team is current again");
                }
                was
            }
        });
    }

    /// [`Hub::catch_up`], recording the team as stale while it fails (retried by
    /// [`Hub::monitor`]).
    pub async fn catch_up_or_mark(&self, team_id: &str) -> Result<(), HubError> {
        let result = self.catch_up(team_id).await;
        self.set_stale(team_id, result.as_ref().err());
        result
    }

    /// Every `every`: asks the store whether writes can be trusted, retries the
    /// catch-ups that failed, and lets idle teams go. Runs until the hub is dropped.
    pub async fn monitor(self: Arc<Self>, every: Duration, team_idle: Duration) {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            self.check_store().await;
            if self.tokens_stale() {
                let _ = self
                    .within(MONITOR_DEADLINE, async {
                        Ok(self.reload_tokens_or_mark().await?)
                    })
                    .await;
            }
            let stale: Vec<String> = self.health.borrow().stale.keys().cloned().collect();
            for team in stale {
                let _ = self
                    .within(MONITOR_DEADLINE, self.catch_up_or_mark(&team))
                    .await;
            }
            let gone = self.let_idle_teams_go(team_idle);
            if gone > 0 {
                tracing::debug!(teams = gone, "idle teams let go");
            }
        }
    }

    /// Asks the store whether writes can be trusted and records the answer.
    pub async fn check_store(&self) {
        let checked = self
            .within(MONITOR_DEADLINE, async { Ok(self.store.check().await?) })
            .await;
        self.set_reachable(checked.is_ok());
        let problem = checked.err().map(|e| e.to_string());
        self.health.send_if_modified(|h| {
            if h.store == problem {
                return false;
            }
            match &problem {
                Some(p) => tracing::error!(problem = %p, "store unfit for writes: writes are refused and health is NOT_SERVING"),
                None => tracing::info!("store fit for writes again"),
            }
            h.store = problem.clone();
            true
        });
    }

    /// Records what the data directory's disk is like (`None`: fine).
    pub fn set_disk(&self, problem: Option<String>) {
        self.health.send_if_modified(|h| {
            if h.disk == problem {
                return false;
            }
            match &problem {
                Some(p) => tracing::error!(problem = %p, "disk nearly full: health is NOT_SERVING"),
                None => tracing::info!("disk has room again"),
            }
            h.disk = problem.clone();
            true
        });
    }

    /// How far this replica's cached teams are behind the store, in one read of it.
    pub async fn lag(&self) -> Result<Lag, HubError> {
        let mut lag = Lag::default();
        for (team_id, revision) in self.store.team_revisions().await? {
            let Some(team) = self.teams.get(&team_id) else {
                continue;
            };
            let behind = revision.saturating_sub(team.published.load(Ordering::Acquire));
            if behind > 0 {
                lag.teams_behind += 1;
                lag.max_revisions = lag.max_revisions.max(behind);
            }
        }
        Ok(lag)
    }
}
