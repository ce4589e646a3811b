//! Instructions per decision, for callgrind: `policy::decide` and the compiled matcher
//! (`CompiledList::first_match`) on the decision bench's lists and calls, `K` times
//! each in a function of their own. Instruction counts do not depend on what else the
//! machine runs, so two commits compare on a busy machine where wall-clock medians
//! move by ±30 % (BENCHMARKS.md "Memory per allowlist entry").
//!
//! `cargo bench -p toolgate-benches --bench decide_calls --no-run`, then for each size
//! (10, 1000, 100000) and case (hit_exact, hit_glob, miss):
//! `valgrind --tool=callgrind --toggle-collect='*run_decide*' --toggle-collect='*run_match*'
//! target/release/deps/decide_calls-* 20000 CASE SIZE` and
//! `callgrind_annotate --inclusive=yes callgrind.out.*`: the inclusive count of
//! `run_decide` (`run_match`) divided by 20,000 is the instructions per decision (match).
//! Without arguments it runs every case 10,000 times (a smoke run).

#[path = "common/lists.rs"]
mod lists;

use lists::{Compiled, compiled, last_of};
use std::hint::black_box;
use toolgate::policy::{Call, CompiledAdmin, CompiledList, CompiledUser, decide};

#[inline(never)]
fn run_decide(admin: &CompiledAdmin, user: &CompiledUser, call: &Call, k: usize) {
    for _ in 0..k {
        black_box(decide(black_box(admin), user, black_box(call)));
    }
}

#[inline(never)]
fn run_match(list: &CompiledList, s: &str, t: &str, k: usize) {
    for _ in 0..k {
        black_box(black_box(list).first_match(black_box(s), black_box(t)));
    }
}

fn main() {
    // `cargo bench` passes `--bench`
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let k: usize = args
        .first()
        .map_or(10_000, |a| a.parse().expect("K: a count"));
    let only: Option<&str> = args.get(1).map(String::as_str);
    let size: Option<usize> = args
        .get(2)
        .map(|a| a.parse().expect("SIZE: 10, 1000 or 100000"));
    for n in [10, 1_000, 100_000] {
        if size.is_some_and(|s| s != n) {
            continue;
        }
        let Compiled {
            list, admin, user, ..
        } = compiled(n);
        let e = last_of(n, true, 0);
        let g = last_of(n, false, 9);
        let cases = [
            ("hit_exact", format!("srv{}", e / 10), format!("tool{e}")),
            ("hit_glob", format!("srvG{g}"), "get_thing".to_owned()),
            ("miss", "nosuch".to_owned(), "nothing".to_owned()),
        ];
        for (case, s, t) in &cases {
            if only.is_some_and(|o| o != *case) {
                continue;
            }
            let call = Call::Mcp {
                server: s.clone(),
                tool: t.clone(),
            };
            run_decide(&admin, &user, &call, k);
            run_match(&list, s, t, k);
        }
    }
}
