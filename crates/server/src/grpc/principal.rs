//! `PrincipalService`: who the caller is, and the teams it may read.

use super::{Api, principal};
use crate::auth::Role;
use crate::proto::v1 as pb;
use pb::principal_service_server::PrincipalService;
use tonic::{Request, Response, Status};

pub use pb::principal_service_server::PrincipalServiceServer;

fn role_to_pb(role: Role) -> pb::PrincipalRole {
    match role {
        Role::Member => pb::PrincipalRole::Member,
        Role::Admin => pb::PrincipalRole::Admin,
        Role::Service => pb::PrincipalRole::Service,
        Role::Operator => pb::PrincipalRole::Operator,
    }
}

#[tonic::async_trait]
impl PrincipalService for Api {
    async fn get_principal(
        &self,
        req: Request<pb::GetPrincipalRequest>,
    ) -> Result<Response<pb::GetPrincipalResponse>, Status> {
        let p = principal(&req)?;
        let team_ids = self.service.visible_teams(&p).await?;
        Ok(Response::new(pb::GetPrincipalResponse {
            name: p.name.clone(),
            role: role_to_pb(p.role).into(),
            team_id: p.team.clone().unwrap_or_default(),
            user_id: p.user.clone().unwrap_or_default(),
            team_ids,
        }))
    }
}
