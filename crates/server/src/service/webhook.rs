//! The approvals' outgoing webhook: each new request is posted (JSON) by one sender
//! task from a bounded queue, retried with the one jittered backoff, so a receiver
//! that is slow or down never delays a decision; what the queue cannot take is
//! dropped and logged (the request itself is in the store, listed and streamed).

use std::time::Duration;
use tokio::sync::mpsc;
use toolgate_core::backoff::Backoff;

/// One post to make.
#[derive(Debug, Clone)]
pub struct WebhookEvent {
    pub url: String,
    pub body: serde_json::Value,
}

/// How the webhook client behaves (`approvals` in the server's configuration).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WebhookLimits {
    /// Posts waiting to be sent; past it new ones are dropped (and logged).
    pub queue: usize,
    /// Tries per post, the first included.
    pub attempts: u32,
    /// How long one try may take.
    pub timeout: Duration,
}

impl Default for WebhookLimits {
    fn default() -> Self {
        Self {
            queue: 1000,
            attempts: 5,
            timeout: Duration::from_secs(5),
        }
    }
}

/// The sending side the service holds.
#[derive(Debug, Clone)]
pub struct Webhook {
    tx: Option<mpsc::Sender<WebhookEvent>>,
}

impl Webhook {
    /// Starts the sender task (inside a tokio runtime); without one, posts are dropped.
    pub fn start(limits: WebhookLimits) -> Self {
        if tokio::runtime::Handle::try_current().is_err() {
            return Self { tx: None };
        }
        let (tx, rx) = mpsc::channel(limits.queue.max(1));
        tokio::spawn(send_all(rx, limits));
        Self { tx: Some(tx) }
    }

    /// Queues a post; never waits.
    pub fn post(&self, event: WebhookEvent) {
        let Some(tx) = &self.tx else { return };
        if let Err(e) = tx.try_send(event) {
            tracing::warn!(error = %e, "approvals webhook: queue full, a request was not posted");
        }
    }
}

async fn send_all(mut rx: mpsc::Receiver<WebhookEvent>, limits: WebhookLimits) {
    // no redirects: a URL checked to be https (or loopback http) stays where it points
    let http = match reqwest::Client::builder()
        .timeout(limits.timeout)
        .redirect(reqwest::redirect::Policy::none())
        .build()
    {
        Ok(http) => http,
        Err(e) => {
            tracing::error!(error = %e, "approvals webhook: no HTTP client, posts are dropped");
            return;
        }
    };
    while let Some(event) = rx.recv().await {
        let body = event.body.to_string();
        let mut backoff = Backoff::new(Duration::from_millis(200), Duration::from_secs(10));
        for attempt in 1..=limits.attempts.max(1) {
            let sent = http
                .post(&event.url)
                .header("content-type", "application/json")
                .body(body.clone())
                .send()
                .await;
            match sent {
                Ok(r) if r.status().is_success() => break,
                outcome => {
                    let why = match outcome {
                        Ok(r) => format!("status {}", r.status()),
                        // the URL may hold a secret in its path: never logged
                        Err(e) => e.without_url().to_string(),
                    };
                    tracing::warn!(attempt, error = %why, "approvals webhook: post failed");
                    if attempt < limits.attempts {
                        tokio::time::sleep(backoff.next_wait()).await;
                    }
                }
            }
        }
    }
}
