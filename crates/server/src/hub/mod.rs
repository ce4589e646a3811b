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

use crate::auth::Principal;
use crate::auth::issued::{ActiveToken, IssuedTokens, parse_role, principal_name};
use crate::policy::groups::GroupedAdmin;
use crate::policy::{
    AdminControls, CompiledAdmin, CompiledUser, PolicyError, ToolActionLists, UserSettings,
};
use crate::store::{
    Change, ChangeDoc, History, Notice, NoticeStream, Store, StoreError, Versioned,
};
use arc_swap::ArcSwap;
use dashmap::DashMap;
use dashmap::mapref::entry::Entry;
use futures::StreamExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use tokio::sync::{Mutex, broadcast, watch};

mod currency;
mod groups;
mod health;
mod org;
mod replicas;
mod team;

pub use org::OrgGroups;

pub use groups::{GroupCache, MAX_CACHED_GROUP_SETS};

pub use currency::Unconfirmed;
use currency::{Currency, MONITOR_DEADLINE, READ_DEADLINE};
pub use health::{HubHealth, Lag};
use team::Team;
pub use team::{HubEvent, Published, Subscription};

/// How many changes one catch-up reads at a time.
const CATCH_UP_BATCH: u32 = 1_000;

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

/// Compiles `doc`, stored as `stamp` says; the document is read, not kept.
fn compile_admin(
    team_id: &str,
    doc: &AdminControls,
    stamp: Versioned<()>,
) -> Result<CachedAdmin, HubError> {
    let admin = CompiledAdmin::compile(doc).map_err(|source| HubError::Compile {
        team_id: team_id.to_owned(),
        what: "admin settings",
        source,
    })?;
    let default_user = match &doc.default_user_settings {
        Some(defaults) => {
            let compiled = CompiledUser::compile(defaults).map_err(|source| HubError::Compile {
                team_id: team_id.to_owned(),
                what: "default user settings",
                source,
            })?;
            Some(Arc::new(Cached {
                stored: Versioned {
                    doc: UserSettings::clone(defaults),
                    revision: 0,
                    updated_at_ms: stamp.updated_at_ms,
                    updated_by: stamp.updated_by.clone(),
                },
                compiled,
            }))
        }
        None => None,
    };
    Ok(CachedAdmin {
        stamp,
        compiled: CompiledTeam {
            admin,
            default_user,
            groups: GroupCache::default(),
        },
    })
}

/// [`compile_admin`] on a record read from the store.
fn compile_stored_admin(
    team_id: &str,
    stored: Versioned<AdminControls>,
) -> Result<CachedAdmin, HubError> {
    let Versioned {
        doc,
        revision,
        updated_at_ms,
        updated_by,
    } = stored;
    let stamp = Versioned {
        doc: (),
        revision,
        updated_at_ms,
        updated_by,
    };
    compile_admin(team_id, &doc, stamp)
}

fn compile_user(team_id: &str, stored: Versioned<UserSettings>) -> Result<CachedUser, HubError> {
    let compiled = CompiledUser::compile(&stored.doc).map_err(|source| HubError::Compile {
        team_id: team_id.to_owned(),
        what: "user settings",
        source,
    })?;
    Ok(Cached { stored, compiled })
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

    async fn team(&self, team_id: &str) -> Result<Arc<Team>, HubError> {
        if let Some(team) = self.teams.get(team_id) {
            team.touched.store(self.now_secs(), Ordering::Relaxed);
            return Ok(team.clone());
        }
        if !self.reachable() {
            return Err(HubError::Store(StoreError::Unavailable(format!(
                "team {team_id} is not in this replica's memory and the store is unreachable"
            ))));
        }
        let read_at = self.currency.now_ms();
        // the revision first: documents read after it are at least as new
        let (revision, admin) = self
            .within(READ_DEADLINE, async {
                let revision = self.store.team_revision(team_id).await?;
                let admin = self.store.get_admin(team_id).await?;
                Ok((revision, admin))
            })
            .await?;
        if team_id == crate::auth::ORG_TEAM {
            self.set_org(revision, &admin.doc.groups);
        }
        let admin = compile_stored_admin(team_id, admin)?;
        let team = Arc::new(Team {
            confirmed_ms: AtomicU64::new(read_at),
            published: AtomicU64::new(revision),
            admin: ArcSwap::from_pointee(admin),
            users: DashMap::new(),
            evictions: AtomicU64::new(0),
            evicting: std::sync::Mutex::new(()),
            tx: OnceLock::new(),
            queued: std::sync::Mutex::default(),
            catch_up: Mutex::new(()),
            touched: AtomicU64::new(self.now_secs()),
        });
        // a racing loader may have won; keep the first so subscribers share one channel
        let team = self.teams.entry(team_id.to_owned()).or_insert(team).clone();
        Ok(team)
    }

    /// The tokens issued through the API that authenticate, as last read.
    pub fn issued_tokens(&self) -> Arc<IssuedTokens> {
        self.issued.clone()
    }

    /// Re-reads the issued tokens in force from the store: after a local create or
    /// revoke, on another replica's notice, after a reconnect, and at start. A row
    /// that does not read as a token is left out (it authenticates no one) and logged.
    pub async fn reload_tokens(&self) -> Result<(), StoreError> {
        let rows = self.store.active_tokens(crate::store::now_ms()).await?;
        let active = rows.into_iter().filter_map(|t| {
            let digest = hex::decode(&t.token_hash)
                .ok()
                .and_then(|d| <[u8; 32]>::try_from(d).ok());
            let role = parse_role(&t.role);
            let (Some(digest), Some(role)) = (digest, role) else {
                tracing::error!(token_id = %t.token_id, "stored token unreadable: ignored");
                return None;
            };
            Some(ActiveToken {
                digest,
                principal: Principal {
                    groups: t.groups.into(),
                    name: principal_name(&t.user_id, &t.token_id),
                    role,
                    team: Some(t.team_id),
                    user: Some(t.user_id),
                },
                expires_at_ms: t.expires_at_ms,
            })
        });
        self.issued.replace(active);
        self.tokens_stale.store(false, Ordering::Release);
        Ok(())
    }

    /// Re-reads the issued tokens, or marks them stale for the monitor to retry.
    pub(crate) async fn reload_tokens_or_mark(&self) -> Result<(), StoreError> {
        let result = self.reload_tokens().await;
        if let Err(e) = &result {
            self.tokens_stale.store(true, Ordering::Release);
            tracing::warn!(error = %e, "issued tokens not re-read: retried by the monitor");
        }
        result
    }

    /// Whether the issued tokens wait for a re-read that failed.
    pub fn tokens_stale(&self) -> bool {
        self.tokens_stale.load(Ordering::Acquire)
    }

    /// The team's latest published revision.
    pub async fn revision(&self, team_id: &str) -> Result<u64, HubError> {
        Ok(self.team(team_id).await?.published.load(Ordering::Acquire))
    }

    /// The team's admin settings, from the cache.
    pub async fn admin(&self, team_id: &str) -> Result<Arc<CachedAdmin>, HubError> {
        let team = self.team(team_id).await?;
        Ok(team.admin.load_full())
    }

    /// The user's effective policy, from the cache (loading on a miss).
    pub async fn effective(&self, team_id: &str, user_id: &str) -> Result<Effective, HubError> {
        self.effective_view(team_id, user_id, false).await
    }

    /// [`Hub::effective`] for deciding calls: while a shared store is unreachable, a
    /// user not in memory is decided at once with settings of their own unknown (the
    /// view is [`Unconfirmed`], so only a DENY from it may be answered) instead of
    /// waiting on the store.
    pub async fn effective_to_decide(
        &self,
        team_id: &str,
        user_id: &str,
    ) -> Result<Effective, HubError> {
        self.effective_view(team_id, user_id, true).await
    }

    async fn effective_view(
        &self,
        team_id: &str,
        user_id: &str,
        provisional: bool,
    ) -> Result<Effective, HubError> {
        let team = self.team(team_id).await?;
        let org = self.org_groups().await?;
        let revision = team.published.load(Ordering::Acquire);
        let admin = team.admin.load_full();
        // the organisation's policies are part of every team's view: as current as they
        let mut unconfirmed = self.unconfirmed(team_id, &team).or_else(|| {
            let held = self.teams.get(crate::auth::ORG_TEAM)?.clone();
            self.unconfirmed(crate::auth::ORG_TEAM, &held)
        });
        let cached = team.users.get(user_id).map(|u| u.clone());
        let user = match cached {
            Some(user) => user,
            // an outage: decided at once from the team's policy with the user's own
            // settings unknown (a DENY stands), not after the caller's deadline
            None if provisional && !self.reachable() => {
                unconfirmed.get_or_insert_with(|| {
                    Unconfirmed(format!(
                        "the settings of user {user_id} are not in this replica's memory and the store is unreachable: only a DENY of the team's policy can be answered; retry once the store is back or on another replica"
                    ))
                });
                Arc::new(compile_user(team_id, Versioned::unset())?)
            }
            None => {
                let user = loop {
                    let before = team.evictions.load(Ordering::Acquire);
                    let stored = self
                        .within(READ_DEADLINE, async {
                            Ok(self.store.get_user(team_id, user_id).await?)
                        })
                        .await?;
                    let loaded = Arc::new(compile_user(team_id, stored)?);
                    // a change applied while we read wins if it is newer than what we read
                    let user = match team.users.entry(user_id.to_owned()) {
                        Entry::Occupied(mut cached) => {
                            if cached.get().stored.revision < loaded.stored.revision {
                                cached.insert(loaded);
                            }
                            cached.get().clone()
                        }
                        Entry::Vacant(slot) => slot.insert(loaded).clone(),
                    };
                    // users let go while we read may have taken a newer change of this
                    // user with them: read again, after the eviction
                    if before % 2 == 0 && team.evictions.load(Ordering::Acquire) == before {
                        break user;
                    }
                };
                self.trim_users(&team, user_id);
                user
            }
        };
        // a user who never wrote settings has the team's defaults, when it has some
        let user = match &admin.compiled.default_user {
            Some(defaults) if user.stored.revision == 0 => defaults.clone(),
            _ => user,
        };
        Ok(Effective {
            revision,
            admin,
            user,
            tool_actions: self.tool_actions(),
            unconfirmed,
            grouped: None,
            org,
        })
    }

    /// The policy file's `tool.action` lists in force.
    pub fn tool_actions(&self) -> Arc<ToolActionLists> {
        self.tool_actions.load_full()
    }

    /// Replaces the `tool.action` lists. They carry no team revision, so every
    /// subscriber of every team is sent a fresh snapshot.
    pub fn set_tool_actions(&self, lists: Arc<ToolActionLists>) {
        self.tool_actions.store(lists);
        for team in &self.teams {
            team.resync();
        }
    }

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
    fn trim_users(&self, team: &Team, keep: &str) {
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
