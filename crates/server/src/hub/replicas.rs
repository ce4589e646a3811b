//! How many replicas share the store, counted from the pings every replica sends
//! its own listener (PostgreSQL delivers them to every listener): a replica heard
//! within the window is live. Rates divide their limits by this count.

use super::Hub;
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;
use tokio::time::Instant;

/// The most other replicas remembered: pings from more origins than this (a
/// misbehaving client of the database) are not counted.
const MAX_PEERS: usize = 1024;

/// The replicas heard lately, and their count (this one included).
#[derive(Debug)]
pub(super) struct Replicas {
    peers: Mutex<HashMap<u64, Instant>>,
    live: AtomicU32,
}

impl Default for Replicas {
    fn default() -> Self {
        Self {
            peers: Mutex::default(),
            live: AtomicU32::new(1),
        }
    }
}

impl Hub {
    /// The live replicas sharing the store, this one included (1 with the embedded
    /// store). Read on the decision path: one atomic load.
    pub fn live_replicas(&self) -> u32 {
        self.replicas.live.load(Ordering::Relaxed)
    }

    /// How long a replica stays counted after its last ping: the bound on staleness,
    /// four of its pings (every replica of a store is configured alike).
    fn replica_window(&self) -> Duration {
        self.max_staleness().unwrap_or(Duration::from_secs(5))
    }

    /// Another replica's ping (`peer` its origin), or this one's own (None): the
    /// count is made again at each, so a replica gone quiet leaves it within the
    /// window plus one of this replica's pings.
    pub(super) fn replica_heard(&self, peer: Option<u64>) {
        let now = Instant::now();
        let window = self.replica_window();
        let mut peers = self
            .replicas
            .peers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(peer) = peer
            && (peers.len() < MAX_PEERS || peers.contains_key(&peer))
        {
            peers.insert(peer, now);
        }
        peers.retain(|_, at| now.duration_since(*at) <= window);
        let live = u32::try_from(peers.len() + 1).unwrap_or(u32::MAX);
        drop(peers);
        if self.replicas.live.swap(live, Ordering::Relaxed) != live {
            tracing::info!(live, "replicas sharing the store");
            crate::metrics::live_replicas(live);
        }
    }
}
