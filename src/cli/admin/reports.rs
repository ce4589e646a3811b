//! What `admin diff|apply` and `kill-switch` print.

use super::changes::Change;

use crate::cli::output::Render;
use serde::Serialize;
use toolgate_files::policy_file::{self, TeamPolicy};

/// `admin diff`: the team's revision and what the file would change.
#[derive(Debug, Serialize)]
pub struct DiffReport {
    pub team: String,
    pub revision: u64,
    pub changes: Vec<Change>,
    /// With `--impact`: the logged calls whose outcome the file would change.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub impact: Option<crate::cli::decisions::ImpactReport>,
}

impl Render for DiffReport {
    fn human(&self) -> String {
        let (team, revision) = (&self.team, self.revision);
        let mut out = if self.changes.is_empty() {
            format!("team {team} (revision {revision}): no changes\n")
        } else {
            format!("team {team} (revision {revision}):\n")
        };
        for change in &self.changes {
            out.push_str(&change.line());
            out.push('\n');
        }
        if let Some(impact) = &self.impact {
            out.push_str(&impact.human());
        }
        out
    }
}

/// `admin apply`: the diff and what became of it.
#[derive(Debug, Serialize)]
pub struct ApplyReport {
    #[serde(flatten)]
    pub diff: DiffReport,
    pub expected_revision: u64,
    pub applied: bool,
    pub dry_run: bool,
    /// Why nothing was applied, when someone else wrote first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Render for ApplyReport {
    fn human(&self) -> String {
        let mut out = self.diff.human();
        if self.applied {
            out.push_str(&format!(
                "applied: team {} is at revision {}\n",
                self.diff.team, self.diff.revision
            ));
        } else if self.dry_run {
            out.push_str("dry run: nothing applied\n");
        }
        out
    }
}

/// `admin get`: the team's policy file, with the revision it was read at.
#[derive(Debug, Serialize)]
pub struct PolicyReport {
    pub revision: u64,
    pub policy: TeamPolicy,
}

impl Render for PolicyReport {
    fn human(&self) -> String {
        policy_file::to_yaml(&self.policy)
    }
}

/// `kill-switch on|off`: where the switch stands.
#[derive(Debug, Serialize)]
pub struct KillSwitchReport {
    pub team: String,
    pub kill_switch: bool,
    pub revision: u64,
    pub changed: bool,
}

impl Render for KillSwitchReport {
    fn human(&self) -> String {
        let state = if self.kill_switch { "on" } else { "off" };
        if self.changed {
            format!(
                "kill switch of team {} is {state} (revision {})\n",
                self.team, self.revision
            )
        } else {
            format!("kill switch of team {} is already {state}\n", self.team)
        }
    }
}
