//! Rates on the decision path: each team's token buckets (the core's `RateBook`),
//! taken from by every call that is not already a DENY. A call past a rate turns
//! ASK (or DENY, as the team says) with `RATE_LIMITED`. Teams without a rule never
//! reach this module's lock: the check is whether their compiled controls have
//! rates at all.
//!
//! Replicas each keep their own buckets and take `1/N` of every limit, `N` the
//! live replicas the hub hears (`Hub::live_replicas`): docs/rates.md states the
//! bound on the error.

use crate::policy::rates::{BucketKey, CompiledRates, RateBook, RateExceeded, RateScope, Taken};
use crate::policy::{Call, Check, Decision, Outcome, Reason};
use dashmap::DashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The most buckets one team keeps on a replica. A member makes at most one per
/// rule (their user id is their token's); a service principal or an admin deciding
/// for many users could make more: past this, a full sweep forgets the idle ones,
/// and a call that still finds no room is counted past its rate (fail closed).
pub const MAX_BUCKETS_PER_TEAM: usize = 100_000;

/// Every team's buckets on this replica.
#[derive(Debug)]
pub(super) struct Rates {
    teams: DashMap<String, Arc<Mutex<RateBook>>>,
    epoch: Instant,
    cap: usize,
}

impl Default for Rates {
    fn default() -> Self {
        Self::with_cap(MAX_BUCKETS_PER_TEAM)
    }
}

impl Rates {
    pub(super) fn with_cap(cap: usize) -> Self {
        Self {
            teams: DashMap::new(),
            epoch: Instant::now(),
            cap,
        }
    }

    /// The team's book, made on first use.
    fn book(&self, team: &str) -> Arc<Mutex<RateBook>> {
        if let Some(book) = self.teams.get(team) {
            return book.clone();
        }
        self.teams
            .entry(team.to_owned())
            .or_insert_with(|| Arc::new(Mutex::new(RateBook::new(self.cap))))
            .clone()
    }

    /// The buckets `team` holds, for tests.
    #[cfg(test)]
    pub(super) fn buckets(&self, team: &str) -> usize {
        self.teams.get(team).map_or(0, |b| {
            b.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .len()
        })
    }

    /// Takes each call that is not a DENY from every bucket of `rates` that counts
    /// it, in the rules' order; the first rule it is past turns its decision
    /// `RATE_LIMITED`. With `explain`, each call's decision says how it stood.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn apply(
        &self,
        team: &str,
        user: &str,
        rates: &CompiledRates,
        replicas: u32,
        calls: &[Call],
        decisions: &mut [Decision],
        explain: bool,
    ) {
        let now_ms = u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX);
        let book = self.book(team);
        let mut book = book
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let before = book.len();
        for (call, d) in calls.iter().zip(decisions.iter_mut()) {
            if d.outcome == Outcome::Deny {
                continue;
            }
            for rule in rates.matching(call) {
                let key = BucketKey {
                    rule: rule.key,
                    user: match rule.per {
                        RateScope::User => user.into(),
                        RateScope::Team => "".into(),
                    },
                };
                let taken = book.take(&key, rule.limit, replicas, now_ms);
                let what = describe(rule, replicas);
                if taken == Taken::Within {
                    if explain {
                        let left = book.calls(&key, rule.limit, replicas, now_ms);
                        d.explanation.push(Check {
                            name: "rate",
                            result: format!("within {what}: {left} more at once"),
                        });
                    }
                    continue;
                }
                let why = match taken {
                    Taken::Full => format!(
                        "is past the team's rate: this replica holds the most rate buckets a team may have ({MAX_BUCKETS_PER_TEAM}) and none is idle, so a newcomer is limited"
                    ),
                    _ => format!("is past the team's {what}"),
                };
                limit(d, rates.exceeded, why, explain);
                crate::metrics::rate_limited(team, d.outcome);
                break;
            }
        }
        let after = book.len();
        if after != before {
            crate::metrics::rate_buckets(after as f64 - before as f64);
        }
    }
}

/// A rule for people: `rule 2 (github:*, 60 calls a minute per user, burst 10,
/// this replica's share of 2 live replicas)`.
fn describe(rule: &crate::policy::rates::CompiledRule, replicas: u32) -> String {
    let tools = rule.tools().map_or(String::new(), |t| format!("{t}, "));
    let per = match rule.per {
        RateScope::User => "per user",
        RateScope::Team => "for the team",
    };
    let share = if replicas > 1 {
        format!(", this replica's share of {replicas} live replicas")
    } else {
        ", 1 live replica".to_owned()
    };
    format!(
        "rate {} ({tools}{} calls a minute {per}, burst {}{share})",
        rule.index, rule.limit.calls_per_minute, rule.limit.burst
    )
}

/// Turns `d` into the team's answer for a call past its rate.
fn limit(d: &mut Decision, exceeded: RateExceeded, why: String, explain: bool) {
    d.outcome = match exceeded {
        RateExceeded::Ask => Outcome::Ask,
        RateExceeded::Deny => Outcome::Deny,
    };
    d.reason = Reason::RateLimited;
    d.matched_entry = None;
    // what the policy would have let run is no advice for a call past its rate
    d.candidates.clear();
    d.allowed_tools = None;
    d.unchecked = Default::default();
    d.origin = Some(Arc::from("team"));
    let advice = match exceeded {
        RateExceeded::Ask => {
            "a person may still let it run; calls run unasked again once the rate refills"
        }
        RateExceeded::Deny => "retry once the rate refills, or ask an admin to raise it",
    };
    d.detail = Some(Arc::from(format!("{why}; {advice}")));
    if explain {
        d.explanation.push(Check {
            name: "rate",
            result: why,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::rates::{RateControls, RateRule};
    use crate::policy::{AdminControls, CompiledAdmin, CompiledUser, UserSettings, decide};

    fn allowing(rules: Vec<RateRule>, exceeded: RateExceeded) -> CompiledAdmin {
        CompiledAdmin::compile(&AdminControls {
            enabled: true,
            enable_run_everything: true,
            mcp_tool_blocklist: vec!["github:blocked".into()],
            rates: Some(Box::new(RateControls { rules, exceeded })),
            ..AdminControls::default()
        })
        .unwrap()
    }

    fn run(rates: &Rates, admin: &CompiledAdmin, user: &str, calls: &[Call]) -> Vec<Decision> {
        let settings = CompiledUser::compile(&UserSettings {
            use_yolo_mode: true,
            yolo_enable_run_everything: true,
            ..UserSettings::default()
        })
        .unwrap();
        let mut decisions: Vec<Decision> =
            calls.iter().map(|c| decide(admin, &settings, c)).collect();
        rates.apply(
            "acme",
            user,
            admin.rates().unwrap(),
            1,
            calls,
            &mut decisions,
            true,
        );
        decisions
    }

    fn per_user(tools: &str, burst: i64) -> RateRule {
        RateRule {
            tools: tools.into(),
            calls_per_minute: 1,
            burst,
            ..RateRule::default()
        }
    }

    fn mcp(tool: &str) -> Call {
        Call::Mcp {
            server: "github".into(),
            tool: tool.into(),
        }
    }

    #[test]
    fn a_member_makes_one_bucket_a_rule_whatever_they_call() {
        let rates = Rates::with_cap(8);
        let admin = allowing(
            vec![per_user("github:*", 1000), per_user("", 1000)],
            RateExceeded::Ask,
        );
        let calls: Vec<Call> = (0..500)
            .map(|i| mcp(&format!("tool_{i}")))
            .chain((0..100).map(|i| Call::Shell(format!("echo {i}"))))
            .collect();
        let decided = run(&rates, &admin, "alice", &calls);
        assert!(decided.iter().all(|d| d.outcome == Outcome::Allow));
        assert_eq!(rates.buckets("acme"), 2, "one per rule, not per tool");
    }

    #[test]
    fn past_the_rate_asks_or_denies_as_the_team_says_and_denies_are_not_counted() {
        for (exceeded, outcome) in [
            (RateExceeded::Ask, Outcome::Ask),
            (RateExceeded::Deny, Outcome::Deny),
        ] {
            let rates = Rates::default();
            let admin = allowing(vec![per_user("github:*", 2)], exceeded);
            let calls = [mcp("blocked"), mcp("a"), mcp("blocked"), mcp("b"), mcp("c")];
            let d = run(&rates, &admin, "alice", &calls);
            let got: Vec<_> = d.iter().map(|d| (d.outcome, d.reason)).collect();
            let (allow, deny) = (
                (Outcome::Allow, Reason::RunEverything),
                (Outcome::Deny, Reason::BlockedByAdmin),
            );
            assert_eq!(got[..4], [deny, allow, deny, allow][..]);
            assert_eq!(got[4], (outcome, Reason::RateLimited));
            let message = d[4].message(&mcp("c"));
            assert!(
                message.contains("rate 0 (github:*, 1 calls a minute per user, burst 2"),
                "{message}"
            );
            // another user has their own bucket; another server is not counted
            let bob = run(&rates, &admin, "bob", &[mcp("a")]);
            assert_eq!(bob[0].outcome, Outcome::Allow);
            let other = Call::Mcp {
                server: "jira".into(),
                tool: "x".into(),
            };
            assert_eq!(
                run(&rates, &admin, "alice", &[other])[0].outcome,
                Outcome::Allow
            );
        }
    }

    #[test]
    fn a_flood_of_users_fills_the_book_to_its_cap_and_no_further() {
        let rates = Rates::with_cap(50);
        let admin = allowing(vec![per_user("", 5)], RateExceeded::Ask);
        let mut limited = 0;
        for i in 0..200 {
            let d = run(&rates, &admin, &format!("user-{i}"), &[mcp("a")]);
            if d[0].reason == Reason::RateLimited {
                limited += 1;
                assert!(
                    d[0].message(&mcp("a")).contains("most rate buckets"),
                    "{:?}",
                    d[0].detail
                );
            }
        }
        assert_eq!(rates.buckets("acme"), 50);
        assert_eq!(
            limited, 150,
            "fail closed: past the cap, newcomers are limited"
        );
    }
}
