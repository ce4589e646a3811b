//! The team policy YAML format (policy as code): parsing with errors that name the
//! file, the line and the rule broken.
//!
//! ```yaml
//! team: acme
//! auto_run_controls:
//!   enabled: true
//!   mcp_tool_allowlist: ["jira:*", "github:get_*"]
//!   mcp_tool_blocklist: ["github:delete_*"]
//! ```
//!
//! `auto_run_controls` takes every field of `AutoRunControls` and its extensions by
//! its protobuf name; unknown keys are errors.

use crate::policy::{AdminControls, CompiledAdmin, PolicyError};
use serde::{Deserialize, Serialize};

/// One team's policy as kept in git.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TeamPolicy {
    pub team: String,
    #[serde(default)]
    pub auto_run_controls: AdminControls,
}

/// A problem in a policy file, located.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {message}")]
pub struct PolicyFileError {
    pub file: String,
    /// 1-based; 0 when the problem has no single line (an empty file).
    pub line: usize,
    pub message: String,
}

/// Parses and validates a team policy; every invalid entry is reported.
pub fn parse_team_policy(file: &str, text: &str) -> Result<TeamPolicy, Vec<PolicyFileError>> {
    let policy: TeamPolicy = serde_norway::from_str(text).map_err(|e| {
        vec![PolicyFileError {
            file: file.to_owned(),
            line: e.location().map_or(0, |l| l.line()),
            message: e.to_string(),
        }]
    })?;
    if policy.team.trim().is_empty() {
        return Err(vec![PolicyFileError {
            file: file.to_owned(),
            line: line_of(text, "team:", None).unwrap_or(1),
            message: "team: must not be empty: name the team this policy is for".into(),
        }]);
    }
    validate(file, text, &policy.auto_run_controls).map(|()| policy)
}

/// Checks every entry of `controls`, locating problems in `text`.
pub fn validate(
    file: &str,
    text: &str,
    controls: &AdminControls,
) -> Result<(), Vec<PolicyFileError>> {
    match CompiledAdmin::compile(controls) {
        Ok(_) => Ok(()),
        Err(PolicyError::InvalidEntries(problems)) => Err(problems
            .into_iter()
            .map(|p| {
                let key = p.field.split('[').next().unwrap_or(&p.field).to_owned();
                PolicyFileError {
                    file: file.to_owned(),
                    line: line_of(text, &format!("{key}:"), Some(&p.entry)).unwrap_or(0),
                    message: format!(
                        "auto_run_controls.{}: {:?}: {} ({:?})",
                        p.field, p.entry, p.hint, p.rule
                    ),
                }
            })
            .collect()),
        Err(other) => Err(vec![PolicyFileError {
            file: file.to_owned(),
            line: 0,
            message: other.to_string(),
        }]),
    }
}

/// The 1-based line of `needle` at or after the line holding `key` (or of `key`).
fn line_of(text: &str, key: &str, needle: Option<&str>) -> Option<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.iter().position(|l| l.trim_start().starts_with(key))?;
    let Some(needle) = needle else {
        return Some(start + 1);
    };
    lines
        .iter()
        .enumerate()
        .skip(start)
        .find(|(_, l)| l.contains(needle))
        .map(|(i, _)| i + 1)
        .or(Some(start + 1))
}

/// The YAML of a team policy, as `admin get --output yaml` prints and `apply` reads.
pub fn to_yaml(policy: &TeamPolicy) -> String {
    serde_norway::to_string(policy).unwrap_or_default()
}
