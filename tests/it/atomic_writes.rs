//! Files toolgate replaces are written atomically (one helper,
//! `toolgate_files::write_atomic`): `toolgate hook install` whose write fails
//! part-way leaves the client's settings file as it was, never truncated; a
//! successful one keeps the file's mode and a link to it.

use serde_json::Value;
use std::path::Path;

const OLD: &str = r#"{"model": "opus", "permissions": {"allow": ["Read"]}}"#;

/// `toolgate hook install claude-code` into `dir` through `sh`, with `limit` as the
/// shell's file-size limit (in 512-byte blocks) and SIGXFSZ ignored, so a write past
/// it fails (EFBIG) instead of killing the process.
fn install(dir: &Path, limit: Option<u64>) -> std::process::Output {
    let limit = limit.map_or("unlimited".to_owned(), |l| l.to_string());
    std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            r#"ulimit -f {limit}; trap '' XFSZ; exec "$0" hook install claude-code --scope project --command "toolgate hook claude-code" --path "$1""#
        ))
        .arg(env!("CARGO_BIN_EXE_toolgate"))
        .arg(dir)
        .output()
        .unwrap()
}

fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect()
}

#[test]
fn a_failing_settings_write_leaves_the_old_file_whole() {
    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(&settings, OLD).unwrap();
    // no byte may be written: written in place, the file would be truncated to nothing
    let out = install(dir.path(), Some(0));
    assert!(!out.status.success(), "the write cannot succeed");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("error: writing"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), OLD);
    assert!(leftovers(settings.parent().unwrap()).is_empty());

    let out = install(dir.path(), None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!(v["model"], "opus");
    assert_eq!(
        v["hooks"]["PreToolUse"][0]["hooks"][0]["command"],
        "toolgate hook claude-code"
    );
    assert!(leftovers(settings.parent().unwrap()).is_empty());
}

#[cfg(unix)]
#[test]
fn a_settings_write_keeps_the_mode_and_the_link() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let dotfiles = dir.path().join("dotfiles");
    std::fs::create_dir_all(&dotfiles).unwrap();
    let real = dotfiles.join("claude-settings.json");
    std::fs::write(&real, OLD).unwrap();
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).unwrap();
    let settings = dir.path().join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&real, &settings).unwrap();

    let out = install(dir.path(), None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        std::fs::symlink_metadata(&settings)
            .unwrap()
            .file_type()
            .is_symlink(),
        "the link stays a link"
    );
    assert!(
        std::fs::read_to_string(&real)
            .unwrap()
            .contains("toolgate hook claude-code")
    );
    let mode = std::fs::metadata(&real).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the user's narrowed mode is kept");
}
