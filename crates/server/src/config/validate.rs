//! The configuration's checks: every problem at once, each saying how to fix it.

use super::auth::parse_sha256;
use super::sections::check_origin;
use super::{Config, ConfigError, redact_url};
use crate::auth::principal::Role;
use std::net::SocketAddr;

impl Config {
    /// Reports every problem at once, each saying how to fix it.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let mut problems = Vec::new();
        let listen = self.listen.parse::<SocketAddr>();
        if let Err(e) = &listen {
            problems.push(format!(
                "listen: {:?} is not an address ({e}): use HOST:PORT such as 127.0.0.1:7070",
                self.listen
            ));
        }
        if self
            .policy_file
            .as_ref()
            .is_some_and(|p| p.as_os_str().is_empty())
        {
            problems.push(
                "policy_file: must not be empty: give the policy YAML's path or leave it unset"
                    .into(),
            );
        }
        if self.data_dir.as_os_str().is_empty() {
            problems.push(
                "data_dir: must not be empty: give a directory for the embedded store".into(),
            );
        }
        if let Some(url) = &self.store.url
            && !["sqlite://", "postgres://", "postgresql://"]
                .iter()
                .any(|p| url.starts_with(p))
        {
            problems.push(format!(
                "store.url: {url:?} is not supported: use postgres://USER@HOST/DB, sqlite://PATH, or leave it unset for <data_dir>/toolgate.db"
            ));
        }
        let a = &self.approvals;
        if !(1..=100_000).contains(&a.webhook_queue) {
            problems.push(format!(
                "approvals.webhook_queue: {} is not within 1 to 100000: give the number of posts that may wait",
                a.webhook_queue
            ));
        }
        if !(1..=20).contains(&a.webhook_attempts) {
            problems.push(format!(
                "approvals.webhook_attempts: {} is not within 1 to 20: give how often a post is tried",
                a.webhook_attempts
            ));
        }
        if !(1..=60).contains(&a.webhook_timeout_secs) {
            problems.push(format!(
                "approvals.webhook_timeout_secs: {} is not within 1 to 60: give the seconds one try may take",
                a.webhook_timeout_secs
            ));
        }
        let mut names = std::collections::HashSet::new();
        for (i, t) in self.auth.tokens.iter().enumerate() {
            let at = format!("auth.tokens[{i}] ({:?})", t.name);
            if t.name.trim().is_empty() {
                problems.push(format!(
                    "auth.tokens[{i}].name: must not be empty: name the token's holder"
                ));
            } else if !names.insert(t.name.clone()) {
                problems.push(format!(
                    "{at}.name: duplicate name: give each token its own name"
                ));
            }
            if parse_sha256(&t.sha256).is_none() {
                problems.push(format!(
                    "{at}.sha256: must be 64 hex digits: run `toolgate hash-token` and paste its output"
                ));
            }
            check_name(&mut problems, &at, &t.name);
            check_groups(&mut problems, &at, &t.groups);
            check_scope(&mut problems, &at, t.role, t.team.as_deref());
            check_ids(&mut problems, &at, t.team.as_deref(), t.user.as_deref());
        }
        if let Some(anon) = &self.auth.anonymous {
            check_scope(
                &mut problems,
                "auth.anonymous",
                anon.role,
                anon.team.as_deref(),
            );
            check_ids(
                &mut problems,
                "auth.anonymous",
                anon.team.as_deref(),
                anon.user.as_deref(),
            );
            if matches!(&listen, Ok(addr) if !addr.ip().is_loopback()) {
                problems.push(format!(
                    "auth.anonymous: anonymous access is only allowed on a loopback listen address, not {}: remove auth.anonymous or listen on 127.0.0.1",
                    self.listen
                ));
            }
        }
        problems.extend(self.decision_log.problems());
        problems.extend(self.otlp_export.problems());
        if self.watch.heartbeat_secs == 0 {
            problems.push("watch.heartbeat_secs: must be at least 1".into());
        }
        if self.watch.queue_size == 0 {
            problems.push("watch.queue_size: must be at least 1".into());
        }
        if self.watch.history_per_team == 0 {
            problems.push("watch.history_per_team: must be at least 1".into());
        }
        if self.limits.max_request_bytes < 1024 {
            problems.push("limits.max_request_bytes: must be at least 1024".into());
        }
        if self.limits.max_batch_calls == 0 {
            problems.push("limits.max_batch_calls: must be at least 1".into());
        }
        if self.limits.max_list_entries == 0
            || self.limits.max_list_entries > crate::policy::MAX_LIST_ENTRIES
        {
            problems.push(format!(
                "limits.max_list_entries: must be between 1 and {}",
                crate::policy::MAX_LIST_ENTRIES
            ));
        }
        if self.limits.max_cached_users_per_team == 0 {
            problems.push("limits.max_cached_users_per_team: must be at least 1".into());
        }
        if self.limits.max_command_bytes == 0 {
            problems.push("limits.max_command_bytes: must be at least 1".into());
        }
        if self.limits.team_idle_secs == 0 {
            problems.push("limits.team_idle_secs: must be at least 1".into());
        }
        for (name, value, fix) in [
            (
                "request_timeout_secs",
                self.limits.request_timeout_secs,
                "give the seconds a call may take, e.g. 30",
            ),
            (
                "max_concurrent_requests",
                self.limits.max_concurrent_requests as u64,
                "give how many calls may be answered at once, e.g. 1000",
            ),
            (
                "max_streams_per_principal",
                self.limits.max_streams_per_principal as u64,
                "give how many watch streams one token may hold open, e.g. 1000",
            ),
        ] {
            if value == 0 {
                problems.push(format!("limits.{name}: 0 would refuse every call: {fix}"));
            }
        }
        if self.watch.queue_bytes == 0 {
            problems.push("watch.queue_bytes: must be at least 1".into());
        }
        if self.store.check_secs == 0 {
            problems.push("store.check_secs: must be at least 1".into());
        }
        let staleness = self.store.max_staleness_secs;
        if !(1..=super::sections::MAX_STALENESS_LIMIT_SECS).contains(&staleness) {
            problems.push(format!(
                "store.max_staleness_secs: {staleness} is outside 1 to {}: give the seconds a replica may answer from a policy it has not confirmed with the store, e.g. 5",
                super::sections::MAX_STALENESS_LIMIT_SECS
            ));
        }
        let c = &self.connections;
        for (name, value) in [
            ("max", c.max as u64),
            ("idle_timeout_secs", c.idle_timeout_secs),
            ("keepalive_interval_secs", c.keepalive_interval_secs),
            ("keepalive_timeout_secs", c.keepalive_timeout_secs),
        ] {
            if value == 0 {
                problems.push(format!("connections.{name}: must be at least 1"));
            }
        }
        if c.idle_timeout_secs <= c.keepalive_interval_secs {
            problems.push(format!(
                "connections.idle_timeout_secs: {} must be longer than keepalive_interval_secs ({}): live clients that only answer pings would be closed",
                c.idle_timeout_secs, c.keepalive_interval_secs
            ));
        }
        if let Some(endpoint) = &self.telemetry.otlp_endpoint
            && !(endpoint.starts_with("http://") || endpoint.starts_with("https://"))
        {
            problems.push(format!(
                "telemetry.otlp_endpoint: {endpoint:?} is not a URL: use http://HOST:4317 (OTLP over gRPC)"
            ));
        }
        for (name, value) in &self.telemetry.otlp_headers {
            let name_ok = !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-_.".contains(&b));
            if !name_ok || name.ends_with("-bin") {
                problems.push(format!(
                    "telemetry.otlp_headers: {name:?} is not a header name: use lowercase letters, digits, '-', '_' or '.'"
                ));
            }
            if !value.bytes().all(|b| (0x20..0x7f).contains(&b)) {
                // the value is a secret: name the header only
                problems.push(format!(
                    "telemetry.otlp_headers.{name}: the value must be printable ASCII"
                ));
            }
        }
        let tls = &self.tls;
        match (&tls.cert, &tls.key) {
            (Some(_), None) => problems.push(
                "tls.key: required with tls.cert: give the certificate's PEM private key".into(),
            ),
            (None, Some(_)) => problems
                .push("tls.cert: required with tls.key: give the PEM certificate chain".into()),
            _ => {}
        }
        if tls.client_ca.is_some() && tls.cert.is_none() {
            problems.push(
                "tls.client_ca: client certificates need TLS: set tls.cert and tls.key too".into(),
            );
        }
        if tls.reload_secs == 0 {
            problems.push("tls.reload_secs: must be at least 1".into());
        }
        if !self.auth.certificates.is_empty() && tls.client_ca.is_none() {
            problems.push(
                "auth.certificates: no client certificate can be verified: set tls.client_ca to the CA that signs them".into(),
            );
        }
        for (i, c) in self.auth.certificates.iter().enumerate() {
            let at = format!("auth.certificates[{i}] ({:?})", c.name);
            if c.name.trim().is_empty() {
                problems.push(format!(
                    "auth.certificates[{i}].name: must not be empty: name the certificate's holder"
                ));
            } else if !names.insert(c.name.clone()) {
                problems.push(format!(
                    "{at}.name: duplicate name: give each token and certificate its own name"
                ));
            }
            match (&c.subject_cn, &c.san) {
                (Some(_), Some(_)) | (None, None) => problems.push(format!(
                    "{at}: give exactly one of subject_cn and san to match the certificate by"
                )),
                (Some(v), None) | (None, Some(v)) if v.trim().is_empty() => {
                    problems.push(format!("{at}: the name to match must not be empty"))
                }
                (None, Some(san)) => {
                    if let Err(e) = crate::auth::principal::CertMatch::san(san) {
                        problems.push(format!("{at}.san: {e}"));
                    }
                }
                _ => {}
            }
            check_name(&mut problems, &at, &c.name);
            check_groups(&mut problems, &at, &c.groups);
            check_scope(&mut problems, &at, c.role, c.team.as_deref());
            check_ids(&mut problems, &at, c.team.as_deref(), c.user.as_deref());
        }
        if let Some(jwt) = &self.auth.jwt {
            match (&jwt.jwks_file, &jwt.jwks_url) {
                (None, None) | (Some(_), Some(_)) => problems.push(
                    "auth.jwt: give exactly one of jwks_file and jwks_url for the issuer's keys"
                        .into(),
                ),
                (None, Some(url)) => {
                    // the keys decide who a token is: fetched in clear, anyone on the
                    // path could sign in as anyone
                    if let Err(hint) = toolgate_core::secure_url::check_secure_url(
                        url,
                        "https://ISSUER/.well-known/jwks.json",
                    ) {
                        problems.push(format!("auth.jwt.jwks_url: {:?} {hint}", redact_url(url)));
                    }
                }
                (Some(_), None) => {}
            }
            for (field, value) in [
                ("issuer", &jwt.issuer),
                ("audience", &jwt.audience),
                ("claims.team", &jwt.claims.team),
                ("claims.user", &jwt.claims.user),
                ("claims.role", &jwt.claims.role),
            ] {
                if value.trim().is_empty() {
                    problems.push(format!(
                        "auth.jwt.{field}: must not be empty: give what the identity provider's tokens carry"
                    ));
                }
            }
            if jwt.refresh_secs == 0 {
                problems.push("auth.jwt.refresh_secs: must be at least 1".into());
            }
            check_sign_in(&mut problems, jwt);
            check_team_by_group(&mut problems, jwt);
            if let Some(groups) = &jwt.groups {
                problems.extend(groups.problems());
            }
            if jwt.default_role == Role::Operator && !jwt.allow_operator {
                problems.push(
                    "auth.jwt.default_role: operator would make every token without a role claim an operator: use member, or set auth.jwt.allow_operator: true if that is meant"
                        .into(),
                );
            }
        }
        if let Some(addr) = &self.metrics.listen {
            match addr.parse::<SocketAddr>() {
                Err(e) => problems.push(format!(
                    "metrics.listen: {addr:?} is not an address ({e}): use HOST:PORT such as 0.0.0.0:9090, or leave it unset for no metrics"
                )),
                Ok(m) if listen.as_ref().is_ok_and(|l| *l == m && m.port() != 0) => problems.push(format!(
                    "metrics.listen: {addr} is the gRPC listen address too: give the metrics another port"
                )),
                Ok(_) => {}
            }
        }
        if let Some(addr) = &self.console.listen {
            match addr.parse::<SocketAddr>() {
                Err(e) => problems.push(format!(
                    "console.listen: {addr:?} is not an address ({e}): use HOST:PORT such as 127.0.0.1:7071, or leave it unset for no console"
                )),
                Ok(c) if c.port() != 0
                    && (listen.as_ref().is_ok_and(|l| *l == c)
                        || [&self.metrics.listen, &self.http.listen].into_iter().flatten().any(|other| other.parse::<SocketAddr>().ok() == Some(c))) =>
                {
                    problems.push(format!(
                        "console.listen: {addr} is already the gRPC, HTTP or metrics address: give the console a port of its own"
                    ))
                }
                Ok(_) if !self.http.enabled => problems.push(
                    "console.listen: set while http.enabled is false: the console calls the API over HTTP, so set http.enabled: true or remove console.listen".into(),
                ),
                Ok(_) => {}
            }
        }
        if let Some(addr) = &self.http.listen {
            match addr.parse::<SocketAddr>() {
                Err(e) => problems.push(format!(
                    "http.listen: {addr:?} is not an address ({e}): use HOST:PORT such as 127.0.0.1:8080, or leave it unset to serve HTTP on the listen address only"
                )),
                Ok(h) if listen.as_ref().is_ok_and(|l| *l == h && h.port() != 0) => problems.push(format!(
                    "http.listen: {addr} is the listen address: HTTP is served there already, so leave http.listen unset or give it another port"
                )),
                Ok(h) if self.metrics.listen.as_deref().and_then(|m| m.parse::<SocketAddr>().ok()) == Some(h) && h.port() != 0 => problems.push(format!(
                    "http.listen: {addr} is metrics.listen too: give one of them another port"
                )),
                Ok(_) if !self.http.enabled => problems.push(
                    "http.listen: set while http.enabled is false: set http.enabled: true to serve HTTP there, or remove http.listen".into(),
                ),
                Ok(_) => {}
            }
        }
        for (i, origin) in self.http.cors_allowed_origins.iter().enumerate() {
            if let Some(why) = check_origin(origin) {
                problems.push(format!("http.cors_allowed_origins[{i}]: {why}"));
            }
        }
        if !is_log_filter(&self.log.level) {
            problems.push(format!(
                "log.level: {:?} is not a level: use error, warn, info, debug or trace, or per target such as toolgate=debug,info",
                self.log.level
            ));
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ConfigError { problems })
        }
    }
}

/// A tracing filter whose every directive ends in a level: a bare word such as
/// `verbose` parses as a target name, which would log nothing at all.
pub(super) fn is_log_filter(filter: &str) -> bool {
    const LEVELS: [&str; 6] = ["error", "warn", "info", "debug", "trace", "off"];
    let level = |l: &str| LEVELS.contains(&l.trim().to_ascii_lowercase().as_str());
    !filter.trim().is_empty()
        && tracing_subscriber::EnvFilter::try_new(filter).is_ok()
        && filter.split(',').all(|d| match d.rsplit_once('=') {
            Some((_, l)) => level(l),
            None => level(d),
        })
}

/// A principal's team and user pass the service's id check (an empty team is
/// `check_scope`'s to report).
fn check_ids(problems: &mut Vec<String>, at: &str, team: Option<&str>, user: Option<&str>) {
    for (field, value) in [("team", team), ("user", user)] {
        if let Some(value) = value.filter(|v| !v.trim().is_empty())
            && let Err(e) = crate::ids::check_id(&format!("{at}.{field}"), value)
        {
            problems.push(e.to_string());
        }
    }
}

/// A token's or certificate's name stays out of the names the server gives
/// principals itself (`jwt:…` above all).
fn check_name(problems: &mut Vec<String>, at: &str, name: &str) {
    if let Err(e) = crate::auth::principal::check_principal_name(name) {
        problems.push(format!("{at}.name: {e}"));
    }
}

fn check_scope(problems: &mut Vec<String>, at: &str, role: Role, team: Option<&str>) {
    match (role, team) {
        (Role::Operator, Some(_)) => problems.push(format!(
            "{at}.team: an operator spans all teams: remove team"
        )),
        (Role::Operator, None) => {}
        (_, None) => problems.push(format!(
            "{at}.team: required for role {role:?}: name the team"
        )),
        (_, Some(t)) if t.trim().is_empty() => {
            problems.push(format!("{at}.team: must not be empty"))
        }
        (_, Some(t)) if crate::auth::principal::is_reserved_team(t) => problems.push(format!(
            "{at}.team: {}",
            crate::auth::principal::reserved_team_problem(t)
        )),
        _ => {}
    }
}

/// `auth.jwt.sign_in`: what `toolgate login --sso` is told must work at the issuer.
fn check_sign_in(problems: &mut Vec<String>, jwt: &super::JwtConfig) {
    let Some(sign_in) = &jwt.sign_in else {
        return;
    };
    let issuer = url::Url::parse(&jwt.issuer);
    let loopback_http = issuer
        .as_ref()
        .is_ok_and(|u| u.scheme() == "http" && toolgate_core::secure_url::is_loopback(u));
    match &issuer {
        Ok(u) if u.scheme() == "https" && u.host().is_some() => {}
        Ok(_) if loopback_http && sign_in.allow_loopback_http => {}
        Ok(_) if loopback_http => problems.push(format!(
            "auth.jwt.issuer: {:?} is plain http: developers sign in at an https issuer; for a test provider on this machine set auth.jwt.sign_in.allow_loopback_http: true",
            jwt.issuer
        )),
        _ => problems.push(format!(
            "auth.jwt.issuer: {:?} is not an https URL, and `toolgate login --sso` finds the provider at ISSUER/.well-known/openid-configuration: give the issuer's URL, e.g. https://idp.example.com",
            jwt.issuer
        )),
    }
    if sign_in.allow_loopback_http && !loopback_http {
        problems.push(
            "auth.jwt.sign_in.allow_loopback_http: only a plain http issuer on 127.0.0.1, ::1 or localhost needs it: remove it".into(),
        );
    }
    if sign_in.client_id.trim().is_empty() || sign_in.client_id.len() > 256 {
        problems.push("auth.jwt.sign_in.client_id: give the public client (no secret) registered at the identity provider for toolgate, at most 256 characters".into());
    }
    if sign_in.flows.is_empty() {
        problems.push("auth.jwt.sign_in.flows: give at least one of device and browser".into());
    }
    if sign_in.scopes.len() > 32
        || sign_in.scopes.iter().any(|s| {
            s.is_empty()
                || s.len() > 128
                || !s
                    .bytes()
                    .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\')
        })
    {
        problems.push("auth.jwt.sign_in.scopes: at most 32 scopes of printable characters without spaces, quotes or backslashes, e.g. [openid, offline_access]".into());
    } else if !sign_in.scopes.iter().any(|s| s == "openid") {
        problems.push(
            "auth.jwt.sign_in.scopes: add openid: the sign-in reads the issuer's OpenID tokens"
                .into(),
        );
    }
    if sign_in.bearer == super::SignInBearer::IdToken && jwt.audience != sign_in.client_id {
        problems.push(format!(
            "auth.jwt.audience: {:?} is not auth.jwt.sign_in.client_id {:?}, and an ID token's audience is the client it was issued to: set auth.jwt.audience to the client id, or sign_in.bearer: access_token if the provider issues JWT access tokens for toolgate",
            jwt.audience, sign_in.client_id
        ));
    }
}

/// `auth.jwt.team_by_group`: every team an id, every group named.
fn check_team_by_group(problems: &mut Vec<String>, jwt: &super::JwtConfig) {
    let Some(map) = &jwt.team_by_group else {
        return;
    };
    if map.claim.trim().is_empty() {
        problems.push(
            "auth.jwt.team_by_group.claim: give the claim holding the groups, e.g. groups".into(),
        );
    }
    if map.teams.is_empty() {
        problems.push("auth.jwt.team_by_group.teams: map at least one group to a team, e.g. {platform-eng: platform}, or remove team_by_group".into());
    }
    for (group, team) in &map.teams {
        if group.trim().is_empty() || group.len() > 256 {
            problems.push(format!("auth.jwt.team_by_group.teams: the group {group:?} must be 1 to 256 characters, as the identity provider names it"));
        }
        if crate::auth::principal::is_reserved_team(team) {
            problems.push(format!("auth.jwt.team_by_group.teams.{group}: {team:?} is reserved (it stands for every team): name one team"));
        } else if let Err(e) = crate::ids::check_id("team", team) {
            problems.push(format!("auth.jwt.team_by_group.teams.{group}: {e}"));
        }
    }
}

/// A configured principal's groups: each a group name, at most the limit.
fn check_groups(problems: &mut Vec<String>, at: &str, groups: &[String]) {
    if let Err(e) = toolgate_core::policy::groups::normalise_groups(groups.iter().cloned()) {
        problems.push(format!("{at}.groups: {e}"));
    }
}
