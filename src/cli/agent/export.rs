//! `toolgate export <client>`: the caller's effective policy in the client's own
//! permission format, with what the format cannot say as warnings.

use super::{ClientName, with_hint};
use crate::cli::connection::Connection;
use crate::export::{self, Format};
use crate::grpc::client::{Client, ClientConfig, ClientError};
use clap::{Args, ValueEnum};
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormArg {
    /// Codex `.rules` (default for codex).
    Rules,
    /// Codex `requirements.toml` `[rules]`.
    Requirements,
    /// Cursor CLI permissions (default for cursor).
    Cli,
    /// Cursor `permissions.json` allowlists.
    Allowlists,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    #[arg(value_enum)]
    client: ClientName,
    #[arg(long, env = "TOOLGATE_TEAM", default_value = "")]
    team: String,
    #[arg(long, env = "TOOLGATE_USER", default_value = "")]
    user: String,
    /// Which of the client's files (codex: rules | requirements; cursor: cli | allowlists).
    #[arg(long, value_enum)]
    form: Option<FormArg>,
}

/// Prints the export on stdout and what it could not express on stderr.
pub async fn run_export(args: ExportArgs, conn: &Connection) -> anyhow::Result<i32> {
    let format = match (args.client, args.form) {
        (ClientName::ClaudeCode, None) => Format::ClaudeCode,
        (ClientName::Gemini, None) => Format::Gemini,
        (ClientName::Codex, None | Some(FormArg::Rules)) => Format::CodexRules,
        (ClientName::Codex, Some(FormArg::Requirements)) => Format::CodexRequirements,
        (ClientName::Cursor, None | Some(FormArg::Cli)) => Format::CursorCli,
        (ClientName::Cursor, Some(FormArg::Allowlists)) => Format::CursorAllowlists,
        (client, Some(form)) => anyhow::bail!(
            "--form {form:?} is not a format of {client:?}: codex takes rules or requirements, cursor cli or allowlists"
        ),
    };
    let mut conn = conn.resolve()?;
    crate::cli::login_refresh::refresh_if_needed(&mut conn)
        .await
        .map_err(|e| anyhow::anyhow!(e))?;
    let address = conn.server.clone();
    let hinted = |e: ClientError| anyhow::anyhow!(with_hint(&e, &address));
    let client = Client::connect(ClientConfig {
        team: or_profile(&args.team, &conn.team),
        user: or_profile(&args.user, &conn.user),
        tls: conn.tls,
        server: conn.server,
        token: conn.token,
        token_file: conn.token_file,
        deadline: Duration::from_secs(10),
        client_kind: String::new(),
        bearer: None,
    })
    .await
    .map_err(hinted)?;
    let policy = client.effective_policy().await.map_err(hinted)?;
    let out = export::export(format, &policy.admin, &policy.user, &policy.file_allowlists)
        .map_err(|e| anyhow::anyhow!("the effective policy does not compile: {e}"))?;
    print!("{}", out.text);
    for w in &out.warnings {
        eprintln!("warning: {w}");
    }
    eprintln!(
        "exported policy revision {} ({} warnings: what the format cannot say is left to the client, which asks)",
        policy.revision,
        out.warnings.len()
    );
    Ok(0)
}

/// The command's own team or user, else the profile's.
fn or_profile(given: &str, profile: &Option<String>) -> String {
    if given.is_empty() {
        profile.clone().unwrap_or_default()
    } else {
        given.to_owned()
    }
}
