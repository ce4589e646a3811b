//! Before the server binds: the checks `check-config` and `serve` make, the data
//! directory created and locked, the bootstrap token.

use super::{BOOTSTRAP_TOKEN_FILE, ServerError};
use crate::auth::generate_token;
use crate::config::Config;
use std::io::Write as _;
use std::path::Path;
use tracing::warn;

/// What `check-config` warns about without refusing: the policy file's teams that
/// allow a code runner (each located by file and line).
pub fn preflight_warnings(config: &Config) -> Vec<String> {
    let Some(path) = &config.policy_file else {
        return Vec::new();
    };
    let Ok(text) = toolgate_files::policy_file::read_file(path) else {
        return Vec::new();
    };
    toolgate_files::policy_file::managed_policy_warnings(&path.display().to_string(), &text)
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// Every check a start makes on the configuration's files before it binds, without
/// binding or writing anything: TLS files, the policy file, the JWKS file, the
/// bootstrap token's mode. Every problem at once, each naming its key or file.
pub fn preflight(config: &Config) -> Vec<String> {
    let mut problems = Vec::new();
    if (config.tls.cert.is_some() || config.tls.key.is_some())
        && let Err(e) = crate::tls::check(&config.tls)
    {
        problems.push(e.to_string());
    }
    if let Some(path) = &config.policy_file {
        match toolgate_files::policy_file::read_file(path) {
            Err(e) => problems.push(format!(
                "policy_file: cannot read {}: {e}: fix the path (policy_file, --policy-file)",
                path.display()
            )),
            Ok(text) => {
                if let Err(errors) = toolgate_files::policy_file::parse_managed_policy(
                    &path.display().to_string(),
                    &text,
                ) {
                    problems.push(format!(
                        "policy_file: {} is invalid:\n{}",
                        path.display(),
                        toolgate_files::policy_file::format_errors(&errors)
                    ));
                }
            }
        }
    }
    if let Some(file) = config.auth.jwt.as_ref().and_then(|j| j.jwks_file.as_ref()) {
        let parsed = std::fs::read(file)
            .map_err(|e| e.to_string())
            .and_then(|bytes| {
                serde_json::from_slice::<jsonwebtoken::jwk::JwkSet>(&bytes)
                    .map(|_| ())
                    .map_err(|e| format!("not a JWKS document ({e}): give {{\"keys\": [...]}}"))
            });
        if let Err(e) = parsed {
            problems.push(format!("auth.jwt.jwks_file: {}: {e}", file.display()));
        }
    }
    let dir = &config.data_dir;
    match std::fs::metadata(dir) {
        Ok(meta) if !meta.is_dir() => problems.push(format!(
            "data_dir: {} is not a directory: give a directory for the embedded store",
            dir.display()
        )),
        Ok(_) => {
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                let token = dir.join(BOOTSTRAP_TOKEN_FILE);
                if let Ok(meta) = std::fs::symlink_metadata(&token)
                    && meta.permissions().mode() & 0o077 != 0
                {
                    problems.push(format!(
                        "{}: readable by other users (mode {:04o}), so the server refuses to start on it: delete it (a new token is written at start) or chmod 600 it",
                        token.display(),
                        meta.permissions().mode() & 0o777
                    ));
                }
            }
        }
        // created at start
        Err(_) => {}
    }
    problems
}

/// The file in the data directory a running server holds locked.
pub const LOCK_FILE: &str = "server.lock";

/// An exclusive lock on `<data_dir>/server.lock`, released when dropped (or when the
/// process dies, however it dies: the kernel drops the lock with the descriptor).
#[derive(Debug)]
pub struct DataDirLock {
    _file: std::fs::File,
}

impl DataDirLock {
    /// Locks `dir` for this process, or says who holds it.
    pub fn acquire(dir: &Path, listen: &str) -> Result<Self, ServerError> {
        use std::io::Read as _;
        let path = dir.join(LOCK_FILE);
        let failed = |source| ServerError::DataDir {
            path: path.clone(),
            source,
        };
        let mut options = std::fs::OpenOptions::new();
        options.read(true).write(true).create(true).truncate(false);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(&path).map_err(failed)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = (&file).take(1024).read_to_string(&mut holder);
                let holder = holder.trim();
                return Err(ServerError::DataDirInUse {
                    path: dir.to_owned(),
                    holder: if holder.is_empty() {
                        "starting up".into()
                    } else {
                        holder.to_owned()
                    },
                });
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(failed(e)),
        }
        let since = humantime::format_rfc3339_seconds(std::time::SystemTime::now());
        let holder = format!(
            "pid {}, listen {listen}, since {since}\n",
            std::process::id()
        );
        file.set_len(0)
            .and_then(|()| file.write_all(holder.as_bytes()))
            .map_err(failed)?;
        Ok(Self { _file: file })
    }
}

/// Creates the data directory (and its parents) readable by the owner only, whatever
/// the umask; one that already exists keeps its mode, with a warning when others
/// may read it.
pub(super) fn create_data_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        if !dir.exists() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)?;
            // the umask may have taken bits away: set exactly 0700
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        } else if std::fs::metadata(dir)?.permissions().mode() & 0o077 != 0 {
            warn!(path = %dir.display(), "data directory is readable by other users: chmod 700 it");
        }
        Ok(())
    }
    #[cfg(not(unix))]
    std::fs::create_dir_all(dir)
}

/// Reads the bootstrap token, or writes a new one. A token file is adopted only if
/// it is a regular file no one else may read (mode 0600 or stricter): one that is
/// group- or world-readable may already be known to others, so the server refuses
/// to start on it rather than grant operator rights through it. A new token is
/// written to a fresh temporary file created 0600 (`O_EXCL`), synced and renamed
/// into place, so no reader ever sees a partial token or a looser mode.
pub(super) fn bootstrap_token(path: &Path) -> Result<String, ServerError> {
    let err = |source| ServerError::Bootstrap {
        path: path.to_owned(),
        source,
    };
    match std::fs::symlink_metadata(path) {
        Ok(meta) => {
            if !meta.file_type().is_file() {
                return Err(err(std::io::Error::other(
                    "is not a regular file: remove it and a new token is written",
                )));
            }
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                let mode = meta.permissions().mode() & 0o777;
                if mode & 0o077 != 0 {
                    return Err(err(std::io::Error::other(format!(
                        "has mode {mode:04o}, readable by other users, so the token may be known: delete the file (a new token is written at start) or chmod 600 it if you wrote it yourself"
                    ))));
                }
            }
            let token = std::fs::read_to_string(path).map_err(err)?;
            if !token.trim().is_empty() {
                return Ok(token.trim().to_owned());
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(err(e)),
    }
    let token = generate_token();
    toolgate_files::write_atomic(
        path,
        toolgate_files::Mode::Exactly(0o600),
        format!("{token}\n").as_bytes(),
    )
    .map_err(err)?;
    Ok(token)
}
