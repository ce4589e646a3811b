//! Where a request came from (its source, its client and the client's id for the
//! call), checked as it enters, and the names records keep for outcomes and reasons.

use crate::policy::{Outcome, Reason};
use crate::service::ServiceError;
use crate::service::decision_log::record::excerpt;

/// The longest client name a request may give.
pub const MAX_CLIENT_BYTES: usize = 32;

/// Where a decision was asked for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, strum::IntoStaticStr, strum::EnumString)]
#[strum(serialize_all = "snake_case")]
pub enum DecisionSource {
    #[default]
    Evaluate,
    EvaluateBatch,
    FilterTools,
    /// An approver's answer to an approval request, or a grant that let an ASK run.
    Approval,
}

impl DecisionSource {
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    pub fn parse(s: &str) -> Option<Self> {
        s.parse().ok()
    }
}

/// Where a request came from, for its records.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestOrigin {
    pub source: DecisionSource,
    /// The agent client, as the request named it (checked by [`check_client`]).
    pub client: String,
    /// The client's own id for the call (Claude Code's `tool_use_id`), empty when
    /// it sent none (checked by [`check_tool_use_id`]).
    pub tool_use_id: String,
}

/// The client `toolgate hook check` names for its sample call: a check of the
/// installation, not an agent's call, so its ALLOW or ASK is kept out of the decision
/// log (a DENY is still recorded, as every DENY is).
pub const CHECK_CLIENT: &str = "hook-check";

impl RequestOrigin {
    /// Whether the request only checks an installation (its ALLOW or ASK unrecorded).
    pub fn is_check(&self) -> bool {
        self.client == CHECK_CLIENT
    }
}

/// A request's `client`: empty, or lowercase letters, digits and `-`, at most
/// `MAX_CLIENT_BYTES` (32).
pub fn check_client(client: &str) -> Result<(), ServiceError> {
    let ok = client.len() <= MAX_CLIENT_BYTES
        && client
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(ServiceError::invalid(
            "client",
            format!(
                "{:?} is not a client name: use lowercase letters, digits and `-`, at most {MAX_CLIENT_BYTES} bytes (e.g. claude-code), or leave it empty",
                excerpt(client)
            ),
        ))
    }
}

/// The longest `tool_use_id` a request may name.
pub const MAX_TOOL_USE_ID_BYTES: usize = 256;

/// A request's `tool_use_id`: empty, or printable ASCII without spaces, at most
/// `MAX_TOOL_USE_ID_BYTES` (256). The clients' ids (`toolu_01…`, `call_…`) are; the rule
/// keeps control characters and look-alikes out of the log that shows it.
pub fn check_tool_use_id(id: &str) -> Result<(), ServiceError> {
    if id.len() <= MAX_TOOL_USE_ID_BYTES && id.bytes().all(|b| b.is_ascii_graphic()) {
        Ok(())
    } else {
        Err(ServiceError::invalid(
            "tool_use_id",
            format!(
                "{:?} is not a tool-use id: use printable ASCII without spaces, at most {MAX_TOOL_USE_ID_BYTES} bytes (the client's own id, e.g. toolu_01…), or leave it empty",
                excerpt(id)
            ),
        ))
    }
}

/// The stable name of an outcome, as records keep it.
pub fn outcome_name(o: Outcome) -> &'static str {
    o.as_str()
}

pub fn parse_outcome(s: &str) -> Option<Outcome> {
    s.parse().ok()
}

pub fn parse_reason(s: &str) -> Option<Reason> {
    s.parse().ok()
}
