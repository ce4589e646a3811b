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

use super::args::{Connection, Output, Resolved};
use super::profile::{self, Profile, ProfileError};
use std::path::{Path, PathBuf};

/// What the installed hook command says, flag by flag (nothing from the environment).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Flags {
    pub server: Option<String>,
    pub token: Option<String>,
    pub token_file: Option<PathBuf>,
    pub ca: Option<PathBuf>,
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
    pub team: Option<String>,
    pub user: Option<String>,
    /// The client profile to read instead of the user's default one.
    pub profile: Option<PathBuf>,
    /// `--ask` as written (`ask`, `deny`, `defer`).
    pub ask: Option<String>,
    pub fail_open: bool,
    pub timeout_ms: Option<u64>,
    pub wait_ms: Option<u64>,
    pub log: Option<PathBuf>,
    pub headless: Option<bool>,
}

/// The most words a hook command is read as (`hook check` reads the installed one).
const MAX_COMMAND_WORDS: usize = 256;

/// The most bytes of a hook command `hook check` reads.
pub const MAX_COMMAND_BYTES: usize = 16 * 1024;

impl Flags {
    /// The flags of a hook command line as a client's settings hold it (`hook check`
    /// reads the installed one): `--flag value` and `--flag=value`, words quoted as a
    /// POSIX shell quotes them. Unknown words are skipped; too long a command is an error.
    pub fn of_command(command: &str) -> Result<Self, String> {
        if command.len() > MAX_COMMAND_BYTES {
            return Err(format!(
                "the hook command is longer than {MAX_COMMAND_BYTES} bytes: install the hook again"
            ));
        }
        let words = shell_words(command).ok_or_else(|| {
            "the hook command has an unclosed quote: install the hook again".to_owned()
        })?;
        let mut flags = Flags::default();
        let mut words = words.into_iter().take(MAX_COMMAND_WORDS).peekable();
        while let Some(word) = words.next() {
            let (name, inline) = match word.split_once('=') {
                Some((n, v)) if n.starts_with("--") => (n.to_owned(), Some(v.to_owned())),
                _ => (word.clone(), None),
            };
            match name.as_str() {
                "--fail-open" => flags.fail_open = true,
                "--headless" => {
                    // `--headless` alone, or with a value (`--headless false`)
                    let value = match inline {
                        Some(v) => Some(v),
                        None => words
                            .next_if(|w| w == "true" || w == "false")
                            .map(|w| w.to_owned()),
                    };
                    flags.headless = Some(value.as_deref() != Some("false"));
                }
                "--server" | "--token" | "--token-file" | "--ca" | "--cert" | "--key"
                | "--team" | "--user" | "--profile" | "--ask" | "--timeout-ms" | "--wait-ms"
                | "--log" => {
                    let Some(value) = inline.or_else(|| words.next()) else {
                        break;
                    };
                    flags.set(&name, value);
                }
                _ => {}
            }
        }
        Ok(flags)
    }

    fn set(&mut self, name: &str, value: String) {
        let path = || Some(PathBuf::from(&value));
        match name {
            "--server" => self.server = Some(value),
            "--token" => self.token = Some(value),
            "--token-file" => self.token_file = path(),
            "--ca" => self.ca = path(),
            "--cert" => self.cert = path(),
            "--key" => self.key = path(),
            "--team" => self.team = Some(value).filter(|v| !v.is_empty()),
            "--user" => self.user = Some(value).filter(|v| !v.is_empty()),
            "--profile" => self.profile = path(),
            "--ask" => self.ask = Some(value),
            "--timeout-ms" => self.timeout_ms = value.parse().ok(),
            "--wait-ms" => self.wait_ms = value.parse().ok(),
            _ => self.log = path(),
        }
    }

    /// The connection flags alone.
    fn connection(&self) -> Connection {
        Connection {
            server: self.server.clone(),
            token: self.token.clone(),
            token_file: self.token_file.clone(),
            ca: self.ca.clone(),
            cert: self.cert.clone(),
            key: self.key.clone(),
            output: Output::Human,
        }
    }
}

/// A command line split as `sh` splits it, for the quoting `hook install` writes
/// (`'…'`, `"…"`, backslashes); None when a quote is left open.
fn shell_words(command: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = command.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => word.push(c),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => match chars.next()? {
                            c @ ('"' | '\\' | '$' | '`') => word.push(c),
                            c => {
                                word.push('\\');
                                word.push(c);
                            }
                        },
                        c => word.push(c),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(c) = chars.next() {
                    word.push(c);
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Some(words)
}

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

/// The managed configuration's path where nothing else is built in.
pub const MANAGED_PATH: &str = "/etc/toolgate/client.toml";
/// A managed configuration is a handful of lines: anything larger is not one.
const MAX_MANAGED_BYTES: u64 = 64 * 1024;

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

fn load_managed_owned_by(path: &Path, owner: u32) -> Result<Option<Managed>, String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn a_command_line_reads_as_its_flags() {
        let f = Flags::of_command(
            "'/opt/my tools/toolgate' hook claude-code --server https://tg:7070 --token-file='/home/a b/t' \
             --team acme --user \"al ice\" --ask deny --fail-open --wait-ms 5000 --headless --ca /c.pem",
        )
        .unwrap();
        assert_eq!(f.server.as_deref(), Some("https://tg:7070"));
        assert_eq!(f.token_file, Some(PathBuf::from("/home/a b/t")));
        assert_eq!(f.team.as_deref(), Some("acme"));
        assert_eq!(f.user.as_deref(), Some("al ice"));
        assert_eq!(f.ask.as_deref(), Some("deny"));
        assert!(f.fail_open);
        assert_eq!(f.wait_ms, Some(5000));
        assert_eq!(f.headless, Some(true));
        assert_eq!(f.ca, Some(PathBuf::from("/c.pem")));
        assert!(Flags::of_command("toolgate hook codex --server 'open").is_err());
        assert!(Flags::of_command(&"x".repeat(MAX_COMMAND_BYTES + 1)).is_err());
        assert_eq!(
            Flags::of_command("toolgate hook codex --server").unwrap(),
            Flags::default()
        );
    }

    /// Hostile environments: each variable a repository could set changes nothing, and
    /// each one that disagrees is named.
    #[test]
    fn the_environment_changes_nothing_and_disagreements_are_named() {
        let flags = Flags {
            server: Some("https://real:7070".into()),
            token_file: Some("/home/a/.tg-token".into()),
            team: Some("acme".into()),
            ..Flags::default()
        };
        let profile = Profile {
            user: Some("alice".into()),
            ..Profile::default()
        };
        let quiet = reconcile(&Managed::default(), &flags, profile.clone(), None, &[]);
        assert_eq!(quiet.conn.server, "https://real:7070");
        assert_eq!((quiet.team.as_str(), quiet.user.as_str()), ("acme", ""));
        // (the variables set, the ones named as ignored)
        type Case = (
            &'static [(&'static str, &'static str)],
            &'static [&'static str],
        );
        let table: &[Case] = &[
            (
                &[("TOOLGATE_SERVER", "http://evil:1")],
                &["TOOLGATE_SERVER"],
            ),
            (&[("TOOLGATE_SERVER", "https://real:7070")], &[]),
            (&[("TOOLGATE_TOKEN", "stolen")], &["TOOLGATE_TOKEN"]),
            (
                &[("TOOLGATE_TOKEN_FILE", "/repo/t")],
                &["TOOLGATE_TOKEN_FILE"],
            ),
            (&[("TOOLGATE_HOOK_ASK", "defer")], &["TOOLGATE_HOOK_ASK"]),
            (
                &[("TOOLGATE_HOOK_WAIT_MS", "999999")],
                &["TOOLGATE_HOOK_WAIT_MS"],
            ),
            (&[("TOOLGATE_HOOK_WAIT_MS", "0")], &[]),
            (
                &[("TOOLGATE_HOOK_LOG", "/home/a/.bashrc")],
                &["TOOLGATE_HOOK_LOG"],
            ),
            (&[("TOOLGATE_CA", "/repo/ca.pem")], &["TOOLGATE_CA"]),
            (
                &[("TOOLGATE_TEAM", "other"), ("TOOLGATE_USER", "root")],
                &["TOOLGATE_TEAM", "TOOLGATE_USER"],
            ),
            (
                &[("TOOLGATE_PROFILE", "/repo/p.toml")],
                &["TOOLGATE_PROFILE"],
            ),
            (
                &[("TOOLGATE_HOOK_HEADLESS", "false")],
                &["TOOLGATE_HOOK_HEADLESS"],
            ),
            (&[("TOOLGATE_SERVER", "")], &[]),
            (&[("TOOLGATE_LISTEN", "x"), ("PATH", "/bin")], &[]),
        ];
        for (vars, named) in table {
            let r = reconcile(
                &Managed::default(),
                &flags,
                profile.clone(),
                None,
                &env(vars),
            );
            assert_eq!(r.ignored, *named, "{vars:?}");
            assert_eq!(r.conn.server, quiet.conn.server, "{vars:?}");
            assert_eq!(r.conn.token, quiet.conn.token, "{vars:?}");
            assert_eq!(r.conn.token_file, quiet.conn.token_file, "{vars:?}");
            assert_eq!(r.conn.tls.ca, quiet.conn.tls.ca, "{vars:?}");
            assert_eq!((&r.team, &r.user), (&quiet.team, &quiet.user), "{vars:?}");
        }
        let line = notice(&["TOOLGATE_SERVER"]).unwrap();
        assert!(line.contains("TOOLGATE_SERVER") && line.contains("hook install"));
        assert_eq!(notice(&[]), None);
    }

    #[cfg(unix)]
    #[test]
    fn only_the_users_own_private_profile_is_read() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("client.toml");
        assert_eq!(load_profile(&path).unwrap(), Profile::default());
        std::fs::write(&path, "server = 'http://evil:1'\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = load_profile(&path).unwrap_err().to_string();
        assert!(err.contains("chmod 600"), "{err}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(
            load_profile(&path).unwrap().server.as_deref(),
            Some("http://evil:1")
        );
        let home = profile_path(None).expect("the user database names a home");
        assert!(home.ends_with(".config/toolgate/client.toml"), "{home:?}");
        assert_eq!(profile_path(Some(&path)), Some(path));
    }

    /// The managed configuration's keys win over the flags and the profile, and each
    /// setting says where it came from.
    #[test]
    fn managed_keys_win_and_sources_are_named() {
        let flags = Flags {
            server: Some("https://flag:7070".into()),
            token: Some("flag-token".into()),
            team: Some("flag-team".into()),
            ask: Some("defer".into()),
            fail_open: true,
            ..Flags::default()
        };
        let profile = Profile {
            user: Some("alice".into()),
            ca: Some("/profile/ca.pem".into()),
            ..Profile::default()
        };
        let managed = Managed {
            server: Some("https://managed:7070".into()),
            token_file: Some("/etc/toolgate/token".into()),
            team: Some("acme".into()),
            ask: Some("deny".into()),
            fail_open: Some(false),
            ca: None,
        };
        let env = env(&[("TOOLGATE_SERVER", "https://flag:7070")]);
        let r = reconcile(&managed, &flags, profile.clone(), None, &env);
        assert_eq!(r.conn.server, "https://managed:7070");
        assert_eq!(r.conn.token, None);
        assert_eq!(
            r.conn.token_file,
            Some(PathBuf::from("/etc/toolgate/token"))
        );
        assert_eq!(r.team, "acme");
        assert_eq!((r.ask.as_deref(), r.fail_open), (Some("deny"), false));
        // the variable names what the flags said, which the hook no longer uses
        assert_eq!(r.ignored, ["TOOLGATE_SERVER"]);
        let sources: Vec<(&str, &str)> = r.sources.iter().map(|(k, s)| (*k, s.name())).collect();
        assert_eq!(
            sources,
            [
                ("server", "managed"),
                ("token", "managed"),
                ("ca", "profile"),
                ("team", "managed"),
                ("user", "profile"),
                ("ask", "managed"),
                ("fail-open", "managed"),
            ]
        );
        // nothing managed: flags, then the profile, then defaults
        let r = reconcile(&Managed::default(), &Flags::default(), profile, None, &[]);
        assert_eq!(r.sources[0], ("server", Source::Default));
        assert_eq!(r.sources[4], ("user", Source::Profile));
        assert!(!r.fail_open);
    }

    /// Only a root-owned file nobody else may change is read; every other file, and
    /// every file that does not read, is refused with what to do.
    #[cfg(unix)]
    #[test]
    fn a_managed_configuration_must_be_roots_and_well_formed() {
        use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("client.toml");
        // the file's owner stands in for root (the test's override)
        assert_eq!(load_managed_owned_by(&path, 0), Ok(None));
        std::fs::write(&path, "server = 'https://tg:7070'\nfail_open = false\n").unwrap();
        let me = std::fs::metadata(&path).unwrap().uid();
        let not_me = me.wrapping_add(1);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let read = load_managed_owned_by(&path, me).unwrap().unwrap();
        assert_eq!(read.server.as_deref(), Some("https://tg:7070"));
        assert_eq!(read.fail_open, Some(false));
        let err = load_managed_owned_by(&path, not_me).unwrap_err();
        assert!(err.contains("chown root"), "{err}");
        for mode in [0o664, 0o646, 0o666, 0o777] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            let err = load_managed_owned_by(&path, me).unwrap_err();
            assert!(err.contains("chmod go-w"), "{mode:o}: {err}");
        }
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        // hostile or broken contents
        let table: &[(&str, &str)] = &[
            ("server = 1", "does not read"),
            ("env = { TOOLGATE_SERVER = 'x' }", "the keys are"),
            ("ask = 'allow'", "not one of ask, deny, defer"),
            ("server = 'unclosed", "does not read"),
            ("fail_open = 'yes'", "does not read"),
        ];
        for (text, says) in table {
            std::fs::write(&path, text).unwrap();
            let err = load_managed_owned_by(&path, me).unwrap_err();
            assert!(err.contains(says), "{text}: {err}");
        }
        std::fs::write(
            &path,
            format!("# {}", "x".repeat(MAX_MANAGED_BYTES as usize)),
        )
        .unwrap();
        assert!(
            load_managed_owned_by(&path, me)
                .unwrap_err()
                .contains("larger than")
        );
        let sub = dir.path().join("dir");
        std::fs::create_dir(&sub).unwrap();
        assert!(load_managed_owned_by(&sub, me).is_err());
    }
}
