//! The server's policy file (`policy_file`, `--policy-file`): loaded before the
//! server serves, written through the store like any other change, and reloaded
//! when it changes.
//!
//! Teams the file names are read-only through the API (their admin settings are
//! the file's); each change a load makes to one is an ordinary commit by the actor
//! `file:<path>`, so it has a revision, an audit record and reaches `WatchPolicy`
//! subscribers. The file's `tool.action` lists belong to no team and have no
//! revision: a change to them is recorded once in the audit trail under team `*`,
//! and every subscriber is sent a fresh snapshot (marked resync) that holds them.
//!
//! The file is followed by the server's one file poller ([`toolgate_files::poll`])
//! every [`POLL`]. A change is applied once two polls in a row read the same
//! content, so an editor's half-written file is not taken for an invalid one.

use crate::policy::AdminControls;
use crate::service::{Service, ServiceError, now_ms};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use toolgate_files::policy_file::{self, ManagedPolicy};
use toolgate_files::{ReadError, poll};
use tracing::{error, info, warn};

/// How often the file is read.
pub const POLL: Duration = Duration::from_millis(250);
/// The audit team of server-wide events (the file's `tool.action` lists).
pub const SERVER_WIDE_TEAM: &str = "*";
pub const AUDIT_RELOADED: &str = "policy_file_reloaded";
pub const AUDIT_REJECTED: &str = "policy_file_rejected";
/// Write attempts per team before a reload gives up on contention (and retries later).
const WRITE_ATTEMPTS: usize = 8;

#[derive(Debug, thiserror::Error)]
pub enum ManagedError {
    #[error("cannot read policy file {path}: {error}: fix policy_file (or --policy-file)")]
    Read {
        path: String,
        error: policy_file::ReadError,
    },
    #[error("invalid policy file (nothing in it was applied):\n{0}")]
    Invalid(String),
    #[error("cannot apply policy file {path}: {source}")]
    Apply { path: String, source: ServiceError },
}

/// The policy file as last loaded: the teams it manages, which are read-only through
/// the API, and whether its latest content was rejected.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PolicyFileStatus {
    pub path: String,
    /// Unix milliseconds of the last successful load.
    pub loaded_at_ms: i64,
    /// Why the file's current content is not in force, when it is not.
    pub last_error: Option<String>,
    pub teams: BTreeSet<String>,
    /// Server id → its `tool.action` patterns.
    pub mcp_servers: BTreeMap<String, Vec<String>>,
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

/// The status as the watcher last published it, for whoever reports it
/// (`GetServerConfig`).
#[derive(Debug, Clone, Default)]
pub struct StatusCell(Arc<RwLock<Option<Arc<PolicyFileStatus>>>>);

impl StatusCell {
    pub fn get(&self) -> Option<Arc<PolicyFileStatus>> {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn set(&self, status: PolicyFileStatus) {
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = Some(Arc::new(status));
    }
}

/// Loads the file and applies it; then keeps reloading it until `shutdown`.
/// An invalid or unreadable file is an error: the server must not start on it.
/// The returned cell follows the file's status.
pub async fn start(
    path: &Path,
    service: Arc<Service>,
    shutdown: CancellationToken,
) -> Result<StatusCell, ManagedError> {
    let cell = StatusCell::default();
    let name = path.display().to_string();
    let mut watcher = Watcher {
        service,
        cell: cell.clone(),
        applied: None,
        status: PolicyFileStatus {
            path: name.clone(),
            ..PolicyFileStatus::default()
        },
        name,
    };
    let options = poll::Options {
        settle: 2,
        max_bytes: policy_file::MAX_POLICY_BYTES,
    };
    let mut poller = poll::Poller::new(
        vec![path.to_owned()],
        options,
        poll::Schedule::new(POLL, shutdown),
    );
    let (text, digest) = decode(poller.read(0), &watcher.name)?;
    watcher.apply(&text).await?;
    watcher.applied = Some(digest);
    tokio::spawn(watcher.run(poller));
    Ok(cell)
}

/// What the poller read, as the policy file's text.
fn decode(
    read: Result<poll::Content, ReadError>,
    name: &str,
) -> Result<(String, poll::Digest), ManagedError> {
    let error = |error| ManagedError::Read {
        path: name.to_owned(),
        error,
    };
    let content = read.map_err(|e| error(e.into()))?;
    let text = policy_file::decode_text(content.bytes).map_err(error)?;
    Ok((text, content.digest))
}

struct Watcher {
    name: String,
    service: Arc<Service>,
    cell: StatusCell,
    /// The content in force.
    applied: Option<poll::Digest>,
    status: PolicyFileStatus,
}

impl Watcher {
    fn actor(&self) -> String {
        format!("file:{}", self.name)
    }

    async fn run(mut self, mut poller: poll::Poller) {
        while let Some(reports) = poller.next().await {
            for report in reports {
                if !self.take(report.read).await {
                    poller.again(report.index);
                }
            }
        }
    }

    /// Applies what a poll read, or reports why not; false when the same content
    /// should be tried again at the next poll. The poller reports content once, so
    /// content found invalid is not tried again until the file changes (content
    /// rejected, replaced, then written back is news again: log, audit, status).
    async fn take(&mut self, read: Result<poll::Content, ReadError>) -> bool {
        let (text, digest) = match decode(read, &self.name) {
            Ok(read) => read,
            Err(e) => {
                self.fail(format!(
                    "{e}; the last good policy stays in force until the file is back"
                ));
                return true;
            }
        };
        if Some(digest) == self.applied {
            if self.status.last_error.take().is_some() {
                info!(path = %self.name, "policy file is back to the policy in force");
                self.publish_status();
            }
            return true;
        }
        match self.apply(&text).await {
            Ok(()) => {
                crate::metrics::policy_file_reload(true);
                self.applied = Some(digest);
                true
            }
            Err(e @ ManagedError::Invalid(_))
            | Err(
                e @ ManagedError::Apply {
                    source: ServiceError::InvalidEntries(_) | ServiceError::InvalidArgument { .. },
                    ..
                },
            ) => {
                crate::metrics::policy_file_reload(false);
                let message = e.to_string();
                self.audit(
                    AUDIT_REJECTED,
                    serde_json::json!({"path": self.name, "error": message}),
                )
                .await;
                self.fail(format!("{message}\nthe previous policy stays in force"));
                true
            }
            // the store is unavailable: the next poll tries again
            Err(e) => {
                self.fail(e.to_string());
                false
            }
        }
    }

    /// Records a failed reload once per distinct error.
    fn fail(&mut self, message: String) {
        if self.status.last_error.as_ref() != Some(&message) {
            error!(path = %self.name, error = %message, "policy file not applied");
            self.status.last_error = Some(message);
            self.publish_status();
        }
    }

    fn publish_status(&self) {
        self.publish(self.status.clone());
    }

    /// The service refuses API writes to the status's teams; the cell reports it.
    fn publish(&self, status: PolicyFileStatus) {
        self.service
            .set_managed_teams(&status.path, status.teams.clone());
        self.cell.set(status);
    }

    /// Applies a file's content: its teams through the store, its lists to the hub.
    async fn apply(&mut self, text: &str) -> Result<(), ManagedError> {
        let policy: ManagedPolicy = policy_file::parse_managed_policy(&self.name, text)
            .map_err(|errors| ManagedError::Invalid(policy_file::format_errors(&errors)))?;
        let teams: BTreeSet<String> = policy.teams.iter().map(|(t, _)| t.clone()).collect();
        // read-only first (the old teams too, until the new file is in force), so no API
        // write slips in between the file's writes
        let mut guard = self.status.clone();
        guard.teams.extend(teams.iter().cloned());
        self.publish(guard);

        let mut changed = Vec::new();
        for (team, controls) in &policy.teams {
            let wrote = self.write_team(team, controls).await.map_err(|source| {
                self.publish_status();
                ManagedError::Apply {
                    path: self.name.clone(),
                    source,
                }
            })?;
            if wrote {
                changed.push(team.clone());
            }
        }
        let released: Vec<String> = self.status.teams.difference(&teams).cloned().collect();
        let lists_changed = *self.service.tool_actions() != policy.tool_actions;
        let mcp_servers: BTreeMap<String, Vec<String>> = policy
            .tool_actions
            .iter()
            .map(|l| (l.server().to_owned(), l.allowed_tools().to_vec()))
            .collect();
        // recorded before the lists take effect: whoever sees the change finds its record
        if !changed.is_empty() || !released.is_empty() || lists_changed {
            self.audit(
                AUDIT_RELOADED,
                serde_json::json!({
                    "path": self.name,
                    "teams_changed": changed,
                    "teams_released": released,
                    "mcp_servers_changed": lists_changed,
                    "mcp_servers": mcp_servers,
                }),
            )
            .await;
        }
        if lists_changed {
            self.service.set_tool_actions(policy.tool_actions);
        }
        self.status = PolicyFileStatus {
            path: self.name.clone(),
            loaded_at_ms: now_ms(),
            last_error: None,
            teams,
            mcp_servers,
        };
        self.publish_status();
        info!(
            path = %self.name,
            teams = self.status.teams.len(),
            teams_changed = changed.len(),
            mcp_servers = self.status.mcp_servers.len(),
            lists_changed,
            "policy file loaded"
        );
        if !released.is_empty() {
            info!(path = %self.name, teams = ?released, "teams no longer in the policy file are writable through the API again");
        }
        Ok(())
    }

    /// Writes the team's controls unless the store already holds them; true if written.
    async fn write_team(&self, team: &str, controls: &AdminControls) -> Result<bool, ServiceError> {
        for _ in 0..WRITE_ATTEMPTS {
            let current = self.service.stored_admin(team).await?;
            if &current.doc == controls {
                return Ok(false);
            }
            match self
                .service
                .write_admin(
                    &self.actor(),
                    team,
                    controls.clone(),
                    Some(current.revision),
                )
                .await
            {
                Ok(_) => return Ok(true),
                // another replica applying the same file, most likely: compare again
                Err(ServiceError::Conflict { .. }) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(ServiceError::Unavailable(format!(
            "team {team} keeps changing while the policy file is applied: will retry"
        )))
    }

    async fn audit(&self, kind: &str, detail: serde_json::Value) {
        let recorded = self
            .service
            .record_audit(SERVER_WIDE_TEAM, &self.actor(), kind, detail)
            .await;
        if let Err(e) = recorded {
            warn!(path = %self.name, error = %e, "cannot record the policy file event in the audit trail");
        }
    }
}
