//! From install to the first decision, through the real binary on a fresh HOME:
//! `hook install` with flags for each kind of client, `hook check`, `toolgate login`
//! and the client profile, and the install errors that name the flag to give.

use crate::support;

use serde_json::Value;
use std::path::{Path, PathBuf};
use support::*;

/// A fresh home directory and a token file only its owner reads.
struct Home {
    _dir: tempfile::TempDir,
    home: PathBuf,
    token_file: PathBuf,
}

impl Home {
    fn new(token: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        let token_file = home.join("token");
        std::fs::write(&token_file, format!("{token}\n")).unwrap();
        set_mode(&token_file, 0o600);
        Self {
            _dir: dir,
            home,
            token_file,
        }
    }

    /// `toolgate ARGS` as a user of this home, with no `TOOLGATE_*` of the test's.
    async fn toolgate(&self, args: &[&str]) -> (bool, String) {
        self.toolgate_with(args, &[]).await
    }

    /// [`Home::toolgate`] with `vars` set (a test build's managed-configuration path).
    async fn toolgate_with(&self, args: &[&str], vars: &[(&str, &str)]) -> (bool, String) {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolgate"));
        for (key, _) in std::env::vars().filter(|(k, _)| k.starts_with("TOOLGATE_")) {
            cmd.env_remove(key);
        }
        let out = cmd
            .envs(vars.iter().copied())
            .args(args)
            .env("HOME", &self.home)
            .env_remove("XDG_CONFIG_HOME")
            .current_dir(&self.home)
            .kill_on_drop(true)
            .output()
            .await
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text)
    }

    fn profile(&self) -> PathBuf {
        self.home.join(".config/toolgate/client.toml")
    }
}

fn set_mode(path: &Path, mode: u32) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// Codex passes no environment of its own: the hook command carries the flags, and
/// `hook check` runs it, reaching the server as the token's team and the given user.
#[tokio::test(flavor = "multi_thread")]
async fn codex_install_carries_the_flags_and_check_reaches_the_server() {
    let (server, _data) = start().await;
    let home = Home::new("service-token");
    let up = format!("http://{}", server.addr);
    let token = home.token_file.display().to_string();
    let (ok, text) = home
        .toolgate(&[
            "hook",
            "install",
            "codex",
            "--server",
            &up,
            "--token-file",
            &token,
            "--user",
            "carol",
        ])
        .await;
    assert!(ok, "{text}");
    let hooks: Value = serde_json::from_str(
        &std::fs::read_to_string(home.home.join(".codex/hooks.json")).unwrap(),
    )
    .unwrap();
    let command = hooks["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap();
    for part in [
        " hook codex",
        &format!("--server {up}"),
        &format!("--token-file {token}"),
        "--user carol",
    ] {
        assert!(command.contains(part), "{part} in {command}");
    }
    let (ok, text) = home.toolgate(&["hook", "check", "codex"]).await;
    assert!(ok, "{text}");
    assert!(text.contains("team acme, user carol"), "{text}");
}

/// `toolgate login` keeps the server and token in a 0600 profile; every later
/// command and hook reads it, with no flag and no variable.
#[tokio::test(flavor = "multi_thread")]
async fn login_writes_a_private_profile_that_later_commands_read() {
    let (server, _data) = start().await;
    server.yolo("alice").await;
    let home = Home::new("alice-token");
    let up = format!("http://{}", server.addr);
    let token = home.token_file.display().to_string();
    let (ok, text) = home
        .toolgate(&["login", "--server", &up, "--token-file", &token])
        .await;
    assert!(ok, "{text}");
    assert!(text.contains("team acme, user alice"), "{text}");
    #[cfg(unix)]
    assert_eq!(mode(&home.profile()), 0o600);

    // no flags: the hook installed reads the profile, and reaches the server
    let (ok, text) = home.toolgate(&["hook", "install", "gemini"]).await;
    assert!(ok, "{text}");
    let (ok, text) = home.toolgate(&["hook", "check", "gemini"]).await;
    assert!(ok, "{text}");
    assert!(text.contains("team acme, user alice"), "{text}");
    let (ok, text) = home
        .toolgate(&[
            "evaluate", "--team", TEAM, "--user", "alice", "--shell", "ls",
        ])
        .await;
    assert!(ok, "{text}");

    // a profile others may read is refused, and the error says how to fix it
    set_mode(&home.profile(), 0o644);
    let (ok, text) = home
        .toolgate(&[
            "evaluate", "--team", TEAM, "--user", "alice", "--shell", "ls",
        ])
        .await;
    assert!(!ok && text.contains("chmod 600"), "{text}");

    // a wrong token is refused at login, and nothing is saved
    std::fs::remove_file(home.profile()).unwrap();
    std::fs::write(&home.token_file, "not-a-token\n").unwrap();
    let (ok, text) = home
        .toolgate(&["login", "--server", &up, "--token-file", &token])
        .await;
    assert!(!ok && text.contains("nothing saved"), "{text}");
    assert!(!home.profile().exists());
}

/// A token given as `--token` goes to the 0600 profile, never into the client's
/// settings file.
#[tokio::test(flavor = "multi_thread")]
async fn a_literal_token_goes_to_the_profile_not_the_settings() {
    let (server, _data) = start().await;
    let home = Home::new("unused");
    let up = format!("http://{}", server.addr);
    let (ok, text) = home
        .toolgate(&[
            "hook",
            "install",
            "claude-code",
            "--server",
            &up,
            "--token",
            "alice-token",
        ])
        .await;
    assert!(ok, "{text}");
    let settings = std::fs::read_to_string(home.home.join(".claude/settings.json")).unwrap();
    assert!(!settings.contains("alice-token"), "{settings}");
    assert!(settings.contains(&format!("--server {up}")), "{settings}");
    assert!(!settings.contains("TOOLGATE_"), "{settings}");
    let profile = std::fs::read_to_string(home.profile()).unwrap();
    assert!(profile.contains("alice-token"));
    #[cfg(unix)]
    assert_eq!(mode(&home.profile()), 0o600);
    let (ok, text) = home.toolgate(&["hook", "check", "claude-code"]).await;
    assert!(ok, "{text}");
    assert!(text.contains("user alice"), "{text}");
}

/// Install mistakes name the flag to give.
#[tokio::test]
async fn install_errors_name_the_flag() {
    let home = Home::new("t");
    let token = home.token_file.display().to_string();
    let managed = home.home.join("root").display().to_string();
    let table: &[(&[&str], &str)] = &[
        (
            &[
                "hook",
                "install",
                "claude-code",
                "--scope",
                "managed",
                "--path",
                &managed,
            ],
            "--command",
        ),
        (
            &[
                "hook",
                "install",
                "codex",
                "--scope",
                "managed",
                "--path",
                &managed,
                "--command",
                "/usr/local/bin/toolgate",
                "--token",
                "secret",
            ],
            "toolgate login",
        ),
        (
            &[
                "hook",
                "install",
                "cursor",
                "--token-file",
                "/nonexistent/token",
            ],
            "--token-file",
        ),
        (&["hook", "check", "cursor"], "toolgate hook install cursor"),
        (&["login", "--token-file", &token], "--server"),
    ];
    for (args, needle) in table {
        let (ok, text) = home.toolgate(args).await;
        assert!(!ok, "{args:?} succeeded: {text}");
        assert!(text.contains(needle), "{args:?}: {needle:?} not in {text}");
    }
    // a token file others may read is refused
    set_mode(&home.token_file, 0o644);
    let (ok, text) = home
        .toolgate(&["hook", "install", "cursor", "--token-file", &token])
        .await;
    assert!(!ok && text.contains("chmod 600"), "{text}");
    // a managed install names the binary given, not the installer's
    let (ok, text) = home
        .toolgate(&[
            "hook",
            "install",
            "claude-code",
            "--scope",
            "managed",
            "--path",
            &managed,
            "--command",
            "/usr/local/bin/toolgate",
        ])
        .await;
    assert!(ok, "{text}");
    let written =
        std::fs::read_to_string(Path::new(&managed).join("etc/claude-code/managed-settings.json"))
            .unwrap();
    assert!(
        written.contains("\"/usr/local/bin/toolgate hook claude-code\""),
        "{written}"
    );
}

/// A token that names no team: the hook's refusal names the flag to give.
#[tokio::test(flavor = "multi_thread")]
async fn a_token_without_a_team_is_told_which_flag_to_give() {
    let (server, _data) = start().await;
    let home = Home::new("operator-token");
    let up = format!("http://{}", server.addr);
    let token = home.token_file.display().to_string();
    let (ok, text) = home
        .toolgate(&[
            "hook",
            "install",
            "claude-code",
            "--server",
            &up,
            "--token-file",
            &token,
        ])
        .await;
    assert!(ok, "{text}");
    let (ok, text) = home.toolgate(&["hook", "check", "claude-code"]).await;
    assert!(!ok, "{text}");
    assert!(text.contains("give --team"), "{text}");
}

/// A managed install pins where to ask in the managed client configuration (written
/// under `--path`, never this machine's `/etc`), keeps the keys an admin set there by
/// hand, leaves those settings out of the hook command, and the installed hook asks
/// the pinned server as the pinned team.
#[tokio::test(flavor = "multi_thread")]
async fn a_managed_install_writes_the_managed_configuration() {
    let (server, _data) = start().await;
    let home = Home::new("service-token");
    let root = home.home.join("root");
    let config = root.join("etc/toolgate/client.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, "ask = \"deny\"\nserver = \"http://old:1\"\n").unwrap();
    let up = format!("http://{}", server.addr);
    let token = home.token_file.display().to_string();
    let root_arg = root.display().to_string();
    let install = [
        "hook",
        "install",
        "claude-code",
        "--scope",
        "managed",
        "--path",
        &root_arg,
        "--command",
        env!("CARGO_BIN_EXE_toolgate"),
        "--server",
        &up,
        "--token-file",
        &token,
        "--team",
        "acme",
        "--user",
        "carol",
    ];
    let (ok, text) = home.toolgate(&install).await;
    assert!(ok, "{text}");
    let written = std::fs::read_to_string(&config).unwrap();
    for line in [
        format!("server = \"{up}\""),
        format!("token_file = \"{token}\""),
        "team = \"acme\"".to_owned(),
        "ask = \"deny\"".to_owned(),
    ] {
        assert!(written.contains(&line), "{line} in {written}");
    }
    assert!(!written.contains("old:1"), "{written}");
    #[cfg(unix)]
    assert_eq!(mode(&config), 0o644);
    let settings: Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("etc/claude-code/managed-settings.json")).unwrap(),
    )
    .unwrap();
    let command = settings["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap();
    assert!(
        command.ends_with(" hook claude-code --user carol"),
        "{command}"
    );

    // the hook reads the managed configuration (a test build's path and owner)
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        let owner = std::fs::metadata(&config).unwrap().uid().to_string();
        let shown = config.display().to_string();
        let vars = [
            ("TOOLGATE_TEST_MANAGED_CONFIG", shown.as_str()),
            ("TOOLGATE_TEST_MANAGED_OWNER", owner.as_str()),
        ];
        let (ok, text) = home
            .toolgate_with(
                &[
                    "hook",
                    "check",
                    "claude-code",
                    "--scope",
                    "managed",
                    "--path",
                    &root_arg,
                ],
                &vars,
            )
            .await;
        assert!(ok, "{text}");
        assert!(text.contains("team acme, user carol"), "{text}");
    }

    // a managed configuration that does not read is named, not overwritten
    std::fs::write(&config, "server = 1\n").unwrap();
    let (ok, text) = home.toolgate(&install).await;
    assert!(!ok && text.contains("fix or remove it"), "{text}");
    assert_eq!(std::fs::read_to_string(&config).unwrap(), "server = 1\n");
}
