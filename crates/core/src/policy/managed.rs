//! What a team asks the agent clients' own managed channels to lock, beside the
//! decisions toolgate makes itself (docs/fleet.md): delivered by `toolgate managed`
//! and `toolgate sync`, never read by the decision.

pub mod servers;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
pub use servers::ServerIdentity;

/// The longest version a team may name.
const MAX_VERSION_LEN: usize = 32;

/// The locks a team's managed delivery sets (`managed:` in the team policy).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ManagedControls {
    /// Claude Code refuses bypass-permissions mode (`--dangerously-skip-permissions`).
    pub disable_bypass_permissions_mode: bool,
    /// Users' and projects' own hooks run beside toolgate's managed hook; off (the
    /// default), only managed hooks run.
    pub allow_user_hooks: bool,
    /// Only the permission rules toolgate delivers apply: users' and projects' own
    /// allow, ask and deny rules are ignored.
    pub managed_permission_rules_only: bool,
    /// The lowest Claude Code version that may start (`2.1.0`); empty: any.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub claude_code_minimum_version: String,
    /// With entries, only the MCP servers matching one may be configured: a stdio
    /// server must match a `command` entry when there is one, a remote server a `url`
    /// entry when there is one, otherwise a `name` entry. The access allowlist's
    /// servers count as `name` entries.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allowed_mcp_servers: Vec<ServerIdentity>,
    /// The MCP servers that may never be configured, by `name`, `command` (its
    /// words, matched exactly) or `url` (`*` matches any characters).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub denied_mcp_servers: Vec<ServerIdentity>,
}

impl ManagedControls {
    /// Whether nothing is set (the document then leaves `managed:` out).
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }

    /// The problem with the controls, as `(field, message)`: a version is one to
    /// three dot-separated numbers; server identities are within their limits.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        let v = &self.claude_code_minimum_version;
        let numbers = v.split('.').collect::<Vec<_>>();
        let well_formed = v.len() <= MAX_VERSION_LEN
            && numbers.len() <= 3
            && numbers
                .iter()
                .all(|n| !n.is_empty() && n.len() <= 9 && n.bytes().all(|b| b.is_ascii_digit()));
        if v.is_empty() || well_formed {
            servers::check_identities("managed.allowed_mcp_servers", &self.allowed_mcp_servers)
                .map_err(|m| ("managed.allowed_mcp_servers", m))?;
            servers::check_identities("managed.denied_mcp_servers", &self.denied_mcp_servers)
                .map_err(|m| ("managed.denied_mcp_servers", m))
        } else {
            Err((
                "managed.claude_code_minimum_version",
                format!(
                    "{:?} is not a version: give one to three numbers separated by dots, such as 2.1.0",
                    v.chars().take(MAX_VERSION_LEN).collect::<String>()
                ),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_minimum_version_is_numbers_and_dots() {
        let with = |v: &str| ManagedControls {
            claude_code_minimum_version: v.into(),
            ..ManagedControls::default()
        };
        for good in ["", "2", "2.1", "2.1.197", "10.0.0"] {
            assert_eq!(with(good).check(), Ok(()), "{good}");
        }
        for bad in [
            "v2.1.0",
            "2.1.0-beta",
            "2..1",
            "2.1.0.1",
            ".2",
            "latest",
            " 2.1",
            "2.1\n",
            "1234567890.1",
            &"9".repeat(40),
        ] {
            let (field, message) = with(bad).check().unwrap_err();
            assert_eq!(field, "managed.claude_code_minimum_version");
            assert!(message.contains("such as 2.1.0"), "{bad}: {message}");
        }
    }
}
