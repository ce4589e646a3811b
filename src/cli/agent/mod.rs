//! The commands agent clients run, one file each: `toolgate hook <client>` (`hook.rs`),
//! `hook install` (`install.rs`), `hook check` (`check.rs`), `hook otel-headers`
//! (`otel_headers.rs`) and `toolgate export <client>` (`export.rs`). The logic is the
//! library's (`toolgate::hook`, `toolgate::export`); these are the I/O around it:
//! stdin, files, the server call, the exit code.

pub(super) mod check;
mod export;
mod hook;
pub(super) mod install;
mod otel_headers;

use super::connection::Connection;
use crate::grpc::client::ClientError;
use crate::hook::Client;
use clap::{Subcommand, ValueEnum};

pub use check::CheckArgs;
pub use export::{ExportArgs, FormArg, run_export};
pub use hook::{AskArg, HookArgs};
pub use install::InstallArgs;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ClientName {
    ClaudeCode,
    Codex,
    Cursor,
    Gemini,
}

impl From<ClientName> for Client {
    fn from(c: ClientName) -> Self {
        match c {
            ClientName::ClaudeCode => Client::ClaudeCode,
            ClientName::Codex => Client::Codex,
            ClientName::Cursor => Client::Cursor,
            ClientName::Gemini => Client::Gemini,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum HookCommand {
    /// Claude Code's PreToolUse hook.
    ClaudeCode(HookArgs),
    /// Codex CLI's PreToolUse hook (only deny is enforced there).
    Codex(HookArgs),
    /// Cursor's beforeShellExecution / beforeMCPExecution hook.
    Cursor(HookArgs),
    /// Gemini CLI's BeforeTool hook.
    Gemini(HookArgs),
    /// Writes the client's hook configuration, with the server, token file, team and
    /// user the hook needs, and prints what it wrote.
    Install(InstallArgs),
    /// Runs the installed hook once on a harmless sample call and says whether it
    /// reaches the server, as whom, and what the call gets.
    Check(CheckArgs),
    /// Prints the `Authorization` header for Claude Code's telemetry to toolgate, as
    /// JSON (its `otelHeadersHelper`, which `hook install --telemetry` sets), from the
    /// settings the hook reads: the token never goes into a settings file.
    OtelHeaders(HookArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ScopeArg {
    User,
    Project,
    Managed,
}

impl HookCommand {
    /// Whether this runs a client's hook (not `install` or `check`): its settings are
    /// then read from flags alone.
    pub fn runs_hook(&self) -> bool {
        !matches!(self, HookCommand::Install(_) | HookCommand::Check(_))
    }
}

/// Runs a hook command; returns the exit code. Never panics out, never errors out.
/// `conn` holds the connection flags of the command line alone (no environment).
pub fn run_hook(command: HookCommand, conn: &Connection) -> i32 {
    let (client, args) = match command {
        HookCommand::ClaudeCode(a) => (Client::ClaudeCode, a),
        HookCommand::Codex(a) => (Client::Codex, a),
        HookCommand::Cursor(a) => (Client::Cursor, a),
        HookCommand::Gemini(a) => (Client::Gemini, a),
        HookCommand::Install(a) => return install::install_hook(a, conn),
        HookCommand::Check(a) => return check::check_hook(a),
        HookCommand::OtelHeaders(a) => return otel_headers::otel_headers(&a, conn),
    };
    hook::run(client, args, conn)
}

/// The error, and which flag would fix it: the server's own message names the request
/// field (`team_id`), which the person reading a blocked call cannot set.
pub fn with_hint(e: &ClientError, server: &str) -> String {
    let hint = match e {
        ClientError::Unreachable { .. } | ClientError::Timeout { .. } => format!(
            "is the server running at {server}? give --server to `toolgate hook install`, or run `toolgate login --server URL --token-file FILE`"
        ),
        ClientError::Refused { code, message } => match code {
            tonic::Code::Unauthenticated => "give --token-file with a token the server accepts to `toolgate hook install`, or run `toolgate login`".to_owned(),
            tonic::Code::InvalidArgument if message.contains("team_id") => "the token names no team: give --team to `toolgate hook install` or `toolgate login`".to_owned(),
            tonic::Code::InvalidArgument if message.contains("user_id") => "the token names no user: give --user to `toolgate hook install` or `toolgate login`".to_owned(),
            _ => return e.to_string(),
        },
        _ => return e.to_string(),
    };
    format!("{e} ({hint})")
}

/// What a decision at revision 0 means: nothing was ever written for the team.
pub(in crate::cli) fn no_settings(team: &str) -> String {
    if team.is_empty() {
        "the token's team has no settings: check the team it was issued for".to_owned()
    } else {
        format!("team {team} has no settings: check --team")
    }
}
