//! `allowlist list|add|remove`: a user's MCP allowlist.

use super::args::AllowlistCommand;
use super::client::{Clients, rpc_error};
use super::usage;
use crate::proto::v1 as pb;
use serde_json::json;

pub(super) async fn allowlist(c: &Clients, cmd: AllowlistCommand) -> anyhow::Result<i32> {
    let (settings, changed, detail) = match cmd {
        AllowlistCommand::List { team, user } => {
            let s = c
                .users()
                .get_user_settings(pb::GetUserSettingsRequest {
                    team_id: team,
                    user_id: user,
                })
                .await
                .map_err(rpc_error)?
                .into_inner();
            (s, None, String::new())
        }
        AllowlistCommand::Add { team, user, entry } => {
            let Some((server, tool)) = entry.split_once(':') else {
                return Err(usage(format!(
                    "entry {entry:?} is not server:tool: write e.g. github:create_issue"
                )));
            };
            let r = c
                .users()
                .add_to_allowlist(pb::AddToAllowlistRequest {
                    team_id: team,
                    user_id: user,
                    server: server.into(),
                    tool: tool.into(),
                })
                .await
                .map_err(rpc_error)?
                .into_inner();
            (r.settings.unwrap_or_default(), Some(r.changed), r.detail)
        }
        AllowlistCommand::Remove { team, user, entry } => {
            let r = c
                .users()
                .remove_from_allowlist(pb::RemoveFromAllowlistRequest {
                    team_id: team,
                    user_id: user,
                    entry,
                })
                .await
                .map_err(rpc_error)?
                .into_inner();
            (r.settings.unwrap_or_default(), Some(r.changed), r.detail)
        }
    };
    if c.json() {
        println!(
            "{}",
            json!({"team": settings.team_id, "user": settings.user_id, "revision": settings.revision,
                   "mcp_allowed_tools": settings.mcp_allowed_tools, "changed": changed, "detail": detail})
        );
    } else {
        if !detail.is_empty() {
            println!("unchanged: {detail}");
        }
        println!(
            "{}/{} (revision {}):",
            settings.team_id, settings.user_id, settings.revision
        );
        for e in &settings.mcp_allowed_tools {
            println!("  {e}");
        }
    }
    Ok(0)
}
