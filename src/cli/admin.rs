//! `admin get|diff|apply` and `kill-switch`: team admin settings as code.

use super::args::AdminCommand;
use super::client::{Clients, rpc_error};
use super::{EXIT_CONFLICT, EXIT_DIFFERENT};
use crate::grpc::convert::{controls_from_pb, controls_to_pb};
use crate::policy::AdminControls;
use crate::policy_file::{self, TeamPolicy};
use crate::proto::v1 as pb;
use anyhow::{Context as _, bail};
use serde_json::json;
use std::path::PathBuf;

async fn get_admin(c: &Clients, team: &str) -> anyhow::Result<(AdminControls, u64)> {
    let s = c
        .admin()
        .get_team_admin_settings(pb::GetTeamAdminSettingsRequest {
            team_id: team.into(),
        })
        .await
        .map_err(rpc_error)?
        .into_inner();
    let controls = controls_from_pb(s.auto_run_controls.unwrap_or_default())
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok((controls, s.revision))
}

fn read_policy(file: &PathBuf) -> anyhow::Result<TeamPolicy> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    policy_file::parse_team_policy(&file.display().to_string(), &text)
        .map_err(|errors| anyhow::anyhow!(policy_file::format_errors(&errors)))
}

/// One line per changed field: lists by entry, scalars by value.
pub fn diff(current: &AdminControls, wanted: &AdminControls) -> Vec<serde_json::Value> {
    let (a, b) = (
        serde_json::to_value(current).unwrap_or_default(),
        serde_json::to_value(wanted).unwrap_or_default(),
    );
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return Vec::new();
    };
    let mut changes = Vec::new();
    for (field, new) in b {
        let old = a.get(field).cloned().unwrap_or(serde_json::Value::Null);
        if &old == new {
            continue;
        }
        match (old.as_array(), new.as_array()) {
            (Some(old), Some(new)) => {
                for e in old.iter().filter(|e| !new.contains(e)) {
                    changes.push(json!({"field": field, "op": "remove", "value": e}));
                }
                for e in new.iter().filter(|e| !old.contains(e)) {
                    changes.push(json!({"field": field, "op": "add", "value": e}));
                }
                if changes.iter().all(|c| c["field"] != *field) {
                    changes.push(json!({"field": field, "op": "reorder", "value": new}));
                }
            }
            _ => changes.push(json!({"field": field, "op": "set", "from": old, "to": new})),
        }
    }
    changes
}

fn print_diff(team: &str, revision: u64, changes: &[serde_json::Value]) {
    if changes.is_empty() {
        println!("team {team} (revision {revision}): no changes");
        return;
    }
    println!("team {team} (revision {revision}):");
    for ch in changes {
        match ch["op"].as_str() {
            Some("add") => println!(
                "  + {}: {}",
                ch["field"].as_str().unwrap_or(""),
                ch["value"]
            ),
            Some("remove") => println!(
                "  - {}: {}",
                ch["field"].as_str().unwrap_or(""),
                ch["value"]
            ),
            Some("reorder") => println!(
                "  ~ {}: reordered to {}",
                ch["field"].as_str().unwrap_or(""),
                ch["value"]
            ),
            _ => println!(
                "  ~ {}: {} -> {}",
                ch["field"].as_str().unwrap_or(""),
                ch["from"],
                ch["to"]
            ),
        }
    }
}

pub(super) async fn admin(c: &Clients, cmd: AdminCommand) -> anyhow::Result<i32> {
    match cmd {
        AdminCommand::Get { team } => {
            let (controls, revision) = get_admin(c, &team).await?;
            let policy = TeamPolicy {
                team,
                // so that applying an edited copy fails if someone else wrote meanwhile
                revision: Some(revision),
                auto_run_controls: controls,
            };
            if c.json() {
                println!("{}", json!({"revision": revision, "policy": policy}));
            } else {
                print!("{}", policy_file::to_yaml(&policy));
            }
            Ok(0)
        }
        AdminCommand::Diff { file } => {
            let policy = read_policy(&file)?;
            let (current, revision) = get_admin(c, &policy.team).await?;
            let changes = diff(&current, &policy.auto_run_controls);
            if c.json() {
                println!(
                    "{}",
                    json!({"team": policy.team, "revision": revision, "changes": changes})
                );
            } else {
                print_diff(&policy.team, revision, &changes);
            }
            Ok(if changes.is_empty() {
                0
            } else {
                EXIT_DIFFERENT
            })
        }
        AdminCommand::Apply {
            file,
            dry_run,
            expected_revision,
        } => {
            let policy = read_policy(&file)?;
            let (current, revision) = get_admin(c, &policy.team).await?;
            let expected = expected_revision.or(policy.revision).unwrap_or(revision);
            let changes = diff(&current, &policy.auto_run_controls);
            let report = |applied: bool, revision: u64| {
                json!({"team": policy.team, "revision": revision, "expected_revision": expected,
                       "changes": changes, "applied": applied, "dry_run": dry_run})
            };
            if !c.json() {
                print_diff(&policy.team, revision, &changes);
            }
            if dry_run || changes.is_empty() {
                if c.json() {
                    println!("{}", report(false, revision));
                } else if dry_run {
                    println!("dry run: nothing applied");
                }
                return Ok(0);
            }
            let result = c
                .admin()
                .update_team_admin_settings(pb::UpdateTeamAdminSettingsRequest {
                    team_id: policy.team.clone(),
                    auto_run_controls: Some(controls_to_pb(&policy.auto_run_controls)),
                    expected_revision: Some(expected),
                })
                .await;
            match result {
                Ok(r) => {
                    let r = r.into_inner();
                    if c.json() {
                        println!("{}", report(true, r.revision));
                    } else {
                        println!(
                            "applied: team {} is at revision {}",
                            policy.team, r.revision
                        );
                    }
                    Ok(0)
                }
                Err(status) if status.code() == tonic::Code::Aborted => {
                    let message = format!(
                        "not applied: team {} changed since revision {expected} ({}): run `toolgate admin diff -f {}`, review, then apply again",
                        policy.team,
                        status.message(),
                        file.display()
                    );
                    if c.json() {
                        let mut r = report(false, revision);
                        r["error"] = json!(message);
                        println!("{r}");
                    }
                    eprintln!("{message}");
                    Ok(EXIT_CONFLICT)
                }
                Err(status) => Err(rpc_error(status)),
            }
        }
    }
}

pub(super) async fn kill_switch(c: &Clients, team: &str, on: bool) -> anyhow::Result<i32> {
    for _ in 0..5 {
        let (mut controls, revision) = get_admin(c, team).await?;
        if controls.kill_switch == on {
            if c.json() {
                println!(
                    "{}",
                    json!({"team": team, "kill_switch": on, "revision": revision, "changed": false})
                );
            } else {
                println!(
                    "kill switch of team {team} is already {}",
                    if on { "on" } else { "off" }
                );
            }
            return Ok(0);
        }
        controls.kill_switch = on;
        let r = c
            .admin()
            .update_team_admin_settings(pb::UpdateTeamAdminSettingsRequest {
                team_id: team.into(),
                auto_run_controls: Some(controls_to_pb(&controls)),
                expected_revision: Some(revision),
            })
            .await;
        match r {
            Ok(r) => {
                let r = r.into_inner();
                if c.json() {
                    println!(
                        "{}",
                        json!({"team": team, "kill_switch": on, "revision": r.revision, "changed": true})
                    );
                } else {
                    println!(
                        "kill switch of team {team} is {} (revision {})",
                        if on { "on" } else { "off" },
                        r.revision
                    );
                }
                return Ok(0);
            }
            // someone else wrote in between: read again and flip only the switch
            Err(s) if s.code() == tonic::Code::Aborted => continue,
            Err(s) => return Err(rpc_error(s)),
        }
    }
    bail!("the team's settings keep changing: try again")
}
