//! Each principal's live view of the tools: its policy watched (`WatchPolicy`,
//! resumed with backoff), the upstream judged and the tool list filtered again on
//! every policy, upstream or pin change, and closed while toolgate is unreachable.

use super::{BACKOFF_MAX, BACKOFF_MIN, Gate, Visible, Who};
use crate::grpc::client::PolicyNotice;
use crate::proxy::names::{cap_description, check_upstream_name};
use rmcp::model::Tool;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;
use toolgate_core::backoff::Backoff;
use tracing::{debug, warn};

/// How soon a policy that could not be read is read again to judge the upstream.
const JUDGE_RETRY: Duration = Duration::from_secs(1);

impl Gate {
    /// `FilterTools` over `tools` whose names are valid; sorted by name for a stable
    /// order.
    async fn filter(&self, who: &Who, tools: &[Tool]) -> Result<(Vec<Tool>, u64), String> {
        // names the proxy would hide anyway are not reported (nor pinned)
        let valid: Vec<Tool> = tools
            .iter()
            .filter(|t| check_upstream_name(&t.name).is_ok())
            .cloned()
            .collect();
        let held = Arc::new(self.held_back(&who.team, &valid).await?);
        self.held.insert(who.team.clone(), Arc::clone(&held));
        let tools: Vec<&Tool> = tools
            .iter()
            .filter(|t| {
                let why = held.get(t.name.as_ref());
                if let Some(why) = why {
                    warn!(team = %who.team, server = %self.server_id, tool = %t.name, reason = why.reason(), "upstream tool hidden by its pin");
                }
                why.is_none()
            })
            .filter(|t| match check_upstream_name(&t.name) {
                Ok(()) => true,
                Err(why) => {
                    warn!(server = %self.server_id, tool = ?t.name, why, "upstream tool hidden: its name is invalid");
                    false
                }
            })
            .collect();
        let tools = serde_json::json!({ "tools": tools });
        let filtered = self
            .client
            .filter_tools(&who.team, &who.user, &self.server_id, &tools)
            .await
            .map_err(|e| format!("toolgate refused or is unreachable: {e}"))?;
        #[derive(serde::Deserialize)]
        struct Listed {
            tools: Vec<Tool>,
        }
        let mut kept = serde_json::from_value::<Listed>(filtered.tools)
            .map_err(|e| format!("decode filtered tools: {e}"))?
            .tools;
        kept.sort_by(|a, b| a.name.cmp(&b.name));
        for tool in &mut kept {
            let cut = tool
                .description
                .as_deref()
                .and_then(|d| cap_description(d, self.max_description_bytes));
            if let Some(cut) = cut {
                warn!(server = %self.server_id, tool = %tool.name, "upstream tool description cut to the limit");
                tool.description = Some(cut.into());
            }
        }
        Ok((kept, filtered.revision))
    }

    /// Keeps `who`'s view current: watches the policy, refilters on every change of
    /// policy or upstream list, fails closed while toolgate is unreachable (after the
    /// configured staleness).
    pub(super) async fn follow(self: Arc<Self>, who: Who, view: watch::Sender<Visible>) {
        // Ok(generation), bumped on every policy event; Err(since when the stream has
        // been down); None before the first attempt has ended.
        let (policy_tx, mut policy_rx) = watch::channel::<Option<Result<u64, Instant>>>(None);
        let watcher = tokio::spawn(Arc::clone(&self).watch_policy(who.clone(), policy_tx));
        let mut upstream = self.upstream.clone();
        let mut pins_moved = self.pins_moved.subscribe();
        self.watch_pins(&who.team);
        // the policy generation the upstream was last judged at
        let mut judged = None;
        loop {
            pins_moved.borrow_and_update();
            let policy = *policy_rx.borrow_and_update();
            let tools = upstream.borrow_and_update().clone();
            let mut deadline = None;
            if let Some(Ok(generation)) = policy
                && judged != Some(generation)
            {
                if self.judge(&who).await {
                    judged = Some(generation);
                } else {
                    // read again shortly: a refusal stands meanwhile
                    deadline = Some(Instant::now() + JUDGE_RETRY);
                }
            }
            let next = match (policy, tools) {
                (None, _) => None,
                (Some(Err(since)), _) => {
                    let until = since + self.staleness;
                    if Instant::now() < until && matches!(*view.borrow(), Visible::Tools { .. }) {
                        deadline = Some(until);
                        None
                    } else {
                        Some(Visible::Closed(
                            "toolgate is unreachable: no tool is shown until it is back".into(),
                        ))
                    }
                }
                (Some(Ok(_)), _) if self.refused(&who).is_some() => {
                    self.refused(&who).map(Visible::Closed)
                }
                (Some(Ok(_)), None) => None,
                (Some(Ok(_)), Some(tools)) => Some(match self.filter(&who, &tools).await {
                    Ok((tools, revision)) => {
                        self.remember_policy(&who).await;
                        Visible::Tools {
                            tools: Arc::new(tools),
                            revision,
                        }
                    }
                    Err(e) => {
                        warn!(team = %who.team, user = %who.user, error = %e, "filter failed: no tool shown");
                        Visible::Closed(e)
                    }
                }),
            };
            if let Some(next) = next {
                view.send_if_modified(|current| {
                    let same = match (&*current, &next) {
                        (Visible::Tools { tools: a, .. }, Visible::Tools { tools: b, .. }) => {
                            a == b
                        }
                        (Visible::Closed(_), Visible::Closed(_)) => true,
                        _ => false,
                    };
                    // a change of revision alone is not a change of the list
                    *current = next;
                    !same
                });
            }
            let sleep = async {
                match deadline {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                r = policy_rx.changed() => if r.is_err() { break },
                r = upstream.changed() => if r.is_err() { break },
                r = pins_moved.changed() => if r.is_err() { break },
                () = sleep => {}
                () = view.closed() => break,
            }
        }
        watcher.abort();
    }

    /// WatchPolicy for `who`, reconnecting with backoff and resuming after the last
    /// revision seen.
    async fn watch_policy(
        self: Arc<Self>,
        who: Who,
        state: watch::Sender<Option<Result<u64, Instant>>>,
    ) {
        let mut after = None;
        let mut backoff = Backoff::new(BACKOFF_MIN, BACKOFF_MAX);
        let mut generation = 0u64;
        loop {
            match self.client.watch_policy(&who.team, &who.user, after).await {
                Ok(mut stream) => {
                    // open again: refilter even if nothing changed while it was down
                    generation += 1;
                    let _ = state.send(Some(Ok(generation)));
                    loop {
                        match stream.next().await {
                            Ok(Some(PolicyNotice::Heartbeat)) => backoff.reset(),
                            Ok(Some(PolicyNotice::Changed { revision })) => {
                                backoff.reset();
                                after = Some(revision);
                                generation += 1;
                                debug!(team = %who.team, user = %who.user, revision, "policy event");
                                let _ = state.send(Some(Ok(generation)));
                            }
                            Ok(None) => break,
                            Err(e) => {
                                warn!(team = %who.team, user = %who.user, error = %e, "policy watch ended");
                                break;
                            }
                        }
                    }
                }
                Err(e) => {
                    warn!(team = %who.team, user = %who.user, error = %e, "policy watch refused");
                }
            }
            state.send_if_modified(|s| {
                if matches!(s, Some(Err(_))) {
                    false
                } else {
                    *s = Some(Err(Instant::now()));
                    true
                }
            });
            if state.is_closed() {
                return;
            }
            tokio::time::sleep(backoff.next_wait()).await;
        }
    }
}
