//! `admin get|diff|apply` and `kill-switch`: team admin settings as code.

use super::args::AdminCommand;
use super::client::{Clients, rpc_error};
use super::output::Render;
use super::{EXIT_CONFLICT, EXIT_DIFFERENT};
use crate::grpc::convert::{controls_from_pb, controls_to_pb};
use crate::policy::AdminControls;
use crate::policy_file::{self, TeamPolicy};
use crate::proto::v1 as pb;
use anyhow::{Context as _, bail};
use serde::Serialize;
use serde_json::Value;

pub(super) async fn get_admin(c: &Clients, team: &str) -> anyhow::Result<(AdminControls, u64)> {
    let s = c
        .admin()
        .get_team_admin_settings(pb::GetTeamAdminSettingsRequest {
            team_id: team.into(),
        })
        .await
        .map_err(rpc_error)?
        .into_inner()
        .settings
        .unwrap_or_default();
    let controls = controls_from_pb(s.auto_run_controls.unwrap_or_default())
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok((controls, s.revision))
}

/// A team policy file as read: its text (to place the server's refusals) and policy.
struct PolicyDoc {
    name: String,
    text: String,
    policy: TeamPolicy,
}

fn read_policy(file: &std::path::Path) -> anyhow::Result<PolicyDoc> {
    let text =
        policy_file::read_file(file).with_context(|| format!("reading {}", file.display()))?;
    let name = file.display().to_string();
    let policy = policy_file::parse_team_policy(&name, &text)
        .map_err(|errors| anyhow::anyhow!(policy_file::format_errors(&errors)))?;
    // valid, but maybe not what the admin means: said, not refused
    for warning in policy_file::team_policy_warnings(&name, &text, &policy) {
        eprintln!("warning: {warning}");
    }
    Ok(PolicyDoc { name, text, policy })
}

impl PolicyDoc {
    /// The server's refusal of this file, each field it names placed at its line
    /// (`team.yaml:7: auto_run_controls.mcp_tool_allowlist[1]: …`).
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
            .map(|v| match policy_file::line_at(&self.text, &v.field) {
                Some(line) => format!("{}:{line}: {}: {}", self.name, v.field, v.description),
                None => format!("{}: {}: {}", self.name, v.field, v.description),
            })
            .collect();
        anyhow::anyhow!("the server refuses {}:\n{}", self.name, lines.join("\n"))
    }

    /// Asks the server to check the file as `apply` would, writing nothing. `Ok(None)`:
    /// it may not be asked (a reader's `diff`, or a server without the check).
    async fn validate(
        &self,
        c: &Clients,
        expected: Option<u64>,
    ) -> anyhow::Result<Option<tonic::Status>> {
        let answer = c
            .admin()
            .validate_team_admin_settings(pb::ValidateTeamAdminSettingsRequest {
                team_id: self.policy.team.clone(),
                auto_run_controls: Some(controls_to_pb(&self.policy.auto_run_controls)),
                expected_revision: expected,
            })
            .await;
        match answer {
            Ok(_) => Ok(None),
            Err(status) if status.code() == tonic::Code::InvalidArgument => {
                Err(self.refusal(status))
            }
            Err(status) => Ok(Some(status)),
        }
    }
}

/// One change to one field of the admin controls.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Change {
    /// An entry added to a list.
    Add { field: String, value: Value },
    /// An entry removed from a list.
    Remove { field: String, value: Value },
    /// The same entries in another order (order matters: the first match wins).
    Reorder { field: String, value: Value },
    /// A scalar (or a list replacing a non-list) set to a new value.
    Set {
        field: String,
        from: Value,
        to: Value,
    },
}

impl Change {
    /// The field the change is to.
    pub(super) fn field(&self) -> &str {
        match self {
            Self::Add { field, .. }
            | Self::Remove { field, .. }
            | Self::Reorder { field, .. }
            | Self::Set { field, .. } => field,
        }
    }

    pub(super) fn line(&self) -> String {
        match self {
            Self::Add { field, value } => format!("  + {field}: {value}"),
            Self::Remove { field, value } => format!("  - {field}: {value}"),
            Self::Reorder { field, value } => format!("  ~ {field}: reordered to {value}"),
            Self::Set { field, from, to } => format!("  ~ {field}: {from} -> {to}"),
        }
    }
}

/// What applying `wanted` over `current` changes: lists by entry, scalars by value.
pub fn diff<T: Serialize>(current: &T, wanted: &T) -> Vec<Change> {
    let (a, b) = (
        serde_json::to_value(current).unwrap_or_default(),
        serde_json::to_value(wanted).unwrap_or_default(),
    );
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return Vec::new();
    };
    let mut changes = Vec::new();
    // a list left out when empty (`denied`) is an empty list on either side
    let fields = b.keys().chain(a.keys().filter(|k| !b.contains_key(*k)));
    for field in fields {
        let get = |side: &serde_json::Map<String, Value>,
                   other: &serde_json::Map<String, Value>| {
            match (side.get(field), other.get(field)) {
                (Some(v), _) => v.clone(),
                (None, Some(Value::Array(_))) => Value::Array(Vec::new()),
                (None, _) => Value::Null,
            }
        };
        let (old, new) = (get(a, b), get(b, a));
        if old == new {
            continue;
        }
        let new = &new;
        let field = field.clone();
        match (old.as_array(), new.as_array()) {
            (Some(old), Some(new)) => {
                let before = changes.len();
                for e in old.iter().filter(|e| !new.contains(e)) {
                    changes.push(Change::Remove {
                        field: field.clone(),
                        value: e.clone(),
                    });
                }
                for e in new.iter().filter(|e| !old.contains(e)) {
                    changes.push(Change::Add {
                        field: field.clone(),
                        value: e.clone(),
                    });
                }
                if changes.len() == before {
                    changes.push(Change::Reorder {
                        field,
                        value: Value::from(new.clone()),
                    });
                }
            }
            _ => changes.push(Change::Set {
                field,
                from: old,
                to: new.clone(),
            }),
        }
    }
    changes
}

/// `admin diff`: the team's revision and what the file would change.
#[derive(Debug, Serialize)]
pub struct DiffReport {
    pub team: String,
    pub revision: u64,
    pub changes: Vec<Change>,
    /// With `--impact`: the logged calls whose outcome the file would change.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub impact: Option<super::decisions::ImpactReport>,
}

impl Render for DiffReport {
    fn human(&self) -> String {
        let (team, revision) = (&self.team, self.revision);
        let mut out = if self.changes.is_empty() {
            format!("team {team} (revision {revision}): no changes\n")
        } else {
            format!("team {team} (revision {revision}):\n")
        };
        for change in &self.changes {
            out.push_str(&change.line());
            out.push('\n');
        }
        if let Some(impact) = &self.impact {
            out.push_str(&impact.human());
        }
        out
    }
}

/// `admin apply`: the diff and what became of it.
#[derive(Debug, Serialize)]
pub struct ApplyReport {
    #[serde(flatten)]
    pub diff: DiffReport,
    pub expected_revision: u64,
    pub applied: bool,
    pub dry_run: bool,
    /// Why nothing was applied, when someone else wrote first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Render for ApplyReport {
    fn human(&self) -> String {
        let mut out = self.diff.human();
        if self.applied {
            out.push_str(&format!(
                "applied: team {} is at revision {}\n",
                self.diff.team, self.diff.revision
            ));
        } else if self.dry_run {
            out.push_str("dry run: nothing applied\n");
        }
        out
    }
}

/// `admin get`: the team's policy file, with the revision it was read at.
#[derive(Debug, Serialize)]
pub struct PolicyReport {
    pub revision: u64,
    pub policy: TeamPolicy,
}

impl Render for PolicyReport {
    fn human(&self) -> String {
        policy_file::to_yaml(&self.policy)
    }
}

/// `kill-switch on|off`: where the switch stands.
#[derive(Debug, Serialize)]
pub struct KillSwitchReport {
    pub team: String,
    pub kill_switch: bool,
    pub revision: u64,
    pub changed: bool,
}

impl Render for KillSwitchReport {
    fn human(&self) -> String {
        let state = if self.kill_switch { "on" } else { "off" };
        if self.changed {
            format!(
                "kill switch of team {} is {state} (revision {})\n",
                self.team, self.revision
            )
        } else {
            format!("kill switch of team {} is already {state}\n", self.team)
        }
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Output, Printer};
    use serde_json::json;

    fn controls(allow: &[&str], kill_switch: bool) -> AdminControls {
        AdminControls {
            enabled: true,
            kill_switch,
            mcp_tool_allowlist: allow.iter().map(|s| (*s).to_owned()).collect(),
            ..AdminControls::default()
        }
    }

    #[test]
    fn diff_lists_entries_added_and_removed_and_scalars_set() {
        let changes = diff(
            &controls(&["a:x", "b:y"], false),
            &controls(&["b:y", "c:z"], true),
        );
        let field = "mcp_tool_allowlist".to_owned();
        assert!(changes.contains(&Change::Remove {
            field: field.clone(),
            value: json!("a:x"),
        }));
        assert!(changes.contains(&Change::Add {
            field,
            value: json!("c:z"),
        }));
        assert!(changes.contains(&Change::Set {
            field: "kill_switch".into(),
            from: json!(false),
            to: json!(true),
        }));
        assert_eq!(changes.len(), 3, "{changes:?}");
    }

    #[test]
    fn diff_lists_denied_prefixes_added_and_all_removed() {
        let none = controls(&["ls"], false);
        let mut some = none.clone();
        some.denied = vec!["terraform destroy".into()];
        let added = diff(&none, &some);
        assert_eq!(added.len(), 1, "{added:?}");
        assert_eq!(added[0].line(), diff(&none, &some)[0].line());
        assert!(added[0].line().contains("denied"), "{}", added[0].line());
        let removed = diff(&some, &none);
        assert_eq!(removed.len(), 1, "{removed:?}");
        assert!(removed[0].line().contains("terraform destroy"));
    }

    #[test]
    fn diff_reports_a_reorder_and_nothing_for_equal_controls() {
        let (ab, ba) = (
            controls(&["a:x", "b:y"], false),
            controls(&["b:y", "a:x"], false),
        );
        assert_eq!(diff(&ab, &ab), []);
        assert_eq!(
            diff(&ab, &ba),
            [Change::Reorder {
                field: "mcp_tool_allowlist".into(),
                value: json!(["b:y", "a:x"]),
            }]
        );
    }

    fn apply_report(applied: bool, dry_run: bool) -> ApplyReport {
        ApplyReport {
            diff: DiffReport {
                team: "acme".into(),
                revision: 2,
                changes: vec![Change::Add {
                    field: "mcp_tool_allowlist".into(),
                    value: json!("jira:*"),
                }],
                impact: None,
            },
            expected_revision: 1,
            applied,
            dry_run,
            error: None,
        }
    }

    #[test]
    fn apply_renders_the_diff_then_its_fate() {
        let human = Printer(Output::Human);
        assert_eq!(
            human.render(&apply_report(true, false)),
            "team acme (revision 2):\n  + mcp_tool_allowlist: \"jira:*\"\napplied: team acme is at revision 2\n"
        );
        assert!(
            human
                .render(&apply_report(false, true))
                .ends_with("dry run: nothing applied\n")
        );
        let json: Value =
            serde_json::from_str(&Printer(Output::Json).render(&apply_report(false, true)))
                .unwrap();
        assert_eq!(
            json,
            json!({"team": "acme", "revision": 2, "expected_revision": 1, "applied": false,
                   "dry_run": true,
                   "changes": [{"op": "add", "field": "mcp_tool_allowlist", "value": "jira:*"}]})
        );
    }

    #[test]
    fn no_changes_reads_as_one_line() {
        let report = DiffReport {
            team: "acme".into(),
            revision: 0,
            changes: Vec::new(),
            impact: None,
        };
        assert_eq!(report.human(), "team acme (revision 0): no changes\n");
    }

    #[test]
    fn kill_switch_says_whether_it_moved() {
        let mut report = KillSwitchReport {
            team: "acme".into(),
            kill_switch: true,
            revision: 3,
            changed: true,
        };
        assert_eq!(
            report.human(),
            "kill switch of team acme is on (revision 3)\n"
        );
        report.changed = false;
        assert_eq!(report.human(), "kill switch of team acme is already on\n");
    }
}
