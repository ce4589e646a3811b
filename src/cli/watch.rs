//! `watch`: policy events as they arrive.

use super::client::{Clients, rpc_error};
use super::output::Render;
use crate::grpc::convert::controls_from_pb;
use crate::proto::v1 as pb;
use futures::StreamExt;
use serde::Serialize;
use serde_json::json;

pub(super) async fn watch(
    c: &Clients,
    team: &str,
    user: &str,
    after: Option<u64>,
) -> anyhow::Result<i32> {
    use pb::watch_policy_response::Event;
    let mut events = c
        .policy()
        .watch_policy(pb::WatchPolicyRequest {
            team_id: team.into(),
            user_id: user.into(),
            after_revision: after,
        })
        .await
        .map_err(rpc_error)?
        .into_inner();
    while let Some(e) = events.next().await {
        let e = e.map_err(rpc_error)?;
        let (kind, body) = match &e.event {
            Some(Event::Snapshot(s)) => {
                let p = s.policy.clone().unwrap_or_default();
                let admin = p
                    .admin
                    .and_then(|a| a.auto_run_controls)
                    .map(|a| controls_from_pb(a).ok());
                let user = p.user.map(|u| {
                    json!({"mcp_allowed_tools": u.mcp_allowed_tools, "use_yolo_mode": u.use_yolo_mode,
                           "yolo_enable_run_everything": u.yolo_enable_run_everything})
                });
                let files: serde_json::Map<String, serde_json::Value> = p
                    .file_allowlists
                    .iter()
                    .map(|l| (l.server.clone(), json!(l.allowed_tools)))
                    .collect();
                (
                    if s.resync { "resync" } else { "snapshot" },
                    json!({"admin": admin, "user": user, "file_allowlists": files}),
                )
            }
            Some(Event::AdminSettings(a)) => (
                "admin",
                json!({"controls": a.auto_run_controls.clone().map(|a| controls_from_pb(a).ok()), "by": a.updated_by}),
            ),
            Some(Event::UserSettings(u)) => (
                "user",
                json!({"user": u.user_id, "mcp_allowed_tools": u.mcp_allowed_tools, "by": u.updated_by}),
            ),
            Some(Event::Heartbeat(_)) => ("heartbeat", serde_json::Value::Null),
            None => continue,
        };
        c.out.print(&WatchLine {
            revision: e.revision,
            event: kind,
            data: body,
        });
    }
    Ok(0)
}

/// One policy event as the command prints it.
#[derive(Debug, Serialize)]
pub struct WatchLine {
    pub revision: u64,
    /// snapshot, resync, admin, user or heartbeat.
    pub event: &'static str,
    pub data: serde_json::Value,
}

impl Render for WatchLine {
    fn human(&self) -> String {
        let (revision, kind) = (self.revision, self.event);
        let mut fields = Vec::new();
        settings_of("", &self.data, &mut fields);
        if fields.is_empty() {
            format!("rev {revision:<6} {kind}\n")
        } else {
            format!("rev {revision:<6} {kind:<9} {}\n", fields.join("; "))
        }
    }
}

/// The settings a value holds as `key: value` for people: nested keys dotted, what is
/// off, empty or unset left out (JSON output keeps everything).
fn settings_of(prefix: &str, value: &serde_json::Value, out: &mut Vec<String>) {
    use serde_json::Value;
    match value {
        Value::Null | Value::Bool(false) => {}
        Value::Array(a) if a.is_empty() => {}
        Value::String(s) if s.is_empty() => {}
        Value::Object(map) => {
            for (k, v) in map {
                // the documents' own names, without the wrapper's
                let key = match prefix {
                    "" | "admin." | "controls." => k.clone(),
                    _ => format!("{prefix}{k}"),
                };
                settings_of(&format!("{key}."), v, out);
            }
        }
        Value::String(s) => out.push(format!("{}: {s}", prefix.trim_end_matches('.'))),
        other => out.push(format!("{}: {other}", prefix.trim_end_matches('.'))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_heartbeat_has_no_body_and_a_change_shows_its_data() {
        let beat = WatchLine {
            revision: 3,
            event: "heartbeat",
            data: serde_json::Value::Null,
        };
        assert_eq!(beat.human(), "rev 3      heartbeat\n");
        let user = WatchLine {
            revision: 4,
            event: "user",
            data: json!({"user": "alice", "mcp_allowed_tools": ["jira:*"], "by": "alice"}),
        };
        assert_eq!(
            user.human(),
            "rev 4      user      user: alice; mcp_allowed_tools: [\"jira:*\"]; by: alice\n"
        );
        let admin = WatchLine {
            revision: 5,
            event: "admin",
            data: json!({"controls": {"enabled": true, "allowed": ["ls"], "kill_switch": false,
                                      "approvals": {"mode": "headless"}}, "by": "admin"}),
        };
        assert_eq!(
            admin.human(),
            "rev 5      admin     enabled: true; allowed: [\"ls\"]; approvals.mode: headless; by: admin\n"
        );
    }
}
