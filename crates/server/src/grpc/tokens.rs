//! `TokenService`: tokens issued through the API, over the service's token methods.

use super::{Api, principal};
use crate::auth::Role;
use crate::auth::issued::parse_role;
use crate::proto::v1 as pb;
use crate::service::{IssuedToken, ServiceError};
use pb::token_service_server::TokenService;
use std::time::Duration;
use tonic::{Request, Response, Status};
use toolgate_proto::convert::timestamp;

pub use pb::token_service_server::TokenServiceServer;

fn role_from_pb(role: i32) -> Result<Role, ServiceError> {
    match pb::TokenRole::try_from(role) {
        Ok(pb::TokenRole::Unspecified | pb::TokenRole::Member) => Ok(Role::Member),
        Ok(pb::TokenRole::Admin) => Ok(Role::Admin),
        Ok(pb::TokenRole::Service) => Ok(Role::Service),
        Err(_) => Err(ServiceError::InvalidArgument {
            field: "role".into(),
            message: format!("{role} is not a token role: use member, admin or service"),
        }),
    }
}

fn role_to_pb(role: &str) -> pb::TokenRole {
    match parse_role(role) {
        Some(Role::Admin) => pb::TokenRole::Admin,
        Some(Role::Service) => pb::TokenRole::Service,
        Some(Role::Member) => pb::TokenRole::Member,
        _ => pb::TokenRole::Unspecified,
    }
}

fn token_to_pb(t: IssuedToken) -> pb::IssuedToken {
    pb::IssuedToken {
        role: role_to_pb(&t.role).into(),
        token_id: t.token_id,
        team_id: t.team_id,
        user_id: t.user_id,
        created_at: timestamp(t.created_at_ms),
        created_by: t.created_by,
        expires_at: timestamp(t.expires_at_ms),
        revoked_at: t.revoked_at_ms.and_then(timestamp),
        revoked_by: t.revoked_by.unwrap_or_default(),
        groups: t.groups,
    }
}

#[tonic::async_trait]
impl TokenService for Api {
    async fn create_token(
        &self,
        req: Request<pb::CreateTokenRequest>,
    ) -> Result<Response<pb::CreateTokenResponse>, Status> {
        let p = principal(&req)?;
        let r = req.into_inner();
        let role = role_from_pb(r.role)?;
        let ttl = (r.expires_in_seconds > 0).then(|| Duration::from_secs(r.expires_in_seconds));
        let created = self
            .service
            .create_token(&p, &r.team_id, &r.user_id, role, ttl, &r.groups)
            .await?;
        Ok(Response::new(pb::CreateTokenResponse {
            token: Some(token_to_pb(created.token)),
            secret: created.secret,
        }))
    }

    async fn list_tokens(
        &self,
        req: Request<pb::ListTokensRequest>,
    ) -> Result<Response<pb::ListTokensResponse>, Status> {
        let p = principal(&req)?;
        let r = req.into_inner();
        let tokens = self
            .service
            .list_tokens(&p, &r.team_id, r.include_inactive)
            .await?;
        Ok(Response::new(pb::ListTokensResponse {
            tokens: tokens.into_iter().map(token_to_pb).collect(),
        }))
    }

    async fn revoke_token(
        &self,
        req: Request<pb::RevokeTokenRequest>,
    ) -> Result<Response<pb::RevokeTokenResponse>, Status> {
        let p = principal(&req)?;
        let r = req.into_inner();
        let (token, revoked) = self.service.revoke_token(&p, &r.token_id).await?;
        Ok(Response::new(pb::RevokeTokenResponse {
            token: Some(token_to_pb(token)),
            revoked,
        }))
    }
}
