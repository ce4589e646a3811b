//! URL and path extraction: a network target is read (or refused) without panicking,
//! and what is read is stable (its host normalises to itself); a path is placed
//! without panicking and a Windows one keeps no `\`; a tool's arguments give at most
//! the bounded number of paths and hosts.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| toolgate_fuzz::url_path::run(data));
