//! The domain service: authorization, validation, reads through the hub, durable
//! writes, decisions and watch streams. Everything the gRPC layer does, without
//! protobuf.

use crate::auth::{Action, AuthError, Principal, authorize};
use crate::config::LimitsConfig;
use crate::hub::{CachedAdmin, CachedUser, Effective, Hub, HubError, HubEvent, Published};
use crate::policy::{
    self, AddOutcome, AdminControls, Call, CompiledAdmin, CompiledUser, Decision, EntryProblem,
    FilteredTools, Outcome, PolicyError, UserSettings,
};
use crate::store::{
    AuditEvent, AuditFilter, Change, ChangeDoc, History, NewAuditEvent, StoreError, Versioned,
};
use futures::Stream;
use std::borrow::Cow;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

/// Longest team or user id.
pub const MAX_ID_LEN: usize = 256;
/// How many write attempts a read-modify-write makes before giving up on contention.
const MAX_WRITE_ATTEMPTS: usize = 8;
/// Pending DENY audit records before a denying call waits for room.
const AUDIT_QUEUE: usize = 8_192;
/// DENY records written in one transaction.
const AUDIT_BATCH: usize = 256;
/// DENY records kept in memory while the store fails, before the oldest are dropped.
const AUDIT_SPILL: usize = 100_000;
/// The first and the longest wait between tries of a failed audit write.
const AUDIT_RETRY_MIN: Duration = Duration::from_millis(100);
const AUDIT_RETRY_MAX: Duration = Duration::from_secs(5);
/// Tries of an audit batch that fails for another reason than an unreachable store.
const AUDIT_REJECTED_TRIES: u32 = 5;

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
    audit_tx: mpsc::Sender<NewAuditEvent>,
    shutdown: CancellationToken,
    policy_file: std::sync::RwLock<Option<Arc<PolicyFileStatus>>>,
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
    /// Starts the DENY audit writer; it stops when `shutdown` is cancelled and the queue drains.
    pub fn new(
        hub: Arc<Hub>,
        limits: LimitsConfig,
        heartbeat: Duration,
        shutdown: CancellationToken,
    ) -> Self {
        let (audit_tx, audit_rx) = mpsc::channel(AUDIT_QUEUE);
        tokio::spawn(audit_writer(hub.clone(), audit_rx));
        Self {
            hub,
            limits,
            heartbeat,
            audit_tx,
            shutdown,
            policy_file: std::sync::RwLock::default(),
        }
    }

    pub fn hub(&self) -> &Arc<Hub> {
        &self.hub
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
        let stored = self
            .hub
            .store()
            .put_admin(team, &controls, expected, actor)
            .await?;
        self.publish(team).await;
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
        self.publish(team).await;
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

    /// Brings the hub up to date after a commit. The commit is already durable, so a
    /// failure here is logged, not returned: the next catch-up delivers the change.
    async fn publish(&self, team: &str) {
        if let Err(e) = self.hub.catch_up(team).await {
            error!(team = %team, error = %e, "catch-up after commit failed");
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
        let (team, user) = own_subject(p, team, user);
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
        for (call, d) in calls.iter().zip(&decisions) {
            if d.outcome == Outcome::Deny {
                self.audit_deny(p, team, user, eff.revision, call, d).await;
            }
        }
        Ok((decisions, eff.revision))
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
            detail: serde_json::json!({
                "user_id": user,
                "call": format!("{call:?}"),
                "reason": d.reason.as_str(),
                "matched_entry": d.matched_entry.as_deref(),
                "message": d.message(call),
            }),
        };
        if self.audit_tx.send(event).await.is_err() {
            // only once the writer is gone, at shutdown
            warn!(team = %team, user = %user, "audit writer stopped: a deny record was dropped");
        }
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

/// Writes DENY records in batches so a burst of denials costs one transaction. While
/// the store fails, records wait in memory (up to [`AUDIT_SPILL`], the oldest given up
/// past that) and the batch is retried with backoff, so an outage loses nothing it
/// outlasts and never holds up a decision.
async fn audit_writer(hub: Arc<Hub>, mut rx: mpsc::Receiver<NewAuditEvent>) {
    let mut pending: VecDeque<NewAuditEvent> = VecDeque::new();
    let mut open = true;
    let mut wait = AUDIT_RETRY_MIN;
    // failures of the batch at the head that were not the store being away
    let mut rejected = 0;
    loop {
        if pending.is_empty() {
            let mut batch = Vec::with_capacity(AUDIT_BATCH);
            if rx.recv_many(&mut batch, AUDIT_BATCH).await == 0 {
                return;
            }
            pending.extend(batch);
        }
        let n = pending.len().min(AUDIT_BATCH);
        match hub
            .store()
            .append_audit(&pending.make_contiguous()[..n])
            .await
        {
            Ok(()) => {
                pending.drain(..n);
                rejected = 0;
                if wait > AUDIT_RETRY_MIN {
                    info!(
                        waiting = pending.len(),
                        "deny audit records are written again"
                    );
                }
                wait = AUDIT_RETRY_MIN;
            }
            // an error that is not an outage may be the records themselves: a batch
            // refused that often is given up rather than block every later one
            Err(e)
                if !matches!(e, StoreError::Unavailable(_))
                    && rejected + 1 >= AUDIT_REJECTED_TRIES =>
            {
                error!(error = %e, records = n, "deny audit records refused by the store: dropped");
                pending.drain(..n);
                rejected = 0;
            }
            Err(e) => {
                if !matches!(e, StoreError::Unavailable(_)) {
                    rejected += 1;
                }
                warn!(error = %e, waiting = pending.len(), retry_ms = wait.as_millis() as u64, "cannot write deny audit records: keeping them and retrying");
                // keep taking records while waiting, so denying calls never wait on an outage
                let retry = tokio::time::sleep(wait);
                tokio::pin!(retry);
                loop {
                    let mut more = Vec::new();
                    tokio::select! {
                        () = &mut retry => break,
                        received = rx.recv_many(&mut more, AUDIT_BATCH), if open => {
                            open = received > 0;
                            pending.extend(more);
                        }
                    }
                }
                if pending.len() > AUDIT_SPILL {
                    let dropped = pending.len() - AUDIT_SPILL;
                    pending.drain(..dropped);
                    error!(
                        dropped,
                        kept = AUDIT_SPILL,
                        "deny audit records waiting for the store past the limit: the oldest were dropped"
                    );
                }
                wait = (wait * 2).min(AUDIT_RETRY_MAX);
            }
        }
        if !open && pending.is_empty() {
            return;
        }
    }
}
