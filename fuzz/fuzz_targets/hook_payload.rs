//! Every client's hook payload: the first byte picks the client, the rest is stdin.
//! Never panics; a payload read gives a call the client's tables agree with (a shell
//! tool is a command line, a call of no known tool carries a note), and every answer
//! renders as one JSON document or nothing.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| toolgate_fuzz::hook_payload::run(data));
