//! The admin and client commands of the `toolgate` binary: they talk to a server over
//! gRPC and print human tables or, with `--output json`, one JSON document.
//!
//! Exit codes: 0 success; 1 failure (server unreachable, refused, invalid file); 2
//! bad usage; 3 `admin diff` found differences; 4 a stale expected revision (someone
//! else wrote first: nothing was changed); with `evaluate --exit-code`, 10 for ASK
//! and 11 for DENY.

mod admin;
mod admin_pins;
pub mod agent;
mod allowlist;
mod approvals;
mod args;
mod audit;
mod client;
mod connection;
mod decisions;
pub mod enroll;
mod evaluate;
mod group;
mod group_doc;
pub mod hook_config;
pub mod init;
pub mod login;
pub mod login_refresh;
mod login_sso;
pub mod managed;
mod output;
mod pins;
pub mod profile;
mod proxy;
mod sign_ins;
pub mod sync;
pub mod test;
mod token;
mod user;
mod watch;

pub use admin::{Change, diff};
pub use args::{
    AdminCommand, AllowlistCommand, AuditArgs, AuditCommand, ClientCommand, DecisionsArgs,
    DecisionsCommand, EvaluateArgs, GroupCommand,
};
pub use connection::{Connection, Output, Resolved};
pub use output::{Printer, Render, for_terminal};
pub use proxy::{ProxyArgs, run_proxy};

use admin::{admin, kill_switch};
use allowlist::allowlist;
use approvals::approvals;
use audit::audit;
use client::Clients;
use decisions::decisions;
use evaluate::evaluate;
use group::group;
use pins::pins;
use sign_ins::sign_ins;
use token::token;
use user::user;
use watch::watch;

pub const EXIT_USAGE: i32 = 2;
pub const EXIT_DIFFERENT: i32 = 3;
pub const EXIT_CONFLICT: i32 = 4;
pub const EXIT_ASK: i32 = 10;
pub const EXIT_DENY: i32 = 11;

/// A command line that cannot work as given: exits [`EXIT_USAGE`], like clap's own.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

fn usage(message: String) -> anyhow::Error {
    UsageError(message).into()
}

/// Runs a client command; returns the process exit code.
pub async fn run(conn: &Connection, command: ClientCommand) -> anyhow::Result<i32> {
    let c = Clients::connect(conn).await?;
    match command {
        ClientCommand::Admin(cmd) => admin(&c, cmd).await,
        ClientCommand::Allowlist(cmd) => allowlist(&c, cmd).await,
        ClientCommand::Approvals(cmd) => approvals(&c, cmd).await,
        ClientCommand::Evaluate(args) => evaluate(&c, *args).await,
        ClientCommand::Group(cmd) => group(&c, cmd).await,
        ClientCommand::Audit(cmd) => audit(&c, cmd).await,
        ClientCommand::Decisions(cmd) => decisions(&c, cmd).await,
        ClientCommand::KillSwitch { state, team } => kill_switch(&c, &team, state == "on").await,
        ClientCommand::Pins(cmd) => pins(&c, cmd).await,
        ClientCommand::Token(cmd) => token(&c, cmd).await,
        ClientCommand::SignIns(cmd) => sign_ins(&c, cmd).await,
        ClientCommand::User(cmd) => user(&c, cmd).await,
        ClientCommand::Watch { team, user, after } => watch(&c, &team, &user, after).await,
    }
}
