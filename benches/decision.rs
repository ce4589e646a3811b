//! The cost of one MCP policy decision against allowlists of 10, 1,000 and 100,000
//! entries, side by side: toolgate's full decision (`policy::decide`), its compiled
//! matcher alone (`CompiledList::first_match`), the seed's linear scan
//! (`reference_first_match`), and two general-purpose engines holding the same list,
//! cedar-policy (one `permit` per entry) and casbin (one `p` line per entry).
//!
//! Then shell decisions (`policy::decide` on `Call::Shell`): a 200-character line of
//! nine allowed commands against 10 and 1,000 allowed and blocked prefixes, the
//! reader alone on that line, and a 1 MB line against 1,000 prefixes.
//!
//! Then seed 004's restrictions (`policy::roles::evaluate`): a path checked against
//! 10 and 1,000 allowed directories and forbidden-file globs, and a URL against 10
//! and 1,000 allowed hosts and endpoints (roles only: `-- roles`).
//!
//! Then group policies (`-- groups`): a caller in none of a team's five groups
//! against one in all five, each decision taking the team's controls for the
//! caller's groups as the service does (the hub's cache of combinations), then
//! naming its origin; an MCP call and a shell line.
//!
//! `cargo bench -p toolgate-benches --bench decision` (smoke run: `cargo bench -p toolgate-benches --bench decision -- --test`;
//! shell decisions only: `cargo bench -p toolgate-benches --bench decision -- shell`)
//!
//! Every engine's answer is checked against the linear scan before anything is timed.
//! After criterion's summary the bench prints one JSON line of medians in ns:
//! `{"bench":"decision","median_ns":{"toolgate_decide/10/hit_exact":..., ...}}`
//! (`null` where this run wrote no estimate, e.g. under `--test` or a filter).

#[path = "common/lists.rs"]
mod lists;

#[path = "decision/groups.rs"]
mod groups;
#[path = "decision/role_checks.rs"]
mod role_checks;
#[path = "decision/shell.rs"]
mod shell;

use casbin::prelude::{CoreApi, DefaultModel, Enforcer, MemoryAdapter, MgmtApi};
use cedar_policy::{
    Authorizer, Context, Decision as CedarDecision, Entities, Entity, EntityUid, PolicySet,
    Request, RestrictedExpression,
};
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, SamplingMode, measurement::WallTime};
use groups::*;
use lists::last_of;
use role_checks::*;
use shell::*;
use std::collections::HashSet;
use std::hint::black_box;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::{Duration, SystemTime};
use toolgate::policy::{Call, Entry, Outcome, Reason, Side, decide, reference_first_match};

const SIZES: [usize; 3] = [10, 1_000, 100_000];
const IMPLS: [&str; 5] = [
    "toolgate_decide",
    "compiled_match",
    "linear_scan",
    "cedar",
    "casbin",
];
const CASES: [&str; 3] = ["hit_exact", "hit_glob", "miss"];

/// The timed calls: an exact entry near the end (the linear scan's worst hit), the
/// last glob, and a call no entry matches (a full scan). Each with the index the
/// linear scan must answer.
fn timed_cases(n: usize) -> Vec<(&'static str, String, String, Option<usize>)> {
    let e = last_of(n, true, 0);
    let g = last_of(n, false, 9);
    vec![
        (
            "hit_exact",
            format!("srv{}", e / 10),
            format!("tool{e}"),
            Some(e),
        ),
        ("hit_glob", format!("srvG{g}"), "get_thing".into(), Some(g)),
        ("miss", "nosuch".into(), "nothing".into(), None),
    ]
}

/// Untimed calls that exercise the other entry forms, so the engines are shown to
/// agree beyond the three timed cases.
fn extra_checks(n: usize) -> Vec<(String, String)> {
    let x = last_of(n, false, 7);
    let y = last_of(n, false, 8);
    let g = last_of(n, false, 9);
    vec![
        ("srv0".into(), "tool0".into()),
        ("srv0".into(), "tool_missing".into()),
        (format!("srvX{x}"), "anything".into()),
        ("elsewhere".into(), format!("toolY{y}")),
        (format!("srvG{g}"), "get_".into()),
        (format!("srvG{g}"), "list_thing".into()),
        (format!("srvX{x}x"), "anything".into()),
        ("srvG".into(), "get_thing".into()),
    ]
}

/// Cedar: a `Tool::"server:tool"` resource whose parents are `Server::"server"` and
/// `ToolName::"tool"`, with both names in the context for globs. Each entry becomes
/// the cheapest scope that says the same: exact `==`, wildcards `in`, globs `like`.
fn cedar_permit(entry: &Entry) -> String {
    let Entry::Pair { server, tool } = entry else {
        panic!("presets are not in the benchmark's mix")
    };
    let mut scope = String::from("resource");
    let mut when = Vec::new();
    match (server, tool) {
        (Side::Exact(s), Side::Exact(t)) => scope = format!("resource == Tool::\"{s}:{t}\""),
        (Side::Exact(s), _) => scope = format!("resource in Server::\"{s}\""),
        (_, Side::Exact(t)) => scope = format!("resource in ToolName::\"{t}\""),
        _ => {}
    }
    // cedar's `like` has toolgate's glob meaning: `*` is any run, all else literal
    if let Side::Glob(p) = server {
        when.push(format!("context.server like \"{p}\""));
    }
    if let Side::Glob(p) = tool {
        when.push(format!("context.tool like \"{p}\""));
    }
    let when = if when.is_empty() {
        String::new()
    } else {
        format!(" when {{ {} }}", when.join(" && "))
    };
    format!("permit(principal, action == Action::\"call\", {scope}){when};\n")
}

fn uid(type_name: &str, id: &str) -> EntityUid {
    EntityUid::from_type_name_and_id(type_name.parse().unwrap(), id.parse().unwrap())
}

fn cedar_request(server: &str, tool: &str) -> (Request, Entities) {
    let resource = uid("Tool", &format!("{server}:{tool}"));
    let parents = HashSet::from([uid("Server", server), uid("ToolName", tool)]);
    let entities =
        Entities::from_entities([Entity::new_no_attrs(resource.clone(), parents)], None).unwrap();
    let context = Context::from_pairs([
        (
            "server".to_owned(),
            RestrictedExpression::new_string(server.to_owned()),
        ),
        (
            "tool".to_owned(),
            RestrictedExpression::new_string(tool.to_owned()),
        ),
    ])
    .unwrap();
    let request = Request::new(
        uid("Agent", "bench"),
        uid("Action", "call"),
        resource,
        context,
        None,
    )
    .unwrap();
    (request, entities)
}

/// Casbin's `keyMatch(key, pattern)` is equality when the pattern has no `*` and a
/// prefix test on the part before the first `*` otherwise. Matching server and tool
/// separately, that is toolgate's meaning for `*` alone and for trailing globs
/// (`get_*`), the only forms in the mix; a `*` elsewhere (`*_pr`) would not be, so it
/// is refused. (`keyMatch` over one `server:tool` string would let `*:tool` match
/// everything; `globMatch` builds a new glob matcher for every policy on every call.)
const CASBIN_MODEL: &str = "
[request_definition]
r = srv, tool

[policy_definition]
p = srv, tool

[policy_effect]
e = some(where (p.eft == allow))

[matchers]
m = keyMatch(r.srv, p.srv) && keyMatch(r.tool, p.tool)
";

fn casbin_rule(raw: &str) -> Vec<String> {
    let (server, tool) = raw.split_once(':').expect("pairs only");
    for side in [server, tool] {
        assert!(
            side.find('*').is_none_or(|i| i == side.len() - 1),
            "keyMatch means toolgate's glob only with a trailing *: {raw}"
        );
    }
    vec![server.to_owned(), tool.to_owned()]
}

fn casbin_enforcer(raw: &[String]) -> Enforcer {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        let model = DefaultModel::from_str(CASBIN_MODEL).await.unwrap();
        let mut enforcer = Enforcer::new(model, MemoryAdapter::default())
            .await
            .unwrap();
        let rules: Vec<Vec<String>> = raw.iter().map(|r| casbin_rule(r)).collect();
        assert!(enforcer.add_policies(rules).await.unwrap());
        enforcer
    })
}

/// One group per implementation and size, so the slow ones can take fewer samples;
/// they all share the `decision` prefix of the benchmark ids.
fn group<'a>(c: &'a mut Criterion, implementation: &str, n: usize) -> BenchmarkGroup<'a, WallTime> {
    let mut g = c.benchmark_group("decision");
    g.warm_up_time(Duration::from_secs(1));
    let slow = match implementation {
        "cedar" | "casbin" => n >= 1_000,
        "linear_scan" => n >= 100_000,
        _ => false,
    };
    if slow {
        // milliseconds per call: few samples of the same iteration count
        g.sampling_mode(SamplingMode::Flat)
            .sample_size(10)
            .measurement_time(Duration::from_secs(if n >= 100_000 { 4 } else { 2 }));
    } else {
        g.sample_size(50).measurement_time(Duration::from_secs(2));
    }
    g
}

fn bench_size(c: &mut Criterion, n: usize) {
    let lists::Compiled {
        raw,
        entries,
        list: compiled,
        admin,
        user,
    } = lists::compiled(n);
    // one string, parsed once
    let policies = PolicySet::from_str(&entries.iter().map(cedar_permit).collect::<String>())
        .expect("the cedar encoding parses");
    let authorizer = Authorizer::new();
    let enforcer = casbin_enforcer(&raw);

    let cases = timed_cases(n);
    let checks = cases
        .iter()
        .map(|(_, s, t, _)| (s.clone(), t.clone()))
        .chain(extra_checks(n));
    for (server, tool) in checks {
        let (s, t) = (server.as_str(), tool.as_str());
        let want = reference_first_match(&entries, s, t);
        assert_eq!(compiled.first_match(s, t), want, "compiled {s}:{t}");
        let d = decide(
            &admin,
            &user,
            &Call::Mcp {
                server: server.clone(),
                tool: tool.clone(),
            },
        );
        let (outcome, reason) = match want {
            Some(_) => (Outcome::Allow, Reason::Allowlisted),
            None => (Outcome::Ask, Reason::NotInAdminAllowlist),
        };
        assert_eq!((d.outcome, d.reason), (outcome, reason), "decide {s}:{t}");
        assert_eq!(
            d.matched_entry.as_deref(),
            want.map(|i| raw[i].as_str()),
            "decide {s}:{t}"
        );
        let (request, entities) = cedar_request(s, t);
        let response = authorizer.is_authorized(&request, &policies, &entities);
        // an erroring policy is skipped and would read as a deny: there must be none
        assert_eq!(
            response.diagnostics().errors().count(),
            0,
            "cedar errors {s}:{t}"
        );
        let allow = if want.is_some() {
            CedarDecision::Allow
        } else {
            CedarDecision::Deny
        };
        assert_eq!(response.decision(), allow, "cedar {s}:{t}");
        assert_eq!(
            enforcer.enforce((s, t)).unwrap(),
            want.is_some(),
            "casbin {s}:{t}"
        );
    }
    for (case, server, tool, want) in &cases {
        assert_eq!(
            reference_first_match(&entries, server, tool),
            *want,
            "{case} at {n}"
        );
    }

    for implementation in IMPLS {
        let mut g = group(c, implementation, n);
        for (case, server, tool, _) in &cases {
            let id = BenchmarkId::new(format!("{implementation}/{n}"), case);
            let (s, t) = (server.as_str(), tool.as_str());
            match implementation {
                "toolgate_decide" => {
                    let call = Call::Mcp {
                        server: server.clone(),
                        tool: tool.clone(),
                    };
                    g.bench_function(id, |b| {
                        b.iter(|| decide(black_box(&admin), &user, black_box(&call)))
                    });
                }
                "compiled_match" => {
                    g.bench_function(id, |b| {
                        b.iter(|| black_box(&compiled).first_match(black_box(s), black_box(t)))
                    });
                }
                "linear_scan" => {
                    g.bench_function(id, |b| {
                        b.iter(|| reference_first_match(black_box(&entries), black_box(s), t))
                    });
                }
                "cedar" => {
                    // the request is built once, as toolgate's `Call` is
                    let (request, entities) = cedar_request(s, t);
                    g.bench_function(id, |b| {
                        b.iter(|| {
                            authorizer
                                .is_authorized(black_box(&request), &policies, &entities)
                                .decision()
                        })
                    });
                }
                "casbin" => {
                    g.bench_function(id, |b| {
                        b.iter(|| enforcer.enforce(black_box((s, t))).unwrap())
                    });
                }
                _ => unreachable!(),
            }
        }
        g.finish();
    }
}

/// Whether the command line's filters all name `word`'s benchmarks.
fn only(word: &str) -> bool {
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    !filters.is_empty() && filters.iter().all(|f| f.contains(word))
}

/// Whether the command line's filters all name shell benchmarks, so the MCP lists
/// (whose set-up takes minutes at 100,000 entries) need not be built.
fn only_shell() -> bool {
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    !filters.is_empty() && filters.iter().all(|f| f.contains("shell"))
}

/// Where criterion writes its estimates, found as criterion finds it.
fn criterion_home() -> PathBuf {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return home.into();
    }
    if let Some(target) = std::env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(target).join("criterion");
    }
    let from_metadata = std::env::var_os("CARGO").and_then(|cargo| {
        let out = std::process::Command::new(cargo)
            .args(["metadata", "--format-version", "1", "--no-deps"])
            .output()
            .ok()?;
        let meta: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
        Some(PathBuf::from(meta["target_directory"].as_str()?).join("criterion"))
    });
    from_metadata.unwrap_or_else(|| PathBuf::from("target/criterion"))
}

/// The median of a benchmark, if this run wrote it (older files are ignored).
fn median_ns(home: &std::path::Path, id: &str, since: SystemTime) -> Option<f64> {
    // criterion's directory for `decision/<impl>/<n>/<case>` is `decision/<impl>_<n>/<case>`
    let (implementation, rest) = id.split_once('/')?;
    let (n, case) = rest.split_once('/')?;
    let path = home
        .join("decision")
        .join(format!("{implementation}_{n}"))
        .join(case)
        .join("new/estimates.json");
    if std::fs::metadata(&path).ok()?.modified().ok()? < since {
        return None;
    }
    let estimates: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).ok()?).ok()?;
    estimates["median"]["point_estimate"].as_f64()
}

fn main() {
    let started = SystemTime::now();
    let mut c = Criterion::default().configure_from_args();
    if !only("roles") && !only("groups") {
        bench_shell(&mut c);
    }
    if !only("groups") {
        bench_roles(&mut c);
    }
    if !only("roles") && !only_shell() {
        bench_groups(&mut c);
    }
    if !only_shell() && !only("roles") && !only("groups") {
        for n in SIZES {
            bench_size(&mut c, n);
        }
    }
    c.final_summary();

    let home = criterion_home();
    let mut figures = Vec::new();
    for implementation in IMPLS {
        for n in SIZES {
            for case in CASES {
                let id = format!("{implementation}/{n}/{case}");
                let value = median_ns(&home, &id, started)
                    .map_or_else(|| "null".to_owned(), |ns| format!("{ns:.1}"));
                figures.push(format!("\"{id}\":{value}"));
            }
        }
    }
    for id in SHELL_IDS.iter().chain(&ROLE_IDS).chain(&GROUP_IDS) {
        let value = median_ns(&home, id, started)
            .map_or_else(|| "null".to_owned(), |ns| format!("{ns:.1}"));
        figures.push(format!("\"{id}\":{value}"));
    }
    println!(
        "{{\"bench\":\"decision\",\"median_ns\":{{{}}}}}",
        figures.join(",")
    );
}
