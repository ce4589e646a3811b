//! Where the server is and who we are: the connection flags every command takes,
//! and the connection once the client profile has filled in what they left out.

use clap::{Args, ValueEnum};
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    Human,
    Json,
}

/// Where the server is and who we are.
#[derive(Debug, Args)]
pub struct Connection {
    /// Server address [default: the client profile's (`toolgate login`), else
    /// http://127.0.0.1:7070].
    #[arg(long, env = "TOOLGATE_SERVER", global = true)]
    pub server: Option<String>,
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

/// The server a client talks to when nothing names one.
pub const DEFAULT_SERVER: &str = "http://127.0.0.1:7070";

/// The connection once the client profile has filled in what flags and variables
/// left out.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub server: String,
    pub token: Option<String>,
    pub token_file: Option<PathBuf>,
    pub tls: crate::grpc::client::TlsOptions,
    /// The profile's team and user, for commands whose own are left empty.
    pub team: Option<String>,
    pub user: Option<String>,
    /// The profile's sign-in, when its token is the one sent: refreshed before use
    /// (`login_refresh::refresh_if_needed`).
    pub sso: Option<super::profile::SsoSession>,
    /// Where the profile is, for writing a refreshed sign-in back.
    pub profile_path: Option<PathBuf>,
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

    /// Flags and variables first, then the client profile.
    pub fn resolve(&self) -> Result<Resolved, super::profile::ProfileError> {
        let profile = super::profile::load()?;
        let mut resolved = self.resolve_with(profile);
        resolved.profile_path = super::profile::path().ok();
        Ok(resolved)
    }

    /// Flags and variables first, then `profile`. The profile's token, team and user
    /// go only to the profile's own server: a `--server` elsewhere does not get them.
    pub fn resolve_with(&self, profile: super::profile::Profile) -> Resolved {
        let same_server = match (&self.server, &profile.server) {
            (None, _) => true,
            (Some(given), Some(p)) => given == p,
            (Some(_), None) => false,
        };
        let (token, token_file, team, user) = if self.token.is_some() || self.token_file.is_some() {
            let (team, user) = if same_server {
                (profile.team, profile.user)
            } else {
                (None, None)
            };
            (self.token.clone(), self.token_file.clone(), team, user)
        } else if same_server {
            (
                // a token of its own wins over a sign-in's
                profile
                    .token
                    .or_else(|| profile.sso.as_ref().map(|s| s.token.clone())),
                profile.token_file,
                profile.team,
                profile.user,
            )
        } else {
            (None, None, None, None)
        };
        let sso = if self.token.is_none()
            && self.token_file.is_none()
            && same_server
            && token.as_ref() == profile.sso.as_ref().map(|s| &s.token)
        {
            profile.sso
        } else {
            None
        };
        let mut tls = self.tls();
        if tls.ca.is_none() && same_server {
            tls.ca = profile.ca;
        }
        Resolved {
            server: self
                .server
                .clone()
                .or(profile.server)
                .unwrap_or_else(|| DEFAULT_SERVER.to_owned()),
            token,
            token_file,
            tls,
            team,
            user,
            sso,
            profile_path: None,
        }
    }
}
