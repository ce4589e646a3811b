//! The flags of a hook command, read from the command line a client's settings hold
//! (`hook check` reads the installed one) as a POSIX shell splits it.

use crate::cli::connection::{Connection, Output};
use std::path::PathBuf;

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
    /// The command line's connection flags (none from the environment) with the team,
    /// user and client profile a command was given (an empty id: not given).
    pub fn of_connection(
        conn: &Connection,
        team: &str,
        user: &str,
        profile: Option<PathBuf>,
    ) -> Self {
        Self {
            server: conn.server.clone(),
            token: conn.token.clone(),
            token_file: conn.token_file.clone(),
            ca: conn.ca.clone(),
            cert: conn.cert.clone(),
            key: conn.key.clone(),
            team: Some(team.to_owned()).filter(|t| !t.is_empty()),
            user: Some(user.to_owned()).filter(|u| !u.is_empty()),
            profile,
            ..Self::default()
        }
    }

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
    pub(super) fn connection(&self) -> Connection {
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
