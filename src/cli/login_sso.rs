//! `toolgate login --sso`: asks the server how to sign in (`GetSignIn`), signs in at
//! the organisation's identity provider (the device grant, or the browser with
//! PKCE), and keeps the sign-in in the client profile for every later command and
//! hook, which refresh it silently (`login_refresh`).

use super::connection::Connection;
use super::profile::{Profile, SsoSession};
use crate::grpc::client::oidc::{Bearer, Http, OidcError, Tokens};
use crate::grpc::client::{Client, ClientConfig};
use crate::proto::v1 as pb;
use std::time::Duration;

/// How the developer asked to sign in.
pub struct SsoArgs {
    pub browser: bool,
    pub team: Option<String>,
    pub user: Option<String>,
}

/// Signs in for `toolgate login --sso`: the profile to check and save (`login` does,
/// as it does a token's).
pub fn login_sso(args: SsoArgs, conn: &Connection) -> anyhow::Result<Profile> {
    let server = conn.server.clone().ok_or_else(|| {
        anyhow::anyhow!("--server is required (or TOOLGATE_SERVER): the toolgate server's address, e.g. https://toolgate.example.com:7070; it tells how to sign in")
    })?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let session = runtime.block_on(sign_in(&server, conn, args.browser))?;
    drop(runtime);
    Ok(Profile {
        server: Some(server),
        token: None,
        token_file: None,
        team: args.team.filter(|t| !t.is_empty()),
        user: args.user.filter(|u| !u.is_empty()),
        ca: conn.ca.clone(),
        sso: Some(session),
    })
}

/// Asks the server how to sign in, then signs in at its identity provider.
async fn sign_in(server: &str, conn: &Connection, browser: bool) -> anyhow::Result<SsoSession> {
    let client = Client::connect(ClientConfig {
        server: server.to_owned(),
        tls: conn.tls(),
        deadline: Duration::from_secs(30),
        ..ClientConfig::default()
    })
    .await?;
    let answer = client
        .server_info_service()
        .get_sign_in(pb::GetSignInRequest {})
        .await
        .map_err(super::client::rpc_error)?
        .into_inner();
    let Some(how) = answer.sign_in else {
        anyhow::bail!(
            "the server {server} takes no sign-in with an identity provider (auth.jwt.sign_in is not set there): ask your admin for a token and run `toolgate login --server {server} --token-file FILE`"
        );
    };
    let flows: Vec<_> = how.flows().collect();
    let bearer = match how.bearer() {
        pb::SignInBearer::AccessToken => Bearer::AccessToken,
        _ => Bearer::IdToken,
    };
    let http = Http::new(&how.issuer)?;
    let provider = http
        .discover(&how.issuer, &how.client_id, bearer, how.allow_loopback_http)
        .await?;
    let tokens: Tokens = if browser {
        anyhow::ensure!(
            flows.contains(&pb::SignInFlow::Browser),
            "the server offers no browser sign-in (auth.jwt.sign_in.flows): leave out --browser"
        );
        // RFC 8252: the redirect comes back to a port of this machine only
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        provider
            .browser_sign_in(&http, &how.scopes, listener, |url| {
                eprintln!("open this page to sign in:\n  {url}");
                open_browser(url);
            })
            .await?
    } else {
        anyhow::ensure!(
            flows.contains(&pb::SignInFlow::Device),
            "the server offers no device sign-in (auth.jwt.sign_in.flows): use --browser"
        );
        provider
            .device_sign_in(&http, &how.scopes, |code, uri, complete| {
                match complete {
                    Some(page) => eprintln!(
                        "to sign in, open {page}\n  (or open {uri} and enter the code {code})"
                    ),
                    None => eprintln!("to sign in, open {uri} and enter the code {code}"),
                }
                eprintln!("waiting for the sign-in…");
            })
            .await
            .map_err(|e| match e {
                OidcError::Refused { .. } => anyhow::anyhow!("signing in: {e}"),
                other => other.into(),
            })?
    };
    Ok(SsoSession {
        token: tokens.bearer,
        expires_at: tokens.expires_at,
        refresh_token: tokens.refresh_token,
        provider,
    })
}

/// Opens `url` in the desktop's browser where there is one; the URL is printed anyway.
fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let _ = std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
}
