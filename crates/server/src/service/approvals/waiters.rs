//! The approval waits open on this replica: a request whose waiting caller went
//! away (and did not come back within a grace period) is abandoned.

use crate::service::Service;
use crate::store::{Answer, Answered, ApprovalState, now_ms};
use std::sync::Arc;
use std::time::Duration;

/// How long a request stays pending once its last waiter went away, for that waiter
/// to come back (a client resumes a broken wait within two seconds); then it is
/// abandoned.
const ABANDON_GRACE: Duration = Duration::from_secs(3);

/// The approval waits open on this replica, by request id.
#[derive(Debug, Default)]
pub(in crate::service) struct Waiters(std::sync::Mutex<std::collections::HashMap<String, usize>>);

impl Waiters {
    fn lock(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, usize>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether a wait on `id` is open.
    fn waiting(&self, id: &str) -> bool {
        self.lock().contains_key(id)
    }
}

/// One open wait of the caller that asked. When it ends without the answer (the
/// caller went away; not the server stopping) and no other wait on the request opens
/// within [`ABANDON_GRACE`], the request is abandoned: it leaves the inbox and cannot
/// be approved, since its call will never run.
pub(super) struct Waiting {
    service: Arc<Service>,
    id: String,
    pub(super) answered: bool,
}

impl Waiting {
    pub(super) fn new(service: Arc<Service>, id: &str) -> Self {
        *service
            .approval_waiters
            .lock()
            .entry(id.to_owned())
            .or_default() += 1;
        Self {
            service,
            id: id.to_owned(),
            answered: false,
        }
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        let last = {
            let mut open = self.service.approval_waiters.lock();
            match open.get_mut(&self.id) {
                Some(n) if *n > 1 => {
                    *n -= 1;
                    false
                }
                _ => {
                    open.remove(&self.id);
                    true
                }
            }
        };
        let stopping = self.service.shutdown.is_cancelled();
        if self.answered || !last || stopping {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let service = self.service.clone();
        let id = std::mem::take(&mut self.id);
        runtime.spawn(async move {
            tokio::select! {
                () = tokio::time::sleep(ABANDON_GRACE) => {}
                () = service.shutdown.cancelled() => return,
            }
            if !service.approval_waiters.waiting(&id) {
                service.abandon(&id).await;
            }
        });
    }
}

impl Service {
    /// Marks a pending request abandoned (once, on any replica).
    async fn abandon(&self, id: &str) {
        let answer = Answer {
            state: ApprovalState::Abandoned,
            by: String::new(),
            at_ms: now_ms(),
            scope: None,
            grant: None,
            reason: None,
            allowlist_entry: None,
            allowlist_revision: None,
        };
        match self.store.answer_approval(id, &answer).await {
            Ok(Answered::Now(r)) => {
                self.hub.approvals_changed(&r.new.team_id);
                tracing::info!(request = %id, "approval request abandoned: the call that waited for it went away");
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(error = %e, request = %id, "cannot mark an approval request abandoned: it stays pending until its deadline")
            }
        }
    }
}
