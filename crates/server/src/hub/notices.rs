//! Word of what changed outside the policy documents (approvals, pins, other
//! replicas' decision-log records), and following another process's commits: each
//! notice a catch-up, a re-read or a word passed on.

use super::currency::MONITOR_DEADLINE;
use super::{ApprovalsChanged, DecisionsCommitted, Hub, PinsChanged};
use crate::store::{Notice, NoticeStream};
use futures::StreamExt;
use std::sync::Arc;

impl Hub {
    /// Tells this replica's pin watchers that `team`'s pins changed.
    pub fn pins_changed(&self, team: &str) {
        // no receiver is not an error: no gateway is watching
        let _ = self.pins.send(PinsChanged::Team(Arc::from(team)));
    }

    pub fn pin_notices(&self) -> tokio::sync::broadcast::Receiver<PinsChanged> {
        self.pins.subscribe()
    }

    /// Tells this replica's approval watchers and waiters that `team`'s changed.
    pub fn approvals_changed(&self, team: &str) {
        // no receiver is not an error: nobody is waiting
        let _ = self.approvals.send(ApprovalsChanged::Team(Arc::from(team)));
    }

    pub fn approval_notices(&self) -> tokio::sync::broadcast::Receiver<ApprovalsChanged> {
        self.approvals.subscribe()
    }

    /// Word of other replicas' decision-log records, as their notices arrive.
    pub fn decision_notices(&self) -> tokio::sync::broadcast::Receiver<DecisionsCommitted> {
        self.decisions.subscribe()
    }

    /// Follows another process's commits until the notice stream ends: each notice
    /// triggers a catch-up of the team (or of every cached team after a reconnect).
    pub async fn follow(self: Arc<Self>, mut notices: NoticeStream) {
        while let Some(notice) = notices.next().await {
            match notice {
                Notice::Heard { sent } => {
                    self.heard(sent);
                    self.replica_heard(None);
                    continue;
                }
                Notice::Peer(origin) => {
                    self.replica_heard(Some(origin));
                    continue;
                }
                Notice::Lost => {
                    self.set_listener(false);
                    continue;
                }
                Notice::Reconnected => self.set_listener(true),
                _ => {}
            }
            if matches!(notice, Notice::Tokens | Notice::Reconnected) {
                let _ = self.reload_tokens_or_mark().await;
            }
            if matches!(notice, Notice::Reconnected) {
                let _ = self.approvals.send(ApprovalsChanged::All);
                let _ = self.pins.send(PinsChanged::All);
                let _ = self.decisions.send(DecisionsCommitted::Missed);
            }
            let teams: Vec<String> = match notice {
                // a team nobody has read yet loads fresh on first use
                Notice::Team(team) if self.teams.contains_key(&team) => vec![team],
                Notice::Approvals(team) => {
                    self.approvals_changed(&team);
                    continue;
                }
                Notice::Pins(team) => {
                    self.pins_changed(&team);
                    continue;
                }
                Notice::Decisions { first, last } => {
                    // nobody listening is the usual case, and not an error
                    let _ = self
                        .decisions
                        .send(DecisionsCommitted::Range { first, last });
                    continue;
                }
                Notice::Team(_)
                | Notice::Tokens
                | Notice::Heard { .. }
                | Notice::Peer(_)
                | Notice::Lost => continue,
                Notice::Reconnected => self.teams.iter().map(|t| t.key().clone()).collect(),
            };
            for team in teams {
                // a failure leaves the team stale, retried by `monitor`; a hung read
                // must not hold up the notices behind it
                let _ = self
                    .within(MONITOR_DEADLINE, self.catch_up_or_mark(&team))
                    .await;
            }
        }
    }
}
