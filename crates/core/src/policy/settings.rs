//! The settings documents the decision reads: team admin controls and user settings.
//!
//! Field names are the protobuf names of `AutoRunControls` and `UserSettings`, so the
//! decision vectors, the stored records and the policy YAML all read alike.

use super::roles::RolesDocument;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Server ids whose tools are browser tools unless the admin names others (seed 001 `dxe`).
pub const DEFAULT_BROWSER_SERVER_IDS: [&str; 2] =
    ["cursor-browser-extension", "cursor-ide-browser"];

/// How the admin's MCP allowlist combines with the user's while admin controls are on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ListMode {
    /// The admin's list replaces the user's (seed 001).
    #[default]
    Replace,
    /// Both lists count and the user may add entries.
    Union,
}

/// Which MCP tools may exist at all (seed 003's blocklist and allowlist modes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AccessMode {
    /// Everything exists but what `mcp_tool_blocklist` matches.
    #[default]
    Blocklist,
    /// Only what `mcp_access_allowlist` matches exists.
    Allowlist,
}

/// Opaque to the decision; kept so a round trip loses nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxingControls {
    pub enabled: bool,
}

/// Team admin settings: seed 001's `AutoRunControls` (fields 1-9) plus toolgate's extensions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct AdminControls {
    pub enabled: bool,
    /// Shell command prefixes that may auto-run.
    pub allowed: Vec<String>,
    /// Shell command prefixes that never auto-run.
    pub blocked: Vec<String>,
    pub disable_mcp_auto_run: bool,
    pub delete_file_protection: bool,
    pub enable_run_everything: bool,
    pub mcp_tool_allowlist: Vec<String>,
    pub sandboxing_controls: Option<SandboxingControls>,
    pub browser_protection: bool,
    // toolgate's extensions
    pub mcp_tool_blocklist: Vec<String>,
    pub kill_switch: bool,
    /// Never empty once normalised: empty means [`DEFAULT_BROWSER_SERVER_IDS`].
    pub browser_server_ids: Vec<String>,
    pub list_mode: ListMode,
    pub mcp_access_mode: AccessMode,
    pub mcp_access_allowlist: Vec<String>,
    /// Shell command prefixes that must never run: DENY `COMMAND_DENIED`, matched as
    /// blocked prefixes are and softened by nothing.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub denied: Vec<String>,
    /// Seed 004's roles, contexts and restrictions: in force for calls that name an
    /// agent or a role, once the document has an allow-list.
    #[serde(skip_serializing_if = "RolesDocument::is_empty")]
    pub roles: RolesDocument,
}

impl Default for AdminControls {
    fn default() -> Self {
        Self {
            enabled: false,
            allowed: Vec::new(),
            blocked: Vec::new(),
            disable_mcp_auto_run: false,
            delete_file_protection: false,
            enable_run_everything: false,
            mcp_tool_allowlist: Vec::new(),
            sandboxing_controls: None,
            browser_protection: false,
            mcp_tool_blocklist: Vec::new(),
            kill_switch: false,
            browser_server_ids: default_browser_server_ids(),
            list_mode: ListMode::Replace,
            mcp_access_mode: AccessMode::Blocklist,
            mcp_access_allowlist: Vec::new(),
            denied: Vec::new(),
            roles: RolesDocument::default(),
        }
    }
}

impl AdminControls {
    /// Every list, by field name: each is held to the entry limit.
    pub fn lists(&self) -> [(&'static str, &Vec<String>); 7] {
        [
            ("allowed", &self.allowed),
            ("blocked", &self.blocked),
            ("denied", &self.denied),
            ("mcp_tool_allowlist", &self.mcp_tool_allowlist),
            ("mcp_tool_blocklist", &self.mcp_tool_blocklist),
            ("browser_server_ids", &self.browser_server_ids),
            ("mcp_access_allowlist", &self.mcp_access_allowlist),
        ]
    }
}

pub fn default_browser_server_ids() -> Vec<String> {
    DEFAULT_BROWSER_SERVER_IDS
        .iter()
        .map(|s| (*s).to_owned())
        .collect()
}

/// A user's own settings within a team (seed 001's "Related Settings" plus command lists).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct UserSettings {
    pub mcp_allowed_tools: Vec<String>,
    pub yolo_mcp_tools_disabled: bool,
    pub playwright_protection: bool,
    pub use_yolo_mode: bool,
    pub yolo_enable_run_everything: bool,
    pub command_allowlist: Vec<String>,
    pub command_denylist: Vec<String>,
}

impl UserSettings {
    /// Every list, by field name: each is held to the entry limit.
    pub fn lists(&self) -> [(&'static str, &Vec<String>); 3] {
        [
            ("mcp_allowed_tools", &self.mcp_allowed_tools),
            ("command_allowlist", &self.command_allowlist),
            ("command_denylist", &self.command_denylist),
        ]
    }
}

impl Default for UserSettings {
    fn default() -> Self {
        Self {
            mcp_allowed_tools: Vec::new(),
            yolo_mcp_tools_disabled: false,
            // seed 001: browser protection is on unless the user turns it off
            playwright_protection: true,
            use_yolo_mode: false,
            yolo_enable_run_everything: false,
            command_allowlist: Vec::new(),
            command_denylist: Vec::new(),
        }
    }
}
