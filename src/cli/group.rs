//! `toolgate group`: a team's (or, with `--org`, the organisation's) group policies
//! listed, shown, written from a YAML or JSON file, and deleted, each a
//! read-modify-write of the policy document with the revision read (docs/groups.md).

use super::admin::documents::get_admin;
use super::args::{GroupCommand, GroupScope};
use super::client::{Clients, rpc_error};
use super::output::Render;
use crate::grpc::convert::controls_to_pb;
use crate::policy::groups::{GroupControls, check_group_name};
use crate::proto::v1 as pb;
use anyhow::{Context, bail};
use serde::Serialize;
use std::collections::BTreeMap;

/// The largest group policy file read, in bytes.
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

#[derive(Serialize)]
struct GroupList {
    team: String,
    revision: u64,
    groups: BTreeMap<String, GroupControls>,
    #[serde(skip)]
    label: String,
}

impl Render for GroupList {
    fn human(&self) -> String {
        if self.groups.is_empty() {
            return format!(
                "{} has no group policies (revision {})\n",
                self.label, self.revision
            );
        }
        let mut out = format!("{} (revision {}):\n", self.label, self.revision);
        for name in self.groups.keys() {
            out.push_str(&format!("  {name}\n"));
        }
        out
    }
}

#[derive(Serialize)]
struct GroupShown {
    team: String,
    group: String,
    revision: u64,
    policy: GroupControls,
    #[serde(skip)]
    label: String,
}

impl Render for GroupShown {
    fn human(&self) -> String {
        let yaml = serde_norway::to_string(&self.policy).unwrap_or_default();
        format!(
            "group {} of {} (revision {}):\n{yaml}",
            self.group, self.label, self.revision
        )
    }
}

#[derive(Serialize)]
struct GroupWritten {
    team: String,
    group: String,
    revision: u64,
    deleted: bool,
    #[serde(skip)]
    label: String,
}

impl Render for GroupWritten {
    fn human(&self) -> String {
        let what = if self.deleted { "deleted" } else { "written" };
        format!(
            "group policy {} of {} {what} (revision {})\n",
            self.group, self.label, self.revision
        )
    }
}

pub(super) async fn group(c: &Clients, cmd: GroupCommand) -> anyhow::Result<i32> {
    match cmd {
        GroupCommand::List { scope } => {
            let (controls, revision) = get_admin(c, scope.team_id()).await?;
            c.out.print(&GroupList {
                team: scope.team_id().to_owned(),
                revision,
                groups: *controls.groups,
                label: scope.label(),
            });
        }
        GroupCommand::Show { scope, group } => {
            let (mut controls, revision) = get_admin(c, scope.team_id()).await?;
            let Some(policy) = controls.groups.remove(&group) else {
                bail!(
                    "{} has no policy for group {group}: `toolgate group list {}` lists them",
                    scope.label(),
                    scope.flags()
                );
            };
            c.out.print(&GroupShown {
                team: scope.team_id().to_owned(),
                group,
                revision,
                policy,
                label: scope.label(),
            });
        }
        GroupCommand::Set { scope, group, file } => {
            check_group_name(&group).map_err(|e| super::usage(format!("GROUP: {e}")))?;
            let policy = read_policy(&file)?;
            let revision = write(c, &scope, |groups| {
                groups.insert(group.clone(), policy.clone());
                true
            })
            .await?;
            c.out.print(&GroupWritten {
                team: scope.team_id().to_owned(),
                group,
                revision,
                deleted: false,
                label: scope.label(),
            });
        }
        GroupCommand::Delete { scope, group } => {
            let revision = write(c, &scope, |groups| groups.remove(&group).is_some()).await?;
            c.out.print(&GroupWritten {
                team: scope.team_id().to_owned(),
                group,
                revision,
                deleted: true,
                label: scope.label(),
            });
        }
    }
    Ok(0)
}

/// A group policy from a YAML (or JSON) file, its unknown keys refused by name.
fn read_policy(file: &std::path::Path) -> anyhow::Result<GroupControls> {
    let len = std::fs::metadata(file)
        .with_context(|| format!("--file {}", file.display()))?
        .len();
    if len > MAX_FILE_BYTES {
        bail!(
            "--file {}: {len} bytes is more than the limit of {MAX_FILE_BYTES}: a group policy is a few lists",
            file.display()
        );
    }
    let text =
        std::fs::read_to_string(file).with_context(|| format!("--file {}", file.display()))?;
    serde_norway::from_str(&text).map_err(|e| {
        anyhow::anyhow!(
            "--file {}: {e}: write the keys of a group policy (docs/groups.md lists them)",
            file.display()
        )
    })
}

/// Changes the team's group policies with `edit` (false: nothing to change) and
/// writes them with the revision read, again if another write came in between; the
/// revision in force.
async fn write(
    c: &Clients,
    scope: &GroupScope,
    mut edit: impl FnMut(&mut BTreeMap<String, GroupControls>) -> bool,
) -> anyhow::Result<u64> {
    let team = scope.team_id();
    for _ in 0..5 {
        let (mut controls, revision) = get_admin(c, team).await?;
        if !edit(&mut controls.groups) {
            bail!(
                "{} has no such group policy: `toolgate group list {}` lists them",
                scope.label(),
                scope.flags()
            );
        }
        let r = c
            .admin()
            .update_team_admin_settings(pb::UpdateTeamAdminSettingsRequest {
                team_id: team.into(),
                auto_run_controls: Some(controls_to_pb(&controls)),
                expected_revision: Some(revision),
            })
            .await;
        match r {
            Ok(r) => return Ok(r.into_inner().settings.unwrap_or_default().revision),
            // someone else wrote in between: read again and apply only this change
            Err(s) if s.code() == tonic::Code::Aborted => continue,
            Err(s) => return Err(rpc_error(s)),
        }
    }
    bail!("the team's settings keep changing: try again")
}
