//! The domain service: authorization, validation, reads through the hub, durable
//! writes, decisions and watch streams. Everything the gRPC layer does, without
//! protobuf. In rooms: `settings` (reads, writes, the allowlist's read-modify-write
//! with its retry loop, the catch-up after a commit), `decide` (decisions and
//! `tools/list` filtering), `watch` (the watch stream), `decision_log` (the decision
//! log's writer, which is the DENY audit sink too), `roles` (seed 004's roles on calls that name an agent,
//! session quotas, `allow_list_updated` and `audit.decisions: all` records),
//! `decisions` (the decision log's records, listing, watch and the impact preview);
//! here the errors, the id checks and the `Service` itself.

mod approvals;
mod budget;
mod client_telemetry;
mod decide;
mod decision_log;
mod decisions;
mod deny_journal;
mod export;
mod org_preview;
mod pins;
mod principal;
mod rates;
mod roles;
mod settings;
mod sign_ins;
mod tampering;
mod tokens;
mod watch;
mod webhook;

/// The domain types the service's API speaks, whichever layer defines them: its
/// callers (`grpc`, `managed`) name them from here, never from the hub or the store.
pub use crate::hub::{CachedAdmin, CachedUser, Effective, Published};
pub use crate::store::IssuedToken;
pub use crate::store::{
    AUDIT_APPROVAL_ABANDONED, AUDIT_APPROVAL_APPROVED, AUDIT_APPROVAL_DENIED,
    AUDIT_APPROVAL_EXPIRED, AUDIT_APPROVAL_REQUESTED, ApprovalCall, ApprovalDecision,
    ApprovalRecord, ApprovalState, ScopeKind,
};
pub use crate::store::{
    AUDIT_PIN_SETTINGS_UPDATED, AUDIT_TOOL_CHANGED, AUDIT_TOOL_PINNED, AUDIT_TOOL_REPINNED,
    PinSettings,
};
pub use crate::store::{AuditEvent, AuditFilter, Change, ChangeDoc, Versioned, now_ms};
pub use crate::store::{ClientDecision, NewDecision, StoredDecision};
pub use approvals::{
    ApprovalAsk, ApprovalScope, ApprovalView, AwaitEvent, Ticket, WatchApprovalsEvent,
};
pub use budget::AUDIT_DECISIONS_SHED;
pub use client_telemetry::{Ingested, REPORTS_PER_MINUTE, ReportedDecision};
// the journal's default place is configuration's to say; named here too for callers
pub use crate::config::JOURNAL_DIR;
pub use decision_log::SPILL_FILE;
pub use decisions::{
    CHECK_CLIENT, CutShort, DecisionEvent, DecisionFilter, DecisionPage, DecisionSource,
    DecisionWatch, Impact, ImpactExample, ImpactGroup, RequestOrigin, TeamImpact, check_client,
    check_tool_use_id, outcome_name, parse_outcome, parse_reason,
};
pub use deny_journal::{DenyJournal, JournalError};
pub use export::{AUDIT_EVENT, DECISION_EVENT, Exporter, SPILL_DIR as OTLP_SPILL_DIR};
pub use pins::{
    DefinitionView, MAX_TOOLS_PER_CALL, PinState, PinView, PinsEvent, ToolCheck, ToolSeen, pin_hash,
};
pub use principal::MAX_VISIBLE_TEAMS;
pub use rates::MAX_BUCKETS_PER_TEAM;
pub use roles::{AUDIT_ALLOW_LIST_UPDATED, AUDIT_DECISION_MADE};
pub use settings::AllowlistChange;
pub use tampering::{
    AUDIT_TAMPERING_DETECTED, ManagedFile, TAMPER_REPORTS_PER_MINUTE, TamperReport,
};
pub use tokens::{CreatedToken, DEFAULT_TOKEN_TTL, MAX_TOKEN_TTL, may_issue};
pub use watch::WatchEvent;
pub use webhook::WebhookLimits;

use crate::auth::{AuthError, Principal};
use crate::config::LimitsConfig;
use crate::hub::{Hub, HubError};
use crate::policy::{EntryProblem, PolicyError};
use crate::store::{Store, StoreError};
use decision_log::AuditWriter;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

pub use crate::ids::{MAX_ID_LEN, check_id};

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
    /// What the request names does not exist (an approval request id).
    #[error("{0}")]
    NotFound(String),
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
    /// A bounded resource is in use (a team's impact preview already running):
    /// retrying later helps.
    #[error("{0}")]
    ResourceExhausted(String),
    /// A write whose commit may or may not have happened (its acknowledgement was
    /// lost): the caller reads the revision before writing again.
    #[error("{0}")]
    Indeterminate(String),
    #[error("internal error: {0}")]
    Internal(String),
}

/// An id that fails the one id check is the caller's bad input.
impl From<crate::ids::IdError> for ServiceError {
    fn from(e: crate::ids::IdError) -> Self {
        Self::InvalidArgument {
            field: e.field,
            message: e.message,
        }
    }
}

/// A message that does not convert is the caller's bad input.
impl From<toolgate_proto::convert::ConvertError> for ServiceError {
    fn from(e: toolgate_proto::convert::ConvertError) -> Self {
        Self::InvalidArgument {
            field: e.field,
            message: e.message,
        }
    }
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
            e @ StoreError::Indeterminate(_) => Self::Indeterminate(e.to_string()),
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

/// Teams an authority other than the API owns (the policy file, see `managed`):
/// they refuse API writes.
#[derive(Debug)]
struct ManagedTeams {
    /// Where they are managed, for the error that names it.
    path: String,
    teams: BTreeSet<String>,
}

/// The domain service, shared by every RPC.
pub struct Service {
    hub: Arc<Hub>,
    /// The store the hub reads, held here so the service's own reads and writes
    /// (documents, audit, quotas) do not reach through the hub.
    store: Arc<dyn Store>,
    limits: LimitsConfig,
    heartbeat: Duration,
    audit: AuditWriter,
    shutdown: CancellationToken,
    managed: std::sync::RwLock<Option<Arc<ManagedTeams>>>,
    /// `audit.decisions: all`: ALLOW and ASK are recorded too.
    log_all_decisions: std::sync::atomic::AtomicBool,
    decision_log: crate::config::DecisionLogConfig,
    /// Other replicas' decision-log records, for this replica's watchers.
    relayed: tokio::sync::broadcast::Sender<decisions::Relayed>,
    /// The approvals' outgoing webhook (never waited on).
    webhook: webhook::Webhook,
    /// The approval waits open here, so a request whose caller went away is abandoned.
    approval_waiters: approvals::Waiters,
    /// The teams whose impact preview is running: one at a time per team.
    previews: decisions::Previews,
    /// Each team's rate buckets on this replica.
    rates: rates::Rates,
    /// Each principal's tampering reports, bounded.
    tampering: tampering::TamperLimits,
    /// Each member's reports of its client's own decisions this minute.
    report_budgets: client_telemetry::ReportBudgets,
    /// The clients' reports as they arrive, for this replica's decision watchers.
    client_reports: tokio::sync::broadcast::Sender<Arc<ClientDecision>>,
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

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service")
            .field("hub", &self.hub)
            .field("limits", &self.limits)
            .field("heartbeat", &self.heartbeat)
            .finish_non_exhaustive()
    }
}

impl Service {
    /// Starts the DENY audit writer, which journals each DENY's records in `journal`
    /// before it is answered (what an earlier run left there is written first) and is
    /// drained by [`Service::drain_audit`]; without a journal, records wait in memory
    /// only.
    pub fn new(
        hub: Arc<Hub>,
        limits: LimitsConfig,
        heartbeat: Duration,
        shutdown: CancellationToken,
        journal: Option<Arc<DenyJournal>>,
    ) -> Self {
        Self::with_decision_log(
            hub,
            limits,
            heartbeat,
            shutdown,
            journal,
            crate::config::DecisionLogConfig::default(),
        )
    }

    /// [`Service::new`] with the decision log's settings; starts the log's retention
    /// passes when it is on.
    pub fn with_decision_log(
        hub: Arc<Hub>,
        limits: LimitsConfig,
        heartbeat: Duration,
        shutdown: CancellationToken,
        journal: Option<Arc<DenyJournal>>,
        decision_log: crate::config::DecisionLogConfig,
    ) -> Self {
        let audit = AuditWriter::start(
            hub.clone(),
            journal,
            budget::Budgets::new(&decision_log),
            decision_log.queue_size,
            decision_log.watch_buffer,
        );
        let relayed = tokio::sync::broadcast::Sender::new(decision_log.watch_buffer.max(1));
        let client_reports = tokio::sync::broadcast::Sender::new(decision_log.watch_buffer.max(1));
        if decision_log.enabled {
            tokio::spawn(decisions::prune(
                hub.store().clone(),
                decision_log.clone(),
                shutdown.clone(),
            ));
            tokio::spawn(decisions::relay(
                hub.clone(),
                hub.store().clone(),
                relayed.clone(),
                shutdown.clone(),
            ));
        }
        Self {
            store: hub.store().clone(),
            hub,
            limits,
            heartbeat,
            audit,
            shutdown,
            managed: std::sync::RwLock::default(),
            log_all_decisions: std::sync::atomic::AtomicBool::new(false),
            decision_log,
            relayed,
            webhook: webhook::Webhook::start(WebhookLimits::default()),
            approval_waiters: approvals::Waiters::default(),
            previews: decisions::Previews::default(),
            rates: rates::Rates::default(),
            tampering: tampering::TamperLimits::default(),
            report_budgets: client_telemetry::ReportBudgets::default(),
            client_reports,
        }
    }

    /// Sends what the decision log writes to an OpenTelemetry collector too.
    #[must_use]
    pub fn with_export(self, exporter: Exporter) -> Self {
        if !self.audit.set_export(exporter) {
            tracing::warn!("an OTLP exporter was already set: the second is not started");
        }
        self
    }

    /// [`Service::with_export`] when there is an exporter.
    #[must_use]
    pub fn with_export_opt(self, exporter: Option<Exporter>) -> Self {
        match exporter {
            Some(exporter) => self.with_export(exporter),
            None => self,
        }
    }

    /// Replaces the approvals' webhook client with one of these limits.
    #[must_use]
    pub fn with_webhook(mut self, limits: WebhookLimits) -> Self {
        self.webhook = webhook::Webhook::start(limits);
        self
    }

    pub fn hub(&self) -> &Arc<Hub> {
        &self.hub
    }

    /// Whether the store's disk is full: a health warning (its reserve was released so
    /// admin writes commit; decision and DENY records wait, journaled).
    pub fn disk_full(&self) -> bool {
        self.store.disk_full()
    }

    /// Deny records waiting to be written, for the metrics.
    pub fn audit_waiting(&self) -> usize {
        self.audit.waiting()
    }

    /// At shutdown: writes the queued DENY records within `grace` (what the store does
    /// not take is left in the DENY journal for the next start).
    pub async fn drain_audit(&self, grace: Duration) {
        self.audit.drain(grace).await;
    }

    /// Makes `teams` read-only through the API, naming `path` as where they are managed
    /// (replacing the teams set before).
    pub fn set_managed_teams(&self, path: &str, teams: BTreeSet<String>) {
        *self
            .managed
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Arc::new(ManagedTeams {
            path: path.to_owned(),
            teams,
        }));
    }

    /// Where `team` is managed, if not through the API: the policy file's path.
    pub fn managed_by(&self, team: &str) -> Option<String> {
        self.managed
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_ref()
            .filter(|m| m.teams.contains(team))
            .map(|m| m.path.clone())
    }
}
