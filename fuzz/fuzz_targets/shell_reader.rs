//! The shell reader and the shell decision: never panic on any line, and a line
//! whose command word is a blocked `rm` (by file name) is never ALLOWED.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| toolgate_fuzz::shell_reader::run(data));
