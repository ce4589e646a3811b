//! `allowlist list|add|remove`: a user's MCP allowlist.

use super::args::AllowlistCommand;
use super::client::{Clients, rpc_error};
use super::output::Render;
use super::usage;
use crate::proto::v1 as pb;
use serde::Serialize;

pub(super) async fn allowlist(c: &Clients, cmd: AllowlistCommand) -> anyhow::Result<i32> {
    let (settings, changed, detail, note) = match cmd {
        AllowlistCommand::List { team, user } => {
            let s = c
                .users()
                .get_user_settings(pb::GetUserSettingsRequest {
                    team_id: team,
                    user_id: user,
                })
                .await
                .map_err(rpc_error)?
                .into_inner()
                .settings
                .unwrap_or_default();
            (s, None, String::new(), String::new())
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
            (
                r.settings.unwrap_or_default(),
                Some(r.changed),
                r.detail,
                r.note,
            )
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
            (
                r.settings.unwrap_or_default(),
                Some(r.changed),
                r.detail,
                String::new(),
            )
        }
    };
    c.out.print(&AllowlistReport {
        team: settings.team_id,
        user: settings.user_id,
        revision: settings.revision,
        mcp_allowed_tools: settings.mcp_allowed_tools,
        changed,
        detail,
        note,
    });
    Ok(0)
}

/// A user's allowlist, and whether the command changed it (and if not, why).
#[derive(Debug, Serialize)]
pub struct AllowlistReport {
    pub team: String,
    pub user: String,
    pub revision: u64,
    pub mcp_allowed_tools: Vec<String>,
    /// None for `list`, which changes nothing.
    pub changed: Option<bool>,
    pub detail: String,
    /// Added, yet changing no decision now: why, and what would make it count.
    pub note: String,
}

impl Render for AllowlistReport {
    fn human(&self) -> String {
        let mut out = String::new();
        if !self.detail.is_empty() {
            out.push_str(&format!("unchanged: {}\n", self.detail));
        }
        out.push_str(&format!(
            "{}/{} (revision {}):\n",
            self.team, self.user, self.revision
        ));
        for e in &self.mcp_allowed_tools {
            out.push_str(&format!("  {e}\n"));
        }
        if !self.note.is_empty() {
            out.push_str(&format!("note: {}\n", self.note));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unchanged_allowlist_says_why_then_lists_its_entries() {
        let report = AllowlistReport {
            team: "acme".into(),
            user: "alice".into(),
            revision: 2,
            mcp_allowed_tools: vec!["github:*".into()],
            changed: Some(false),
            detail: "covered by github:*".into(),
            note: String::new(),
        };
        assert_eq!(
            report.human(),
            "unchanged: covered by github:*\nacme/alice (revision 2):\n  github:*\n"
        );
    }
}
