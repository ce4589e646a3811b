//! `AdminService`: a team's admin controls read, written and validated, and the audit
//! trail listed.

use super::convert::{self, admin_to_pb, audit_kind_from_pb, audit_to_pb, controls_from_pb};
use super::{Api, principal};
use crate::proto::v1 as pb;
use crate::service::{AuditFilter, ServiceError};
use pb::admin_service_server::AdminService;
use tonic::{Request, Response, Status};

#[tonic::async_trait]
impl AdminService for Api {
    async fn get_team_admin_settings(
        &self,
        req: Request<pb::GetTeamAdminSettingsRequest>,
    ) -> Result<Response<pb::GetTeamAdminSettingsResponse>, Status> {
        let p = principal(&req)?;
        let team = req.into_inner().team_id;
        let admin = self.service.get_admin(&p, &team).await?;
        Ok(Response::new(pb::GetTeamAdminSettingsResponse {
            settings: Some(admin_to_pb(&team, &admin.stored())),
            managed_by: self.service.managed_by(&team).unwrap_or_default(),
        }))
    }

    async fn update_team_admin_settings(
        &self,
        req: Request<pb::UpdateTeamAdminSettingsRequest>,
    ) -> Result<Response<pb::UpdateTeamAdminSettingsResponse>, Status> {
        let p = principal(&req)?;
        let r = req.into_inner();
        let controls = r
            .auto_run_controls
            .ok_or_else(|| ServiceError::InvalidArgument {
                field: "auto_run_controls".into(),
                message: "must be set: send the complete controls (they replace the current ones)"
                    .into(),
            })?;
        let controls = controls_from_pb(controls).map_err(ServiceError::from)?;
        let warnings = warnings_to_pb(&controls);
        let stored = self
            .service
            .update_admin(&p, &r.team_id, controls, r.expected_revision)
            .await?;
        Ok(Response::new(pb::UpdateTeamAdminSettingsResponse {
            settings: Some(admin_to_pb(&r.team_id, &stored)),
            warnings,
        }))
    }

    async fn validate_team_admin_settings(
        &self,
        req: Request<pb::ValidateTeamAdminSettingsRequest>,
    ) -> Result<Response<pb::ValidateTeamAdminSettingsResponse>, Status> {
        let p = principal(&req)?;
        let r = req.into_inner();
        let controls = r
            .auto_run_controls
            .ok_or_else(|| ServiceError::InvalidArgument {
                field: "auto_run_controls".into(),
                message: "must be set: send the complete controls to check".into(),
            })?;
        let controls = controls_from_pb(controls).map_err(ServiceError::from)?;
        let current = self
            .service
            .validate_admin(&p, &r.team_id, &controls, r.expected_revision)
            .await?;
        Ok(Response::new(pb::ValidateTeamAdminSettingsResponse {
            settings: Some(admin_to_pb(&r.team_id, &current)),
            warnings: warnings_to_pb(&controls),
        }))
    }

    async fn list_audit_events(
        &self,
        req: Request<pb::ListAuditEventsRequest>,
    ) -> Result<Response<pb::ListAuditEventsResponse>, Status> {
        let p = principal(&req)?;
        let r = req.into_inner();
        let non_empty = |s: String| (!s.is_empty()).then_some(s);
        let filter = AuditFilter {
            team_id: non_empty(r.team_id),
            after_id: r.after_id,
            limit: r.limit,
            kind: audit_kind_from_pb(r.kind).map_err(ServiceError::from)?,
            actor: non_empty(r.actor),
            since_ms: r
                .since
                .map(|t| convert::timestamp_ms("since", &t))
                .transpose()
                .map_err(ServiceError::from)?,
        };
        let events = self.service.list_audit(&p, filter).await?;
        let next_after_id = events.last().map_or(0, |e| e.id);
        Ok(Response::new(pb::ListAuditEventsResponse {
            events: events.into_iter().map(audit_to_pb).collect(),
            next_after_id,
        }))
    }
}

/// The policy's warnings about admin controls (what `admin apply` prints), for the
/// console and other clients of the API.
fn warnings_to_pb(controls: &crate::policy::AdminControls) -> Vec<pb::PolicyWarning> {
    crate::policy::warnings(controls)
        .into_iter()
        .map(|w| pb::PolicyWarning {
            field: format!("auto_run_controls.{}", w.field),
            message: w.message,
        })
        .collect()
}
