//! Loading the layers and reporting every problem.

use super::*;

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[test]
fn defaults_are_valid() {
    let c = Config::load(None, env(&[]), &CliOverrides::default()).unwrap();
    assert_eq!(c, Config::default());
}

#[test]
fn env_overrides_nested_keys_and_cli_overrides_env() {
    let cli = CliOverrides {
        listen: Some("127.0.0.1:9999".into()),
        data_dir: None,
        policy_file: Some("/etc/toolgate/policy.yaml".into()),
        ..Default::default()
    };
    let c = Config::load(
        None,
        env(&[
            ("TOOLGATE_LISTEN", "127.0.0.1:1"),
            ("TOOLGATE_WATCH__HEARTBEAT_SECS", "3"),
            ("TOOLGATE_DATA_DIR", "/tmp/x"),
            ("OTHER", "ignored"),
            ("TOOLGATE_TOKEN", "a client setting, not a server one"),
            ("TOOLGATE_TEST_POSTGRES_URL", "the test suite's"),
        ]),
        &cli,
    )
    .unwrap();
    assert_eq!(c.listen, "127.0.0.1:9999");
    assert_eq!(c.watch.heartbeat_secs, 3);
    assert_eq!(c.data_dir, PathBuf::from("/tmp/x"));
    assert_eq!(
        c.policy_file,
        Some(PathBuf::from("/etc/toolgate/policy.yaml"))
    );
}

#[test]
fn the_console_is_off_until_a_flag_or_key_turns_it_on() {
    assert_eq!(Config::default().console.listen, None);
    let cli = CliOverrides {
        console: Some(ConsoleConfig {
            listen: Some("127.0.0.1:7071".into()),
        }),
        ..Default::default()
    };
    let c = Config::load(
        None,
        env(&[("TOOLGATE_CONSOLE__LISTEN", "127.0.0.1:1")]),
        &cli,
    )
    .unwrap();
    assert_eq!(c.console.listen.as_deref(), Some("127.0.0.1:7071"));
    let from_env = Config::load(
        None,
        env(&[("TOOLGATE_CONSOLE__LISTEN", "127.0.0.1:7072")]),
        &CliOverrides::default(),
    )
    .unwrap();
    assert_eq!(from_env.console.listen.as_deref(), Some("127.0.0.1:7072"));
    for (bad, says) in [
        ("nowhere", "is not an address"),
        ("127.0.0.1:7070", "a port of its own"),
    ] {
        let err = Config::load(
            None,
            env(&[("TOOLGATE_CONSOLE__LISTEN", bad)]),
            &CliOverrides::default(),
        )
        .unwrap_err();
        assert!(err.to_string().contains(says), "{bad}: {err}");
    }
}

#[test]
fn unknown_keys_are_rejected() {
    let err = Config::load(
        None,
        env(&[("TOOLGATE_LISTN", "x")]),
        &CliOverrides::default(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("listn"), "{err}");
}

#[test]
fn every_problem_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.toml");
    std::fs::write(
        &file,
        r#"
listen = "0.0.0.0:7070"
[auth.anonymous]
role = "member"
[[auth.tokens]]
name = "a"
sha256 = "zz"
role = "admin"
"#,
    )
    .unwrap();
    let err = Config::load(Some(&file), env(&[]), &CliOverrides::default()).unwrap_err();
    let text = err.to_string();
    for needle in [
        "auth.tokens[0] (\"a\").sha256",
        "auth.tokens[0] (\"a\").team",
        "auth.anonymous.team",
        "loopback",
    ] {
        assert!(text.contains(needle), "missing {needle} in {text}");
    }
    assert_eq!(err.problems.len(), 4, "{text}");
}

#[test]
fn debug_output_shows_no_password_or_header_value() {
    let mut config = Config::default();
    config.store.url = Some("postgres://app:s3cretpw@db:5432/tg?sslpassword=k3y".into());
    config.telemetry.otlp_endpoint = Some("https://user:otlpsecret@collector:4317".into());
    config
        .telemetry
        .otlp_headers
        .insert("authorization".into(), "Bearer hdrsecret".into());
    let shown = format!("{config:?}");
    for secret in ["s3cretpw", "k3y", "otlpsecret", "hdrsecret"] {
        assert!(!shown.contains(secret), "{secret} shown in {shown}");
    }
    // what is not secret still shows, so the output stays useful
    assert!(shown.contains("postgres://app:***@db:5432/tg"), "{shown}");
    assert!(shown.contains("authorization"), "{shown}");
}

#[test]
fn jwt_default_role_operator_needs_allow_operator() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.toml");
    let jwt = r#"
[auth.jwt]
issuer = "https://idp.example"
audience = "toolgate"
jwks_file = "/etc/toolgate/jwks.json"
default_role = "operator"
"#;
    std::fs::write(&file, jwt).unwrap();
    let err = Config::load(Some(&file), env(&[]), &CliOverrides::default()).unwrap_err();
    assert!(err.to_string().contains("auth.jwt.default_role"), "{err}");
    std::fs::write(&file, format!("{jwt}allow_operator = true\n")).unwrap();
    Config::load(Some(&file), env(&[]), &CliOverrides::default()).unwrap();
}

/// The keys that say who a token is come over https (or from this machine): a
/// JWKS URL in clear text to another host, or with credentials in it, is refused.
#[test]
fn jwks_url_must_be_https_or_loopback() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.toml");
    // (jwks_url, a part of the refusal, or None when accepted)
    let table: &[(&str, Option<&str>)] = &[
        ("https://idp.example/.well-known/jwks.json", None),
        ("http://127.0.0.1:8080/jwks.json", None),
        ("http://localhost/jwks.json", None),
        ("http://idp.example/jwks.json", Some("not loopback")),
        ("ftp://idp.example/jwks.json", Some("scheme \"ftp\"")),
        ("idp.example/jwks.json", Some("is not a URL")),
        (
            "https://u:pw@idp.example/jwks.json",
            Some("user name or password"),
        ),
    ];
    for (url, want) in table {
        std::fs::write(
            &file,
            format!(
                "[auth.jwt]\nissuer = \"https://idp.example\"\naudience = \"toolgate\"\njwks_url = {url:?}\n"
            ),
        )
        .unwrap();
        match (
            Config::load(Some(&file), env(&[]), &CliOverrides::default()),
            want,
        ) {
            (Ok(_), None) => {}
            (Err(e), Some(part)) => {
                let text = e.to_string();
                assert!(
                    text.contains("auth.jwt.jwks_url") && text.contains(part),
                    "{url}: {text}"
                );
                assert!(
                    !text.contains(":pw@"),
                    "{url}: the password is shown: {text}"
                );
            }
            (got, want) => panic!("{url}: wanted {want:?}, got {:?}", got.map(drop)),
        }
    }
}

/// Each mistake names its key, or the variable that set it, and the fix; the client's
/// variables are not the server's business.
#[test]
fn every_error_names_its_key_or_variable() {
    type Case<'a> = (&'a [(&'a str, &'a str)], &'a [&'a str]);
    let table: &[Case] = &[
        (
            &[("TOOLGATE_LISTEN", "7075")],
            &["TOOLGATE_LISTEN (listen)", "HOST:PORT"],
        ),
        (
            &[("TOOLGATE_LISTEN", "localhost")],
            &["TOOLGATE_LISTEN (listen", "HOST:PORT"],
        ),
        (
            &[("TOOLGATE_LOG__LEVEL", "verbose")],
            &["TOOLGATE_LOG__LEVEL (log.level", "info"],
        ),
        (
            &[("TOOLGATE_WATCH__HEARTBEAT_SECS", "soon")],
            &[
                "TOOLGATE_WATCH__HEARTBEAT_SECS (watch.heartbeat_secs)",
                "whole number",
            ],
        ),
        (
            &[("TOOLGATE_WATCH__NOPE", "1")],
            &["TOOLGATE_WATCH__NOPE (watch.nope)", "unknown key"],
        ),
        (
            &[("TOOLGATE_LISTN", "x")],
            &["TOOLGATE_LISTN: not a server setting", "TOOLGATE_LISTEN"],
        ),
        (
            &[("TOOLGATE_LOG__FORMAT", "xml")],
            &["TOOLGATE_LOG__FORMAT (log.format)", "text or json"],
        ),
    ];
    for (vars, needles) in table {
        let err = Config::load(None, env(vars), &CliOverrides::default()).unwrap_err();
        let text = err.to_string();
        assert!(!text.contains("default."), "{text}");
        for needle in *needles {
            assert!(
                text.contains(needle),
                "{vars:?}: missing {needle:?} in {text}"
            );
        }
    }
}

#[test]
fn client_variables_are_not_server_settings() {
    let c = Config::load(
        None,
        env(&[
            ("TOOLGATE_TEAM", "acme"),
            ("TOOLGATE_USER", "alice"),
            ("TOOLGATE_HOOK_ASK", "deny"),
            ("TOOLGATE_HOOK_TIMEOUT_MS", "500"),
            ("TOOLGATE_PROFILE", "/tmp/p.toml"),
            ("TOOLGATE_SERVER", "http://127.0.0.1:1"),
            ("TOOLGATE_TOKEN_FILE", "/tmp/t"),
        ]),
        &CliOverrides::default(),
    )
    .unwrap();
    assert_eq!(c, Config::default());
}

/// Six mistakes in one file: six problems, each with its key and the file.
#[test]
fn a_file_with_six_mistakes_reports_six() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.yaml");
    std::fs::write(
        &file,
        "listen: nowhere\nlog:\n  level: verbose\nwatch:\n  heartbeat_secs: soon\nlimits:\n  max_batch_calls: -1\naudit:\n  decisions: some\nbogus: 1\n",
    )
    .unwrap();
    let err = Config::load(Some(&file), env(&[]), &CliOverrides::default()).unwrap_err();
    let text = err.to_string();
    for needle in [
        "listen",
        "log.level",
        "watch.heartbeat_secs",
        "limits.max_batch_calls",
        "audit.decisions",
        "bogus",
    ] {
        assert!(text.contains(needle), "missing {needle} in {text}");
    }
    assert!(!text.contains("default."), "{text}");
    assert_eq!(err.problems.len(), 6, "{text}");
}

#[test]
fn log_levels() {
    for ok in [
        "info",
        "toolgate=debug,info",
        "warn",
        "toolgate::server=trace",
    ] {
        assert!(validate::is_log_filter(ok), "{ok}");
    }
    for bad in ["verbose", "", "toolgate=loud", "info,chatty"] {
        assert!(!validate::is_log_filter(bad), "{bad}");
    }
}

#[test]
fn http_settings_are_checked_with_their_fix() {
    let err = Config::load(
        None,
        env(&[
            ("TOOLGATE_HTTP__LISTEN", "127.0.0.1:7070"),
            (
                "TOOLGATE_HTTP__CORS_ALLOWED_ORIGINS",
                "[\"*\", \"https://console.example.com/\", \"https://ok.example\"]",
            ),
        ]),
        &CliOverrides::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("http.listen: 127.0.0.1:7070 is the listen address"),
        "{err}"
    );
    assert!(
        err.contains("http.cors_allowed_origins[0]: \"*\" would let every web page"),
        "{err}"
    );
    assert!(err.contains("http.cors_allowed_origins[1]"), "{err}");
    assert!(!err.contains("http.cors_allowed_origins[2]"), "{err}");
    let err = Config::load(
        None,
        env(&[("TOOLGATE_HTTP__LISTEN", "localhost")]),
        &CliOverrides::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("http.listen: \"localhost\" is not an address"),
        "{err}"
    );
}

/// Relative paths the file writes are read against the file's directory; those a flag
/// or a variable gives keep the working directory.
#[test]
fn relative_paths_in_a_file_follow_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("toolgate.yaml");
    std::fs::write(
        &file,
        "data_dir: data\npolicy_file: policy.yaml\nstore: {url: \"sqlite://db/t.db\"}\ntls: {cert: /abs/c.pem, key: k.pem}\n",
    )
    .unwrap();
    let (c, _) = Config::load_checked(Some(&file), env(&[]), &CliOverrides::default()).unwrap();
    let base = std::path::absolute(dir.path()).unwrap();
    assert_eq!(c.data_dir, base.join("data"));
    assert_eq!(c.policy_file, Some(base.join("policy.yaml")));
    assert_eq!(
        c.store.url,
        Some(format!("sqlite://{}", base.join("db/t.db").display()))
    );
    assert_eq!(c.tls.cert, Some(PathBuf::from("/abs/c.pem")));
    assert_eq!(c.tls.key, Some(base.join("k.pem")));

    let cli = CliOverrides {
        data_dir: Some("here".into()),
        ..Default::default()
    };
    let (c, _) = Config::load_checked(
        Some(&file),
        env(&[("TOOLGATE_POLICY_FILE", "from-env.yaml")]),
        &cli,
    )
    .unwrap();
    assert_eq!(c.data_dir, PathBuf::from("here"));
    assert_eq!(c.policy_file, Some(PathBuf::from("from-env.yaml")));
}

/// `auth.jwt.sign_in` and `auth.jwt.team_by_group`: each mistake named with its fix.
#[test]
fn sign_in_and_team_by_group_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.toml");
    let base = |issuer: &str, audience: &str| {
        format!(
            "[auth.jwt]\nissuer = {issuer:?}\naudience = {audience:?}\njwks_file = \"/etc/toolgate/jwks.json\"\n"
        )
    };
    let https = base("https://idp.example", "toolgate-cli");
    // (the file, a part of the refusal, or None when accepted)
    let table: Vec<(String, Option<&str>)> = vec![
        (
            format!("{https}[auth.jwt.sign_in]\nclient_id = \"toolgate-cli\"\n"),
            None,
        ),
        (
            format!("{https}[auth.jwt.sign_in]\nclient_id = \"other\"\n"),
            Some("auth.jwt.audience: \"toolgate-cli\" is not auth.jwt.sign_in.client_id"),
        ),
        (
            format!(
                "{https}[auth.jwt.sign_in]\nclient_id = \"other\"\nbearer = \"access_token\"\n"
            ),
            None,
        ),
        (
            format!(
                "{https}[auth.jwt.sign_in]\nclient_id = \"toolgate-cli\"\nscopes = [\"profile\"]\n"
            ),
            Some("add openid"),
        ),
        (
            format!(
                "{https}[auth.jwt.sign_in]\nclient_id = \"toolgate-cli\"\nscopes = [\"openid\", \"a b\"]\n"
            ),
            Some("auth.jwt.sign_in.scopes"),
        ),
        (
            format!("{https}[auth.jwt.sign_in]\nclient_id = \"toolgate-cli\"\nflows = []\n"),
            Some("device and browser"),
        ),
        (
            format!(
                "{https}[auth.jwt.sign_in]\nclient_id = \"toolgate-cli\"\nallow_loopback_http = true\n"
            ),
            Some("allow_loopback_http: only a plain http issuer"),
        ),
        (
            format!(
                "{}[auth.jwt.sign_in]\nclient_id = \"toolgate-cli\"\n",
                base("http://127.0.0.1:4000", "toolgate-cli")
            ),
            Some("set auth.jwt.sign_in.allow_loopback_http"),
        ),
        (
            format!(
                "{}[auth.jwt.sign_in]\nclient_id = \"toolgate-cli\"\nallow_loopback_http = true\n",
                base("http://127.0.0.1:4000", "toolgate-cli")
            ),
            None,
        ),
        (
            format!(
                "{}[auth.jwt.sign_in]\nclient_id = \"toolgate-cli\"\n",
                base("http://idp.example", "toolgate-cli")
            ),
            Some("is not an https URL"),
        ),
        (
            format!("{https}[auth.jwt.team_by_group.teams]\nplatform-eng = \"platform\"\n"),
            None,
        ),
        (
            format!("{https}[auth.jwt.team_by_group]\nteams = {{}}\n"),
            Some("map at least one group"),
        ),
        (
            format!("{https}[auth.jwt.team_by_group.teams]\nall = \"*\"\n"),
            Some("auth.jwt.team_by_group.teams.all: \"*\" is reserved"),
        ),
        (
            format!("{https}[auth.jwt.team_by_group.teams]\nx = \"\"\n"),
            Some("auth.jwt.team_by_group.teams.x"),
        ),
    ];
    for (text, want) in table {
        std::fs::write(&file, &text).unwrap();
        match (
            Config::load(Some(&file), env(&[]), &CliOverrides::default()),
            want,
        ) {
            (Ok(_), None) => {}
            (Err(e), Some(part)) => {
                let shown = e.to_string();
                assert!(shown.contains(part), "{text}: {shown}");
            }
            (Ok(_), Some(part)) => panic!("{text}: accepted, want {part:?}"),
            (Err(e), None) => panic!("{text}: refused: {e}"),
        }
    }
}

#[test]
fn the_section_s_problems_name_their_keys() {
    let bad = JwtGroupsConfig::of("realm_access.", "", &[("Contractors", "not ok")], false);
    let problems = bad.problems();
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("auth.jwt.groups.claim:")),
        "{problems:?}"
    );
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("auth.jwt.groups.map.Contractors:")),
        "{problems:?}"
    );
    assert!(
        JwtGroupsConfig::of("groups", "", &[], true).problems()[0]
            .starts_with("auth.jwt.groups.mapped_only")
    );
    assert!(JwtGroupsConfig::default().problems().is_empty());
}

#[test]
fn configured_origins_are_checked() {
    for ok in ["https://a.example", "http://localhost:5173"] {
        assert_eq!(sections::check_origin(ok), None, "{ok}");
    }
    for bad in [
        "*",
        "a.example",
        "ftp://a.example",
        "https://a.example/",
        "https://*.example",
        "https://A.example",
        "https://",
    ] {
        let why = sections::check_origin(bad).unwrap_or_else(|| panic!("{bad} accepted"));
        assert!(why.contains("scheme://host"), "{why}");
    }
}
