//! Shell decisions: a 200-character line of nine allowed commands against 10 and
//! 1,000 prefixes, the reader alone, and a 1 MB line.

use criterion::{BenchmarkId, Criterion, SamplingMode};
use std::hint::black_box;
use std::time::Duration;
use toolgate::policy::{
    AdminControls, Call, CompiledAdmin, CompiledUser, Outcome, Reason, UserSettings, decide,
    parse_command_line,
};

/// A 200-character line of nine commands, every one allowed by the lists below.
pub(crate) const LINE_200: &str = "cd src/policy && git -C . status -s --porcelain | grep -v '^??' && npm test -- --runInBand --silent; ls -la src | wc -l && echo \"done with the checks\" && cargo build --release 2>&1 | tail -n 20 # okay";
pub(crate) const SHELL_SIZES: [usize; 2] = [10, 1_000];
/// The shell benchmarks, as `implementation/prefixes/case`.
pub(crate) const SHELL_IDS: [&str; 6] = [
    "shell_decide/10/line_200",
    "shell_decide/1000/line_200",
    "shell_read/0/line_200",
    "shell_decide/1000/line_1mb",
    "shell_decide/1000/line_1mb_blocked",
    "shell_read/0/line_1mb",
];

/// `n` allowed and `n` blocked prefixes: those the line needs (or that must not
/// match it), then filler of two words each.
pub(crate) fn shell_admin(n: usize) -> CompiledAdmin {
    let fill = |head: &[&str], word: &str| -> Vec<String> {
        head.iter()
            .map(|s| (*s).to_owned())
            .chain((head.len()..n).map(|i| format!("{word}{i} sub{i}")))
            .collect()
    };
    let allowed = fill(
        &[
            "cd", "git", "grep", "npm test", "ls", "wc", "echo", "cargo", "tail",
        ],
        "tool",
    );
    let blocked = fill(&["rm", "git push", "curl"], "blk");
    CompiledAdmin::compile(&AdminControls {
        enabled: true,
        allowed,
        blocked,
        ..AdminControls::default()
    })
    .unwrap()
}

pub(crate) fn bench_shell(c: &mut Criterion) {
    let user = CompiledUser::compile(&UserSettings {
        use_yolo_mode: true,
        ..UserSettings::default()
    })
    .unwrap();
    assert_eq!(LINE_200.len(), 200);
    let line_1mb = "git status -s && ".repeat(1_000_000 / 17) + "ls";
    let blocked_1mb = line_1mb.clone() + " && blk999 -v sub999";
    let mut g = c.benchmark_group("decision");
    g.warm_up_time(Duration::from_secs(1))
        .sample_size(50)
        .measurement_time(Duration::from_secs(2));
    for n in SHELL_SIZES {
        let admin = shell_admin(n);
        let call = Call::Shell(LINE_200.to_owned());
        let d = decide(&admin, &user, &call);
        assert_eq!(
            (d.outcome, d.reason),
            (Outcome::Allow, Reason::CommandAllowed),
            "{d:?}"
        );
        g.bench_function(
            BenchmarkId::new(format!("shell_decide/{n}"), "line_200"),
            |b| b.iter(|| decide(black_box(&admin), &user, black_box(&call))),
        );
    }
    g.bench_function(BenchmarkId::new("shell_read/0", "line_200"), |b| {
        b.iter(|| parse_command_line(black_box(LINE_200)))
    });
    g.sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .measurement_time(Duration::from_secs(5));
    let admin = shell_admin(1_000);
    let call = Call::Shell(line_1mb.clone());
    let blocked = Call::Shell(blocked_1mb);
    let d = decide(&admin, &user, &call);
    assert_eq!(
        (d.outcome, d.reason),
        (Outcome::Allow, Reason::CommandAllowed)
    );
    let d = decide(&admin, &user, &blocked);
    assert_eq!(
        (d.outcome, d.reason),
        (Outcome::Ask, Reason::CommandBlocked)
    );
    g.bench_function(BenchmarkId::new("shell_decide/1000", "line_1mb"), |b| {
        b.iter(|| decide(black_box(&admin), &user, black_box(&call)))
    });
    g.bench_function(
        BenchmarkId::new("shell_decide/1000", "line_1mb_blocked"),
        |b| b.iter(|| decide(black_box(&admin), &user, black_box(&blocked))),
    );
    g.bench_function(BenchmarkId::new("shell_read/0", "line_1mb"), |b| {
        b.iter(|| parse_command_line(black_box(&line_1mb)))
    });
    g.finish();
}
