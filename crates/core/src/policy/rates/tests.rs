//! Rates against `tests/data/rates.json` (buckets with a clock of the table's, the
//! validation's hostile cases, which calls a rule counts), a proptest of the bucket
//! against a reference model written the other way round (GCRA: a theoretical
//! arrival time instead of tokens), and the bound on a team's buckets.

use super::*;
use crate::policy::Call;
use proptest::prelude::*;
use serde_json::Value;

fn table() -> Value {
    serde_json::from_str(include_str!("../../../../../tests/data/rates.json")).unwrap()
}

#[test]
fn buckets_follow_the_table() {
    for case in table()["buckets"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let limit = Limit::new(
            case["calls_per_minute"].as_i64().unwrap(),
            case["burst"].as_i64().unwrap(),
        )
        .unwrap();
        let replicas = case["replicas"].as_u64().unwrap() as u32;
        let calls = case["calls"].as_array().unwrap();
        let mut bucket = Bucket::full(limit, replicas, calls[0][0].as_u64().unwrap());
        for (i, call) in calls.iter().enumerate() {
            let at = call[0].as_u64().unwrap();
            let want = call[1].as_str().unwrap() == "+";
            assert_eq!(
                bucket.take(limit, replicas, at),
                want,
                "{name}: call {i} at {at} ms"
            );
        }
    }
}

#[test]
fn problems_follow_the_table() {
    for case in table()["problems"].as_array().unwrap() {
        let mut rates: RateControls =
            serde_json::from_value(case["rates"].clone()).unwrap_or_else(|e| panic!("{case}: {e}"));
        if let Some(n) = case["repeat"].as_u64() {
            rates.rules = vec![rates.rules[0].clone(); n as usize];
        }
        let found: Vec<(String, Value)> = rates
            .problems()
            .into_iter()
            .map(|p| {
                assert!(!p.hint.is_empty());
                (p.field, serde_json::to_value(p.rule).unwrap())
            })
            .collect();
        let want: Vec<(String, Value)> = case["problems"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p[0].as_str().unwrap().to_owned(), p[1].clone()))
            .collect();
        assert_eq!(found, want, "{case}");
        // a rule with a problem is never compiled into a limit
        let compiled = CompiledRates::compile(&rates);
        if want.is_empty() {
            assert_eq!(compiled.unwrap().rules.len(), rates.rules.len());
        } else if rates.rules.len() == 1 {
            assert_eq!(compiled, None, "{case}");
        }
    }
}

fn call_of(v: &Value) -> Call {
    let s = |i: usize, k: &str| v[k][i].as_str().unwrap().to_owned();
    if v.get("mcp").is_some() {
        Call::Mcp {
            server: s(0, "mcp"),
            tool: s(1, "mcp"),
        }
    } else if v.get("internal").is_some() {
        Call::McpInternal {
            name: s(0, "internal"),
            fallback_server: s(1, "internal"),
        }
    } else if v.get("action").is_some() {
        Call::McpAction {
            server: s(0, "action"),
            tool: s(1, "action"),
            action: s(2, "action"),
        }
    } else if let Some(line) = v["shell"].as_str() {
        Call::Shell(line.to_owned())
    } else {
        Call::DeleteFile(v["delete"].as_str().unwrap().to_owned())
    }
}

#[test]
fn rules_count_the_calls_the_table_says() {
    for case in table()["matching"].as_array().unwrap() {
        let rates = RateControls {
            rules: vec![RateRule {
                tools: case["tools"].as_str().unwrap().to_owned(),
                calls_per_minute: 1,
                burst: 1,
                ..RateRule::default()
            }],
            ..RateControls::default()
        };
        let compiled = CompiledRates::compile(&rates).unwrap_or_else(|| panic!("{case}"));
        let call = call_of(&case["call"]);
        assert_eq!(
            compiled.matching(&call).count() == 1,
            case["matches"].as_bool().unwrap(),
            "{case}"
        );
    }
}

#[test]
fn a_changed_rule_gets_fresh_buckets_and_an_unchanged_one_keeps_its_own() {
    let rule = |cpm| RateRule {
        calls_per_minute: cpm,
        burst: 1,
        ..RateRule::default()
    };
    let key = |rules: Vec<RateRule>| {
        CompiledRates::compile(&RateControls {
            rules,
            ..RateControls::default()
        })
        .unwrap()
        .rules[0]
            .key
    };
    assert_eq!(key(vec![rule(5)]), key(vec![rule(5)]));
    assert_ne!(key(vec![rule(5)]), key(vec![rule(6)]));
}

/// The reference: GCRA over times scaled by the rate, in exact integers. A call at
/// `t` conforms when the theoretical arrival time is at most `capacity - cost`
/// ahead of it.
struct Gcra {
    tat: u128,
    cost: u128,
    capacity: u128,
    rate: u128,
}

impl Gcra {
    fn new(calls_per_minute: u32, burst: u32, replicas: u32, t0: u64) -> Self {
        let cost = 60_000 * u128::from(replicas);
        Self {
            tat: u128::from(t0) * u128::from(calls_per_minute),
            cost,
            capacity: (u128::from(burst) * 60_000).max(cost),
            rate: u128::from(calls_per_minute),
        }
    }

    fn call(&mut self, t: u64) -> bool {
        let now = u128::from(t) * self.rate;
        let tat = self.tat.max(now);
        if tat + self.cost - now <= self.capacity {
            self.tat = tat + self.cost;
            true
        } else {
            false
        }
    }
}

proptest! {
    #[test]
    fn a_bucket_agrees_with_the_reference(
        calls_per_minute in prop_oneof![1u32..=120, 1u32..=1_000_000],
        burst in prop_oneof![1u32..=10, 1u32..=100_000],
        replicas in 1u32..=8,
        gaps in proptest::collection::vec(prop_oneof![Just(0u64), 0u64..=100, 0u64..=120_000], 1..200),
    ) {
        let limit = Limit::new(i64::from(calls_per_minute), i64::from(burst)).unwrap();
        let mut bucket = Bucket::full(limit, replicas, 0);
        let mut reference = Gcra::new(calls_per_minute, burst, replicas, 0);
        let mut t = 0;
        for gap in gaps {
            t += gap;
            prop_assert_eq!(bucket.take(limit, replicas, t), reference.call(t), "at {} ms", t);
        }
    }

    /// However a flood of users comes, a team's book never holds more than its cap,
    /// and a user already in it is always counted.
    #[test]
    fn a_book_never_grows_past_its_cap(
        users in proptest::collection::vec(0u32..1000, 1..400),
        cap in 1usize..50,
    ) {
        let limit = Limit::new(60, 2).unwrap();
        let mut book = RateBook::new(cap);
        for (t, user) in users.into_iter().enumerate() {
            let key = BucketKey { rule: 1, user: user.to_string().into() };
            let taken = book.take(&key, limit, 1, t as u64 * 10);
            prop_assert!(book.len() <= cap);
            prop_assert!(taken != Taken::Full || book.len() == cap);
        }
    }
}

#[test]
fn a_full_book_fails_closed_until_its_buckets_refill() {
    let limit = Limit::new(60, 1).unwrap();
    let key = |u: &str| BucketKey {
        rule: 7,
        user: u.into(),
    };
    let mut book = RateBook::new(2);
    assert_eq!(book.take(&key("a"), limit, 1, 0), Taken::Within);
    assert_eq!(book.take(&key("b"), limit, 1, 0), Taken::Within);
    // no bucket is full again yet: a newcomer is refused, those counted still are
    assert_eq!(book.take(&key("c"), limit, 1, 10), Taken::Full);
    assert_eq!(book.take(&key("a"), limit, 1, 20), Taken::Limited);
    assert_eq!(book.take(&key("a"), limit, 1, 1000), Taken::Within);
    // b has refilled, but a failed sweep waits a second before the next
    assert_eq!(book.take(&key("d"), limit, 1, 1005), Taken::Full);
    assert_eq!(book.take(&key("d"), limit, 1, 1010), Taken::Within);
    assert_eq!(book.len(), 2, "b (full again) was forgotten, a kept");
    assert_eq!(book.take(&key("a"), limit, 1, 1010), Taken::Limited);
}

#[test]
fn a_forgotten_bucket_is_a_full_one() {
    let limit = Limit::new(60, 3).unwrap();
    let book = RateBook::new(1);
    let key = BucketKey {
        rule: 1,
        user: "x".into(),
    };
    assert_eq!(book.calls(&key, limit, 1, 5), 3);
    assert_eq!(book.calls(&key, limit, 3, 5), 1);
}
