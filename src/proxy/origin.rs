//! The HTTP endpoint's `Host` and `Origin` checks (DNS rebinding): a request naming a
//! host the proxy does not answer to, or sent by a page of a foreign origin, gets 403
//! before its token or body is read, as the MCP transport specification asks.
//!
//! On a loopback listener the proxy answers to `localhost`, `127.0.0.1` and `[::1]`
//! (any port) and to the hosts configured; on any other, `Host` is checked only when
//! hosts are configured (the bearer token guards it). An `Origin`, when present, must
//! be configured or name an allowed host.

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// The longest `Host` or `Origin` value looked at; longer is refused.
const MAX_VALUE_BYTES: usize = 1024;
const LOOPBACK_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// Which `Host` and `Origin` values the endpoint accepts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HttpAccess {
    /// Host names (`mcp.example.com`, any port) or authorities
    /// (`mcp.example.com:8443`) the proxy answers to, besides the loopback names on
    /// a loopback listener.
    pub allowed_hosts: Vec<String>,
    /// Origins (`https://app.example.com`) whose pages may call the proxy, besides
    /// those naming an allowed host.
    pub allowed_origins: Vec<String>,
}

impl HttpAccess {
    /// Every problem of the configured values, each naming the flag and the fix.
    pub fn check(&self) -> Result<(), String> {
        let mut problems = Vec::new();
        for h in &self.allowed_hosts {
            if authority(h).is_none() {
                problems.push(format!(
                    "--allowed-host {h:?}: not a host name or host:port; give e.g. mcp.example.com or mcp.example.com:8443"
                ));
            }
        }
        for o in &self.allowed_origins {
            if origin_authority(o).is_none() {
                problems.push(format!(
                    "--allowed-origin {o:?}: not an origin; give scheme://host[:port], e.g. https://app.example.com"
                ));
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("; "))
        }
    }
}

/// The checks as the endpoint applies them.
#[derive(Debug, Clone)]
pub struct Checks {
    /// None: any host (a non-loopback listener without configured hosts).
    hosts: Option<Vec<(String, Option<u16>)>>,
    origins: Vec<String>,
}

impl Checks {
    pub fn new(access: &HttpAccess, loopback: bool) -> Arc<Self> {
        let mut hosts: Vec<(String, Option<u16>)> = access
            .allowed_hosts
            .iter()
            .filter_map(|h| authority(h))
            .collect();
        if loopback {
            hosts.extend(LOOPBACK_NAMES.iter().map(|n| ((*n).to_owned(), None)));
        }
        let origins = access
            .allowed_origins
            .iter()
            .map(|o| o.trim_end_matches('/').to_ascii_lowercase())
            .collect();
        Arc::new(Self {
            hosts: (!hosts.is_empty()).then_some(hosts),
            origins,
        })
    }

    fn host_allowed(&self, host: &str, port: Option<u16>) -> bool {
        match &self.hosts {
            None => true,
            Some(hosts) => hosts
                .iter()
                .any(|(h, p)| *h == host && (p.is_none() || *p == port)),
        }
    }

    /// Why the request must be refused, if it must.
    pub fn refusal(&self, headers: &HeaderMap) -> Option<String> {
        let value = |name: header::HeaderName| {
            headers
                .get(&name)
                .map(|v| v.to_str().ok().filter(|s| s.len() <= MAX_VALUE_BYTES))
        };
        match value(header::HOST) {
            Some(None) => return Some("the Host header is not readable text".into()),
            Some(Some(host)) => match authority(host) {
                Some((name, port)) if self.host_allowed(&name, port) => {}
                _ => {
                    return Some(format!(
                        "Host {host:?} is not a name this proxy answers to (DNS rebinding protection); if it is yours, add it with --allowed-host"
                    ));
                }
            },
            // HTTP/1.0 or HTTP/2 without the header: only the loopback check needs it
            None if self.hosts.is_some() => {
                return Some("the Host header is missing; send the proxy's host name".into());
            }
            None => {}
        }
        match value(header::ORIGIN) {
            None => None,
            Some(None) => Some("the Origin header is not readable text".into()),
            Some(Some(origin)) => {
                let lower = origin.trim_end_matches('/').to_ascii_lowercase();
                let named = origin_authority(&lower).is_some_and(|(name, port)| {
                    self.hosts.is_some() && self.host_allowed(&name, port)
                });
                if named || self.origins.contains(&lower) {
                    None
                } else {
                    Some(format!(
                        "Origin {origin:?} may not call this proxy (a page of another site); if it is yours, add it with --allowed-origin"
                    ))
                }
            }
        }
    }
}

/// `host` or `host:port`, lowercased; IPv6 in brackets. None when not one.
fn authority(value: &str) -> Option<(String, Option<u16>)> {
    let value = value.trim().to_ascii_lowercase();
    let (host, port) = if let Some(rest) = value.strip_prefix('[') {
        let end = rest.find(']')?;
        let host = format!("[{}]", &rest[..end]);
        match &rest[end + 1..] {
            "" => (host, None),
            p => (host, Some(p.strip_prefix(':')?.parse().ok()?)),
        }
    } else {
        match value.rsplit_once(':') {
            Some((h, p)) => (h.to_owned(), Some(p.parse().ok()?)),
            None => (value.clone(), None),
        }
    };
    let plain = host
        .trim_matches(|c| c == '[' || c == ']')
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '_'));
    (!host.is_empty() && plain).then_some((host, port))
}

/// The authority of `scheme://authority` (no path), None when not an origin.
fn origin_authority(origin: &str) -> Option<(String, Option<u16>)> {
    let (scheme, rest) = origin.split_once("://")?;
    if !matches!(scheme, "http" | "https") || rest.contains(['/', '@', '?', '#']) {
        return None;
    }
    authority(rest)
}

/// Refuses a request that fails the checks with 403.
pub async fn guard(State(checks): State<Arc<Checks>>, req: Request, next: Next) -> Response {
    match checks.refusal(req.headers()) {
        None => next.run(req).await,
        Some(why) => {
            tracing::info!(why = %why, "HTTP request refused");
            (StatusCode::FORBIDDEN, format!("toolgate proxy: {why}\n")).into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(host: Option<&str>, origin: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(v) = host {
            h.insert(header::HOST, v.parse().unwrap());
        }
        if let Some(v) = origin {
            h.insert(header::ORIGIN, v.parse().unwrap());
        }
        h
    }

    /// (loopback listener, allowed hosts, allowed origins, Host, Origin, accepted)
    type Case = (
        bool,
        &'static [&'static str],
        &'static [&'static str],
        Option<&'static str>,
        Option<&'static str>,
        bool,
    );
    const CASES: &[Case] = &[
        (true, &[], &[], Some("127.0.0.1:8080"), None, true),
        (
            true,
            &[],
            &[],
            Some("localhost:1"),
            Some("http://localhost:1"),
            true,
        ),
        (true, &[], &[], Some("[::1]:9"), None, true),
        (true, &[], &[], Some("LOCALHOST"), None, true),
        (
            true,
            &[],
            &[],
            Some("evil.example.com"),
            Some("http://evil.example.com"),
            false,
        ),
        (true, &[], &[], Some("evil.example.com:8080"), None, false),
        (
            true,
            &[],
            &[],
            Some("127.0.0.1"),
            Some("http://evil.example.com"),
            false,
        ),
        (true, &[], &[], Some("127.0.0.1"), Some("null"), false),
        (true, &[], &[], None, None, false),
        (true, &[], &[], Some("127.0.0.1.evil.com"), None, false),
        (true, &[], &[], Some("localhost@evil.com"), None, false),
        (true, &["mcp.corp"], &[], Some("mcp.corp:443"), None, true),
        (
            true,
            &["mcp.corp:443"],
            &[],
            Some("mcp.corp:444"),
            None,
            false,
        ),
        (false, &[], &[], Some("anything.example"), None, true),
        (false, &[], &[], None, None, true),
        (
            false,
            &[],
            &[],
            Some("anything.example"),
            Some("https://anything.example"),
            false,
        ),
        (
            false,
            &[],
            &["https://app.corp"],
            Some("x"),
            Some("https://app.corp"),
            true,
        ),
        (
            false,
            &[],
            &["https://app.corp"],
            Some("x"),
            Some("https://app.corp.evil"),
            false,
        ),
        (false, &["mcp.corp"], &[], Some("evil.example"), None, false),
        (
            false,
            &["mcp.corp"],
            &[],
            Some("mcp.corp"),
            Some("https://mcp.corp"),
            true,
        ),
        (
            false,
            &["mcp.corp"],
            &[],
            Some("mcp.corp"),
            Some("https://evil@mcp.corp"),
            false,
        ),
    ];

    #[test]
    fn hosts_and_origins_as_the_table_says() {
        for (loopback, hosts, origins, host, origin, accepted) in CASES {
            let access = HttpAccess {
                allowed_hosts: hosts.iter().map(|s| s.to_string()).collect(),
                allowed_origins: origins.iter().map(|s| s.to_string()).collect(),
            };
            access.check().unwrap();
            let refusal = Checks::new(&access, *loopback).refusal(&headers(*host, *origin));
            assert_eq!(
                refusal.is_none(),
                *accepted,
                "{host:?} {origin:?} {hosts:?} {origins:?}: {refusal:?}"
            );
        }
    }

    #[test]
    fn a_long_or_unreadable_value_is_refused() {
        let checks = Checks::new(&HttpAccess::default(), true);
        let long = format!("{}.localhost", "a".repeat(2000));
        assert!(checks.refusal(&headers(Some(&long), None)).is_some());
        let mut h = headers(Some("localhost"), None);
        h.insert(
            header::ORIGIN,
            axum::http::HeaderValue::from_bytes(b"http://\xff").unwrap(),
        );
        assert!(checks.refusal(&h).is_some());
    }

    #[test]
    fn bad_configuration_is_named() {
        let access = HttpAccess {
            allowed_hosts: vec!["a b".into(), "ok.example".into()],
            allowed_origins: vec!["app.example".into()],
        };
        let e = access.check().unwrap_err();
        assert!(e.contains("--allowed-host \"a b\""), "{e}");
        assert!(e.contains("--allowed-origin \"app.example\""), "{e}");
    }
}
