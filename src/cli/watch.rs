//! `watch`: policy events as they arrive.

use super::client::{Clients, rpc_error};
use crate::grpc::convert::controls_from_pb;
use crate::proto::v1 as pb;
use futures::StreamExt;
use serde_json::json;

pub(super) async fn watch(
    c: &Clients,
    team: &str,
    user: &str,
    after: Option<u64>,
) -> anyhow::Result<i32> {
    use pb::policy_event::Event;
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
        if c.json() {
            println!(
                "{}",
                json!({"revision": e.revision, "event": kind, "data": body})
            );
        } else if body.is_null() {
            println!("rev {:<6} {kind}", e.revision);
        } else {
            println!("rev {:<6} {kind:<9} {body}", e.revision);
        }
    }
    Ok(0)
}
