//! Whether the proxy's upstream may run for a principal: the team's MCP servers by
//! identity (`managed.allowed_mcp_servers`/`denied_mcp_servers`) applied to the
//! command the proxy launches or the URL it fronts, as Claude Code applies them.

use super::Target;
use crate::grpc::client::RemotePolicy;
use crate::policy::managed::servers::{Launch, Server, ServerRules, server_rules};

/// What the principal's policy says of the upstream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admitted {
    /// Not known yet: nothing is relayed.
    Pending,
    Yes,
    /// Refused, with the sentence saying why.
    No(String),
}

/// The verdict of `policy` on the upstream `target` known as `server_id`. A team
/// that names no server by command or URL leaves its servers' names to the
/// decisions (their tools are denied), as before.
pub fn judge(team: &str, server_id: &str, target: &Target, policy: &RemotePolicy) -> Admitted {
    if !ServerRules::by_identity(&policy.admin) {
        return Admitted::Yes;
    }
    let rules = server_rules(&policy.admin, &mut Vec::new());
    let launch = match target {
        Target::Command(argv) => Launch::Command(argv),
        Target::Url(url) => Launch::Url(url),
    };
    let server = Server {
        name: server_id,
        launch,
    };
    match rules.refusal(&server) {
        None => Admitted::Yes,
        Some(why) => Admitted::No(format!(
            "upstream server {server_id} may not run for team {team:?}: {why} (the team policy's managed.allowed_mcp_servers and denied_mcp_servers); ask an admin to allow it"
        )),
    }
}
