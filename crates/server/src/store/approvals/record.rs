//! An approval request's call and the ASK that made it, as the `approvals` table keeps
//! them (JSON in its `call` and `decision` columns): one type each, which the service
//! writes and every reader reads, so no two layers agree on keys by convention.
//!
//! The JSON is the shape requests have always been stored in (rows written before
//! these types read back unchanged); what does not parse is refused, never guessed.

use crate::policy::{Call, Candidate, Decision, Outcome, Reason};
use serde::{Deserialize, Serialize};

/// The call an approval request is about, as approvers see it: masked, with what was
/// kept of the original.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "CallRow", into = "CallRow")]
pub struct ApprovalCall {
    /// The call with its secrets masked.
    pub call: Call,
    /// The working directory it was made in (masked): a grant covers calls there only.
    pub cwd: Option<String>,
    /// For a shell line or a path: the original's digest and length. `None` for an
    /// MCP call, and for a request stored before calls were masked (kept whole).
    pub original: Option<Original>,
}

/// What a masked call keeps of the text it masked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Original {
    /// Hex SHA-256 of the original command line or path.
    pub sha256: String,
    /// Its length in bytes.
    pub bytes: u64,
    /// Whether the masked call decides as the original did (false when a masked
    /// secret changed the decision, so nothing may be re-decided from it).
    pub redecidable: bool,
}

/// The ASK that made a request, as it was decided.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalDecision {
    pub outcome: Outcome,
    pub reason: Reason,
    /// The sentence the caller was given (masked).
    pub message: String,
    pub matched_entry: Option<String>,
    /// The team revision the ASK was decided at.
    pub revision: u64,
    /// MCP entries that would let the call by.
    pub candidates: Vec<McpCandidate>,
    /// Commands of the shell line that no allowed prefix covers.
    pub command_candidates: Vec<String>,
}

/// An MCP allowlist entry a request's call could be let by with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpCandidate {
    pub server: String,
    pub tool: String,
}

impl ApprovalDecision {
    /// `decision` (already masked) about `call`, decided at `revision`.
    pub fn of(decision: &Decision, call: &Call, revision: u64) -> Self {
        let mut candidates = Vec::new();
        let mut command_candidates = Vec::new();
        for c in &decision.candidates {
            match c {
                Candidate::Mcp { server, tool } => candidates.push(McpCandidate {
                    server: server.clone(),
                    tool: tool.clone(),
                }),
                Candidate::Command(c) => command_candidates.push(c.clone()),
            }
        }
        Self {
            outcome: decision.outcome,
            reason: decision.reason,
            message: decision.message(call),
            matched_entry: decision.matched_entry.as_deref().map(str::to_owned),
            revision,
            candidates,
            command_candidates,
        }
    }
}

/// [`ApprovalCall`] as its column holds it: the call's kind and fields, then the
/// directory, then the original's digest, length and whether it re-decides.
#[derive(Serialize, Deserialize)]
struct CallRow {
    #[serde(flatten)]
    call: CallKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cwd: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    redecidable: Option<bool>,
}

/// A [`Call`] by its stored `kind` (an MCP call with an action is `mcp` with `action`).
#[derive(Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum CallKind {
    Mcp {
        server: String,
        tool: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        action: Option<String>,
    },
    McpInternal {
        name: String,
        fallback_server: String,
    },
    Shell {
        command: String,
    },
    DeleteFile {
        path: String,
    },
}

impl TryFrom<CallRow> for ApprovalCall {
    type Error = String;

    fn try_from(row: CallRow) -> Result<Self, String> {
        let call = match row.call {
            CallKind::Mcp {
                server,
                tool,
                action: None,
            } => Call::Mcp { server, tool },
            CallKind::Mcp {
                server,
                tool,
                action: Some(action),
            } => Call::McpAction {
                server,
                tool,
                action,
            },
            CallKind::McpInternal {
                name,
                fallback_server,
            } => Call::McpInternal {
                name,
                fallback_server,
            },
            CallKind::Shell { command } => Call::Shell(command),
            CallKind::DeleteFile { path } => Call::DeleteFile(path),
        };
        // the three were always written together: one alone is not a call we wrote
        let original = match (row.sha256, row.bytes, row.redecidable) {
            (Some(sha256), Some(bytes), Some(redecidable)) => Some(Original {
                sha256,
                bytes,
                redecidable,
            }),
            (None, None, None) => None,
            _ => {
                return Err(
                    "`sha256`, `bytes` and `redecidable` are stored together or not at all".into(),
                );
            }
        };
        Ok(Self {
            call,
            cwd: row.cwd,
            original,
        })
    }
}

impl From<ApprovalCall> for CallRow {
    fn from(a: ApprovalCall) -> Self {
        let call = match a.call {
            Call::Mcp { server, tool } => CallKind::Mcp {
                server,
                tool,
                action: None,
            },
            Call::McpAction {
                server,
                tool,
                action,
            } => CallKind::Mcp {
                server,
                tool,
                action: Some(action),
            },
            Call::McpInternal {
                name,
                fallback_server,
            } => CallKind::McpInternal {
                name,
                fallback_server,
            },
            Call::Shell(command) => CallKind::Shell { command },
            Call::DeleteFile(path) => CallKind::DeleteFile { path },
        };
        let (sha256, bytes, redecidable) = match a.original {
            Some(o) => (Some(o.sha256), Some(o.bytes), Some(o.redecidable)),
            None => (None, None, None),
        };
        Self {
            call,
            cwd: a.cwd,
            sha256,
            bytes,
            redecidable,
        }
    }
}

#[cfg(test)]
mod tests;
