//! `AwaitApproval` and `WatchApprovals`: a request followed to its answer, and a
//! team's requests as they change, woken by the hub's approval notices.

use super::MAX_LIST;
use super::view::ApprovalView;
use super::waiters::Waiting;
use crate::auth::Principal;
use crate::hub::ApprovalsChanged;
use crate::service::{Service, ServiceError, check_id, own_subject};
use crate::store::{ApprovalState, now_ms};
use futures::Stream;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast::error::RecvError;

impl Service {
    /// The request as it stands, then (when it is answered or its deadline passes)
    /// its final state, and the stream ends. Heartbeats every `heartbeat`; ends with
    /// `Unavailable` on shutdown (the caller resumes with the same id).
    pub async fn await_approval(
        self: &Arc<Self>,
        p: &Principal,
        id: &str,
    ) -> Result<impl Stream<Item = Result<AwaitEvent, ServiceError>> + use<>, ServiceError> {
        // subscribe first: an answer committed from here on wakes the loop
        let mut notices = self.hub.approval_notices();
        let record = self.readable(p, id).await?;
        let this = self.clone();
        let id = record.new.request_id.clone();
        let team: Arc<str> = Arc::from(record.new.team_id.as_str());
        let heartbeat = self.heartbeat;
        let shutdown = self.shutdown.clone();
        // only the principal that asked is the waiting caller (an approver may follow too)
        let waits = p.name == record.new.principal;
        Ok(async_stream::try_stream! {
            let mut waiting = waits.then(|| Waiting::new(this.clone(), &id));
            let mut record = record;
            let mut sent_first = false;
            loop {
                let now = now_ms();
                if record.state == ApprovalState::Pending && now >= record.new.deadline_ms {
                    record = this.expire(record).await?;
                }
                let view = ApprovalView::at(record, now_ms());
                let done = view.state != ApprovalState::Pending;
                if done || !sent_first {
                    sent_first = true;
                    yield AwaitEvent::Approval(Box::new(view.clone()));
                }
                if done {
                    if let Some(w) = waiting.as_mut() {
                        w.answered = true;
                    }
                    return;
                }
                let wait = Duration::from_millis(
                    u64::try_from(view.record.new.deadline_ms - now_ms()).unwrap_or(0),
                );
                let deadline = tokio::time::sleep(wait);
                tokio::pin!(deadline);
                let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + heartbeat, heartbeat);
                loop {
                    let woke = tokio::select! {
                        n = notices.recv() => match n {
                            Ok(ApprovalsChanged::Team(t)) if t != team => Wake::Other,
                            Ok(_) | Err(RecvError::Lagged(_)) => Wake::Changed,
                            Err(RecvError::Closed) => Wake::Stopping,
                        },
                        () = &mut deadline => Wake::Changed,
                        _ = tick.tick() => Wake::Tick,
                        () = shutdown.cancelled() => Wake::Stopping,
                    };
                    match woke {
                        Wake::Other => {}
                        Wake::Changed => break,
                        Wake::Tick => yield AwaitEvent::Heartbeat,
                        Wake::Stopping => Err(stopping())?,
                    }
                }
                record = this.stored(&id).await?;
            }
        })
    }

    /// The team's pending requests, then each request as it changes (here or on
    /// another replica), with heartbeats; ends with `Unavailable` on shutdown.
    pub async fn watch_approvals(
        self: &Arc<Self>,
        p: &Principal,
        team: &str,
    ) -> Result<impl Stream<Item = Result<WatchApprovalsEvent, ServiceError>> + use<>, ServiceError>
    {
        let (team, _) = own_subject(p, team, "");
        let team: String = check_id("team_id", team)?.into_owned();
        self.check_lister(p, &team).await?;
        let mut notices = self.hub.approval_notices();
        let this = self.clone();
        let heartbeat = self.heartbeat;
        let shutdown = self.shutdown.clone();
        let team_key: Arc<str> = Arc::from(team.as_str());
        Ok(async_stream::try_stream! {
            // what each request was last sent as; bounded by the window re-read below
            let mut seen: std::collections::HashMap<String, ApprovalState> = Default::default();
            let now = now_ms();
            let pending: Vec<ApprovalView> = this
                .store
                .list_approvals(&team, true, MAX_LIST)
                .await?
                .into_iter()
                .map(|r| ApprovalView::at(r, now))
                .filter(|v| v.state == ApprovalState::Pending)
                .collect();
            for v in &pending {
                seen.insert(v.record.new.request_id.clone(), v.state);
            }
            yield WatchApprovalsEvent::Snapshot(pending);
            let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + heartbeat, heartbeat);
            loop {
                let woke = tokio::select! {
                    n = notices.recv() => match n {
                        Ok(ApprovalsChanged::Team(t)) if t != team_key => Wake::Other,
                        Ok(_) | Err(RecvError::Lagged(_)) => Wake::Changed,
                        Err(RecvError::Closed) => Wake::Stopping,
                    },
                    // a quiet tick also shows the requests whose deadline passed
                    _ = tick.tick() => Wake::Tick,
                    () = shutdown.cancelled() => Wake::Stopping,
                };
                let beat = match woke {
                    Wake::Other => continue,
                    Wake::Changed => false,
                    Wake::Tick => true,
                    Wake::Stopping => Err(stopping())?,
                };
                let now = now_ms();
                let recent = this.store.list_approvals(&team, false, MAX_LIST).await?;
                let mut changed = Vec::new();
                let mut window = std::collections::HashMap::with_capacity(recent.len());
                for r in recent {
                    let v = ApprovalView::at(r, now);
                    let id = v.record.new.request_id.clone();
                    if seen.get(&id) != Some(&v.state) {
                        changed.push(v.clone());
                    }
                    window.insert(id, v.state);
                }
                seen = window;
                // oldest first, as they happened
                for v in changed.into_iter().rev() {
                    yield WatchApprovalsEvent::Approval(Box::new(v));
                }
                if beat {
                    yield WatchApprovalsEvent::Heartbeat;
                }
            }
        })
    }
}

/// What woke a waiting stream.
enum Wake {
    /// Another team's notice.
    Other,
    /// This team's requests changed (or may have), or a deadline passed.
    Changed,
    Tick,
    Stopping,
}

fn stopping() -> ServiceError {
    ServiceError::Unavailable(
        "the server is stopping: call again (another replica, or this one once it restarts)".into(),
    )
}

/// One event of `AwaitApproval`.
#[derive(Debug, Clone)]
pub enum AwaitEvent {
    Approval(Box<ApprovalView>),
    Heartbeat,
}

/// One event of `WatchApprovals`.
#[derive(Debug, Clone)]
pub enum WatchApprovalsEvent {
    Snapshot(Vec<ApprovalView>),
    Approval(Box<ApprovalView>),
    Heartbeat,
}
