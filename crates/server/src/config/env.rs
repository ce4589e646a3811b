//! The `TOOLGATE_*` environment layer, read from a map passed in rather than the process.

use super::ENV_PREFIX;
use figment::providers::Serialized;
use figment::value::{Dict, Map, Value};
use figment::{Figment, Metadata, Profile, Provider};
use std::collections::BTreeMap;

/// `TOOLGATE_*` variables that are not server settings: the config file's name, the
/// CLI client's connection, and the test suite's own.
const NOT_SETTINGS: [&str; 7] = [
    "CONFIG",
    "SERVER",
    "TOKEN",
    "TOKEN_FILE",
    "CA",
    "CERT",
    "KEY",
];

/// The environment layer: `TOOLGATE_A__B=v` sets `a.b`, as figment's
/// `Env::prefixed("TOOLGATE_").split("__")` would, but over a map passed in rather than
/// the process's environment (figment's `Env` reads only the latter); values are parsed
/// and nested by figment itself.
pub(super) struct EnvMap(pub(super) BTreeMap<String, String>);

impl Provider for EnvMap {
    fn metadata(&self) -> Metadata {
        Metadata::named("TOOLGATE_* environment")
    }

    fn data(&self) -> Result<Map<Profile, Dict>, figment::Error> {
        let settings = self.0.iter().filter_map(|(key, value)| {
            let rest = key.strip_prefix(ENV_PREFIX)?;
            let skip = rest.is_empty() || NOT_SETTINGS.contains(&rest) || rest.starts_with("TEST_");
            (!skip).then(|| (rest.to_ascii_lowercase().replace("__", "."), value))
        });
        settings
            .fold(Figment::new(), |figment, (path, value)| {
                let parsed: Value = value.parse().unwrap_or_else(|_| Value::from(value.clone()));
                figment.merge(Serialized::default(&path, parsed))
            })
            .data()
    }
}
