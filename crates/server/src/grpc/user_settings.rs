//! `UserSettingsService`: a user's own settings, written whole or field by field, and
//! the allowlist's entries added and removed.

use super::convert::{user_from_pb, user_to_pb};
use super::{Api, principal};
use crate::proto::v1 as pb;
use crate::service::ServiceError;
use pb::user_settings_service_server::UserSettingsService;
use tonic::{Request, Response, Status};

#[tonic::async_trait]
impl UserSettingsService for Api {
    async fn get_user_settings(
        &self,
        req: Request<pb::GetUserSettingsRequest>,
    ) -> Result<Response<pb::GetUserSettingsResponse>, Status> {
        let p = principal(&req)?;
        let r = req.into_inner();
        // empty ids are the token's own, as for decisions
        let (team, user_id) = crate::service::own_subject(&p, &r.team_id, &r.user_id);
        let user = self.service.get_user(&p, team, user_id).await?;
        Ok(Response::new(pb::GetUserSettingsResponse {
            settings: Some(user_to_pb(team, user_id, &user.stored)),
        }))
    }

    async fn update_user_settings(
        &self,
        req: Request<pb::UpdateUserSettingsRequest>,
    ) -> Result<Response<pb::UpdateUserSettingsResponse>, Status> {
        let p = principal(&req)?;
        let r = req.into_inner();
        let settings = r.settings.ok_or_else(|| ServiceError::InvalidArgument {
            field: "settings".into(),
            message: "must be set: send the settings with their team_id and user_id (and update_mask to change only some fields)"
                .into(),
        })?;
        let (team, user) = (settings.team_id.clone(), settings.user_id.clone());
        if let Some(mask) = r.update_mask.filter(|m| !m.paths.is_empty()) {
            // empty ids are the token's own: a member changes a setting with no ids
            let (team, user) = crate::service::own_subject(&p, &team, &user);
            let (team, user) = (team.to_owned(), user.to_owned());
            let fields = toolgate_proto::convert::user_fields_from_mask(&mask)
                .map_err(ServiceError::from)?;
            let stored = self
                .service
                .update_user_fields(
                    &p,
                    &team,
                    &user,
                    &user_from_pb(settings),
                    &fields,
                    r.expected_revision,
                )
                .await?;
            return Ok(Response::new(pb::UpdateUserSettingsResponse {
                settings: Some(user_to_pb(&team, &user, &stored)),
            }));
        }
        let stored = self
            .service
            .update_user(
                &p,
                &team,
                &user,
                user_from_pb(settings),
                r.expected_revision,
            )
            .await?;
        Ok(Response::new(pb::UpdateUserSettingsResponse {
            settings: Some(user_to_pb(&team, &user, &stored)),
        }))
    }

    async fn add_to_allowlist(
        &self,
        req: Request<pb::AddToAllowlistRequest>,
    ) -> Result<Response<pb::AddToAllowlistResponse>, Status> {
        let p = principal(&req)?;
        let r = req.into_inner();
        let change = self
            .service
            .add_to_allowlist(&p, &r.team_id, &r.user_id, &r.server, &r.tool)
            .await?;
        Ok(Response::new(pb::AddToAllowlistResponse {
            settings: Some(user_to_pb(&r.team_id, &r.user_id, &change.settings)),
            changed: change.changed,
            detail: change.detail,
            note: change.note,
        }))
    }

    async fn remove_from_allowlist(
        &self,
        req: Request<pb::RemoveFromAllowlistRequest>,
    ) -> Result<Response<pb::RemoveFromAllowlistResponse>, Status> {
        let p = principal(&req)?;
        let r = req.into_inner();
        let change = self
            .service
            .remove_from_allowlist(&p, &r.team_id, &r.user_id, &r.entry)
            .await?;
        Ok(Response::new(pb::RemoveFromAllowlistResponse {
            settings: Some(user_to_pb(&r.team_id, &r.user_id, &change.settings)),
            changed: change.changed,
            detail: change.detail,
        }))
    }
}
