//! The impact report `admin diff` and `admin apply` print with `--impact`: the calls
//! of the decision log whose outcome the new policy changes, grouped.

use super::{DecisionRow, clip, parse_window, rfc3339, short};
use crate::cli::client::{Clients, rpc_error};
use crate::cli::output::Render;
use crate::grpc::convert::controls_to_pb;
use crate::policy::AdminControls;
use crate::proto::v1 as pb;
use serde::Serialize;
use std::fmt::Write as _;

/// Calls whose outcome changes, in one group.
#[derive(Debug, Serialize)]
pub struct ImpactGroupRow {
    pub from: String,
    pub to: String,
    /// `server:tool`, a command's first words or `delete_file`; absent for a total.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub key: String,
    pub count: u64,
    pub examples: Vec<ImpactExampleRow>,
}

#[derive(Debug, Serialize)]
pub struct ImpactExampleRow {
    #[serde(flatten)]
    pub record: DecisionRow,
    /// The reason under the proposed policy.
    pub new_reason: String,
    pub new_matched_entry: String,
}

/// What applying the file would change among the team's logged calls.
#[derive(Debug, Serialize)]
pub struct ImpactReport {
    pub window: String,
    pub window_start: String,
    pub window_end: String,
    pub decided: u64,
    pub unchanged: u64,
    pub changed: u64,
    /// Calls that cannot be decided again (their command was kept cut short).
    pub unknown: u64,
    /// Calls the proposal would allow whose programs' effects are unknown.
    #[serde(skip_serializing_if = "is_zero")]
    pub effects_unknown: u64,
    pub truncated: bool,
    /// Why the preview stopped early: `records` (the window held more than one
    /// preview decides) or `time` (it took too long); empty when it did not.
    pub cut_short: String,
    pub transitions: Vec<ImpactGroupRow>,
    pub groups: Vec<ImpactGroupRow>,
    /// A change to the organisation's group policies: each team it touches (the
    /// counts above are their sums).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub teams: Vec<TeamImpactRow>,
}

/// One team's part of an organisation-wide impact.
#[derive(Debug, Serialize)]
pub struct TeamImpactRow {
    pub team: String,
    pub revision: u64,
    #[serde(flatten)]
    pub impact: ImpactReport,
}

pub(super) fn is_zero(n: &u64) -> bool {
    *n == 0
}

pub(super) fn group_row(g: &pb::ImpactGroup) -> ImpactGroupRow {
    ImpactGroupRow {
        from: short(g.from().as_str_name(), "OUTCOME_"),
        to: short(g.to().as_str_name(), "OUTCOME_"),
        key: g.key.clone(),
        count: g.count,
        examples: g
            .examples
            .iter()
            .map(|e| ImpactExampleRow {
                record: DecisionRow::from(&e.record.clone().unwrap_or_default()),
                new_reason: short(e.new_reason().as_str_name(), "REASON_"),
                new_matched_entry: e.new_matched_entry.clone(),
            })
            .collect(),
    }
}

impl Render for ImpactReport {
    fn human(&self) -> String {
        let mut out = format!(
            "impact on the logged calls of the last {} ({} to {}):\n  {} decided again: {} change outcome, {} unchanged, {} unknown{}\n",
            self.window,
            self.window_start,
            self.window_end,
            self.decided,
            self.changed,
            self.unchanged,
            self.unknown,
            // why a call cannot be decided again, said only when one could not
            if self.unknown > 0 {
                " (command kept cut short, or a write tool whose files were not kept)"
            } else {
                ""
            }
        );
        if self.effects_unknown > 0 {
            let _ = writeln!(
                out,
                "  {} the file would allow rest on programs whose effects are unknown (what they run, write or delete is not checked)",
                self.effects_unknown
            );
        }
        match self.cut_short.as_str() {
            "records" => out.push_str("  cut short: the window holds more calls than one preview decides (decision_log.preview_max_records); only the newest were decided again\n"),
            "time" => out.push_str("  cut short: the preview ran out of time (decision_log.preview_max_ms); only the newest calls were decided again\n"),
            _ if self.truncated => {
                out.push_str("  cut short: only the newest calls of the window were decided again\n");
            }
            _ => {}
        }
        for t in &self.transitions {
            let _ = writeln!(out, "  {} -> {}: {}", t.from, t.to, t.count);
            for g in self
                .groups
                .iter()
                .filter(|g| (g.from.as_str(), g.to.as_str()) == (t.from.as_str(), t.to.as_str()))
            {
                let _ = writeln!(out, "    {:<32} {:>8}", clip(&g.key, 32), g.count);
                for e in &g.examples {
                    let who = &e.record.user;
                    let _ = writeln!(
                        out,
                        "      e.g. {} {}: {} (now {}{})",
                        e.record.at,
                        who,
                        clip(&e.record.call, 60),
                        e.new_reason,
                        if e.new_matched_entry.is_empty() {
                            String::new()
                        } else {
                            format!(", {}", e.new_matched_entry)
                        }
                    );
                }
            }
        }
        for t in &self.teams {
            let _ = writeln!(out, "  team {} (revision {}):", t.team, t.revision);
            for line in t.impact.human().lines().skip(1) {
                let _ = writeln!(out, "  {line}");
            }
        }
        out
    }
}

/// Decides the team's logged calls of `window` again under `proposed` (the server's
/// `PreviewTeamAdminSettings`).
pub(in crate::cli) async fn impact(
    c: &Clients,
    team: &str,
    proposed: &AdminControls,
    window: &str,
) -> anyhow::Result<ImpactReport> {
    let duration = parse_window(window)?;
    let r = c
        .decisions()
        .preview_team_admin_settings(pb::PreviewTeamAdminSettingsRequest {
            team_id: team.to_owned(),
            auto_run_controls: Some(controls_to_pb(proposed)),
            window_seconds: duration.as_secs().max(1),
            examples_per_group: 3,
        })
        .await
        .map_err(rpc_error)?
        .into_inner();
    Ok(impact_report(window, &r))
}

/// The server's impact preview as printed, with each team's for an
/// organisation-wide one.
fn impact_report(window: &str, r: &pb::PreviewTeamAdminSettingsResponse) -> ImpactReport {
    ImpactReport {
        window: window.to_owned(),
        window_start: rfc3339(r.window_start),
        window_end: rfc3339(r.window_end),
        decided: r.decided,
        unchanged: r.unchanged,
        changed: r.changed,
        unknown: r.unknown,
        effects_unknown: r.effects_unknown,
        truncated: r.truncated,
        cut_short: match r.cut_short() {
            pb::PreviewCutShort::Records => "records",
            pb::PreviewCutShort::Time => "time",
            pb::PreviewCutShort::Unspecified => "",
        }
        .into(),
        transitions: r.transitions.iter().map(group_row).collect(),
        groups: r.groups.iter().map(group_row).collect(),
        teams: r
            .teams
            .iter()
            .map(|t| {
                let team = t.impact.clone().unwrap_or_default();
                TeamImpactRow {
                    team: t.team_id.clone(),
                    revision: team.revision,
                    impact: impact_report(window, &team),
                }
            })
            .collect(),
    }
}
