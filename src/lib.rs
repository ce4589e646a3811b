//! toolgate: a policy server for AI-agent tool calls.

pub mod policy;
pub mod proto;
