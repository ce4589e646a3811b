//! The one gRPC client of toolgate, for everything in the binary that talks to a
//! server (the CLI, `toolgate hook`, `toolgate export`, `toolgate proxy`): the
//! address, the bearer token, deadlines, and domain types in and out.
//!
//! The rooms: where the server is, TLS and the token in `connect`, the calls and
//! their conversions in `calls`, the decision log's service in `decisions`, signing in
//! with an identity provider in `oidc`, the gateway's tool pins in `pins`.

mod approvals;
mod calls;
mod connect;
mod decisions;
pub mod oidc;
mod pins;

use toolgate_core::policy;
use toolgate_proto as proto;

pub use approvals::{ApprovalAsk, ApprovalTicket};
pub use calls::PolicyWatch;
pub use connect::{Authed, Bearer, ClientConfig, SharedBearer, TlsOptions};
pub use pins::{PinCheck, PinStatus, PinWatch, ToolDefinition};

use crate::policy::{AdminControls, Outcome, UserSettings};
use tonic::transport::Channel;

/// Why a call to the server did not give an answer.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("bad client configuration: {0}")]
    Config(String),
    #[error("cannot reach toolgate server {server}: {detail}")]
    Unreachable { server: String, detail: String },
    #[error("toolgate server {server} did not answer within {ms} ms")]
    Timeout { server: String, ms: u128 },
    #[error("toolgate server refused the call: {code:?}: {message}")]
    Refused { code: tonic::Code, message: String },
    #[error("toolgate server answered something unreadable: {0}")]
    Malformed(String),
}

/// A decision as the server gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteDecision {
    pub outcome: Outcome,
    /// The stable reason name, e.g. `COMMAND_BLOCKED`.
    pub reason: String,
    /// The server's sentence for people.
    pub message: String,
    pub revision: u64,
    /// Set when the ASK went to the team's approvers: the request to wait on.
    pub approval: Option<ApprovalTicket>,
    /// With ALLOW: paths the call writes that must stay inside the working directory
    /// (no symbolic link out, no repository metadata on the way), which only the
    /// side where the files are can check; an ALLOW whose path fails is an ASK.
    pub stays_inside: Vec<String>,
    /// With ALLOW: programs whose effects nobody checked ("effects unknown").
    pub effects_unknown: Vec<String>,
}

/// The effective policy of one user, as the server computes it.
#[derive(Debug, Clone)]
pub struct RemotePolicy {
    pub admin: AdminControls,
    pub user: UserSettings,
    pub revision: u64,
    /// The policy file's `tool.action` lists: (server, allowed patterns).
    pub file_allowlists: Vec<(String, Vec<String>)>,
}

/// What a `tools/list` result keeps under the policy (`FilterTools`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilteredTools {
    /// `{"tools": [...]}` with the hidden tools left out.
    pub tools: serde_json::Value,
    pub revision: u64,
}

/// One event of a policy watch, as much of it as a follower needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicyNotice {
    /// The policy is now at `revision` (a snapshot, a resync or a change).
    Changed { revision: u64 },
    /// The stream is alive; nothing changed.
    Heartbeat,
}

/// A client of one server. Cheap to clone: clones share the connection.
#[derive(Clone)]
pub struct Client {
    channel: Channel,
    bearer: Bearer,
    config: ClientConfig,
    /// The agent client's own id for the call its decisions are for (a hook's one
    /// call), sent with each so the decision log can join the client's telemetry.
    tool_use_id: String,
}

impl Client {
    /// Sends `id` as the client's own id for the calls decided from now on (a hook
    /// decides one call per process).
    pub fn for_tool_use(mut self, id: Option<&str>) -> Self {
        self.tool_use_id = id.unwrap_or_default().to_owned();
        self
    }
}

fn status_error(server: String, status: tonic::Status) -> ClientError {
    use tonic::Code;
    // a lost connection surfaces as Cancelled (or Unknown, with the transport error as
    // its source) as well as Unavailable: the server answers neither that way
    let lost = match status.code() {
        Code::Unavailable | Code::Cancelled => true,
        Code::Unknown => std::error::Error::source(&status).is_some(),
        _ => false,
    };
    if lost {
        ClientError::Unreachable {
            server,
            detail: status.message().to_owned(),
        }
    } else {
        ClientError::Refused {
            code: status.code(),
            message: status.message().to_owned(),
        }
    }
}

/// The error and its sources on one line (tonic's transport errors say little alone).
/// A source that says what the error before it already ended with adds nothing and
/// is left out: hyper's connect errors wrap one another, each saying "tcp connect
/// error".
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut last = text.clone();
    let mut source = e.source();
    while let Some(s) = source {
        let said = s.to_string();
        if !said.is_empty() && !last.ends_with(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        last = said;
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::error_chain;

    /// An error whose text is `text`, caused by `source`.
    #[derive(Debug)]
    struct Layer(&'static str, Option<Box<Layer>>);

    impl std::fmt::Display for Layer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }

    impl std::error::Error for Layer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref().map(|l| l as _)
        }
    }

    #[test]
    fn a_chain_says_each_thing_once() {
        let layer = |text, source: Option<Layer>| Layer(text, source.map(Box::new));
        let refused = layer("Connection refused (os error 111)", None);
        let chain = layer(
            "transport error",
            Some(layer(
                "tcp connect error",
                Some(layer("tcp connect error", Some(refused))),
            )),
        );
        assert_eq!(
            error_chain(&chain),
            "transport error: tcp connect error: Connection refused (os error 111)"
        );
        // a layer that already says its source's text, as `#[error("…: {0}")]` does
        let said = layer("tls: bad certificate", Some(layer("bad certificate", None)));
        assert_eq!(error_chain(&said), "tls: bad certificate");
        let plain = layer("a", Some(layer("b", Some(layer("c", None)))));
        assert_eq!(error_chain(&plain), "a: b: c");
    }
}
