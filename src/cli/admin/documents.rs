//! The team's admin settings as the server has them, and a team policy file as read
//! (with the server's refusals placed at its lines).

use crate::cli::client::{Clients, rpc_error};
use crate::grpc::convert::{controls_from_pb, controls_to_pb};
use crate::policy::AdminControls;
use crate::proto::v1 as pb;
use anyhow::Context as _;
use toolgate_files::policy_file::{self, TeamPolicy};

pub(in crate::cli) async fn get_admin(
    c: &Clients,
    team: &str,
) -> anyhow::Result<(AdminControls, u64)> {
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
pub(super) struct PolicyDoc {
    pub(super) name: String,
    pub(super) text: String,
    pub(super) policy: TeamPolicy,
}

pub(super) fn read_policy(file: &std::path::Path) -> anyhow::Result<PolicyDoc> {
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
    pub(super) fn refusal(&self, status: tonic::Status) -> anyhow::Error {
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
    pub(super) async fn validate(
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
