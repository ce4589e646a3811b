//! Claude Code's managed `allowedMcpServers`/`deniedMcpServers` never let a server be
//! configured that `toolgate proxy` would refuse: policies drawn at random (servers
//! by name, command and URL, the access allowlist, the blocklist, the kill switch),
//! the export read by a reference of Claude Code's documented matching, over servers
//! drawn at random.

use proptest::prelude::*;
use serde_json::Value;
use toolgate::export::claude_managed;
use toolgate::policy::managed::ManagedControls;
use toolgate::policy::managed::ServerIdentity;
use toolgate::policy::managed::servers::{Launch, Server, server_rules};
use toolgate::policy::{AccessMode, AdminControls, UserSettings};

const NAMES: &[&str] = &["github", "jira", "evil"];
const COMMANDS: &[&[&str]] = &[
    &["npx", "github"],
    &["npx", "evil"],
    &["uvx", "jira", "--ro"],
];
const PATTERNS: &[&str] = &[
    "https://mcp.example.com/*",
    "https://*.evil.example/*",
    "https://jira.example/mcp",
];
const URLS: &[&str] = &[
    "https://mcp.example.com/v1",
    "https://a.evil.example/x",
    "https://jira.example/mcp",
    "https://JIRA.example/mcp",
    "https://other.example/",
];

fn identity() -> impl Strategy<Value = ServerIdentity> {
    prop_oneof![
        prop::sample::select(NAMES).prop_map(|n| ServerIdentity::Name(n.into())),
        prop::sample::select(COMMANDS)
            .prop_map(|c| ServerIdentity::Command(c.iter().map(|w| (*w).to_owned()).collect())),
        prop::sample::select(PATTERNS).prop_map(|u| ServerIdentity::Url(u.into())),
    ]
}

fn admin() -> impl Strategy<Value = AdminControls> {
    (
        prop::collection::vec(identity(), 0..4),
        prop::collection::vec(identity(), 0..3),
        prop::option::of(prop::collection::vec(prop::sample::select(NAMES), 0..3)),
        prop::collection::vec(prop::sample::select(NAMES), 0..2),
        prop::bool::weighted(0.1),
    )
        .prop_map(
            |(allowed, denied, access, blocked, kill_switch)| AdminControls {
                enabled: true,
                kill_switch,
                mcp_access_mode: if access.is_some() {
                    AccessMode::Allowlist
                } else {
                    AccessMode::Blocklist
                },
                mcp_access_allowlist: access
                    .unwrap_or_default()
                    .iter()
                    .map(|n| format!("{n}:*"))
                    .collect(),
                mcp_tool_blocklist: blocked.iter().map(|n| format!("{n}:*")).collect(),
                managed: Some(Box::new(ManagedControls {
                    allowed_mcp_servers: allowed,
                    denied_mcp_servers: denied,
                    ..ManagedControls::default()
                })),
                ..AdminControls::default()
            },
        )
}

/// A configured server: a name, and a command or a URL.
#[derive(Debug, Clone)]
struct Configured {
    name: String,
    command: Option<Vec<String>>,
    url: Option<String>,
}

fn configured() -> impl Strategy<Value = Configured> {
    (
        prop::sample::select(NAMES),
        prop_oneof![
            prop::sample::select(COMMANDS)
                .prop_map(|c| (Some(c.iter().map(|w| (*w).to_owned()).collect()), None)),
            prop::sample::select(URLS).prop_map(|u| (None, Some(u.to_owned()))),
        ],
    )
        .prop_map(|(name, (command, url))| Configured {
            name: name.into(),
            command,
            url,
        })
}

/// `*` as any run of characters, the whole text: a table of prefixes matched.
fn wildcard(pattern: &[u8], text: &[u8]) -> bool {
    let mut can = vec![false; text.len() + 1];
    can[0] = true;
    for &p in pattern {
        let mut next = vec![false; text.len() + 1];
        for i in 0..=text.len() {
            next[i] = if p == b'*' {
                can[i] || (i > 0 && next[i - 1])
            } else {
                i > 0 && can[i - 1] && text[i - 1] == p
            };
        }
        can = next;
    }
    can[text.len()]
}

/// The scheme and host of a URL in lower case, as the proxy compares it.
fn lower_host(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap();
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    format!("{}://{}{path}", scheme.to_lowercase(), host.to_lowercase())
}

fn entry_matches(entry: &Value, s: &Configured) -> bool {
    if let Some(n) = entry.get("serverName") {
        return n == s.name.as_str();
    }
    if let Some(c) = entry.get("serverCommand") {
        return s
            .command
            .as_ref()
            .is_some_and(|argv| c == &serde_json::json!(argv));
    }
    let pattern = entry["serverUrl"].as_str().unwrap();
    s.url
        .as_ref()
        .is_some_and(|u| wildcard(pattern.as_bytes(), lower_host(u).as_bytes()))
}

/// Claude Code's rules over its managed settings: whether `s` may be configured.
fn claude_admits(settings: &Value, s: &Configured) -> bool {
    let list = |key: &str| settings.get(key).and_then(Value::as_array).cloned();
    if list("deniedMcpServers")
        .unwrap_or_default()
        .iter()
        .any(|e| entry_matches(e, s))
    {
        return false;
    }
    let Some(allowed) = list("allowedMcpServers") else {
        return true;
    };
    let key = if s.command.is_some() {
        "serverCommand"
    } else {
        "serverUrl"
    };
    let by_launch = allowed.iter().any(|e| e.get(key).is_some());
    allowed.iter().any(|e| {
        let considered = if by_launch {
            e.get(key).is_some()
        } else {
            e.get("serverName").is_some()
        };
        considered && entry_matches(e, s)
    })
}

proptest! {
    #[test]
    fn claude_code_never_admits_a_server_toolgate_refuses(
        admin in admin(),
        servers in prop::collection::vec(configured(), 1..6),
    ) {
        let out = claude_managed(&admin, &UserSettings::default(), &[], "toolgate hook claude-code")
            .unwrap();
        let doc: Value = serde_json::from_str(&out.text).unwrap();
        let settings = &doc["managedSettings"];
        let rules = server_rules(&admin, &mut Vec::new());
        for s in &servers {
            let launch = match (&s.command, &s.url) {
                (Some(argv), _) => Launch::Command(argv),
                (None, Some(url)) => Launch::Url(url),
                (None, None) => unreachable!(),
            };
            let refusal = rules.refusal(&Server { name: &s.name, launch });
            let admitted = claude_admits(settings, s);
            // never more permissive, and here (every name Claude Code can say) the same
            prop_assert!(!admitted || refusal.is_none(), "{s:?} {settings} {refusal:?}");
            prop_assert_eq!(admitted, refusal.is_none(), "{:?} {}", s, settings);
        }
    }
}
