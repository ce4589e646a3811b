//! The internal-name splitter (`mcp__server__tool`, `mcp_server_tool`): never
//! panics, and its halves are slices of the name (or the fallback) in order.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| toolgate_fuzz::internal_name::run(data));
