//! The fuzz targets' bodies as functions: libFuzzer drives them through the thin
//! binaries in `fuzz_targets/`, and `cargo test -p toolgate-fuzz` replays every seed
//! in `seeds/<target>/` through them, so a seed that once crashed is an ordinary
//! test that fails in seconds rather than at the end of a fuzz run.

pub mod entry_parse;
pub mod hook_config;
pub mod hook_payload;
pub mod http_json;
pub mod internal_name;
pub mod policy_yaml;
pub mod request_decode;
pub mod secrets_mask;
pub mod shell_reader;
pub mod url_path;

/// A target's body: one input.
pub type Target = fn(&[u8]);

/// Every target by name, as `fuzz/run` and `seeds/` name them.
pub const TARGETS: &[(&str, Target)] = &[
    ("entry_parse", entry_parse::run),
    ("hook_config", hook_config::run),
    ("hook_payload", hook_payload::run),
    ("http_json", http_json::run),
    ("internal_name", internal_name::run),
    ("policy_yaml", policy_yaml::run),
    ("request_decode", request_decode::run),
    ("secrets_mask", secrets_mask::run),
    ("shell_reader", shell_reader::run),
    ("url_path", url_path::run),
];

#[cfg(test)]
mod tests {
    use super::TARGETS;
    use std::path::Path;

    #[test]
    fn every_seed_replays_without_a_finding() {
        let seeds = Path::new(env!("CARGO_MANIFEST_DIR")).join("seeds");
        for (name, run) in TARGETS {
            let dir = seeds.join(name);
            let mut n = 0;
            for entry in
                std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            {
                let path = entry.unwrap().path();
                run(&std::fs::read(&path).unwrap());
                n += 1;
            }
            assert!(n > 0, "{name}: no seeds in {}", dir.display());
        }
    }
}
