//! Reaching the server: its address, TLS towards it, the bearer token, the channel
//! and the service stubs over it.

use super::{Client, ClientError, error_chain};
use crate::proto::v1 as pb;
use std::path::PathBuf;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;
use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, Endpoint};

/// Where the server is and who we are, as `TOOLGATE_SERVER`, `TOOLGATE_TOKEN` (or
/// `TOOLGATE_TOKEN_FILE`), `TOOLGATE_TEAM` and `TOOLGATE_USER` give them. Empty team or
/// user ids stand for the ones the token names.
#[derive(Debug, Clone, Default)]
pub struct ClientConfig {
    pub server: String,
    pub token: Option<String>,
    pub token_file: Option<PathBuf>,
    pub team: String,
    pub user: String,
    /// For connecting and for each unary call (streams are not bounded by it).
    pub deadline: Duration,
    pub tls: TlsOptions,
    /// The agent client this one speaks for (`claude-code`, `mcp-proxy`…), sent with
    /// each decision for the server's decision log; empty when unknown.
    pub client_kind: String,
    /// When set, the token is sent from here (set to `token` at connect), and its
    /// owner may swap it while the client runs: a long-running proxy refreshes its
    /// sign-in.
    pub bearer: Option<SharedBearer>,
}

/// A bearer token every stub of a client reads at each call, which its owner may
/// replace ([`SharedBearer::set`]) or take away ([`SharedBearer::clear`]: calls then
/// go without one, and the server refuses them).
#[derive(Clone, Default)]
pub struct SharedBearer(Arc<RwLock<Option<MetadataValue<Ascii>>>>);

impl std::fmt::Debug for SharedBearer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // never the token itself
        f.write_str("SharedBearer(..)")
    }
}

impl SharedBearer {
    /// Sends `token` from the next call on.
    pub fn set(&self, token: &str) -> Result<(), ClientError> {
        let value = bearer_value(token)?;
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = Some(value);
        Ok(())
    }

    /// Sends no token from the next call on.
    pub fn clear(&self) {
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = None;
    }

    fn get(&self) -> Option<MetadataValue<Ascii>> {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// `Bearer TOKEN` as a header value, refused when the token is not printable ASCII.
fn bearer_value(token: &str) -> Result<MetadataValue<Ascii>, ClientError> {
    format!("Bearer {token}").parse().map_err(|_| {
        ClientError::Config(
            "the token is not printable ASCII: copy it again without stray characters".into(),
        )
    })
}

/// TLS towards the server (`--ca`, `--cert`, `--key`): any of them, or an
/// `https://` address, turns it on; without `--ca` the system's roots verify the server.
#[derive(Debug, Clone, Default)]
pub struct TlsOptions {
    /// PEM CA certificates to verify the server with.
    pub ca: Option<PathBuf>,
    /// PEM client certificate and key, for a server that asks for one (mTLS).
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
}

impl TlsOptions {
    /// The endpoint for `server` (`HOST:PORT` or a URL), TLS set up as asked; the
    /// error says what to fix.
    pub fn endpoint(&self, server: &str) -> Result<Endpoint, String> {
        let on = self.ca.is_some() || self.cert.is_some() || self.key.is_some();
        // `127.0.0.1:7070` is what `serve --listen` takes: accept it here too
        let address = match (server.contains("://"), on) {
            (true, _) => server.to_owned(),
            (false, true) => format!("https://{server}"),
            (false, false) => format!("http://{server}"),
        };
        let endpoint = Endpoint::from_shared(address.clone()).map_err(|e| {
            format!("server {server:?}: {e}: use http://HOST:PORT or https://HOST:PORT")
        })?;
        if !on && !address.starts_with("https://") {
            return Ok(endpoint);
        }
        if on && address.starts_with("http://") {
            return Err(format!(
                "server {server:?}: --ca, --cert and --key need TLS: use https://HOST:PORT"
            ));
        }
        let read = |flag: &str, path: &PathBuf| {
            std::fs::read(path)
                .map_err(|e| format!("{flag} {}: {e}: give a readable PEM file", path.display()))
        };
        let mut tls = tonic::transport::ClientTlsConfig::new();
        tls = match &self.ca {
            Some(ca) => {
                tls.ca_certificate(tonic::transport::Certificate::from_pem(read("--ca", ca)?))
            }
            None => tls.with_native_roots(),
        };
        match (&self.cert, &self.key) {
            (Some(cert), Some(key)) => {
                tls = tls.identity(tonic::transport::Identity::from_pem(
                    read("--cert", cert)?,
                    read("--key", key)?,
                ));
            }
            (None, None) => {}
            _ => return Err("--cert and --key go together: give both or neither".into()),
        }
        endpoint
            .tls_config(tls)
            .map_err(|e| format!("tls: {}", error_chain(&e)))
    }
}

impl ClientConfig {
    /// The bearer token: `token` if given, else the content of `token_file`.
    pub fn read_token(&self) -> Result<Option<String>, ClientError> {
        match (&self.token, &self.token_file) {
            (Some(t), _) if !t.trim().is_empty() => Ok(Some(t.trim().to_owned())),
            (_, Some(f)) => {
                let text = std::fs::read_to_string(f).map_err(|e| {
                    ClientError::Config(format!(
                        "--token-file (TOOLGATE_TOKEN_FILE) {}: {e}: give the path of a readable file holding your token, or run `toolgate login`",
                        f.display()
                    ))
                })?;
                Ok(Some(text.trim().to_owned()))
            }
            _ => Ok(None),
        }
    }

    fn endpoint(&self) -> Result<Endpoint, ClientError> {
        Ok(self
            .tls
            .endpoint(&self.server)
            .map_err(ClientError::Config)?
            .connect_timeout(self.deadline)
            .tcp_nodelay(true))
    }

    fn bearer(&self) -> Result<Bearer, ClientError> {
        let value = self.read_token()?.map(|t| bearer_value(&t)).transpose()?;
        let shared = self.bearer.clone().unwrap_or_default();
        // seeded once: a token its owner swapped in since is newer than `token`
        let mut held = shared.0.write().unwrap_or_else(PoisonError::into_inner);
        if held.is_none() {
            *held = value;
        }
        drop(held);
        Ok(Bearer(shared))
    }
}

/// Adds the bearer token to every call: the one its [`SharedBearer`] holds then.
#[derive(Clone)]
pub struct Bearer(SharedBearer);

impl tonic::service::Interceptor for Bearer {
    fn call(&mut self, mut req: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(v) = self.0.get() {
            req.metadata_mut().insert("authorization", v);
        }
        Ok(req)
    }
}

/// A channel that carries the bearer token.
pub type Authed = InterceptedService<Channel, Bearer>;

pub(super) type PolicyStub = pb::policy_service_client::PolicyServiceClient<Authed>;

impl Client {
    /// Connects within the configured deadline.
    pub async fn connect(config: ClientConfig) -> Result<Self, ClientError> {
        let bearer = config.bearer()?;
        let endpoint = config.endpoint()?;
        let channel = tokio::time::timeout(config.deadline, endpoint.connect())
            .await
            .map_err(|_| ClientError::Timeout {
                server: config.server.clone(),
                ms: config.deadline.as_millis(),
            })?
            .map_err(|e| ClientError::Unreachable {
                server: config.server.clone(),
                detail: tls_hint(&config.server, error_chain(&e)),
            })?;
        Ok(Self {
            channel,
            bearer,
            config,
            tool_use_id: String::new(),
        })
    }

    /// Connects on first use and again after every loss, with HTTP/2 keepalive: for
    /// long-lived callers (the proxy) to whom an unreachable server is a state to live
    /// with, not an error at start.
    pub fn connect_lazy(config: ClientConfig) -> Result<Self, ClientError> {
        let bearer = config.bearer()?;
        let channel = config
            .endpoint()?
            .http2_keep_alive_interval(Duration::from_secs(20))
            .keep_alive_while_idle(true)
            .connect_lazy();
        Ok(Self {
            channel,
            bearer,
            config,
            tool_use_id: String::new(),
        })
    }

    /// The server's address as configured.
    pub fn server(&self) -> &str {
        &self.config.server
    }

    /// The admin service, for the CLI commands that still build protobuf requests.
    pub fn admin_service(&self) -> pb::admin_service_client::AdminServiceClient<Authed> {
        pb::admin_service_client::AdminServiceClient::with_interceptor(
            self.channel.clone(),
            self.bearer.clone(),
        )
    }

    /// The token service, for `toolgate token`.
    pub fn token_service(&self) -> pb::token_service_client::TokenServiceClient<Authed> {
        pb::token_service_client::TokenServiceClient::with_interceptor(
            self.channel.clone(),
            self.bearer.clone(),
        )
    }

    /// The pin service, for the gateway and `toolgate pins`.
    pub fn pin_service(&self) -> pb::pin_service_client::PinServiceClient<Authed> {
        pb::pin_service_client::PinServiceClient::with_interceptor(
            self.channel.clone(),
            self.bearer.clone(),
        )
    }

    /// The principal service, for `toolgate sign-ins`.
    pub fn principal_service(
        &self,
    ) -> pb::principal_service_client::PrincipalServiceClient<Authed> {
        pb::principal_service_client::PrincipalServiceClient::with_interceptor(
            self.channel.clone(),
            self.bearer.clone(),
        )
    }

    /// The user settings service, for the CLI commands that still build protobuf
    /// requests.
    pub fn user_settings_service(
        &self,
    ) -> pb::user_settings_service_client::UserSettingsServiceClient<Authed> {
        pb::user_settings_service_client::UserSettingsServiceClient::with_interceptor(
            self.channel.clone(),
            self.bearer.clone(),
        )
    }

    /// The server's information, for `toolgate login --sso` (`GetSignIn`).
    pub fn server_info_service(
        &self,
    ) -> pb::server_info_service_client::ServerInfoServiceClient<Authed> {
        pb::server_info_service_client::ServerInfoServiceClient::with_interceptor(
            self.channel.clone(),
            self.bearer.clone(),
        )
    }

    /// The policy service, for the CLI commands that still build protobuf requests.
    pub fn policy_service(&self) -> PolicyStub {
        pb::policy_service_client::PolicyServiceClient::with_interceptor(
            self.channel.clone(),
            self.bearer.clone(),
        )
    }
}

/// A TLS handshake answered in plain text reads as a "corrupt message": say what it
/// means and what to change.
fn tls_hint(server: &str, detail: String) -> String {
    let plain_server = detail.contains("InvalidContentType") || detail.contains("corrupt message");
    match server.strip_prefix("https://") {
        Some(rest) if plain_server => format!(
            "{detail} (the server does not speak TLS: use http://{rest}, or turn TLS on at the server with tls.cert and tls.key)"
        ),
        _ => detail,
    }
}

#[cfg(test)]
mod tls_hint_tests {
    #[test]
    fn https_against_a_plain_server_names_the_fix() {
        let said = super::tls_hint(
            "https://127.0.0.1:7070",
            "received corrupt message of type InvalidContentType".into(),
        );
        assert!(said.contains("use http://127.0.0.1:7070"), "{said}");
        let other = super::tls_hint("https://h:1", "connection refused".into());
        assert_eq!(other, "connection refused");
    }
}
