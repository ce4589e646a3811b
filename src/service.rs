//! The domain service: authorization, validation, reads through the hub, durable
//! writes, decisions and watch streams. Everything the gRPC layer does, without
//! protobuf.

mod roles;

pub use roles::{AUDIT_ALLOW_LIST_UPDATED, AUDIT_DECISION_MADE};

use crate::audit::AuditWriter;
use crate::auth::{Action, AuthError, Principal, authorize};
use crate::config::LimitsConfig;
use crate::hub::{CachedAdmin, CachedUser, Effective, Hub, HubError, HubEvent, Published};
use crate::policy::roles::{AgentSpec, CallArgs};
use crate::policy::{
    self, AddOutcome, AdminControls, Call, CompiledAdmin, CompiledUser, Decision, EntryProblem,
    FilteredTools, Outcome, PolicyError, UserSettings,
};
use crate::store::{
    AuditEvent, AuditFilter, Change, ChangeDoc, History, NewAuditEvent, StoreError, Versioned,
};
use futures::Stream;
use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;
use tracing::error;

/// Longest team or user id.
pub const MAX_ID_LEN: usize = 256;
/// How many write attempts a read-modify-write makes before giving up on contention.
const MAX_WRITE_ATTEMPTS: usize = 8;
/// Tries of the catch-up after a commit, the first wait between them (then times 4):
/// about half a second in all before the write is answered as not yet applied.
const CATCH_UP_TRIES: u32 = 3;
const CATCH_UP_RETRY: Duration = Duration::from_millis(100);

/// Errors of the domain service; the gRPC layer maps each to one status code.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error("{field}: {message}")]
    InvalidArgument { field: String, message: String },
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    InvalidEntries(Vec<EntryProblem>),
    #[error("{0}")]
    Unauthenticated(&'static str),
    #[error("{0}")]
    PermissionDenied(String),
    #[error(
        "expected revision {expected} but the settings are at revision {actual}: read them again and retry"
    )]
    Conflict { expected: u64, actual: u64 },
    /// The request is valid but the state forbids it (e.g. a team managed by the
    /// policy file): retrying does not help until the state changes.
    #[error("{0}")]
    FailedPrecondition(String),
    #[error("{0}")]
    Unavailable(String),
    #[error("internal error: {0}")]
    Internal(String),
}

impl From<AuthError> for ServiceError {
    fn from(e: AuthError) -> Self {
        match e {
            AuthError::Unauthenticated(m) => Self::Unauthenticated(m),
            AuthError::PermissionDenied(m) => Self::PermissionDenied(m),
        }
    }
}

impl From<StoreError> for ServiceError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Conflict { expected, actual } => Self::Conflict { expected, actual },
            StoreError::Unavailable(m) => Self::Unavailable(m),
            other => Self::Internal(other.to_string()),
        }
    }
}

impl From<HubError> for ServiceError {
    fn from(e: HubError) -> Self {
        match e {
            HubError::Store(e) => e.into(),
            other => Self::Internal(other.to_string()),
        }
    }
}

impl ServiceError {
    fn invalid(field: &str, message: impl Into<String>) -> Self {
        Self::InvalidArgument {
            field: field.to_owned(),
            message: message.into(),
        }
    }

    /// Prefixes each problem's field with the message path it came from.
    fn entries(prefix: &str, e: PolicyError) -> Self {
        match e {
            PolicyError::InvalidEntries(mut problems) => {
                for p in &mut problems {
                    p.field = format!("{prefix}{}", p.field);
                }
                Self::InvalidEntries(problems)
            }
            PolicyError::InvalidToolsList(m) => Self::invalid(prefix.trim_end_matches('.'), m),
        }
    }
}

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

/// The outcome of an allowlist edit.
#[derive(Debug, Clone)]
pub struct AllowlistChange {
    pub settings: Versioned<UserSettings>,
    pub changed: bool,
    pub detail: String,
}

/// The policy file as last loaded (see `managed`): the teams it manages, which are
/// read-only through the API, and whether its latest content was rejected.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PolicyFileStatus {
    pub path: String,
    /// Unix milliseconds of the last successful load.
    pub loaded_at_ms: i64,
    /// Why the file's current content is not in force, when it is not.
    pub last_error: Option<String>,
    pub teams: std::collections::BTreeSet<String>,
    /// Server id → its `tool.action` patterns.
    pub mcp_servers: std::collections::BTreeMap<String, Vec<String>>,
}

impl PolicyFileStatus {
    /// The `policy_file` object of `GetServerConfig`.
    pub fn to_json(&self) -> serde_json::Value {
        let loaded_at = u64::try_from(self.loaded_at_ms).ok().map(|ms| {
            humantime::format_rfc3339_millis(std::time::UNIX_EPOCH + Duration::from_millis(ms))
                .to_string()
        });
        serde_json::json!({
            "path": self.path,
            "loaded_at": loaded_at,
            "last_error": self.last_error,
            "teams": self.teams,
            "mcp_servers": self.mcp_servers,
        })
    }
}

/// The domain service, shared by every RPC.
#[derive(Debug)]
pub struct Service {
    hub: Arc<Hub>,
    limits: LimitsConfig,
    heartbeat: Duration,
    audit: AuditWriter,
    shutdown: CancellationToken,
    policy_file: std::sync::RwLock<Option<Arc<PolicyFileStatus>>>,
    /// `audit.decisions: all`: ALLOW and ASK are recorded too.
    log_all_decisions: std::sync::atomic::AtomicBool,
}

/// Empty team and user ids stand for the caller's own, where its token names them (a
/// member's names both, a service's its team), so a hook needs no ids of its own.
pub fn own_subject<'a>(p: &'a Principal, team: &'a str, user: &'a str) -> (&'a str, &'a str) {
    let team = match (team.is_empty(), p.team.as_deref()) {
        (true, Some(own)) => own,
        _ => team,
    };
    let user = match (user.is_empty(), p.user.as_deref()) {
        (true, Some(own)) => own,
        _ => user,
    };
    (team, user)
}

/// Checks a team or user id and returns it in Unicode NFC, the one spelling under
/// which it is stored, authorized and compared: `café` typed with a combining
/// accent is the same team as with `é`. Refused, naming the field and the
/// character: control characters, bidirectional controls (which make an id read as
/// another), zero-width characters (`ali\u{200b}ce` is not `alice`) and line or
/// paragraph separators. The one id check: API requests, the configuration's
/// principals and the policy files all go through it.
pub fn check_id<'a>(field: &str, value: &'a str) -> Result<Cow<'a, str>, ServiceError> {
    use unicode_normalization::{IsNormalized, UnicodeNormalization, is_nfc_quick};
    if value.trim().is_empty() {
        return Err(ServiceError::invalid(field, "must not be empty"));
    }
    if let Some((c, what)) = value
        .chars()
        .find_map(|c| forbidden_in_id(c).map(|what| (c, what)))
    {
        return Err(ServiceError::invalid(
            field,
            format!(
                "{value:?} contains U+{:04X} ({what}): ids may not hold invisible or control characters; remove it",
                u32::from(c)
            ),
        ));
    }
    let value: Cow<'a, str> = match is_nfc_quick(value.chars()) {
        IsNormalized::Yes => Cow::Borrowed(value),
        _ => Cow::Owned(value.nfc().collect()),
    };
    if value.chars().count() > MAX_ID_LEN {
        return Err(ServiceError::invalid(
            field,
            format!("must be at most {MAX_ID_LEN} characters"),
        ));
    }
    Ok(value)
}

/// What kind of character may not appear in an id, if `c` is one.
fn forbidden_in_id(c: char) -> Option<&'static str> {
    match c {
        '\u{2028}' | '\u{2029}' => Some("a line or paragraph separator"),
        '\u{202A}'..='\u{202E}'
        | '\u{2066}'..='\u{2069}'
        | '\u{200E}'
        | '\u{200F}'
        | '\u{061C}' => Some("a bidirectional control"),
        '\u{200B}'..='\u{200D}' | '\u{2060}' | '\u{FEFF}' | '\u{00AD}' | '\u{180E}' => {
            Some("a zero-width character")
        }
        c if c.is_control() => Some("a control character"),
        _ => None,
    }
}

impl Service {
    /// Starts the DENY audit writer, which keeps records through a store outage in
    /// `audit_spill` (a file in the data directory; replayed here) and is drained by
    /// [`Service::drain_audit`].
    pub fn new(
        hub: Arc<Hub>,
        limits: LimitsConfig,
        heartbeat: Duration,
        shutdown: CancellationToken,
        audit_spill: Option<std::path::PathBuf>,
    ) -> Self {
        let audit = AuditWriter::start(hub.clone(), audit_spill);
        Self {
            hub,
            limits,
            heartbeat,
            audit,
            shutdown,
            policy_file: std::sync::RwLock::default(),
            log_all_decisions: std::sync::atomic::AtomicBool::new(false),
        }
    }

    pub fn hub(&self) -> &Arc<Hub> {
        &self.hub
    }

    /// At shutdown: writes the queued DENY records within `grace` (what the store does
    /// not take is left in the spill file for the next start).
    pub async fn drain_audit(&self, grace: Duration) {
        self.audit.drain(grace).await;
    }

    /// The policy file's status, when the server runs with one.
    pub fn policy_file(&self) -> Option<Arc<PolicyFileStatus>> {
        self.policy_file
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    pub fn set_policy_file(&self, status: PolicyFileStatus) {
        *self
            .policy_file
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Arc::new(status));
    }

    fn check_lists(
        &self,
        prefix: &str,
        lists: &[(&str, &Vec<String>)],
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
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ServiceError::InvalidEntries(problems))
        }
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
        if let Some(file) = self.policy_file().filter(|f| f.teams.contains(team)) {
            return Err(ServiceError::FailedPrecondition(format!(
                "team {team} is managed by the policy file {}: edit that file (the server reloads it) or remove the team from it",
                file.path
            )));
        }
        self.write_admin(&p.name, team, controls, expected).await
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
        let prefix = "auto_run_controls.";
        self.check_lists(
            prefix,
            &[
                ("allowed", &controls.allowed),
                ("blocked", &controls.blocked),
                ("mcp_tool_allowlist", &controls.mcp_tool_allowlist),
                ("mcp_tool_blocklist", &controls.mcp_tool_blocklist),
                ("browser_server_ids", &controls.browser_server_ids),
                ("mcp_access_allowlist", &controls.mcp_access_allowlist),
            ],
        )?;
        CompiledAdmin::compile(&controls).map_err(|e| ServiceError::entries(prefix, e))?;
        let before = self.hub.admin(team).await?;
        let stored = self
            .hub
            .store()
            .put_admin(team, &controls, expected, actor)
            .await?;
        self.audit_roles_change(
            actor,
            team,
            &before.stored.doc,
            &stored.doc,
            stored.revision,
        )
        .await;
        self.publish(team, stored.revision).await?;
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
        Ok(self.hub.store().list_audit(&filter).await?)
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
        self.write_user(p, team, user, settings, expected).await
    }

    async fn write_user(
        &self,
        p: &Principal,
        team: &str,
        user: &str,
        settings: UserSettings,
        expected: Option<u64>,
    ) -> Result<Versioned<UserSettings>, ServiceError> {
        let prefix = "settings.";
        self.check_lists(
            prefix,
            &[
                ("mcp_allowed_tools", &settings.mcp_allowed_tools),
                ("command_allowlist", &settings.command_allowlist),
                ("command_denylist", &settings.command_denylist),
            ],
        )?;
        CompiledUser::compile(&settings).map_err(|e| ServiceError::entries(prefix, e))?;
        let stored = self
            .hub
            .store()
            .put_user(team, user, &settings, expected, &p.name)
            .await?;
        self.publish(team, stored.revision).await?;
        Ok(stored)
    }

    /// Seed 001 `Yro` against the stored list, retried on a concurrent write.
    pub async fn add_to_allowlist(
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
            let current = self.hub.store().get_user(team, user).await?;
            let list = match edit(&current.doc.mcp_allowed_tools)? {
                Ok(list) => list,
                Err(detail) => {
                    return Ok(AllowlistChange {
                        settings: current,
                        changed: false,
                        detail,
                    });
                }
            };
            let mut settings = current.doc.clone();
            settings.mcp_allowed_tools = list;
            match self
                .write_user(p, team, user, settings, Some(current.revision))
                .await
            {
                Ok(settings) => {
                    return Ok(AllowlistChange {
                        settings,
                        changed: true,
                        detail: String::new(),
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
        let mut wait = CATCH_UP_RETRY;
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
                Err(_) => {
                    tokio::time::sleep(wait).await;
                    wait *= 4;
                }
            }
        }
    }

    pub async fn effective(
        &self,
        p: &Principal,
        team: &str,
        user: &str,
    ) -> Result<Effective, ServiceError> {
        let (team, user) = own_subject(p, team, user);
        let team: &str = &check_id("team_id", team)?;
        let user: &str = &check_id("user_id", user)?;
        authorize(p, team, Action::Evaluate(user))?;
        Ok(self.hub.effective(team, user).await?)
    }

    /// Decides each call against one view of the policy; DENYs go to the audit trail.
    pub async fn evaluate(
        &self,
        p: &Principal,
        team: &str,
        user: &str,
        calls: &[Call],
        explain: bool,
    ) -> Result<(Vec<Decision>, u64), ServiceError> {
        self.evaluate_as(p, team, user, calls, explain, &AgentSpec::default(), &[])
            .await
    }

    /// [`Service::evaluate`] for calls made by `agent` (seed 004), with what each
    /// call touches (`args[i]` for `calls[i]`).
    #[allow(clippy::too_many_arguments)]
    pub async fn evaluate_as(
        &self,
        p: &Principal,
        team: &str,
        user: &str,
        calls: &[Call],
        explain: bool,
        agent: &AgentSpec,
        args: &[CallArgs],
    ) -> Result<(Vec<Decision>, u64), ServiceError> {
        let (team, user) = own_subject(p, team, user);
        // normalised here too: the audit records below name them
        let team: &str = &check_id("team_id", team)?;
        let user: &str = &check_id("user_id", user)?;
        if calls.len() > self.limits.max_batch_calls {
            return Err(ServiceError::invalid(
                "calls",
                format!(
                    "{} calls is more than the limit of {}: split the batch",
                    calls.len(),
                    self.limits.max_batch_calls
                ),
            ));
        }
        for (i, call) in calls.iter().enumerate() {
            self.check_call_size(calls.len(), i, call)?;
        }
        let eff = self.effective(p, team, user).await?;
        let decide = if explain {
            policy::explain_in
        } else {
            policy::decide_in
        };
        let decisions: Vec<Decision> = calls
            .iter()
            .map(|c| {
                decide(
                    &eff.tool_actions,
                    &eff.admin.compiled,
                    &eff.user.compiled,
                    c,
                )
            })
            .collect();
        let decisions = self
            .apply_roles(team, &eff.admin.compiled, agent, calls, args, decisions)
            .await?;
        for (call, d) in calls.iter().zip(&decisions) {
            if d.outcome == Outcome::Deny {
                self.audit_deny(p, team, user, eff.revision, call, d).await;
            } else {
                self.audit_decision(p, team, user, eff.revision, call, d)
                    .await;
            }
        }
        Ok((decisions, eff.revision))
    }

    /// A shell command or a path past `limits.max_command_bytes` is refused before
    /// anything looks at it. The field is `call.…` for one call, `calls[i].…` in a batch.
    fn check_call_size(&self, calls: usize, i: usize, call: &Call) -> Result<(), ServiceError> {
        let (kind, text) = match call {
            Call::Shell(line) => ("shell", line),
            Call::DeleteFile(path) => ("delete_file", path),
            _ => return Ok(()),
        };
        let max = self.limits.max_command_bytes;
        if text.len() <= max {
            return Ok(());
        }
        let field = if calls == 1 {
            format!("call.{kind}")
        } else {
            format!("calls[{i}].{kind}")
        };
        Err(ServiceError::invalid(
            &field,
            format!(
                "is {} bytes, more than the limit of {max} (limits.max_command_bytes): send a shorter command",
                text.len()
            ),
        ))
    }

    /// Queues the DENY record for the audit writer. A full queue makes the caller
    /// wait for room rather than lose the record: a flood of denials is slowed to
    /// what the store can write.
    async fn audit_deny(
        &self,
        p: &Principal,
        team: &str,
        user: &str,
        revision: u64,
        call: &Call,
        d: &Decision,
    ) {
        let event = NewAuditEvent {
            team_id: team.to_owned(),
            revision,
            actor: p.name.clone(),
            kind: "decision_denied".into(),
            detail: deny_detail(user, call, d),
        };
        self.audit.send(event).await;
    }

    pub async fn filter_tools(
        &self,
        p: &Principal,
        team: &str,
        user: &str,
        server: &str,
        tools_json: &str,
    ) -> Result<(FilteredTools, u64), ServiceError> {
        let eff = self.effective(p, team, user).await?;
        let value: serde_json::Value = serde_json::from_str(tools_json).map_err(|e| {
            ServiceError::invalid(
                "tools_json",
                format!("is not JSON ({e}): pass the tools/list result"),
            )
        })?;
        let filtered = policy::filter_tools_in(
            &eff.tool_actions,
            &eff.admin.compiled,
            &eff.user.compiled,
            server,
            &value,
        )
        .map_err(|e| match e {
            PolicyError::InvalidToolsList(_) => ServiceError::entries("tools_json.", e),
            other => ServiceError::entries("", other),
        })?;
        Ok((filtered, eff.revision))
    }

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
        let mut first: Vec<WatchEvent> = Vec::new();
        let mut seen = match after {
            Some(after) => match this.history_after(&team, after).await? {
                History::Truncated => {
                    let effective = this.hub.effective(&team, &user).await?;
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
                        if affects(&user, &change) {
                            first.push(WatchEvent::Change(Arc::new(Published::new(change))));
                        }
                    }
                    seen.max(after)
                }
            },
            None => {
                let effective = this.hub.effective(&team, &user).await?;
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
                                yield Ok(WatchEvent::Change(change));
                            }
                        }
                        Ok(HubEvent::Resync) | Err(broadcast::error::RecvError::Lagged(_)) => {
                            // fell behind the ring (or the hub reloaded): start over from a snapshot
                            match this.hub.effective(&team, &user).await {
                                Ok(effective) => {
                                    seen = effective.revision;
                                    yield Ok(WatchEvent::Snapshot { effective, resync: true });
                                }
                                Err(e) => {
                                    yield Err(e.into());
                                    break;
                                }
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
}

/// The most bytes of a call, and of its decision's message, a DENY record keeps.
const AUDIT_EXCERPT: usize = 4 * 1024;

/// The detail of a DENY record. A huge call is kept as an excerpt with its length and
/// SHA-256, so a record's size does not grow with the command.
fn deny_detail(user: &str, call: &Call, d: &Decision) -> serde_json::Value {
    use sha2::Digest as _;
    let text = format!("{call:?}");
    let mut detail = serde_json::json!({
        "user_id": user,
        "call": excerpt(&text),
        "reason": d.reason.as_str(),
        "matched_entry": d.matched_entry.as_deref(),
        "message": excerpt(&d.message(call)),
    });
    if text.len() > AUDIT_EXCERPT {
        detail["call_bytes"] = text.len().into();
        detail["call_sha256"] = hex::encode(sha2::Sha256::digest(text.as_bytes())).into();
    }
    detail
}

/// The first [`AUDIT_EXCERPT`] bytes of `text` (cut at a character boundary), marked
/// when cut.
fn excerpt(text: &str) -> String {
    if text.len() <= AUDIT_EXCERPT {
        return text.to_owned();
    }
    let cut = (0..=AUDIT_EXCERPT)
        .rev()
        .find(|&n| text.is_char_boundary(n))
        .unwrap_or(0);
    format!("{}…", &text[..cut])
}

impl Service {
    /// The changes a watch resumed at `after` missed. A revision the team never
    /// reached (a client from before a backup restore, or one that made it up) is
    /// answered like one older than the history: with a resync snapshot. Resuming
    /// past the head would otherwise skip every change up to that revision, a kill
    /// switch included.
    async fn history_after(&self, team: &str, after: u64) -> Result<History, ServiceError> {
        let store = self.hub.store();
        if after > store.team_revision(team).await? {
            return Ok(History::Truncated);
        }
        Ok(store.changes_after(team, after, u32::MAX).await?)
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
