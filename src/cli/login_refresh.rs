//! The silent refresh of a sign-in (`toolgate login --sso`): before a command or the
//! hook sends the profile's token, a token that expires within [`REFRESH_MARGIN`] is
//! exchanged for a new one with the refresh token, and the profile written back. A
//! refusal by the identity provider fails closed: no token is sent, and the error
//! says to sign in again.

use super::connection::Resolved;
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

/// Keeps a long-running process's sign-in fresh (`toolgate proxy`): refreshes it
/// before its token nears the expiry, as every command does (under the profile's
/// lock), and puts each new token in `bearer`, which every call reads. When the
/// refresh is refused and the token has expired, no token is sent any more: the
/// server refuses the calls, and the proxy fails closed with them.
pub async fn keep_fresh(
    path: std::path::PathBuf,
    mut session: SsoSession,
    bearer: crate::grpc::client::SharedBearer,
) {
    loop {
        let wait = next_refresh_in(session.expires_at, now());
        tokio::time::sleep(std::time::Duration::from_secs(wait)).await;
        match refresh_at(&path, &session).await {
            Ok(fresh) => {
                if let Err(e) = bearer.set(&fresh.token) {
                    tracing::error!(error = %e, "the refreshed token cannot be sent: no token is sent");
                    bearer.clear();
                    return;
                }
                tracing::info!(expires_at = fresh.expires_at, "sign-in refreshed");
                session = fresh;
            }
            Err(e) if session.expires_at <= now() => {
                tracing::error!(error = %e, "the sign-in has expired and was not refreshed: no token is sent; run `toolgate login --sso`");
                bearer.clear();
                return;
            }
            // tried again before the token ends
            Err(e) => tracing::warn!(error = %e, "the sign-in was not refreshed: retried"),
        }
    }
}

/// Seconds until a token expiring at `expires_at` is refreshed: [`REFRESH_MARGIN`]
/// before it expires, or, for a token that lives shorter than that, at half of what
/// it has left; never sooner than a second from now.
fn next_refresh_in(expires_at: u64, now: u64) -> u64 {
    let left = expires_at.saturating_sub(now);
    left.saturating_sub(REFRESH_MARGIN).max(left / 2).max(1)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_refreshed_before_its_end_and_never_in_a_loop() {
        // (expires in, refreshed in)
        for (left, want) in [
            (3600, 3600 - REFRESH_MARGIN),
            (REFRESH_MARGIN + 10, REFRESH_MARGIN / 2 + 5),
            (30, 15),
            (1, 1),
            (0, 1),
        ] {
            assert_eq!(next_refresh_in(1_000 + left, 1_000), want, "{left}");
        }
        // expired long ago: still a second apart
        assert_eq!(next_refresh_in(5, 1_000), 1);
    }
}
