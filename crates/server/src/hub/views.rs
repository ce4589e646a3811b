//! A team's view as the hub serves it: the team loaded into memory on first use,
//! its admin controls, and a user's effective policy (read from the store on a
//! miss, or, while a shared store is unreachable, decided with the team's alone).

use super::compile::{compile_stored_admin, compile_user};
use super::currency::{READ_DEADLINE, Unconfirmed};
use super::team::Team;
use super::{CachedAdmin, CachedUser, Effective, Hub, HubError};
use crate::policy::ToolActionLists;
use crate::store::{StoreError, Versioned};
use arc_swap::ArcSwap;
use dashmap::DashMap;
use dashmap::mapref::entry::Entry;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use tokio::sync::Mutex;

impl Hub {
    /// The team, from memory or loaded on first use (its revision read before its
    /// documents, so they are at least as new).
    pub(super) async fn team(&self, team_id: &str) -> Result<Arc<Team>, HubError> {
        if let Some(team) = self.teams.get(team_id) {
            team.touched.store(self.now_secs(), Ordering::Relaxed);
            return Ok(team.clone());
        }
        // boxed: a decision's future would otherwise carry the store's reads in its size
        Box::pin(self.load_team(team_id)).await
    }

    /// [`Hub::team`] for a team not in memory: read from the store.
    async fn load_team(&self, team_id: &str) -> Result<Arc<Team>, HubError> {
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
        let mut unconfirmed = self.unconfirmed_view(team_id, &team);
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
            // boxed, as a team's read is
            None => Box::pin(self.load_user(&team, team_id, user_id)).await?,
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

    /// A user's settings not in memory: read from the store, compiled and cached.
    async fn load_user(
        &self,
        team: &Team,
        team_id: &str,
        user_id: &str,
    ) -> Result<Arc<CachedUser>, HubError> {
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
            if before.is_multiple_of(2) && team.evictions.load(Ordering::Acquire) == before {
                break user;
            }
        };
        self.trim_users(team, user_id);
        Ok(user)
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
}
