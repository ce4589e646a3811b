//! toolgate: a policy server for AI-agent tool calls.

pub mod hub;
pub mod policy;
pub mod store;
pub mod proto;
