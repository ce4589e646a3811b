//! How current a replica's policy is, when the store is shared: each cached team
//! carries the time its policy was last shown current (a fresh load, a catch-up that
//! read the change table, or the listener hearing this replica's own ping after every
//! notice before it was handled). Past `store.max_staleness_secs` a team's calls get
//! no ALLOW or ASK and health says NOT_SERVING, so a replica cut off from the store
//! cannot go on answering from a policy another replica has changed.
//!
//! The embedded store has no such clock: only this process writes it, and every
//! write is applied to the cache before it is acknowledged, so the cache is the truth
//! for as long as the process runs.

use super::{Hub, HubError, team::Team};
use crate::store::StoreError;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;
use tokio::time::Instant;

/// How long a read on the decision path may wait for a shared store before the call
/// is answered from what the replica knows (hooks give up after about 2 s).
pub(super) const READ_DEADLINE: Duration = Duration::from_secs(1);

/// How long the monitor's check and retried catch-ups may wait for a shared store: a
/// connection cut off without a reset would otherwise hang them for minutes.
pub(super) const MONITOR_DEADLINE: Duration = Duration::from_secs(2);

/// The replica's clock of confirmations.
#[derive(Debug)]
pub(super) struct Currency {
    /// `None`: the store is this process's alone, and the cache is the truth.
    bound: Option<Duration>,
    started: Instant,
    /// Milliseconds since `started` when the listener last heard its own ping.
    heard_ms: AtomicU64,
    /// Whether the store answered the last look (a check, a read on the decision
    /// path): while it did not, a user or team not in memory is not read from it.
    reachable: AtomicBool,
}

impl Currency {
    pub(super) fn new() -> Self {
        Self {
            bound: None,
            started: Instant::now(),
            heard_ms: AtomicU64::new(0),
            reachable: AtomicBool::new(true),
        }
    }

    pub(super) fn now_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn ms(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.started).as_millis()).unwrap_or(u64::MAX)
    }
}

/// Why a view of the policy cannot be shown current: its calls may be denied from it,
/// never allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unconfirmed(pub String);

impl std::fmt::Display for Unconfirmed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Hub {
    /// Policy unconfirmed for longer than `bound` is not answered with an ALLOW or an
    /// ASK: for a store other replicas write too.
    #[must_use]
    pub fn with_max_staleness(mut self, bound: Duration) -> Self {
        self.currency.bound = Some(bound);
        self
    }

    /// The bound on staleness, when the store is shared.
    pub fn max_staleness(&self) -> Option<Duration> {
        self.currency.bound
    }

    /// A team's policy was shown current as of `at_ms` (since the hub started).
    pub(super) fn confirm(team: &Team, at_ms: u64) {
        team.confirmed_ms.fetch_max(at_ms, Ordering::AcqRel);
    }

    /// Why the team's policy cannot be shown current now, if it cannot.
    pub(super) fn unconfirmed(&self, team_id: &str, team: &Team) -> Option<Unconfirmed> {
        let bound = self.currency.bound?;
        let age = self
            .currency
            .now_ms()
            .saturating_sub(team.confirmed_ms.load(Ordering::Acquire));
        (age > millis(bound)).then(|| {
            Unconfirmed(format!(
                "the policy of team {team_id} on this replica was last confirmed with the store {:.1} s ago, more than store.max_staleness_secs ({} s): it may be missing changes made on another replica, so this replica allows nothing until it reaches the store again; use another replica",
                age as f64 / 1000.0,
                bound.as_secs()
            ))
        })
    }

    /// Why a view of `team` is unconfirmed: its own policy's, or else the
    /// organisation's (part of every team's view, so as current as they).
    pub(super) fn unconfirmed_view(&self, team_id: &str, team: &Team) -> Option<Unconfirmed> {
        // without a bound nothing is: not even the organisation's is looked up
        self.currency.bound?;
        self.unconfirmed(team_id, team).or_else(|| {
            let held = self.teams.get(crate::auth::ORG_TEAM)?.clone();
            self.unconfirmed(crate::auth::ORG_TEAM, &held)
        })
    }

    /// The listener heard this replica's ping sent at `sent`: every notice committed
    /// before then has been handled, so every team not waiting for a failed catch-up
    /// was current then.
    pub(super) fn heard(&self, sent: Instant) {
        let at = self.currency.ms(sent);
        self.currency.heard_ms.fetch_max(at, Ordering::AcqRel);
        let stale = self.health.borrow().stale.clone();
        for team in &self.teams {
            if !stale.contains_key(team.key()) {
                Self::confirm(team.value(), at);
            }
        }
        self.set_listener(true);
    }

    pub(super) fn set_listener(&self, up: bool) {
        self.health.send_if_modified(|h| {
            if h.listener == Some(up) {
                return false;
            }
            if up {
                tracing::info!("change listener hears its own pings again");
            } else {
                tracing::error!("change listener lost: changes made on other replicas are not seen; decisions of every team turn to UNAVAILABLE after store.max_staleness_secs unless it is back");
            }
            h.listener = Some(up);
            true
        });
    }

    /// Whether the store answered the last look.
    pub(super) fn reachable(&self) -> bool {
        // the embedded store's reads are local: a failed check is about writes
        self.currency.bound.is_none() || self.currency.reachable.load(Ordering::Acquire)
    }

    pub(super) fn set_reachable(&self, reachable: bool) {
        self.currency.reachable.store(reachable, Ordering::Release);
    }

    /// How long since this replica last showed its policy current (the listener heard
    /// its own ping); `None` for the embedded store, which is always current.
    pub fn staleness(&self) -> Option<Duration> {
        self.currency.bound?;
        let heard = self.currency.heard_ms.load(Ordering::Acquire);
        Some(Duration::from_millis(
            self.currency.now_ms().saturating_sub(heard),
        ))
    }

    /// Why the team's policy, as held here, cannot be shown current now, if it cannot
    /// (`None` too for a team not in memory: it is read fresh when next needed).
    pub fn unconfirmed_team(&self, team_id: &str) -> Option<Unconfirmed> {
        let team = self.teams.get(team_id)?;
        self.unconfirmed(team_id, &team)
    }

    /// Every `every`, turns health NOT_SERVING while the replica's policy is
    /// unconfirmed past the bound, and SERVING again once it is confirmed; tells the
    /// subscribers of each team past the bound so (their streams end, and they
    /// resume on a replica that can see). Returns at once for the embedded store.
    pub async fn watch_currency(self: std::sync::Arc<Self>, every: Duration) {
        let Some(bound) = self.currency.bound else {
            return;
        };
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            for team in &self.teams {
                if team.watched() && self.unconfirmed(team.key(), team.value()).is_some() {
                    team.tell_unconfirmed();
                }
            }
            let behind = self.staleness().is_some_and(|age| age > bound).then(|| {
                format!(
                    "policy not confirmed with the store for more than store.max_staleness_secs ({} s): this replica may be cut off from changes made on others",
                    bound.as_secs()
                )
            });
            self.health.send_if_modified(|h| {
                if h.behind == behind {
                    return false;
                }
                match &behind {
                    Some(why) => tracing::error!(reason = %why, "health NOT_SERVING: decisions that are not DENY answer UNAVAILABLE"),
                    None => tracing::info!("policy confirmed with the store again: health SERVING"),
                }
                h.behind = behind.clone();
                true
            });
        }
    }

    /// `read` within `deadline` when the store is shared (a connection cut off without
    /// a reset hangs instead of failing); at once for the embedded store.
    pub(super) async fn within<T>(
        &self,
        deadline: Duration,
        read: impl std::future::Future<Output = Result<T, HubError>>,
    ) -> Result<T, HubError> {
        if self.currency.bound.is_none() {
            return read.await;
        }
        match tokio::time::timeout(deadline, read).await {
            Ok(result) => result,
            Err(_) => {
                self.set_reachable(false);
                Err(HubError::Store(StoreError::Unavailable(format!(
                    "no answer from the store within {} ms",
                    deadline.as_millis()
                ))))
            }
        }
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::SqliteStore;
    use std::sync::Arc;

    const BOUND: Duration = Duration::from_secs(5);

    async fn hub(dir: &tempfile::TempDir, bound: Option<Duration>) -> Hub {
        let store = SqliteStore::open(&dir.path().join("t.db"), 100)
            .await
            .unwrap();
        let hub = Hub::new(Arc::new(store), 16, 100);
        match bound {
            Some(bound) => hub.with_max_staleness(bound),
            None => hub,
        }
    }

    /// Moves the hub's clock `by` into the future, as time passing would: what was
    /// confirmed before is that much older.
    fn age(hub: &mut Hub, by: Duration) {
        hub.currency.started -= by;
    }

    #[tokio::test]
    async fn a_view_unconfirmed_past_the_bound_is_marked_until_a_ping_is_heard() {
        let dir = tempfile::tempdir().unwrap();
        let mut hub = hub(&dir, Some(BOUND)).await;
        let fresh = hub.effective_to_decide("acme", "alice").await.unwrap();
        assert_eq!(fresh.unconfirmed, None, "a team just read is current");

        age(&mut hub, BOUND * 2);
        let old = hub.effective_to_decide("acme", "alice").await.unwrap();
        let why = old.unconfirmed.expect("unconfirmed past the bound").0;
        assert!(why.contains("store.max_staleness_secs (5 s)"), "{why}");
        assert!(hub.staleness().unwrap() > BOUND);

        // a ping sent now and heard: every notice before it was handled
        hub.heard(Instant::now());
        let again = hub.effective_to_decide("acme", "alice").await.unwrap();
        assert_eq!(again.unconfirmed, None);
        assert!(hub.staleness().unwrap() < BOUND);
    }

    #[tokio::test]
    async fn a_ping_does_not_confirm_a_team_whose_catch_up_failed() {
        let dir = tempfile::tempdir().unwrap();
        let mut hub = hub(&dir, Some(BOUND)).await;
        hub.effective_to_decide("acme", "alice").await.unwrap();
        hub.effective_to_decide("globex", "bob").await.unwrap();
        hub.health.send_modify(|h| {
            h.stale.insert("acme".into(), "catch-up failed".into());
        });
        age(&mut hub, BOUND * 2);
        hub.heard(Instant::now());
        let acme = hub.effective_to_decide("acme", "alice").await.unwrap();
        assert!(acme.unconfirmed.is_some());
        let globex = hub.effective_to_decide("globex", "bob").await.unwrap();
        assert_eq!(globex.unconfirmed, None);
    }

    #[tokio::test]
    async fn a_user_not_in_memory_is_decided_at_once_while_the_store_is_unreachable() {
        let dir = tempfile::tempdir().unwrap();
        let hub = hub(&dir, Some(BOUND)).await;
        hub.effective_to_decide("acme", "alice").await.unwrap();
        hub.set_reachable(false);
        let bob = hub.effective_to_decide("acme", "bob").await.unwrap();
        let why = bob.unconfirmed.expect("bob's own settings are unknown").0;
        assert!(why.contains("user bob"), "{why}");
        assert_eq!(hub.cached_users("acme"), 1, "nothing unknown is cached");
        // a team the replica never read cannot be decided at all
        assert!(matches!(
            hub.effective_to_decide("globex", "bob").await,
            Err(HubError::Store(StoreError::Unavailable(_)))
        ));
        hub.set_reachable(true);
        let bob = hub.effective_to_decide("acme", "bob").await.unwrap();
        assert_eq!(bob.unconfirmed, None);
    }

    #[tokio::test]
    async fn watchers_of_a_team_past_the_bound_are_told() {
        let dir = tempfile::tempdir().unwrap();
        let mut hub = hub(&dir, Some(BOUND)).await;
        let mut acme = hub.subscribe("acme").await.unwrap();
        assert_eq!(hub.unconfirmed_team("acme"), None);
        age(&mut hub, BOUND * 2);
        let why = hub.unconfirmed_team("acme").expect("past the bound").0;
        assert!(why.contains("store.max_staleness_secs (5 s)"), "{why}");
        let hub = Arc::new(hub);
        let ticking = tokio::spawn(hub.clone().watch_currency(Duration::from_millis(10)));
        let told = tokio::time::timeout(Duration::from_secs(10), acme.recv())
            .await
            .expect("told within the deadline");
        assert!(
            matches!(told, Ok(crate::hub::HubEvent::Unconfirmed)),
            "{told:?}"
        );
        assert!(!hub.health().borrow().current());
        ticking.abort();
        assert_eq!(
            hub.unconfirmed_team("globex"),
            None,
            "not in memory: read fresh"
        );
    }

    #[tokio::test]
    async fn the_embedded_store_is_always_current() {
        let dir = tempfile::tempdir().unwrap();
        let mut hub = hub(&dir, None).await;
        hub.effective_to_decide("acme", "alice").await.unwrap();
        age(&mut hub, Duration::from_secs(3600));
        hub.set_reachable(false);
        let eff = hub.effective_to_decide("acme", "bob").await.unwrap();
        assert_eq!(eff.unconfirmed, None);
        assert_eq!(hub.staleness(), None);
    }
}
