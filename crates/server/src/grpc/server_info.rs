//! `ServerInfoService`: the server's configuration as the caller may see it, and how
//! to sign in.

use super::{Api, principal};
use crate::auth::{Action, authorize};
use crate::proto::v1 as pb;
use crate::service::{ServiceError, check_id};
use pb::server_info_service_server::ServerInfoService;
use tonic::{Request, Response, Status};

#[tonic::async_trait]
impl ServerInfoService for Api {
    async fn get_server_config(
        &self,
        req: Request<pb::GetServerConfigRequest>,
    ) -> Result<Response<pb::GetServerConfigResponse>, Status> {
        let p = principal(&req)?;
        let team = p.team.clone().unwrap_or_default();
        if !team.is_empty() {
            check_id("team_id", &team).map_err(ServiceError::from)?;
        }
        authorize(&p, &team, Action::ReadServerInfo).map_err(ServiceError::from)?;
        // secrets and principals are the operators' business alone
        let view = if p.role == crate::auth::Role::Operator {
            &self.config_views.operator
        } else {
            &self.config_views.team
        };
        let mut config = view.clone();
        // the file's state changes at run time; the rest of the config does not
        if let Some(status) = self.policy_file.as_ref().and_then(|cell| cell.get()) {
            config.insert("policy_file".to_owned(), status.to_json());
        }
        let build = crate::build_info::get();
        Ok(Response::new(pb::GetServerConfigResponse {
            version: build.version.to_owned(),
            config: Some(toolgate_proto::json::object_to_pb(&config)),
            commit: build.commit.to_owned(),
        }))
    }

    async fn get_sign_in(
        &self,
        _req: Request<pb::GetSignInRequest>,
    ) -> Result<Response<pb::GetSignInResponse>, Status> {
        // no principal needed: nothing here is secret, and who asks has no token yet
        Ok(Response::new(self.config_views.sign_in.clone()))
    }
}

/// `GetSignIn`'s answer, from `auth.jwt` (none without `auth.jwt.sign_in`).
pub(super) fn sign_in_of(config: &crate::config::Config) -> pb::GetSignInResponse {
    use crate::config::{SignInBearer, SignInFlow};
    let sign_in = config.auth.jwt.as_ref().and_then(|jwt| {
        let s = jwt.sign_in.as_ref()?;
        Some(pb::SignIn {
            issuer: jwt.issuer.clone(),
            client_id: s.client_id.clone(),
            scopes: s.scopes.clone(),
            flows: s
                .flows
                .iter()
                .map(|f| match f {
                    SignInFlow::Device => pb::SignInFlow::Device,
                    SignInFlow::Browser => pb::SignInFlow::Browser,
                } as i32)
                .collect(),
            bearer: match s.bearer {
                SignInBearer::IdToken => pb::SignInBearer::IdToken,
                SignInBearer::AccessToken => pb::SignInBearer::AccessToken,
            } as i32,
            allow_loopback_http: s.allow_loopback_http,
        })
    });
    pb::GetSignInResponse { sign_in }
}

/// The config's JSON as an object (it always is one).
pub(super) fn as_object(v: serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
    match v {
        serde_json::Value::Object(map) => map,
        _ => serde_json::Map::new(),
    }
}
