//! The secrets masking rules: never panic, stable when applied twice, and a masked
//! line that reads as the same words decides as the original.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| toolgate_fuzz::secrets_mask::run(data));
