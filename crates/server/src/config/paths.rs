//! Relative paths written in a configuration file are read against that file's
//! directory, so `serve --config dir/toolgate.yaml` works from any directory.
//!
//! Only values the file itself set move: a path from a flag or a `TOOLGATE_*`
//! variable keeps the working directory, as a shell user expects of them.

use super::Config;
use figment::Figment;
use std::path::{Path, PathBuf};

/// The keys that hold a file or directory path, as figment spells them.
const PATH_KEYS: [&str; 7] = [
    "data_dir",
    "policy_file",
    "tls.cert",
    "tls.key",
    "tls.client_ca",
    "auth.jwt.jwks_file",
    "store.url",
];

/// Moves each relative path the file at `file` set under the file's directory.
pub(super) fn resolve_against_file(config: &mut Config, figment: &Figment, file: &Path) {
    let Some(dir) = base_dir(file) else {
        return;
    };
    for key in PATH_KEYS {
        let from_file = figment
            .find_metadata(key)
            .and_then(|m| m.source.as_ref())
            .and_then(|s| s.file_path())
            .is_some_and(|p| same_file(p, file));
        if !from_file {
            continue;
        }
        let under = |p: &mut PathBuf| {
            if p.is_relative() {
                *p = dir.join(&*p);
            }
        };
        match key {
            "data_dir" => under(&mut config.data_dir),
            "policy_file" => config.policy_file.iter_mut().for_each(under),
            "tls.cert" => config.tls.cert.iter_mut().for_each(under),
            "tls.key" => config.tls.key.iter_mut().for_each(under),
            "tls.client_ca" => config.tls.client_ca.iter_mut().for_each(under),
            "auth.jwt.jwks_file" => {
                if let Some(jwt) = config.auth.jwt.as_mut() {
                    jwt.jwks_file.iter_mut().for_each(under);
                }
            }
            "store.url" => {
                if let Some(url) = config.store.url.as_mut()
                    && let Some(path) = url.strip_prefix("sqlite://")
                    && Path::new(path).is_relative()
                    && !path.is_empty()
                {
                    *url = format!("sqlite://{}", dir.join(path).display());
                }
            }
            _ => {}
        }
    }
}

/// The file's directory, absolute, so the paths read the same whatever the working
/// directory later is (logs, the policy file's name in the audit trail).
fn base_dir(file: &Path) -> Option<PathBuf> {
    let absolute = std::path::absolute(file).ok()?;
    absolute.parent().map(Path::to_path_buf)
}

fn same_file(a: &Path, b: &Path) -> bool {
    a == b || std::path::absolute(a).ok() == std::path::absolute(b).ok()
}
