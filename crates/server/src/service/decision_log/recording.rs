//! The service's side of recording: an audit record written at once, and a DENY's
//! records built and handed to the decision log's writer.

use super::record::{Record, deny_detail};
use crate::auth::Principal;
use crate::policy::{Call, Decision};
use crate::service::Service;
use crate::store::NewAuditEvent;

impl Service {
    /// Appends one audit record now, past the DENY queue: for events whose record must
    /// be in the trail before they take effect (the policy file's reloads).
    pub async fn record_audit(
        &self,
        team: &str,
        actor: &str,
        kind: &str,
        detail: serde_json::Value,
    ) -> Result<(), crate::service::ServiceError> {
        let event = NewAuditEvent {
            team_id: team.to_owned(),
            revision: 0,
            actor: actor.to_owned(),
            kind: kind.to_owned(),
            detail,
        };
        Ok(self.store.append_audit(&[event]).await?)
    }

    /// A DENY's records (its audit record, and its decision-log record when
    /// `logged`), added to `into` for [`Service::record_denies`].
    #[allow(clippy::too_many_arguments)]
    pub(in crate::service) fn deny_records(
        &self,
        p: &Principal,
        team: &str,
        user: &str,
        revision: u64,
        call: &Call,
        d: &Decision,
        logged: Option<crate::service::decisions::DecisionRecord<'_>>,
        into: &mut Vec<Record>,
    ) {
        into.push(Record::Audit(NewAuditEvent {
            team_id: team.to_owned(),
            revision,
            actor: p.name.clone(),
            kind: "decision_denied".into(),
            detail: deny_detail(user, call, d),
        }));
        if let Some(record) = logged {
            into.push(Record::Decision {
                decision: record.packed(),
            });
        }
    }

    /// Journals DENY records (returning once they are on disk: the answer leaves
    /// after), then queues them for the audit writer. A full queue makes the caller
    /// wait for room rather than lose a record: a flood of denials is slowed to what
    /// the store can write.
    pub(in crate::service) async fn record_denies(&self, records: Vec<Record>) {
        // boxed: the journal's wait is in no ALLOW's future
        Box::pin(self.audit.record_deny(records)).await;
    }
}
