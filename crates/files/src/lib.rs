//! toolgate's files, shared by the server and the client side (the CLI, the hooks,
//! the proxy): the one atomic write, the one bounded read, the one poller of a
//! followed file, and the policy YAML formats ([`policy_file`]). It depends on the
//! policy core only, so a hook or the proxy reads and writes files without linking
//! the server.
//!
//! The atomic write: a temporary file beside the target, written, synced, renamed
//! over it, the directory synced. A crash or a failing writer at any point leaves
//! the old file whole (or no file), never a truncated one. Every write that replaces
//! a file toolgate keeps goes through [`write_atomic`]: the bootstrap token, the
//! clients' settings files `toolgate hook install` merges into, the export's spill
//! files.
//!
//! Beside it, the one bounded read ([`read_regular`]) and the one poller
//! ([`poll::Poller`]) of the files the server follows.

pub mod policy_file;
pub mod poll;
mod read;

pub use read::{ReadError, read_regular};

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The permissions the written file gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The target's, when it exists; else a new file's default (0666 less the umask).
    /// For files a user owns and may have narrowed (a client's settings file).
    KeepTarget,
    /// Exactly these Unix mode bits, from the moment the temporary file exists (so a
    /// secret is never readable by others, not even briefly). Ignored off Unix.
    Exactly(u32),
}

/// Replaces `path` with what `write` writes, atomically: through a temporary file in
/// the same directory (created exclusively, under a random name), synced, renamed
/// over `path`, then the directory synced so the rename itself survives a crash.
/// When `path` is a symbolic link, the file it points to is replaced and the link
/// kept (settings files are often links into a dotfiles repository). On any error,
/// including one `write` returns, the temporary file is removed and `path` is as it
/// was.
pub fn write_atomic_with(
    path: &Path,
    mode: Mode,
    write: impl FnOnce(&mut File) -> io::Result<()>,
) -> io::Result<()> {
    let target = resolve_link(path)?;
    let dir = match target.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = target.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} names no file", path.display()),
        )
    })?;
    let suffix: u64 = rand::random();
    let temp = dir.join(format!(".{}.{suffix:016x}.tmp", name.to_string_lossy()));
    let result = (|| {
        let mut file = create_new(&temp, mode, &target)?;
        write(&mut file)?;
        file.flush()?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&temp, &target)?;
        sync_dir(&dir)
    })();
    if result.is_err() {
        // gone already when the rename succeeded and only the directory sync failed
        let _ = std::fs::remove_file(&temp);
    }
    result
}

/// [`write_atomic_with`] for bytes already in hand.
pub fn write_atomic(path: &Path, mode: Mode, bytes: &[u8]) -> io::Result<()> {
    write_atomic_with(path, mode, |file| file.write_all(bytes))
}

/// The file a path finally names: itself, or what its chain of links points to
/// (relative links read from the link's directory), at most 40 links deep as the
/// kernel allows.
fn resolve_link(path: &Path) -> io::Result<PathBuf> {
    let mut current = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let link = std::fs::read_link(&current)?;
                current = match current.parent() {
                    Some(dir) if link.is_relative() => dir.join(link),
                    _ => link,
                };
            }
            Ok(_) => return Ok(current),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(current),
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other(format!(
        "{}: too many levels of symbolic links",
        path.display()
    )))
}

fn create_new(temp: &Path, mode: Mode, target: &Path) -> io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        let bits = match mode {
            Mode::Exactly(bits) => Some(bits),
            Mode::KeepTarget => std::fs::metadata(target)
                .ok()
                .map(|m| m.permissions().mode() & 0o7777),
        };
        // the narrowest of the wanted bits from the start, then exactly them (the
        // umask may have taken some away)
        options.mode(bits.unwrap_or(0o666) & 0o777);
        let file = options.open(temp)?;
        if let Some(bits) = bits {
            file.set_permissions(std::fs::Permissions::from_mode(bits))?;
        }
        Ok(file)
    }
    #[cfg(not(unix))]
    {
        let _ = (mode, target);
        options.open(temp)
    }
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        // a directory cannot be opened for syncing there; the rename is what it is
        let _ = dir;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leftovers(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp"))
            .collect()
    }

    #[test]
    fn a_failing_writer_leaves_the_old_file_whole_and_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        std::fs::write(&path, "{\"old\": true}").unwrap();
        let err = write_atomic_with(&path, Mode::KeepTarget, |f| {
            f.write_all(b"{\"new\": ")?;
            Err(io::Error::other("the disk filled up"))
        })
        .unwrap_err();
        assert_eq!(err.to_string(), "the disk filled up");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"old\": true}");
        assert!(leftovers(dir.path()).is_empty());

        write_atomic(&path, Mode::KeepTarget, b"{\"new\": true}").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"new\": true}");
        assert!(leftovers(dir.path()).is_empty());
    }

    #[cfg(unix)]
    #[test]
    fn modes_are_kept_or_set_from_the_start() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
        let kept = dir.path().join("kept");
        std::fs::write(&kept, "a").unwrap();
        std::fs::set_permissions(&kept, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_atomic(&kept, Mode::KeepTarget, b"b").unwrap();
        assert_eq!(mode(&kept), 0o640);

        let secret = dir.path().join("secret");
        std::fs::write(&secret, "a").unwrap();
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o644)).unwrap();
        let mut seen = 0;
        write_atomic_with(&secret, Mode::Exactly(0o600), |f| {
            seen = f.metadata()?.permissions().mode() & 0o7777;
            f.write_all(b"token")
        })
        .unwrap();
        assert_eq!(seen, 0o600, "the secret was never readable by others");
        assert_eq!(mode(&secret), 0o600);
    }

    #[cfg(unix)]
    #[test]
    fn a_link_is_kept_and_the_file_it_names_replaced() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("dotfiles")).unwrap();
        let real = dir.path().join("dotfiles/settings.json");
        std::fs::write(&real, "old").unwrap();
        let link = dir.path().join("settings.json");
        std::os::unix::fs::symlink("dotfiles/settings.json", &link).unwrap();
        write_atomic(&link, Mode::KeepTarget, b"new").unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "new");
    }

    #[test]
    fn a_new_file_is_created() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new.json");
        write_atomic(&path, Mode::KeepTarget, b"{}").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{}");
    }
}
