//! One team in the hub: its compiled documents, and the ring and queue its
//! subscribers are fanned out from.

use super::{CachedAdmin, CachedUser};
use crate::store::{Change, ChangeDoc};
use arc_swap::ArcSwap;
use dashmap::DashMap;
use std::collections::{BTreeSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use tokio::sync::{Mutex, broadcast};

/// A committed change as the hub hands it to every subscriber of its team: one
/// allocation shared by all of them, with a slot where the transport keeps the
/// change's encoding, so a fan-out to many subscribers encodes it once.
#[derive(Debug)]
pub struct Published {
    pub change: Change,
    /// Opaque to the hub: bytes the transport computed from `change` alone.
    pub wire: std::sync::OnceLock<bytes::Bytes>,
}

impl Published {
    pub fn new(change: Change) -> Self {
        Self {
            change,
            wire: std::sync::OnceLock::new(),
        }
    }
}

impl std::ops::Deref for Published {
    type Target = Change;

    fn deref(&self) -> &Change {
        &self.change
    }
}

impl Published {
    /// Roughly the memory the change holds: what the queue's byte budget counts.
    fn weight(&self) -> usize {
        fn strings(lists: &[&Vec<String>]) -> usize {
            lists
                .iter()
                .flat_map(|l| l.iter())
                .map(|s| s.len() + std::mem::size_of::<String>())
                .sum()
        }
        let doc = match &self.change.doc {
            ChangeDoc::Admin { controls } => strings(&controls.lists().map(|(_, l)| l)),
            ChangeDoc::User { user_id, settings } => {
                user_id.len() + strings(&settings.lists().map(|(_, l)| l))
            }
        };
        // the encoding the transport caches is about as large again
        2 * doc + std::mem::size_of::<Self>() + self.change.actor.len()
    }
}

/// What the hub tells subscribers of a team.
#[derive(Debug, Clone)]
pub enum HubEvent {
    Change(Arc<Published>),
    /// The hub itself lost track (history truncated under it), or the policy file's
    /// server-wide `tool.action` lists changed: every subscriber resyncs.
    Resync,
    /// The team's policy here is no longer shown current (see `currency.rs`): a
    /// subscriber must stop presenting it and go to a replica that can.
    Unconfirmed,
    /// The organisation's policies of these groups changed (they carry no team
    /// revision): a subscriber in one of them is sent a fresh snapshot.
    Groups(Arc<BTreeSet<String>>),
}

/// What the ring carries: a change that is gone from the queue when a subscriber
/// gets to it was let go for the byte budget, and the subscriber resyncs.
#[derive(Debug, Clone)]
pub(super) enum RingEvent {
    Change(Weak<Published>),
    Resync,
    Unconfirmed,
    Groups(Arc<BTreeSet<String>>),
}

/// A subscriber's end of its team's ring.
#[derive(Debug)]
pub struct Subscription {
    pub(super) rx: broadcast::Receiver<RingEvent>,
}

impl Subscription {
    /// The next event; `Lagged` when the subscriber fell behind the ring or the
    /// queue's byte budget (it must resync from a snapshot).
    pub async fn recv(&mut self) -> Result<HubEvent, broadcast::error::RecvError> {
        match self.rx.recv().await? {
            RingEvent::Change(change) => change
                .upgrade()
                .map(HubEvent::Change)
                .ok_or(broadcast::error::RecvError::Lagged(1)),
            RingEvent::Resync => Ok(HubEvent::Resync),
            RingEvent::Unconfirmed => Ok(HubEvent::Unconfirmed),
            RingEvent::Groups(names) => Ok(HubEvent::Groups(names)),
        }
    }
}

#[derive(Debug)]
pub(super) struct Team {
    /// When the cache was last shown current, in milliseconds since the hub started
    /// (see `currency.rs`).
    pub(super) confirmed_ms: AtomicU64,
    /// The highest revision applied to this cache and broadcast.
    pub(super) published: AtomicU64,
    pub(super) admin: ArcSwap<CachedAdmin>,
    pub(super) users: DashMap<String, Arc<CachedUser>>,
    /// Odd while cached users are being let go, and moved on by every such
    /// eviction (a seqlock): a load that overlapped one may have read a document
    /// older than a change that was let go with it, so it reads again.
    pub(super) evictions: AtomicU64,
    /// Serialises evictions, so the count is odd exactly while one runs.
    pub(super) evicting: std::sync::Mutex<()>,
    /// Made by the first subscriber: a team that is only decided on holds no ring.
    pub(super) tx: OnceLock<broadcast::Sender<RingEvent>>,
    /// The changes the ring refers to, newest last, with their total weight.
    pub(super) queued: std::sync::Mutex<(VecDeque<Arc<Published>>, usize)>,
    /// Serialises catch-ups so changes are applied and broadcast in order.
    pub(super) catch_up: Mutex<()>,
    /// When the team was last read or written, in seconds since the hub started.
    pub(super) touched: AtomicU64,
}

impl Team {
    pub(super) fn watched(&self) -> bool {
        self.tx.get().is_some_and(|tx| tx.receiver_count() > 0)
    }

    pub(super) fn resync(&self) {
        if let Some(tx) = self.tx.get() {
            let _ = tx.send(RingEvent::Resync);
        }
    }

    /// Tells the team's subscribers, if any, that the organisation's policies of
    /// `names` changed.
    pub(super) fn groups_changed(&self, names: &Arc<BTreeSet<String>>) {
        if let Some(tx) = self.tx.get().filter(|tx| tx.receiver_count() > 0) {
            let _ = tx.send(RingEvent::Groups(names.clone()));
        }
    }

    /// Tells the team's subscribers, if any, that its policy here cannot be shown
    /// current.
    pub(super) fn tell_unconfirmed(&self) {
        if let Some(tx) = self.tx.get().filter(|tx| tx.receiver_count() > 0) {
            let _ = tx.send(RingEvent::Unconfirmed);
        }
    }

    /// Queues a change for subscribers, if there are any, within the budgets.
    pub(super) fn broadcast(&self, change: Arc<Published>, max_count: usize, max_bytes: usize) {
        let Some(tx) = self.tx.get().filter(|tx| tx.receiver_count() > 0) else {
            // nobody watches: whatever was queued is for nobody either
            let mut queued = self.queued.lock().unwrap_or_else(|e| e.into_inner());
            *queued = (VecDeque::new(), 0);
            return;
        };
        {
            let mut queued = self.queued.lock().unwrap_or_else(|e| e.into_inner());
            let (changes, bytes) = &mut *queued;
            *bytes += change.weight();
            changes.push_back(change.clone());
            // the newest always stays: a change alone past the budget still reaches
            // the subscribers that keep up
            while changes.len() > 1 && (changes.len() > max_count || *bytes > max_bytes) {
                if let Some(old) = changes.pop_front() {
                    *bytes -= old.weight();
                }
            }
        }
        let _ = tx.send(RingEvent::Change(Arc::downgrade(&change)));
    }

    /// Lets users go (`None`: all of them), bracketed for loads running meanwhile.
    pub(super) fn evict(&self, keys: Option<Vec<String>>) {
        let _one_at_a_time = self
            .evicting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        self.evictions.fetch_add(1, Ordering::AcqRel);
        match keys {
            Some(keys) => {
                for key in keys {
                    self.users.remove(&key);
                }
            }
            None => self.users.clear(),
        }
        self.evictions.fetch_add(1, Ordering::AcqRel);
    }
}
