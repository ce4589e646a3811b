//! The policy core: pure, synchronous decisions over settings documents.
//!
//! Architecture invariant: nothing here performs I/O, awaits, or knows about
//! tonic, protobuf or storage. The server, the CLI and embedded clients all
//! decide with this module.

mod settings;

pub use settings::{
    AccessMode, AdminControls, DEFAULT_BROWSER_SERVER_IDS, ListMode, SandboxingControls,
    UserSettings, default_browser_server_ids,
};

use serde::{Deserialize, Serialize};

/// What a decision lets happen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Outcome {
    /// Runs without approval.
    Allow,
    /// Needs approval.
    Ask,
    /// Must not run, and is hidden from `tools/list`.
    Deny,
}

/// Why a decision came out as it did. Stable names: never rename one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
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
}

/// A call to decide on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    /// An MCP (or built-in, server `builtin`) tool call.
    Mcp { server: String, tool: String },
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    /// e.g. `kill_switch`, `name_valid`, `admin_blocklist`, `allowlist`.
    pub name: &'static str,
    /// What it found, for people.
    pub result: String,
}

/// The answer to "may this call run without a human approving it?".
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Decision {
    pub outcome: Outcome,
    pub reason: Reason,
    /// The entry (as written in its list) that decided, when one did.
    pub matched_entry: Option<String>,
    pub candidates: Vec<Candidate>,
    /// A sentence for people.
    pub message: String,
    /// Every check made, in order.
    pub explanation: Vec<Check>,
}

impl Decision {
    /// True unless the call may run without approval.
    pub fn need_approval(&self) -> bool {
        self.outcome != Outcome::Allow
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
    /// `@name` that is no known preset.
    UnknownPreset,
    /// A shell prefix with no command in it.
    EmptyCommand,
    /// A list longer than the limit.
    TooMany,
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

// ---------------------------------------------------------------------------
// API CONTRACT (stubs to be replaced by the implementation; signatures fixed)
// ---------------------------------------------------------------------------

/// The most entries one list may hold.
pub const MAX_LIST_ENTRIES: usize = 100_000;

/// Team admin controls compiled for decisions whose cost does not grow with list size.
#[derive(Debug, Clone)]
pub struct CompiledAdmin {
    controls: AdminControls,
}

impl CompiledAdmin {
    /// Validates every entry (reporting all problems at once) and builds the lookup tables.
    pub fn compile(controls: &AdminControls) -> Result<Self, PolicyError> {
        let _ = controls;
        unimplemented!("policy core")
    }

    pub fn controls(&self) -> &AdminControls {
        &self.controls
    }
}

/// User settings compiled like [`CompiledAdmin`].
#[derive(Debug, Clone)]
pub struct CompiledUser {
    settings: UserSettings,
}

impl CompiledUser {
    pub fn compile(settings: &UserSettings) -> Result<Self, PolicyError> {
        let _ = settings;
        unimplemented!("policy core")
    }

    pub fn settings(&self) -> &UserSettings {
        &self.settings
    }
}

/// Decides one call, in the order of DESIGN.md "The decision".
pub fn decide(admin: &CompiledAdmin, user: &CompiledUser, call: &Call) -> Decision {
    let _ = (admin, user, call);
    unimplemented!("policy core")
}

/// What adding an entry did (seed 001 `Yro`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AddOutcome {
    /// The new list, with the entry appended.
    Added(Vec<String>),
    /// The exact entry is already there.
    AlreadyPresent,
    /// A wildcard entry of the list already covers it (the entry named).
    CoveredBy(String),
}

/// Adds `server:tool` to a list by seed 001's `Yro` rules; invalid names are an error.
pub fn add_mcp_entry(list: &[String], server: &str, tool: &str) -> Result<AddOutcome, PolicyError> {
    let _ = (list, server, tool);
    unimplemented!("policy core")
}

/// Removes an entry; `None` when it is not in the list.
pub fn remove_entry(list: &[String], entry: &str) -> Option<Vec<String>> {
    let _ = (list, entry);
    unimplemented!("policy core")
}

/// Drops duplicates and entries that a wildcard entry of the same list covers.
pub fn normalise(list: &[String]) -> Vec<String> {
    let _ = list;
    unimplemented!("policy core")
}

/// A `tools/list` result with the denied tools removed.
#[derive(Debug, Clone, PartialEq)]
pub struct FilteredTools {
    /// Same shape as given (`{"tools": [...]}` or the bare array).
    pub tools: serde_json::Value,
    /// Names of the tools removed because they are denied.
    pub removed: Vec<String>,
    /// Entries skipped because they are not an object with a string `name`.
    pub malformed_skipped: usize,
}

/// Keeps only the tools of `server` that are not DENIED (seed 003).
pub fn filter_tools(
    admin: &CompiledAdmin,
    user: &CompiledUser,
    server: &str,
    tools: &serde_json::Value,
) -> Result<FilteredTools, PolicyError> {
    let _ = (admin, user, server, tools);
    unimplemented!("policy core")
}
