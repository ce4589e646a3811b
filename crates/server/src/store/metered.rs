//! A store that times its operations and counts their failures for the metrics, each
//! in a `store` span (a child of the call's span, so traces show the store's share).
//! Wrapped around the backend only when metrics or spans are exported.

use super::{
    AdminControls, Answer, Answered, ApprovalRecord, AuditEvent, AuditFilter, DecisionQuery,
    EncodedDecisions, History, IssuedToken, NewApproval, NewAuditEvent, NewToken, NoticeStream,
    PinSettings, PinWrite, Pruned, QuotaKey, Retention, SeenTool, Store, StoreError,
    StoredDecision, StoredPin, UserSettings, Versioned, async_trait,
};
use std::sync::Arc;
use std::time::Instant;
use tracing::Instrument as _;

/// The backend `S`, observed.
#[derive(Debug)]
pub struct Metered<S: ?Sized>(pub Arc<S>);

async fn observed<T>(
    op: &'static str,
    call: impl std::future::Future<Output = Result<T, StoreError>>,
) -> Result<T, StoreError> {
    let started = Instant::now();
    let result = call.instrument(tracing::info_span!("store", op = op)).await;
    crate::metrics::store(op, started.elapsed(), result.is_ok());
    result
}

#[async_trait]
impl Store for Metered<dyn Store> {
    async fn team_revision(&self, team_id: &str) -> Result<u64, StoreError> {
        observed("team_revision", self.0.team_revision(team_id)).await
    }

    async fn team_revisions(&self) -> Result<Vec<(String, u64)>, StoreError> {
        observed("team_revisions", self.0.team_revisions()).await
    }

    async fn get_admin(&self, team_id: &str) -> Result<Versioned<AdminControls>, StoreError> {
        observed("get_admin", self.0.get_admin(team_id)).await
    }

    async fn put_admin(
        &self,
        team_id: &str,
        controls: &AdminControls,
        expected: Option<u64>,
        actor: &str,
    ) -> Result<Versioned<AdminControls>, StoreError> {
        observed(
            "put_admin",
            self.0.put_admin(team_id, controls, expected, actor),
        )
        .await
    }

    async fn get_user(
        &self,
        team_id: &str,
        user_id: &str,
    ) -> Result<Versioned<UserSettings>, StoreError> {
        observed("get_user", self.0.get_user(team_id, user_id)).await
    }

    async fn put_user(
        &self,
        team_id: &str,
        user_id: &str,
        settings: &UserSettings,
        expected: Option<u64>,
        actor: &str,
    ) -> Result<Versioned<UserSettings>, StoreError> {
        observed(
            "put_user",
            self.0.put_user(team_id, user_id, settings, expected, actor),
        )
        .await
    }

    async fn changes_after(
        &self,
        team_id: &str,
        after: u64,
        limit: u32,
    ) -> Result<History, StoreError> {
        observed("changes_after", self.0.changes_after(team_id, after, limit)).await
    }

    async fn consume_quota(&self, key: &QuotaKey<'_>, max: u64) -> Result<bool, StoreError> {
        observed("consume_quota", self.0.consume_quota(key, max)).await
    }

    async fn quota_used(&self, key: &QuotaKey<'_>) -> Result<u64, StoreError> {
        observed("quota_used", self.0.quota_used(key)).await
    }

    async fn append_audit(&self, events: &[NewAuditEvent]) -> Result<(), StoreError> {
        observed("append_audit", self.0.append_audit(events)).await
    }

    async fn list_audit(&self, filter: &AuditFilter) -> Result<Vec<AuditEvent>, StoreError> {
        observed("list_audit", self.0.list_audit(filter)).await
    }

    async fn append_records(
        &self,
        audit: &[&NewAuditEvent],
        decisions: &EncodedDecisions,
    ) -> Result<Vec<u64>, StoreError> {
        observed("append_records", self.0.append_records(audit, decisions)).await
    }

    async fn list_decisions(
        &self,
        query: &DecisionQuery,
    ) -> Result<Vec<StoredDecision>, StoreError> {
        observed("list_decisions", self.0.list_decisions(query)).await
    }

    async fn decisions_between(
        &self,
        first: u64,
        last: u64,
        limit: u32,
    ) -> Result<Vec<StoredDecision>, StoreError> {
        observed(
            "decisions_between",
            self.0.decisions_between(first, last, limit),
        )
        .await
    }

    async fn prune_decisions(&self, retention: &Retention) -> Result<Pruned, StoreError> {
        observed("prune_decisions", self.0.prune_decisions(retention)).await
    }

    fn disk_full(&self) -> bool {
        self.0.disk_full()
    }

    async fn newest_decision_at(&self) -> Result<Option<i64>, StoreError> {
        observed("newest_decision_at", self.0.newest_decision_at()).await
    }

    async fn create_token(&self, token: &NewToken, actor: &str) -> Result<IssuedToken, StoreError> {
        observed("create_token", self.0.create_token(token, actor)).await
    }

    async fn revoke_token(
        &self,
        token_id: &str,
        actor: &str,
    ) -> Result<Option<IssuedToken>, StoreError> {
        observed("revoke_token", self.0.revoke_token(token_id, actor)).await
    }

    async fn list_tokens(
        &self,
        team_id: Option<&str>,
        active_at: Option<i64>,
        limit: u32,
    ) -> Result<Vec<IssuedToken>, StoreError> {
        observed("list_tokens", self.0.list_tokens(team_id, active_at, limit)).await
    }

    async fn get_token(&self, token_id: &str) -> Result<Option<IssuedToken>, StoreError> {
        observed("get_token", self.0.get_token(token_id)).await
    }

    async fn active_token_count(&self, team_id: &str, now_ms: i64) -> Result<u64, StoreError> {
        observed(
            "active_token_count",
            self.0.active_token_count(team_id, now_ms),
        )
        .await
    }

    async fn active_tokens(&self, now_ms: i64) -> Result<Vec<IssuedToken>, StoreError> {
        observed("active_tokens", self.0.active_tokens(now_ms)).await
    }

    async fn write_pins(
        &self,
        team_id: &str,
        server: &str,
        tools: &[SeenTool],
        how: PinWrite,
        actor: &str,
    ) -> Result<(Vec<StoredPin>, bool), StoreError> {
        observed(
            "write_pins",
            self.0.write_pins(team_id, server, tools, how, actor),
        )
        .await
    }

    async fn accept_pin(
        &self,
        team_id: &str,
        server: &str,
        tool: &str,
        sha256: &str,
        actor: &str,
    ) -> Result<Option<StoredPin>, StoreError> {
        observed(
            "accept_pin",
            self.0.accept_pin(team_id, server, tool, sha256, actor),
        )
        .await
    }

    async fn list_pins(
        &self,
        team_id: &str,
        server: Option<&str>,
        changed_only: bool,
        limit: u32,
    ) -> Result<Vec<StoredPin>, StoreError> {
        observed(
            "list_pins",
            self.0.list_pins(team_id, server, changed_only, limit),
        )
        .await
    }

    async fn get_pin_settings(&self, team_id: &str) -> Result<PinSettings, StoreError> {
        observed("get_pin_settings", self.0.get_pin_settings(team_id)).await
    }

    async fn put_pin_settings(
        &self,
        team_id: &str,
        settings: PinSettings,
        actor: &str,
    ) -> Result<(), StoreError> {
        observed(
            "put_pin_settings",
            self.0.put_pin_settings(team_id, settings, actor),
        )
        .await
    }

    async fn record_client_decisions(
        &self,
        rows: &[super::ClientDecision],
    ) -> Result<(), StoreError> {
        observed(
            "record_client_decisions",
            self.0.record_client_decisions(rows),
        )
        .await
    }

    async fn client_decisions(
        &self,
        team_id: &str,
        tool_use_ids: &[&str],
    ) -> Result<Vec<super::ClientDecision>, StoreError> {
        observed(
            "client_decisions",
            self.0.client_decisions(team_id, tool_use_ids),
        )
        .await
    }

    async fn record_sign_in(&self, sign_in: &super::SignIn) -> Result<(), StoreError> {
        observed("record_sign_in", self.0.record_sign_in(sign_in)).await
    }

    async fn list_sign_ins(
        &self,
        team_id: Option<&str>,
        limit: u32,
    ) -> Result<Vec<super::SignIn>, StoreError> {
        observed("list_sign_ins", self.0.list_sign_ins(team_id, limit)).await
    }

    async fn create_approval(&self, approval: &NewApproval) -> Result<(), StoreError> {
        observed("create_approval", self.0.create_approval(approval)).await
    }

    async fn answer_approval(
        &self,
        request_id: &str,
        answer: &Answer,
    ) -> Result<Answered, StoreError> {
        observed(
            "answer_approval",
            self.0.answer_approval(request_id, answer),
        )
        .await
    }

    async fn get_approval(&self, request_id: &str) -> Result<Option<ApprovalRecord>, StoreError> {
        observed("get_approval", self.0.get_approval(request_id)).await
    }

    async fn list_approvals(
        &self,
        team_id: &str,
        pending_only: bool,
        limit: u32,
    ) -> Result<Vec<ApprovalRecord>, StoreError> {
        observed(
            "list_approvals",
            self.0.list_approvals(team_id, pending_only, limit),
        )
        .await
    }

    async fn find_grant(
        &self,
        team_id: &str,
        user_id: &str,
        session_id: Option<&str>,
        call_key: &str,
        now_ms: i64,
    ) -> Result<Option<(String, i64)>, StoreError> {
        observed(
            "find_grant",
            self.0
                .find_grant(team_id, user_id, session_id, call_key, now_ms),
        )
        .await
    }

    async fn notices(&self) -> Result<Option<NoticeStream>, StoreError> {
        self.0.notices().await
    }

    async fn check(&self) -> Result<(), StoreError> {
        observed("check", self.0.check()).await
    }
}

#[cfg(test)]
mod tests {
    /// Trait methods that are not operations on the store: `disk_full` reads a flag,
    /// `notices` opens the stream of other replicas' commits once.
    const UNOBSERVED: [&str; 2] = ["disk_full", "notices"];

    /// The compiler makes the decorator implement every method (the trait has no
    /// default bodies); this keeps each one timed and counted under its own name.
    #[test]
    fn every_store_method_is_observed_under_its_name() {
        let store = include_str!("mod.rs");
        let start = store.find("pub trait Store").expect("the trait");
        let end = start + store[start..].find("\n}\n").expect("the trait's end");
        let methods: Vec<&str> = store[start..end]
            .lines()
            .filter_map(|l| {
                l.strip_prefix("    async fn ")
                    .or_else(|| l.strip_prefix("    fn "))
            })
            .filter_map(|l| l.split(['(', '<']).next())
            .collect();
        assert!(methods.len() > 30, "the trait's methods: {methods:?}");
        let metered: String = include_str!("metered.rs")
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        let unobserved: Vec<&&str> = methods
            .iter()
            .filter(|m| !UNOBSERVED.contains(m))
            .filter(|m| !metered.contains(&format!("observed(\"{m}\",self.0")))
            .collect();
        assert!(
            unobserved.is_empty(),
            "the metered store forwards these without `observed(\"NAME\", …)`: {unobserved:?}"
        );
    }
}
