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

/// How a configuration key's value is shown to operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shown {
    /// As it is: it holds no credential.
    AsIs,
    /// Through [`redact_url`].
    Url,
    /// A map whose names are shown and whose values are [`REDACTED`].
    NamesOnly,
    /// Left out.
    Hidden,
}

/// Every key of the configuration and how it is shown: an allow-list, so a key
/// added to the configuration types and not named here reads as [`REDACTED`] (and
/// `every_key_is_classified` fails until it is named). `[]` is each element of a
/// list; a map's rule covers its entries.
const SHOWN: &[(&str, Shown)] = &[
    ("listen", Shown::AsIs),
    ("data_dir", Shown::AsIs),
    ("store.url", Shown::Url),
    ("store.check_secs", Shown::AsIs),
    ("store.max_staleness_secs", Shown::AsIs),
    ("auth.tokens[].name", Shown::AsIs),
    ("auth.tokens[].sha256", Shown::Hidden),
    ("auth.tokens[].role", Shown::AsIs),
    ("auth.tokens[].team", Shown::AsIs),
    ("auth.tokens[].user", Shown::AsIs),
    ("auth.tokens[].groups", Shown::AsIs),
    ("auth.certificates[].name", Shown::AsIs),
    ("auth.certificates[].subject_cn", Shown::AsIs),
    ("auth.certificates[].san", Shown::AsIs),
    ("auth.certificates[].role", Shown::AsIs),
    ("auth.certificates[].team", Shown::AsIs),
    ("auth.certificates[].user", Shown::AsIs),
    ("auth.certificates[].groups", Shown::AsIs),
    ("auth.jwt.issuer", Shown::Url),
    ("auth.jwt.audience", Shown::AsIs),
    ("auth.jwt.jwks_file", Shown::AsIs),
    ("auth.jwt.jwks_url", Shown::Url),
    ("auth.jwt.refresh_secs", Shown::AsIs),
    ("auth.jwt.leeway_secs", Shown::AsIs),
    ("auth.jwt.claims.team", Shown::AsIs),
    ("auth.jwt.claims.user", Shown::AsIs),
    ("auth.jwt.claims.role", Shown::AsIs),
    ("auth.jwt.default_role", Shown::AsIs),
    ("auth.jwt.allow_operator", Shown::AsIs),
    ("auth.jwt.sign_in.client_id", Shown::AsIs),
    ("auth.jwt.sign_in.scopes", Shown::AsIs),
    ("auth.jwt.sign_in.flows", Shown::AsIs),
    ("auth.jwt.sign_in.bearer", Shown::AsIs),
    ("auth.jwt.sign_in.allow_loopback_http", Shown::AsIs),
    ("auth.jwt.team_by_group.claim", Shown::AsIs),
    ("auth.jwt.team_by_group.teams", Shown::AsIs),
    ("auth.jwt.groups.claim", Shown::AsIs),
    ("auth.jwt.groups.prefix", Shown::AsIs),
    ("auth.jwt.groups.map", Shown::AsIs),
    ("auth.jwt.groups.mapped_only", Shown::AsIs),
    ("auth.anonymous.role", Shown::AsIs),
    ("auth.anonymous.team", Shown::AsIs),
    ("auth.anonymous.user", Shown::AsIs),
    ("watch.heartbeat_secs", Shown::AsIs),
    ("watch.queue_size", Shown::AsIs),
    ("watch.history_per_team", Shown::AsIs),
    ("watch.queue_bytes", Shown::AsIs),
    ("limits.max_request_bytes", Shown::AsIs),
    ("limits.max_batch_calls", Shown::AsIs),
    ("limits.max_list_entries", Shown::AsIs),
    ("limits.max_cached_users_per_team", Shown::AsIs),
    ("limits.max_command_bytes", Shown::AsIs),
    ("limits.team_idle_secs", Shown::AsIs),
    ("limits.request_timeout_secs", Shown::AsIs),
    ("limits.max_concurrent_requests", Shown::AsIs),
    ("limits.max_streams_per_principal", Shown::AsIs),
    ("connections.max", Shown::AsIs),
    ("connections.idle_timeout_secs", Shown::AsIs),
    ("connections.keepalive_interval_secs", Shown::AsIs),
    ("connections.keepalive_timeout_secs", Shown::AsIs),
    ("log.level", Shown::AsIs),
    ("log.format", Shown::AsIs),
    ("telemetry.otlp_endpoint", Shown::Url),
    ("telemetry.otlp_headers", Shown::NamesOnly),
    ("telemetry.service_name", Shown::AsIs),
    ("otlp_export.endpoint", Shown::Url),
    ("otlp_export.protocol", Shown::AsIs),
    ("otlp_export.headers", Shown::NamesOnly),
    ("otlp_export.queue_size", Shown::AsIs),
    ("otlp_export.batch_size", Shown::AsIs),
    ("otlp_export.timeout_secs", Shown::AsIs),
    ("otlp_export.spill_max_bytes", Shown::AsIs),
    ("otlp_export.allow_sample_rate", Shown::AsIs),
    ("otlp_export.ask_sample_rate", Shown::AsIs),
    ("otlp_export.drop[].outcome", Shown::AsIs),
    ("otlp_export.drop[].matched_entry", Shown::AsIs),
    ("otlp_export.drop[].reason", Shown::AsIs),
    ("otlp_export.drop[].kind", Shown::AsIs),
    ("otlp_export.drop[].client", Shown::AsIs),
    ("otlp_export.audit_events", Shown::AsIs),
    ("metrics.listen", Shown::AsIs),
    ("http.enabled", Shown::AsIs),
    ("http.listen", Shown::AsIs),
    ("http.cors_allowed_origins", Shown::AsIs),
    ("tls.cert", Shown::AsIs),
    ("tls.key", Shown::AsIs),
    ("tls.client_ca", Shown::AsIs),
    ("tls.require_client_cert", Shown::AsIs),
    ("tls.reload_secs", Shown::AsIs),
    ("shutdown_grace_secs", Shown::AsIs),
    ("policy_file", Shown::AsIs),
    ("audit.decisions", Shown::AsIs),
    ("decision_log.enabled", Shown::AsIs),
    ("decision_log.max_age_days", Shown::AsIs),
    ("decision_log.max_records_per_team", Shown::AsIs),
    ("decision_log.allow_sample_rate", Shown::AsIs),
    ("decision_log.queue_size", Shown::AsIs),
    ("decision_log.max_stored_command_bytes", Shown::AsIs),
    ("decision_log.prune_interval_secs", Shown::AsIs),
    ("decision_log.watch_buffer", Shown::AsIs),
    ("decision_log.journal_dir", Shown::AsIs),
    ("decision_log.journal_max_bytes", Shown::AsIs),
    ("decision_log.deny_max_age_days", Shown::AsIs),
    ("decision_log.deny_max_records_per_team", Shown::AsIs),
    ("decision_log.max_pruned_per_pass", Shown::AsIs),
    ("decision_log.disk_reserve_bytes", Shown::AsIs),
    ("decision_log.preview_max_records", Shown::AsIs),
    ("decision_log.preview_max_ms", Shown::AsIs),
    ("decision_log.audit_max_age_days", Shown::AsIs),
    ("decision_log.audit_max_records_per_team", Shown::AsIs),
    ("decision_log.principal_records_per_minute", Shown::AsIs),
    ("decision_log.principal_bytes_per_minute", Shown::AsIs),
    ("decision_log.team_records_per_minute", Shown::AsIs),
    ("decision_log.team_bytes_per_minute", Shown::AsIs),
    ("console.listen", Shown::AsIs),
    ("approvals.webhook_queue", Shown::AsIs),
    ("approvals.webhook_attempts", Shown::AsIs),
    ("approvals.webhook_timeout_secs", Shown::AsIs),
    ("approvals.webhook_allow_loopback", Shown::AsIs),
    ("approvals.webhook_allow_private_networks", Shown::AsIs),
];

fn shown(path: &str) -> Option<Shown> {
    SHOWN.iter().find(|(key, _)| *key == path).map(|(_, s)| *s)
}

/// `value` (at `path`) as [`SHOWN`] allows; `None`: left out.
fn show(path: &str, value: serde_json::Value) -> Option<serde_json::Value> {
    use serde_json::Value;
    let redacted = || Value::String(REDACTED.into());
    match (shown(path), value) {
        (Some(Shown::AsIs), value) => Some(value),
        (Some(Shown::Hidden), _) => None,
        (Some(Shown::Url), Value::String(url)) => Some(Value::String(redact_url(&url))),
        // an unset key or section holds nothing to hide
        (_, Value::Null) => Some(Value::Null),
        (Some(Shown::NamesOnly), Value::Object(map)) => Some(Value::Object(
            map.into_iter()
                .map(|(name, _)| (name, redacted()))
                .collect(),
        )),
        // a section (or an element of a list): each key by its own rule
        (None, Value::Object(map)) => Some(Value::Object(
            map.into_iter()
                .filter_map(|(key, value)| {
                    let path = if path.is_empty() {
                        key.clone()
                    } else {
                        format!("{path}.{key}")
                    };
                    show(&path, value).map(|value| (key, value))
                })
                .collect(),
        )),
        (None, Value::Array(items)) => Some(Value::Array(
            items
                .into_iter()
                .filter_map(|item| show(&format!("{path}[]"), item))
                .collect(),
        )),
        // a key nobody has said may be shown, or a value of an unexpected shape
        (_, _) => Some(redacted()),
    }
}

impl Config {
    /// The configuration as an operator sees it (`GetServerConfig`, `check-config`):
    /// each key as `SHOWN` allows (URLs through [`redact_url`], token hashes and
    /// OTLP header values left out), and any key it does not name as [`REDACTED`].
    pub fn public_json(&self) -> serde_json::Value {
        let value = serde_json::to_value(self).unwrap_or_default();
        show("", value).unwrap_or_default()
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

    /// Every key of a configuration with every section set, by the allow-list's rule
    /// that covers it (`None`: no rule does), and the rules used.
    fn classify(path: &str, value: &serde_json::Value, out: &mut Vec<(String, Option<Shown>)>) {
        if let Some(rule) = shown(path) {
            out.push((path.to_owned(), Some(rule)));
            return;
        }
        match value {
            serde_json::Value::Object(map) => {
                for (key, value) in map {
                    let path = if path.is_empty() {
                        key.clone()
                    } else {
                        format!("{path}.{key}")
                    };
                    classify(&path, value, out);
                }
            }
            serde_json::Value::Array(items) => {
                for item in items {
                    classify(&format!("{path}[]"), item, out);
                }
            }
            _ => out.push((path.to_owned(), None)),
        }
    }

    fn every_section_set() -> Config {
        use serde_json::json;
        let mut c = Config::default();
        c.auth.tokens.push(TokenConfig {
            groups: vec!["g".into()],
            name: "alice".into(),
            sha256: "00".repeat(32),
            role: Role::Member,
            team: Some("acme".into()),
            user: None,
        });
        c.auth.certificates.push(
            serde_json::from_value(json!({"name": "ci", "role": "member", "subject_cn": "ci"}))
                .unwrap(),
        );
        c.auth.jwt = Some(
            serde_json::from_value(json!({
                "issuer": "https://idp.example",
                "audience": "toolgate",
                "jwks_url": "https://idp.example/jwks",
                "sign_in": {"client_id": "toolgate-cli"},
                "team_by_group": {"claim": "groups", "teams": {"eng": "acme"}},
                "groups": {"claim": "groups"},
            }))
            .unwrap(),
        );
        c.auth.anonymous = Some(serde_json::from_value(json!({"role": "member"})).unwrap());
        c.telemetry
            .otlp_headers
            .insert("authorization".into(), "Bearer otelsecret".into());
        c.otlp_export.drop.push(
            serde_json::from_value(json!({"outcome": "allow", "matched_entry": "@readonly", "reason": "COMMAND_ALLOWED", "kind": "shell", "client": "claude-code"}))
                .unwrap(),
        );
        c
    }

    /// A key added to the configuration must be named in `SHOWN`: until it is, it
    /// reads as `***` and this test names it. And no rule names a key that is gone.
    #[test]
    fn every_key_is_classified() {
        let value = serde_json::to_value(every_section_set()).unwrap();
        let mut keys = Vec::new();
        classify("", &value, &mut keys);
        let unclassified: Vec<&str> = keys
            .iter()
            .filter(|(_, rule)| rule.is_none())
            .map(|(key, _)| key.as_str())
            .collect();
        assert!(
            unclassified.is_empty(),
            "configuration keys not in redact.rs's SHOWN (add each: AsIs if it can never hold a credential, else Url, NamesOnly or Hidden): {unclassified:?}"
        );
        for (rule, _) in SHOWN {
            assert!(
                keys.iter().any(|(key, _)| key == rule),
                "redact.rs's SHOWN names {rule}, which the configuration no longer has"
            );
        }
        // and a key nobody named is hidden, not shown
        assert_eq!(
            show("telemetry.new_secret", serde_json::json!("s3cret")),
            Some(serde_json::json!(REDACTED))
        );
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
