//! The watch stream: a snapshot (or the changes after a revision), then every change
//! that affects the subscriber, with heartbeats and resyncs.

use super::decide::with_groups;
use super::principal::caller_groups;
use super::{Service, ServiceError, check_id};
use crate::auth::{Action, Principal, authorize};
use crate::hub::{Effective, HubEvent, Published};
use crate::policy::group_set::GroupSet;
use crate::store::{Change, ChangeDoc, History};
use futures::Stream;
use std::sync::Arc;
use tokio::sync::broadcast;

/// One event of a watch stream.
#[derive(Debug, Clone)]
pub enum WatchEvent {
    Snapshot {
        effective: Effective,
        resync: bool,
    },
    /// A committed change that affects the subscriber: the team's admin settings, or
    /// the subscriber's own user settings. One `Arc` is shared by every subscriber of
    /// the team, so a fan-out copies no document.
    Change(Arc<Published>),
    Heartbeat {
        revision: u64,
    },
}

impl WatchEvent {
    /// The team revision the event brings the subscriber to.
    pub fn revision(&self) -> u64 {
        match self {
            Self::Snapshot { effective, .. } => effective.revision,
            Self::Change(change) => change.revision,
            Self::Heartbeat { revision } => *revision,
        }
    }
}

impl Service {
    /// A snapshot (or the changes after `after`), then every change that affects the
    /// user, with heartbeats; ends with `Unavailable` on shutdown.
    pub async fn watch(
        self: &Arc<Self>,
        p: &Principal,
        team: &str,
        user: &str,
        after: Option<u64>,
    ) -> Result<impl Stream<Item = Result<WatchEvent, ServiceError>> + use<>, ServiceError> {
        let team: &str = &check_id("team_id", team)?;
        let user: &str = &check_id("user_id", user)?;
        authorize(p, team, Action::Evaluate(user))?;
        // subscribe first: whatever commits from here on reaches the receiver
        let mut rx = self.hub.subscribe(team).await?;
        let this = self.clone();
        let (team, user) = (team.to_owned(), user.to_owned());
        // the subscriber's groups: its snapshots are its own calls' view, combined
        // with the policies of those groups as Evaluate combines them
        let groups: GroupSet = caller_groups(p, &team, &user).clone();
        let mut first: Vec<WatchEvent> = Vec::new();
        let mut follows = {
            let effective = this.shown_effective(&team, &user, &groups).await?;
            Follows::of(&effective)
        };
        // the organisation's group policies carry no team revision: a member of some
        // group resuming may have missed a change to them, so it starts from a snapshot
        let org_may = !groups.is_empty() && this.hub.org_groups().await?.revision > 0;
        let mut seen = match after {
            Some(after) => match this.history_after(&team, after).await? {
                _ if org_may => {
                    let effective = this.shown_effective(&team, &user, &groups).await?;
                    let revision = effective.revision;
                    first.push(WatchEvent::Snapshot {
                        effective,
                        resync: true,
                    });
                    revision
                }
                History::Truncated => {
                    let effective = this.shown_effective(&team, &user, &groups).await?;
                    let revision = effective.revision;
                    first.push(WatchEvent::Snapshot {
                        effective,
                        resync: true,
                    });
                    revision
                }
                History::Changes(changes) => {
                    let mut seen = after;
                    for change in changes {
                        seen = change.revision;
                        if !affects(&user, &change) {
                            continue;
                        }
                        if let Some(snapshot) = this
                            .admin_snapshot(&team, &user, &groups, &change, &mut follows)
                            .await?
                        {
                            // the snapshot holds every change up to now: the rest are in it
                            seen = snapshot.revision();
                            first.clear();
                            first.push(snapshot);
                            break;
                        }
                        first.push(WatchEvent::Change(Arc::new(Published::new(change))));
                    }
                    seen.max(after)
                }
            },
            None => {
                let effective = this.shown_effective(&team, &user, &groups).await?;
                let revision = effective.revision;
                first.push(WatchEvent::Snapshot {
                    effective,
                    resync: false,
                });
                revision
            }
        };
        Ok(async_stream::stream! {
            for event in first {
                yield Ok(event);
            }
            let mut heartbeat = tokio::time::interval(this.heartbeat);
            heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            heartbeat.tick().await;
            // made once, not at every turn of the loop: each new one registers with the
            // token, and a fan-out turns this loop once per subscriber
            let cancelled = this.shutdown.cancelled();
            tokio::pin!(cancelled);
            loop {
                tokio::select! {
                    () = &mut cancelled => {
                        yield Err(ServiceError::Unavailable("server shutting down: reconnect with after_revision".into()));
                        break;
                    }
                    _ = heartbeat.tick() => {
                        // a heartbeat says "current at `seen`": not from a stale view
                        if let Some(why) = this.hub.unconfirmed_team(&team) {
                            yield Err(ServiceError::Unavailable(why.to_string()));
                            break;
                        }
                        yield Ok(WatchEvent::Heartbeat { revision: seen });
                    }
                    received = rx.recv() => match received {
                        Ok(HubEvent::Change(change)) => {
                            if change.revision <= seen {
                                continue;
                            }
                            seen = change.revision;
                            if affects(&user, &change) {
                                heartbeat.reset();
                                match this.admin_snapshot(&team, &user, &groups, &change, &mut follows).await {
                                    Ok(Some(snapshot)) => {
                                        seen = seen.max(snapshot.revision());
                                        yield Ok(snapshot);
                                    }
                                    Ok(None) => yield Ok(WatchEvent::Change(change)),
                                    Err(e) => {
                                        yield Err(e);
                                        break;
                                    }
                                }
                            }
                        }
                        Ok(HubEvent::Resync) | Err(broadcast::error::RecvError::Lagged(_)) => {
                            // fell behind the ring (or the hub reloaded): start over from a snapshot
                            match this.shown_effective(&team, &user, &groups).await {
                                Ok(effective) => {
                                    seen = effective.revision;
                                    yield Ok(WatchEvent::Snapshot { effective, resync: true });
                                }
                                Err(e) => {
                                    yield Err(e);
                                    break;
                                }
                            }
                        }
                        Ok(HubEvent::Groups(changed)) => {
                            // the organisation's policy of one of the subscriber's groups
                            if !groups.iter().any(|g| changed.contains(g)) {
                                continue;
                            }
                            heartbeat.reset();
                            match this.shown_effective(&team, &user, &groups).await {
                                Ok(effective) => {
                                    seen = seen.max(effective.revision);
                                    follows = Follows::of(&effective);
                                    yield Ok(WatchEvent::Snapshot { effective, resync: true });
                                }
                                Err(e) => {
                                    yield Err(e);
                                    break;
                                }
                            }
                        }
                        Ok(HubEvent::Unconfirmed) => {
                            // re-checked: a catch-up may have confirmed the team since
                            if let Some(why) = this.hub.unconfirmed_team(&team) {
                                yield Err(ServiceError::Unavailable(why.to_string()));
                                break;
                            }
                        }
                        Err(broadcast::error::RecvError::Closed) => {
                            yield Err(ServiceError::Unavailable("change hub closed: reconnect".into()));
                            break;
                        }
                    }
                }
            }
        })
    }

    /// The view a subscriber in `groups` is shown: the team's controls combined
    /// with those groups' policies, by the one path decisions take.
    async fn shown_effective(
        &self,
        team: &str,
        user: &str,
        groups: &GroupSet,
    ) -> Result<Effective, ServiceError> {
        with_groups(self.current_effective(team, user).await?, groups)
    }

    /// An admin change the subscriber cannot apply to its view as sent, sent as a
    /// fresh snapshot instead (with `resync`: it replaces the whole view). Two such:
    /// a user without settings of their own has the team's defaults, carried by the
    /// admin controls, so a change that sets, changes or clears them changes that
    /// user's settings too; and a member of a group with a policy sees the team's
    /// controls combined with it, which the team's document alone does not say.
    async fn admin_snapshot(
        &self,
        team: &str,
        user: &str,
        groups: &GroupSet,
        change: &Change,
        follows: &mut Follows,
    ) -> Result<Option<WatchEvent>, ServiceError> {
        match &change.doc {
            ChangeDoc::User { .. } => {
                // the user's own document: defaults no longer apply to them
                follows.defaults = false;
                Ok(None)
            }
            ChangeDoc::Admin { controls } => {
                let defaults_may = controls.default_user_settings.is_some() || follows.defaults;
                // a group policy added, changed, or (the view was combined) removed
                let groups_may = follows.groups
                    || groups
                        .iter()
                        .any(|g| controls.groups.contains_key(g.as_str()));
                if !defaults_may && !groups_may {
                    return Ok(None);
                }
                let effective = self.shown_effective(team, user, groups).await?;
                let defaults_change = defaults_may && effective.user.stored.revision == 0;
                *follows = Follows::of(&effective);
                if !defaults_change && !groups_may {
                    return Ok(None);
                }
                Ok(Some(WatchEvent::Snapshot {
                    effective,
                    resync: true,
                }))
            }
        }
    }

    /// The changes a watch resumed at `after` missed. A revision the team never
    /// reached (a client from before a backup restore, or one that made it up) is
    /// answered like one older than the history: with a resync snapshot. Resuming
    /// past the head would otherwise skip every change up to that revision, a kill
    /// switch included.
    async fn history_after(&self, team: &str, after: u64) -> Result<History, ServiceError> {
        let store = &self.store;
        if after > store.team_revision(team).await? {
            return Ok(History::Truncated);
        }
        Ok(store.changes_after(team, after, u32::MAX).await?)
    }
}

/// What of a subscriber's view an admin event alone would not keep right.
#[derive(Debug, Clone, Copy)]
struct Follows {
    /// The user's settings are the team's defaults (no document of their own, and
    /// the team has defaults), which admin changes then change.
    defaults: bool,
    /// The view combines the policies of some of the subscriber's groups.
    groups: bool,
}

impl Follows {
    fn of(effective: &Effective) -> Self {
        Self {
            defaults: effective.user.stored.revision == 0
                && effective.admin.head().default_user_settings.is_some(),
            groups: !effective.groups_applied().is_empty(),
        }
    }
}

/// Whether a change concerns a subscriber of `user`: every admin change does, a user
/// change only the user's own.
fn affects(user: &str, change: &Change) -> bool {
    match &change.doc {
        ChangeDoc::Admin { .. } => true,
        ChangeDoc::User { user_id, .. } => user_id == user,
    }
}
