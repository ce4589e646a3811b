//! Rates: how many calls a team, each user, or the calls of some tools may make per
//! minute (with a burst), as a token bucket per rule. Pure: the caller brings the
//! clock (milliseconds) and the number of replicas sharing the limit, and keeps the
//! buckets ([`RateBook`]).
//!
//! Across replicas each keeps its own buckets and takes `1/N` of every limit, `N`
//! the replicas it knows to be live: calls spread evenly are admitted at the team's
//! rate, calls that all land on one replica at `1/N` of it (stricter, never looser).
//! Over any interval `T` the replicas together admit at most
//! `max(burst, N) + calls_per_minute · T / 60 s` while they agree on `N`.

use super::{Call, EntryProblem, Rule, builtin, entry::Entry, split_internal_name};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

/// The most rules a team may have.
pub const MAX_RATE_RULES: usize = 32;
/// The most calls per minute a rule may allow (about 16,000 a second).
pub const MAX_CALLS_PER_MINUTE: i64 = 1_000_000;
/// The largest burst a rule may allow.
pub const MAX_BURST: i64 = 100_000;
/// The most replicas a limit is divided among (more counts as this many).
pub const MAX_REPLICAS: u32 = 1024;
/// The longest `tools` pattern.
const MAX_PATTERN_LEN: usize = 513;

/// The name of a shell call and of a file deletion, for a rule's `tools`.
pub const SHELL_TOOL: &str = "run_shell_command";
pub const DELETE_TOOL: &str = "delete_file";

/// A team's rates (`rates:` in its controls).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct RateControls {
    /// Every rule applies to the calls it matches; a call past any one is limited.
    pub rules: Vec<RateRule>,
    /// What a call past its rate gets: `ask` (the default) or `deny`.
    pub exceeded: RateExceeded,
}

/// One limit: calls per minute and a burst, counted for the whole team or for each
/// user, over every call or the calls of the tools `tools` matches.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct RateRule {
    /// Counted per `user` (each user their own bucket) or per `team` (one bucket).
    pub per: RateScope,
    /// An MCP entry (`github:*`, `*:delete_*`, `builtin:run_shell_command`) whose calls
    /// the rule counts; empty counts every call.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub tools: String,
    /// Calls the rule refills per minute, 1 to 1,000,000.
    pub calls_per_minute: i64,
    /// Calls that may be made at once after a quiet spell, 1 to 100,000.
    pub burst: i64,
}

impl Default for RateRule {
    fn default() -> Self {
        Self {
            per: RateScope::User,
            tools: String::new(),
            calls_per_minute: 0,
            burst: 0,
        }
    }
}

/// Whose calls one bucket counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RateScope {
    #[default]
    User,
    Team,
}

/// What a call past its rate gets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RateExceeded {
    /// ASK `RATE_LIMITED`: a person may still let it run.
    #[default]
    Ask,
    /// DENY `RATE_LIMITED`.
    Deny,
}

impl RateControls {
    /// Whether no rule is set (the document then leaves `rates:` out).
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }

    /// Every problem, each naming its field (`rates.rules[2].burst`), the rule it
    /// breaks and the fix.
    pub fn problems(&self) -> Vec<EntryProblem> {
        let mut problems = Vec::new();
        let mut push = |field: String, entry: String, rule: Rule, hint: String| {
            problems.push(EntryProblem {
                field: format!("rates.{field}"),
                entry,
                rule,
                hint,
            });
        };
        if self.rules.len() > MAX_RATE_RULES {
            push(
                "rules".into(),
                format!("{} rules", self.rules.len()),
                Rule::TooMany,
                format!(
                    "more than {MAX_RATE_RULES} rules: one rule with a glob (`github:*`) counts many tools"
                ),
            );
        }
        for (i, rule) in self.rules.iter().enumerate() {
            let mut number = |name: &str, value: i64, max: i64, what: &str| {
                let hint = if value < 1 {
                    format!(
                        "must be at least 1 ({what}); to stop a tool, block it (mcp_tool_blocklist) instead"
                    )
                } else if value > max {
                    format!("is more than {max}: give a number from 1 to {max}")
                } else {
                    return;
                };
                push(
                    format!("rules[{i}].{name}"),
                    value.to_string(),
                    Rule::Malformed,
                    hint,
                );
            };
            number(
                "calls_per_minute",
                rule.calls_per_minute,
                MAX_CALLS_PER_MINUTE,
                "the calls refilled each minute",
            );
            number(
                "burst",
                rule.burst,
                MAX_BURST,
                "the calls allowed at once, e.g. the same as calls_per_minute",
            );
            if rule.tools.len() > MAX_PATTERN_LEN {
                push(
                    format!("rules[{i}].tools"),
                    rule.tools.chars().take(64).collect(),
                    Rule::TooLong,
                    "is longer than a server:tool entry can be: use a glob".into(),
                );
            } else if let Some(c) = rule.tools.chars().find(|c| invisible(*c)) {
                push(
                    format!("rules[{i}].tools"),
                    rule.tools.escape_default().to_string(),
                    Rule::Malformed,
                    format!(
                        "holds the invisible or control character U+{:04X}: write the names in plain characters",
                        u32::from(c)
                    ),
                );
            } else if !rule.tools.is_empty()
                && let Err(r) = Entry::parse(&rule.tools)
            {
                push(
                    format!("rules[{i}].tools"),
                    rule.tools.clone(),
                    r,
                    format!(
                        "{}; leave it empty to count every call",
                        super::entry::hint(r)
                    ),
                );
            }
        }
        problems
    }
}

/// Control characters, and the invisible and bidirectional ones that make a pattern
/// read as something else than it matches.
fn invisible(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2069}' | '\u{FEFF}')
}

/// A rule ready to match calls: its limit and the key its buckets are kept under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompiledRule {
    pub index: usize,
    pub per: RateScope,
    pub limit: Limit,
    /// None: every call.
    tools: Option<Entry>,
    /// `tools` as written.
    pattern: String,
    /// The rule's text hashed: a changed rule starts with fresh buckets.
    pub key: u64,
}

/// A team's rates, compiled (only for teams that have a rule).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompiledRates {
    pub rules: Vec<CompiledRule>,
    pub exceeded: RateExceeded,
}

impl CompiledRule {
    /// The rule's `tools` as written, None when it counts every call.
    pub fn tools(&self) -> Option<&str> {
        self.tools.as_ref().map(|_| self.pattern.as_str())
    }
}

impl CompiledRates {
    /// The rates of `controls`, None when there is no rule. Rules with a problem
    /// are left out (a write refuses them; see [`RateControls::problems`]).
    pub fn compile(controls: &RateControls) -> Option<Self> {
        let rules: Vec<CompiledRule> = controls
            .rules
            .iter()
            .enumerate()
            .take(MAX_RATE_RULES)
            .filter_map(|(index, rule)| {
                let limit = Limit::new(rule.calls_per_minute, rule.burst)?;
                let tools = if rule.tools.is_empty() {
                    None
                } else if rule.tools.len() > MAX_PATTERN_LEN || rule.tools.chars().any(invisible) {
                    return None;
                } else {
                    Some(Entry::parse(&rule.tools).ok()?)
                };
                let mut h = std::collections::hash_map::DefaultHasher::new();
                (index, rule).hash(&mut h);
                Some(CompiledRule {
                    index,
                    per: rule.per,
                    limit,
                    tools,
                    pattern: rule.tools.clone(),
                    key: h.finish(),
                })
            })
            .collect();
        (!rules.is_empty()).then_some(Self {
            rules,
            exceeded: controls.exceeded,
        })
    }

    /// The rules that count `call`.
    pub fn matching<'a>(&'a self, call: &'a Call) -> impl Iterator<Item = &'a CompiledRule> + 'a {
        let (server, tool) = call_name(call);
        self.rules.iter().filter(move |r| match &r.tools {
            None => true,
            Some(entry) => entry.matches_call(server, tool),
        })
    }
}

/// The server and tool a rule's `tools` matches a call as.
fn call_name(call: &Call) -> (&str, &str) {
    match call {
        Call::Mcp { server, tool } | Call::McpAction { server, tool, .. } => (server, tool),
        Call::McpInternal {
            name,
            fallback_server,
        } => split_internal_name(name, fallback_server),
        Call::Shell(_) => (builtin::SERVER, SHELL_TOOL),
        Call::DeleteFile(_) => (builtin::SERVER, DELETE_TOOL),
    }
}

/// A rule's limit, validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Limit {
    pub calls_per_minute: u32,
    pub burst: u32,
}

/// What one call costs a bucket shared by one replica, in units: a bucket refills
/// `calls_per_minute` units a millisecond, so exactly that many calls a minute.
const UNITS_PER_CALL: u64 = 60_000;

impl Limit {
    /// The limit, if both numbers are within their bounds.
    pub fn new(calls_per_minute: i64, burst: i64) -> Option<Self> {
        let ok = |v: i64, max: i64| (1..=max).contains(&v).then_some(v as u32);
        Some(Self {
            calls_per_minute: ok(calls_per_minute, MAX_CALLS_PER_MINUTE)?,
            burst: ok(burst, MAX_BURST)?,
        })
    }

    /// A call's cost on one of `replicas`: its `1/N` share of the rate and burst is
    /// kept exact by making each call cost `N` times more.
    fn cost(replicas: u32) -> u64 {
        UNITS_PER_CALL * u64::from(replicas.clamp(1, MAX_REPLICAS))
    }

    /// The bucket's capacity: the burst, but never less than one call (a burst of 3
    /// over 5 replicas still lets each replica admit one call).
    fn capacity(self, replicas: u32) -> u64 {
        (u64::from(self.burst) * UNITS_PER_CALL).max(Self::cost(replicas))
    }
}

/// One token bucket: its units at `at_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bucket {
    units: u64,
    at_ms: u64,
}

impl Bucket {
    /// A bucket full at `now_ms` (nobody has called yet).
    pub fn full(limit: Limit, replicas: u32, now_ms: u64) -> Self {
        Self {
            units: limit.capacity(replicas),
            at_ms: now_ms,
        }
    }

    /// The units at `now_ms` (a clock that went back refills nothing).
    fn refilled(&self, limit: Limit, replicas: u32, now_ms: u64) -> u64 {
        let elapsed = now_ms.saturating_sub(self.at_ms);
        let added = elapsed.saturating_mul(u64::from(limit.calls_per_minute));
        self.units
            .saturating_add(added)
            .min(limit.capacity(replicas))
    }

    /// Takes one call at `now_ms`: true if the bucket had it.
    pub fn take(&mut self, limit: Limit, replicas: u32, now_ms: u64) -> bool {
        let units = self.refilled(limit, replicas, now_ms);
        self.at_ms = self.at_ms.max(now_ms);
        let cost = Limit::cost(replicas);
        if units >= cost {
            self.units = units - cost;
            true
        } else {
            self.units = units;
            false
        }
    }

    /// Whether the bucket is full at `now_ms`: forgetting it loses nothing.
    pub fn is_full(&self, limit: Limit, replicas: u32, now_ms: u64) -> bool {
        self.refilled(limit, replicas, now_ms) >= limit.capacity(replicas)
    }

    /// The calls the bucket holds at `now_ms`, for people (whole calls).
    pub fn calls(&self, limit: Limit, replicas: u32, now_ms: u64) -> u64 {
        self.refilled(limit, replicas, now_ms) / Limit::cost(replicas)
    }
}

/// Whose bucket: a rule of a team, and the user for a per-user rule.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BucketKey {
    pub rule: u64,
    /// Empty for a per-team rule.
    pub user: Box<str>,
}

/// The answer of [`RateBook::take`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Taken {
    /// Within the rate.
    Within,
    /// Past the rate.
    Limited,
    /// No room for another bucket, none could be forgotten: counted as past the
    /// rate (fail closed).
    Full,
}

/// One team's buckets, at most `cap` of them. A bucket is forgotten once it is full
/// again (idle long enough to hold its whole burst), which loses nothing.
#[derive(Debug)]
pub struct RateBook {
    buckets: HashMap<BucketKey, (Bucket, Limit)>,
    cap: usize,
    /// When a sweep last found nothing to forget: another waits a second.
    swept_at_ms: Option<u64>,
}

/// How long after a sweep that forgot nothing the next may run.
const SWEEP_PAUSE_MS: u64 = 1000;

impl RateBook {
    pub fn new(cap: usize) -> Self {
        Self {
            buckets: HashMap::new(),
            cap: cap.max(1),
            swept_at_ms: None,
        }
    }

    pub fn len(&self) -> usize {
        self.buckets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buckets.is_empty()
    }

    /// Takes one call from `key`'s bucket at `now_ms`.
    pub fn take(&mut self, key: &BucketKey, limit: Limit, replicas: u32, now_ms: u64) -> Taken {
        if let Some((bucket, _)) = self.buckets.get_mut(key) {
            return if bucket.take(limit, replicas, now_ms) {
                Taken::Within
            } else {
                Taken::Limited
            };
        }
        if self.buckets.len() >= self.cap && !self.sweep(replicas, now_ms) {
            return Taken::Full;
        }
        let mut bucket = Bucket::full(limit, replicas, now_ms);
        let within = bucket.take(limit, replicas, now_ms);
        self.buckets.insert(key.clone(), (bucket, limit));
        if within {
            Taken::Within
        } else {
            Taken::Limited
        }
    }

    /// The calls `key`'s bucket holds at `now_ms` (a forgotten one is full).
    pub fn calls(&self, key: &BucketKey, limit: Limit, replicas: u32, now_ms: u64) -> u64 {
        self.buckets.get(key).map_or_else(
            || Bucket::full(limit, replicas, now_ms).calls(limit, replicas, now_ms),
            |(b, _)| b.calls(limit, replicas, now_ms),
        )
    }

    /// Forgets every full bucket; true if there is room after it. A sweep that finds
    /// no room is not repeated for a second, so a flood of new keys at the cap costs
    /// one pass a second, not one per call.
    fn sweep(&mut self, replicas: u32, now_ms: u64) -> bool {
        if let Some(at) = self.swept_at_ms
            && now_ms < at.saturating_add(SWEEP_PAUSE_MS)
        {
            return false;
        }
        self.buckets
            .retain(|_, (b, limit)| !b.is_full(*limit, replicas, now_ms));
        let room = self.buckets.len() < self.cap;
        self.swept_at_ms = (!room).then_some(now_ms);
        room
    }
}

#[cfg(test)]
mod tests;
