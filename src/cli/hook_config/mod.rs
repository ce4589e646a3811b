//! Where `toolgate hook` takes its settings from: the hook command's own flags and the
//! client profile, places only the user (or, for a managed install, the admin) writes;
//! never the environment, which a repository's client settings can set (Claude Code
//! merges a project's `.claude/settings.json` `env` over the user's). A variable that
//! disagrees with what the hook uses is ignored and named once.
//!
//! A managed configuration (`/etc/toolgate/client.toml`, root's) is the admin's layer:
//! each key it sets (server, CA, token file, team, how to answer an ASK, fail-open)
//! wins over the hook's flags and the profile, so neither the user nor a repository
//! can point a managed install elsewhere.

mod flags;
mod managed;
#[cfg(test)]
mod tests;

use super::connection::Resolved;
use super::profile::{self, Profile, ProfileError};
use std::path::{Path, PathBuf};

pub use flags::{Flags, MAX_COMMAND_BYTES};
pub use managed::{
    MANAGED_PATH, Managed, load_managed, managed_path, managed_text, parse_managed, pin,
};

/// The hook's settings once reconciled: the connection, the team and user, the
/// profile read, and the variables that were ignored.
#[derive(Debug, Clone)]
pub struct Reconciled {
    pub conn: Resolved,
    /// Empty: the token's own.
    pub team: String,
    pub user: String,
    /// `--ask` as the hook uses it (the managed file's when it sets one).
    pub ask: Option<String>,
    pub fail_open: bool,
    /// The environment variables set to something else than the hook uses.
    pub ignored: Vec<&'static str>,
    /// Where each setting came from, for `hook check`.
    pub sources: Vec<(&'static str, Source)>,
}

/// Where one of the hook's settings came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum Source {
    /// The managed configuration (root's), which wins.
    Managed,
    /// The installed hook command's flags.
    Flag,
    /// The user's client profile.
    Profile,
    /// Nothing set it.
    Default,
}

impl Source {
    pub fn name(self) -> &'static str {
        self.into()
    }
}

/// The variables a hook once read (or a client profile's path), now ignored: each is
/// named when set to something else than the hook uses.
pub const HOOK_VARS: &[&str] = &[
    "TOOLGATE_SERVER",
    "TOOLGATE_TOKEN",
    "TOOLGATE_TOKEN_FILE",
    "TOOLGATE_CA",
    "TOOLGATE_CERT",
    "TOOLGATE_KEY",
    "TOOLGATE_TEAM",
    "TOOLGATE_USER",
    "TOOLGATE_PROFILE",
    "TOOLGATE_HOOK_ASK",
    "TOOLGATE_HOOK_TIMEOUT_MS",
    "TOOLGATE_HOOK_WAIT_MS",
    "TOOLGATE_HOOK_LOG",
    "TOOLGATE_HOOK_HEADLESS",
];

/// The hook's settings from the managed configuration, its flags and `profile` (read
/// from `profile_path`), in that order; `env` is only compared, never used.
pub fn reconcile(
    managed: &Managed,
    flags: &Flags,
    profile: Profile,
    profile_path: Option<&Path>,
    env: &[(String, String)],
) -> Reconciled {
    let source = |pinned: bool, flag: bool, profiled: bool| {
        if pinned {
            Source::Managed
        } else if flag {
            Source::Flag
        } else if profiled {
            Source::Profile
        } else {
            Source::Default
        }
    };
    let token_pinned = managed.token_file.is_some();
    let sources = vec![
        (
            "server",
            source(
                managed.server.is_some(),
                flags.server.is_some(),
                profile.server.is_some(),
            ),
        ),
        (
            "token",
            source(
                token_pinned,
                flags.token.is_some() || flags.token_file.is_some(),
                profile.token.is_some() || profile.token_file.is_some(),
            ),
        ),
        (
            "ca",
            source(
                managed.ca.is_some(),
                flags.ca.is_some(),
                profile.ca.is_some(),
            ),
        ),
        (
            "team",
            source(
                managed.team.is_some(),
                flags.team.is_some(),
                profile.team.is_some(),
            ),
        ),
        (
            "user",
            source(false, flags.user.is_some(), profile.user.is_some()),
        ),
        (
            "ask",
            source(managed.ask.is_some(), flags.ask.is_some(), false),
        ),
        (
            "fail-open",
            source(managed.fail_open.is_some(), flags.fail_open, false),
        ),
    ];
    let flags = &pin(flags, managed);
    let mut conn = flags.connection().resolve_with(profile);
    conn.profile_path = profile_path.map(Path::to_path_buf);
    let team = flags.team.clone().or(conn.team.clone()).unwrap_or_default();
    let user = flags.user.clone().or(conn.user.clone()).unwrap_or_default();
    let path_text = |p: &Option<PathBuf>| p.as_ref().map(|p| p.display().to_string());
    let used: [(&str, Option<String>); 14] = [
        ("TOOLGATE_SERVER", Some(conn.server.clone())),
        ("TOOLGATE_TOKEN", conn.token.clone()),
        ("TOOLGATE_TOKEN_FILE", path_text(&conn.token_file)),
        ("TOOLGATE_CA", path_text(&conn.tls.ca)),
        ("TOOLGATE_CERT", path_text(&conn.tls.cert)),
        ("TOOLGATE_KEY", path_text(&conn.tls.key)),
        ("TOOLGATE_TEAM", Some(team.clone())),
        ("TOOLGATE_USER", Some(user.clone())),
        (
            "TOOLGATE_PROFILE",
            profile_path.map(|p| p.display().to_string()),
        ),
        ("TOOLGATE_HOOK_ASK", flags.ask.clone()),
        (
            "TOOLGATE_HOOK_TIMEOUT_MS",
            Some(flags.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS).to_string()),
        ),
        (
            "TOOLGATE_HOOK_WAIT_MS",
            Some(flags.wait_ms.unwrap_or(0).to_string()),
        ),
        ("TOOLGATE_HOOK_LOG", path_text(&flags.log)),
        (
            "TOOLGATE_HOOK_HEADLESS",
            flags.headless.map(|h| h.to_string()),
        ),
    ];
    let mut ignored = Vec::new();
    for (name, value) in env {
        let Some(known) = HOOK_VARS.iter().find(|k| **k == name.as_str()) else {
            continue;
        };
        let uses = used
            .iter()
            .find(|(n, _)| n == known)
            .and_then(|(_, v)| v.as_deref());
        let agrees = value.trim().is_empty() || uses == Some(value.as_str());
        if !agrees && !ignored.contains(known) {
            ignored.push(*known);
        }
    }
    ignored.sort_unstable();
    Reconciled {
        conn,
        team,
        user,
        ask: flags.ask.clone(),
        fail_open: flags.fail_open,
        ignored,
        sources,
    }
}

/// The hook's deadline for connecting and deciding when `--timeout-ms` is not given.
pub const DEFAULT_TIMEOUT_MS: u64 = 2000;

/// The one line the hook (and `hook check`) says about the variables it ignored.
pub fn notice(ignored: &[&str]) -> Option<String> {
    (!ignored.is_empty()).then(|| {
        format!(
            "toolgate: ignored {} from the environment: the hook takes its server, credentials, team, user, CA and how to answer only from its own flags and the client profile; run `toolgate hook install` with flags to change them",
            ignored.join(", ")
        )
    })
}

/// The client profile the hook reads: `--profile`, else the default one under the
/// home directory of the user the hook runs as (from the user database, not `HOME`,
/// which a repository's settings can set).
pub fn profile_path(flag: Option<&Path>) -> Option<PathBuf> {
    if let Some(p) = flag {
        return Some(p.to_path_buf());
    }
    own_home().map(|h| h.join(".config").join("toolgate").join("client.toml"))
}

/// Whether `hook install` must name the profile for the hook to find it: when the one
/// `toolgate login` writes (which follows `TOOLGATE_PROFILE`, `XDG_CONFIG_HOME` and
/// `HOME`) is not the hook's default.
pub fn profile_flag_needed() -> Option<PathBuf> {
    let written = profile::path().ok()?;
    (profile_path(None).as_deref() != Some(written.as_path())).then_some(written)
}

/// The home directory of the user the hook runs as, from the user database.
#[cfg(unix)]
pub fn own_home() -> Option<PathBuf> {
    let uid = nix::unistd::geteuid();
    nix::unistd::User::from_uid(uid)
        .ok()
        .flatten()
        .map(|u| u.dir)
        .filter(|d| d.is_absolute())
}

/// The home directory of the user the hook runs as.
#[cfg(not(unix))]
pub fn own_home() -> Option<PathBuf> {
    std::env::var_os("USERPROFILE").map(PathBuf::from)
}

/// The profile at `path` as the hook trusts it: the user's own file (owned by the user
/// the hook runs as, and readable by nobody else), or none when it does not exist.
pub fn load_profile(path: &Path) -> Result<Profile, ProfileError> {
    let loaded = profile::load_from(path)?;
    if loaded != Profile::default() {
        check_own(path)?;
    }
    Ok(loaded)
}

#[cfg(unix)]
fn check_own(path: &Path) -> Result<(), ProfileError> {
    use std::os::unix::fs::MetadataExt as _;
    let shown = path.display().to_string();
    let meta = std::fs::metadata(path).map_err(|e| ProfileError::Unreadable {
        path: shown.clone(),
        detail: e.to_string(),
    })?;
    let me = nix::unistd::geteuid().as_raw();
    if meta.uid() != me {
        return Err(ProfileError::NotOwn {
            path: shown,
            detail: format!(
                "it belongs to uid {}, the hook runs as uid {me}",
                meta.uid()
            ),
        });
    }
    let mode = meta.mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(ProfileError::NotOwn {
            path: shown.clone(),
            detail: format!(
                "others may read or change it (mode {mode:o}): run `chmod 600 {shown}`"
            ),
        });
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_own(_: &Path) -> Result<(), ProfileError> {
    Ok(())
}

/// The environment variables the hook compares with its settings (never uses).
pub fn toolgate_env() -> Vec<(String, String)> {
    std::env::vars()
        .filter(|(k, _)| k.starts_with("TOOLGATE_"))
        .collect()
}

/// The hook's settings from the managed configuration, `flags` and the client
/// profile; the trouble of either file, if any, beside them (the hook then answers
/// with a failure, and a refused managed configuration never fails open).
pub fn settings_of(flags: &Flags, env: &[(String, String)]) -> (Reconciled, Option<String>) {
    let managed = load_managed(&managed_path());
    let (managed, managed_trouble) = match managed {
        Ok(m) => (m.unwrap_or_default(), None),
        Err(e) => (
            Managed {
                fail_open: Some(false),
                ..Default::default()
            },
            Some(e),
        ),
    };
    let path = profile_path(flags.profile.as_deref());
    let loaded = path
        .as_deref()
        .map(load_profile)
        .transpose()
        .map(Option::unwrap_or_default);
    let (profile, profile_trouble) = match loaded {
        Ok(profile) => (profile, None),
        Err(e) => (Default::default(), Some(e.to_string())),
    };
    (
        reconcile(&managed, flags, profile, path.as_deref(), env),
        managed_trouble.or(profile_trouble),
    )
}
