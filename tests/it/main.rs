//! The integration tests, one binary: each module is one subject (named as the
//! test files were), `support` the shared set-up (a real server on 127.0.0.1:0, its
//! clients, a throwaway PostgreSQL). One binary links the crates once instead of once
//! per file. Only the tests that install the process-wide metrics recorder live
//! apart (`tests/metrics.rs`, `tests/prometheus_scrape.rs`): a recorder is the
//! process's, one server per process.

#[path = "../support/mod.rs"]
mod support;

mod advice;
mod approvals;
mod architecture;
mod atomic_writes;
mod boundaries;
mod build_info;
mod categories;
mod categories_api;
mod claude_code;
mod cli;
mod client_telemetry;
mod conformance;
mod console;
mod console_proto;
mod crash;
mod decision_facts;
mod decision_log;
mod decisions;
mod deny_crash;
mod docs;
mod export;
mod export_servers;
mod faults;
mod flood;
mod followed_files;
mod gateway;
mod group_docs;
mod groups;
mod hardening;
mod hook;
mod hook_boundaries;
mod hook_payloads;
mod hook_trust;
mod http;
mod identities;
mod install;
mod jwt;
mod limits;
mod managed;
mod managed_sync;
mod matcher_props;
mod org_groups;
mod org_preview;
mod otlp;
mod packaging;
mod partition;
mod pins;
mod policy_file;
mod policy_tests;
mod policy_yaml;
mod preview;
mod proxy;
mod proxy_failures;
mod proxy_identity;
mod proxy_names;
mod rates;
mod replicas;
mod roles;
mod roles_api;
mod schema;
mod secrets;
mod server;
mod server_limits;
mod shell_bypass;
mod shell_props;
mod sso;
mod store_suite;
mod tampering;
mod telemetry;
mod terminal;
mod third_party;
mod tls;
mod tokens;
mod user_settings;
mod watch;
