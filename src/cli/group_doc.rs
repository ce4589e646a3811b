//! `kind: group` documents for `admin diff` and `admin apply`: the group policies of
//! one team (or, with `org: true`, the organisation's) as code. The document holds
//! the scope's group policies; applying it writes them with the revision read (or
//! the document's), and `--prune` deletes the scope's group policies it does not
//! name (without it they are kept, and named).

use super::admin::documents::get_admin;
use super::args::AdminCommand;
use super::client::{Clients, rpc_error};
use super::{EXIT_CONFLICT, EXIT_DIFFERENT};
use crate::auth::ORG_TEAM;
use crate::cli::admin::changes::{Change, diff};
use crate::cli::admin::reports::{ApplyReport, DiffReport};
use crate::grpc::convert::controls_to_pb;
use crate::policy::groups::{GroupControls, GroupPolicies, check_group_name};
use crate::policy::{AdminControls, CompiledAdmin};
use crate::proto::v1 as pb;
use anyhow::{Context, bail};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;
use toolgate_files::policy_file;

/// The kind a group document names.
pub const GROUP_KIND: &str = "group";

/// A `kind: group` document as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GroupDoc {
    #[allow(dead_code)] // read to dispatch; kept so `deny_unknown_fields` accepts it
    kind: String,
    #[serde(default)]
    team: Option<String>,
    #[serde(default)]
    org: bool,
    /// Apply only if the scope is still at this revision.
    #[serde(default)]
    revision: Option<u64>,
    groups: BTreeMap<String, GroupControls>,
}

/// A group document read and checked, with its text (to place refusals).
struct Read {
    name: String,
    text: String,
    doc: GroupDoc,
}

impl Read {
    /// The team id the scope's policies are kept under.
    fn team(&self) -> &str {
        self.doc.team.as_deref().unwrap_or(ORG_TEAM)
    }

    /// The server's refusal placed at the document's lines: its fields are the
    /// document's (`groups.contractors.denied[0]`), not the team document's.
    fn refusal(&self, status: tonic::Status) -> anyhow::Error {
        use tonic_types::StatusExt;
        let Some(bad) = status
            .get_details_bad_request()
            .filter(|b| !b.field_violations.is_empty())
        else {
            return rpc_error(status);
        };
        let lines: Vec<String> = bad
            .field_violations
            .iter()
            .map(|v| {
                let field = v
                    .field
                    .strip_prefix("auto_run_controls.")
                    .unwrap_or(&v.field);
                match policy_file::line_at(&self.text, field) {
                    Some(line) => format!("{}:{line}: {field}: {}", self.name, v.description),
                    None => format!("{}: {field}: {}", self.name, v.description),
                }
            })
            .collect();
        anyhow::anyhow!("the server refuses {}:\n{}", self.name, lines.join("\n"))
    }
}

/// `admin diff` and `admin apply` of a `kind: group` document; None for any other
/// document (the team's policy), which the caller reads as before.
pub(super) async fn admin(c: &Clients, cmd: &AdminCommand) -> Option<anyhow::Result<i32>> {
    let (file, apply) = match cmd {
        AdminCommand::Diff { file, impact } => {
            let read = match read_if_group(file) {
                Ok(Some(read)) => read,
                Ok(None) => return None,
                Err(e) => return Some(Err(e)),
            };
            return Some(diff_or_apply(c, file, read, None, impact.as_deref()).await);
        }
        AdminCommand::Apply {
            file,
            dry_run,
            expected_revision,
            impact,
            prune,
        } => (
            file,
            Apply {
                dry_run: *dry_run,
                expected_revision: *expected_revision,
                prune: *prune,
                impact: impact.clone(),
            },
        ),
        AdminCommand::Get { .. } => return None,
    };
    let read = match read_if_group(file) {
        Ok(Some(read)) => read,
        Ok(None) => return None,
        Err(e) => return Some(Err(e)),
    };
    let impact = apply.impact.clone();
    Some(diff_or_apply(c, file, read, Some(apply), impact.as_deref()).await)
}

/// What `admin apply` was asked.
struct Apply {
    dry_run: bool,
    expected_revision: Option<u64>,
    prune: bool,
    /// `--impact WINDOW`.
    impact: Option<String>,
}

/// The document at `file` when it says `kind: group`, read and checked; None when it
/// names no kind (a team's policy).
fn read_if_group(file: &Path) -> anyhow::Result<Option<Read>> {
    let name = file.display().to_string();
    let text = policy_file::read_file(file).with_context(|| format!("reading {name}"))?;
    // the kind first: a team's policy file has none
    let kind = serde_norway::from_str::<serde_norway::Value>(&text)
        .ok()
        .and_then(|v| v.get("kind").and_then(|k| k.as_str()).map(str::to_owned));
    if kind.as_deref() != Some(GROUP_KIND) {
        return Ok(None);
    }
    let doc: GroupDoc = serde_norway::from_str(&text).map_err(|e| {
        anyhow::anyhow!(
            "{name}: {e}: a `kind: group` document has the keys kind, team (or org: true), revision and groups, and each group the keys of a group policy (docs/groups.md)"
        )
    })?;
    let mut problems = Vec::new();
    match (&doc.team, doc.org) {
        (Some(_), true) | (None, false) => problems.push(format!(
            "{name}: give the scope once: `team: NAME` for a team's group policies, or `org: true` for the organisation's"
        )),
        (Some(team), false) => {
            if let Err(e) = crate::ids::check_id("team", team) {
                problems.push(format!("{name}: {e}"));
            } else if crate::auth::is_reserved_team(team) {
                problems.push(format!(
                    "{name}: team: {team:?} is reserved: write `org: true` for the organisation's group policies"
                ));
            }
        }
        (None, true) => {}
    }
    for group in doc.groups.keys() {
        if let Err(hint) = check_group_name(group) {
            let at = policy_file::line_at(&text, &format!("groups.{group}"))
                .map_or_else(String::new, |l| format!(":{l}"));
            problems.push(format!("{name}{at}: groups: {hint}"));
        }
    }
    if !problems.is_empty() {
        bail!(problems.join("\n"));
    }
    Ok(Some(Read { name, text, doc }))
}

/// The organisation's group policies in the `kind: group` document at `file` (with
/// `org: true`), each checked as the server checks them: for `toolgate test --org`.
pub(super) fn read_org_groups(file: &Path) -> anyhow::Result<GroupPolicies> {
    let name = file.display().to_string();
    let Some(read) = read_if_group(file)? else {
        bail!(
            "{name} is not a `kind: group` document: give the organisation's group policies as `admin apply` takes them (kind: group, org: true, groups)"
        );
    };
    if !read.doc.org {
        bail!(
            "{name} holds team {}'s group policies: give the organisation's (`org: true`); a team's belong in its policy under `groups`",
            read.team()
        );
    }
    let groups = read.doc.groups;
    let alone = AdminControls {
        groups: Box::new(groups.clone()),
        ..AdminControls::default()
    };
    if let Err(e) = CompiledAdmin::compile(&alone) {
        bail!("{name}: {e}: fix the group policy it names");
    }
    Ok(groups)
}

/// What the document changes in the scope's group policies: each group's fields, a
/// group added whole, and (with `prune`) a group removed whole; the groups the
/// document leaves out and keeps.
fn changes(
    current: &BTreeMap<String, GroupControls>,
    wanted: &BTreeMap<String, GroupControls>,
    prune: bool,
) -> (Vec<Change>, Vec<String>) {
    let mut out = Vec::new();
    let mut kept = Vec::new();
    for (name, policy) in wanted {
        match current.get(name) {
            Some(now) => out.extend(diff(now, policy).into_iter().map(|c| prefixed(name, c))),
            None => out.push(Change::Add {
                field: "groups".into(),
                value: serde_json::json!({ name: policy }),
            }),
        }
    }
    for name in current.keys().filter(|n| !wanted.contains_key(*n)) {
        if prune {
            out.push(Change::Remove {
                field: "groups".into(),
                value: serde_json::Value::from(name.clone()),
            });
        } else {
            kept.push(name.clone());
        }
    }
    (out, kept)
}

fn prefixed(group: &str, change: Change) -> Change {
    let at = |field: String| format!("groups.{group}.{field}");
    match change {
        Change::Add { field, value } => Change::Add {
            field: at(field),
            value,
        },
        Change::Remove { field, value } => Change::Remove {
            field: at(field),
            value,
        },
        Change::Reorder { field, value } => Change::Reorder {
            field: at(field),
            value,
        },
        Change::Set { field, from, to } => Change::Set {
            field: at(field),
            from,
            to,
        },
    }
}

async fn diff_or_apply(
    c: &Clients,
    file: &Path,
    read: Read,
    apply: Option<Apply>,
    impact: Option<&str>,
) -> anyhow::Result<i32> {
    let team = read.team().to_owned();
    let (current, revision) = get_admin(c, &team)
        .await
        .with_context(|| format!("{}: reading the group policies of {team}", read.name))?;
    let prune = apply.as_ref().is_some_and(|a| a.prune);
    let (changes, kept) = changes(&current.groups, &read.doc.groups, prune);
    if !kept.is_empty() {
        let scope = if read.doc.org {
            "the organisation".to_owned()
        } else {
            format!("team {team}")
        };
        eprintln!(
            "note: {} of {scope} not in {}, kept: `admin apply --prune` deletes them",
            kept.join(", "),
            read.name
        );
    }
    // the document's policies over the scope's, the groups it leaves out kept unless pruned
    let mut controls = current;
    if prune {
        controls.groups.clear();
    }
    controls.groups.extend(read.doc.groups.clone());
    // what apply would refuse is refused by diff too; a reader, who may not ask,
    // still gets the diff
    let checked = c
        .admin()
        .validate_team_admin_settings(pb::ValidateTeamAdminSettingsRequest {
            team_id: team.clone(),
            auto_run_controls: Some(controls_to_pb(&controls)),
            expected_revision: None,
        })
        .await;
    match checked {
        Err(s) if s.code() == tonic::Code::InvalidArgument => return Err(read.refusal(s)),
        Err(s) if apply.as_ref().is_some_and(|a| a.dry_run) => {
            return Err(rpc_error(s)).with_context(|| read.name.clone());
        }
        _ => {}
    }
    // the organisation's document previews against every team it touches
    let impact = match impact {
        Some(window) => Some(
            super::decisions::impact(c, &team, &controls, window)
                .await
                .with_context(|| format!("{}: the impact preview", read.name))?,
        ),
        None => None,
    };
    let diff = DiffReport {
        team: team.clone(),
        revision,
        changes,
        impact,
    };
    let Some(apply) = apply else {
        let code = if diff.changes.is_empty() {
            0
        } else {
            EXIT_DIFFERENT
        };
        c.out.print(&diff);
        return Ok(code);
    };
    let expected = apply
        .expected_revision
        .or(read.doc.revision)
        .unwrap_or(revision);
    let mut report = ApplyReport {
        diff,
        expected_revision: expected,
        applied: false,
        dry_run: apply.dry_run,
        error: None,
    };
    if apply.dry_run || report.diff.changes.is_empty() {
        c.out.print(&report);
        return Ok(0);
    }
    let written = c
        .admin()
        .update_team_admin_settings(pb::UpdateTeamAdminSettingsRequest {
            team_id: team.clone(),
            auto_run_controls: Some(controls_to_pb(&controls)),
            expected_revision: Some(expected),
        })
        .await;
    match written {
        Ok(r) => {
            report.applied = true;
            report.diff.revision = r.into_inner().settings.unwrap_or_default().revision;
            c.out.print(&report);
            Ok(0)
        }
        Err(status) if status.code() == tonic::Code::Aborted => {
            let file = file.display();
            let message = format!(
                "not applied: {team} changed since revision {expected}: review the changes with `toolgate admin diff -f {file}`, then apply again (with `revision:` in {file} or `--expected-revision` set to the revision it shows)"
            );
            report.error = Some(message.clone());
            c.out.print(&report);
            eprintln!("{message}");
            Ok(EXIT_CONFLICT)
        }
        Err(status) if status.code() == tonic::Code::InvalidArgument => Err(read.refusal(status)),
        Err(status) => Err(rpc_error(status)).with_context(|| read.name.clone()),
    }
}
