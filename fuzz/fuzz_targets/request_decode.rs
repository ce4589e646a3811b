//! `Evaluate` and `FilterTools` as the server takes them, without a server: the
//! protobuf bytes decoded by prost (as the gRPC codec does), converted, the ids
//! checked by the service's one id check, then decided (or filtered) against a
//! policy with every kind of list. Never panics.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| toolgate_fuzz::request_decode::run(data));
