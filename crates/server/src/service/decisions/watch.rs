//! Following the decision log: this replica's records as its writer stores them,
//! other replicas' as [`relay`] reads them on their notices, and the clients' reports,
//! each within the watcher's scope.

use super::listing::{DecisionFilter, handed_out};
use crate::auth::Principal;
use crate::hub::{DecisionsCommitted, Hub};
use crate::service::{Service, ServiceError};
use crate::store::{DecisionQuery, Store, StoredDecision};
use std::sync::Arc;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;
use tracing::warn;

/// An item of a decision watch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecisionEvent {
    Decision(Box<StoredDecision>),
    /// This many records were not sent: the subscriber fell behind, or another
    /// replica's could not be read (0: how many is not known, its notices were missed).
    Lagged(u64),
    /// A client's report of what it did with a call, as it arrived here.
    ClientDecision(Box<crate::store::ClientDecision>),
}

/// A live stream of records matching a filter, within the caller's scope.
#[derive(Debug)]
pub struct DecisionWatch {
    query: DecisionQuery,
    /// This replica's records, as its writer stores them.
    rx: broadcast::Receiver<Arc<StoredDecision>>,
    /// Other replicas' records, as [`relay`] reads them.
    relayed: broadcast::Receiver<Relayed>,
    /// The clients' reports this replica receives.
    pub(in crate::service) reports: broadcast::Receiver<Arc<crate::store::ClientDecision>>,
    shutdown: CancellationToken,
}

impl DecisionWatch {
    /// The next matching record, word of a lag, or `None` once the server stops.
    pub async fn next(&mut self) -> Option<DecisionEvent> {
        loop {
            let received = tokio::select! {
                () = self.shutdown.cancelled() => return None,
                received = self.rx.recv() => received.map(Relayed::Record),
                received = self.relayed.recv() => received,
                report = self.reports.recv() => match report {
                    // the caller's scope: its team, and its own user for a member
                    Ok(r) if self.query.team_id.as_deref().is_none_or(|t| t == r.team_id)
                        && self.query.user_id.as_deref().is_none_or(|u| u == r.user_id) =>
                    {
                        return Some(DecisionEvent::ClientDecision(Box::new((*r).clone())));
                    }
                    Ok(_) => continue,
                    Err(broadcast::error::RecvError::Lagged(n)) => {
                        return Some(DecisionEvent::Lagged(n));
                    }
                    Err(broadcast::error::RecvError::Closed) => continue,
                },
            };
            match received {
                Ok(Relayed::Record(record)) if self.query.matches(&record.decision) => {
                    return Some(DecisionEvent::Decision(Box::new(handed_out(&record))));
                }
                Ok(Relayed::Record(_)) => {}
                Ok(Relayed::Missed(n)) | Err(broadcast::error::RecvError::Lagged(n)) => {
                    return Some(DecisionEvent::Lagged(n));
                }
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }
}

impl Service {
    /// Records matching `filter` as they are written, within the caller's scope.
    pub fn watch_decisions(
        &self,
        p: &Principal,
        filter: &DecisionFilter,
    ) -> Result<DecisionWatch, ServiceError> {
        let query = self.decision_scope(p, filter)?;
        Ok(DecisionWatch {
            query,
            rx: self.audit.subscribe(),
            relayed: self.relayed.subscribe(),
            reports: self.client_reports.subscribe(),
            shutdown: self.shutdown.clone(),
        })
    }
}

/// What [`relay`] passes to this replica's watchers.
#[derive(Debug, Clone)]
pub(in crate::service) enum Relayed {
    /// A record another replica wrote.
    Record(Arc<StoredDecision>),
    /// This many records could not be read (0: how many is not known).
    Missed(u64),
}

/// Records read per query when a notice names many.
const RELAY_PAGE: u32 = 1000;

/// Reads the records other replicas announce and passes them to this replica's
/// watchers (their writers are serialised, so a notice's id range is exactly one
/// commit's records); reads nothing while nobody here watches.
pub(in crate::service) async fn relay(
    hub: Arc<Hub>,
    store: Arc<dyn Store>,
    tx: broadcast::Sender<Relayed>,
    stop: CancellationToken,
) {
    let mut notices = hub.decision_notices();
    loop {
        let notice = tokio::select! {
            () = stop.cancelled() => return,
            notice = notices.recv() => notice,
        };
        let (first, last) = match notice {
            Ok(DecisionsCommitted::Range { first, last }) => (first, last),
            Ok(DecisionsCommitted::Missed) | Err(broadcast::error::RecvError::Lagged(_)) => {
                let _ = tx.send(Relayed::Missed(0));
                continue;
            }
            Err(broadcast::error::RecvError::Closed) => return,
        };
        let mut from = first;
        while from <= last && tx.receiver_count() > 0 {
            match store.decisions_between(from, last, RELAY_PAGE).await {
                Ok(page) => {
                    let Some(end) = page.last().map(|r| r.id) else {
                        break;
                    };
                    let full = page.len() == RELAY_PAGE as usize;
                    for record in page {
                        // no receiver left is not an error: the last watcher went
                        let _ = tx.send(Relayed::Record(Arc::new(record)));
                    }
                    if !full {
                        break;
                    }
                    from = end + 1;
                }
                Err(e) => {
                    warn!(error = %e, first = from, last, "cannot read another replica's decision records: this replica's watchers are told they missed them");
                    let _ = tx.send(Relayed::Missed(last - from + 1));
                    break;
                }
            }
        }
    }
}
