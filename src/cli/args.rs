//! The client commands' arguments, as clap parses them.

use clap::{Args, Subcommand, ValueEnum};
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    Human,
    Json,
}

/// Where the server is and who we are.
#[derive(Debug, Args)]
pub struct Connection {
    /// Server address.
    #[arg(
        long,
        env = "TOOLGATE_SERVER",
        default_value = "http://127.0.0.1:7070",
        global = true
    )]
    pub server: String,
    /// Bearer token.
    #[arg(long, env = "TOOLGATE_TOKEN", global = true, hide_env_values = true)]
    pub token: Option<String>,
    /// File holding the bearer token (e.g. toolgate-data/bootstrap-token).
    #[arg(long, env = "TOOLGATE_TOKEN_FILE", global = true)]
    pub token_file: Option<PathBuf>,
    /// PEM CA certificates to verify the server's TLS certificate with.
    #[arg(long, env = "TOOLGATE_CA", global = true)]
    pub ca: Option<PathBuf>,
    /// PEM client certificate, for a server that asks for one (mTLS); needs --key.
    #[arg(long, env = "TOOLGATE_CERT", global = true)]
    pub cert: Option<PathBuf>,
    /// PEM private key of --cert.
    #[arg(long, env = "TOOLGATE_KEY", global = true)]
    pub key: Option<PathBuf>,
    /// human (default) or json.
    #[arg(long, short, value_enum, default_value_t = Output::Human, global = true)]
    pub output: Output,
}

impl Connection {
    /// The TLS flags.
    pub fn tls(&self) -> crate::grpc::client::TlsOptions {
        crate::grpc::client::TlsOptions {
            ca: self.ca.clone(),
            cert: self.cert.clone(),
            key: self.key.clone(),
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum ClientCommand {
    /// Team admin settings as code.
    #[command(subcommand)]
    Admin(AdminCommand),
    /// A user's MCP allowlist.
    #[command(subcommand)]
    Allowlist(AllowlistCommand),
    /// One decision, with the checks that made it.
    Evaluate(EvaluateArgs),
    /// The audit trail.
    #[command(subcommand)]
    Audit(AuditCommand),
    /// Turns a team's kill switch on or off (every call DENIED while on).
    KillSwitch {
        #[arg(value_parser = ["on", "off"])]
        state: String,
        #[arg(long)]
        team: String,
    },
    /// Tokens for developers and agents: issued, listed and revoked without
    /// editing the server's configuration.
    #[command(subcommand)]
    Token(TokenCommand),
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
pub enum AdminCommand {
    /// Prints the team's policy as YAML (or JSON).
    Get {
        #[arg(long)]
        team: String,
    },
    /// Shows what applying the file would change; exit 3 when it would change something.
    Diff {
        /// The team policy YAML (deploy/examples/team.yaml shows every key).
        #[arg(long, short)]
        file: PathBuf,
    },
    /// Shows the diff and applies it, only if the team is still at the expected
    /// revision: `--expected-revision`, else the file's `revision:`, else the one the
    /// diff was computed against. A stale one exits 4 and changes nothing.
    Apply {
        /// The team policy YAML (deploy/examples/team.yaml shows every key).
        #[arg(long, short)]
        file: PathBuf,
        /// Show the diff, change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Apply only if the team is still at this revision.
        #[arg(long)]
        expected_revision: Option<u64>,
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
    /// Adds `server:tool` by the seed's rules (no duplicate, nothing `server:*` covers).
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
    /// The MCP tool's action (seed 000's `tool.action`), e.g. `navigate`.
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
    /// Exit 10 for ASK and 11 for DENY.
    #[arg(long)]
    pub exit_code: bool,
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
    /// token_created, token_revoked, policy_file_reloaded, policy_file_rejected.
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
    },
    /// Lists the team's tokens (ids, users, roles, expiry; never the secrets).
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
