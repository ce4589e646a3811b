//! Sizes ("10MB") and network targets (URLs, `host:port`, IPv6 in brackets) as the
//! restrictions compare them.

use std::net::Ipv6Addr;

/// Parses a size as the npm `bytes` package does: a number (decimals allowed), an
/// optional space, an optional unit `b`, `kb`, `mb`, `gb`, `tb`, `pb` in any case,
/// each 1024 times the last (`KiB`… accepted as the same). A plain number is bytes.
pub fn parse_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let unit = unit.trim_start().to_ascii_lowercase();
    let power = match unit.as_str() {
        "" | "b" => 0,
        "kb" | "kib" => 1,
        "mb" | "mib" => 2,
        "gb" | "gib" => 3,
        "tb" | "tib" => 4,
        "pb" | "pib" => 5,
        _ => return None,
    };
    let bytes = number * 1024f64.powi(power);
    // the float never holds more than u64 can once it is checked against the bound
    (bytes.is_finite() && bytes >= 0.0 && bytes < u64::MAX as f64).then_some(bytes.floor() as u64)
}

/// A network target: what a URL or a `host:port` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The scheme, lowercase (`https`), when a URL gave one.
    pub scheme: Option<String>,
    /// The host, normalised by `normalise_host`.
    pub host: String,
    /// The port written, or the scheme's default.
    pub port: Option<u16>,
}

impl Target {
    /// Reads `https://user@Host.example:8443/path`, `host:port`, `[::1]:80`, `::1`
    /// or a bare host. `None` when no host can be read (the caller fails closed).
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        let (scheme, rest) = match text.split_once("://") {
            Some((scheme, rest)) if valid_scheme(scheme) => {
                (Some(scheme.to_ascii_lowercase()), rest)
            }
            Some(_) => return None,
            None => (None, text),
        };
        // the authority ends at the first `/`, `?` or `#`; user info ends at the last `@`
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
        let (host, port) = split_host_port(authority)?;
        let port = match port {
            Some(p) => Some(p.parse::<u16>().ok()?),
            None => scheme.as_deref().and_then(default_port),
        };
        Some(Self {
            scheme,
            host: normalise_host(host)?,
            port,
        })
    }
}

fn valid_scheme(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// The port a scheme uses when none is written.
fn default_port(scheme: &str) -> Option<u16> {
    Some(match scheme {
        "http" | "ws" => 80,
        "https" | "wss" => 443,
        "ftp" => 21,
        "ssh" | "sftp" => 22,
        _ => return None,
    })
}

/// Splits `host:port`, `[v6]:port`, `[v6]`, a bare IPv6 address or a bare host.
/// The port is left as written (`*` for an endpoint pattern).
pub fn split_host_port(text: &str) -> Option<(&str, Option<&str>)> {
    if let Some(rest) = text.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        return match after {
            "" => Some((host, None)),
            _ => Some((host, Some(after.strip_prefix(':')?))),
        };
    }
    match text.matches(':').count() {
        0 => Some((text, None)),
        1 => {
            let (host, port) = text.split_once(':')?;
            Some((host, Some(port)))
        }
        // more than one colon and no brackets: a bare IPv6 address
        _ => Some((text, None)),
    }
}

/// A host as compared: lowercase, without a trailing dot, an IPv6 address in its
/// canonical form (`0:0::1` is `::1`). `None` for an empty or malformed host.
pub fn normalise_host(host: &str) -> Option<String> {
    let host = host.strip_suffix('.').unwrap_or(host);
    if host.is_empty() || host.contains(['/', '@', ' ', '[', ']']) {
        return None;
    }
    if host.contains(':') {
        return host.parse::<Ipv6Addr>().ok().map(|a| a.to_string());
    }
    Some(host.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_the_bytes_package() {
        let cases = [
            ("10MB", Some(10 * 1024 * 1024)),
            ("1mb", Some(1024 * 1024)),
            ("1.5 KB", Some(1536)),
            ("512", Some(512)),
            ("2b", Some(2)),
            ("1GiB", Some(1 << 30)),
            ("ten", None),
            ("10XB", None),
            ("", None),
            ("-1MB", None),
        ];
        for (text, want) in cases {
            assert_eq!(parse_size(text), want, "{text:?}");
        }
    }

    #[test]
    fn targets_read_hosts_and_ports() {
        let t = |s: &str| Target::parse(s).map(|t| (t.scheme, t.host, t.port));
        assert_eq!(
            t("https://User@API.Example.com./x?y"),
            Some((Some("https".into()), "api.example.com".into(), Some(443)))
        );
        assert_eq!(
            t("http://[::1]:8080/"),
            Some((Some("http".into()), "::1".into(), Some(8080)))
        );
        assert_eq!(
            t("localhost:3000"),
            Some((None, "localhost".into(), Some(3000)))
        );
        assert_eq!(t("0:0:0:0:0:0:0:1"), Some((None, "::1".into(), None)));
        assert_eq!(t("example.com"), Some((None, "example.com".into(), None)));
        assert_eq!(t("host:99999"), None);
        assert_eq!(t("http://"), None);
        assert_eq!(t("1http://x"), None);
    }
}
