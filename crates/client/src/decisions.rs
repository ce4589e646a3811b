//! The decision log's service: listing, following, and the impact preview.

use super::{Authed, Client};
use crate::proto::v1 as pb;

impl Client {
    /// `DecisionLogService`, authenticated as this client.
    pub fn decision_log_service(
        &self,
    ) -> pb::decision_log_service_client::DecisionLogServiceClient<Authed> {
        pb::decision_log_service_client::DecisionLogServiceClient::with_interceptor(
            self.channel.clone(),
            self.bearer.clone(),
        )
    }
}
