//! The change hub: the in-memory view of committed policy, and its fan-out.
//!
//! The store is the truth. After every commit (local, or announced by another
//! replica) the hub reads the team's change history from the last revision it
//! published, applies each change to its cache of compiled policies and
//! broadcasts it, in revision order. A missed or reordered notice therefore
//! loses nothing: the next catch-up reads what was missed.
//!
//! Architecture invariant: subscribers never block the hub. Each team has one
//! bounded broadcast ring; a subscriber that falls behind is told it lagged and
//! resyncs from a snapshot. The ring holds weak references: the changes themselves
//! are held by a queue bounded in count and in bytes, so subscribers that stop
//! reading hold at most `watch.queue_bytes` of changes per team.
//!
//! A catch-up that fails (the store unreadable) leaves the team stale: it is
//! retried by [`Hub::monitor`] until it succeeds, and [`Hub::health`] says so
//! meanwhile, as it does when the store reports itself unfit for writes. With a
//! shared store each team also carries when it was last shown current
//! (`currency.rs`): past the bound, its view is marked [`Unconfirmed`].
//!
//! Here are the hub's types; a team's views are served by `views.rs`, changes are
//! applied by `changes.rs`, other processes' notices followed by `notices.rs`, and
//! the issued tokens re-read by `tokens.rs`.

use crate::auth::issued::IssuedTokens;
use crate::policy::groups::GroupedAdmin;
use crate::policy::{
    AdminControls, CompiledAdmin, CompiledUser, PolicyError, ToolActionLists, UserSettings,
};
use crate::store::{Store, StoreError, Versioned};
use arc_swap::ArcSwap;
use dashmap::DashMap;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::watch;

mod changes;
mod compile;
mod currency;
mod groups;
mod health;
mod notices;
mod org;
mod replicas;
mod team;
mod tokens;
mod views;

pub use currency::Unconfirmed;
pub use groups::{GroupCache, MAX_CACHED_GROUP_SETS};
pub use health::{HubHealth, Lag};
pub use org::OrgGroups;
pub use team::{HubEvent, Published, Subscription};

use currency::Currency;
use team::Team;

/// Errors of the hub.
#[derive(Debug, thiserror::Error)]
pub enum HubError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A stored document that no longer compiles: stored before a validation rule existed.
    #[error("stored {what} of team {team_id} does not compile: {source}")]
    Compile {
        team_id: String,
        what: &'static str,
        source: PolicyError,
    },
}

/// A compiled document with the stored record it came from.
#[derive(Debug)]
pub struct Cached<D, C> {
    pub stored: Versioned<D>,
    pub compiled: C,
}

pub type CachedUser = Cached<UserSettings, CompiledUser>;

/// A team's admin settings compiled, with the stamp of the stored record they came
/// from. The record itself is not kept beside its compiled form: the compiled lists
/// hold the MCP lists as one text each and the compiled controls the rest, so a list
/// of 100,000 entries is held once (issue 23's memory goal).
#[derive(Debug)]
pub struct CachedAdmin {
    /// The stored record's stamp; its document is `compiled`.
    stamp: Versioned<()>,
    pub compiled: CompiledTeam,
}

impl CachedAdmin {
    pub fn revision(&self) -> u64 {
        self.stamp.revision
    }

    /// The stored record whole, its lists read back from the compiled form (in order,
    /// duplicates kept): for answers and edits, which need the lists. Costs a copy of
    /// every entry: callers that need no list read [`Self::head`].
    pub fn stored(&self) -> Versioned<AdminControls> {
        Versioned {
            doc: self.compiled.admin.document(),
            revision: self.stamp.revision,
            updated_at_ms: self.stamp.updated_at_ms,
            updated_by: self.stamp.updated_by.clone(),
        }
    }

    /// The stored record's stamp, its document empty.
    pub fn stored_stamp(&self) -> Versioned<AdminControls> {
        Versioned {
            doc: AdminControls::default(),
            revision: self.stamp.revision,
            updated_at_ms: self.stamp.updated_at_ms,
            updated_by: self.stamp.updated_by.clone(),
        }
    }

    /// The stored document without its MCP lists (they read empty here): for callers
    /// that need the switches, modes, roles, approvals or defaults only.
    pub fn head(&self) -> &AdminControls {
        self.compiled.admin.switches()
    }
}

/// A team's admin controls compiled, with its default user settings compiled beside
/// them: what a user without a document of their own decides with. Swapped as one,
/// so a decision never sees new controls with old defaults.
#[derive(Debug)]
pub struct CompiledTeam {
    pub admin: CompiledAdmin,
    /// Revision 0 (the user has written nothing), the defaults as the document.
    pub default_user: Option<Arc<CachedUser>>,
    /// The controls combined with each set of groups callers came with.
    pub groups: GroupCache,
}

impl std::ops::Deref for CompiledTeam {
    type Target = CompiledAdmin;
    fn deref(&self) -> &CompiledAdmin {
        &self.admin
    }
}

/// A consistent view of one user's effective policy.
#[derive(Debug, Clone)]
pub struct Effective {
    /// The team revision this view is at (at least; documents may be newer).
    pub revision: u64,
    pub admin: Arc<CachedAdmin>,
    pub user: Arc<CachedUser>,
    /// The policy file's `tool.action` lists, the same for every team.
    pub tool_actions: Arc<ToolActionLists>,
    /// Set when this view cannot be shown current (the store shared and not reached
    /// within the bound, or the user's settings not in memory while it is
    /// unreachable): a DENY from it stands, anything else must not be answered.
    pub unconfirmed: Option<Unconfirmed>,
    /// The team's controls combined with the policies of the groups of the principal
    /// this view is for (None: no group of theirs has a policy, the team's decide).
    /// Set by the service, which knows the principal; the hub's views have none.
    pub grouped: Option<Arc<GroupedAdmin>>,
    /// The organisation's group policies, combined with the team's by the service.
    pub org: Arc<OrgGroups>,
}

impl Effective {
    /// The admin controls in force for this view: the team's, combined with the
    /// principal's groups when some apply. Decisions, exports and snapshots all read
    /// these, so what a client is shown is what it is decided by.
    pub fn admin_compiled(&self) -> &CompiledAdmin {
        self.grouped
            .as_deref()
            .map_or(&self.admin.compiled.admin, |g| &g.compiled)
    }

    /// [`Self::admin_compiled`] as a stored record (the team's stamp), to show.
    pub fn admin_shown(&self) -> Versioned<AdminControls> {
        match &self.grouped {
            None => self.admin.stored(),
            Some(g) => Versioned {
                doc: g.compiled.document(),
                ..self.admin.stored_stamp()
            },
        }
    }

    /// The principal's groups whose policies are combined into this view, by name.
    pub fn groups_applied(&self) -> &[String] {
        self.grouped.as_deref().map_or(&[], |g| g.origins.applied())
    }
}

/// The hub. Cheap to share behind an `Arc`.
pub struct Hub {
    store: Arc<dyn Store>,
    teams: DashMap<String, Arc<Team>>,
    queue_size: usize,
    queue_bytes: usize,
    max_cached_users: usize,
    /// Not stored: each replica reads them from its own policy file.
    tool_actions: ArcSwap<ToolActionLists>,
    started: Instant,
    /// How current the cached policy is shown to be, for a shared store.
    currency: Currency,
    health: watch::Sender<HubHealth>,
    /// The tokens issued through the API, re-read whole when they change.
    issued: Arc<IssuedTokens>,
    /// A re-read of the issued tokens failed: retried by the monitor until it reads,
    /// so a revocation another replica made is not missed for good.
    tokens_stale: std::sync::atomic::AtomicBool,
    /// Which team's approval requests changed, here or on another replica: watchers
    /// and waiters re-read the store when told (a lagging receiver reads everything).
    approvals: tokio::sync::broadcast::Sender<ApprovalsChanged>,
    /// Decision-log records other replicas committed, for this one's watchers.
    decisions: tokio::sync::broadcast::Sender<DecisionsCommitted>,
    /// Which team's tool pins changed, here or on another replica: `WatchPins`.
    pins: tokio::sync::broadcast::Sender<PinsChanged>,
    /// The replicas sharing the store, from their pings.
    replicas: replicas::Replicas,
    /// The organisation's group policies (`org.rs`); None until first read.
    org: arc_swap::ArcSwapOption<OrgGroups>,
    /// Serialises their updates, so an older read never replaces a newer one.
    org_writer: std::sync::Mutex<()>,
}

/// Word that a team's tool pins or pin settings changed (the shape of approvals').
pub type PinsChanged = ApprovalsChanged;

/// Word that approval requests changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalsChanged {
    Team(Arc<str>),
    /// Notices may have been missed (a reconnect): every team's.
    All,
}

/// Word that another replica committed decision-log records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecisionsCommitted {
    /// The records with these ids.
    Range { first: u64, last: u64 },
    /// Notices may have been missed (a reconnect): how many records is not known.
    Missed,
}

/// How many notices (of approvals, of decisions) a slow receiver may fall behind
/// before it re-reads.
const NOTICE_BACKLOG: usize = 1024;

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub")
            .field("teams", &self.teams.len())
            .finish_non_exhaustive()
    }
}

impl Hub {
    /// `queue_size` bounds each team's broadcast ring: how far a subscriber may fall
    /// behind before it must resync. `max_cached_users` bounds the users of a team
    /// kept compiled in memory.
    pub fn new(store: Arc<dyn Store>, queue_size: usize, max_cached_users: usize) -> Self {
        Self {
            store,
            teams: DashMap::new(),
            queue_size: queue_size.max(1),
            queue_bytes: usize::MAX,
            max_cached_users: max_cached_users.max(1),
            tool_actions: ArcSwap::default(),
            started: Instant::now(),
            currency: Currency::new(),
            health: watch::Sender::new(HubHealth::default()),
            issued: Arc::default(),
            tokens_stale: std::sync::atomic::AtomicBool::new(false),
            approvals: tokio::sync::broadcast::Sender::new(NOTICE_BACKLOG),
            decisions: tokio::sync::broadcast::Sender::new(NOTICE_BACKLOG),
            pins: tokio::sync::broadcast::Sender::new(NOTICE_BACKLOG),
            replicas: replicas::Replicas::default(),
            org: arc_swap::ArcSwapOption::empty(),
            org_writer: std::sync::Mutex::new(()),
        }
    }

    /// Bounds the bytes of changes queued per team for subscribers that lag.
    #[must_use]
    pub fn with_queue_bytes(mut self, queue_bytes: usize) -> Self {
        self.queue_bytes = queue_bytes.max(1);
        self
    }

    fn now_secs(&self) -> u64 {
        self.started.elapsed().as_secs()
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }
}
