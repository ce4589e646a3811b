//! Unit tests of the hook's settings: flags read from a command, the environment
//! ignored and named, the managed configuration pinned and refused.

use super::managed::{MAX_MANAGED_BYTES, load_managed_owned_by};
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
