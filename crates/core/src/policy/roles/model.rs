//! Seed 004's documents as a team writes them: tool categories, agent roles, and
//! allow-lists per agent (or role) and context with their restrictions.
//!
//! Field names are seed 004's (camelCase), so its JSON loads as written. Unknown
//! fields are refused: a misspelt restriction must never pass for an absent one.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

// seed 004's document, as the seed writes it
/// A team's roles document: tool categories, agent roles and allow-lists
/// (`toolCategories`, `agentRoles`, `allowLists`); docs/roles.md explains it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct RolesDocument {
    /// Named sets of operations; an operation belongs to at most one category. A
    /// category is also the team allowlists' entry `@NAME`; a preset's name
    /// (`readonly`) is no category's.
    pub tool_categories: BTreeMap<String, ToolCategory>,
    /// Roles by id.
    pub agent_roles: BTreeMap<String, AgentRole>,
    /// Allow-lists by name (e.g. `agentA`): each for one agent or one role.
    pub allow_lists: BTreeMap<String, AllowList>,
    /// The context of a call that names none; without it such a call has no
    /// allow-list.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_context: Option<String>,
}

impl RolesDocument {
    /// Nothing defined: roles are not in use.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// A tool category: a named set of operations, allowed together.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct ToolCategory {
    pub description: String,
    /// Operations (`CREATE_COMPONENT`), or tool names as calls carry them
    /// (`github:create_issue`).
    pub tools: Vec<String>,
}

/// An agent role (a Claude Code subagent's type is its role).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct AgentRole {
    /// Agents that have this role; an agent has at most one.
    pub agent_ids: Vec<String>,
    pub description: String,
    /// Descriptive: decisions read the allow-lists, not these.
    pub base_capabilities: Vec<String>,
}

/// An allow-list: for one agent (`agentId`), or for every agent of a role
/// (`roleId` alone).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct AllowList {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role_id: Option<String>,
    /// The author's own version label; the store's revision is the authoritative one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_updated: Option<String>,
    /// Per context type (`UI_SANDBOX`).
    pub contexts: BTreeMap<String, ContextAllowList>,
}

/// What an agent may do in one context.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct ContextAllowList {
    pub description: String,
    /// Allowed operations by category; every other operation is denied.
    pub allowed_tools: BTreeMap<String, Vec<String>>,
    pub restrictions: Restrictions,
}

/// Restrictions. Those the server enforces come first; the rest are
/// limits only the caller can apply and come back with the decision as obligations.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct Restrictions {
    /// Denies when the call's component count is at least this (`>=`). At most 2³²−1,
    /// as every count here: larger would never bind.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_components_per_session: Option<u32>,
    /// Component types never touched. Compared literally and without case: `*` is a
    /// type named `*` here, not a wildcard.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub forbidden_components: Vec<String>,
    /// When set, the only component types a call may touch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed_component_types: Option<Vec<String>>,
    /// When set, the only extensions (Node's `path.extname`, exact case) a path may have.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed_file_types: Option<Vec<String>>,
    /// When set, every path touched must lie in one of these (relative ones are
    /// resolved against the call's working directory; `dir/**` is `dir/`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed_directories: Option<Vec<String>>,
    /// Globs no path may match, without case: without `/` against every part of the
    /// path (`*.pem`), with `/` against the whole path.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub forbidden_files: Vec<String>,
    /// The largest file a call may write or read, e.g. `10MB` (npm `bytes` units).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_file_size: Option<String>,
    /// When set, the only hosts a call may reach (any port).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed_network_hosts: Option<Vec<String>>,
    /// When set, the only `host:port` a call may reach; `host:*` is any port.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed_endpoints: Option<Vec<String>>,
    /// When set, the only protocols (URL schemes, or the call's `protocol`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed_protocols: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed_databases: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed_tables: Option<Vec<String>>,
    /// Operations denied here even when a category allows them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub forbidden_operations: Vec<String>,
    /// At most this many calls of an operation per session id, counted by the server.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub session_quotas: BTreeMap<String, u32>,

    // obligations: limits the server cannot see, handed back to the caller
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_component_depth: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sensitive_properties: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_only_properties: Option<Vec<String>>,
    #[serde(rename = "allowedWCAGLevels", skip_serializing_if = "Option::is_none")]
    pub allowed_wcag_levels: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed_contrast_checks: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_test_duration: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_query_time: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_schema_size: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed_schema_versions: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed_message_types: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_message_size: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed_test_types: Option<Vec<String>>,
    /// Any other limit for the caller, by name.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub obligations: BTreeMap<String, serde_json::Value>,
}

impl Restrictions {
    /// The limits the caller must apply, by their names in the roles document, in a
    /// stable order.
    pub(super) fn obligations(&self) -> Vec<(String, serde_json::Value)> {
        use serde_json::Value;
        let list = |v: &Option<Vec<String>>| {
            v.as_ref()
                .map(|l| Value::Array(l.iter().cloned().map(Value::String).collect()))
        };
        let text = |v: &Option<String>| v.clone().map(Value::String);
        let fixed = [
            (
                "maxComponentDepth",
                self.max_component_depth.map(Value::from),
            ),
            ("sensitiveProperties", list(&self.sensitive_properties)),
            ("readOnlyProperties", list(&self.read_only_properties)),
            ("allowedWCAGLevels", list(&self.allowed_wcag_levels)),
            ("allowedContrastChecks", list(&self.allowed_contrast_checks)),
            ("maxTestDuration", text(&self.max_test_duration)),
            ("maxQueryTime", text(&self.max_query_time)),
            ("maxSchemaSize", text(&self.max_schema_size)),
            ("allowedSchemaVersions", list(&self.allowed_schema_versions)),
            ("allowedMessageTypes", list(&self.allowed_message_types)),
            ("maxMessageSize", text(&self.max_message_size)),
            ("allowedTestTypes", list(&self.allowed_test_types)),
        ];
        fixed
            .into_iter()
            .filter_map(|(name, v)| v.map(|v| (name.to_owned(), v)))
            .chain(self.obligations.iter().map(|(k, v)| (k.clone(), v.clone())))
            .collect()
    }
}
