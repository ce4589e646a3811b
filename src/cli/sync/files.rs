//! The files `toolgate sync` keeps: which they are, where, what each holds under a
//! policy (a shared file: the toolgate hook put back among others' keys), and how
//! they are read back and written.

use crate::export::{self, Format};
use crate::grpc::client::RemotePolicy;
use crate::hook::Client;
use crate::hook::install::{self, InstallScope};
use clap::ValueEnum;
use sha2::Digest as _;
use std::path::{Path, PathBuf};

/// The files `toolgate sync` keeps, one per client.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    ValueEnum,
    strum::IntoStaticStr,
    strum::VariantArray,
)]
#[strum(serialize_all = "kebab-case")]
pub enum SyncedFile {
    /// Codex's `/etc/codex/requirements.toml`: the forbidden and prompted prefixes, and
    /// the toolgate hook as its only managed hook.
    Codex,
    /// Gemini CLI's admin-tier policy, `/etc/gemini-cli/policies/toolgate.toml`.
    Gemini,
    /// Cursor's enterprise `/etc/cursor/hooks.json`: the toolgate hook, `failClosed`,
    /// beside other hooks (a shared file).
    Cursor,
    /// Gemini CLI's system settings, `/etc/gemini-cli/settings.json`: the toolgate hook
    /// on every tool, merged with the file's other keys.
    GeminiSettings,
}

impl SyncedFile {
    pub(super) const ALL: &'static [SyncedFile] = <Self as strum::VariantArray>::VARIANTS;

    pub(super) fn name(self) -> &'static str {
        self.into()
    }

    /// The client whose hook the file runs.
    pub(super) fn client(self) -> Client {
        match self {
            SyncedFile::Codex => Client::Codex,
            SyncedFile::Gemini | SyncedFile::GeminiSettings => Client::Gemini,
            SyncedFile::Cursor => Client::Cursor,
        }
    }

    /// Whether the file holds keys that are not toolgate's (kept as found: only the
    /// toolgate hook in it is restored).
    pub(super) fn shared(self) -> bool {
        matches!(self, SyncedFile::GeminiSettings | SyncedFile::Cursor)
    }

    /// The file's place, relative to the root of the file system.
    pub(super) fn managed_file(self) -> crate::proto::v1::ManagedFile {
        use crate::proto::v1::ManagedFile;
        match self {
            SyncedFile::Codex => ManagedFile::CodexRequirements,
            SyncedFile::Gemini => ManagedFile::GeminiPolicy,
            SyncedFile::Cursor => ManagedFile::CursorHooks,
            SyncedFile::GeminiSettings => ManagedFile::GeminiSettings,
        }
    }

    pub(super) fn relative(self) -> &'static str {
        match self {
            SyncedFile::Codex => "etc/codex/requirements.toml",
            SyncedFile::Gemini => "etc/gemini-cli/policies/toolgate.toml",
            SyncedFile::Cursor => "etc/cursor/hooks.json",
            SyncedFile::GeminiSettings => "etc/gemini-cli/settings.json",
        }
    }
}

/// The largest managed file read back: far larger than any toolgate writes.
const MAX_FILE_BYTES: usize = 4 * 1024 * 1024;

/// A file kept, and the hook command its client runs.
pub(super) struct Target {
    pub(super) file: SyncedFile,
    pub(super) path: PathBuf,
    pub(super) hook: String,
}

/// The content of `target` under `policy`, and what it cannot say.
pub(super) fn render(
    target: &Target,
    policy: &RemotePolicy,
) -> Result<(String, Vec<String>), String> {
    let (admin, user, files) = (&policy.admin, &policy.user, &policy.file_allowlists);
    let wrong = |e: install::InstallError| e.to_string();
    match target.file {
        SyncedFile::Codex => {
            let rules = export::export(Format::CodexRequirements, admin, user, files)?;
            let text = install::merge(
                Client::Codex,
                InstallScope::Managed,
                &target.path,
                Some(&rules.text),
                &target.hook,
            )
            .map_err(wrong)?;
            Ok((text, rules.warnings))
        }
        SyncedFile::Gemini => {
            let out = export::export(Format::Gemini, admin, user, files)?;
            Ok((out.text, out.warnings))
        }
        // they depend on no policy: kept by `keep_shared` from what is found, other
        // hooks and keys included
        SyncedFile::Cursor | SyncedFile::GeminiSettings => Ok((merged(target, None)?, Vec::new())),
    }
}

/// Whether two texts hold the same JSON value (a file rewritten with other spacing or
/// key order is the same settings).
pub(super) fn same_json(a: &[u8], b: &[u8]) -> bool {
    match (
        serde_json::from_slice::<serde_json::Value>(a),
        serde_json::from_slice::<serde_json::Value>(b),
    ) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// A shared file's text: `found` with the toolgate hook put back (and nothing else
/// changed); an error when `found` is not a JSON object.
pub(super) fn merged(target: &Target, found: Option<&[u8]>) -> Result<String, String> {
    let text = match found.map(std::str::from_utf8) {
        None => None,
        Some(Ok(text)) => Some(text),
        Some(Err(_)) => return Err(format!("{} is not UTF-8", target.path.display())),
    };
    install::merge(
        target.file.client(),
        InstallScope::Managed,
        &target.path,
        text,
        &target.hook,
    )
    .map_err(|e| e.to_string())
}

/// The file's bytes, or none when it is missing, unreadable or not a regular file
/// (each then rewritten).
pub(super) fn read(path: &Path) -> Option<Vec<u8>> {
    toolgate_files::read_regular(path, MAX_FILE_BYTES).ok()
}

/// Written atomically, readable by every user (their clients read it), changed by
/// root alone.
pub(super) fn write(path: &Path, bytes: &[u8]) -> Result<(), String> {
    path.parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| {
            toolgate_files::write_atomic(path, toolgate_files::Mode::Exactly(0o644), bytes)
        })
        .map_err(|e| format!("writing {}: {e}", path.display()))
}

pub(super) fn sha256(bytes: &[u8]) -> String {
    hex::encode(sha2::Sha256::digest(bytes))
}
