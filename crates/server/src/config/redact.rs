//! What the configuration shows: credentials redacted for operators, and a team's
//! narrower view.

use super::Config;

/// What a redacted secret reads as.
pub const REDACTED: &str = "***";
/// What a setting shown to operators only reads as for everyone else.
pub const OPERATORS_ONLY: &str = "(shown to operators only)";

/// Query parameters whose value is a credential (matched as a substring of the
/// lowercased name: `password`, `sslpassword`, `api_key`, `access_token`, ...).
const SECRET_PARAMS: [&str; 7] = [
    "pass",
    "pwd",
    "secret",
    "token",
    "key",
    "auth",
    "credential",
];

/// A URL with every credential it may carry replaced by [`REDACTED`]: the whole
/// password of the userinfo, and the value of each parameter named like a
/// credential. The one redaction of the server: `GetServerConfig` and
/// `check-config` both go through it.
///
/// Passwords are not always percent-encoded, so the userinfo is taken to end at the
/// URL's last `@` (`postgres://app:p@ss@db/tg` → `postgres://app:***@db/tg`), and
/// parameters are looked for in everything after it, split at `?`, `&`, `;` and `#`.
/// An `@` in a parameter value makes it redact more than the password: never less.
pub fn redact_url(url: &str) -> String {
    let (scheme, rest) = match url.split_once("://") {
        Some((scheme, rest)) => (Some(scheme), rest),
        None => (None, url),
    };
    let mut out = String::with_capacity(url.len());
    if let Some(scheme) = scheme {
        out.push_str(scheme);
        out.push_str("://");
    }
    let mut tail = rest;
    if let Some(last_at) = rest.rfind('@') {
        let userinfo = &rest[..last_at];
        let user = userinfo.split_once(':').map_or(userinfo, |(user, _)| user);
        // a user name never holds these: past them the '@' is in a path or parameter
        if !user.contains(['/', '?', '#', '&', ';', '=']) {
            if userinfo.contains(':') {
                out.push_str(user);
                out.push(':');
                out.push_str(REDACTED);
            } else if scheme.is_some_and(|s| s.starts_with("postgres")) {
                // a PostgreSQL user name alone is no secret
                out.push_str(userinfo);
            } else {
                // elsewhere a userinfo without ':' is a token as often as a name
                out.push_str(REDACTED);
            }
            tail = &rest[last_at..];
        }
    }
    for part in tail.split_inclusive(['?', '&', ';', '#']) {
        let (body, sep) = match part.char_indices().last() {
            Some((i, '?' | '&' | ';' | '#')) => part.split_at(i),
            _ => (part, ""),
        };
        match body.split_once('=') {
            Some((name, _)) if is_secret_param(name) => {
                out.push_str(name);
                out.push('=');
                out.push_str(REDACTED);
            }
            _ => out.push_str(body),
        }
        out.push_str(sep);
    }
    out
}

fn is_secret_param(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    SECRET_PARAMS.iter().any(|s| name.contains(s))
}

impl Config {
    /// The configuration as an operator sees it (`GetServerConfig`, `check-config`):
    /// every credential redacted by [`redact_url`], token hashes and OTLP header
    /// values removed.
    pub fn public_json(&self) -> serde_json::Value {
        let mut value = serde_json::to_value(self).unwrap_or_default();
        if let Some(url) = self.store.url.as_deref() {
            value["store"]["url"] = serde_json::Value::String(redact_url(url));
        }
        if let Some(endpoint) = self.telemetry.otlp_endpoint.as_deref() {
            value["telemetry"]["otlp_endpoint"] = serde_json::Value::String(redact_url(endpoint));
        }
        value["telemetry"]["otlp_headers"] = self
            .telemetry
            .otlp_headers
            .keys()
            .map(|name| (name.clone(), serde_json::Value::String(REDACTED.into())))
            .collect::<serde_json::Map<_, _>>()
            .into();
        if let Some(endpoint) = self.otlp_export.endpoint.as_deref() {
            value["otlp_export"]["endpoint"] = serde_json::Value::String(redact_url(endpoint));
        }
        value["otlp_export"]["headers"] = self
            .otlp_export
            .headers
            .keys()
            .map(|name| (name.clone(), serde_json::Value::String(REDACTED.into())))
            .collect::<serde_json::Map<_, _>>()
            .into();
        if let Some(url) = self.auth.jwt.as_ref().and_then(|j| j.jwks_url.as_deref()) {
            value["auth"]["jwt"]["jwks_url"] = serde_json::Value::String(redact_url(url));
        }
        if let Some(tokens) = value
            .pointer_mut("/auth/tokens")
            .and_then(|t| t.as_array_mut())
        {
            for t in tokens {
                if let Some(obj) = t.as_object_mut() {
                    obj.remove("sha256");
                }
            }
        }
        value
    }

    /// The configuration as a team principal sees it: the operator's view without
    /// the principals (`auth`) and without where the store and the collector are,
    /// even redacted: a member needs none of it to use the server.
    pub fn team_json(&self) -> serde_json::Value {
        let mut value = self.public_json();
        if let Some(root) = value.as_object_mut() {
            root.remove("auth");
            // where the certificates are is the operators' business
            root.remove("tls");
        }
        value["store"]["url"] = serde_json::Value::String(OPERATORS_ONLY.into());
        if let Some(telemetry) = value["telemetry"].as_object_mut() {
            telemetry.remove("otlp_endpoint");
            telemetry.remove("otlp_headers");
        }
        if let Some(export) = value["otlp_export"].as_object_mut() {
            export.remove("endpoint");
            export.remove("headers");
        }
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::principal::Role;
    use crate::config::TokenConfig;

    #[test]
    fn redact_url_hides_every_credential_form() {
        let table = [
            // (url, shown)
            ("postgres://db/tg", "postgres://db/tg"),
            ("postgres://app@db/tg", "postgres://app@db/tg"),
            ("postgres://app:hunter2@db/tg", "postgres://app:***@db/tg"),
            ("postgres://app:p@ssW0rd@db/tg", "postgres://app:***@db/tg"),
            (
                "postgres://app:p@ss:w@rd@db:5432/tg",
                "postgres://app:***@db:5432/tg",
            ),
            ("postgres://app:pa/ss?#@db/tg", "postgres://app:***@db/tg"),
            ("postgres://app:@db/tg", "postgres://app:***@db/tg"),
            (
                "postgres://db/tg?user=app&password=hunter2",
                "postgres://db/tg?user=app&password=***",
            ),
            (
                "postgresql://db/tg?sslmode=verify-full&sslpassword=s3&sslkey=/k.pem",
                "postgresql://db/tg?sslmode=verify-full&sslpassword=***&sslkey=***",
            ),
            (
                "postgres://db/tg?PASSWORD=x;token=y#secret=z",
                "postgres://db/tg?PASSWORD=***;token=***#secret=***",
            ),
            (
                "postgres://db/tg?user=a@b.c&password=x",
                "postgres://db/tg?user=a@b.c&password=***",
            ),
            // an '@' in a parameter: more is hidden, never less
            (
                "postgres://app:pw@db/tg?email=a@b.c&password=x",
                "postgres://app:***@b.c&password=***",
            ),
            (
                "sqlite:///var/lib/toolgate/tg.db",
                "sqlite:///var/lib/toolgate/tg.db",
            ),
            ("http://127.0.0.1:4317", "http://127.0.0.1:4317"),
            (
                "https://user:apikey@otel.example:4317",
                "https://user:***@otel.example:4317",
            ),
            (
                "https://ghp_abc123@otel.example",
                "https://***@otel.example",
            ),
            (
                "https://otel.example/v1?api_key=abc&access_token=t&auth=b&x=1",
                "https://otel.example/v1?api_key=***&access_token=***&auth=***&x=1",
            ),
            ("not a url password=x", "not a url password=***"),
        ];
        for (url, shown) in table {
            assert_eq!(redact_url(url), shown, "{url}");
        }
    }

    #[test]
    fn team_view_has_no_principals_and_no_secrets() {
        let mut c = Config::default();
        c.auth.tokens.push(TokenConfig {
            groups: Vec::new(),
            name: "alice".into(),
            sha256: "00".repeat(32),
            role: Role::Member,
            team: Some("acme".into()),
            user: None,
        });
        c.store.url = Some("postgres://app:p@ssW0rd@db/tg?sslpassword=k".into());
        c.telemetry.otlp_endpoint = Some("https://u:otelpw@otel.example:4317".into());
        c.telemetry
            .otlp_headers
            .insert("authorization".into(), "Bearer otelsecret".into());
        c.otlp_export.endpoint = Some("https://u:exportpw@siem.example:4317".into());
        c.otlp_export
            .headers
            .insert("x-api-key".into(), "exportsecret".into());
        let operator = c.public_json().to_string();
        for secret in [
            "p@ssW0rd",
            "ssW0rd",
            "sslpassword=k",
            "otelpw",
            "otelsecret",
            "exportpw",
            "exportsecret",
        ] {
            assert!(!operator.contains(secret), "{secret} in {operator}");
        }
        assert!(operator.contains("postgres://app:***@db/tg?sslpassword=***"));
        assert!(operator.contains("\"authorization\":\"***\""));
        let team = c.team_json().to_string();
        for hidden in [
            "alice",
            "postgres",
            "otel",
            "authorization",
            "\"auth\"",
            "siem.example",
            "x-api-key",
        ] {
            assert!(!team.contains(hidden), "{hidden} in {team}");
        }
    }

    #[test]
    fn public_json_hides_token_hashes() {
        let mut c = Config::default();
        c.auth.tokens.push(TokenConfig {
            groups: Vec::new(),
            name: "a".into(),
            sha256: "00".repeat(32),
            role: Role::Operator,
            team: None,
            user: None,
        });
        c.store.url = Some("postgres://tg:hunter2@db/toolgate".into());
        let json = c.public_json().to_string();
        assert!(!json.contains(&"00".repeat(32)));
        assert!(!json.contains("hunter2"));
        assert!(json.contains("postgres://tg:***@db/toolgate"));
        assert!(json.contains("\"name\":\"a\""));
    }
}
