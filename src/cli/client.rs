//! The connection to a server: address, bearer token and the gRPC clients.

use super::args::Connection;
use super::output::Printer;
use super::usage;
use crate::proto::v1 as pb;
use anyhow::Context as _;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

pub(super) type Authed = InterceptedService<Channel, Bearer>;

#[derive(Clone)]
pub(super) struct Bearer(Option<tonic::metadata::MetadataValue<tonic::metadata::Ascii>>);

impl tonic::service::Interceptor for Bearer {
    fn call(&mut self, mut req: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(v) = &self.0 {
            req.metadata_mut().insert("authorization", v.clone());
        }
        Ok(req)
    }
}

pub(super) struct Clients {
    channel: Channel,
    bearer: Bearer,
    pub(super) out: Printer,
}

impl Clients {
    pub(super) async fn connect(c: &Connection) -> anyhow::Result<Self> {
        let token = match (&c.token, &c.token_file) {
            (Some(t), _) => Some(t.clone()),
            (None, Some(f)) => Some(
                std::fs::read_to_string(f)
                    .with_context(|| format!("reading {}", f.display()))?
                    .trim()
                    .to_owned(),
            ),
            (None, None) => None,
        };
        let bearer = Bearer(
            token
                .map(|t| format!("Bearer {t}").parse())
                .transpose()
                .context("the token is not valid ASCII")?,
        );
        let channel = c
            .tls()
            .endpoint(&c.server)
            .map_err(usage)?
            .connect()
            .await
            .with_context(|| format!("cannot connect to {}", c.server))?;
        Ok(Self {
            channel,
            bearer,
            out: Printer(c.output),
        })
    }

    pub(super) fn admin(&self) -> pb::admin_service_client::AdminServiceClient<Authed> {
        pb::admin_service_client::AdminServiceClient::with_interceptor(
            self.channel.clone(),
            self.bearer.clone(),
        )
    }

    pub(super) fn users(
        &self,
    ) -> pb::user_settings_service_client::UserSettingsServiceClient<Authed> {
        pb::user_settings_service_client::UserSettingsServiceClient::with_interceptor(
            self.channel.clone(),
            self.bearer.clone(),
        )
    }

    pub(super) fn policy(&self) -> pb::policy_service_client::PolicyServiceClient<Authed> {
        pb::policy_service_client::PolicyServiceClient::with_interceptor(
            self.channel.clone(),
            self.bearer.clone(),
        )
    }
}

/// A failed RPC, with the server's message (and field violations) for people.
pub(super) fn rpc_error(status: tonic::Status) -> anyhow::Error {
    use tonic_types::StatusExt;
    let mut text = format!("{:?}: {}", status.code(), status.message());
    if let Some(bad) = status.get_details_bad_request() {
        for v in bad.field_violations {
            text.push_str(&format!("\n  {}: {}", v.field, v.description));
        }
    }
    anyhow::anyhow!(text)
}
