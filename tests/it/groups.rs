//! Group policies against the policy core: the combination table
//! (`tests/data/groups.json`, every field for the team, a group and several groups,
//! with the origin each decision names), the documents a team may not hold, and a
//! property: the decision does not depend on the order of the caller's groups, and
//! the combined lists are those of a simple set model.

use proptest::prelude::*;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use toolgate::policy::groups::{AllowMode, GroupControls, GroupPolicies, GroupedAdmin, combine};
use toolgate::policy::{
    AdminControls, Call, CompiledAdmin, CompiledUser, Decision, UserSettings, explain,
};

/// Decides `call` as a member of `groups`, naming the origin, as the service does.
fn decide_grouped(
    team: &AdminControls,
    org: &GroupPolicies,
    groups: &[String],
    user: &CompiledUser,
    call: &Call,
) -> Decision {
    let grouped = GroupedAdmin::compile_in(team, org, groups).expect("the combination compiles");
    let mut d = explain(&grouped.compiled, user, call);
    grouped
        .origins
        .name(&grouped.compiled, user, call, groups, &mut d);
    d
}

/// Every order of `items` (the tables name at most three groups).
fn orders(items: &[String]) -> Vec<Vec<String>> {
    if items.len() <= 1 {
        return vec![items.to_vec()];
    }
    let mut out = Vec::new();
    for i in 0..items.len() {
        let mut rest = items.to_vec();
        let first = rest.remove(i);
        for mut tail in orders(&rest) {
            tail.insert(0, first.clone());
            out.push(tail);
        }
    }
    out
}

#[test]
fn the_combination_table() {
    let data: Value =
        serde_json::from_str(include_str!("../data/groups.json")).expect("groups.json is JSON");
    let mut failures = Vec::new();
    let cases = data["cases"].as_array().expect("cases");
    for case in cases {
        let name = case["name"].as_str().expect("name");
        let team: AdminControls = serde_json::from_value(case["team"].clone())
            .unwrap_or_else(|e| panic!("{name}: team: {e}"));
        CompiledAdmin::compile(&team).unwrap_or_else(|e| panic!("{name}: team: {e}"));
        let user: UserSettings = serde_json::from_value(case["user"].clone())
            .unwrap_or_else(|e| panic!("{name}: user: {e}"));
        let user = CompiledUser::compile(&user).unwrap_or_else(|e| panic!("{name}: {e}"));
        let groups: Vec<String> =
            serde_json::from_value(case["member_of"].clone()).expect("member_of");
        let org: GroupPolicies = match case.get("org") {
            Some(org) => {
                serde_json::from_value(org.clone()).unwrap_or_else(|e| panic!("{name}: org: {e}"))
            }
            None => GroupPolicies::new(),
        };
        let call = crate::decisions::call(&case["call"]);
        let expect = &case["expect"];
        let mut first: Option<Decision> = None;
        for order in orders(&groups) {
            let d = decide_grouped(&team, &org, &order, &user, &call);
            let got = serde_json::json!({
                "outcome": d.outcome,
                "reason": d.reason.as_str(),
                "matched_entry": d.matched_entry.as_deref(),
                "origin": d.origin.as_deref(),
            });
            let mut want = expect.clone();
            if want.get("matched_entry").is_none() {
                want["matched_entry"] = Value::Null;
            }
            if got != want {
                failures.push(format!("{name} (groups {order:?}): got {got}, want {want}"));
            }
            match &first {
                None => first = Some(d),
                Some(f) => {
                    if f != &d {
                        failures.push(format!(
                            "{name}: {order:?} decides otherwise than {groups:?}"
                        ));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(cases.len() >= 40, "the table lost cases");
}

#[test]
fn documents_a_team_may_not_hold_are_refused_with_the_field() {
    let data: Value =
        serde_json::from_str(include_str!("../data/groups.json")).expect("groups.json is JSON");
    for case in data["invalid"].as_array().expect("invalid") {
        let name = case["name"].as_str().expect("name");
        let want = case["error"].as_str().expect("error");
        let error = match serde_json::from_value::<AdminControls>(case["team"].clone()) {
            Err(e) => e.to_string(),
            Ok(team) => match CompiledAdmin::compile(&team) {
                Err(e) => e.to_string(),
                Ok(_) => panic!("{name}: accepted"),
            },
        };
        assert!(
            error.contains(want),
            "{name}: {error:?} does not name {want:?}"
        );
    }
}

/// A group policy drawn from a small alphabet, so entries meet.
fn group_controls() -> impl Strategy<Value = GroupControls> {
    let entries = |pool: &'static [&'static str]| {
        proptest::collection::vec(proptest::sample::select(pool), 0..3)
            .prop_map(|v| v.into_iter().map(str::to_owned).collect::<Vec<_>>())
    };
    const PREFIXES: &[&str] = &["git push", "git", "ls", "rm", "curl", "make"];
    const TOOLS: &[&str] = &["github:*", "github:get", "slack:post", "*:read", "jira:*"];
    (
        any::<bool>(),
        proptest::option::of(entries(PREFIXES)),
        proptest::option::of(entries(TOOLS)),
        entries(PREFIXES),
        entries(PREFIXES),
        entries(TOOLS),
        any::<[bool; 4]>(),
        proptest::option::of(any::<bool>()),
    )
        .prop_map(
            |(
                replace,
                allowed,
                mcp_allow,
                blocked,
                denied,
                blocklist,
                switches,
                run_everything,
            )| {
                GroupControls {
                    allow_mode: if replace {
                        AllowMode::Replace
                    } else {
                        AllowMode::Add
                    },
                    allowed,
                    mcp_tool_allowlist: mcp_allow,
                    blocked,
                    denied,
                    mcp_tool_blocklist: blocklist,
                    enabled: switches[0],
                    disable_mcp_auto_run: switches[1],
                    delete_file_protection: switches[2],
                    browser_protection: switches[3],
                    enable_run_everything: run_everything,
                    ..GroupControls::default()
                }
            },
        )
}

fn team_controls() -> impl Strategy<Value = AdminControls> {
    (
        proptest::collection::btree_map(
            proptest::sample::select(&["a", "b", "c", "d"][..]),
            group_controls(),
            0..4,
        ),
        any::<[bool; 3]>(),
    )
        .prop_map(|(groups, flags)| AdminControls {
            enabled: flags[0],
            enable_run_everything: flags[1],
            disable_mcp_auto_run: flags[2],
            allowed: vec!["ls".into(), "git".into()],
            blocked: vec!["curl".into()],
            denied: vec!["git push".into()],
            mcp_tool_allowlist: vec!["github:get".into()],
            mcp_tool_blocklist: vec!["slack:post".into()],
            groups: Box::new(groups.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()),
            ..AdminControls::default()
        })
}

fn set(list: &[String]) -> BTreeSet<String> {
    list.iter().cloned().collect()
}

/// The reference: the combination read as sets, one rule per line of the table.
fn reference(team: &AdminControls, groups: &[String]) -> BTreeMap<&'static str, BTreeSet<String>> {
    let applied: Vec<&GroupControls> = team
        .groups
        .iter()
        .filter(|(n, _)| groups.contains(n))
        .map(|(_, g)| g)
        .collect();
    let union = |base: &[String], pick: &dyn Fn(&GroupControls) -> Vec<String>| {
        let mut s = set(base);
        for g in &applied {
            s.extend(pick(g));
        }
        s
    };
    let allow = |base: &[String], pick: &dyn Fn(&GroupControls) -> Option<Vec<String>>| {
        let replaced = applied
            .iter()
            .any(|g| g.allow_mode == AllowMode::Replace && pick(g).is_some());
        let mut s = if replaced { BTreeSet::new() } else { set(base) };
        for g in &applied {
            s.extend(pick(g).unwrap_or_default());
        }
        s
    };
    let flag = |b: bool| {
        let mut s = BTreeSet::new();
        if b {
            s.insert("on".to_owned());
        }
        s
    };
    BTreeMap::from([
        ("denied", union(&team.denied, &|g| g.denied.clone())),
        ("blocked", union(&team.blocked, &|g| g.blocked.clone())),
        (
            "mcp_tool_blocklist",
            union(&team.mcp_tool_blocklist, &|g| g.mcp_tool_blocklist.clone()),
        ),
        ("allowed", allow(&team.allowed, &|g| g.allowed.clone())),
        (
            "mcp_tool_allowlist",
            allow(&team.mcp_tool_allowlist, &|g| g.mcp_tool_allowlist.clone()),
        ),
        (
            "enabled",
            flag(team.enabled || applied.iter().any(|g| g.enabled)),
        ),
        (
            "disable_mcp_auto_run",
            flag(team.disable_mcp_auto_run || applied.iter().any(|g| g.disable_mcp_auto_run)),
        ),
        (
            "enable_run_everything",
            flag(
                team.enable_run_everything
                    && !applied
                        .iter()
                        .any(|g| g.enable_run_everything == Some(false)),
            ),
        ),
    ])
}

fn combined_as_sets(c: &AdminControls) -> BTreeMap<&'static str, BTreeSet<String>> {
    let flag = |b: bool| {
        let mut s = BTreeSet::new();
        if b {
            s.insert("on".to_owned());
        }
        s
    };
    BTreeMap::from([
        ("denied", set(&c.denied)),
        ("blocked", set(&c.blocked)),
        ("mcp_tool_blocklist", set(&c.mcp_tool_blocklist)),
        ("allowed", set(&c.allowed)),
        ("mcp_tool_allowlist", set(&c.mcp_tool_allowlist)),
        ("enabled", flag(c.enabled)),
        ("disable_mcp_auto_run", flag(c.disable_mcp_auto_run)),
        ("enable_run_everything", flag(c.enable_run_everything)),
    ])
}

const CALLS: &[&str] = &["git push", "git status", "ls -l", "rm x", "curl e", "make"];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn the_order_of_groups_never_matters(
        team in team_controls(),
        (groups, shuffled) in proptest::sample::subsequence(vec!["a", "b", "c", "d", "e"], 0..=5)
            .prop_map(|v| v.into_iter().map(str::to_owned).collect::<Vec<String>>())
            .prop_flat_map(|v| (Just(v.clone()), Just(v).prop_shuffle())),
        yolo in any::<bool>(),
        org in proptest::collection::btree_map(
            proptest::sample::select(&["a", "c", "e"][..]),
            group_controls(),
            0..3,
        ),
    ) {
        let org: GroupPolicies = org.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
        let combined = combine(&team, &groups);
        prop_assert_eq!(&combined.controls, &combine(&team, &shuffled).controls);
        prop_assert_eq!(combined_as_sets(&combined.controls), reference(&team, &groups));
        // nothing a group says removes a deny of the team
        for d in &team.denied {
            prop_assert!(combined.controls.denied.contains(d));
        }
        // with the organisation's policies too: the order still never matters, and
        // neither the team's denies nor a member group's organisation-wide ones drop out
        let with_org = toolgate::policy::groups::combine_in(&team, &org, &groups);
        prop_assert_eq!(
            &with_org.controls,
            &toolgate::policy::groups::combine_in(&team, &org, &shuffled).controls
        );
        let org_denied = groups.iter().filter_map(|g| org.get(g)).flat_map(|g| &g.denied);
        for d in team.denied.iter().chain(org_denied) {
            prop_assert!(with_org.controls.denied.contains(d), "{} dropped", d);
        }
        let user = CompiledUser::compile(&UserSettings {
            use_yolo_mode: yolo,
            ..UserSettings::default()
        })
        .unwrap();
        let mut calls: Vec<Call> = CALLS.iter().map(|c| Call::Shell((*c).to_owned())).collect();
        for tool in ["get", "post", "read"] {
            for server in ["github", "slack", "jira"] {
                calls.push(Call::Mcp { server: server.into(), tool: tool.into() });
            }
        }
        calls.push(Call::DeleteFile("/tmp/x".into()));
        for call in &calls {
            let a = decide_grouped(&team, &org, &groups, &user, call);
            let b = decide_grouped(&team, &org, &shuffled, &user, call);
            prop_assert_eq!(&a, &b, "{:?}", call);
            if let Call::Shell(line) = call
                && team.denied.iter().any(|d| line.starts_with(d.as_str()))
            {
                prop_assert_eq!(a.outcome, toolgate::policy::Outcome::Deny);
            }
        }
    }
}

/// A server whose team has a member `carol` in the group `contractors` (a
/// configured token), beside the usual principals.
async fn server_with_carol(dir: &std::path::Path) -> crate::support::TestServer {
    server_with_members(
        dir,
        &[("carol", crate::support::TEAM, &["contractors", "everyone"])],
    )
    .await
}

/// A server with more members, each `(user, team, groups)` holding the token
/// `USER-token`, beside the usual principals.
pub(crate) async fn server_with_members(
    dir: &std::path::Path,
    members: &[(&str, &str, &[&str])],
) -> crate::support::TestServer {
    crate::support::TestServer::start(members_config(dir, members)).await
}

/// The test configuration with more members, as [`server_with_members`] starts it.
pub(crate) fn members_config(
    dir: &std::path::Path,
    members: &[(&str, &str, &[&str])],
) -> toolgate::config::Config {
    let mut config = crate::support::test_config(dir);
    for (user, team, groups) in members {
        config.auth.tokens.push(toolgate::config::TokenConfig {
            name: (*user).into(),
            sha256: toolgate::auth::hash_token(&format!("{user}-token")),
            role: toolgate::auth::Role::Member,
            team: Some((*team).into()),
            user: Some((*user).into()),
            groups: groups.iter().map(|g| (*g).to_owned()).collect(),
        });
    }
    config
}

/// The team's controls these tests start from: auto-run on, `git` allowed, and the
/// given group policies.
pub(crate) fn git_team(
    groups: Vec<(&str, toolgate::proto::v1::GroupPolicy)>,
) -> toolgate::proto::v1::AutoRunControls {
    toolgate::proto::v1::AutoRunControls {
        enabled: true,
        allowed: vec!["git".into()],
        groups: groups
            .into_iter()
            .map(|(name, g)| (name.to_owned(), g))
            .collect(),
        ..Default::default()
    }
}

/// A group policy that denies `line`'s prefix and says nothing else.
pub(crate) fn denies(line: &str) -> toolgate::proto::v1::GroupPolicy {
    toolgate::proto::v1::GroupPolicy {
        denied: vec![line.into()],
        ..Default::default()
    }
}

pub(crate) fn shell(line: &str) -> toolgate::proto::v1::ToolCall {
    toolgate::proto::v1::ToolCall {
        kind: Some(toolgate::proto::v1::tool_call::Kind::Shell(line.into())),
        arguments: None,
    }
}

async fn evaluate(
    server: &crate::support::TestServer,
    who: &str,
    line: &str,
) -> toolgate::proto::v1::Decision {
    evaluate_in(server, crate::support::TEAM, who, line).await
}

/// [`evaluate`] for a member of `team`.
pub(crate) async fn evaluate_in(
    server: &crate::support::TestServer,
    team: &str,
    who: &str,
    line: &str,
) -> toolgate::proto::v1::Decision {
    server
        .policy(&format!("{who}-token"))
        .evaluate(toolgate::proto::v1::EvaluateRequest {
            team_id: team.into(),
            user_id: who.into(),
            call: Some(shell(line)),
            explain: true,
            ..Default::default()
        })
        .await
        .expect("evaluate")
        .into_inner()
        .decision
        .expect("a decision")
}

/// Through the API: a group policy written with the team's controls applies to the
/// group's members only, names its origin, and a change to it is followed at once.
#[tokio::test]
async fn evaluate_applies_the_caller_s_groups_and_follows_their_changes() {
    use toolgate::proto::v1 as pb;
    let dir = tempfile::tempdir().unwrap();
    let server = server_with_carol(dir.path()).await;
    let contractors = pb::GroupPolicy {
        denied: vec!["git push".into()],
        allowed: Some(pb::EntryList {
            entries: vec!["cargo test".into()],
        }),
        ..Default::default()
    };
    server
        .set_controls(git_team(vec![("contractors", contractors)]))
        .await;
    server.yolo("alice").await;
    server.yolo("carol").await;

    let d = evaluate(&server, "carol", "git push origin main").await;
    assert_eq!(d.reason(), pb::Reason::CommandDenied, "{d:?}");
    assert_eq!(d.matched_entry, "git push");
    assert_eq!(d.origin, "group contractors");
    let checks: Vec<&str> = d.explanation.iter().map(|c| c.result.as_str()).collect();
    assert!(
        checks.contains(&"member of contractors, everyone; policies of contractors applied"),
        "{checks:?}"
    );
    let d = evaluate(&server, "carol", "cargo test").await;
    assert_eq!(d.reason(), pb::Reason::CommandAllowed, "{d:?}");
    assert_eq!(d.origin, "group contractors");
    let d = evaluate(&server, "carol", "git status").await;
    assert_eq!(d.origin, "team", "the group adds to the team's list: {d:?}");

    // alice is in no group: the team's list alone
    let d = evaluate(&server, "alice", "git push origin main").await;
    assert_eq!(d.reason(), pb::Reason::CommandAllowed, "{d:?}");
    assert_eq!(d.origin, "team");
    let d = evaluate(&server, "alice", "cargo test").await;
    assert_eq!(d.outcome(), pb::Outcome::Ask, "{d:?}");

    // the group policy removed: carol decides as alice does, at once
    server
        .set_controls(pb::AutoRunControls {
            enabled: true,
            allowed: vec!["git".into()],
            ..Default::default()
        })
        .await;
    let d = evaluate(&server, "carol", "git push origin main").await;
    assert_eq!(d.reason(), pb::Reason::CommandAllowed, "{d:?}");
    server.stop().await;
}

/// A group policy that breaks a rule is refused on write, naming the group, the
/// list and the entry.
#[tokio::test]
async fn a_bad_group_policy_is_refused_naming_the_group() {
    use toolgate::proto::v1 as pb;
    let dir = tempfile::tempdir().unwrap();
    let server = server_with_carol(dir.path()).await;
    let status = server
        .admin("admin-token")
        .update_team_admin_settings(pb::UpdateTeamAdminSettingsRequest {
            team_id: crate::support::TEAM.into(),
            auto_run_controls: Some(pb::AutoRunControls {
                groups: [(
                    "contractors".to_owned(),
                    pb::GroupPolicy {
                        mcp_tool_blocklist: vec!["no-colon".into()],
                        ..Default::default()
                    },
                )]
                .into(),
                ..Default::default()
            }),
            expected_revision: None,
        })
        .await
        .expect_err("refused");
    assert_eq!(status.code(), tonic::Code::InvalidArgument);
    assert!(
        status
            .message()
            .contains("groups.contractors.mcp_tool_blocklist[0]"),
        "{}",
        status.message()
    );
    server.stop().await;
}

/// A JWT's groups claim, read through its path, prefix and mapping, puts its holder
/// under the group's policy; a claim that cannot be read refuses the token.
#[tokio::test]
async fn a_jwt_s_groups_claim_applies_its_groups_and_a_bad_one_is_refused() {
    use crate::jwt::{AUDIENCE, Key, claims, jwt_config, now, write_jwks};
    use crate::support::{TEAM, TestServer, test_config, user_settings};
    use toolgate::proto::v1 as pb;
    let dir = tempfile::tempdir().unwrap();
    let jwks = dir.path().join("jwks.json");
    let key = Key::new("k1");
    write_jwks(&jwks, &[&key]);
    let mut config = test_config(&dir.path().join("data"));
    config.auth.jwt = Some(toolgate::config::JwtConfig {
        groups: Some(toolgate::config::JwtGroupsConfig {
            claim: "realm_access.roles".into(),
            prefix: "tg-".into(),
            map: [("Contractors".to_owned(), "contractors".to_owned())].into(),
            mapped_only: false,
        }),
        ..jwt_config(&jwks, 0)
    });
    let server = TestServer::start(config).await;
    server
        .set_controls(git_team(vec![("contractors", denies("git push"))]))
        .await;
    for user in ["dave", "erin"] {
        server
            .users("operator-token")
            .update_user_settings(pb::UpdateUserSettingsRequest {
                settings: Some(pb::UserSettings {
                    use_yolo_mode: true,
                    ..user_settings(TEAM, user)
                }),
                expected_revision: None,
                update_mask: None,
            })
            .await
            .expect("user settings");
    }
    let token = |user: &str, roles: serde_json::Value| {
        let mut c = claims(user, AUDIENCE, now() + 3600);
        c["realm_access"] = serde_json::json!({ "roles": roles });
        key.sign(c)
    };
    let decide = |token: String, user: &'static str| {
        let server = &server;
        async move {
            server
                .policy(&token)
                .evaluate(pb::EvaluateRequest {
                    team_id: TEAM.into(),
                    user_id: user.into(),
                    call: Some(shell("git push")),
                    ..Default::default()
                })
                .await
                .map(|r| r.into_inner().decision.expect("a decision"))
        }
    };
    let d = decide(
        token(
            "dave",
            serde_json::json!(["tg-Contractors", "offline_access"]),
        ),
        "dave",
    )
    .await
    .expect("dave decides");
    assert_eq!(d.reason(), pb::Reason::CommandDenied, "{d:?}");
    assert_eq!(d.origin, "group contractors");
    let d = decide(token("erin", serde_json::json!(["offline_access"])), "erin")
        .await
        .expect("erin decides");
    assert_eq!(d.reason(), pb::Reason::CommandAllowed, "{d:?}");
    for (roles, why) in [
        (serde_json::json!(["tg-bad name"]), "no group name"),
        (serde_json::json!("tg-a, tg-b c"), ""),
        (serde_json::json!([7]), "other than names"),
    ] {
        match decide(token("dave", roles.clone()), "dave").await {
            Ok(_) if why.is_empty() => {}
            Ok(d) => panic!("{roles}: decided {d:?}"),
            Err(status) => {
                assert_eq!(status.code(), tonic::Code::Unauthenticated, "{roles}");
                assert!(
                    status.message().contains(why),
                    "{roles}: {}",
                    status.message()
                );
            }
        }
    }
    server.stop().await;
}

/// `toolgate group`: a policy written from a file is listed, shown and decides; a
/// bad file and a bad name are refused with what to fix; delete removes it.
#[tokio::test]
async fn the_group_commands_write_show_and_delete_a_group_policy() {
    use crate::cli::{toolgate, write};
    let dir = tempfile::tempdir().unwrap();
    let server = server_with_carol(&dir.path().join("data")).await;
    server.yolo("carol").await;
    let file = write(
        dir.path(),
        "contractors.yaml",
        "denied: [git push]\nallowed: [git]\n",
    );
    let run = toolgate(
        &server,
        &[
            "group",
            "set",
            "--team",
            "acme",
            "contractors",
            "--file",
            &file,
        ],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .starts_with("group policy contractors of team acme written"),
        "{}",
        run.stdout
    );
    let run = toolgate(&server, &["group", "list", "--team", "acme"]).await;
    assert!(run.stdout.contains("  contractors\n"), "{}", run.stdout);
    let run = toolgate(&server, &["group", "show", "--team", "acme", "contractors"]).await;
    assert!(run.stdout.contains("- git push"), "{}", run.stdout);
    let d = evaluate(&server, "carol", "git push").await;
    assert_eq!(d.origin, "group contractors", "{d:?}");

    let bad = write(dir.path(), "bad.yaml", "kill_switch: false\n");
    let run = toolgate(
        &server,
        &[
            "group",
            "set",
            "--team",
            "acme",
            "contractors",
            "--file",
            &bad,
        ],
    )
    .await;
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("unknown field `kill_switch`"),
        "{}",
        run.stderr
    );
    let run = toolgate(
        &server,
        &["group", "set", "--team", "acme", "a b", "--file", &file],
    )
    .await;
    assert_eq!(run.code, 2, "{}", run.stderr);

    let run = toolgate(
        &server,
        &["group", "delete", "--team", "acme", "contractors"],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let d = evaluate(&server, "carol", "git push").await;
    assert_eq!(
        d.outcome(),
        toolgate::proto::v1::Outcome::Ask,
        "the team allows nothing: {d:?}"
    );
    assert_eq!(d.origin, "", "{d:?}");
    let run = toolgate(
        &server,
        &["group", "delete", "--team", "acme", "contractors"],
    )
    .await;
    assert_eq!(run.code, 1, "{}", run.stdout);
    server.stop().await;
}

/// The next event of a watch stream that is not a heartbeat, within a deadline.
pub(crate) async fn within(
    events: &mut crate::watch::Events,
) -> toolgate::proto::v1::WatchPolicyResponse {
    tokio::time::timeout(
        std::time::Duration::from_secs(30),
        crate::watch::next(events),
    )
    .await
    .expect("an event in time")
}

/// What a member is shown is what decides its calls: its effective policy, its
/// export and its watch stream carry the team's controls combined with its groups'
/// policies, and a change to a group policy reaches a member's stream as a fresh
/// snapshot; someone in no such group is shown the team's document.
#[tokio::test]
async fn a_member_s_effective_policy_export_and_watch_carry_its_groups() {
    use crate::watch::watch;
    use pb::watch_policy_response::Event;
    use toolgate::proto::v1 as pb;
    let dir = tempfile::tempdir().unwrap();
    let server = server_with_carol(&dir.path().join("data")).await;
    let controls = |denied: &str| git_team(vec![("contractors", denies(denied))]);
    server.set_controls(controls("git push")).await;
    let shown = |who: &'static str| {
        let server = &server;
        async move {
            server
                .policy(&format!("{who}-token"))
                .get_effective_policy(pb::GetEffectivePolicyRequest {
                    team_id: crate::support::TEAM.into(),
                    user_id: who.into(),
                })
                .await
                .expect("effective policy")
                .into_inner()
                .policy
                .expect("a policy")
        }
    };
    let carol = shown("carol").await;
    assert_eq!(carol.groups, ["contractors"]);
    let admin = carol.admin.unwrap().auto_run_controls.unwrap();
    assert_eq!(admin.denied, ["git push"], "{admin:?}");
    assert!(admin.groups.is_empty(), "combined: {admin:?}");
    let alice = shown("alice").await;
    assert!(alice.groups.is_empty());
    let admin = alice.admin.unwrap().auto_run_controls.unwrap();
    assert!(admin.denied.is_empty(), "{admin:?}");
    assert!(admin.groups.contains_key("contractors"), "as stored");

    // the export a member writes for its client denies what its group denies
    let export = |token: &'static str| {
        let server = &server;
        async move {
            let run = crate::cli::toolgate_as(server, token, &["export", "claude-code"]).await;
            assert_eq!(run.code, 0, "{}", run.stderr);
            run.stdout
        }
    };
    let carol = export("carol-token").await;
    assert!(carol.contains("git push"), "{carol}");
    let alice = export("alice-token").await;
    assert!(!alice.contains("git push"), "{alice}");

    // the watch snapshot is combined; a change to the group reaches carol as a new
    // snapshot, alice as the team's document
    let mut carol = watch(&server, "carol-token", crate::support::TEAM, "carol", None).await;
    let mut alice = watch(&server, "alice-token", crate::support::TEAM, "alice", None).await;
    let denied_in = |e: pb::WatchPolicyResponse| match e.event {
        Some(Event::Snapshot(s)) => {
            let p = s.policy.unwrap();
            (p.groups, p.admin.unwrap().auto_run_controls.unwrap().denied)
        }
        other => panic!("not a snapshot: {other:?}"),
    };
    let (groups, denied) = denied_in(within(&mut carol).await);
    assert_eq!(
        (groups.as_slice(), denied.as_slice()),
        (
            &["contractors".to_owned()][..],
            &["git push".to_owned()][..]
        )
    );
    let (_, denied) = denied_in(within(&mut alice).await);
    assert!(denied.is_empty());
    server.set_controls(controls("rm")).await;
    let (_, denied) = denied_in(within(&mut carol).await);
    assert_eq!(denied, ["rm"]);
    match within(&mut alice).await.event {
        Some(Event::AdminSettings(a)) => {
            assert!(a.auto_run_controls.unwrap().denied.is_empty());
        }
        other => panic!("alice gets the team's document: {other:?}"),
    }
    // the group's policy removed: carol's view is the team's again
    server
        .set_controls(pb::AutoRunControls {
            enabled: true,
            allowed: vec!["git".into()],
            ..Default::default()
        })
        .await;
    let (groups, denied) = denied_in(within(&mut carol).await);
    assert!(
        groups.is_empty() && denied.is_empty(),
        "{groups:?} {denied:?}"
    );
    server.stop().await;
}

/// The decision log keeps the groups each call was decided under (the API and
/// `decisions list` show them), and the impact preview decides a member's logged
/// calls again under the same groups' policies in the proposal: a deny proposed for
/// one of carol's groups changes her call and not alice's.
#[tokio::test(flavor = "multi_thread")]
async fn the_log_keeps_a_call_s_groups_and_the_preview_applies_them() {
    use crate::support::TEAM;
    use toolgate::proto::v1 as pb;
    let dir = tempfile::tempdir().unwrap();
    let server = server_with_carol(&dir.path().join("data")).await;
    let blocks_make = pb::GroupPolicy {
        blocked: vec!["make".into()],
        ..Default::default()
    };
    server
        .set_controls(git_team(vec![("contractors", blocks_make.clone())]))
        .await;
    server.yolo("alice").await;
    server.yolo("carol").await;
    for who in ["carol", "alice"] {
        let d = evaluate(&server, who, "git push origin main").await;
        assert_eq!(d.reason(), pb::Reason::CommandAllowed, "{who}: {d:?}");
    }
    // written off the decision path: listed within a deadline
    let records = server
        .team_decisions("admin-token", TEAM, 2, std::time::Duration::from_secs(30))
        .await;
    let groups_of = |user: &str| {
        records
            .iter()
            .find(|r| r.user_id == user)
            .map(|r| r.groups.clone())
            .expect("a record")
    };
    assert_eq!(groups_of("carol"), ["contractors", "everyone"]);
    assert!(groups_of("alice").is_empty());
    let run = crate::cli::toolgate(&server, &["decisions", "list", "--team", TEAM]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("(groups contractors, everyone)"),
        "{}",
        run.stdout
    );

    let preview = server
        .decisions("admin-token")
        .preview_team_admin_settings(pb::PreviewTeamAdminSettingsRequest {
            team_id: TEAM.into(),
            auto_run_controls: Some(git_team(vec![
                ("contractors", blocks_make),
                ("everyone", denies("git push")),
            ])),
            window_seconds: 3600,
            examples_per_group: 1,
        })
        .await
        .expect("preview")
        .into_inner();
    assert_eq!(
        (preview.decided, preview.changed, preview.unchanged),
        (2, 1, 1),
        "{preview:?}"
    );
    let change = &preview.transitions[0];
    assert_eq!(
        (change.from(), change.to()),
        (pb::Outcome::Allow, pb::Outcome::Deny),
        "{change:?}"
    );
    server.stop().await;
}

/// `token create --group`: the groups are kept with the token, listed, and its
/// holder's own calls are decided under their policies.
#[tokio::test]
async fn a_token_issued_with_groups_puts_its_holder_under_their_policies() {
    use crate::cli::toolgate;
    use toolgate::proto::v1 as pb;
    let dir = tempfile::tempdir().unwrap();
    let server = server_with_carol(&dir.path().join("data")).await;
    server
        .set_controls(git_team(vec![("contractors", denies("git push"))]))
        .await;
    let file = dir.path().join("dan.token");
    let run = toolgate(
        &server,
        &[
            "token",
            "create",
            "--team",
            "acme",
            "--user",
            "dan",
            "--group",
            "pii",
            "--group",
            "contractors",
            "--secret-file",
            &file.display().to_string(),
        ],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("groups contractors, pii"),
        "{}",
        run.stdout
    );
    let secret = std::fs::read_to_string(&file).unwrap();
    let d = server
        .policy(secret.trim())
        .evaluate(pb::EvaluateRequest {
            team_id: crate::support::TEAM.into(),
            user_id: "dan".into(),
            call: Some(shell("git push")),
            ..Default::default()
        })
        .await
        .expect("dan decides")
        .into_inner()
        .decision
        .expect("a decision");
    assert_eq!(d.reason(), pb::Reason::CommandDenied, "{d:?}");
    assert_eq!(d.origin, "group contractors");
    let run = toolgate(&server, &["token", "list", "--team", "acme"]).await;
    assert!(
        run.stdout.contains("groups contractors, pii"),
        "{}",
        run.stdout
    );
    let run = toolgate(
        &server,
        &[
            "token", "create", "--team", "acme", "--user", "eve", "--group", "a b",
        ],
    )
    .await;
    assert_ne!(run.code, 0);
    assert!(run.stderr.contains("groups"), "{}", run.stderr);
    server.stop().await;
}

/// Who signed in through the identity provider: a row per user with the groups of
/// their last token and the issuer, written at each new token and not at each call,
/// listed by the API and `toolgate sign-ins list` for the team's admins.
#[tokio::test(flavor = "multi_thread")]
async fn sign_ins_record_each_user_s_last_token_with_its_groups() {
    use crate::jwt::{AUDIENCE, ISSUER, Key, claims, jwt_config, now, write_jwks};
    use crate::support::{TEAM, TestServer, test_config};
    use toolgate::proto::v1 as pb;
    let dir = tempfile::tempdir().unwrap();
    let jwks = dir.path().join("jwks.json");
    let key = Key::new("k1");
    write_jwks(&jwks, &[&key]);
    let mut config = test_config(&dir.path().join("data"));
    config.auth.jwt = Some(toolgate::config::JwtConfig {
        groups: Some(toolgate::config::JwtGroupsConfig {
            claim: "groups".into(),
            prefix: String::new(),
            map: Default::default(),
            mapped_only: false,
        }),
        ..jwt_config(&jwks, 0)
    });
    let server = TestServer::start(config).await;
    let token = |user: &str, groups: serde_json::Value, exp: u64| {
        let mut c = claims(user, AUDIENCE, exp);
        c["groups"] = groups;
        key.sign(c)
    };
    let who = |token: String| {
        let server = &server;
        async move {
            pb::principal_service_client::PrincipalServiceClient::with_interceptor(
                server.channel.clone(),
                crate::support::Auth::new(&token),
            )
            .get_principal(pb::GetPrincipalRequest {})
            .await
            .expect("signed in")
            .into_inner()
        }
    };
    let exp = now() + 3600;
    let first = token("dave", serde_json::json!(["contractors"]), exp);
    for _ in 0..3 {
        assert_eq!(who(first.clone()).await.groups, ["contractors"]);
    }
    // a new token (refreshed at the provider, in another group): the same row
    let second = token("dave", serde_json::json!(["contractors", "pii"]), exp + 60);
    who(second).await;
    who(token("erin", serde_json::json!([]), exp)).await;

    // recorded off the request path: listed within a deadline
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    let listed = loop {
        let listed = pb::principal_service_client::PrincipalServiceClient::with_interceptor(
            server.channel.clone(),
            crate::support::Auth::new("admin-token"),
        )
        .list_sign_ins(pb::ListSignInsRequest {
            team_id: TEAM.into(),
        })
        .await
        .expect("list")
        .into_inner()
        .sign_ins;
        let dave_now = listed
            .iter()
            .any(|s| s.user_id == "dave" && s.groups.len() == 2);
        if dave_now && listed.iter().any(|s| s.user_id == "erin") {
            break listed;
        }
        assert!(tokio::time::Instant::now() < deadline, "{listed:?}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert_eq!(listed.len(), 2, "a row per user: {listed:?}");
    let dave = listed.iter().find(|s| s.user_id == "dave").unwrap();
    assert_eq!(dave.groups, ["contractors", "pii"]);
    assert_eq!(dave.issuer, ISSUER);
    let seconds = |t: &Option<prost_types::Timestamp>| t.as_ref().map(|t| t.seconds);
    assert!(
        seconds(&dave.first_at) <= seconds(&dave.last_at),
        "{dave:?}"
    );
    let run = crate::cli::toolgate(&server, &["sign-ins", "list", "--team", TEAM]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .contains("acme/dave  groups contractors, pii  via https://idp.test"),
        "{}",
        run.stdout
    );
    // a member may not see who signed in
    let status = pb::principal_service_client::PrincipalServiceClient::with_interceptor(
        server.channel.clone(),
        crate::support::Auth::new("alice-token"),
    )
    .list_sign_ins(pb::ListSignInsRequest {
        team_id: TEAM.into(),
    })
    .await
    .expect_err("refused");
    assert_eq!(status.code(), tonic::Code::PermissionDenied);
    server.stop().await;
}
