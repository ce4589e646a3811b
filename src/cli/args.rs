//! The client commands' arguments, as clap parses them.

use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Subcommand)]
pub enum ClientCommand {
    /// Team admin settings as code.
    #[command(subcommand)]
    Admin(AdminCommand),
    /// A user's MCP allowlist.
    #[command(subcommand)]
    Allowlist(AllowlistCommand),
    /// One decision, with the checks that made it.
    Evaluate(Box<EvaluateArgs>),
    /// The audit trail.
    #[command(subcommand)]
    Audit(AuditCommand),
    /// The decision log: every ALLOW, ASK and DENY, who asked and why.
    #[command(subcommand)]
    Decisions(DecisionsCommand),
    /// Turns a team's kill switch on or off (every call DENIED while on).
    KillSwitch {
        #[arg(value_parser = ["on", "off"])]
        state: String,
        #[arg(long)]
        team: String,
    },
    /// Central approvals: the requests a team's agents are waiting on, answered
    /// from here.
    #[command(subcommand)]
    Approvals(ApprovalsCommand),
    /// Tokens for developers and agents: issued, listed and revoked without
    /// editing the server's configuration.
    #[command(subcommand)]
    Token(TokenCommand),
    /// Tool pins: each MCP tool's definition as the team's gateways pinned it,
    /// changes with their diff, accepting them, pins set ahead from a file.
    #[command(subcommand)]
    Pins(PinsCommand),
    /// Group policies: what the members of a group get on top of (or instead of
    /// part of) the team's controls.
    #[command(subcommand)]
    Group(GroupCommand),
    /// Who signed in through the identity provider: each user's last sign-in, with
    /// their groups and the issuer.
    #[command(subcommand)]
    SignIns(SignInsCommand),
    /// A user's own settings (auto-run, run-everything, protections), read or
    /// changed field by field.
    #[command(subcommand)]
    User(UserCommand),
    /// Prints policy events as they arrive.
    Watch {
        #[arg(long)]
        team: String,
        #[arg(long)]
        user: String,
        /// Resume after this revision.
        #[arg(long)]
        after: Option<u64>,
    },
}

#[derive(Debug, Subcommand)]
pub enum SignInsCommand {
    /// Lists the team's users who signed in, the latest first.
    List {
        /// The team (default: the token's own; an operator sees every team).
        #[arg(long)]
        team: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Prints the team's policy as YAML (or JSON).
    Get {
        #[arg(long)]
        team: String,
    },
    /// Shows what applying the file would change; exit 3 when it would change something.
    Diff {
        /// The team policy YAML (deploy/examples/team.yaml shows every key), or a
        /// `kind: pins` document (the team's pinned tools and pin settings).
        #[arg(long, short)]
        file: PathBuf,
        /// Also decide the team's logged calls of this window again (`7d`, `24h`)
        /// under the file and print which change outcome (for the organisation's
        /// group document, every team's calls by members of a changed group).
        #[arg(long, value_name = "WINDOW")]
        impact: Option<String>,
    },
    /// Shows the diff and applies it, only if the team is still at the expected
    /// revision: `--expected-revision`, else the file's `revision:`, else the one the
    /// diff was computed against. A stale one exits 4 and changes nothing.
    Apply {
        /// The team policy YAML (deploy/examples/team.yaml shows every key), or a
        /// `kind: pins` document (the team's pinned tools and pin settings).
        #[arg(long, short)]
        file: PathBuf,
        /// Show the diff, change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Apply only if the team is still at this revision.
        #[arg(long)]
        expected_revision: Option<u64>,
        /// Also decide the team's logged calls of this window again (`7d`, `24h`)
        /// under the file and print which change outcome (for the organisation's
        /// group document, every team's calls by members of a changed group).
        #[arg(long, value_name = "WINDOW")]
        impact: Option<String>,
        /// With a `kind: group` document: also delete the scope's group policies
        /// the document does not name (without it they are kept).
        #[arg(long)]
        prune: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum AllowlistCommand {
    /// Prints the user's MCP allowlist.
    List {
        #[arg(long)]
        team: String,
        #[arg(long)]
        user: String,
    },
    /// Adds `server:tool` (refused as a duplicate, or when a `server:*` entry already covers it).
    Add {
        #[arg(long)]
        team: String,
        #[arg(long)]
        user: String,
        entry: String,
    },
    /// Removes an entry as written (`server:tool`).
    Remove {
        #[arg(long)]
        team: String,
        #[arg(long)]
        user: String,
        entry: String,
    },
}

#[derive(Debug, Args)]
pub struct EvaluateArgs {
    #[arg(long)]
    pub team: String,
    #[arg(long)]
    pub user: String,
    /// An MCP call, `server:tool`.
    #[arg(long, group = "call")]
    pub mcp: Option<String>,
    /// The MCP tool's action, e.g. `navigate` (matched as `tool.action` against the
    /// server's action list in the policy file).
    #[arg(long, requires = "mcp")]
    pub action: Option<String>,
    /// An internal tool name (`mcp_server_tool`); see --fallback-server.
    #[arg(long, group = "call")]
    pub internal: Option<String>,
    #[arg(long, default_value = "")]
    pub fallback_server: String,
    /// A shell command line.
    #[arg(long, group = "call")]
    pub shell: Option<String>,
    /// A file to delete.
    #[arg(long, group = "call")]
    pub delete: Option<String>,
    /// A built-in agent tool by any client's name (`Read`, `read_file`, `WebFetch`,
    /// `web_fetch`…); shell commands go through --shell.
    #[arg(long, group = "call")]
    pub builtin: Option<String>,
    /// The agent making the call (agent roles decide only calls that name an agent
    /// or a role).
    #[arg(long)]
    pub agent: Option<String>,
    /// The role the agent claims (a Claude Code subagent's type).
    #[arg(long)]
    pub role: Option<String>,
    /// The context type (default: the roles document's defaultContext).
    #[arg(long)]
    pub context: Option<String>,
    /// The session per-session quotas count by.
    #[arg(long)]
    pub session: Option<String>,
    /// The working directory the call's relative paths resolve against (absolute).
    #[arg(long)]
    pub cwd: Option<String>,
    /// The operation (`FILE_READ`, `CREATE_COMPONENT`…; default: the tool's own).
    #[arg(long)]
    pub operation: Option<String>,
    /// The file the call touches.
    #[arg(long)]
    pub file_path: Option<String>,
    /// The call's arguments as the client sends them, a JSON object (Claude Code's
    /// tool_input): `{"file_path": "src/main.rs"}`.
    #[arg(long, value_name = "JSON")]
    pub tool_input: Option<String>,
    /// Exit 10 for ASK and 11 for DENY.
    #[arg(long)]
    pub exit_code: bool,
}

#[derive(Debug, Subcommand)]
pub enum DecisionsCommand {
    /// Prints the decisions that match, newest first, at most --limit.
    List(DecisionsArgs),
    /// Prints decisions as they are made.
    Tail(DecisionsArgs),
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum OutcomeArg {
    Allow,
    Ask,
    Deny,
}

#[derive(Debug, Args)]
pub struct DecisionsArgs {
    /// The team (default: the token's own; an operator names one). A member sees
    /// only its own calls.
    #[arg(long)]
    pub team: Option<String>,
    #[arg(long)]
    pub user: Option<String>,
    #[arg(long)]
    pub agent: Option<String>,
    #[arg(long, value_enum)]
    pub outcome: Option<OutcomeArg>,
    /// A reason such as COMMAND_BLOCKED or NOT_ALLOWLISTED.
    #[arg(long)]
    pub reason: Option<String>,
    /// MCP calls whose `server:tool` starts with this (`github:` for a server).
    #[arg(long)]
    pub tool: Option<String>,
    /// Shell commands (or deleted paths) that start with this.
    #[arg(long)]
    pub command: Option<String>,
    /// Only decisions since: an RFC 3339 time or a duration ago (`1h`, `7d`).
    #[arg(long)]
    pub since: Option<String>,
    /// Only decisions before: an RFC 3339 time or a duration ago.
    #[arg(long)]
    pub until: Option<String>,
    /// At most this many decisions (list).
    #[arg(long, default_value_t = 100)]
    pub limit: u32,
    /// Continue a listing where the previous one stopped.
    #[arg(long)]
    pub page_token: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Prints the events that match, oldest first, at most --limit.
    List(AuditArgs),
    /// Prints new events as they are recorded (polls once a second).
    Tail(AuditArgs),
}

#[derive(Debug, Args)]
pub struct AuditArgs {
    /// The team (default: the token's own; an operator sees every team, and `*` for
    /// server-wide events such as policy file reloads).
    #[arg(long)]
    pub team: Option<String>,
    #[arg(long)]
    pub actor: Option<String>,
    /// admin_settings_updated, user_settings_updated, decision_denied,
    /// decision_made, allow_list_updated, token_created, token_revoked,
    /// policy_file_reloaded, policy_file_rejected.
    #[arg(long)]
    pub kind: Option<String>,
    /// Only events since: an RFC 3339 time or a duration ago (`1h`, `30m`).
    #[arg(long)]
    pub since: Option<String>,
    /// At most this many events (list), or per request (tail).
    #[arg(long, default_value_t = 100)]
    pub limit: u32,
}

#[derive(Debug, Subcommand)]
pub enum ApprovalsCommand {
    /// Lists the team's approval requests, newest first.
    List {
        /// The team (default: the token's own).
        #[arg(long, default_value = "")]
        team: String,
        /// Answered and expired requests too.
        #[arg(long)]
        all: bool,
        /// At most this many (at most 1000).
        #[arg(long, default_value_t = 100)]
        limit: u32,
    },
    /// Prints the pending requests, then each request as it is made, answered or
    /// expires, until interrupted.
    Watch {
        #[arg(long, default_value = "")]
        team: String,
    },
    /// Approves a pending request: once (default), for the rest of its session, for
    /// a time, or by adding the entry it needs to the allowlist.
    Approve {
        request_id: String,
        /// Also approve the same call again by the same user for this long (e.g. 1h).
        #[arg(long = "for", value_name = "DURATION", conflicts_with_all = ["session", "add_to_allowlist"])]
        duration: Option<String>,
        /// Also approve the same call again in the same session.
        #[arg(long, conflicts_with = "add_to_allowlist")]
        session: bool,
        /// Add the entry the call needs to the allowlist (the team's when its admin
        /// controls decide, else the user's own).
        #[arg(long)]
        add_to_allowlist: bool,
        /// A note kept with the answer and shown to the agent.
        #[arg(long, default_value = "")]
        note: String,
    },
    /// Denies a pending request; the reason reaches the agent.
    Deny {
        request_id: String,
        #[arg(long)]
        reason: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum GroupCommand {
    /// Lists the team's (or the organisation's) group policies.
    List {
        #[command(flatten)]
        scope: GroupScope,
    },
    /// Shows one group's policy.
    Show {
        #[command(flatten)]
        scope: GroupScope,
        group: String,
    },
    /// Writes one group's policy from a YAML or JSON file (replacing any it had).
    Set {
        #[command(flatten)]
        scope: GroupScope,
        group: String,
        /// The group policy: its keys are those of docs/groups.md.
        #[arg(long, value_name = "FILE")]
        file: std::path::PathBuf,
    },
    /// Deletes one group's policy.
    Delete {
        #[command(flatten)]
        scope: GroupScope,
        group: String,
    },
}

/// Where a group policy is kept: one team's policy, or the organisation's (in
/// force in every team).
#[derive(Debug, Clone, clap::Args)]
#[group(required = true, multiple = false)]
pub struct GroupScope {
    /// The team whose policy keeps the group policies.
    #[arg(long)]
    pub team: Option<String>,
    /// The organisation's group policies, in force in every team (operators only).
    #[arg(long)]
    pub org: bool,
}

impl GroupScope {
    /// The team id the policies are kept under (the organisation's is reserved).
    pub fn team_id(&self) -> &str {
        match &self.team {
            Some(team) if !self.org => team,
            _ => crate::auth::ORG_TEAM,
        }
    }

    /// How messages name it: `team acme` or `the organisation`.
    pub fn label(&self) -> String {
        match &self.team {
            Some(team) if !self.org => format!("team {team}"),
            _ => "the organisation".into(),
        }
    }

    /// The flags that name it again, for a hint.
    pub fn flags(&self) -> String {
        match &self.team {
            Some(team) if !self.org => format!("--team {team}"),
            _ => "--org".into(),
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Issues a token and prints it once: it is not stored and cannot be shown again.
    Create {
        #[arg(long)]
        team: String,
        /// The user (or agent, for a service token) the token speaks for.
        #[arg(long)]
        user: String,
        /// member: acts as the user; admin: manages the team; service: evaluates
        /// for any user of the team (an MCP proxy, a CI gate).
        #[arg(long, value_parser = ["member", "admin", "service"], default_value = "member")]
        role: String,
        /// How long it is valid, e.g. 90d, 12h (at most 366 days).
        #[arg(long, default_value = "90d")]
        expires: String,
        /// Write the token into this file (mode 0600, a new file) instead of printing
        /// it: ready for `--token-file`.
        #[arg(long, value_name = "FILE")]
        secret_file: Option<std::path::PathBuf>,
        /// A group its holder is in (repeat for several): the team's group policies
        /// of these apply to the holder's own calls.
        #[arg(long = "group", value_name = "NAME")]
        groups: Vec<String>,
    },
    /// Lists the team's tokens (ids, users, roles, groups, expiry; never the secrets).
    List {
        /// The team (default: the token's own; an operator sees every team).
        #[arg(long)]
        team: Option<String>,
        /// Revoked and expired tokens too.
        #[arg(long)]
        all: bool,
    },
    /// Revokes a token by id: it is refused from the next call on.
    Revoke { token_id: String },
}

#[derive(Debug, Subcommand)]
pub enum PinsCommand {
    /// Lists the team's pins; a changed definition with its flags and diff.
    List {
        #[arg(long, env = "TOOLGATE_TEAM")]
        team: String,
        /// One MCP server's (its id in policy entries, as `proxy --server-id`).
        #[arg(long, value_name = "ID")]
        server_id: Option<String>,
        /// Only tools whose definition changed since they were pinned.
        #[arg(long)]
        changed: bool,
    },
    /// Shows a tool's changed definition (with its diff) and accepts it: gateways
    /// show the tool again. Without a change, marks the pinned definition reviewed
    /// (a flagged tool is then shown where the team hides flagged tools).
    Accept {
        #[arg(long, env = "TOOLGATE_TEAM")]
        team: String,
        /// The MCP server's id in policy entries (as `proxy --server-id`).
        #[arg(long, value_name = "ID")]
        server_id: String,
        tool: String,
        /// Accept only the definition with this hash (as `pins list --output json`
        /// shows it); default: the one printed.
        #[arg(long)]
        sha256: Option<String>,
    },
    /// Pins the tools of a file ahead of any gateway (policy as code): JSON or YAML,
    /// `{server: ID, tools: [...]}` with the tools as the server's tools/list gives them.
    Apply {
        #[arg(long, env = "TOOLGATE_TEAM")]
        team: String,
        file: PathBuf,
    },
    /// Prints the team's pin settings; with a flag, changes it.
    Settings {
        #[arg(long, env = "TOOLGATE_TEAM")]
        team: String,
        /// Whether a member's (or a service's) gateway may pin a tool it sees first.
        #[arg(long)]
        members_pin_first: Option<bool>,
        /// Whether tools the description checks flag are hidden until an admin accepts them.
        #[arg(long)]
        hide_flagged: Option<bool>,
    },
}

#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Prints the user's settings (a team's defaults when the user has none).
    Get {
        /// The team (default: the token's own).
        #[arg(long, default_value = "")]
        team: String,
        /// The user (default: the token's own).
        #[arg(long, default_value = "")]
        user: String,
    },
    /// Changes only the settings named; everything else stays as it is.
    Set(UserSetArgs),
}

#[derive(Debug, Args)]
pub struct UserSetArgs {
    /// The team (default: the token's own).
    #[arg(long, default_value = "")]
    pub team: String,
    /// The user (default: the token's own).
    #[arg(long, default_value = "")]
    pub user: String,
    /// Tools run without approval where the policy allows them.
    #[arg(long, value_parser = ["on", "off"])]
    pub auto_run: Option<String>,
    /// With auto-run on: every tool runs without approval (the team's admins may
    /// still require approval).
    #[arg(long, value_parser = ["on", "off"])]
    pub run_everything: Option<String>,
    /// Browser tools need approval.
    #[arg(long, value_parser = ["on", "off"])]
    pub browser_protection: Option<String>,
    /// MCP tools never run without approval.
    #[arg(long, value_parser = ["on", "off"])]
    pub mcp_protection: Option<String>,
}
