//! Seed 001's entry parser (with globs and presets): never panics, and an entry it
//! accepts formats back to something it accepts as the same entry.

use toolgate::policy::{Entry, glob_match, split_internal_name, validate_call_name};

/// One input, as libFuzzer hands it over.
pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(entry) = Entry::parse(text) else {
        return;
    };
    // matching any call name drawn from the input is total
    let (server, tool) = split_internal_name(text, "fallback");
    if validate_call_name(server).is_ok() && validate_call_name(tool).is_ok() {
        let _ = entry.matches(server, tool);
    }
    let _ = glob_match(text, text);
}
