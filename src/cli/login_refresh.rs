//! The silent refresh of a sign-in (`toolgate login --sso`): before a command or the
//! hook sends the profile's token, a token that expires within [`REFRESH_MARGIN`] is
//! exchanged for a new one with the refresh token, and the profile written back. A
//! refusal by the identity provider fails closed: no token is sent, and the error
//! says to sign in again.

use super::args::Resolved;
use super::profile::{self, SsoSession};
use crate::grpc::client::oidc::{Http, OidcError};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

/// A token this close to its expiry is refreshed first (seconds): it must outlive
/// the call, and the server allows only a little clock skew.
pub const REFRESH_MARGIN: u64 = 60;

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Refreshes `resolved`'s sign-in when its token nears its expiry, and puts the token
/// to send in `resolved.token`. Without a sign-in, nothing to do.
pub async fn refresh_if_needed(resolved: &mut Resolved) -> Result<(), String> {
    let Some(session) = resolved.sso.clone() else {
        return Ok(());
    };
    if session.expires_at > now() + REFRESH_MARGIN {
        return Ok(());
    }
    let Some(path) = resolved.profile_path.clone() else {
        // not saved yet (`login --sso` checking what it got): what is left of it serves
        if session.expires_at > now() {
            return Ok(());
        }
        return Err(
            "the sign-in's token has expired and the client profile is not known: run `toolgate login --sso`"
                .into(),
        );
    };
    let fresh = refresh_at(&path, &session).await?;
    resolved.token = Some(fresh.token.clone());
    resolved.sso = Some(fresh);
    Ok(())
}

/// The profile's sign-in at `path`, refreshed, under the profile's lock: a refresh
/// token is good for one use at most providers, and a second use revokes the whole
/// sign-in, so hooks running side by side take turns and the later ones find the
/// token the first one got.
async fn refresh_at(path: &Path, seen: &SsoSession) -> Result<SsoSession, String> {
    let _lock = lock(path)?;
    let mut current = profile::load_from(path).map_err(|e| e.to_string())?;
    let Some(session) = current.sso.clone() else {
        return Err(format!(
            "signed out: the client profile {} holds no sign-in any more: run `toolgate login --sso`",
            path.display()
        ));
    };
    if session.token != seen.token && session.expires_at > now() + REFRESH_MARGIN {
        return Ok(session);
    }
    let Some(refresh_token) = session.refresh_token.clone() else {
        return Err(
            "the sign-in has expired and the identity provider gave no refresh token (the server's auth.jwt.sign_in.scopes should hold offline_access): run `toolgate login --sso`"
                .into(),
        );
    };
    let http = Http::new(&session.provider.issuer).map_err(|e| e.to_string())?;
    match session.provider.refresh(&http, &refresh_token).await {
        Ok(tokens) => {
            let fresh = SsoSession {
                token: tokens.bearer,
                expires_at: tokens.expires_at,
                refresh_token: tokens.refresh_token,
                provider: session.provider.clone(),
            };
            current.sso = Some(fresh.clone());
            profile::save(path, &current).map_err(|e| e.to_string())?;
            Ok(fresh)
        }
        // the provider ended the sign-in (revoked, expired, the user removed): it is
        // over even if the token has a few seconds left
        Err(refused @ OidcError::Refused { .. }) => {
            Err(format!("refreshing the sign-in: {refused}"))
        }
        // the provider is away: a token still valid is used for what it has left
        Err(_) if session.expires_at > now() => Ok(session),
        Err(e) => Err(format!(
            "refreshing the sign-in: {e}; the token has expired: try again once the identity provider answers, or run `toolgate login --sso`"
        )),
    }
}

/// The profile's lock file, held exclusively until dropped.
fn lock(path: &Path) -> Result<std::fs::File, String> {
    let at = path.with_file_name(format!(
        "{}.lock",
        path.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    ));
    let mut options = std::fs::OpenOptions::new();
    options.create(true).truncate(false).write(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let file = options
        .open(&at)
        .map_err(|e| format!("locking the client profile ({}): {e}", at.display()))?;
    // held for one request to the provider at most, which has its own timeout
    file.lock()
        .map_err(|e| format!("locking the client profile ({}): {e}", at.display()))?;
    Ok(file)
}
