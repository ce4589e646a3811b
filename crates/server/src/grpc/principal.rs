//! `PrincipalService`: who the caller is, the teams it may read, and who signed in
//! through the identity provider.

use super::{Api, principal};
use crate::auth::Role;
use crate::proto::v1 as pb;
use pb::principal_service_server::PrincipalService;
use tonic::{Request, Response, Status};
use toolgate_proto::convert::timestamp;

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
            groups: p.groups.to_vec(),
        }))
    }

    async fn list_sign_ins(
        &self,
        req: Request<pb::ListSignInsRequest>,
    ) -> Result<Response<pb::ListSignInsResponse>, Status> {
        let p = principal(&req)?;
        let r = req.into_inner();
        let sign_ins = self.service.list_sign_ins(&p, &r.team_id).await?;
        Ok(Response::new(pb::ListSignInsResponse {
            sign_ins: sign_ins
                .into_iter()
                .map(|s| pb::SignInRecord {
                    team_id: s.team_id,
                    user_id: s.user_id,
                    principal: s.principal,
                    issuer: s.issuer,
                    groups: s.groups,
                    first_at: timestamp(s.first_at_ms),
                    last_at: timestamp(s.last_at_ms),
                })
                .collect(),
        }))
    }
}
