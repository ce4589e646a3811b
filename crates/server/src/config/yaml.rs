//! YAML configuration files through serde_norway, the build's one YAML parser
//! (figment's own `Yaml` provider brings the deprecated serde_yaml).

use figment::providers::Format;
use serde::de::DeserializeOwned;

/// The YAML format for figment's file provider.
pub struct Yaml;

impl Format for Yaml {
    type Error = serde_norway::Error;

    const NAME: &'static str = "YAML";

    fn from_str<T: DeserializeOwned>(string: &str) -> Result<T, Self::Error> {
        serde_norway::from_str(string)
    }
}
