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

#[cfg(test)]
mod tests {
    use super::check_secure_url;

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
