//! MCP servers by identity (`managed.allowed_mcp_servers`, `denied_mcp_servers`):
//! a server named, launched by an exact command, or reached at a URL pattern, with
//! Claude Code's rules for which entry a server must match, so that its managed
//! settings and `toolgate proxy` admit exactly the same servers.

use super::super::{AccessMode, AdminControls, BUILTIN_SERVER, Entry, Side};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The most entries one list may hold.
pub const MAX_SERVER_IDENTITIES: usize = 256;
/// The most words a command may have.
pub const MAX_COMMAND_WORDS: usize = 64;
/// The longest word of a command, in bytes.
pub const MAX_COMMAND_WORD_BYTES: usize = 1024;
/// The longest URL pattern, in bytes.
pub const MAX_URL_BYTES: usize = 2048;
/// The longest server name, in bytes.
pub const MAX_SERVER_NAME_BYTES: usize = 128;

/// One MCP server identity: exactly one of a name, a command or a URL pattern.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ServerIdentity {
    /// The server's configured name (letters, digits, `-` and `_`).
    Name(String),
    /// The command that launches a stdio server, as its words, matched exactly.
    Command(Vec<String>),
    /// A remote server's URL; `*` matches any run of characters.
    Url(String),
}

/// How an upstream server is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Launch<'a> {
    /// A stdio server: its program and arguments.
    Command(&'a [String]),
    /// A remote server: its URL.
    Url(&'a str),
}

/// A server as a client or the proxy configures it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Server<'a> {
    pub name: &'a str,
    pub launch: Launch<'a>,
}

/// Whether `name` is a name Claude Code's `serverName` takes.
pub fn is_server_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_SERVER_NAME_BYTES
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The problem with `list` (the field `field`), naming the entry, the rule and the fix.
pub fn check_identities(field: &str, list: &[ServerIdentity]) -> Result<(), String> {
    if list.len() > MAX_SERVER_IDENTITIES {
        return Err(format!(
            "{field}: {} entries, more than the {MAX_SERVER_IDENTITIES} allowed: name fewer servers",
            list.len()
        ));
    }
    for (i, identity) in list.iter().enumerate() {
        let at = format!("{field}[{i}]");
        match identity {
            ServerIdentity::Name(name) => {
                if !is_server_name(name) {
                    return Err(format!(
                        "{at}.name: {:?} is not a server name: use letters, digits, - and _ only, at most {MAX_SERVER_NAME_BYTES} bytes",
                        shown(name)
                    ));
                }
            }
            ServerIdentity::Command(words) => check_command(&at, words)?,
            ServerIdentity::Url(pattern) => check_url(&at, pattern)?,
        }
    }
    Ok(())
}

/// A value cut short for an error message.
fn shown(text: &str) -> String {
    text.chars().take(64).collect()
}

fn check_command(at: &str, words: &[String]) -> Result<(), String> {
    if words.is_empty() || words[0].is_empty() {
        return Err(format!(
            "{at}.command: no program: give the command as its words, the program first, such as [npx, -y, server-github]"
        ));
    }
    if words.len() > MAX_COMMAND_WORDS {
        return Err(format!(
            "{at}.command: {} words, more than the {MAX_COMMAND_WORDS} allowed",
            words.len()
        ));
    }
    for (j, word) in words.iter().enumerate() {
        if word.len() > MAX_COMMAND_WORD_BYTES {
            return Err(format!(
                "{at}.command[{j}]: longer than {MAX_COMMAND_WORD_BYTES} bytes"
            ));
        }
        if word.chars().any(char::is_control) {
            return Err(format!(
                "{at}.command[{j}]: {:?} holds a control character: give each word as the program receives it, without control characters",
                shown(word)
            ));
        }
    }
    Ok(())
}

fn check_url(at: &str, pattern: &str) -> Result<(), String> {
    let problem = if pattern.len() > MAX_URL_BYTES {
        Some(format!("longer than {MAX_URL_BYTES} bytes"))
    } else if pattern.chars().any(|c| c.is_control() || c.is_whitespace()) {
        Some("holds a space or a control character".into())
    } else {
        match authority(pattern) {
            None => Some("does not start with http:// or https:// (the scheme is never a wildcard)".into()),
            Some("") => Some("names no host: give one, or * for any".into()),
            Some(host) if host.chars().any(|c| c.is_ascii_uppercase()) => {
                Some("has upper-case letters in its host: write the host in lower case, as URLs are compared".into())
            }
            Some(_) => None,
        }
    };
    match problem {
        Some(problem) => Err(format!(
            "{at}.url: {:?} {problem}; a URL pattern is such as https://mcp.example.com/* (* matches any characters)",
            shown(pattern)
        )),
        None => Ok(()),
    }
}

/// The host and port of `url` (`None` without an http or https scheme).
fn authority(url: &str) -> Option<&str> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))?;
    Some(rest.split(['/', '?', '#']).next().unwrap_or(""))
}

/// `url` as identities compare it: the scheme and host in lower case.
pub fn canonical_url(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return url.to_owned();
    };
    let host_end = url[scheme_end + 3..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |i| scheme_end + 3 + i);
    format!(
        "{}{}",
        url[..host_end].to_ascii_lowercase(),
        &url[host_end..]
    )
}

/// Whether `url` matches `pattern`, whose `*` matches any run of characters.
pub fn url_matches(pattern: &str, url: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = url.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

impl ServerIdentity {
    /// Whether `server` is this identity.
    pub fn matches(&self, server: &Server<'_>) -> bool {
        match (self, server.launch) {
            (ServerIdentity::Name(name), _) => name == server.name,
            (ServerIdentity::Command(words), Launch::Command(argv)) => words == argv,
            (ServerIdentity::Url(pattern), Launch::Url(url)) => {
                url_matches(pattern, &canonical_url(url))
            }
            _ => false,
        }
    }
}

/// The servers a team lets be configured and those it refuses, as Claude Code's
/// `allowedMcpServers`/`deniedMcpServers` say them: `allowed` none means no list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerRules {
    pub allowed: Option<Vec<ServerIdentity>>,
    pub denied: Vec<ServerIdentity>,
}

/// The team's server rules: the kill switch allows none; the access allowlist's
/// servers by name and `managed.allowed_mcp_servers` are the allowed ones; the
/// blocklist's whole servers and `managed.denied_mcp_servers` the denied ones.
/// What cannot be said is warned, always on the stricter side.
pub fn server_rules(admin: &AdminControls, warnings: &mut Vec<String>) -> ServerRules {
    let managed = admin.managed.as_deref();
    let mut denied: Vec<ServerIdentity> = managed
        .map(|m| m.denied_mcp_servers.clone())
        .unwrap_or_default();
    for raw in &admin.mcp_tool_blocklist {
        if let Ok(Entry::Pair {
            server: Side::Exact(s),
            tool: Side::Any,
        }) = Entry::parse(raw)
        {
            if s == BUILTIN_SERVER {
                continue;
            }
            if is_server_name(&s) {
                denied.push(ServerIdentity::Name(s));
            } else {
                warnings.push(format!(
                    "blocklist entry {raw:?} names a server Claude Code cannot name in deniedMcpServers: the hook denies its tools instead"
                ));
            }
        }
    }
    denied.sort();
    denied.dedup();
    let by_identity = managed
        .map(|m| m.allowed_mcp_servers.clone())
        .unwrap_or_default();
    let allowed = if admin.kill_switch {
        Some(Vec::new())
    } else {
        let mut allowed = match access_names(admin, warnings) {
            Some(names) => Some(names),
            None if by_identity.is_empty() => None,
            None => Some(Vec::new()),
        };
        if let Some(list) = &mut allowed {
            list.extend(by_identity);
            list.sort();
            list.dedup();
        }
        allowed
    };
    ServerRules { allowed, denied }
}

/// The access allowlist's servers by name (none: the mode is off or an entry does
/// not name one server).
fn access_names(admin: &AdminControls, warnings: &mut Vec<String>) -> Option<Vec<ServerIdentity>> {
    if admin.mcp_access_mode != AccessMode::Allowlist {
        return None;
    }
    let mut names = Vec::new();
    for raw in &admin.mcp_access_allowlist {
        match Entry::parse(raw) {
            Ok(Entry::Pair {
                server: Side::Exact(s),
                ..
            }) if s == BUILTIN_SERVER => {}
            Ok(Entry::Pair {
                server: Side::Exact(s),
                ..
            }) => {
                if is_server_name(&s) {
                    names.push(ServerIdentity::Name(s));
                } else {
                    warnings.push(format!(
                        "access allowlist entry {raw:?} names a server Claude Code cannot name in allowedMcpServers (letters, digits, - and _ only): that server is not allowed to be configured"
                    ));
                }
            }
            Ok(Entry::Preset(_)) => {}
            _ => {
                warnings.push(format!(
                    "access allowlist entry {raw:?} does not name one server: its servers are not listed by name and the hook decides every MCP call"
                ));
                return None;
            }
        }
    }
    Some(names)
}

impl ServerRules {
    /// Why `server` may not be configured, if it may not: a denied entry it matches,
    /// or with an allowed list, none it must match (a stdio server a command entry
    /// when there is one, a remote server a URL entry when there is one, else a
    /// name entry).
    pub fn refusal(&self, server: &Server<'_>) -> Option<String> {
        if let Some(d) = self.denied.iter().find(|d| d.matches(server)) {
            return Some(format!("it matches the denied MCP server {}", d.describe()));
        }
        let allowed = self.allowed.as_ref()?;
        let kind = |i: &ServerIdentity| match server.launch {
            Launch::Command(_) => matches!(i, ServerIdentity::Command(_)),
            Launch::Url(_) => matches!(i, ServerIdentity::Url(_)),
        };
        let by_launch = allowed.iter().any(kind);
        let admitted = allowed.iter().any(|i| {
            let considered = if by_launch {
                kind(i)
            } else {
                matches!(i, ServerIdentity::Name(_))
            };
            considered && i.matches(server)
        });
        if admitted {
            return None;
        }
        Some(if by_launch {
            match server.launch {
                Launch::Command(_) => "its command is not one of the allowed MCP server commands",
                Launch::Url(_) => "its URL matches none of the allowed MCP server URLs",
            }
            .to_owned()
        } else {
            "its name is not one of the allowed MCP servers".to_owned()
        })
    }

    /// Whether the team names any server by command or URL (then `toolgate proxy`
    /// checks its upstream before relaying anything).
    pub fn by_identity(admin: &AdminControls) -> bool {
        admin
            .managed
            .as_deref()
            .is_some_and(|m| !m.allowed_mcp_servers.is_empty() || !m.denied_mcp_servers.is_empty())
    }
}

impl ServerIdentity {
    /// The identity as a sentence names it.
    pub fn describe(&self) -> String {
        match self {
            ServerIdentity::Name(n) => format!("named {n:?}"),
            ServerIdentity::Command(words) => format!("launched by {words:?}"),
            ServerIdentity::Url(u) => format!("at {u:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn table() -> Value {
        serde_json::from_str(include_str!(
            "../../../../../tests/data/mcp_server_identities.json"
        ))
        .unwrap()
    }

    /// `REPEAT:c:n` stands for `c` n times (long values kept out of the table).
    fn expand(text: &str) -> String {
        match text.find("REPEAT:") {
            Some(at) => {
                let mut spec = text[at + 7..].splitn(2, ':');
                let c = spec.next().unwrap();
                let n: usize = spec.next().unwrap().parse().unwrap();
                format!("{}{}", &text[..at], c.repeat(n))
            }
            None => text.to_owned(),
        }
    }

    fn identity(v: &Value) -> ServerIdentity {
        let mut i: ServerIdentity = serde_json::from_value(v.clone()).unwrap();
        match &mut i {
            ServerIdentity::Name(n) | ServerIdentity::Url(n) => *n = expand(n),
            ServerIdentity::Command(words) => {
                if let Some(spec) = words.first().and_then(|w| w.strip_prefix("REPEATWORDS:")) {
                    let (w, n) = spec.split_once(':').unwrap();
                    *words = vec![w.to_owned(); n.parse().unwrap()];
                } else {
                    for w in words {
                        *w = expand(w);
                    }
                }
            }
        }
        i
    }

    fn identities(v: &Value) -> Vec<ServerIdentity> {
        v.as_array().unwrap().iter().map(identity).collect()
    }

    #[test]
    fn hostile_identities_are_refused_naming_the_entry() {
        let t = table();
        for case in t["invalid"].as_array().unwrap() {
            let i = identity(&case["identity"]);
            let want = case["error"].as_str().unwrap();
            for field in ["managed.allowed_mcp_servers", "managed.denied_mcp_servers"] {
                let err = check_identities(field, &[ServerIdentity::Name("ok".into()), i.clone()])
                    .unwrap_err();
                assert!(err.starts_with(&format!("{field}[1]")), "{err}");
                assert!(err.contains(want), "{case}: {err}");
                assert!(err.len() < 600, "the message is bounded: {err}");
            }
        }
        let many = vec![ServerIdentity::Name("a".into()); t["too_many"].as_u64().unwrap() as usize];
        let err = check_identities("managed.denied_mcp_servers", &many).unwrap_err();
        assert!(err.contains("more than the 256 allowed"), "{err}");
        assert_eq!(
            check_identities("f", &many[..MAX_SERVER_IDENTITIES]),
            Ok(())
        );
        for bad in t["unreadable"].as_array().unwrap() {
            assert!(
                serde_json::from_value::<ServerIdentity>(bad.clone()).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn servers_are_refused_as_claude_code_refuses_them() {
        for case in table()["servers"].as_array().unwrap() {
            let rules = ServerRules {
                allowed: (!case["allowed"].is_null()).then(|| identities(&case["allowed"])),
                denied: identities(&case["denied"]),
            };
            for list in rules.allowed.iter().chain([&rules.denied]) {
                assert_eq!(check_identities("f", list), Ok(()), "{case}");
            }
            let s = &case["server"];
            let argv: Vec<String> = s["command"]
                .as_array()
                .map(|a| a.iter().map(|w| w.as_str().unwrap().to_owned()).collect())
                .unwrap_or_default();
            let launch = match s["url"].as_str() {
                Some(url) => Launch::Url(url),
                None => Launch::Command(&argv),
            };
            let server = Server {
                name: s["name"].as_str().unwrap(),
                launch,
            };
            let refusal = rules.refusal(&server);
            assert_eq!(
                refusal.is_some(),
                case["refused"].as_bool().unwrap(),
                "{}: {refusal:?}",
                case["about"]
            );
        }
    }

    #[test]
    fn url_patterns_match_the_whole_url() {
        for (pattern, url, want) in [
            ("https://a.example/*", "https://a.example/", true),
            ("https://a.example/*", "https://a.example", false),
            ("https://*.a.example/*", "https://x.a.example/y", true),
            ("https://*.a.example/*", "https://a.example/y", false),
            ("https://*/mcp", "https://x/y/mcp", true),
            ("https://*", "https://", true),
            ("https://a*a", "https://a", false),
            ("https://a*a", "https://aa", true),
            ("https://**", "https://x", true),
        ] {
            assert_eq!(url_matches(pattern, url), want, "{pattern} {url}");
        }
        assert_eq!(
            canonical_url("HTTPS://A.Example:8443/Path"),
            "https://a.example:8443/Path"
        );
        assert_eq!(canonical_url("nonsense"), "nonsense");
    }
}
