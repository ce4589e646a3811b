//! `admin get|diff|apply` and `kill-switch`: team admin settings as code.

pub(super) mod changes;
pub(super) mod documents;
pub(super) mod reports;
#[cfg(test)]
mod tests;

use super::args::AdminCommand;
use super::client::{Clients, rpc_error};
use super::{EXIT_CONFLICT, EXIT_DIFFERENT};
use crate::grpc::convert::controls_to_pb;
use crate::proto::v1 as pb;
use anyhow::bail;
pub use changes::{Change, diff};
use documents::{get_admin, read_policy};
use reports::{ApplyReport, DiffReport, KillSwitchReport, PolicyReport};
use toolgate_files::policy_file::TeamPolicy;

pub(super) async fn admin(c: &Clients, cmd: AdminCommand) -> anyhow::Result<i32> {
    if let Some(run) = super::group_doc::admin(c, &cmd).await {
        return run;
    }
    match cmd {
        AdminCommand::Get { team } => {
            let (controls, revision) = get_admin(c, &team).await?;
            c.out.print(&PolicyReport {
                revision,
                policy: TeamPolicy {
                    team,
                    // so that applying an edited copy fails if someone else wrote meanwhile
                    revision: Some(revision),
                    auto_run_controls: controls,
                    // kept in git, not on the server
                    examples: Vec::new(),
                },
            });
            Ok(0)
        }
        AdminCommand::Diff { file, impact } => {
            // a `kind: pins` document is the team's pins, read in its own module
            let text = super::admin_pins::read_text(&file)?;
            if super::admin_pins::is_pins_doc(&text) {
                return super::admin_pins::run(c, &file, &text, false, false).await;
            }
            let doc = read_policy(&file)?;
            let (current, revision) = get_admin(c, &doc.policy.team).await?;
            // what apply would refuse is refused here too; a reader, who may not ask,
            // and a team the policy file manages still get the diff
            if let Some(status) = doc.validate(c, None).await? {
                match status.code() {
                    tonic::Code::PermissionDenied | tonic::Code::Unimplemented => {}
                    _ => eprintln!("note: {}", status.message()),
                }
            }
            let policy = doc.policy;
            let impact = match impact {
                Some(window) => Some(
                    super::decisions::impact(c, &policy.team, &policy.auto_run_controls, &window)
                        .await?,
                ),
                None => None,
            };
            let report = DiffReport {
                changes: diff(&current, &policy.auto_run_controls),
                team: policy.team,
                revision,
                impact,
            };
            c.out.print(&report);
            Ok(if report.changes.is_empty() {
                0
            } else {
                EXIT_DIFFERENT
            })
        }
        AdminCommand::Apply {
            file,
            dry_run,
            expected_revision,
            impact,
            prune: _,
        } => {
            let text = super::admin_pins::read_text(&file)?;
            if super::admin_pins::is_pins_doc(&text) {
                return super::admin_pins::run(c, &file, &text, true, dry_run).await;
            }
            let doc = read_policy(&file)?;
            let (current, revision) = get_admin(c, &doc.policy.team).await?;
            let expected = expected_revision
                .or(doc.policy.revision)
                .unwrap_or(revision);
            if dry_run {
                // the server checks what only it knows (the team's categories, the
                // policy file, the caller's rights); a stale revision is reported below
                match doc.validate(c, None).await? {
                    Some(s) if s.code() == tonic::Code::Unimplemented => eprintln!(
                        "warning: the server cannot check a policy without applying it (an older server): only the file's own checks ran"
                    ),
                    Some(s) => return Err(rpc_error(s)),
                    None => {}
                }
            }
            let policy = &doc.policy;
            let impact = match impact {
                Some(window) => Some(
                    super::decisions::impact(c, &policy.team, &policy.auto_run_controls, &window)
                        .await?,
                ),
                None => None,
            };
            let mut report = ApplyReport {
                diff: DiffReport {
                    team: policy.team.clone(),
                    revision,
                    changes: diff(&current, &policy.auto_run_controls),
                    impact,
                },
                expected_revision: expected,
                applied: false,
                dry_run,
                error: None,
            };
            if dry_run || report.diff.changes.is_empty() {
                c.out.print(&report);
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
                    report.applied = true;
                    report.diff.revision = r.into_inner().settings.unwrap_or_default().revision;
                    c.out.print(&report);
                    Ok(0)
                }
                Err(status) if status.code() == tonic::Code::Aborted => {
                    // the hint names the revision to apply at, or applying again
                    // would fail the same way: the file still carries the old one
                    let now = get_admin(c, &policy.team).await.map_or_else(
                        |_| "the team's current revision".to_owned(),
                        |(_, r)| r.to_string(),
                    );
                    let file = file.display();
                    let retry = match (expected_revision, policy.revision) {
                        (Some(_), _) => format!(
                            "to apply it over the current settings, run `toolgate admin apply -f {file} --expected-revision {now}`"
                        ),
                        (None, Some(old)) => format!(
                            "to apply it over the current settings, change `revision: {old}` in {file} to `revision: {now}` (or run `toolgate admin apply -f {file} --expected-revision {now}`)"
                        ),
                        (None, None) => format!("then run `toolgate admin apply -f {file}` again"),
                    };
                    let message = format!(
                        "not applied: team {} changed since revision {expected} (it is at revision {now}): review the changes with `toolgate admin diff -f {file}`; {retry}",
                        policy.team,
                    );
                    report.error = Some(message.clone());
                    c.out.print(&report);
                    eprintln!("{message}");
                    Ok(EXIT_CONFLICT)
                }
                Err(status) if status.code() == tonic::Code::InvalidArgument => {
                    Err(doc.refusal(status))
                }
                Err(status) => Err(rpc_error(status)),
            }
        }
    }
}

pub(super) async fn kill_switch(c: &Clients, team: &str, on: bool) -> anyhow::Result<i32> {
    for _ in 0..5 {
        let (mut controls, revision) = get_admin(c, team).await?;
        let mut report = KillSwitchReport {
            team: team.to_owned(),
            kill_switch: on,
            revision,
            changed: false,
        };
        if controls.kill_switch == on {
            c.out.print(&report);
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
                report.revision = r.into_inner().settings.unwrap_or_default().revision;
                report.changed = true;
                c.out.print(&report);
                return Ok(0);
            }
            // someone else wrote in between: read again and flip only the switch
            Err(s) if s.code() == tonic::Code::Aborted => continue,
            Err(s) => return Err(rpc_error(s)),
        }
    }
    bail!("the team's settings keep changing: try again")
}
