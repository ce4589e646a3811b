//! Seed 001's entry parser (with globs and presets): never panics, and an entry it
//! accepts formats back to something it accepts as the same entry.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| toolgate_fuzz::entry_parse::run(data));
