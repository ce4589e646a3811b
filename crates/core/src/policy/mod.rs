//! The policy core: pure, synchronous decisions over settings documents.
//!
//! Architecture invariant: nothing here performs I/O, awaits, or knows about
//! tonic, protobuf or storage. The server, the CLI and embedded clients all
//! decide with this module.

pub mod approvals;
mod arena;
mod builtin;
mod decide;
mod entry;
mod group_names;
pub mod group_set;
pub mod groups;
mod lint;
mod lists;
pub mod managed;
mod matcher;
pub mod rates;
pub mod roles;
mod settings;
mod shell;
mod tool_actions;

pub use arena::EntryText;
pub use builtin::{
    READONLY as READONLY_TOOLS, SERVER as BUILTIN_SERVER, TOOLS as BUILTIN_TOOLS,
    canonical as canonical_builtin, cli_name as builtin_cli_name,
};
pub use decide::{
    FilteredTools, ListedTool, Site, decide, decide_at, decide_in, decide_listing, explain,
    explain_at, explain_in, filter_tools, filter_tools_in, is_write_tool, tool_written_files,
};
pub use entry::{
    Entry, Glob, MAX_NAME_LEN, Side, format_entry, glob_match, split_internal_name,
    validate_call_name, validate_name,
};
pub use lint::{Warning, warnings};
pub use lists::{
    AddOutcome, CompiledAdmin, CompiledUser, MAX_LIST_ENTRIES, MAX_PREFIX_LEN, add_mcp_entry,
    normalise, remove_entry,
};
pub use matcher::{CompiledList, reference_first_match};
pub use settings::{
    AccessMode, AdminControls, DEFAULT_BROWSER_SERVER_IDS, ListMode, SandboxingControls, UserField,
    UserSettings, default_browser_server_ids,
};
pub use shell::{
    Cd, CommandLine, CommandOrigin, Effects, MAX_NESTING, Place, Prefix, PrefixList, SimpleCommand,
    Touch, checked_beyond_prefix, parse_command_line, place_of, program_name, touches,
};
pub use tool_actions::{ToolActionList, ToolActionLists, qualified_name};

use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// What a decision lets happen.
// (its stable names `ALLOW`, `ASK`, `DENY` are derived: `as_str`, `str::parse`, `ALL`)
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[strum(serialize_all = "SCREAMING_SNAKE_CASE")]
pub enum Outcome {
    /// Runs without approval.
    Allow,
    /// Needs approval.
    Ask,
    /// Must not run, and is hidden from `tools/list`.
    Deny,
}

/// Why a decision came out as it did. Stable names: never rename one.
// (the names, `as_str` and `str::parse`, and the list of every reason, `ALL`, are
// derived, so a new reason is in all of them)
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[strum(serialize_all = "SCREAMING_SNAKE_CASE")]
pub enum Reason {
    KillSwitch,
    InvalidName,
    BlockedByAdmin,
    NotInAccessAllowlist,
    AdminDisabled,
    ProtectionOn,
    BrowserUnprotected,
    RunEverything,
    AutoRunOff,
    Allowlisted,
    NotInAdminAllowlist,
    NotAllowlisted,
    CommandAllowed,
    CommandBlocked,
    CommandNotAllowlisted,
    DeleteProtected,
    AutoRunOn,
    NotInFileAllowlist,
    /// Roles: no allow-list for the agent (or role) in the call's context.
    NoRoleAllowlist,
    /// Roles: the operation is not allowed in its category.
    NotInRoleAllowlist,
    /// Roles: a restriction on what the call touches failed (DENY), or could not
    /// be checked (ASK).
    Restricted,
    /// A part of the command line matches a denied prefix: it must not run.
    CommandDenied,
    /// A person approved the call (or a grant of theirs covers it). ALLOW.
    Approved,
    /// An approver denied the call, with a reason. DENY.
    ApprovalDenied,
    /// Nobody answered the approval request before its deadline. DENY.
    ApprovalExpired,
    /// Past one of the team's rates (calls per minute): ASK, or DENY if the team
    /// says so.
    RateLimited,
}

/// A call to decide on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    /// An MCP (or built-in, server `builtin`) tool call.
    Mcp { server: String, tool: String },
    /// An MCP tool call with an action (seed 000's `interact({action: "navigate"})`):
    /// decided as [`Call::Mcp`], and the policy file's `tool.action` lists match
    /// `tool.action`.
    McpAction {
        server: String,
        tool: String,
        action: String,
    },
    /// An internal name (`mcp_<server>_<tool>`, `mcp__<server>__<tool>`) or a plain
    /// tool name that belongs to `fallback_server`.
    McpInternal {
        name: String,
        fallback_server: String,
    },
    /// A shell command line.
    Shell(String),
    /// The path of a file to delete.
    DeleteFile(String),
}

/// An entry the user could add to their allowlist to let the call auto-run next time.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Candidate {
    Mcp {
        server: String,
        tool: String,
    },
    /// A simple command of a shell line that no allowed prefix covers.
    Command(String),
}

/// One step of a decision, in the order it was made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// e.g. `kill_switch`, `name_valid`, `admin_blocklist`, `allowlist`.
    pub name: &'static str,
    /// What it found, for people.
    pub result: String,
}

/// The answer to "may this call run without a human approving it?".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub outcome: Outcome,
    pub reason: Reason,
    /// The entry (as written in its list) that decided, when one did.
    pub matched_entry: Option<EntryText>,
    pub candidates: Vec<Candidate>,
    /// Every check made, in order; empty unless the decision came from [`explain`].
    pub explanation: Vec<Check>,
    /// With [`Reason::NotInFileAllowlist`]: the patterns the policy file allows.
    pub allowed_tools: Option<Arc<[String]>>,
    /// The message written when the decision was made (seed 004's reasons), which
    /// [`Decision::message`] returns as it is.
    pub detail: Option<Arc<str>>,
    /// Limits the caller must apply itself (seed 004's `maxQueryTime`…).
    pub obligations: Option<Arc<[roles::Obligation]>>,
    /// Whose settings decided, for the advice in [`Decision::message`].
    pub scope: Scope,
    /// What an ALLOW rests on that the decision could not check itself; empty for
    /// every other outcome (and for an ALLOW of a plain read).
    pub unchecked: Unchecked,
    /// Who wrote the entry or the switch that decided (`team`, `user`, or the team
    /// and the groups that gave it, `group contractors`), once the service named it
    /// ([`groups::Origins::name`]); None when nothing named it.
    pub origin: Option<Arc<str>>,
}

/// What an ALLOW of a command line or a write tool rests on beyond the policy: the
/// programs whose effects nobody checked, and the paths that must stay where they
/// look. Said in the decision's message and returned by `Evaluate`, so a client that
/// is not toolgate's own hook knows it too.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Unchecked {
    /// Programs an allowed prefix names that have no row of the program table
    /// ("effects unknown"): what they run, write or delete was not checked.
    pub effects_unknown: Vec<String>,
    /// Paths the call writes or deletes inside its working directory (absolute when
    /// the working directory is known, else relative to it): the ALLOW holds only
    /// if each stays inside it and out of protected places once symbolic links are
    /// resolved, and no directory on the way is a repository's metadata (`config`,
    /// `HEAD`, `objects/`). Only the client, where the files are, can check that.
    pub stays_inside: Vec<String>,
}

impl Unchecked {
    pub fn is_empty(&self) -> bool {
        self.effects_unknown.is_empty() && self.stays_inside.is_empty()
    }
}

/// Whose settings a decision was made under, so its message can say what would
/// change the answer (an admin's list under `replace`, the user's own otherwise).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Scope {
    /// The team's admin controls were enabled: the admin's values stood in.
    pub admin_controlled: bool,
    pub list_mode: ListMode,
    /// The call's server is a browser server (browser protection, not MCP protection).
    pub browser: bool,
}

impl Decision {
    /// True unless the call may run without approval.
    pub fn need_approval(&self) -> bool {
        self.outcome != Outcome::Allow
    }

    /// A sentence for people about this decision on `call`.
    pub fn message(&self, call: &Call) -> String {
        let mut out = match &self.detail {
            // the part and effect that decided, then what would change the answer
            Some(detail) => match decide::advice(self, call) {
                Some(advice) => format!("{detail}; {advice}"),
                None => detail.to_string(),
            },
            None => decide::message(self, call),
        };
        // what the ALLOW rests on that nobody checked, said with it
        if !self.unchecked.is_empty() {
            out.push_str("; ");
            out.push_str(&decide::unchecked(&self.unchecked));
        }
        out
    }
}

impl Reason {
    /// Every reason, in declaration order (metrics make a handle for each).
    pub const ALL: &'static [Reason] = <Self as strum::VariantArray>::VARIANTS;

    /// The stable name, e.g. `KILL_SWITCH`.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

impl Outcome {
    pub const ALL: &'static [Outcome] = <Self as strum::VariantArray>::VARIANTS;

    /// The stable name, e.g. `ALLOW`.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// Which rule an entry or a name breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    /// Seed 001 `ihe`: not empty.
    Empty,
    /// Seed 001 `ihe`: at most 256 characters.
    TooLong,
    /// Seed 001 `ihe`: not only whitespace.
    Whitespace,
    /// Seed 001 `ihe`: no `:` or `*` unless it is the wildcard (globs are the extension).
    ReservedCharacter,
    /// Seed 001 `vOh`: exactly one `:` between server and tool.
    Separator,
    /// `@name` that is no known preset (nor, in a team's allowlist, a tool category
    /// of the team's roles document).
    UnknownPreset,
    /// A shell prefix with no command in it.
    EmptyCommand,
    /// A list longer than the limit.
    TooMany,
    /// Named twice where each may appear once (a team or a server in the policy file).
    Duplicate,
    /// Names a category, operation or role the document does not define.
    UnknownName,
    /// A value that cannot be read (a size, a host, a glob, a directory).
    Malformed,
}

/// One bad entry: where it is, what it is, which rule it breaks and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EntryProblem {
    /// The list and index, e.g. `mcp_tool_allowlist[3]`.
    pub field: String,
    pub entry: String,
    pub rule: Rule,
    /// How to fix it, for people.
    pub hint: String,
}

impl std::fmt::Display for EntryProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {:?} {}", self.field, self.entry, self.hint)
    }
}

/// Errors of the policy core.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// Every problem found, not only the first.
    #[error("invalid entries: {}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    InvalidEntries(Vec<EntryProblem>),
    /// A `tools/list` result that is not JSON of the expected shape.
    #[error("invalid tools/list result: {0}")]
    InvalidToolsList(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The derived names are the serialized ones, and each parses back: records,
    /// metrics and the JSON documents spell a reason or an outcome one way.
    #[test]
    fn derived_names_are_the_serialized_names() {
        for &r in Reason::ALL {
            assert_eq!(serde_json::to_value(r).unwrap(), r.as_str(), "{r:?}");
            assert_eq!(r.as_str().parse::<Reason>(), Ok(r));
        }
        for &o in Outcome::ALL {
            assert_eq!(serde_json::to_value(o).unwrap(), o.as_str(), "{o:?}");
            assert_eq!(o.as_str().parse::<Outcome>(), Ok(o));
        }
        assert_eq!(Outcome::ALL, [Outcome::Allow, Outcome::Ask, Outcome::Deny]);
    }
}
