//! `user get|set`: a user's own settings, changed field by field (the API's field
//! mask), so setting auto-run never touches the user's lists.

use super::args::{UserCommand, UserSetArgs};
use super::client::{Clients, rpc_error};
use super::output::Render;
use super::usage;
use crate::proto::v1 as pb;
use serde::Serialize;

pub(super) async fn user(c: &Clients, cmd: UserCommand) -> anyhow::Result<i32> {
    let settings = match cmd {
        UserCommand::Get { team, user } => c
            .users()
            .get_user_settings(pb::GetUserSettingsRequest {
                team_id: team,
                user_id: user,
            })
            .await
            .map_err(rpc_error)?
            .into_inner()
            .settings
            .unwrap_or_default(),
        UserCommand::Set(args) => {
            let (settings, paths) = patch(args)?;
            c.users()
                .update_user_settings(pb::UpdateUserSettingsRequest {
                    settings: Some(settings),
                    expected_revision: None,
                    update_mask: Some(prost_types::FieldMask { paths }),
                })
                .await
                .map_err(rpc_error)?
                .into_inner()
                .settings
                .unwrap_or_default()
        }
    };
    c.out.print(&UserReport::from(settings));
    Ok(0)
}

/// The settings message and the mask naming exactly the flags given.
fn patch(args: UserSetArgs) -> anyhow::Result<(pb::UserSettings, Vec<String>)> {
    let on = |v: &str| v == "on";
    let mut s = pb::UserSettings {
        team_id: args.team,
        user_id: args.user,
        ..pb::UserSettings::default()
    };
    let mut paths = Vec::new();
    if let Some(v) = args.auto_run {
        s.use_yolo_mode = on(&v);
        paths.push("use_yolo_mode".to_owned());
    }
    if let Some(v) = args.run_everything {
        s.yolo_enable_run_everything = on(&v);
        paths.push("yolo_enable_run_everything".to_owned());
    }
    if let Some(v) = args.browser_protection {
        s.playwright_protection = Some(on(&v));
        paths.push("playwright_protection".to_owned());
    }
    if let Some(v) = args.mcp_protection {
        s.yolo_mcp_tools_disabled = on(&v);
        paths.push("yolo_mcp_tools_disabled".to_owned());
    }
    if paths.is_empty() {
        return Err(usage(
            "nothing to set: name at least one of --auto-run, --run-everything, --browser-protection, --mcp-protection".into(),
        ));
    }
    Ok((s, paths))
}

/// A user's settings as `user get|set` prints them.
#[derive(Debug, Serialize)]
pub struct UserReport {
    pub team: String,
    pub user: String,
    /// 0 when the user has written no settings (the team's defaults apply).
    pub revision: u64,
    pub auto_run: bool,
    pub run_everything: bool,
    pub browser_protection: bool,
    pub mcp_protection: bool,
    pub mcp_allowed_tools: Vec<String>,
    pub command_allowlist: Vec<String>,
    pub command_denylist: Vec<String>,
}

impl From<pb::UserSettings> for UserReport {
    fn from(s: pb::UserSettings) -> Self {
        Self {
            team: s.team_id,
            user: s.user_id,
            revision: s.revision,
            auto_run: s.use_yolo_mode,
            run_everything: s.yolo_enable_run_everything,
            browser_protection: s.playwright_protection.unwrap_or(true),
            mcp_protection: s.yolo_mcp_tools_disabled,
            mcp_allowed_tools: s.mcp_allowed_tools,
            command_allowlist: s.command_allowlist,
            command_denylist: s.command_denylist,
        }
    }
}

impl Render for UserReport {
    fn human(&self) -> String {
        let onoff = |b: bool| if b { "on" } else { "off" };
        let origin = if self.revision == 0 {
            "no settings of their own: the team's defaults".to_owned()
        } else {
            format!("revision {}", self.revision)
        };
        let list = |l: &[String]| {
            if l.is_empty() {
                "(none)".to_owned()
            } else {
                l.join(", ")
            }
        };
        format!(
            "{}/{} ({origin}):\n  auto-run: {}\n  run-everything: {}\n  browser-protection: {}\n  mcp-protection: {}\n  mcp allowlist: {}\n  command allowlist: {}\n  command denylist: {}\n",
            self.team,
            self.user,
            onoff(self.auto_run),
            onoff(self.run_everything),
            onoff(self.browser_protection),
            onoff(self.mcp_protection),
            list(&self.mcp_allowed_tools),
            list(&self.command_allowlist),
            list(&self.command_denylist),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mask_names_only_the_flags_given() {
        let args = UserSetArgs {
            team: "t".into(),
            user: "u".into(),
            auto_run: Some("on".into()),
            run_everything: None,
            browser_protection: Some("off".into()),
            mcp_protection: None,
        };
        let (s, paths) = patch(args).unwrap();
        assert_eq!(paths, ["use_yolo_mode", "playwright_protection"]);
        assert!(s.use_yolo_mode);
        assert_eq!(s.playwright_protection, Some(false));
    }

    #[test]
    fn nothing_to_set_is_bad_usage() {
        let args = UserSetArgs {
            team: "t".into(),
            user: "u".into(),
            auto_run: None,
            run_everything: None,
            browser_protection: None,
            mcp_protection: None,
        };
        assert!(patch(args).is_err());
    }
}
