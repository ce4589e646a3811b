//! A small gRPC client of toolgate for commands that run next to an agent (`toolgate
//! hook`, `toolgate export`): one connection under a deadline, domain types in and out.

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
    /// For connecting and for each call.
    pub deadline: Duration,
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

#[derive(Clone)]
struct Bearer(Option<MetadataValue<Ascii>>);

impl tonic::service::Interceptor for Bearer {
    fn call(&mut self, mut req: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(v) = &self.0 {
            req.metadata_mut().insert("authorization", v.clone());
        }
        Ok(req)
    }
}

/// A connected client.
pub struct Client {
    policy: pb::policy_service_client::PolicyServiceClient<InterceptedService<Channel, Bearer>>,
    config: ClientConfig,
}

impl Client {
    /// Connects within the configured deadline.
    pub async fn connect(config: ClientConfig) -> Result<Self, ClientError> {
        let token = match (&config.token, &config.token_file) {
            (Some(t), _) if !t.trim().is_empty() => Some(t.trim().to_owned()),
            (_, Some(f)) => Some(
                std::fs::read_to_string(f)
                    .map_err(|e| {
                        ClientError::Config(format!(
                            "TOOLGATE_TOKEN_FILE {}: {e}: point it at a readable token file",
                            f.display()
                        ))
                    })?
                    .trim()
                    .to_owned(),
            ),
            _ => None,
        };
        let bearer = Bearer(
            token
                .map(|t| format!("Bearer {t}").parse())
                .transpose()
                .map_err(|_| {
                    ClientError::Config(
                        "the token is not printable ASCII: copy it again without stray characters"
                            .into(),
                    )
                })?,
        );
        // `127.0.0.1:7070` is what `serve --listen` takes: accept it here too
        let address = if config.server.contains("://") {
            config.server.clone()
        } else {
            format!("http://{}", config.server)
        };
        let endpoint = Endpoint::from_shared(address)
            .map_err(|e| {
                ClientError::Config(format!(
                    "TOOLGATE_SERVER {:?}: {e}: use http://HOST:PORT",
                    config.server
                ))
            })?
            .connect_timeout(config.deadline)
            .timeout(config.deadline)
            .tcp_nodelay(true);
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
            policy: pb::policy_service_client::PolicyServiceClient::with_interceptor(
                channel, bearer,
            ),
            config,
        })
    }

    /// One decision.
    pub async fn evaluate(&mut self, call: &Call) -> Result<RemoteDecision, ClientError> {
        self.evaluate_as(call, None).await
    }

    /// One decision on a call made by a seed 004 agent, with what it touches.
    pub async fn evaluate_as(
        &mut self,
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
            team_id: self.config.team.clone(),
            user_id: self.config.user.clone(),
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

    /// The effective policy of the configured team and user.
    pub async fn effective_policy(&mut self) -> Result<RemotePolicy, ClientError> {
        let request = pb::GetEffectivePolicyRequest {
            team_id: self.config.team.clone(),
            user_id: self.config.user.clone(),
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

    async fn within<T, F, Fut>(&mut self, call: F) -> Result<T, ClientError>
    where
        F: FnOnce(
            pb::policy_service_client::PolicyServiceClient<InterceptedService<Channel, Bearer>>,
        ) -> Fut,
        Fut: std::future::Future<Output = Result<tonic::Response<T>, tonic::Status>>,
    {
        let server = self.config.server.clone();
        let deadline = self.config.deadline;
        match tokio::time::timeout(deadline, call(self.policy.clone())).await {
            Err(_) => Err(ClientError::Timeout {
                server,
                ms: deadline.as_millis(),
            }),
            Ok(Err(status)) if status.code() == tonic::Code::Unavailable => {
                Err(ClientError::Unreachable {
                    server,
                    detail: status.message().to_owned(),
                })
            }
            Ok(Err(status)) => Err(ClientError::Refused {
                code: status.code(),
                message: status.message().to_owned(),
            }),
            Ok(Ok(r)) => Ok(r.into_inner()),
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
