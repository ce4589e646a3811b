//! Settings reads and writes: authorization, list limits, compilation before a write,
//! the allowlist's read-modify-write retried on a concurrent write, and the catch-up
//! that makes a write acknowledged only once this replica decides with it.

use super::{Service, ServiceError, check_id};
use crate::auth::{Action, ORG_TEAM, Principal, authorize};
use crate::hub::{CachedAdmin, CachedUser};
use crate::policy::{
    self, AddOutcome, AdminControls, CompiledAdmin, CompiledUser, EntryProblem, PolicyError,
    ToolActionLists, UserField, UserSettings,
};
use crate::store::{AuditEvent, AuditFilter, StoreError, Versioned};
use std::sync::Arc;
use std::time::Duration;
use toolgate_core::backoff::Backoff;
use tracing::error;

/// How many write attempts a read-modify-write makes before giving up on contention.
const MAX_WRITE_ATTEMPTS: usize = 8;
/// Tries of the catch-up after a commit, the first wait between them (then times 4):
/// about half a second in all before the write is answered as not yet applied.
const CATCH_UP_TRIES: u32 = 3;
const CATCH_UP_RETRY: Duration = Duration::from_millis(100);

/// The outcome of an allowlist edit.
#[derive(Debug, Clone)]
pub struct AllowlistChange {
    pub settings: Versioned<UserSettings>,
    pub changed: bool,
    pub detail: String,
    /// Added, yet changing no decision now: why (empty when it counts).
    pub note: String,
}

/// The organisation's document ([`ORG_TEAM`]) holds group policies and nothing
/// else: a team's setting there would be a setting of a team nobody is in, which
/// an admin could take for one in force everywhere.
pub(super) fn check_org_doc(team: &str, controls: &AdminControls) -> Result<(), ServiceError> {
    if team != ORG_TEAM {
        return Ok(());
    }
    let mut given = controls.clone();
    // no browser servers means the defaults, as in any team
    if given.browser_server_ids.is_empty() {
        given.browser_server_ids = AdminControls::default().browser_server_ids;
    }
    let alone = AdminControls {
        groups: controls.groups.clone(),
        ..AdminControls::default()
    };
    if given == alone {
        return Ok(());
    }
    let (Ok(serde_json::Value::Object(given)), Ok(serde_json::Value::Object(alone))) =
        (serde_json::to_value(&given), serde_json::to_value(&alone))
    else {
        return Err(ServiceError::invalid(
            "auto_run_controls",
            "the organisation's document holds `groups` only",
        ));
    };
    let set: Vec<&str> = given
        .iter()
        .filter(|(k, v)| alone.get(*k) != Some(*v))
        .map(|(k, _)| k.as_str())
        .collect();
    Err(ServiceError::invalid(
        &format!(
            "auto_run_controls.{}",
            set.first().copied().unwrap_or("groups")
        ),
        format!(
            "team {ORG_TEAM:?} holds the organisation's group policies only, and {} set: leave them out (write them in each team's own policy) and give only `groups`",
            set.join(", ")
        ),
    ))
}

impl Service {
    /// Refuses a document with a list past the limit, then one that does not compile,
    /// naming each field under `prefix`: nothing is stored that would not decide.
    pub(super) fn check_doc(
        &self,
        prefix: &str,
        lists: &[(&str, &Vec<String>)],
        compile: impl FnOnce() -> Result<(), PolicyError>,
    ) -> Result<(), ServiceError> {
        let problems: Vec<EntryProblem> = lists
            .iter()
            .filter(|(_, l)| l.len() > self.limits.max_list_entries)
            .map(|(name, l)| EntryProblem {
                field: format!("{prefix}{name}"),
                entry: format!("{} entries", l.len()),
                rule: policy::Rule::TooMany,
                hint: format!(
                    "at most {} entries are allowed: use wildcards or globs",
                    self.limits.max_list_entries
                ),
            })
            .collect();
        if !problems.is_empty() {
            return Err(ServiceError::InvalidEntries(problems));
        }
        compile().map_err(|e| ServiceError::entries(prefix, e))
    }

    /// Waits for a write to commit, then brings the hub up to date with it.
    async fn commit<T>(
        &self,
        team: &str,
        write: impl Future<Output = Result<Versioned<T>, StoreError>>,
    ) -> Result<Versioned<T>, ServiceError> {
        let stored = write.await?;
        self.publish(team, stored.revision).await?;
        Ok(stored)
    }

    pub async fn get_admin(
        &self,
        p: &Principal,
        team: &str,
    ) -> Result<Arc<CachedAdmin>, ServiceError> {
        let team: &str = &check_id("team_id", team)?;
        authorize(p, team, Action::ReadTeam)?;
        Ok(self.hub.admin(team).await?)
    }

    pub async fn update_admin(
        &self,
        p: &Principal,
        team: &str,
        controls: AdminControls,
        expected: Option<u64>,
    ) -> Result<Versioned<AdminControls>, ServiceError> {
        let team: &str = &check_id("team_id", team)?;
        authorize(p, team, Action::WriteTeam)?;
        if let Some(path) = self.managed_by(team) {
            return Err(ServiceError::FailedPrecondition(format!(
                "team {team} is managed by the policy file {path}: edit that file (the server reloads it) or remove the team from it"
            )));
        }
        check_org_doc(team, &controls)?;
        self.write_admin(&p.name, team, controls, expected).await
    }

    /// The team's stored admin controls, with no authorization: for the policy file,
    /// whose authority is the file itself.
    pub async fn stored_admin(&self, team: &str) -> Result<Versioned<AdminControls>, ServiceError> {
        Ok(self.store.get_admin(team).await?)
    }

    /// The server-wide `tool.action` lists in force.
    pub fn tool_actions(&self) -> Arc<ToolActionLists> {
        self.hub.tool_actions()
    }

    /// Replaces the server-wide `tool.action` lists (the policy file's): every
    /// subscriber is sent a fresh snapshot.
    pub fn set_tool_actions(&self, lists: ToolActionLists) {
        self.hub.set_tool_actions(Arc::new(lists));
    }

    /// Checks admin controls as `update_admin` would, writing nothing: the settings in
    /// force, or the refusal the write would get.
    pub async fn validate_admin(
        &self,
        p: &Principal,
        team: &str,
        controls: &AdminControls,
        expected: Option<u64>,
    ) -> Result<Versioned<AdminControls>, ServiceError> {
        let team: &str = &check_id("team_id", team)?;
        authorize(p, team, Action::WriteTeam)?;
        if let Some(path) = self.managed_by(team) {
            return Err(ServiceError::FailedPrecondition(format!(
                "team {team} is managed by the policy file {path}: edit that file (the server reloads it) or remove the team from it"
            )));
        }
        check_org_doc(team, controls)?;
        let current = self.hub.admin(team).await?.stored();
        self.check_admin(controls, &current.doc)?;
        match expected {
            Some(expected) if expected != current.revision => Err(ServiceError::Conflict {
                expected,
                actual: current.revision,
            }),
            _ => Ok(current),
        }
    }

    /// Every entry of the controls and of their default user settings, as a write
    /// takes them (`before`: the document they replace).
    fn check_admin(
        &self,
        controls: &AdminControls,
        before: &AdminControls,
    ) -> Result<(), ServiceError> {
        self.check_doc("auto_run_controls.", &controls.lists(), || {
            CompiledAdmin::compile_write(controls, before).map(drop)
        })?;
        if let Some(managed) = &controls.managed {
            managed.check().map_err(|(field, message)| {
                ServiceError::invalid(&format!("auto_run_controls.{field}"), message)
            })?;
        }
        if let Some(defaults) = &controls.default_user_settings {
            self.check_doc(
                "auto_run_controls.default_user_settings.",
                &defaults.lists(),
                || CompiledUser::compile(defaults).map(drop),
            )?;
        }
        Ok(())
    }

    /// Validates and stores admin controls as `actor`, with no authorization: for the
    /// policy file's reloads, whose authority is the file itself.
    pub async fn write_admin(
        &self,
        actor: &str,
        team: &str,
        controls: AdminControls,
        expected: Option<u64>,
    ) -> Result<Versioned<AdminControls>, ServiceError> {
        let team: &str = &check_id("team_id", team)?;
        // the document as it was: its allowlists' `@category` entries may outlive their
        // category, and the write's allow_list_updated records name what changed
        let before = self.hub.admin(team).await?.stored().doc;
        self.check_admin(&controls, &before)?;
        let store = &self.store;
        let stored = self
            .commit(team, store.put_admin(team, &controls, expected, actor))
            .await?;
        self.audit_roles_change(actor, team, &before, &stored.doc, stored.revision)
            .await;
        Ok(stored)
    }

    pub async fn list_audit(
        &self,
        p: &Principal,
        mut filter: AuditFilter,
    ) -> Result<Vec<AuditEvent>, ServiceError> {
        match filter.team_id.take() {
            Some(team) => {
                let team = check_id("team_id", &team)?.into_owned();
                authorize(p, &team, Action::ReadAudit)?;
                filter.team_id = Some(team);
            }
            None if p.role == crate::auth::Role::Operator => {}
            None => {
                // a team principal lists its own team
                let team = p
                    .team
                    .clone()
                    .ok_or_else(|| ServiceError::invalid("team_id", "must not be empty"))?;
                authorize(p, &team, Action::ReadAudit)?;
                filter.team_id = Some(team);
            }
        }
        filter.limit = match filter.limit {
            0 => 100,
            n => n.min(1_000),
        };
        Ok(self.store.list_audit(&filter).await?)
    }

    pub async fn get_user(
        &self,
        p: &Principal,
        team: &str,
        user: &str,
    ) -> Result<Arc<CachedUser>, ServiceError> {
        let team: &str = &check_id("team_id", team)?;
        let user: &str = &check_id("user_id", user)?;
        authorize(p, team, Action::ReadUser(user))?;
        Ok(self.hub.effective(team, user).await?.user)
    }

    pub async fn update_user(
        &self,
        p: &Principal,
        team: &str,
        user: &str,
        settings: UserSettings,
        expected: Option<u64>,
    ) -> Result<Versioned<UserSettings>, ServiceError> {
        let team: &str = &check_id("settings.team_id", team)?;
        let user: &str = &check_id("settings.user_id", user)?;
        authorize(p, team, Action::WriteUser(user))?;
        self.write_user(&p.name, team, user, settings, expected)
            .await
    }

    /// Changes only `fields` of the user's settings to their values in `patch`, on top
    /// of the settings in effect (the team's defaults for a user who has written
    /// none). With `expected`, once and only at that revision; without, retried on a
    /// concurrent write, which can then change no field this update did not name.
    pub async fn update_user_fields(
        &self,
        p: &Principal,
        team: &str,
        user: &str,
        patch: &UserSettings,
        fields: &[UserField],
        expected: Option<u64>,
    ) -> Result<Versioned<UserSettings>, ServiceError> {
        let team: &str = &check_id("settings.team_id", team)?;
        let user: &str = &check_id("settings.user_id", user)?;
        authorize(p, team, Action::WriteUser(user))?;
        for _ in 0..MAX_WRITE_ATTEMPTS {
            let stored = self.store.get_user(team, user).await?;
            let mut settings = match (stored.revision, self.hub.admin(team).await?) {
                (0, admin) => admin
                    .head()
                    .default_user_settings
                    .as_deref()
                    .cloned()
                    .unwrap_or_default(),
                _ => stored.doc.clone(),
            };
            settings.set_fields(patch, fields);
            let at = expected.unwrap_or(stored.revision);
            match self
                .write_user(&p.name, team, user, settings, Some(at))
                .await
            {
                Err(ServiceError::Conflict { .. }) if expected.is_none() => continue,
                other => return other,
            }
        }
        Err(ServiceError::Unavailable(
            "too many concurrent writes to these settings: retry".into(),
        ))
    }

    /// Validates and stores a user's settings as `actor`, once authorized.
    async fn write_user(
        &self,
        actor: &str,
        team: &str,
        user: &str,
        settings: UserSettings,
        expected: Option<u64>,
    ) -> Result<Versioned<UserSettings>, ServiceError> {
        self.check_doc("settings.", &settings.lists(), || {
            CompiledUser::compile(&settings).map(drop)
        })?;
        let store = &self.store;
        self.commit(team, store.put_user(team, user, &settings, expected, actor))
            .await
    }

    /// Seed 001 `Yro` against the stored list, retried on a concurrent write; an entry
    /// added that changes no decision now comes back with a note saying why.
    pub async fn add_to_allowlist(
        &self,
        p: &Principal,
        team: &str,
        user: &str,
        server: &str,
        tool: &str,
    ) -> Result<AllowlistChange, ServiceError> {
        let mut change = self.add_entry(p, team, user, server, tool).await?;
        if change.changed {
            change.note = self.entry_note(team, user, server, tool).await?;
        }
        Ok(change)
    }

    /// Whether a call the entry covers is now allowed by it; if not, the decision's
    /// sentence, which says what would make it count.
    async fn entry_note(
        &self,
        team: &str,
        user: &str,
        server: &str,
        tool: &str,
    ) -> Result<String, ServiceError> {
        let team: &str = &check_id("team_id", team)?;
        let user: &str = &check_id("user_id", user)?;
        // a call the entry covers: a wildcard or glob side stands for any name
        let sample = |side: &str, any: &str| {
            if side == "*" {
                any.to_owned()
            } else {
                side.replace('*', "x")
            }
        };
        let call = policy::Call::Mcp {
            server: sample(server, "any-server"),
            tool: sample(tool, "any-tool"),
        };
        let eff = self.hub.effective(team, user).await?;
        let d = policy::decide_in(
            &eff.tool_actions,
            &eff.admin.compiled,
            &eff.user.compiled,
            &call,
        );
        let entry = format!("{server}:{tool}");
        Ok(match (d.reason, d.matched_entry.as_deref()) {
            (policy::Reason::Allowlisted, Some(m)) if m == entry => String::new(),
            (policy::Reason::Allowlisted, Some(m)) => {
                format!(
                    "{entry} changes nothing now: the calls it covers are already allowed by {m}"
                )
            }
            _ => format!("{entry} changes nothing now: {}", d.message(&call)),
        })
    }

    async fn add_entry(
        &self,
        p: &Principal,
        team: &str,
        user: &str,
        server: &str,
        tool: &str,
    ) -> Result<AllowlistChange, ServiceError> {
        self.edit_allowlist(p, team, user, |list| {
            match policy::add_mcp_entry(list, server, tool) {
                Err(e) => Err(ServiceError::entries("", e)),
                Ok(AddOutcome::Added(list)) => Ok(Ok(list)),
                Ok(AddOutcome::AlreadyPresent) => {
                    Ok(Err(format!("{server}:{tool} is already in the allowlist")))
                }
                Ok(AddOutcome::CoveredBy(entry)) => Ok(Err(format!(
                    "{server}:{tool} is already covered by {entry}"
                ))),
            }
        })
        .await
    }

    pub async fn remove_from_allowlist(
        &self,
        p: &Principal,
        team: &str,
        user: &str,
        entry: &str,
    ) -> Result<AllowlistChange, ServiceError> {
        self.edit_allowlist(p, team, user, |list| {
            Ok(policy::remove_entry(list, entry)
                .ok_or_else(|| format!("{entry} is not in the allowlist")))
        })
        .await
    }

    /// `edit` returns the new list, or why the list stays as it is.
    async fn edit_allowlist<F>(
        &self,
        p: &Principal,
        team: &str,
        user: &str,
        edit: F,
    ) -> Result<AllowlistChange, ServiceError>
    where
        F: Fn(&[String]) -> Result<Result<Vec<String>, String>, ServiceError>,
    {
        let team: &str = &check_id("team_id", team)?;
        let user: &str = &check_id("user_id", user)?;
        authorize(p, team, Action::WriteUser(user))?;
        for _ in 0..MAX_WRITE_ATTEMPTS {
            let current = self.store.get_user(team, user).await?;
            let list = match edit(&current.doc.mcp_allowed_tools)? {
                Ok(list) => list,
                Err(detail) => {
                    return Ok(AllowlistChange {
                        settings: current,
                        changed: false,
                        detail,
                        note: String::new(),
                    });
                }
            };
            let mut settings = current.doc.clone();
            settings.mcp_allowed_tools = list;
            match self
                .write_user(&p.name, team, user, settings, Some(current.revision))
                .await
            {
                Ok(settings) => {
                    return Ok(AllowlistChange {
                        settings,
                        changed: true,
                        detail: String::new(),
                        note: String::new(),
                    });
                }
                Err(ServiceError::Conflict { .. }) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(ServiceError::Unavailable(
            "too many concurrent writes to these settings: retry".into(),
        ))
    }

    /// Brings the hub up to date after a commit, so the write is acknowledged only
    /// once this replica decides with it. A catch-up that keeps failing leaves the team
    /// stale (retried by the hub's monitor until it succeeds) and the write is answered
    /// `UNAVAILABLE`, saying it committed: it is durable and applies once the store
    /// reads again, so the caller reads before writing again.
    async fn publish(&self, team: &str, revision: u64) -> Result<(), ServiceError> {
        let mut backoff = Backoff::new(CATCH_UP_RETRY, CATCH_UP_RETRY * 16).with_factor(4);
        let mut tries = 0;
        loop {
            tries += 1;
            match self.hub.catch_up_or_mark(team).await {
                Ok(()) => return Ok(()),
                Err(e) if tries >= CATCH_UP_TRIES => {
                    error!(team = %team, revision, error = %e, "committed but not yet applied: catch-up after commit failed");
                    return Err(ServiceError::Unavailable(format!(
                        "committed at revision {revision} but not yet applied on this replica ({e}): the change is durable and applies when the store reads again; read the settings before writing again"
                    )));
                }
                Err(_) => tokio::time::sleep(backoff.next_wait()).await,
            }
        }
    }
}
