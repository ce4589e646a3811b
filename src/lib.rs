//! toolgate: a policy server for AI-agent tool calls.

pub mod auth;
pub mod cli;
pub mod config;
pub mod connections;
pub mod export;
pub mod grpc;
pub mod hook;
pub mod hub;
pub mod managed;
pub mod policy;
pub mod policy_file;
pub mod proto;
pub mod proxy;
pub mod server;
pub mod service;
pub mod store;
pub mod telemetry;
