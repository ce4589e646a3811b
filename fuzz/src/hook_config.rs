//! The hook's configuration sources: the installed command line, the client profile,
//! the environment and the admin's managed configuration, split by NUL bytes
//! (`COMMAND\0PROFILE\0K=V\nK=V…\0MANAGED`). Never panics; the environment never
//! changes what the hook uses (the server, the token or its file, the CA, the team and
//! user are those of the managed file, the flags and the profile alone), each key the
//! managed file sets wins, the variables named as ignored are ones the input set to
//! something else, and the profile's token never goes to another server than the
//! profile's.

use toolgate::cli::hook_config::{self, Flags, HOOK_VARS, Managed};
use toolgate::cli::profile;

/// One input, as libFuzzer hands it over.
pub fn run(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut parts = text.splitn(4, '\0');
    let (command, profile_text, env_text, managed_text) = (
        parts.next().unwrap_or(""),
        parts.next().unwrap_or(""),
        parts.next().unwrap_or(""),
        parts.next().unwrap_or(""),
    );
    let managed = hook_config::parse_managed(managed_text).unwrap_or_default();
    let Ok(flags) = Flags::of_command(command) else {
        return;
    };
    let profile = profile::parse(profile_text).unwrap_or_default();
    let env: Vec<(String, String)> = env_text
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    let quiet = hook_config::reconcile(&managed, &flags, profile.clone(), None, &[]);
    let told = hook_config::reconcile(&managed, &flags, profile.clone(), None, &env);
    pinned(&managed, &told);
    if managed != Managed::default() {
        // the rest holds of a hook without a managed file
        return;
    }
    assert!(
        quiet.ignored.is_empty(),
        "nothing to ignore without variables"
    );
    assert_eq!(told.conn.server, quiet.conn.server);
    assert_eq!(told.conn.token, quiet.conn.token);
    assert_eq!(told.conn.token_file, quiet.conn.token_file);
    assert_eq!(told.conn.tls.ca, quiet.conn.tls.ca);
    assert_eq!(told.conn.tls.cert, quiet.conn.tls.cert);
    assert_eq!(told.conn.tls.key, quiet.conn.tls.key);
    assert_eq!((&told.team, &told.user), (&quiet.team, &quiet.user));
    for name in &told.ignored {
        assert!(HOOK_VARS.contains(name), "{name} is a hook variable");
        assert!(
            env.iter().any(|(k, v)| k == name && !v.trim().is_empty()),
            "{name} was set"
        );
    }
    let server = flags
        .server
        .clone()
        .or(profile.server.clone())
        .unwrap_or_else(|| told.conn.server.clone());
    assert_eq!(
        told.conn.server, server,
        "the server is the flag's or the profile's"
    );
    if flags.server.is_some()
        && flags.server != profile.server
        && profile.token.is_some()
        && flags.token != profile.token
    {
        assert_ne!(
            told.conn.token, profile.token,
            "the profile's token stays with its server"
        );
    }
    if let Some(line) = hook_config::notice(&told.ignored) {
        assert_eq!(line.lines().count(), 1, "one line");
    }
}

/// Each key the managed configuration sets is what the hook uses, and says so.
fn pinned(managed: &Managed, told: &hook_config::Reconciled) {
    let source = |key: &str| {
        told.sources
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, s)| *s)
    };
    if let Some(server) = &managed.server {
        assert_eq!(&told.conn.server, server);
        assert_eq!(source("server"), Some(hook_config::Source::Managed));
    }
    if let Some(token_file) = &managed.token_file {
        assert_eq!(told.conn.token_file.as_ref(), Some(token_file));
        assert_eq!(told.conn.token, None);
    }
    if let Some(team) = managed.team.as_deref().filter(|t| !t.is_empty()) {
        assert_eq!(told.team, team);
    }
    if let Some(ca) = &managed.ca {
        assert_eq!(told.conn.tls.ca.as_ref(), Some(ca));
    }
    if managed.ask.is_some() {
        assert_eq!(told.ask, managed.ask);
    }
    if let Some(fail_open) = managed.fail_open {
        assert_eq!(told.fail_open, fail_open);
    }
}
