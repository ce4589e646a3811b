//! A Connect call's JSON body as the HTTP layer reads it, without a server: the
//! first byte picks the method, the rest is the body. Never panics, and what it
//! reads writes back to JSON that reads to the same bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| toolgate_fuzz::http_json::run(data));
