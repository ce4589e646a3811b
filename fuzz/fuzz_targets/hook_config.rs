//! The hook's configuration sources: command line, client profile and environment;
//! the environment never changes what the hook uses.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| toolgate_fuzz::hook_config::run(data));
