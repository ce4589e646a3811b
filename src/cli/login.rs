//! `toolgate login`: checks a server address and token once, then keeps them (and the
//! team and user) in the client profile every later command and hook reads.

use super::connection::Connection;
use super::profile::{self, Profile};
use clap::Args;

#[derive(Debug, Args)]
pub struct LoginArgs {
    /// The team to act for (default: the token's own).
    #[arg(long, env = "TOOLGATE_TEAM")]
    team: Option<String>,
    /// The user to act as (default: the token's own).
    #[arg(long, env = "TOOLGATE_USER")]
    user: Option<String>,
    /// Save without asking the server first.
    #[arg(long)]
    no_check: bool,
    /// Sign in with the organisation's identity provider instead of a token: the
    /// server says where (a code to enter in any browser).
    #[arg(long, conflicts_with_all = ["token", "token_file"])]
    sso: bool,
    /// With --sso: sign in in this machine's browser (a page opens) instead of
    /// entering a code.
    #[arg(long, requires = "sso")]
    browser: bool,
}

/// Runs `toolgate login`; the error says what to give.
pub fn login(args: LoginArgs, conn: &Connection) -> anyhow::Result<()> {
    if args.sso {
        let profile = super::login_sso::login_sso(
            super::login_sso::SsoArgs {
                browser: args.browser,
                team: args.team,
                user: args.user,
            },
            conn,
        )?;
        return check_and_save(
            conn,
            &profile,
            args.no_check,
            "signed in: the server answers team",
        );
    }
    let server = conn.server.clone().ok_or_else(|| {
        anyhow::anyhow!("--server is required (or TOOLGATE_SERVER): the server's address, e.g. https://toolgate.example.com:7070")
    })?;
    let token = match (&conn.token, &conn.token_file) {
        (Some(t), _) if !t.trim().is_empty() => t.trim().to_owned(),
        (_, Some(file)) => read_token_file(file)?,
        _ => anyhow::bail!(
            "no token: give --token-file FILE holding the token your admin gave you (or --token, or TOOLGATE_TOKEN_FILE)"
        ),
    };
    let profile = Profile {
        server: Some(server),
        token: Some(token),
        token_file: None,
        team: args.team.filter(|t| !t.is_empty()),
        user: args.user.filter(|u| !u.is_empty()),
        ca: conn.ca.clone(),
        sso: None,
    };
    check_and_save(conn, &profile, args.no_check, "the server answers: team")
}

/// Asks the server who `profile` signs in as (unless `no_check`), prints its answer
/// after `answered`, then saves the profile: nothing is saved that the server refused.
fn check_and_save(
    conn: &Connection,
    profile: &Profile,
    no_check: bool,
    answered: &str,
) -> anyhow::Result<()> {
    let path = profile::path()?;
    if !no_check {
        let fresh = Connection {
            server: None,
            token: None,
            token_file: None,
            ca: None,
            cert: conn.cert.clone(),
            key: conn.key.clone(),
            output: conn.output,
        }
        .resolve_with(profile.clone());
        let (team, user) = super::agent::check::whoami(
            fresh,
            profile.team.as_deref().unwrap_or_default(),
            profile.user.as_deref().unwrap_or_default(),
        )
        .map_err(|e| anyhow::anyhow!("{e}; nothing saved (--no-check saves anyway)"))?;
        println!("{answered} {team}, user {user}");
    }
    profile::save(&path, profile)?;
    println!("saved in {} (mode 0600)", path.display());
    Ok(())
}

/// The one token in `file`.
fn read_token_file(file: &std::path::Path) -> anyhow::Result<String> {
    let text = std::fs::read_to_string(file).map_err(|e| {
        anyhow::anyhow!(
            "--token-file {}: {e}: give the path of the file holding your token",
            file.display()
        )
    })?;
    let token = text.trim().to_owned();
    anyhow::ensure!(
        !token.is_empty() && !token.contains(char::is_whitespace),
        "--token-file {}: it holds no single token: put only the token in it",
        file.display()
    );
    Ok(token)
}
