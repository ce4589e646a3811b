//! The `TOOLGATE_*` environment layer, read from a map passed in rather than the
//! process, and the split between the server's variables and the clients'.
//!
//! The server reads `TOOLGATE_<KEY>` (nested keys joined with `__`) for its own keys
//! only. The variables of toolgate's clients (the CLI, `toolgate hook`, `toolgate
//! proxy`) share the prefix and are commonly exported in the same shell, so the server
//! skips them by name; any other `TOOLGATE_*` variable is a mistake it reports.

use super::ENV_PREFIX;
use figment::providers::Serialized;
use figment::value::{Dict, Map, Value};
use figment::{Figment, Metadata, Profile, Provider};
use std::collections::BTreeMap;

/// The name of the server's configuration file variable.
pub const CONFIG_VAR: &str = "TOOLGATE_CONFIG";

/// Client variables (after `TOOLGATE_`): where the server is, the token, TLS towards
/// it, who the hook asks for, the client profile. Never server settings.
pub const CLIENT_VARIABLES: [&str; 9] = [
    "SERVER",
    "TOKEN",
    "TOKEN_FILE",
    "CA",
    "CERT",
    "KEY",
    "TEAM",
    "USER",
    "PROFILE",
];

/// Prefixes (after `TOOLGATE_`) of client and test-suite variables: the hook's
/// options and the tests' own.
pub const CLIENT_PREFIXES: [&str; 2] = ["HOOK_", "TEST_"];

pub(super) const ENV_SOURCE: &str = "TOOLGATE_* environment";

/// Whether `rest` (a variable after `TOOLGATE_`) is a client's, not the server's.
fn is_client(rest: &str) -> bool {
    rest.is_empty()
        || CLIENT_VARIABLES.contains(&rest)
        || CLIENT_PREFIXES.iter().any(|p| rest.starts_with(p))
}

/// The variables meant for the server: `TOOLGATE_*` but the config file's name and
/// the clients'.
pub(super) fn server_settings(env: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    env.iter()
        .filter(|(k, _)| {
            k.strip_prefix(ENV_PREFIX)
                .is_some_and(|rest| !is_client(rest) && k.as_str() != CONFIG_VAR)
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Server variables whose first key is none of the configuration's, each named with
/// what to do; nested keys are checked by the sections themselves.
pub(super) fn unknown_variables(env: &BTreeMap<String, String>) -> Vec<String> {
    let known = super::Config::keys();
    server_settings(env)
        .keys()
        .filter_map(|name| {
            let rest = name.strip_prefix(ENV_PREFIX)?;
            let top = rest.split("__").next()?.to_ascii_lowercase();
            (!known.contains(&top)).then(|| {
                format!(
                    "{name}: not a server setting: server variables are TOOLGATE_ and a key ({}; nested keys joined with __, e.g. TOOLGATE_LOG__LEVEL); client variables (TOOLGATE_SERVER, TOOLGATE_TOKEN, TOOLGATE_TEAM, TOOLGATE_USER, TOOLGATE_HOOK_*, …) are ignored by the server: fix the name or unset it",
                    known
                        .iter()
                        .map(|k| format!("TOOLGATE_{}", k.to_ascii_uppercase()))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })
        })
        .collect()
}

/// The variable that sets `key` (`log.level` → `TOOLGATE_LOG__LEVEL`).
pub fn variable_of(key: &str) -> String {
    format!(
        "{ENV_PREFIX}{}",
        key.to_ascii_uppercase().replace('.', "__")
    )
}

/// A validation problem (`key: …`) says which variable set the key, when one did.
pub(super) fn name_the_variable(problem: String, env: &BTreeMap<String, String>) -> String {
    let key: String = problem
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '.')
        .collect();
    // the longest key a variable sets: `auth.jwt.issuer` may come from TOOLGATE_AUTH__JWT__ISSUER
    let mut parts: Vec<&str> = key.split('.').collect();
    while !parts.is_empty() {
        let var = variable_of(&parts.join("."));
        if env.contains_key(&var) {
            return format!("{var} ({problem})");
        }
        parts.pop();
    }
    problem
}

/// Fixes for the keys whose type error alone does not say what to write.
fn hint(key: &str) -> &'static str {
    match key {
        "listen" | "metrics.listen" | "http.listen" => ": use HOST:PORT such as 127.0.0.1:7070",
        "log.level" => ": use error, warn, info, debug or trace",
        "log.format" => ": use text or json",
        "audit.decisions" => ": use deny or all",
        k if k.ends_with("role") => ": use member, admin, service or operator",
        k if k.ends_with("_secs") || k.starts_with("limits.") => ": give a whole number",
        _ => ": fix the value",
    }
}

/// A figment error as a problem line: the key (and the variable or file that set it),
/// what is wrong and the fix; no profile prefix (`default.`), which means nothing here.
pub(super) fn describe(
    e: &figment::Error,
    section: &str,
    env: &BTreeMap<String, String>,
) -> String {
    let mut path: Vec<String> = e.path.clone();
    if !section.is_empty() {
        // `extract_inner` appends the section to the path rather than prefixing it
        if path.last().map(String::as_str) == Some(section) {
            path.pop();
        }
        if path.first().map(String::as_str) != Some(section) {
            path.insert(0, section.to_owned());
        }
    }
    let mut kind = e.kind.to_string();
    if let figment::error::Kind::UnknownField(field, expected) = &e.kind {
        if path.last() == Some(field) {
            path.pop();
        }
        let parent = path.join(".");
        path.push(field.clone());
        kind = format!(
            "unknown key: {} takes {}",
            if parent.is_empty() {
                "the top level"
            } else {
                &parent
            },
            expected.join(", ")
        );
    }
    let key = path.join(".");
    let mut source = e.metadata.as_ref().map(origin);
    // values nested by EnvMap carry no metadata of their own: the variable tells
    let mut parts: Vec<&str> = key.split('.').collect();
    while !parts.is_empty() {
        if env.contains_key(&variable_of(&parts.join("."))) {
            source = Some(ENV_SOURCE.to_owned());
            break;
        }
        parts.pop();
    }
    let fix = if matches!(e.kind, figment::error::Kind::UnknownField(..)) {
        ": fix the name or remove it"
    } else {
        hint(&key)
    };
    match source.as_deref() {
        Some(ENV_SOURCE) => format!("{} ({key}): {kind}{fix}", variable_of(&parts.join("."))),
        Some(s) if !s.is_empty() => format!("{key} (in {s}): {kind}{fix}"),
        _ => format!("{key}: {kind}{fix}"),
    }
}

/// Where a value came from: the environment, or the file's path ("" for the
/// built-in defaults and the command line's flags).
pub(super) fn origin(m: &Metadata) -> String {
    if m.name == ENV_SOURCE {
        return ENV_SOURCE.to_owned();
    }
    match &m.source {
        Some(figment::Source::File(path)) => path.display().to_string(),
        _ => String::new(),
    }
}

/// A top-level key no section has, named with where it came from.
pub(super) fn describe_unknown(key: &str, source: Option<&str>, known: &[String]) -> String {
    let name = match source {
        Some(ENV_SOURCE) => format!("{} ({key})", variable_of(key)),
        Some(s) if !s.is_empty() => format!("{key} (in {s})"),
        _ => key.to_owned(),
    };
    format!(
        "{name}: unknown key: the keys are {}: fix the name or remove it",
        known.join(", ")
    )
}

/// The environment layer: `TOOLGATE_A__B=v` sets `a.b`, as figment's
/// `Env::prefixed("TOOLGATE_").split("__")` would, but over a map passed in rather than
/// the process's environment (figment's `Env` reads only the latter); values are parsed
/// and nested by figment itself.
pub(super) struct EnvMap(pub(super) BTreeMap<String, String>);

impl Provider for EnvMap {
    fn metadata(&self) -> Metadata {
        Metadata::named(ENV_SOURCE)
    }

    fn data(&self) -> Result<Map<Profile, Dict>, figment::Error> {
        let settings = self.0.iter().filter_map(|(key, value)| {
            let rest = key.strip_prefix(ENV_PREFIX)?;
            (!is_client(rest)).then(|| (rest.to_ascii_lowercase().replace("__", "."), value))
        });
        settings
            .fold(Figment::new(), |figment, (path, value)| {
                let parsed: Value = value.parse().unwrap_or_else(|_| Value::from(value.clone()));
                figment.merge(Serialized::default(&path, parsed))
            })
            .data()
    }
}
