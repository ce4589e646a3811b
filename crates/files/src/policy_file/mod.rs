//! The policy YAML formats, with errors that name the file, the line and the rule
//! broken: a team's policy as code (`toolgate admin apply -f team.yaml`) and the
//! server's policy file (`policy_file`, seed 000's file-managed allowlist).
//!
//! ```yaml
//! # team.yaml
//! team: acme
//! revision: 4            # optional: apply only if the team is still at this revision
//! auto_run_controls:
//!   enabled: true
//!   mcp_tool_allowlist: ["jira:*", "github:get_*"]
//!   mcp_tool_blocklist: ["github:delete_*"]
//! ```
//!
//! ```yaml
//! # the server's policy file
//! teams:
//!   - team: acme
//!     auto_run_controls: { enabled: true, mcp_tool_allowlist: ["jira:*"] }
//! mcp_servers:
//!   - server: gasoline
//!     allowed_tools: ["observe.*", "interact.navigate"]
//! ```
//!
//! `auto_run_controls` takes every field of `AutoRunControls` and its extensions by
//! its protobuf name (docs/team-policy.md lists them); unknown keys are errors.
//!
//! Both may carry `examples:` (calls and the answers they must get); a failing one
//! refuses the policy. `toolgate test` files name a team policy and cases of the same
//! form.
//!
//! The rooms: the safe read of a file in `read`, the limits checked before any
//! parser in `limits`, parsing and validation in `parse`, the examples and test
//! files in `examples`, and finding a path's line in `locate`.

mod checks;
mod examples;
mod limits;
mod locate;
mod parse;
mod read;

pub use examples::{ExampleResult, PolicyTest, parse_policy_test, run_examples, run_examples_in};
pub use limits::nesting_depth;
pub use locate::line_at;
pub use parse::{
    managed_policy_warnings, parse_managed_policy, parse_team_policy, parse_team_policy_untested,
    team_policy_warnings,
};
pub use read::{ReadError, decode_text, read_file};

use serde::{Deserialize, Serialize};
use toolgate_core::policy::{AdminControls, ToolActionLists, roles::RolesDocument};

/// Largest policy file, team policy or server policy file alike. Far above any real
/// policy (the lists' entry limits come first), and small enough that a file
/// pointed at the wrong thing cannot take the server's memory.
pub const MAX_POLICY_BYTES: usize = 4 * 1024 * 1024;
/// Deepest nesting of collections a policy YAML may have; real ones need 5. Checked
/// by a linear scan before the parser, whose time grows with depth faster than
/// linearly (50,000 levels took seconds).
pub const MAX_NESTING: usize = 32;

/// One team's policy as kept in git.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TeamPolicy {
    pub team: String,
    /// The revision the policy was read at (`admin get` writes it): `apply` changes
    /// nothing unless the team is still at it. Leave it out to apply over whatever
    /// revision the diff was computed against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<u64>,
    #[serde(default)]
    pub auto_run_controls: AdminControls,
    /// Calls and the answers they must get under this policy: `admin apply` and
    /// `admin diff` refuse the policy when one does not (they stay in git: the
    /// server does not keep them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<toolgate_core::examples::Example>,
}

/// The JSON Schemas of the policy documents, generated from their types, by the
/// file name they are published under in `schemas/`.
pub fn json_schemas() -> Vec<(&'static str, String)> {
    let pretty = |s: schemars::Schema| {
        let mut text = serde_json::to_string_pretty(&s).unwrap_or_default();
        text.push('\n');
        text
    };
    vec![
        (
            "roles.schema.json",
            pretty(schemars::schema_for!(RolesDocument)),
        ),
        (
            "policy-test.schema.json",
            pretty(schemars::schema_for!(PolicyTest)),
        ),
        (
            "team-policy.schema.json",
            pretty(schemars::schema_for!(TeamPolicy)),
        ),
    ]
}

/// The server's policy file, validated.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ManagedPolicy {
    /// Each team once, in file order.
    pub teams: Vec<(String, AdminControls)>,
    pub tool_actions: ToolActionLists,
}

/// A problem in a policy file, located.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {message}")]
pub struct PolicyFileError {
    pub file: String,
    /// 1-based; 0 when the problem has no single line.
    pub line: usize,
    pub message: String,
}

/// Every problem of a file, one per line, as printed and as `GetServerConfig` shows.
pub fn format_errors(errors: &[PolicyFileError]) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The YAML of a team policy, as `admin get` prints and `apply` reads.
pub fn to_yaml(policy: &TeamPolicy) -> String {
    serde_norway::to_string(policy).unwrap_or_default()
}
