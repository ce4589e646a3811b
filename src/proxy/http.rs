//! The proxy's Streamable HTTP endpoint: many clients at `/mcp`, each principal from
//! its bearer token (checked here, before any MCP message is read), or on a loopback
//! listener without tokens, the one user it was started for. `Host` and `Origin` are
//! checked first (`origin.rs`).

use super::gate::Who;
use super::session::{Session, Shared};
use super::{MAX_MESSAGE_BYTES, ProxyError};
use crate::auth::{Authenticator, Principal, Role};
use crate::config::TokenConfig;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Event streams send a keep-alive this often, so clients and middleboxes never see
/// an idle stream close (Claude Code stops reopening one that closes quickly).
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The users allowed to connect, by token digest (as the server's `auth.tokens`).
#[derive(Debug, Clone)]
pub struct ClientTokens(Arc<Authenticator>);

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TokensFile {
    tokens: Vec<TokenConfig>,
}

impl ClientTokens {
    /// Reads a TOML or YAML file `tokens: [{name, sha256, role: member, team, user}]`.
    pub fn load(path: &Path) -> Result<Self, ProxyError> {
        use figment::providers::Format as _;
        let figment = match path.extension().and_then(|e| e.to_str()) {
            Some("yaml" | "yml") => figment::Figment::from(crate::config::Yaml::file(path)),
            _ => figment::Figment::from(figment::providers::Toml::file(path)),
        };
        let file: TokensFile = figment
            .extract()
            .map_err(|e| ProxyError::Config(format!("clients file {}: {e}", path.display())))?;
        Self::from_configs(file.tokens)
    }

    /// Member tokens only: each names the team and user it acts as.
    pub fn from_configs(tokens: Vec<TokenConfig>) -> Result<Self, ProxyError> {
        let mut problems = Vec::new();
        let mut by_digest = Vec::new();
        for t in tokens {
            if let Err(e) = crate::auth::check_principal_name(&t.name) {
                problems.push(format!("tokens[{}].name: {e}", t.name));
            }
            let digest = hex::decode(&t.sha256)
                .ok()
                .and_then(|d| <[u8; 32]>::try_from(d).ok());
            match (digest, t.role, &t.team) {
                (None, ..) => problems.push(format!(
                    "tokens[{}].sha256: not 64 hex digits; `toolgate hash-token` prints it",
                    t.name
                )),
                (_, role, _) if role != Role::Member => problems.push(format!(
                    "tokens[{}].role: {role:?}; the proxy serves members only (role: member)",
                    t.name
                )),
                (_, _, None) => problems.push(format!(
                    "tokens[{}].team: missing; name the member's team",
                    t.name
                )),
                (_, _, Some(team)) if crate::auth::is_reserved_team(team) => {
                    problems.push(format!(
                        "tokens[{}].team: {}",
                        t.name,
                        crate::auth::reserved_team_problem(team)
                    ))
                }
                (Some(digest), _, Some(team)) => by_digest.push((
                    digest,
                    Principal {
                        groups: Default::default(),
                        user: Some(t.user.clone().unwrap_or_else(|| t.name.clone())),
                        name: t.name,
                        role: Role::Member,
                        team: Some(team.clone()),
                    },
                )),
            }
        }
        if !problems.is_empty() {
            return Err(ProxyError::Config(problems.join("; ")));
        }
        Ok(Self(Arc::new(Authenticator::new(by_digest, None))))
    }
}

/// Resolves the bearer token to a principal for the MCP layer, or answers 401.
async fn bearer(State(clients): State<ClientTokens>, mut req: Request, next: Next) -> Response {
    let header = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    match clients.0.authenticate(header) {
        Ok(p) => {
            let who = Who {
                team: p.team.clone().unwrap_or_default(),
                user: p.user.clone().unwrap_or_default(),
            };
            req.extensions_mut().insert(who);
            next.run(req).await
        }
        Err(e) => (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            e.to_string(),
        )
            .into_response(),
    }
}

pub(super) async fn serve(
    shared: Arc<Shared>,
    clients: Option<ClientTokens>,
    access: &super::HttpAccess,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), ProxyError> {
    let stop = CancellationToken::new();
    let loopback = listener.local_addr()?.ip().is_loopback();
    if clients.is_none() && !loopback {
        return Err(ProxyError::Config(
            "clients: missing; without --clients the proxy serves its one user on a loopback address only (--listen 127.0.0.1:PORT)".into(),
        ));
    }
    access.check().map_err(ProxyError::Config)?;
    let checks = super::origin::Checks::new(access, loopback);
    let mut config = StreamableHttpServerConfig::default()
        .with_sse_keep_alive(Some(KEEP_ALIVE))
        .with_cancellation_token(stop.clone())
        // Host and Origin are checked by `origin::guard`, before the token
        .disable_allowed_hosts();
    config.max_request_body_bytes = MAX_MESSAGE_BYTES;
    let service = StreamableHttpService::new(
        move || Ok(Session::new(Arc::clone(&shared))),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let mut router = axum::Router::new().nest_service("/mcp", service);
    if let Some(clients) = clients {
        router = router.layer(axum::middleware::from_fn_with_state(clients, bearer));
    }
    let router = router.layer(axum::middleware::from_fn_with_state(
        checks,
        super::origin::guard,
    ));
    axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            shutdown.await;
            stop.cancel();
        })
        .await?;
    Ok(())
}
