//! The roles' restrictions: paths against allowed directories and forbidden globs,
//! URLs against allowed hosts and endpoints.

use criterion::{BenchmarkId, Criterion};
use std::hint::black_box;
use std::time::Duration;
use toolgate::policy::roles;

pub(crate) const ROLE_SIZES: [usize; 2] = [10, 1_000];
pub(crate) const ROLE_IDS: [&str; 8] = [
    "roles_path/10/allowed",
    "roles_path/10/forbidden",
    "roles_path/1000/allowed",
    "roles_path/1000/forbidden",
    "roles_host/10/allowed",
    "roles_host/10/denied",
    "roles_host/1000/allowed",
    "roles_host/1000/denied",
];

/// A roles document whose one context restricts paths (`n` directories, `n`
/// forbidden-file globs) and hosts (`n` hosts, `n` endpoints).
pub(crate) fn roles_document(n: usize) -> roles::CompiledRoles {
    let list = |f: &dyn Fn(usize) -> String| (0..n).map(f).collect::<Vec<_>>();
    let doc = serde_json::json!({
        "toolCategories": {"SYSTEM_OPERATIONS": {"tools": ["FILE_READ", "NETWORK_REQUEST"]}},
        "allowLists": {"a": {"agentId": "A", "contexts": {"DEV": {
            "allowedTools": {"SYSTEM_OPERATIONS": ["FILE_READ", "NETWORK_REQUEST"]},
            "restrictions": {
                "allowedDirectories": list(&|i| format!("src/module{i}/")),
                "forbiddenFiles": list(&|i| format!("*.secret{i}")),
                "allowedNetworkHosts": list(&|i| format!("host{i}.example.com")),
                "allowedEndpoints": list(&|i| format!("host{i}.example.com:*"))
            }
        }}}}
    });
    roles::compile_roles(&serde_json::from_value(doc).unwrap()).unwrap()
}

pub(crate) fn bench_roles(c: &mut Criterion) {
    let mut g = c.benchmark_group("decision");
    g.warm_up_time(Duration::from_secs(1))
        .sample_size(50)
        .measurement_time(Duration::from_secs(2));
    for n in ROLE_SIZES {
        let compiled = roles_document(n);
        let last = n - 1;
        let cases = [
            (
                "roles_path",
                "allowed",
                "FILE_READ",
                roles::Touches {
                    paths: vec![format!("src/module{last}/deep/lib.rs")],
                    ..roles::Touches::default()
                },
                true,
            ),
            (
                "roles_path",
                "forbidden",
                "FILE_READ",
                roles::Touches {
                    paths: vec![format!("src/module{last}/x.secret{last}")],
                    ..roles::Touches::default()
                },
                false,
            ),
            (
                "roles_host",
                "allowed",
                "NETWORK_REQUEST",
                roles::Touches {
                    targets: vec![format!("https://host{last}.example.com:8443/v1/x")],
                    ..roles::Touches::default()
                },
                true,
            ),
            (
                "roles_host",
                "denied",
                "NETWORK_REQUEST",
                roles::Touches {
                    targets: vec!["https://evil.example.net/".to_owned()],
                    ..roles::Touches::default()
                },
                false,
            ),
        ];
        for (kind, case, operation, touches, allowed) in &cases {
            let call = roles::RoleCall {
                agent: roles::Agent {
                    id: Some("A"),
                    context: Some("DEV"),
                    ..roles::Agent::default()
                },
                operation,
                cwd: Some("/home/dev/proj"),
                touches,
            };
            let verdict = roles::evaluate(&compiled, &call);
            assert_eq!(
                matches!(verdict, roles::RoleVerdict::Allow { .. }),
                *allowed,
                "{kind}/{n}/{case}: {verdict:?}"
            );
            g.bench_function(BenchmarkId::new(format!("{kind}/{n}"), case), |b| {
                b.iter(|| roles::evaluate(black_box(&compiled), black_box(&call)))
            });
        }
    }
    g.finish();
}
