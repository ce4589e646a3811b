//! Group policies: a caller in none of a team's five groups against one in all five.

use criterion::{BenchmarkId, Criterion};
use std::hint::black_box;
use std::time::Duration;
use toolgate::policy::groups::Origins;
use toolgate::policy::{
    AdminControls, Call, CompiledAdmin, CompiledUser, Outcome, UserSettings, decide,
};

pub(crate) const GROUP_IDS: [&str; 4] = [
    "groups_decide/0/mcp",
    "groups_decide/5/mcp",
    "groups_decide/0/shell",
    "groups_decide/5/shell",
];

/// A team of 1,000 allowed prefixes and MCP entries with five group policies, as
/// the hub holds it.
pub(crate) fn grouped_team() -> toolgate::hub::CompiledTeam {
    let group = |i: usize| toolgate::policy::groups::GroupControls {
        denied: vec![format!("deploy{i}")],
        blocked: vec![format!("curl{i}")],
        mcp_tool_blocklist: vec![format!("evil{i}:*")],
        allowed: Some(vec![format!("tool{i}")]),
        mcp_tool_allowlist: Some(vec![format!("extra{i}:*")]),
        ..Default::default()
    };
    let controls = AdminControls {
        enabled: true,
        allowed: (0..1_000)
            .map(|i| format!("cmd{i}"))
            .chain(["git status".to_owned(), "ls".to_owned()])
            .collect(),
        mcp_tool_allowlist: (0..1_000).map(|i| format!("server{i}:tool")).collect(),
        groups: Box::new((0..5).map(|i| (format!("g{i}"), group(i))).collect()),
        ..AdminControls::default()
    };
    toolgate::hub::CompiledTeam {
        admin: CompiledAdmin::compile(&controls).unwrap(),
        default_user: None,
        groups: toolgate::hub::GroupCache::default(),
    }
}

pub(crate) fn bench_groups(c: &mut Criterion) {
    let mut g = c.benchmark_group("decision");
    g.warm_up_time(Duration::from_secs(1))
        .sample_size(50)
        .measurement_time(Duration::from_secs(2));
    let team = grouped_team();
    let user = CompiledUser::compile(&UserSettings {
        use_yolo_mode: true,
        ..UserSettings::default()
    })
    .unwrap();
    let calls = [
        (
            "mcp",
            Call::Mcp {
                server: "server999".into(),
                tool: "tool".into(),
            },
        ),
        ("shell", Call::Shell("git status --short && ls -la".into())),
    ];
    // as a credential carries them: read once, hashed once
    let none = toolgate::policy::group_set::GroupSet::default();
    let five =
        toolgate::policy::group_set::GroupSet::new((0..5).map(|i| format!("g{i}")).collect());
    // the team's own group policies: no organisation-wide ones
    let org = toolgate::hub::OrgGroups::default();
    for (case, call) in &calls {
        for groups in [&none, &five] {
            // the service's path (`Service::decide_calls`): the combination for the
            // caller's groups, the decision, its origin named (with no origins of
            // groups for a caller in none, as the service names every decision)
            let no_origins = Origins::default();
            let decide_as = || {
                let grouped = team.for_groups(&org, groups).unwrap();
                let admin = grouped.as_deref().map_or(&team.admin, |g| &g.compiled);
                let origins = grouped.as_deref().map_or(&no_origins, |g| &g.origins);
                let mut d = decide(admin, &user, call);
                origins.name(admin, &user, call, groups, &mut d);
                d
            };
            let d = decide_as();
            assert_eq!(d.outcome, Outcome::Allow, "{case} in {groups:?}: {d:?}");
            g.bench_function(
                BenchmarkId::new(format!("groups_decide/{}", groups.len()), case),
                |b| b.iter(|| black_box(decide_as())),
            );
        }
    }
    g.finish();
}
