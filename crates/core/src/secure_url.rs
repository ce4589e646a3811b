//! Where the server itself sends or fetches (a webhook, an identity provider's keys):
//! https, or plain http only to this machine, so nothing crosses a network in clear.

/// Checks `text` is an https URL, or http to a loopback address (127.0.0.0/8, ::1 or
/// `localhost`), without a user name or password, read by the WHATWG rules; the
/// problem otherwise, as a hint ending in what to write (`example`).
pub fn check_secure_url(text: &str, example: &str) -> Result<(), String> {
    let url =
        url::Url::parse(text).map_err(|e| format!("is not a URL ({e}): write e.g. {example}"))?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(
            "carries a user name or password: put the secret in the URL's path or query".into(),
        );
    }
    match url.scheme() {
        "https" if url.host().is_some() => Ok(()),
        "http" if is_loopback(&url) => Ok(()),
        "http" => Err(format!(
            "is plain http to a host that is not loopback: use https, e.g. {example} (http is allowed only to 127.0.0.1, ::1 or localhost)"
        )),
        other => Err(format!("has scheme {other:?}: use https, e.g. {example}")),
    }
}

/// Whether the URL's host is this machine.
pub fn is_loopback(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        None => false,
    }
}

/// Which networks the server may send to besides the public internet (checked on
/// the address a name resolves to, when connecting).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reach {
    /// This machine (127.0.0.0/8, ::1): a local relay.
    pub loopback: bool,
    /// Private and shared ranges (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7).
    pub private_networks: bool,
}

/// Host names of cloud instance metadata services, refused whatever they resolve to.
const METADATA_HOSTS: &[&str] = &[
    "metadata.google.internal",
    "metadata.goog",
    "metadata",
    "instance-data",
    "instance-data.ec2.internal",
];

/// Whether `host` (a URL's host name, any case, a trailing dot allowed) names a
/// cloud metadata service.
pub fn is_metadata_host(host: &str) -> bool {
    let host = host.trim_end_matches('.');
    METADATA_HOSTS.iter().any(|m| host.eq_ignore_ascii_case(m))
}

/// Whether the server may connect to `ip` under `reach`; the problem otherwise.
/// Link-local addresses and cloud metadata services (169.254.169.254,
/// fd00:ec2::254) are never reached; neither are unspecified, broadcast, multicast,
/// documentation or reserved ones. An IPv4 address inside IPv6 (`::ffff:a.b.c.d`) is
/// judged as the IPv4 address it carries.
pub fn check_destination(ip: std::net::IpAddr, reach: Reach) -> Result<(), String> {
    use std::net::IpAddr;
    let ip = match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(v6),
        },
        v4 => v4,
    };
    let never = |what: &str| Err(format!("{ip} is {what}, which the server never sends to"));
    let unless = |allowed: bool, what: &str, key: &str| {
        if allowed {
            Ok(())
        } else {
            Err(format!(
                "{ip} is {what}: the server sends there only when `{key}` is on in its configuration"
            ))
        }
    };
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            if v4.is_link_local() {
                never("link-local (cloud metadata services live there)")
            } else if v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || a == 0
                || a >= 240
            {
                never("not a host's address")
            } else if v4.is_loopback() {
                unless(
                    reach.loopback,
                    "loopback",
                    "approvals.webhook_allow_loopback",
                )
            } else if v4.is_private()
                || (a == 100 && (64..128).contains(&b))
                || (a == 198 && (b == 18 || b == 19))
            {
                unless(
                    reach.private_networks,
                    "in a private range",
                    "approvals.webhook_allow_private_networks",
                )
            } else {
                Ok(())
            }
        }
        IpAddr::V6(v6) => {
            let first = v6.segments()[0];
            if v6 == std::net::Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254) {
                never("a cloud metadata service")
            } else if v6.is_unicast_link_local() || (first & 0xffc0) == 0xfec0 {
                never("link-local")
            } else if v6.is_unspecified()
                || v6.is_multicast()
                || (first == 0x2001 && v6.segments()[1] == 0xdb8)
                || (first == 0x64 && v6.segments()[1] == 0xff9b)
                || v6.to_ipv4().is_some() && !v6.is_loopback()
            {
                never("not a host's address")
            } else if v6.is_loopback() {
                unless(
                    reach.loopback,
                    "loopback",
                    "approvals.webhook_allow_loopback",
                )
            } else if v6.is_unique_local() {
                unless(
                    reach.private_networks,
                    "in a private range",
                    "approvals.webhook_allow_private_networks",
                )
            } else {
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Reach, check_destination, check_secure_url, is_metadata_host};

    /// Every class of address, under no extra reach, loopback, and private networks.
    #[test]
    fn destinations_by_class() {
        let none = Reach::default();
        let local = Reach {
            loopback: true,
            private_networks: false,
        };
        let private = Reach {
            loopback: false,
            private_networks: true,
        };
        let all = Reach {
            loopback: true,
            private_networks: true,
        };
        // (address, allowed under none, local, private, all)
        let table: &[(&str, [bool; 4])] = &[
            ("93.184.215.14", [true; 4]),
            ("2606:4700::6810:85e5", [true; 4]),
            ("127.0.0.1", [false, true, false, true]),
            ("127.8.9.10", [false, true, false, true]),
            ("::1", [false, true, false, true]),
            ("::ffff:127.0.0.1", [false, true, false, true]),
            ("10.1.2.3", [false, false, true, true]),
            ("172.16.0.1", [false, false, true, true]),
            ("192.168.1.1", [false, false, true, true]),
            ("100.64.0.1", [false, false, true, true]),
            ("fd12:3456::1", [false, false, true, true]),
            ("::ffff:10.0.0.1", [false, false, true, true]),
            ("169.254.169.254", [false; 4]),
            ("::ffff:169.254.169.254", [false; 4]),
            ("169.254.1.1", [false; 4]),
            ("fd00:ec2::254", [false; 4]),
            ("fe80::1", [false; 4]),
            ("0.0.0.0", [false; 4]),
            ("::", [false; 4]),
            ("255.255.255.255", [false; 4]),
            ("224.0.0.1", [false; 4]),
            ("ff02::1", [false; 4]),
            ("240.0.0.1", [false; 4]),
            ("64:ff9b::a9fe:a9fe", [false; 4]),
            ("::169.254.169.254", [false; 4]),
        ];
        for (ip, want) in table {
            let ip: std::net::IpAddr = ip.parse().unwrap();
            for (reach, allowed) in [none, local, private, all].into_iter().zip(want) {
                let got = check_destination(ip, reach);
                assert_eq!(got.is_ok(), *allowed, "{ip} under {reach:?}: {got:?}");
            }
        }
        let e = check_destination("127.0.0.1".parse().unwrap(), none).unwrap_err();
        assert!(e.contains("approvals.webhook_allow_loopback"), "{e}");
        for host in [
            "metadata.google.internal",
            "METADATA.GOOGLE.INTERNAL.",
            "metadata.goog",
        ] {
            assert!(is_metadata_host(host), "{host}");
        }
        assert!(!is_metadata_host("hooks.slack.com"));
    }

    #[test]
    fn only_https_or_loopback_http_passes() {
        let example = "https://idp.example/keys";
        // (url, a part of the refusal, or None when accepted)
        let table: &[(&str, Option<&str>)] = &[
            ("https://idp.example/.well-known/jwks.json", None),
            ("HTTPS://IDP.EXAMPLE/keys", None),
            ("http://127.0.0.1:8080/keys", None),
            ("http://127.9.9.9/keys", None),
            ("http://[::1]:9/keys", None),
            ("http://localhost/keys", None),
            ("http://LOCALHOST./keys", Some("not loopback")),
            ("http://idp.example/keys", Some("not loopback")),
            ("http://0x7f000001/keys", None),
            ("http://2130706433/keys", None),
            ("http://127.0.0.1.nip.io/keys", Some("not loopback")),
            ("http://[::ffff:127.0.0.1]/keys", Some("not loopback")),
            ("ftp://idp.example/keys", Some("scheme \"ftp\"")),
            ("file:///etc/keys.json", Some("scheme \"file\"")),
            (
                "https://user:pw@idp.example/keys",
                Some("user name or password"),
            ),
            (
                "https://user@idp.example/keys",
                Some("user name or password"),
            ),
            ("idp.example/keys", Some("is not a URL")),
            ("", Some("is not a URL")),
            ("https://", Some("is not a URL")),
        ];
        for (url, want) in table {
            match (check_secure_url(url, example), want) {
                (Ok(()), None) => {}
                (Err(e), Some(part)) => {
                    assert!(e.contains(part), "{url}: {e}");
                }
                (got, want) => panic!("{url}: wanted {want:?}, got {got:?}"),
            }
        }
    }
}
