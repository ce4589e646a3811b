//! The settings documents the decision reads: team admin controls and user settings.
//!
//! Field names are the protobuf names of `AutoRunControls` and `UserSettings`, so the
//! decision vectors, the stored records and the policy YAML all read alike.

use super::roles::RolesDocument;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

// seed 001 `dxe`
/// Server ids whose tools are browser tools unless the admin names others.
pub const DEFAULT_BROWSER_SERVER_IDS: [&str; 2] =
    ["cursor-browser-extension", "cursor-ide-browser"];

/// How the admin's MCP allowlist combines with the user's while admin controls are on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ListMode {
    /// The admin's list replaces the user's.
    #[default]
    Replace,
    /// Both lists count and the user may add entries.
    Union,
}

// seed 003's blocklist and allowlist modes
/// Which MCP tools may exist at all: every one but the blocked (blocklist), or only
/// the listed (allowlist).
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

// seed 001's `AutoRunControls` (fields 1-9) plus toolgate's extensions
/// Team admin settings: the auto-run controls (fields 1-9) plus toolgate's extensions.
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
    /// Agent roles, contexts and restrictions (docs/roles.md): in force for calls that name an
    /// agent or a role, once the document has an allow-list.
    #[serde(skip_serializing_if = "RolesDocument::is_empty")]
    pub roles: RolesDocument,
    /// The settings a user of the team has until they write their own (auto-run,
    /// protections, lists): none means toolgate's defaults.
    #[serde(skip_serializing_if = "Option::is_none")]
    /// Boxed: most teams have none, and the settings are large beside the controls.
    pub default_user_settings: Option<Box<UserSettings>>,
    /// Central approvals (who answers an ASK when the client cannot): none is off.
    // boxed, as the default user settings are: most teams have none
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approvals: Option<Box<super::approvals::ApprovalSettings>>,
    /// Group policies by group name: what each group's members get on top of (or
    /// instead of) the team's controls (docs/groups.md).
    // boxed, as the approvals are: most teams have none
    #[serde(skip_serializing_if = "no_groups")]
    pub groups: Box<BTreeMap<String, GroupControls>>,
    /// What the clients' own managed channels lock (docs/fleet.md): none sets no lock.
    // boxed, as the approvals are: most teams have none
    #[serde(skip_serializing_if = "Option::is_none")]
    pub managed: Option<Box<super::managed::ManagedControls>>,
    /// Calls per minute per team, per user and per tool (docs/rates.md): none is no
    /// limit.
    // boxed, as the approvals are: most teams have none
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rates: Option<Box<super::rates::RateControls>>,
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
            default_user_settings: None,
            approvals: None,
            groups: Box::default(),
            managed: None,
            rates: None,
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

// serde's skip_serializing_if passes a reference
#[allow(clippy::borrowed_box)]
fn no_groups(groups: &Box<BTreeMap<String, GroupControls>>) -> bool {
    groups.is_empty()
}

/// How a group's allowed lists (`allowed`, `mcp_tool_allowlist`,
/// `mcp_access_allowlist`) meet the team's for the group's members.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AllowMode {
    /// The group's entries are added to the team's.
    #[default]
    Add,
    /// The group's list stands instead of the team's (each list the group sets).
    Replace,
}

/// A group's policy: the parts of the admin controls a group may say. A list left
/// out (or a switch left off) says nothing; the kill switch, the roles, the
/// approvals and the users' defaults stay the team's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct GroupControls {
    /// How this group's allowed lists meet the team's.
    pub allow_mode: AllowMode,
    /// Shell command prefixes that may auto-run (added to or replacing the team's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed: Option<Vec<String>>,
    /// MCP tools that may auto-run (added to or replacing the team's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mcp_tool_allowlist: Option<Vec<String>>,
    /// With the access allowlist mode: the tools that may exist (added to or replacing
    /// the team's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mcp_access_allowlist: Option<Vec<String>>,
    /// Shell command prefixes that never auto-run: added to the team's.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub blocked: Vec<String>,
    /// Shell command prefixes that must never run: added to the team's.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub denied: Vec<String>,
    /// MCP tools that are denied: added to the team's.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mcp_tool_blocklist: Vec<String>,
    /// More servers whose tools are browser tools.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub browser_server_ids: Vec<String>,
    /// On: admin controls are on for the group's members.
    #[serde(skip_serializing_if = "is_false")]
    pub enabled: bool,
    #[serde(skip_serializing_if = "is_false")]
    pub disable_mcp_auto_run: bool,
    #[serde(skip_serializing_if = "is_false")]
    pub delete_file_protection: bool,
    #[serde(skip_serializing_if = "is_false")]
    pub browser_protection: bool,
    /// Off turns the team's run-everything off for the group's members; on changes
    /// nothing (a group cannot loosen a mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_run_everything: Option<bool>,
    /// `replace` here makes the admin's list replace the users' for the members.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub list_mode: Option<ListMode>,
    /// `allowlist` here puts the members under the access allowlist.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mcp_access_mode: Option<AccessMode>,
}

// serde's skip_serializing_if passes a reference
#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_false(b: &bool) -> bool {
    !*b
}

pub fn default_browser_server_ids() -> Vec<String> {
    DEFAULT_BROWSER_SERVER_IDS
        .iter()
        .map(|s| (*s).to_owned())
        .collect()
}

// seed 001's "Related Settings", plus the user's command lists
/// A user's own settings within a team: auto-run, run-everything, the protections and
/// their own MCP and command lists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct UserSettings {
    /// MCP tools (`server:tool`, `server:*`) that run without approval while auto-run
    /// is on (ignored while the team's allowlist replaces the users').
    pub mcp_allowed_tools: Vec<String>,
    /// MCP protection: MCP tools never run without approval.
    pub yolo_mcp_tools_disabled: bool,
    /// Browser protection: browser tools never run without approval (on by default).
    pub playwright_protection: bool,
    /// Auto-run: allowlisted tools and commands run without approval.
    pub use_yolo_mode: bool,
    /// Run-everything: with auto-run on, every tool runs without approval.
    pub yolo_enable_run_everything: bool,
    /// Command prefixes that run without approval while auto-run is on.
    pub command_allowlist: Vec<String>,
    /// Command prefixes that never run without approval (the user's own, always in force).
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

/// A field of [`UserSettings`] an update may name (a field mask's path): an update
/// changes the fields it names and leaves every other as it is.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
)]
#[strum(serialize_all = "snake_case")]
pub enum UserField {
    McpAllowedTools,
    YoloMcpToolsDisabled,
    PlaywrightProtection,
    UseYoloMode,
    YoloEnableRunEverything,
    CommandAllowlist,
    CommandDenylist,
}

impl UserField {
    /// Every field, in the message's order.
    pub const ALL: &'static [UserField] = <Self as strum::VariantArray>::VARIANTS;

    /// The field's name, as the protobuf message and the stored documents spell it.
    pub fn name(self) -> &'static str {
        self.into()
    }

    /// The field a path names, if it names one.
    pub fn parse(path: &str) -> Option<Self> {
        path.parse().ok()
    }
}

impl UserSettings {
    /// Copies the `fields` of `from` into these settings, leaving the others.
    pub fn set_fields(&mut self, from: &UserSettings, fields: &[UserField]) {
        for field in fields {
            match field {
                UserField::McpAllowedTools => {
                    self.mcp_allowed_tools.clone_from(&from.mcp_allowed_tools);
                }
                UserField::YoloMcpToolsDisabled => {
                    self.yolo_mcp_tools_disabled = from.yolo_mcp_tools_disabled;
                }
                UserField::PlaywrightProtection => {
                    self.playwright_protection = from.playwright_protection;
                }
                UserField::UseYoloMode => self.use_yolo_mode = from.use_yolo_mode,
                UserField::YoloEnableRunEverything => {
                    self.yolo_enable_run_everything = from.yolo_enable_run_everything;
                }
                UserField::CommandAllowlist => {
                    self.command_allowlist.clone_from(&from.command_allowlist);
                }
                UserField::CommandDenylist => {
                    self.command_denylist.clone_from(&from.command_denylist);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every subset of the fields: a field named takes the patch's value, every other
    /// keeps the base's, and every field is named by its own path.
    #[test]
    fn set_fields_changes_exactly_the_fields_named() {
        let base = UserSettings::default();
        let patch = UserSettings {
            mcp_allowed_tools: vec!["github:*".into()],
            yolo_mcp_tools_disabled: true,
            playwright_protection: false,
            use_yolo_mode: true,
            yolo_enable_run_everything: true,
            command_allowlist: vec!["git status".into()],
            command_denylist: vec!["rm".into()],
        };
        let value =
            |s: &UserSettings, f: UserField| serde_json::to_value(s).unwrap()[f.name()].clone();
        for bits in 0u32..(1 << UserField::ALL.len()) {
            let named: Vec<UserField> = UserField::ALL
                .iter()
                .copied()
                .enumerate()
                .filter(|(i, _)| bits & (1 << i) != 0)
                .map(|(_, f)| f)
                .collect();
            let mut s = base.clone();
            s.set_fields(&patch, &named);
            for &f in UserField::ALL {
                let want = if named.contains(&f) { &patch } else { &base };
                assert_eq!(value(&s, f), value(want, f), "{f:?} with {named:?}");
            }
        }
        for &f in UserField::ALL {
            assert_eq!(UserField::parse(f.name()), Some(f));
            assert_ne!(
                value(&base, f),
                value(&patch, f),
                "{f:?}: the table tests nothing"
            );
        }
        for path in [
            "",
            "revision",
            "team_id",
            "settings.use_yolo_mode",
            "USE_YOLO_MODE",
        ] {
            assert_eq!(UserField::parse(path), None, "{path}");
        }
    }
}
