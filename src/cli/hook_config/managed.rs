//! The managed client configuration (`/etc/toolgate/client.toml`, root's): where it
//! is, how it is read and refused, its text, and its keys pinned over a hook's flags.

use super::flags::Flags;
use std::path::{Path, PathBuf};

/// The managed configuration's path where nothing else is built in.
pub const MANAGED_PATH: &str = "/etc/toolgate/client.toml";
/// A managed configuration is a handful of lines: anything larger is not one.
pub(super) const MAX_MANAGED_BYTES: u64 = 64 * 1024;

/// The admin's managed client configuration: each key set is pinned.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Managed {
    pub server: Option<String>,
    pub ca: Option<PathBuf>,
    pub token_file: Option<PathBuf>,
    pub team: Option<String>,
    /// `ask`, `deny` or `defer`.
    pub ask: Option<String>,
    pub fail_open: Option<bool>,
}

/// Where the managed configuration is read: [`MANAGED_PATH`], or the path a package
/// built in (`TOOLGATE_MANAGED_CLIENT_CONFIG` at build time). A test build (debug
/// assertions on) also takes `TOOLGATE_TEST_MANAGED_CONFIG` from the environment; a
/// release build never reads the path from anything a repository can set.
pub fn managed_path() -> PathBuf {
    if cfg!(debug_assertions)
        && let Some(p) = std::env::var_os("TOOLGATE_TEST_MANAGED_CONFIG")
    {
        return PathBuf::from(p);
    }
    PathBuf::from(option_env!("TOOLGATE_MANAGED_CLIENT_CONFIG").unwrap_or(MANAGED_PATH))
}

/// The owner a managed configuration must have: root; a test build also accepts the
/// uid in `TOOLGATE_TEST_MANAGED_OWNER` (so tests need not run as root).
fn managed_owner() -> u32 {
    if cfg!(debug_assertions)
        && let Some(uid) = std::env::var("TOOLGATE_TEST_MANAGED_OWNER")
            .ok()
            .and_then(|u| u.parse().ok())
    {
        return uid;
    }
    0
}

/// The managed configuration at `path`, none when there is no file. A file that is
/// not owned by root (`owner`), that others than its owner may change, that is too
/// large or does not read is refused: the hook then fails closed.
pub fn load_managed(path: &Path) -> Result<Option<Managed>, String> {
    load_managed_owned_by(path, managed_owner())
}

pub(super) fn load_managed_owned_by(path: &Path, owner: u32) -> Result<Option<Managed>, String> {
    use std::io::Read as _;
    let shown = path.display();
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("managed client configuration {shown}: {e}")),
    };
    let meta = file
        .metadata()
        .map_err(|e| format!("managed client configuration {shown}: {e}"))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        if meta.uid() != owner {
            return Err(format!(
                "managed client configuration {shown} is refused: it belongs to uid {}, not root: run `chown root {shown}` (only the admin may write it)",
                meta.uid()
            ));
        }
        let mode = meta.mode() & 0o777;
        if mode & 0o022 != 0 {
            return Err(format!(
                "managed client configuration {shown} is refused: others than root may change it (mode {mode:o}): run `chmod go-w {shown}`"
            ));
        }
    }
    #[cfg(not(unix))]
    let _ = owner;
    if !meta.is_file() {
        return Err(format!(
            "managed client configuration {shown} is not a file: remove it or make it one"
        ));
    }
    let mut text = String::new();
    file.take(MAX_MANAGED_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| format!("managed client configuration {shown}: {e}"))?;
    if text.len() as u64 > MAX_MANAGED_BYTES {
        return Err(format!(
            "managed client configuration {shown} is larger than {MAX_MANAGED_BYTES} bytes: keep only its settings"
        ));
    }
    parse_managed(&text)
        .map(Some)
        .map_err(|e| format!("managed client configuration {shown} {e}"))
}

/// A managed configuration's text, checked: its keys and the values `ask` takes.
pub fn parse_managed(text: &str) -> Result<Managed, String> {
    let managed: Managed = toml::from_str(text).map_err(|e| {
        format!(
            "does not read: {}: the keys are server, ca, token_file, team, ask and fail_open",
            e.message().trim()
        )
    })?;
    if let Some(ask) = &managed.ask
        && !matches!(ask.as_str(), "ask" | "deny" | "defer")
    {
        return Err(format!("ask = {ask:?} is not one of ask, deny, defer"));
    }
    Ok(managed)
}

/// The text `hook install --scope managed` writes: the keys set, after a line that
/// says what the file is.
pub fn managed_text(managed: &Managed) -> String {
    let body = toml::to_string(managed).unwrap_or_default();
    format!(
        "# toolgate's managed client configuration: the hooks and helpers on this machine\n# take these settings from here, over their own flags and the users' profiles.\n# Keep it root's and not writable by others (the hook refuses it otherwise).\n{body}"
    )
}

/// `flags` with the managed configuration's keys over them (managed > flags), and the
/// keys the managed file pinned.
pub fn pin(flags: &Flags, managed: &Managed) -> Flags {
    let mut pinned = flags.clone();
    if let Some(server) = &managed.server {
        pinned.server = Some(server.clone());
    }
    if let Some(ca) = &managed.ca {
        pinned.ca = Some(ca.clone());
    }
    if let Some(token_file) = &managed.token_file {
        // a token given on the command line would win over the file: the file is
        // what the admin pinned
        pinned.token = None;
        pinned.token_file = Some(token_file.clone());
    }
    if let Some(team) = &managed.team {
        pinned.team = Some(team.clone());
    }
    if let Some(ask) = &managed.ask {
        pinned.ask = Some(ask.clone());
    }
    if let Some(fail_open) = managed.fail_open {
        pinned.fail_open = fail_open;
    }
    pinned
}
