//! The client profile: where the server is and who we are, written once by
//! `toolgate login` (or `hook install --token`) under the user's config directory and
//! read by every client command, the hook included, for what neither a flag nor a
//! `TOOLGATE_*` variable gives.
//!
//! It may hold a token, so it is written 0600 and a profile others could read is
//! refused rather than used.

use serde::{Deserialize, Serialize};
use std::io::Read as _;
use std::path::{Path, PathBuf};

/// A profile is a handful of short lines: anything larger is not one.
const MAX_PROFILE_BYTES: u64 = 64 * 1024;

/// The variable that names another profile file (tests, several servers).
pub const PROFILE_VAR: &str = "TOOLGATE_PROFILE";

/// What a profile holds; every field optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_file: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub team: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca: Option<PathBuf>,
    /// A sign-in with the identity provider (`toolgate login --sso`), refreshed as it
    /// nears its expiry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sso: Option<SsoSession>,
}

/// What `toolgate login --sso` keeps: the provider, the token sent to the server,
/// when it expires, and the refresh token that gets the next one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SsoSession {
    pub token: String,
    /// Seconds since the epoch.
    pub expires_at: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    pub provider: crate::grpc::client::oidc::Provider,
}

#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("client profile {path}: {detail}")]
    Unreadable { path: String, detail: String },
    #[error(
        "client profile {path} holds a token and others may read it (mode {mode:o}): run `chmod 600 {path}` or `toolgate login` again"
    )]
    Exposed { path: String, mode: u32 },
    #[error(
        "no place for the client profile: neither {PROFILE_VAR}, XDG_CONFIG_HOME nor HOME is set: set one of them"
    )]
    NoHome,
    #[error("client profile {path} is not the user's own: {detail}")]
    NotOwn { path: String, detail: String },
    #[error("writing the client profile {path}: {detail}")]
    Write { path: String, detail: String },
}

/// The profile's path: `TOOLGATE_PROFILE`, else `$XDG_CONFIG_HOME/toolgate/client.toml`,
/// else `~/.config/toolgate/client.toml`.
pub fn path() -> Result<PathBuf, ProfileError> {
    path_from(|k| std::env::var_os(k))
}

fn path_from(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> Result<PathBuf, ProfileError> {
    let set = |k: &str| var(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(p) = set(PROFILE_VAR) {
        return Ok(p);
    }
    let config = set("XDG_CONFIG_HOME")
        .or_else(|| set("HOME").map(|h| h.join(".config")))
        .ok_or(ProfileError::NoHome)?;
    Ok(config.join("toolgate").join("client.toml"))
}

/// The directory a token given on the command line is kept in (the profile's).
pub fn directory() -> Result<PathBuf, ProfileError> {
    let p = path()?;
    Ok(p.parent().map(Path::to_path_buf).unwrap_or_default())
}

/// The profile, or an empty one when there is none.
pub fn load() -> Result<Profile, ProfileError> {
    let path = match path() {
        Ok(p) => p,
        // no home at all (a hook run with an empty environment): flags and variables only
        Err(ProfileError::NoHome) => return Ok(Profile::default()),
        Err(e) => return Err(e),
    };
    load_from(&path)
}

/// The profile at `path`, or an empty one when the file does not exist.
pub fn load_from(path: &Path) -> Result<Profile, ProfileError> {
    let shown = path.display().to_string();
    let unreadable = |detail: String| ProfileError::Unreadable {
        path: shown.clone(),
        detail,
    };
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Profile::default()),
        Err(e) => return Err(unreadable(format!("{e}: make it readable or remove it"))),
    };
    let mut text = String::new();
    file.take(MAX_PROFILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| unreadable(format!("{e}: it must be UTF-8 TOML")))?;
    if text.len() as u64 > MAX_PROFILE_BYTES {
        return Err(unreadable(format!(
            "larger than {MAX_PROFILE_BYTES} bytes: it is not a profile; run `toolgate login` again"
        )));
    }
    let profile = parse(&text).map_err(unreadable)?;
    if profile.token.is_some() || profile.sso.is_some() {
        check_private(path)?;
    }
    Ok(profile)
}

/// A profile's text read, or what is wrong with it.
pub fn parse(text: &str) -> Result<Profile, String> {
    toml::from_str(text).map_err(|e: toml::de::Error| {
        format!(
            "{}: keys are server, token, token_file, team, user, ca and sso; run `toolgate login` again",
            e.message()
        )
    })
}

#[cfg(unix)]
fn check_private(path: &Path) -> Result<(), ProfileError> {
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(path)
        .map(|m| m.permissions().mode() & 0o777)
        .unwrap_or(0);
    if mode & 0o077 != 0 {
        return Err(ProfileError::Exposed {
            path: path.display().to_string(),
            mode,
        });
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_private(_: &Path) -> Result<(), ProfileError> {
    Ok(())
}

/// Writes `text` to `path` readable by its owner only, through the one atomic write
/// (a fresh 0600 file renamed into place, so no reader ever sees a half-written file
/// or a wider mode), in a directory made 0700 if it is missing.
pub fn write_private(path: &Path, text: &str) -> Result<(), ProfileError> {
    let failed = |detail: String| ProfileError::Write {
        path: path.display().to_string(),
        detail,
    };
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(dir)
        .map_err(|e| failed(format!("creating {}: {e}", dir.display())))?;
    toolgate_files::write_atomic(path, toolgate_files::Mode::Exactly(0o600), text.as_bytes())
        .map_err(|e| failed(e.to_string()))
}

/// Writes `profile` at `path` (0600).
pub fn save(path: &Path, profile: &Profile) -> Result<(), ProfileError> {
    let text = toml::to_string(profile).map_err(|e| ProfileError::Write {
        path: path.display().to_string(),
        detail: e.to_string(),
    })?;
    write_private(
        path,
        &format!("# toolgate client profile, written by `toolgate login`\n{text}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_path_follows_the_variables() {
        let vars = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| std::ffi::OsString::from(v))
            }
        };
        assert_eq!(
            path_from(vars(&[("HOME", "/h")])).unwrap(),
            PathBuf::from("/h/.config/toolgate/client.toml")
        );
        assert_eq!(
            path_from(vars(&[("HOME", "/h"), ("XDG_CONFIG_HOME", "/x")])).unwrap(),
            PathBuf::from("/x/toolgate/client.toml")
        );
        assert_eq!(
            path_from(vars(&[("HOME", "/h"), (PROFILE_VAR, "/p.toml")])).unwrap(),
            PathBuf::from("/p.toml")
        );
        assert!(matches!(
            path_from(vars(&[("HOME", "")])),
            Err(ProfileError::NoHome)
        ));
    }

    #[test]
    fn saved_private_and_read_back_and_exposed_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/client.toml");
        assert_eq!(load_from(&path).unwrap(), Profile::default());
        let profile = Profile {
            server: Some("http://127.0.0.1:1".into()),
            token: Some("secret".into()),
            team: Some("t".into()),
            ..Profile::default()
        };
        save(&path, &profile).unwrap();
        assert_eq!(load_from(&path).unwrap(), profile);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
            let err = load_from(&path).unwrap_err().to_string();
            assert!(err.contains("chmod 600"), "{err}");
        }
        std::fs::write(&path, "servr = 'x'\n").unwrap();
        let err = load_from(&path).unwrap_err().to_string();
        assert!(
            err.contains("servr") && err.contains("toolgate login"),
            "{err}"
        );
    }
}
