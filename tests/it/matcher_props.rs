//! Properties of the policy core, checked with proptest against simple reference
//! models: the compiled matcher equals seed 001's linear scan, `Yro` then a covered
//! call allows, `normalise` never changes a decision, a compiled glob matches as a
//! naive backtracking matcher does, and every entry form decides a built-in tool the
//! same under each of its spellings.

use proptest::prelude::*;
use toolgate::policy::{
    AddOutcome, AdminControls, BUILTIN_TOOLS, Call, CompiledAdmin, CompiledList, CompiledUser,
    Entry, Glob, Outcome, UserSettings, add_mcp_entry, canonical_builtin, decide, normalise,
    reference_first_match,
};

/// Every form of entry that can match a built-in tool spelled `canonical` or `alias`
/// (and some that cannot), for the alias proptest.
fn alias_forms(canonical: &str, alias: &str) -> Vec<String> {
    vec![
        format!("builtin:{canonical}"),
        format!("builtin:{alias}"),
        format!("*:{canonical}"),
        format!("*:{alias}"),
        format!("built*:{canonical}"),
        format!("b*n:{alias}"),
        format!("builtin:{}*", &alias[..2]),
        format!("builtin:*{}", &canonical[canonical.len() - 2..]),
        format!("*:{}*", &alias[..1]),
        format!("*:{}*", &canonical[..3]),
        "builtin:*".to_owned(),
        "*:*".to_owned(),
        "b*:*".to_owned(),
        "@readonly".to_owned(),
        format!("other:{canonical}"),
        format!("other:{alias}"),
        format!("@acme:{alias}"),
    ]
}

/// The reference for globs: `*` tries every split, everything else matches itself.
fn naive_glob(pattern: &[u8], name: &[u8]) -> bool {
    match pattern.split_first() {
        None => name.is_empty(),
        Some((b'*', rest)) => (0..=name.len()).any(|i| naive_glob(rest, &name[i..])),
        Some((c, rest)) => name.first() == Some(c) && naive_glob(rest, &name[1..]),
    }
}

/// A small alphabet so that entries and calls collide often.
const NAMES: &[&str] = &["a", "b", "ab", "ba", "builtin", "Read", "read_file", "grep"];
const SIDES: &[&str] = &[
    "a",
    "b",
    "ab",
    "ba",
    "builtin",
    "Read",
    "read_file",
    "grep",
    "*",
    "a*",
    "*b",
    "a*b",
    "*a*",
];

fn entry() -> impl Strategy<Value = String> {
    prop_oneof![
        9 => (prop::sample::select(SIDES), prop::sample::select(SIDES)).prop_map(|(s, t)| format!("{s}:{t}")),
        1 => Just("@readonly".to_owned()),
    ]
}

fn name() -> impl Strategy<Value = &'static str> {
    prop::sample::select(NAMES)
}

fn canonical<'a>(server: &str, tool: &'a str) -> &'a str {
    if server == "builtin" {
        canonical_builtin(tool)
    } else {
        tool
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn compiled_matcher_equals_linear_scan(list in prop::collection::vec(entry(), 0..24), server in name(), tool in name()) {
        let entries: Vec<Entry> = list.iter().map(|e| Entry::parse(e).unwrap()).collect();
        let compiled = CompiledList::new(&list, &entries);
        let tool = canonical(server, tool);
        prop_assert_eq!(compiled.first_match(server, tool), reference_first_match(&entries, server, tool));
    }

    #[test]
    fn glob_equals_naive_backtracking(pattern in "[ab*]{0,7}", name in "[ab]{0,8}") {
        prop_assert_eq!(
            Glob::new(&pattern).matches(&name),
            naive_glob(pattern.as_bytes(), name.as_bytes()),
            "{:?} ~ {:?}", pattern, name
        );
    }

    #[test]
    fn added_entry_allows_in_auto_run(list in prop::collection::vec(entry(), 0..12), server in name(), tool in name()) {
        let list = match add_mcp_entry(&list, server, tool).unwrap() {
            AddOutcome::Added(list) => list,
            AddOutcome::AlreadyPresent | AddOutcome::CoveredBy(_) => list,
        };
        let user = UserSettings { use_yolo_mode: true, mcp_allowed_tools: list, ..UserSettings::default() };
        let d = decide(
            &CompiledAdmin::compile(&AdminControls::default()).unwrap(),
            &CompiledUser::compile(&user).unwrap(),
            &Call::Mcp { server: server.to_owned(), tool: tool.to_owned() },
        );
        prop_assert_eq!(d.outcome, Outcome::Allow, "{:?}", d);
    }

    #[test]
    fn normalise_never_changes_a_decision(
        list in prop::collection::vec(entry(), 0..16),
        calls in prop::collection::vec((name(), name()), 1..8),
        admin_controlled in any::<bool>(),
    ) {
        let normal = normalise(&list);
        prop_assert!(normal.len() <= list.len());
        prop_assert_eq!(normalise(&normal), normal.clone(), "normalise is idempotent");
        let admin_for = |l: &[String]| AdminControls {
            enabled: admin_controlled,
            mcp_tool_allowlist: if admin_controlled { l.to_vec() } else { Vec::new() },
            enable_run_everything: admin_controlled,
            ..AdminControls::default()
        };
        let user_for = |l: &[String]| UserSettings { use_yolo_mode: true, mcp_allowed_tools: l.to_vec(), ..UserSettings::default() };
        let (a1, u1) = (CompiledAdmin::compile(&admin_for(&list)).unwrap(), CompiledUser::compile(&user_for(&list)).unwrap());
        let (a2, u2) = (CompiledAdmin::compile(&admin_for(&normal)).unwrap(), CompiledUser::compile(&user_for(&normal)).unwrap());
        for (server, tool) in calls {
            let call = Call::Mcp { server: server.to_owned(), tool: tool.to_owned() };
            let (d1, d2) = (decide(&a1, &u1, &call), decide(&a2, &u2, &call));
            prop_assert_eq!((d1.outcome, d1.reason), (d2.outcome, d2.reason), "{} {:?} vs {:?}", server, list, normal);
        }
    }

    #[test]
    fn every_entry_form_decides_both_spellings_alike(
        pair in prop::sample::select(&BUILTIN_TOOLS[..]),
        picks in prop::collection::vec(0usize..17, 0..6),
    ) {
        let (canonical, alias) = pair;
        let forms = alias_forms(canonical, alias);
        let list: Vec<String> = picks.iter().map(|&i| forms[i].clone()).collect();
        let entries: Vec<Entry> = list.iter().map(|e| Entry::parse(e).unwrap()).collect();
        let compiled = CompiledList::new(&list, &entries);
        let want = reference_first_match(&entries, "builtin", canonical);
        prop_assert_eq!(reference_first_match(&entries, "builtin", alias), want);
        prop_assert_eq!(compiled.first_match("builtin", canonical), want);
        prop_assert_eq!(compiled.first_match("builtin", alias), want);
        let blocked = CompiledAdmin::compile(&AdminControls { mcp_tool_blocklist: list.clone(), ..AdminControls::default() }).unwrap();
        let allowing = CompiledUser::compile(&UserSettings { use_yolo_mode: true, mcp_allowed_tools: list.clone(), ..UserSettings::default() }).unwrap();
        let call = |tool: &str| Call::Mcp { server: "builtin".into(), tool: tool.into() };
        for (admin, user) in [(&blocked, &CompiledUser::compile(&UserSettings::default()).unwrap()), (&CompiledAdmin::compile(&AdminControls::default()).unwrap(), &allowing)] {
            let (a, b) = (decide(admin, user, &call(canonical)), decide(admin, user, &call(alias)));
            prop_assert_eq!((a.outcome, a.reason, &a.matched_entry), (b.outcome, b.reason, &b.matched_entry), "{:?}", list);
        }
    }
}
