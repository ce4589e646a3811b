//! Sizes ("10MB") and network targets (URLs, `host:port`, IPv6 in brackets) as the
//! restrictions compare them. URLs are read as WHATWG reads them, and one that another
//! common reader (curl) sends to another host is not read at all (the call asks).

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

/// The longest URL or `host:port` read; a longer one is not read (the call asks).
pub const MAX_TARGET_BYTES: usize = 16 * 1024;

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
    /// [`Target::read`], without the reason.
    pub fn parse(text: &str) -> Option<Self> {
        Self::read(text).ok()
    }

    /// Reads `https://user@Host.example:8443/path` as WHATWG does (the `url` crate:
    /// Node's `fetch`, which the agents' web tools use, reads URLs this way), or a
    /// bare `host:port`, `[::1]:80`, `::1` or host. A URL that another common reader
    /// (curl, which ends the authority only at `/`, `?` or `#`) would send elsewhere is
    /// not read: `https://evil.com\@docs.rs/` is `evil.com` to WHATWG and `docs.rs` to
    /// curl. `Err` says why the target cannot be read with certainty (the call asks).
    pub fn read(text: &str) -> Result<Self, String> {
        if text.len() > MAX_TARGET_BYTES {
            return Err(format!("it is longer than {MAX_TARGET_BYTES} bytes"));
        }
        // WHATWG drops tabs and line breaks anywhere in a URL; other readers keep them
        if text.chars().any(char::is_control) {
            return Err("it holds a control character".to_owned());
        }
        let text = text.trim();
        match text.split_once("://") {
            Some((scheme, rest)) if valid_scheme(scheme) => {
                url_target(text, &scheme.to_ascii_lowercase(), rest)
            }
            Some((scheme, _)) => Err(format!("{scheme:?} is not a URL scheme")),
            None => bare_target(text),
        }
    }
}

/// A URL with a scheme: WHATWG's reading, checked against curl's.
fn url_target(text: &str, scheme: &str, rest: &str) -> Result<Target, String> {
    // curl's authority: up to the first `/`, `?` or `#` (WHATWG also stops at `\`)
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if authority.contains('\\') {
        return Err(format!(
            "its authority {authority:?} holds a backslash: WHATWG (Node's fetch) ends the host there, curl does not"
        ));
    }
    if authority.matches('@').count() > 1 {
        return Err(format!(
            "its authority {authority:?} holds more than one `@`: readers differ on where the host starts"
        ));
    }
    let plain = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    let (plain_host, plain_port) =
        split_host_port(plain).ok_or_else(|| format!("no host can be read from {authority:?}"))?;
    if plain_host.contains('%') {
        return Err(format!(
            "its host {plain_host:?} is percent-encoded: WHATWG decodes it, curl does not"
        ));
    }
    let url = url::Url::parse(text).map_err(|e| format!("it is not a URL ({e})"))?;
    let whatwg = match url.host() {
        Some(url::Host::Domain(d)) => normalise_host(d),
        Some(url::Host::Ipv4(a)) => Some(a.to_string()),
        Some(url::Host::Ipv6(a)) => Some(a.to_string()),
        None => None,
    }
    .ok_or_else(|| "it names no host".to_owned())?;
    let curl = normalise_host(plain_host);
    if curl.as_deref() != Some(whatwg.as_str()) {
        return Err(format!(
            "WHATWG (Node's fetch) reads its host as {whatwg:?}, curl as {plain_host:?}"
        ));
    }
    let port = match plain_port {
        Some(p) => {
            let p = p
                .parse::<u16>()
                .map_err(|_| format!("its port {p:?} is not a number up to 65535"))?;
            if url.port_or_known_default() != Some(p) {
                return Err(format!("WHATWG and curl read its port {p} differently"));
            }
            Some(p)
        }
        None => url.port_or_known_default().or_else(|| default_port(scheme)),
    };
    Ok(Target {
        scheme: Some(scheme.to_owned()),
        host: whatwg,
        port,
    })
}

/// `host`, `host:port`, `[v6]:port` or a bare IPv6 address, no scheme.
fn bare_target(text: &str) -> Result<Target, String> {
    if text.contains(['\\', '@', '%']) || text.contains(char::is_whitespace) {
        return Err(format!(
            "{text:?} holds `\\`, `@`, `%` or a space: readers differ on its host"
        ));
    }
    let authority = text.split(['/', '?', '#']).next().unwrap_or("");
    let (host, port) =
        split_host_port(authority).ok_or_else(|| format!("no host can be read from {text:?}"))?;
    let port = match port {
        Some(p) => Some(
            p.parse::<u16>()
                .map_err(|_| format!("its port {p:?} is not a number up to 65535"))?,
        ),
        None => None,
    };
    let host = normalise_host(host).ok_or_else(|| format!("{host:?} is not a host"))?;
    Ok(Target {
        scheme: None,
        host,
        port,
    })
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

/// A host as compared, as WHATWG reads a host: lowercase, international names in
/// their ASCII form (`bücher.de` is `xn--bcher-kva.de`), IPv4 in dotted decimal, IPv6
/// in its canonical form (`0:0::1` is `::1`), without a trailing dot. `None` for an
/// empty or malformed host, or one WHATWG would percent-decode.
pub fn normalise_host(host: &str) -> Option<String> {
    // a host whose reading would change if read again (IDNA mappings that drop or
    // join characters, found by the url_path fuzz target) cannot be read with
    // certainty: it is refused, so a restriction asks
    let once = normalise_once(host)?;
    (normalise_once(&once).as_deref() == Some(once.as_str())).then_some(once)
}

/// One reading of a host, as [`normalise_host`] takes it.
fn normalise_once(host: &str) -> Option<String> {
    let host = host.strip_suffix('.').unwrap_or(host);
    if host.is_empty() || host.contains(['/', '@', ' ', '[', ']', '%', '\\']) {
        return None;
    }
    // an empty label (`a..b`, `.a`, `a..`) is no DNS name, and readers differ on
    // how many dots they drop (found by the url_path fuzz target)
    if !host.contains(':') && host.split('.').any(str::is_empty) {
        return None;
    }
    if host.contains(':') {
        return host.parse::<Ipv6Addr>().ok().map(|a| a.to_string());
    }
    let parsed = match url::Host::parse(host).ok()? {
        url::Host::Domain(d) => d,
        url::Host::Ipv4(a) => a.to_string(),
        url::Host::Ipv6(a) => a.to_string(),
    };
    let parsed = parsed.strip_suffix('.').unwrap_or(&parsed);
    (!parsed.is_empty()).then(|| parsed.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_with_an_empty_label_is_not_read() {
        for host in ["a..b", ".a", "a..", "docs.rs..", "rf\"n0...."] {
            assert_eq!(normalise_host(host), None, "{host:?}");
        }
        assert_eq!(normalise_host("docs.rs.").as_deref(), Some("docs.rs"));
        assert!(Target::read("rf\"n0...././.:").is_err());
        assert!(Target::read("https://docs.rs../x").is_err());
        assert_eq!(Target::read("https://docs.rs./x").unwrap().host, "docs.rs");
    }

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
