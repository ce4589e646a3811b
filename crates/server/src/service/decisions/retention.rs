//! The decision log's retention: a pass every `prune_interval_secs` removes records
//! past the age and size limits, measuring age on a clock a jump cannot push ahead.

use crate::config::DecisionLogConfig;
use crate::store::{Retention, Store};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

/// Removes records past the age and size limits every `prune_interval_secs`, until
/// the server stops. Age is measured on [`RetentionClock`], not the wall clock alone:
/// a clock that jumped forward deletes nothing that was not due.
pub(in crate::service) async fn prune(
    store: Arc<dyn Store>,
    log: DecisionLogConfig,
    stop: CancellationToken,
) {
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
        let wall = crate::service::now_ms();
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
pub(in crate::service) struct RetentionClock {
    anchor_ms: i64,
    started: std::time::Instant,
}

impl RetentionClock {
    pub(super) fn start(wall_ms: i64, newest_ms: Option<i64>) -> Self {
        Self {
            anchor_ms: newest_ms.map_or(wall_ms, |n| n.min(wall_ms)),
            started: std::time::Instant::now(),
        }
    }

    fn now(&self, wall_ms: i64) -> i64 {
        self.now_after(wall_ms, self.started.elapsed())
    }

    pub(super) fn now_after(&self, wall_ms: i64, elapsed: Duration) -> i64 {
        let elapsed = i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX);
        wall_ms.min(self.anchor_ms.saturating_add(elapsed))
    }
}
