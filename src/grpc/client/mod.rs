//! The one gRPC client of toolgate, for everything in the binary that talks to a
//! server (the CLI, `toolgate hook`, `toolgate export`, `toolgate proxy`): the
//! address, the bearer token, deadlines, and domain types in and out.

use super::convert::{controls_from_pb, user_from_pb};
use crate::policy::roles::{AgentSpec, CallArgs};
use crate::policy::{AdminControls, Call, Outcome, UserSettings};
use crate::proto::v1 as pb;
use std::path::PathBuf;
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
                        "TOOLGATE_TOKEN_FILE {}: {e}: point it at a readable token file",
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
        let value = self
            .read_token()?
            .map(|t| format!("Bearer {t}").parse())
            .transpose()
            .map_err(|_| {
                ClientError::Config(
                    "the token is not printable ASCII: copy it again without stray characters"
                        .into(),
                )
            })?;
        Ok(Bearer(value))
    }
}

/// Why a call to the server did not give an answer.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("bad client configuration: {0}")]
    Config(String),
    #[error("cannot reach toolgate server {server}: {detail}")]
    Unreachable { server: String, detail: String },
    #[error("toolgate server {server} did not answer within {ms} ms")]
    Timeout { server: String, ms: u128 },
    #[error("toolgate server refused the call: {code:?}: {message}")]
    Refused { code: tonic::Code, message: String },
    #[error("toolgate server answered something unreadable: {0}")]
    Malformed(String),
}

/// A decision as the server gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteDecision {
    pub outcome: Outcome,
    /// The stable reason name, e.g. `COMMAND_BLOCKED`.
    pub reason: String,
    /// The server's sentence for people.
    pub message: String,
    pub revision: u64,
}

/// The effective policy of one user, as the server computes it.
#[derive(Debug, Clone)]
pub struct RemotePolicy {
    pub admin: AdminControls,
    pub user: UserSettings,
    pub revision: u64,
    /// The policy file's `tool.action` lists: (server, allowed patterns).
    pub file_allowlists: Vec<(String, Vec<String>)>,
}

/// What a `tools/list` result keeps under the policy (`FilterTools`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilteredTools {
    /// `{"tools": [...]}` with the hidden tools left out.
    pub tools_json: String,
    pub revision: u64,
}

/// One event of a policy watch, as much of it as a follower needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicyNotice {
    /// The policy is now at `revision` (a snapshot, a resync or a change).
    Changed { revision: u64 },
    /// The stream is alive; nothing changed.
    Heartbeat,
}

/// Adds the bearer token to every call.
#[derive(Clone)]
pub struct Bearer(Option<MetadataValue<Ascii>>);

impl tonic::service::Interceptor for Bearer {
    fn call(&mut self, mut req: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(v) = &self.0 {
            req.metadata_mut().insert("authorization", v.clone());
        }
        Ok(req)
    }
}

/// A channel that carries the bearer token.
pub type Authed = InterceptedService<Channel, Bearer>;

type PolicyStub = pb::policy_service_client::PolicyServiceClient<Authed>;

/// A client of one server. Cheap to clone: clones share the connection.
#[derive(Clone)]
pub struct Client {
    channel: Channel,
    bearer: Bearer,
    config: ClientConfig,
}

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
                detail: error_chain(&e),
            })?;
        Ok(Self {
            channel,
            bearer,
            config,
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
        })
    }

    /// The server's address as configured.
    pub fn server(&self) -> &str {
        &self.config.server
    }

    /// One decision for the configured team and user.
    pub async fn evaluate(&self, call: &Call) -> Result<RemoteDecision, ClientError> {
        self.evaluate_as(&self.config.team, &self.config.user, call)
            .await
    }

    /// One decision for `team` and `user` (empty: the token's own).
    pub async fn evaluate_as(
        &self,
        team: &str,
        user: &str,
        call: &Call,
    ) -> Result<RemoteDecision, ClientError> {
        self.decide(team, user, call, None).await
    }

    /// One decision for the configured team and user on a call made by a seed 004
    /// agent, with what it touches.
    pub async fn evaluate_by(
        &self,
        call: &Call,
        agent: Option<&(AgentSpec, CallArgs)>,
    ) -> Result<RemoteDecision, ClientError> {
        self.decide(&self.config.team, &self.config.user, call, agent)
            .await
    }

    async fn decide(
        &self,
        team: &str,
        user: &str,
        call: &Call,
        agent: Option<&(AgentSpec, CallArgs)>,
    ) -> Result<RemoteDecision, ClientError> {
        let mut pb_call = call_to_pb(call);
        pb_call.arguments = agent.map(|(_, args)| pb::CallArguments {
            operation: args.operation.clone().unwrap_or_default(),
            file_path: args.file_path.clone().unwrap_or_default(),
            component_type: args.component_type.clone().unwrap_or_default(),
            component_count: args.component_count,
            tool_input_json: args
                .tool_input
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default(),
            cwd: args.cwd.clone().unwrap_or_default(),
        });
        let request = pb::EvaluateRequest {
            team_id: team.to_owned(),
            user_id: user.to_owned(),
            call: Some(pb_call),
            explain: false,
            agent: agent.map(|(a, _)| pb::AgentContext {
                agent_id: a.id.clone().unwrap_or_default(),
                role: a.role.clone().unwrap_or_default(),
                context_type: a.context.clone().unwrap_or_default(),
                session_id: a.session.clone().unwrap_or_default(),
            }),
        };
        let d = self
            .within(|mut c| async move { c.evaluate(request).await })
            .await?;
        let outcome = match pb::Outcome::try_from(d.outcome) {
            Ok(pb::Outcome::Allow) => Outcome::Allow,
            Ok(pb::Outcome::Ask) => Outcome::Ask,
            Ok(pb::Outcome::Deny) => Outcome::Deny,
            _ => {
                return Err(ClientError::Malformed(format!(
                    "decision outcome {}",
                    d.outcome
                )));
            }
        };
        let reason = pb::Reason::try_from(d.reason)
            .map(|r| {
                let name = r.as_str_name();
                name.strip_prefix("REASON_").unwrap_or(name).to_owned()
            })
            .unwrap_or_else(|_| format!("REASON_{}", d.reason));
        Ok(RemoteDecision {
            outcome,
            reason,
            message: d.message,
            revision: d.revision,
        })
    }

    /// `FilterTools`: what `tools_json` (an MCP `tools/list` result) keeps for `team`
    /// and `user` when the tools belong to `server`.
    pub async fn filter_tools(
        &self,
        team: &str,
        user: &str,
        server: &str,
        tools_json: String,
    ) -> Result<FilteredTools, ClientError> {
        let request = pb::FilterToolsRequest {
            team_id: team.to_owned(),
            user_id: user.to_owned(),
            server: server.to_owned(),
            tools_json,
        };
        let r = self
            .within(|mut c| async move { c.filter_tools(request).await })
            .await?;
        Ok(FilteredTools {
            tools_json: r.tools_json,
            revision: r.revision,
        })
    }

    /// The effective policy of the configured team and user.
    pub async fn effective_policy(&self) -> Result<RemotePolicy, ClientError> {
        self.effective_policy_as(&self.config.team, &self.config.user)
            .await
    }

    /// The effective policy of `team` and `user` (empty: the token's own).
    pub async fn effective_policy_as(
        &self,
        team: &str,
        user: &str,
    ) -> Result<RemotePolicy, ClientError> {
        let request = pb::GetEffectivePolicyRequest {
            team_id: team.to_owned(),
            user_id: user.to_owned(),
        };
        let p = self
            .within(|mut c| async move { c.get_effective_policy(request).await })
            .await?;
        let admin = p
            .admin
            .and_then(|a| a.auto_run_controls)
            .map(controls_from_pb)
            .transpose()
            .map_err(|e| ClientError::Malformed(e.to_string()))?
            .unwrap_or_default();
        let user = p.user.map(user_from_pb).unwrap_or_default();
        Ok(RemotePolicy {
            admin,
            user,
            revision: p.revision,
            file_allowlists: p
                .file_allowlists
                .into_iter()
                .map(|l| (l.server, l.allowed_tools))
                .collect(),
        })
    }

    /// `WatchPolicy` for `team` and `user`, after `after` when resuming. The stream is
    /// long-lived: the deadline bounds only its opening.
    pub async fn watch_policy(
        &self,
        team: &str,
        user: &str,
        after: Option<u64>,
    ) -> Result<PolicyWatch, ClientError> {
        let mut request = tonic::Request::new(pb::WatchPolicyRequest {
            team_id: team.to_owned(),
            user_id: user.to_owned(),
            after_revision: after,
        });
        // no grpc-timeout: the server would end the stream at it
        request.set_timeout(Duration::from_secs(365 * 24 * 3600));
        let stream = self
            .within(|mut c| async move { c.watch_policy(request).await })
            .await?;
        Ok(PolicyWatch {
            stream,
            server: self.config.server.clone(),
        })
    }

    /// The admin service, for the CLI commands that still build protobuf requests.
    pub fn admin_service(&self) -> pb::admin_service_client::AdminServiceClient<Authed> {
        pb::admin_service_client::AdminServiceClient::with_interceptor(
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

    /// The policy service, for the CLI commands that still build protobuf requests.
    pub fn policy_service(&self) -> PolicyStub {
        pb::policy_service_client::PolicyServiceClient::with_interceptor(
            self.channel.clone(),
            self.bearer.clone(),
        )
    }

    async fn within<T, F, Fut>(&self, call: F) -> Result<T, ClientError>
    where
        F: FnOnce(PolicyStub) -> Fut,
        Fut: std::future::Future<Output = Result<tonic::Response<T>, tonic::Status>>,
    {
        let server = self.config.server.clone();
        let deadline = self.config.deadline;
        match tokio::time::timeout(deadline, call(self.policy_service())).await {
            Err(_) => Err(ClientError::Timeout {
                server,
                ms: deadline.as_millis(),
            }),
            Ok(Err(status)) => Err(status_error(server, status)),
            Ok(Ok(r)) => Ok(r.into_inner()),
        }
    }
}

/// An open `WatchPolicy` stream.
pub struct PolicyWatch {
    stream: tonic::Streaming<pb::PolicyEvent>,
    server: String,
}

impl PolicyWatch {
    /// The next event; `None` when the server ended the stream.
    pub async fn next(&mut self) -> Result<Option<PolicyNotice>, ClientError> {
        use pb::policy_event::Event;
        loop {
            let Some(event) = self
                .stream
                .message()
                .await
                .map_err(|s| status_error(self.server.clone(), s))?
            else {
                return Ok(None);
            };
            return Ok(Some(match event.event {
                Some(Event::Heartbeat(_)) => PolicyNotice::Heartbeat,
                Some(_) => PolicyNotice::Changed {
                    revision: event.revision,
                },
                // a kind this build does not know: not a change it can act on
                None => continue,
            }));
        }
    }
}

fn status_error(server: String, status: tonic::Status) -> ClientError {
    use tonic::Code;
    // a lost connection surfaces as Cancelled (or Unknown, with the transport error as
    // its source) as well as Unavailable: the server answers neither that way
    let lost = match status.code() {
        Code::Unavailable | Code::Cancelled => true,
        Code::Unknown => std::error::Error::source(&status).is_some(),
        _ => false,
    };
    if lost {
        ClientError::Unreachable {
            server,
            detail: status.message().to_owned(),
        }
    } else {
        ClientError::Refused {
            code: status.code(),
            message: status.message().to_owned(),
        }
    }
}

fn call_to_pb(call: &Call) -> pb::ToolCall {
    use pb::tool_call::Kind;
    let kind = match call.clone() {
        Call::Mcp { server, tool } => Kind::Mcp(pb::McpCall {
            server,
            tool,
            action: String::new(),
        }),
        Call::McpAction {
            server,
            tool,
            action,
        } => Kind::Mcp(pb::McpCall {
            server,
            tool,
            action,
        }),
        Call::McpInternal {
            name,
            fallback_server,
        } => Kind::McpInternal(pb::McpInternalCall {
            name,
            fallback_server,
        }),
        Call::Shell(line) => Kind::Shell(line),
        Call::DeleteFile(path) => Kind::DeleteFile(path),
    };
    pb::ToolCall {
        kind: Some(kind),
        arguments: None,
    }
}

/// The error and its sources on one line (tonic's transport errors say little alone).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}
