//! Where `toolgate hook` takes its settings from: the hook command's own flags and the
//! client profile, places only the user (or, for a managed install, the admin) writes;
//! never the environment, which a repository's client settings can set (Claude Code
//! merges a project's `.claude/settings.json` `env` over the user's). A variable that
//! disagrees with what the hook uses is ignored and named once.

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
    /// The environment variables set to something else than the hook uses.
    pub ignored: Vec<&'static str>,
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

/// The hook's settings from its flags and `profile` (read from `profile_path`); `env`
/// is only compared, never used.
pub fn reconcile(
    flags: &Flags,
    profile: Profile,
    profile_path: Option<&Path>,
    env: &[(String, String)],
) -> Reconciled {
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
        ignored,
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
        let quiet = reconcile(&flags, profile.clone(), None, &[]);
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
            let r = reconcile(&flags, profile.clone(), None, &env(vars));
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
}
