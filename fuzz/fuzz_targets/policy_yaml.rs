//! The policy YAML loaders (the server's policy file and a team's policy): never
//! panic, and any input within the size limit is answered quickly (libFuzzer's
//! `-timeout` catches a slow one), deep nesting included.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| toolgate_fuzz::policy_yaml::run(data));
