//! The CLI's connection to a server: the one client of `crate::grpc::client`, and
//! the printer the commands answer through.

use super::connection::Connection;
use super::output::Printer;
use super::usage;
use crate::grpc::client::{Authed, Client, ClientConfig, ClientError};
use crate::proto::v1 as pb;
use std::time::Duration;

/// How long connecting may take before a command gives up.
const CONNECT_DEADLINE: Duration = Duration::from_secs(30);

pub(super) struct Clients {
    client: Client,
    pub(super) out: Printer,
}

impl Clients {
    pub(super) async fn connect(c: &Connection) -> anyhow::Result<Self> {
        let mut resolved = c.resolve().map_err(|e| usage(e.to_string()))?;
        super::login_refresh::refresh_if_needed(&mut resolved)
            .await
            .map_err(|e| anyhow::anyhow!(e))?;
        let client = Client::connect(ClientConfig {
            server: resolved.server,
            token: resolved.token,
            token_file: resolved.token_file,
            tls: resolved.tls,
            deadline: CONNECT_DEADLINE,
            ..ClientConfig::default()
        })
        .await
        .map_err(|e| match e {
            ClientError::Config(text) => usage(text),
            other => other.into(),
        })?;
        Ok(Self {
            client,
            out: Printer(c.output),
        })
    }

    pub(super) fn admin(&self) -> pb::admin_service_client::AdminServiceClient<Authed> {
        self.client.admin_service()
    }

    pub(super) fn users(
        &self,
    ) -> pb::user_settings_service_client::UserSettingsServiceClient<Authed> {
        self.client.user_settings_service()
    }

    pub(super) fn approvals(&self) -> pb::approval_service_client::ApprovalServiceClient<Authed> {
        self.client.approval_service()
    }

    pub(super) fn pins(&self) -> pb::pin_service_client::PinServiceClient<Authed> {
        self.client.pin_service()
    }

    pub(super) fn tokens(&self) -> pb::token_service_client::TokenServiceClient<Authed> {
        self.client.token_service()
    }

    pub(super) fn decisions(
        &self,
    ) -> pb::decision_log_service_client::DecisionLogServiceClient<Authed> {
        self.client.decision_log_service()
    }

    pub(super) fn principals(
        &self,
    ) -> pb::principal_service_client::PrincipalServiceClient<Authed> {
        self.client.principal_service()
    }

    pub(super) fn policy(&self) -> pb::policy_service_client::PolicyServiceClient<Authed> {
        self.client.policy_service()
    }
}

/// A failed RPC, with the server's message (and field violations) for people.
pub(super) fn rpc_error(status: tonic::Status) -> anyhow::Error {
    use tonic_types::StatusExt;
    // an operator's token names no team: the flag, not the API field, is the fix
    if status.code() == tonic::Code::InvalidArgument
        && status.message().contains("team_id")
        && status.message().contains("operator")
    {
        return usage(
            "--team is needed: an operator's token names no team, so name the one to act on".into(),
        );
    }
    let mut text = format!("{:?}: {}", status.code(), status.message());
    if status
        .get_details_error_info()
        .is_some_and(|info| info.reason == crate::grpc::COMMIT_INDETERMINATE)
    {
        text.push_str(
            "\n  the change may have been committed: read it back before writing again (settings: their revision, then write with --expected-revision; a token: `toolgate token list`, and revoke one whose secret you did not get; an approval: the request's state)",
        );
    }
    if let Some(bad) = status.get_details_bad_request() {
        for v in bad.field_violations {
            let line = format!("{}: {}", v.field, v.description);
            // the message often is the one violation: said once
            if !status.message().contains(&line) {
                text.push_str(&format!("\n  {line}"));
            }
        }
    }
    if status.code() == tonic::Code::Unauthenticated {
        text.push_str(if status.message().starts_with("missing authorization") {
            " (no token was sent: give --token-file FILE holding your token, or run `toolgate login --server URL --token-file FILE` once)"
        } else {
            " (check the token in --token-file, or run `toolgate login` again with a token the server accepts)"
        });
    }
    anyhow::anyhow!(text)
}

#[cfg(test)]
mod tests {
    use super::rpc_error;

    /// A commit whose acknowledgement was lost is told apart from a plain failure:
    /// the advice to read before writing again comes with it.
    #[test]
    fn an_indeterminate_commit_prints_the_advice() {
        let status = tonic::Status::from(crate::service::ServiceError::Indeterminate(
            "connection reset".into(),
        ));
        let text = rpc_error(status).to_string();
        assert!(text.starts_with("Unknown: "), "{text}");
        assert!(
            text.contains("may have been committed: read it back"),
            "{text}"
        );
        let plain = rpc_error(tonic::Status::unavailable("store unavailable")).to_string();
        assert!(!plain.contains("may have been committed"), "{plain}");
    }
}
