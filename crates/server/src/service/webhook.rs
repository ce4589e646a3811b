//! The approvals' outgoing webhook: each new request is posted (JSON) by one sender
//! task from a bounded queue, retried with the one jittered backoff, so a receiver
//! that is slow or down never delays a decision; what the queue cannot take is
//! dropped and logged (the request itself is in the store, listed and streamed).
//! Where it may connect is checked when it connects, on the address the host name
//! resolved to (a name that resolves elsewhere tomorrow is caught): never link-local
//! or a cloud metadata service, loopback and private ranges only when configured.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use toolgate_core::backoff::Backoff;
use toolgate_core::secure_url::{Reach, check_destination, is_metadata_host};

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
    /// The networks besides the public internet it may post to.
    pub reach: Reach,
}

impl Default for WebhookLimits {
    fn default() -> Self {
        Self {
            queue: 1000,
            attempts: 5,
            timeout: Duration::from_secs(5),
            reach: Reach::default(),
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

/// Resolves a host name and refuses it unless every address it has may be reached:
/// the check is on what the connection will use, not on what the name once was.
struct Guarded(Reach);

impl reqwest::dns::Resolve for Guarded {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let reach = self.0;
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addrs = resolve_checked(&host, reach).await?;
            Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// `host`'s addresses, all of which `reach` allows; the refusal otherwise.
async fn resolve_checked(
    host: &str,
    reach: Reach,
) -> Result<Vec<SocketAddr>, Box<dyn std::error::Error + Send + Sync>> {
    if is_metadata_host(host) {
        return Err(
            format!("{host} is a cloud metadata service, which the server never sends to").into(),
        );
    }
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, 0)).await?.collect();
    for addr in &addrs {
        check_destination(addr.ip(), reach).map_err(|e| format!("{host}: {e}"))?;
    }
    if addrs.is_empty() {
        return Err(format!("{host} has no address").into());
    }
    Ok(addrs)
}

/// A URL whose host is an address (which no resolver sees) or a metadata service's
/// name, checked before connecting; a name is checked by [`Guarded`] when resolved.
fn check_url(url: &str, reach: Reach) -> Result<(), String> {
    let url = reqwest::Url::parse(url).map_err(|e| format!("not a URL: {e}"))?;
    let host = url.host_str().ok_or("the URL names no host")?;
    // an address as WHATWG writes it (IPv6 in brackets), else a name
    match host.trim_start_matches('[').trim_end_matches(']').parse() {
        Ok(ip) => check_destination(ip, reach),
        Err(_) if is_metadata_host(host) => Err(format!(
            "{host} is a cloud metadata service, which the server never sends to"
        )),
        Err(_) => Ok(()),
    }
}

/// The HTTP client posts go through: no proxy (the check is on the address connected
/// to), no redirects, the guarded resolver.
fn client(limits: &WebhookLimits) -> reqwest::Result<reqwest::Client> {
    // no redirects: a URL checked to be https (or loopback http) stays where it points
    reqwest::Client::builder()
        .timeout(limits.timeout)
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .dns_resolver(Arc::new(Guarded(limits.reach)))
        .build()
}

/// One try at posting `body` to `url`: refused before connecting when the
/// destination may not be reached.
async fn post_once(
    http: &reqwest::Client,
    url: &str,
    body: &str,
    reach: Reach,
) -> Result<reqwest::StatusCode, String> {
    check_url(url, reach)?;
    http.post(url)
        .header("content-type", "application/json")
        .body(body.to_owned())
        .send()
        .await
        .map(|r| r.status())
        // the URL may hold a secret in its path: never logged
        .map_err(|e| chain(&e.without_url()))
}

/// An error with its causes (reqwest's own text hides the resolver's refusal).
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

async fn send_all(mut rx: mpsc::Receiver<WebhookEvent>, limits: WebhookLimits) {
    let http = match client(&limits) {
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
            match post_once(&http, &event.url, &body, limits.reach).await {
                Ok(status) if status.is_success() => break,
                outcome => {
                    let why = match outcome {
                        Ok(status) => format!("status {status}"),
                        Err(e) => e,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A receiver on loopback gets a post only when loopback is allowed; a name that
    /// resolves to loopback (`localhost`) is refused as the address is, before any
    /// connection; link-local and metadata destinations never.
    #[tokio::test]
    async fn the_destination_is_checked_when_connecting() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let limits = |loopback| WebhookLimits {
            timeout: Duration::from_secs(5),
            reach: Reach {
                loopback,
                private_networks: false,
            },
            ..WebhookLimits::default()
        };
        let refused = limits(false);
        let http = client(&refused).unwrap();
        for url in [
            format!("http://127.0.0.1:{port}/hook"),
            format!("http://localhost:{port}/hook"),
            format!("http://[::ffff:127.0.0.1]:{port}/hook"),
        ] {
            let e = post_once(&http, &url, "{}", refused.reach)
                .await
                .unwrap_err();
            assert!(e.contains("loopback"), "{url}: {e}");
        }
        assert!(listener.accept().is_err(), "a refused post connected");
        for url in [
            "https://169.254.169.254/latest/meta-data/",
            "https://[fd00:ec2::254]/",
            "https://metadata.google.internal/computeMetadata/v1/",
            "https://[fe80::1]/",
        ] {
            let e = post_once(
                &http,
                url,
                "{}",
                Reach {
                    loopback: true,
                    private_networks: true,
                },
            )
            .await
            .unwrap_err();
            assert!(e.contains("never"), "{url}: {e}");
        }
        // allowed: the connection is made (nothing answers HTTP, so the post fails
        // after connecting)
        let allowed = limits(true);
        let http = client(&allowed).unwrap();
        let url = format!("http://localhost:{port}/hook");
        let post = tokio::spawn(async move {
            let http = http;
            post_once(&http, &url, "{}", allowed.reach).await
        });
        let accepted = tokio::task::spawn_blocking(move || {
            listener.set_nonblocking(false).unwrap();
            listener.accept().map(|_| ())
        });
        tokio::time::timeout(Duration::from_secs(10), accepted)
            .await
            .expect("the allowed post connected in time")
            .unwrap()
            .unwrap();
        post.abort();
    }
}
