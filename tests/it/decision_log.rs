//! The decision log, on every store backend (SQLite, and PostgreSQL when
//! `TOOLGATE_TEST_POSTGRES_URL` is set): every kind of decision recorded with its
//! fields, retention by age and count, ALLOW sampling, a member's scope, paging that
//! stays put under concurrent writes, and the impact preview's exact counts on a
//! recorded week of synthetic traffic. (Decision vectors are `decisions.rs`; shedding
//! is counted in `tests/decision_log_shedding.rs`, which needs the metrics recorder.)

use crate::support::{self, *};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;
use tonic::Code;
use toolgate::config::Config;
use toolgate::proto::v1 as pb;
use toolgate::store::{
    EncodedDecisions, NewDecision, PackedDecision, PostgresStore, SqliteStore, Store,
};

const DEADLINE: Duration = Duration::from_secs(30);

/// The backends to run on: SQLite always, PostgreSQL when configured.
async fn backends(test: &str) -> Vec<Option<String>> {
    let mut all = vec![None];
    if let Some(url) = support::pg::fresh_database(test).await {
        all.push(Some(url));
    }
    all
}

fn config(dir: &std::path::Path, url: &Option<String>) -> Config {
    let mut config = test_config(dir);
    config.store.url = url.clone();
    config
}

/// The store a server with `config` uses, opened beside it.
async fn open_store(config: &Config) -> Arc<dyn Store> {
    match config.postgres_url() {
        Some(url) => Arc::new(PostgresStore::connect(url, 100).await.unwrap()),
        None => Arc::new(SqliteStore::open(&config.sqlite_path(), 100).await.unwrap()),
    }
}

pub(crate) fn shell(line: &str) -> pb::ToolCall {
    pb::ToolCall {
        kind: Some(pb::tool_call::Kind::Shell(line.into())),
        arguments: None,
    }
}

pub(crate) fn evaluate(call: pb::ToolCall, client: &str) -> pb::EvaluateRequest {
    pb::EvaluateRequest {
        team_id: TEAM.into(),
        user_id: "alice".into(),
        call: Some(call),
        explain: false,
        agent: None,
        client: client.into(),
        approval: None,
        tool_use_id: String::new(),
    }
}

pub(crate) fn team_filter() -> pb::DecisionFilter {
    pb::DecisionFilter {
        team_id: TEAM.into(),
        ..Default::default()
    }
}

/// Controls under which alice (yolo) gets each outcome: github allowlisted, the
/// `evil` server blocked, `git status` an allowed command.
pub(crate) fn controls() -> pb::AutoRunControls {
    pb::AutoRunControls {
        enabled: true,
        mcp_tool_allowlist: vec!["github:*".into(), "slack:*".into()],
        mcp_tool_blocklist: vec!["evil:*".into()],
        allowed: vec!["git status".into(), "git push".into(), "ls".into()],
        ..Default::default()
    }
}

type Watch = tonic::Streaming<pb::WatchDecisionsResponse>;

async fn watch(server: &TestServer, token: &str, filter: pb::DecisionFilter) -> Watch {
    server
        .decisions(token)
        .watch_decisions(pb::WatchDecisionsRequest {
            filter: Some(filter),
        })
        .await
        .unwrap()
        .into_inner()
}

/// The next `n` records of a watch, within the deadline.
async fn next_records(watch: &mut Watch, n: usize) -> Vec<pb::DecisionRecord> {
    let mut out = Vec::new();
    tokio::time::timeout(DEADLINE, async {
        while out.len() < n {
            let message = watch.message().await.unwrap().expect("the watch goes on");
            match message.event {
                Some(pb::watch_decisions_response::Event::Decision(d)) => out.push(d),
                other => panic!("unexpected watch event {other:?}"),
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{n} records within {DEADLINE:?}, got {}", out.len()));
    out
}

/// Every page of a listing, newest first.
pub(crate) async fn list_all(
    server: &TestServer,
    token: &str,
    filter: pb::DecisionFilter,
) -> Vec<pb::DecisionRecord> {
    let mut out = Vec::new();
    let mut token_next = String::new();
    loop {
        let page = server
            .decisions(token)
            .list_decisions(pb::ListDecisionsRequest {
                filter: Some(filter.clone()),
                page_size: 1000,
                page_token: token_next,
            })
            .await
            .unwrap()
            .into_inner();
        out.extend(page.decisions);
        if page.next_page_token.is_empty() {
            return out;
        }
        token_next = page.next_page_token;
    }
}

/// Waits until `count` records of the team are listed, within the deadline.
async fn wait_for_count(server: &TestServer, want: impl Fn(usize) -> bool) -> usize {
    let start = tokio::time::Instant::now();
    loop {
        let n = list_all(server, "admin-token", team_filter()).await.len();
        if want(n) {
            return n;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "the log did not reach the expected size within {DEADLINE:?}: {n}"
        );
        // the retention pass runs on its own timer: look again shortly
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn every_kind_of_decision_is_logged_with_its_fields() {
    for url in backends("decision log fields").await {
        let dir = tempfile::tempdir().unwrap();
        let server = TestServer::start(config(dir.path(), &url)).await;
        let revision = server.set_controls(controls()).await;
        server.yolo("alice").await;
        let mut all = watch(&server, "admin-token", team_filter()).await;

        let mut policy = server.policy("alice-token");
        let allow = policy
            .evaluate(evaluate(mcp("github", "get_issue"), "claude-code"))
            .await
            .unwrap()
            .into_inner()
            .decision
            .unwrap();
        let long = format!("echo {}", "x".repeat(10_000));
        let batch = policy
            .evaluate_batch(pb::EvaluateBatchRequest {
                team_id: TEAM.into(),
                user_id: "alice".into(),
                calls: vec![mcp("evil", "wipe"), shell("git status"), shell(&long)],
                explain: false,
                agent: Some(pb::AgentContext {
                    agent_id: "reviewer-1".into(),
                    ..Default::default()
                }),
                client: "codex".into(),
            })
            .await
            .unwrap()
            .into_inner();
        let listed = policy
            .filter_tools(pb::FilterToolsRequest {
                team_id: TEAM.into(),
                user_id: "alice".into(),
                server: "evil".into(),
                tools: Some(pb_value(
                    &serde_json::json!({"tools": [{"name": "a"}, {"name": "b"}]}),
                )),
                client: "mcp-proxy".into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(listed.removed, ["a", "b"]);
        let bad = policy
            .evaluate(evaluate(mcp("github", "x"), "Not A Client"))
            .await
            .unwrap_err();
        assert_eq!(bad.code(), Code::InvalidArgument);
        assert!(bad.message().starts_with("client:"), "{}", bad.message());

        let mut got = next_records(&mut all, 6).await;
        got.sort_by_key(|r| r.id.parse::<u64>().unwrap());
        let stored = list_all(&server, "admin-token", team_filter()).await;
        assert_eq!(stored.len(), 6, "{stored:#?}");
        let ids: HashSet<_> = stored.iter().map(|r| r.id.clone()).collect();
        assert!(got.iter().all(|r| ids.contains(&r.id)));

        for r in &got {
            assert_eq!((r.team_id.as_str(), r.user_id.as_str()), (TEAM, "alice"));
            assert_eq!(r.principal, "alice");
            // the user's settings were written after the controls
            assert_eq!(r.revision, revision + 1);
            assert_eq!(r.revision, allow.revision);
            assert!(r.at.is_some());
        }
        // Evaluate
        let first = got
            .iter()
            .find(|r| r.source() == pb::DecisionSource::Evaluate)
            .unwrap();
        assert_eq!(first.client, "claude-code");
        assert_eq!(first.outcome, allow.outcome);
        assert_eq!(first.outcome(), pb::Outcome::Allow);
        assert_eq!(first.reason, allow.reason);
        assert_eq!(first.matched_entry, allow.matched_entry);
        assert_eq!(
            first.call.as_ref().unwrap().kind,
            Some(pb::decided_call::Kind::Mcp(pb::McpCall {
                server: "github".into(),
                tool: "get_issue".into(),
                action: String::new(),
            }))
        );
        // EvaluateBatch: one record per call, in order, with the agent
        let batched: Vec<_> = got
            .iter()
            .filter(|r| r.source() == pb::DecisionSource::EvaluateBatch)
            .collect();
        assert_eq!(batched.len(), 3);
        for (r, d) in batched.iter().zip(&batch.decisions) {
            assert_eq!((r.outcome, r.reason), (d.outcome, d.reason));
            assert_eq!(r.matched_entry, d.matched_entry);
            assert_eq!(
                (r.client.as_str(), r.agent_id.as_str()),
                ("codex", "reviewer-1")
            );
        }
        assert_eq!(batched[0].outcome(), pb::Outcome::Deny);
        assert_eq!(batched[0].matched_entry, "evil:*");
        let status = batched[1].call.as_ref().unwrap();
        assert_eq!(
            status.kind,
            Some(pb::decided_call::Kind::ShellExcerpt("git status".into()))
        );
        assert_eq!(status.command_bytes, 10);
        // a long command: an excerpt, its length and SHA-256
        let long_call = batched[2].call.as_ref().unwrap();
        let Some(pb::decided_call::Kind::ShellExcerpt(excerpt)) = &long_call.kind else {
            panic!("{long_call:?}")
        };
        assert!(excerpt.len() < 4200 && long.starts_with(excerpt.trim_end_matches('…')));
        assert_eq!(long_call.command_bytes, long.len() as u64);
        {
            use sha2::Digest as _;
            assert_eq!(
                long_call.command_sha256,
                hex::encode(sha2::Sha256::digest(long.as_bytes()))
            );
        }
        // FilterTools: one record per tool
        let tools: Vec<_> = got
            .iter()
            .filter(|r| r.source() == pb::DecisionSource::FilterTools)
            .collect();
        assert_eq!(tools.len(), 2);
        assert!(tools.iter().all(|r| r.outcome() == pb::Outcome::Deny
            && r.client == "mcp-proxy"
            && r.matched_entry == "evil:*"));

        // filters: outcome, reason, tool and command prefixes, agent, time range
        let count = |filter: pb::DecisionFilter| {
            let server = &server;
            async move { list_all(server, "admin-token", filter).await.len() }
        };
        let with = |f: fn(&mut pb::DecisionFilter)| {
            let mut filter = team_filter();
            f(&mut filter);
            filter
        };
        assert_eq!(
            count(with(|f| f.outcome = pb::Outcome::Deny as i32)).await,
            3
        );
        assert_eq!(count(with(|f| f.tool_prefix = "evil:".into())).await, 3);
        assert_eq!(count(with(|f| f.tool_prefix = "git".into())).await, 1);
        assert_eq!(count(with(|f| f.command_prefix = "git st".into())).await, 1);
        assert_eq!(
            count(with(|f| f.command_prefix = "echo xx".into())).await,
            1
        );
        assert_eq!(count(with(|f| f.agent_id = "reviewer-1".into())).await, 3);
        assert_eq!(
            count(with(|f| f.reason = pb::Reason::BlockedByAdmin as i32)).await,
            stored
                .iter()
                .filter(|r| r.reason() == pb::Reason::BlockedByAdmin)
                .count()
        );
        assert_eq!(
            count(with(|f| f.since = Some(prost_types::Timestamp {
                seconds: 4_000_000_000,
                nanos: 0,
            })))
            .await,
            0
        );
        assert_eq!(
            count(with(|f| f.until = Some(prost_types::Timestamp {
                seconds: 4_000_000_000,
                nanos: 0,
            })))
            .await,
            6
        );
        server.stop().await;
    }
}

/// An ALLOW that rests on programs whose effects toolgate does not know keeps their
/// names in its record: listed, watched and printed by `decisions list`; a plain
/// ALLOW's record has none.
#[tokio::test(flavor = "multi_thread")]
async fn an_allow_with_unknown_effects_is_recorded_with_them() {
    for url in backends("decision log effects unknown").await {
        let dir = tempfile::tempdir().unwrap();
        let server = TestServer::start(config(dir.path(), &url)).await;
        server
            .set_controls(pb::AutoRunControls {
                allowed: vec![
                    "terraform plan".into(),
                    "packer validate".into(),
                    "ls".into(),
                ],
                ..controls()
            })
            .await;
        server.yolo("alice").await;
        let mut all = watch(&server, "admin-token", team_filter()).await;
        let line = "terraform plan && packer validate . && ls";
        let decided = server
            .policy("alice-token")
            .evaluate(evaluate(shell(line), "codex"))
            .await
            .unwrap()
            .into_inner()
            .decision
            .unwrap();
        assert_eq!(decided.outcome(), pb::Outcome::Allow, "{decided:?}");
        assert_eq!(decided.effects_unknown, ["terraform", "packer"]);
        server
            .policy("alice-token")
            .evaluate(evaluate(shell("ls -la"), "codex"))
            .await
            .unwrap();
        let watched = next_records(&mut all, 2).await;
        let listed = list_all(&server, "admin-token", team_filter()).await;
        for records in [&watched, &listed] {
            let unknown = |subject_of: &str| {
                records
                    .iter()
                    .find(|r| subject(r) == subject_of)
                    .map(|r| r.effects_unknown.clone())
            };
            assert_eq!(
                unknown(line),
                Some(vec!["terraform".into(), "packer".into()]),
                "{records:#?}"
            );
            assert_eq!(unknown("ls -la"), Some(Vec::new()), "{records:#?}");
        }
        let (code, out) = toolgate(&server, "admin-token", &["decisions", "list"], None).await;
        assert_eq!(code, 0, "{out}");
        assert!(
            out.lines().any(|l| l.contains("$ terraform plan")
                && l.ends_with("(effects unknown: terraform, packer)")),
            "{out}"
        );
        let (code, out) = toolgate(
            &server,
            "admin-token",
            &[
                "--output",
                "json",
                "decisions",
                "list",
                "--command",
                "terraform",
            ],
            None,
        )
        .await;
        assert_eq!(code, 0, "{out}");
        let json: serde_json::Value = serde_json::from_str(&out).expect(&out);
        assert_eq!(
            json["decisions"][0]["effects_unknown"],
            serde_json::json!(["terraform", "packer"]),
            "{out}"
        );
        // a preview counts the calls a proposal would allow with unknown effects:
        // the terraform line while its prefixes stay, none once they are gone
        for (allowed, unknown) in [
            (vec!["terraform plan", "packer validate", "ls"], 1),
            (vec!["ls"], 0),
        ] {
            let impact = server
                .decisions("admin-token")
                .preview_team_admin_settings(pb::PreviewTeamAdminSettingsRequest {
                    team_id: TEAM.into(),
                    auto_run_controls: Some(pb::AutoRunControls {
                        allowed: allowed.iter().map(|a| a.to_string()).collect(),
                        ..controls()
                    }),
                    window_seconds: 3600,
                    examples_per_group: 1,
                })
                .await
                .unwrap()
                .into_inner();
            assert_eq!(
                (impact.decided, impact.effects_unknown),
                (2, unknown),
                "{impact:#?}"
            );
        }
        server.stop().await;
    }
}

#[tokio::test]
async fn a_member_sees_only_its_own_calls_and_others_see_nothing() {
    let (server, _dir) = start().await;
    server.set_controls(controls()).await;
    let mut all = watch(&server, "admin-token", team_filter()).await;
    for token in ["alice-token", "bob-token"] {
        server
            .policy(token)
            .evaluate(pb::EvaluateRequest {
                team_id: String::new(),
                user_id: String::new(),
                call: Some(mcp("github", "get_issue")),
                explain: false,
                agent: None,
                client: String::new(),
                approval: None,
                tool_use_id: String::new(),
            })
            .await
            .unwrap();
    }
    next_records(&mut all, 2).await;
    let own = list_all(&server, "alice-token", pb::DecisionFilter::default()).await;
    assert_eq!(own.len(), 1);
    assert_eq!(own[0].user_id, "alice");
    assert_eq!(
        list_all(&server, "admin-token", team_filter()).await.len(),
        2
    );
    assert_eq!(
        list_all(&server, "operator-token", team_filter())
            .await
            .len(),
        2
    );
    // a member's watch is of its own calls too
    let mut alice_watch = watch(&server, "alice-token", pb::DecisionFilter::default()).await;
    for token in ["bob-token", "alice-token"] {
        server
            .policy(token)
            .evaluate(pb::EvaluateRequest {
                team_id: String::new(),
                user_id: String::new(),
                call: Some(mcp("github", "list")),
                explain: false,
                agent: None,
                client: String::new(),
                approval: None,
                tool_use_id: String::new(),
            })
            .await
            .unwrap();
    }
    let seen = next_records(&mut alice_watch, 1).await;
    assert_eq!(seen[0].user_id, "alice");

    let refused = [
        ("alice-token", TEAM, "bob"),
        ("alice-token", TEAM, ""),
        ("service-token", TEAM, ""),
        ("service-token", TEAM, "bob"),
        ("other-admin-token", TEAM, ""),
        ("admin-token", OTHER_TEAM, ""),
    ];
    for (token, team, user) in refused {
        let filter = pb::DecisionFilter {
            team_id: team.into(),
            user_id: user.into(),
            ..Default::default()
        };
        let err = server
            .decisions(token)
            .list_decisions(pb::ListDecisionsRequest {
                filter: Some(filter.clone()),
                ..Default::default()
            })
            .await;
        // alice naming no user lists her own; every other row is refused
        if (token, user) == ("alice-token", "") {
            assert_eq!(err.unwrap().into_inner().decisions.len(), 2);
            continue;
        }
        let err = err.unwrap_err();
        assert_eq!(err.code(), Code::PermissionDenied, "{token} {team} {user}");
        let err = server
            .decisions(token)
            .watch_decisions(pb::WatchDecisionsRequest {
                filter: Some(filter),
            })
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::PermissionDenied, "{token} {team} {user}");
    }
    // the preview reads every call of the team: admins only
    for token in ["alice-token", "service-token", "other-admin-token"] {
        let err = server
            .decisions(token)
            .preview_team_admin_settings(pb::PreviewTeamAdminSettingsRequest {
                team_id: TEAM.into(),
                auto_run_controls: Some(controls()),
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::PermissionDenied, "{token}");
    }
    server.stop().await;
}

#[tokio::test]
async fn bad_filters_and_tokens_name_the_field() {
    let (server, _dir) = start().await;
    let cases: Vec<(pb::ListDecisionsRequest, &str)> = vec![
        (
            pb::ListDecisionsRequest {
                page_size: 1001,
                ..Default::default()
            },
            "page_size:",
        ),
        (
            pb::ListDecisionsRequest {
                page_token: "not-a-token".into(),
                ..Default::default()
            },
            "page_token:",
        ),
        (
            pb::ListDecisionsRequest {
                filter: Some(pb::DecisionFilter {
                    command_prefix: "x".repeat(2000),
                    ..Default::default()
                }),
                ..Default::default()
            },
            "filter.command_prefix:",
        ),
        (
            pb::ListDecisionsRequest {
                filter: Some(pb::DecisionFilter {
                    outcome: 99,
                    ..Default::default()
                }),
                ..Default::default()
            },
            "filter.outcome:",
        ),
        (
            pb::ListDecisionsRequest {
                filter: Some(pb::DecisionFilter {
                    user_id: "bad id\n".into(),
                    ..Default::default()
                }),
                ..Default::default()
            },
            "filter.user_id:",
        ),
        (
            pb::ListDecisionsRequest {
                filter: Some(pb::DecisionFilter {
                    since: Some(prost_types::Timestamp {
                        seconds: 20,
                        nanos: 0,
                    }),
                    until: Some(prost_types::Timestamp {
                        seconds: 10,
                        nanos: 0,
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            },
            "filter.until:",
        ),
    ];
    for (request, field) in cases {
        let err = server
            .decisions("admin-token")
            .list_decisions(request)
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument, "{field}");
        assert!(
            err.message().starts_with(field),
            "{field}: {}",
            err.message()
        );
    }
    // a page token is bound to its filter
    server.set_controls(controls()).await;
    let mut all = watch(&server, "admin-token", team_filter()).await;
    let calls = (0..3).map(|i| mcp("github", &format!("t{i}"))).collect();
    server
        .policy("alice-token")
        .evaluate_batch(pb::EvaluateBatchRequest {
            team_id: TEAM.into(),
            user_id: "alice".into(),
            calls,
            ..Default::default()
        })
        .await
        .unwrap();
    next_records(&mut all, 3).await;
    let page = server
        .decisions("admin-token")
        .list_decisions(pb::ListDecisionsRequest {
            filter: Some(team_filter()),
            page_size: 1,
            page_token: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(!page.next_page_token.is_empty());
    let err = server
        .decisions("admin-token")
        .list_decisions(pb::ListDecisionsRequest {
            filter: Some(pb::DecisionFilter {
                tool_prefix: "github:".into(),
                ..team_filter()
            }),
            page_size: 1,
            page_token: page.next_page_token,
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(
        err.message().contains("another filter"),
        "{}",
        err.message()
    );
    server.stop().await;
}

#[tokio::test]
async fn pages_stay_put_while_records_are_written() {
    for url in backends("decision log paging").await {
        let dir = tempfile::tempdir().unwrap();
        let server = TestServer::start(config(dir.path(), &url)).await;
        server.set_controls(controls()).await;
        let mut all = watch(&server, "admin-token", team_filter()).await;
        let batch = |n: usize, prefix: &str| pb::EvaluateBatchRequest {
            team_id: TEAM.into(),
            user_id: "alice".into(),
            calls: (0..n)
                .map(|i| mcp("github", &format!("{prefix}{i}")))
                .collect(),
            ..Default::default()
        };
        let mut policy = server.policy("alice-token");
        policy.evaluate_batch(batch(250, "old")).await.unwrap();
        let before: HashSet<String> = next_records(&mut all, 250)
            .await
            .into_iter()
            .map(|r| r.id)
            .collect();

        // page through while another task keeps writing
        let writer = {
            let mut policy = server.policy("alice-token");
            tokio::spawn(async move {
                for round in 0..20 {
                    policy
                        .evaluate_batch(batch(10, &format!("new{round}-")))
                        .await
                        .unwrap();
                }
            })
        };
        let mut seen = Vec::new();
        let mut page_token = String::new();
        loop {
            let page = server
                .decisions("admin-token")
                .list_decisions(pb::ListDecisionsRequest {
                    filter: Some(team_filter()),
                    page_size: 17,
                    page_token,
                })
                .await
                .unwrap()
                .into_inner();
            seen.extend(page.decisions.into_iter().map(|r| r.id));
            if page.next_page_token.is_empty() {
                break;
            }
            page_token = page.next_page_token;
            tokio::task::yield_now().await;
        }
        writer.await.unwrap();
        let unique: HashSet<_> = seen.iter().cloned().collect();
        assert_eq!(unique.len(), seen.len(), "no record twice");
        let missing: Vec<_> = before.difference(&unique).collect();
        assert!(
            missing.is_empty(),
            "records older than the first page missed: {missing:?}"
        );
        server.stop().await;
    }
}

fn synthetic(at_ms: i64, kind: &str, subject: &str, outcome: &str) -> NewDecision {
    let (server, tool) = match kind {
        "mcp" => {
            let (s, t) = subject.split_once(':').unwrap();
            (s.to_owned(), t.to_owned())
        }
        _ => (String::new(), String::new()),
    };
    NewDecision {
        at_ms,
        team_id: TEAM.into(),
        user_id: "alice".into(),
        principal: "alice".into(),
        agent_id: String::new(),
        role: String::new(),
        client: "claude-code".into(),
        source: "evaluate".into(),
        kind: kind.into(),
        server,
        tool,
        action: String::new(),
        subject: subject.into(),
        subject_bytes: subject.len() as u64,
        subject_sha256: String::new(),
        outcome: outcome.into(),
        reason: "ALLOWLISTED".into(),
        matched_entry: String::new(),
        revision: 1,
        count: 1,
        first_at_ms: at_ms,
        groups: String::new(),
        effects_unknown: String::new(),
        cwd: String::new(),
        tool_use_id: String::new(),
    }
}

#[tokio::test]
async fn retention_removes_old_records_and_keeps_each_team_within_its_count() {
    for url in backends("decision log retention").await {
        let dir = tempfile::tempdir().unwrap();
        let mut config = config(dir.path(), &url);
        config.decision_log.max_records_per_team = 20;
        config.decision_log.max_age_days = 30;
        config.decision_log.prune_interval_secs = 1;
        // records from before the server starts: 40 and 10 days old
        let day = 86_400_000;
        let now = toolgate::service::now_ms();
        {
            let store = open_store(&config).await;
            let old: Vec<_> = (0..5)
                .map(|i| synthetic(now - 40 * day - i, "mcp", "github:old", "ALLOW"))
                .chain(
                    (0..5).map(|i| synthetic(now - 10 * day - i, "mcp", "github:recent", "ALLOW")),
                )
                .collect();
            let old: Vec<PackedDecision> = old.iter().map(PackedDecision::from).collect();
            let old: Vec<_> = old.iter().collect();
            store
                .append_records(&[], &EncodedDecisions::from(&old[..]))
                .await
                .unwrap();
        }
        let server = TestServer::start(config).await;
        server.set_controls(controls()).await;
        wait_for_count(&server, |n| n == 5).await;
        let kept = list_all(&server, "admin-token", team_filter()).await;
        assert!(kept.iter().all(|r| matches!(
            &r.call.as_ref().unwrap().kind,
            Some(pb::decided_call::Kind::Mcp(m)) if m.tool == "recent"
        )));
        // past the count, the oldest go first
        let mut all = watch(&server, "admin-token", team_filter()).await;
        server
            .policy("alice-token")
            .evaluate_batch(pb::EvaluateBatchRequest {
                team_id: TEAM.into(),
                user_id: "alice".into(),
                calls: (0..30).map(|i| mcp("github", &format!("new{i}"))).collect(),
                ..Default::default()
            })
            .await
            .unwrap();
        next_records(&mut all, 30).await;
        wait_for_count(&server, |n| n == 20).await;
        let kept = list_all(&server, "admin-token", team_filter()).await;
        let names: Vec<_> = kept
            .iter()
            .map(|r| match &r.call.as_ref().unwrap().kind {
                Some(pb::decided_call::Kind::Mcp(m)) => m.tool.clone(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert!(names.iter().all(|n| n.starts_with("new")), "{names:?}");
        server.stop().await;
    }
}

/// A record reads back exactly as written, every field, whatever its texts hold
/// (a block keeps its records as JSON, escaped and read back): empty texts,
/// multi-byte characters, quotes, the longest texts beside the shortest.
#[tokio::test]
async fn records_read_back_exactly_as_written() {
    use toolgate::store::DecisionQuery;
    for url in backends("decision log records read back").await {
        let dir = tempfile::tempdir().unwrap();
        let store = open_store(&config(dir.path(), &url)).await;
        let texts = ["", "é", "🦀 crab's \"quoted\" tool", "x", &"ü".repeat(3000)];
        let records: Vec<NewDecision> = (0..67)
            .map(|i| {
                let t = |k: usize| texts[(i + k) % texts.len()].to_owned();
                NewDecision {
                    at_ms: 1_700_000_000_000 + i as i64,
                    team_id: TEAM.into(),
                    user_id: format!("u{}", t(1)),
                    principal: t(2),
                    agent_id: t(3),
                    role: t(4),
                    client: t(5),
                    source: t(6),
                    kind: t(7),
                    server: t(8),
                    tool: t(9),
                    action: t(10),
                    subject: t(11),
                    subject_bytes: i as u64 * 1_000_003,
                    subject_sha256: t(12),
                    outcome: t(13),
                    reason: t(14),
                    matched_entry: t(15),
                    revision: u64::MAX >> 2,
                    // every third stands for repeats of a principal past its budget
                    count: if i % 3 == 0 { i as u64 + 2 } else { 1 },
                    first_at_ms: 1_700_000_000_000 - if i % 3 == 0 { 60_000 } else { -(i as i64) },
                    // half made in groups (a text more), half in none (the older form)
                    groups: if i % 2 == 0 {
                        "contractors,pii".into()
                    } else {
                        String::new()
                    },
                    // every third rested on programs with unknown effects (a text
                    // more, after the groups, written empty when there are none)
                    effects_unknown: if i % 3 == 1 {
                        "zip\nfakeroot".into()
                    } else {
                        String::new()
                    },
                    // every fifth kept its working directory
                    cwd: if i % 5 == 0 {
                        format!("/home/{}", t(2))
                    } else {
                        String::new()
                    },
                    // some carry the client's id for the call (the last optional
                    // text), with and without the texts before it
                    tool_use_id: if i % 7 == 2 {
                        format!("toolu_{i}")
                    } else {
                        String::new()
                    },
                }
            })
            .collect();
        let packed: Vec<PackedDecision> = records.iter().map(PackedDecision::from).collect();
        let ids = store
            .append_records(
                &[],
                &EncodedDecisions::from(&packed.iter().collect::<Vec<_>>()[..]),
            )
            .await
            .unwrap();
        let mut listed = store
            .list_decisions(&DecisionQuery {
                team_id: Some(TEAM.into()),
                limit: 1000,
                ..Default::default()
            })
            .await
            .unwrap();
        listed.reverse();
        assert_eq!(listed.len(), records.len());
        for ((id, written), read) in ids.iter().zip(&records).zip(&listed) {
            assert_eq!(read.id, *id);
            assert_eq!(&read.decision, written);
        }
    }
}

/// Records are stored in blocks (a row per team and batch); listing merges them.
/// Against a reference model (every record in a list, sorted and filtered): batches
/// of random sizes whose times overlap, two teams, records big enough to split a
/// batch into several blocks; every page size, with and without a filter, pages
/// followed by their keyset; and the ids of a range read back in order.
#[tokio::test]
async fn listing_blocks_agrees_with_a_sorted_list_of_every_record() {
    use toolgate::store::{DecisionQuery, StoredDecision};
    for url in backends("decision log blocks against a model").await {
        let dir = tempfile::tempdir().unwrap();
        let store = open_store(&config(dir.path(), &url)).await;
        // a fixed pseudo-random sequence: the same cases every run
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let big = "x".repeat(400 * 1024);
        let mut model: Vec<StoredDecision> = Vec::new();
        for batch in 0..25 {
            let size = 1 + next(30) as usize;
            let records: Vec<NewDecision> = (0..size)
                .map(|k| {
                    let outcome = ["ALLOW", "ASK", "DENY"][next(3) as usize];
                    // a few batches of records large enough to fill a block each
                    let subject = if batch % 10 == 3 && k < 4 {
                        format!("echo {big}")
                    } else {
                        format!("echo {}", next(1000))
                    };
                    let mut d = synthetic(1_000 + next(500) as i64, "shell", &subject, outcome);
                    if next(2) == 0 {
                        d.team_id = "other".into();
                    }
                    d
                })
                .collect();
            let packed: Vec<PackedDecision> = records.iter().map(PackedDecision::from).collect();
            let ids = store
                .append_records(
                    &[],
                    &EncodedDecisions::from(&packed.iter().collect::<Vec<_>>()[..]),
                )
                .await
                .unwrap();
            model.extend(
                ids.into_iter()
                    .zip(records)
                    .map(|(id, decision)| StoredDecision { id, decision }),
            );
        }
        model.sort_by_key(|r| std::cmp::Reverse((r.decision.at_ms, r.id)));
        for outcome in [None, Some("ASK")] {
            for limit in [1, 7, 64, 1000] {
                let want: Vec<u64> = model
                    .iter()
                    .filter(|r| r.decision.team_id == TEAM)
                    .filter(|r| outcome.is_none_or(|o| r.decision.outcome == o))
                    .map(|r| r.id)
                    .collect();
                let mut got = Vec::new();
                let mut before = None;
                loop {
                    let page = store
                        .list_decisions(&DecisionQuery {
                            team_id: Some(TEAM.into()),
                            outcome: outcome.map(str::to_owned),
                            before,
                            limit,
                            ..Default::default()
                        })
                        .await
                        .unwrap();
                    assert!(page.len() <= limit as usize);
                    got.extend(page.iter().map(|r| r.id));
                    match page.last() {
                        Some(last) if page.len() == limit as usize => {
                            before = Some((last.decision.at_ms, last.id));
                        }
                        _ => break,
                    }
                }
                assert_eq!(got, want, "outcome {outcome:?}, pages of {limit}");
            }
        }
        let first = model.iter().map(|r| r.id).min().unwrap();
        let last = model.iter().map(|r| r.id).max().unwrap();
        let between = store
            .decisions_between(first + 5, last - 5, 10_000)
            .await
            .unwrap();
        let ids: Vec<u64> = between.iter().map(|r| r.id).collect();
        assert_eq!(ids, (first + 5..=last - 5).collect::<Vec<_>>());
        let some = store.decisions_between(first, last, 3).await.unwrap();
        assert_eq!(
            some.iter().map(|r| r.id).collect::<Vec<_>>(),
            [first, first + 1, first + 2]
        );
    }
}

/// The ids a batch is told are the ones its records are listed with (they are not
/// read back: one transaction's ids run on from the last), through batches of many
/// statements, with an audit record in the same transaction; and retention removes
/// the old records of every team (it goes team by team).
#[tokio::test]
async fn ids_given_are_the_listed_ones_and_retention_reaches_every_team() {
    use toolgate::store::{AuditFilter, DecisionQuery, NewAuditEvent};
    const TEAMS: [&str; 3] = ["acme", "beta", "gamma"];
    for url in backends("decision log ids and retention per team").await {
        let dir = tempfile::tempdir().unwrap();
        let store = open_store(&config(dir.path(), &url)).await;
        let day = 86_400_000;
        let now = toolgate::service::now_ms();
        let mut given = std::collections::BTreeMap::new();
        let mut old = 0;
        for (batch, n) in [1usize, 3, 1500, 2049, 7].into_iter().enumerate() {
            let records: Vec<NewDecision> = (0..n)
                .map(|i| {
                    let age = if (i / 3) % 2 == 1 { 40 * day } else { 0 };
                    let mut r =
                        synthetic(now - age, "mcp", &format!("github:t{batch}_{i}"), "ALLOW");
                    r.team_id = TEAMS[i % 3].into();
                    r
                })
                .collect();
            old += records.iter().filter(|r| r.at_ms < now).count();
            let audit = NewAuditEvent {
                team_id: "acme".into(),
                revision: 0,
                actor: "test".into(),
                kind: format!("batch_{batch}"),
                detail: serde_json::json!({}),
            };
            let packed: Vec<PackedDecision> = records.iter().map(PackedDecision::from).collect();
            let ids = store
                .append_records(
                    &[&audit],
                    &EncodedDecisions::from(&packed.iter().collect::<Vec<_>>()[..]),
                )
                .await
                .unwrap();
            assert_eq!(ids.len(), n);
            for (id, r) in ids.into_iter().zip(records) {
                assert!(given.insert(id, r.tool).is_none(), "id {id} given twice");
            }
        }
        let listed = |team: &str| {
            let store = store.clone();
            let query = DecisionQuery {
                team_id: Some(team.into()),
                limit: 10_000,
                ..Default::default()
            };
            async move { store.list_decisions(&query).await.unwrap() }
        };
        let mut seen = 0;
        for team in TEAMS {
            for record in listed(team).await {
                assert_eq!(given.get(&record.id), Some(&record.decision.tool));
                seen += 1;
            }
        }
        assert_eq!(seen, given.len());
        let audit = store
            .list_audit(&AuditFilter {
                team_id: Some("acme".into()),
                after_id: 0,
                limit: 100,
                kind: None,
                actor: Some("test".into()),
                since_ms: None,
            })
            .await
            .unwrap();
        assert_eq!(audit.len(), 5);

        let pruned = store
            .prune_decisions(&toolgate::store::Retention {
                older_than_ms: now - 30 * day,
                max_per_team: 1_000_000,
                deny_older_than_ms: now - 30 * day,
                deny_max_per_team: 1_000_000,
                audit_older_than_ms: i64::MIN,
                audit_max_per_team: u64::MAX >> 2,
                max_removed: u64::MAX,
            })
            .await
            .unwrap();
        assert_eq!(pruned.removed, old as u64);
        for team in TEAMS {
            let kept = listed(team).await;
            assert!(!kept.is_empty());
            assert!(kept.iter().all(|r| r.decision.at_ms == now), "{team}");
        }
    }
}

/// `hook check`'s sample call (client `hook-check`) checks an installation: its ALLOW
/// and ASK stay out of the log, its DENY does not; an agent's call right after it is
/// logged as ever (and, written after it, shows the check's were never queued).
#[tokio::test]
async fn a_hook_checks_sample_call_is_not_logged_unless_denied() {
    let (server, _dir) = start().await;
    server.set_controls(controls()).await;
    server.yolo("alice").await;
    let mut all = watch(&server, "admin-token", team_filter()).await;
    let mut policy = server.policy("alice-token");
    for (call, outcome) in [
        (mcp("github", "get_issue"), pb::Outcome::Allow),
        (mcp("jira", "get_issue"), pb::Outcome::Ask),
        (mcp("evil", "x"), pb::Outcome::Deny),
        (mcp("slack", "post"), pb::Outcome::Allow),
    ] {
        let client = if matches!(&call.kind, Some(pb::tool_call::Kind::Mcp(m)) if m.server == "slack")
        {
            "claude-code"
        } else {
            "hook-check"
        };
        let d = policy
            .evaluate(evaluate(call, client))
            .await
            .unwrap()
            .into_inner()
            .decision
            .unwrap();
        assert_eq!(d.outcome(), outcome, "{client}");
    }
    let got = next_records(&mut all, 2).await;
    // the writer may take the DENY's queue and the ALLOW's in either order
    let mut seen: Vec<_> = got
        .iter()
        .map(|r| (r.client.as_str(), r.outcome()))
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        [
            ("claude-code", pb::Outcome::Allow),
            ("hook-check", pb::Outcome::Deny)
        ]
    );
    assert_eq!(
        list_all(&server, "admin-token", team_filter()).await.len(),
        2
    );
    server.stop().await;
}

#[tokio::test]
async fn allow_sampling_keeps_asks_and_denies() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path());
    config.decision_log.allow_sample_rate = 0.0;
    let server = TestServer::start(config).await;
    server.set_controls(controls()).await;
    server.yolo("alice").await;
    let mut all = watch(&server, "admin-token", team_filter()).await;
    let decisions = server
        .policy("alice-token")
        .evaluate_batch(pb::EvaluateBatchRequest {
            team_id: TEAM.into(),
            user_id: "alice".into(),
            calls: vec![
                mcp("github", "a"),
                mcp("github", "b"),
                mcp("evil", "c"),
                mcp("jira", "d"),
            ],
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .decisions;
    let outcomes: Vec<_> = decisions.iter().map(|d| d.outcome()).collect();
    assert_eq!(
        outcomes,
        [
            pb::Outcome::Allow,
            pb::Outcome::Allow,
            pb::Outcome::Deny,
            pb::Outcome::Ask
        ]
    );
    let got = next_records(&mut all, 2).await;
    let mut kept: Vec<_> = got.iter().map(|r| r.outcome()).collect();
    kept.sort_by_key(|o| *o as i32);
    assert_eq!(kept, [pb::Outcome::Ask, pb::Outcome::Deny]);
    // the ALLOWs were never queued: the listing holds the two alone
    assert_eq!(
        list_all(&server, "admin-token", team_filter()).await.len(),
        2
    );
    server.stop().await;
}

#[tokio::test]
async fn the_impact_of_a_change_on_a_recorded_week_is_counted_exactly() {
    for url in backends("decision log impact").await {
        let dir = tempfile::tempdir().unwrap();
        let config = config(dir.path(), &url);
        let hour = 3_600_000;
        let now = toolgate::service::now_ms();
        // a week of traffic, one burst a day: 10 github, 4 slack, 3 `git push`, 2
        // `ls`, 1 command too long to decide again; and one burst from 8 days ago
        // (outside the window)
        let mut week = Vec::new();
        for day in 0..8 {
            let at = now - (day * 24 + 1) * hour;
            let mut burst = Vec::new();
            burst.extend((0..10).map(|i| synthetic(at - i, "mcp", "github:get_issue", "ALLOW")));
            burst.extend((0..4).map(|i| synthetic(at - 100 - i, "mcp", "slack:post", "ALLOW")));
            burst.extend(
                (0..3).map(|i| synthetic(at - 200 - i, "shell", "git push origin main", "ALLOW")),
            );
            burst.extend((0..2).map(|i| synthetic(at - 300 - i, "shell", "ls -la", "ALLOW")));
            let mut long = synthetic(at - 400, "shell", "echo cut", "ASK");
            long.subject_bytes = 100_000;
            burst.push(long);
            if day == 7 {
                burst.truncate(5);
            }
            week.extend(burst);
        }
        open_store(&config)
            .await
            .append_records(
                &[],
                &EncodedDecisions::from(
                    &week
                        .iter()
                        .map(PackedDecision::from)
                        .collect::<Vec<_>>()
                        .iter()
                        .collect::<Vec<_>>()[..],
                ),
            )
            .await
            .unwrap();
        let server = TestServer::start(config).await;
        let revision = server.set_controls(controls()).await;
        server.yolo("alice").await;
        // the change: slack is no longer allowlisted, `git push` is blocked
        let proposed = pb::AutoRunControls {
            mcp_tool_allowlist: vec!["github:*".into()],
            allowed: vec!["git status".into(), "ls".into()],
            blocked: vec!["git push".into()],
            ..controls()
        };
        let impact = server
            .decisions("admin-token")
            .preview_team_admin_settings(pb::PreviewTeamAdminSettingsRequest {
                team_id: TEAM.into(),
                auto_run_controls: Some(proposed.clone()),
                window_seconds: 7 * 24 * 3600,
                examples_per_group: 2,
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(impact.decided, 7 * 20, "{impact:#?}");
        assert_eq!(impact.unknown, 7);
        assert_eq!(impact.changed, 7 * (4 + 3));
        assert_eq!(impact.unchanged, 7 * (10 + 2));
        assert!(!impact.truncated);
        let groups: Vec<_> = impact
            .groups
            .iter()
            .map(|g| (g.from(), g.to(), g.key.as_str(), g.count, g.examples.len()))
            .collect();
        assert_eq!(
            groups,
            [
                (pb::Outcome::Allow, pb::Outcome::Ask, "slack:post", 28, 2),
                (pb::Outcome::Allow, pb::Outcome::Ask, "git push", 21, 2),
            ],
            "{impact:#?}"
        );
        let transitions: Vec<_> = impact
            .transitions
            .iter()
            .map(|g| (g.from(), g.to(), g.key.as_str(), g.count))
            .collect();
        assert_eq!(
            transitions,
            [(pb::Outcome::Allow, pb::Outcome::Ask, "", 49)]
        );
        let example = &impact.groups[1].examples[0];
        assert_eq!(example.new_reason(), pb::Reason::CommandBlocked);
        assert_eq!(example.new_matched_entry, "git push");
        // the preview changed nothing
        let now_controls = server
            .admin("admin-token")
            .get_team_admin_settings(pb::GetTeamAdminSettingsRequest {
                team_id: TEAM.into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(now_controls.settings.unwrap().revision, revision);
        assert_eq!(impact.revision, revision);
        // bad proposals name the field
        let err = server
            .decisions("admin-token")
            .preview_team_admin_settings(pb::PreviewTeamAdminSettingsRequest {
                team_id: TEAM.into(),
                auto_run_controls: Some(pb::AutoRunControls {
                    mcp_tool_allowlist: vec!["no colon".into()],
                    ..controls()
                }),
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument);
        assert!(
            err.message()
                .contains("auto_run_controls.mcp_tool_allowlist"),
            "{}",
            err.message()
        );
        let err = server
            .decisions("admin-token")
            .preview_team_admin_settings(pb::PreviewTeamAdminSettingsRequest {
                team_id: TEAM.into(),
                auto_run_controls: Some(proposed),
                window_seconds: 91 * 24 * 3600,
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert!(
            err.message().starts_with("window_seconds:"),
            "{}",
            err.message()
        );
        server.stop().await;
    }
}

/// The impact preview decides a recorded command line again in the working
/// directory it was made in: a write that asked because its directory was
/// `.git/hooks` still asks (unchanged) under a proposal, where decided without its
/// directory it would have been an ALLOW the proposal turns into an ASK.
#[tokio::test]
async fn the_preview_decides_a_line_again_in_its_working_directory() {
    for url in backends("decision log preview cwd").await {
        let dir = tempfile::tempdir().unwrap();
        let server = TestServer::start(config(dir.path(), &url)).await;
        let writes = pb::AutoRunControls {
            mcp_tool_allowlist: vec!["builtin:write_file".into()],
            allowed: vec!["echo".into(), "git status".into()],
            ..controls()
        };
        server.set_controls(writes.clone()).await;
        server.yolo("alice").await;
        let mut all = watch(&server, "admin-token", team_filter()).await;
        let in_dir = |line: &str, cwd: &str| {
            let mut call = shell(line);
            call.arguments = Some(pb::CallArguments {
                cwd: cwd.into(),
                ..Default::default()
            });
            evaluate(call, "claude-code")
        };
        let mut policy = server.policy("alice-token");
        for (line, cwd, outcome) in [
            ("echo x > notes.txt", "/home/dev/proj", pb::Outcome::Allow),
            (
                "echo x > pre-commit",
                "/home/dev/proj/.git/hooks",
                pb::Outcome::Ask,
            ),
        ] {
            let d = policy
                .evaluate(in_dir(line, cwd))
                .await
                .unwrap()
                .into_inner()
                .decision
                .unwrap();
            assert_eq!(d.outcome(), outcome, "{line} in {cwd}: {d:?}");
        }
        // both recorded before the preview reads them
        next_records(&mut all, 2).await;
        let impact = server
            .decisions("admin-token")
            .preview_team_admin_settings(pb::PreviewTeamAdminSettingsRequest {
                team_id: TEAM.into(),
                auto_run_controls: Some(pb::AutoRunControls {
                    allowed: vec!["git status".into()],
                    ..writes
                }),
                window_seconds: 3600,
                examples_per_group: 1,
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(
            (impact.decided, impact.changed, impact.unchanged),
            (2, 1, 1),
            "{impact:#?}"
        );
        assert_eq!(impact.groups.len(), 1, "{impact:#?}");
        assert_eq!(impact.groups[0].key, "echo x", "{impact:#?}");
        assert_eq!(
            (impact.groups[0].from(), impact.groups[0].to()),
            (pb::Outcome::Allow, pb::Outcome::Ask)
        );
        server.stop().await;
    }
}

/// The binary, with no `TOOLGATE_*` variable of ours leaking in from the test's env.
async fn toolgate(
    server: &TestServer,
    token: &str,
    args: &[&str],
    stdin: Option<&str>,
) -> (i32, String) {
    use tokio::io::AsyncWriteExt as _;
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolgate"));
    for (key, _) in std::env::vars().filter(|(k, _)| k.starts_with("TOOLGATE_")) {
        cmd.env_remove(key);
    }
    let mut child = cmd
        .args(args)
        // flags, as `hook install` writes them (a hook reads no variable)
        .arg("--server")
        .arg(format!("http://{}", server.addr))
        .args(["--token", token])
        .env("HOME", "/nonexistent")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("run toolgate");
    let mut input = child.stdin.take().unwrap();
    if let Some(text) = stdin {
        input.write_all(text.as_bytes()).await.unwrap();
    }
    drop(input);
    let out = tokio::time::timeout(DEADLINE, child.wait_with_output())
        .await
        .expect("toolgate finished in time")
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.code().is_some(),
        "toolgate {args:?} was killed: {stderr}"
    );
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stdout).into_owned() + &stderr,
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hook_call_is_logged_and_the_cli_lists_it_and_previews_a_change() {
    let (server, dir) = start().await;
    server.set_controls(controls()).await;
    server.yolo("alice").await;
    let mut all = watch(&server, "admin-token", team_filter()).await;
    let payload = serde_json::json!({
        "session_id": "s1", "cwd": "/home/dev/proj", "hook_event_name": "PreToolUse",
        "tool_name": "Bash", "tool_input": {"command": "git push origin main"}
    })
    .to_string();
    let (code, out) = toolgate(
        &server,
        "alice-token",
        &["hook", "claude-code"],
        Some(&payload),
    )
    .await;
    assert_eq!(code, 0, "{out}");
    let got = next_records(&mut all, 1).await;
    assert_eq!(got[0].client, "claude-code");
    assert_eq!(
        got[0].call.as_ref().unwrap().kind,
        Some(pb::decided_call::Kind::ShellExcerpt(
            "git push origin main".into()
        ))
    );
    assert_eq!(got[0].outcome(), pb::Outcome::Allow);

    // the CLI: a table, and JSON
    let (code, out) = toolgate(&server, "admin-token", &["decisions", "list"], None).await;
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("ALLOW") && out.contains("claude-code") && out.contains("$ git push"),
        "{out}"
    );
    let (code, out) = toolgate(
        &server,
        "admin-token",
        &["--output", "json", "decisions", "list", "--command", "git"],
        None,
    )
    .await;
    assert_eq!(code, 0, "{out}");
    let listed: serde_json::Value = serde_json::from_str(&out).expect(&out);
    assert_eq!(listed["decisions"].as_array().unwrap().len(), 1, "{out}");
    assert_eq!(listed["decisions"][0]["client"], "claude-code");
    assert_eq!(listed["decisions"][0]["outcome"], "ALLOW");
    let (code, out) = toolgate(
        &server,
        "admin-token",
        &["decisions", "list", "--reason", "nonsense"],
        None,
    )
    .await;
    assert_eq!(code, 2, "{out}");

    // the preview of a file that blocks `git push`
    let file = dir.path().join("team.yaml");
    std::fs::write(
        &file,
        "team: acme\nauto_run_controls:\n  enabled: true\n  mcp_tool_allowlist: [\"github:*\", \"slack:*\"]\n  mcp_tool_blocklist: [\"evil:*\"]\n  allowed: [\"git status\", \"ls\"]\n  blocked: [\"git push\"]\n",
    )
    .unwrap();
    let file = file.to_str().unwrap();
    let (code, out) = toolgate(
        &server,
        "admin-token",
        &[
            "--output", "json", "admin", "diff", "-f", file, "--impact", "7d",
        ],
        None,
    )
    .await;
    assert_eq!(code, 3, "differences: {out}");
    let report: serde_json::Value = serde_json::from_str(&out).expect(&out);
    assert_eq!(report["impact"]["decided"], 1, "{out}");
    assert_eq!(report["impact"]["changed"], 1, "{out}");
    assert_eq!(report["impact"]["groups"][0]["key"], "git push", "{out}");
    assert_eq!(report["impact"]["groups"][0]["from"], "ALLOW", "{out}");
    assert_eq!(report["impact"]["groups"][0]["to"], "ASK", "{out}");
    let (code, out) = toolgate(
        &server,
        "admin-token",
        &["admin", "apply", "-f", file, "--dry-run", "--impact", "7d"],
        None,
    )
    .await;
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("ALLOW -> ASK: 1"), "{out}");
    assert!(out.contains("git push"), "{out}");
    assert!(out.contains("dry run: nothing applied"), "{out}");
    server.stop().await;
}

/// PostgreSQL: what one replica records, another lists and its watchers see live
/// (read on the first replica's notice), both ways.
#[tokio::test]
async fn postgres_records_written_on_one_replica_are_listed_and_watched_on_another() {
    let Some(url) = support::pg::fresh_database("decision log replicas").await else {
        return;
    };
    let url = Some(url);
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = TestServer::start(config(dir_a.path(), &url)).await;
    let b = TestServer::start(config(dir_b.path(), &url)).await;
    a.set_controls(controls()).await;
    let mut on_a = watch(&a, "admin-token", team_filter()).await;
    let mut on_b = watch(&b, "admin-token", team_filter()).await;
    a.policy("alice-token")
        .evaluate(evaluate(mcp("evil", "wipe"), "codex"))
        .await
        .unwrap();
    let written = next_records(&mut on_a, 1).await;
    let relayed = next_records(&mut on_b, 1).await;
    assert_eq!(relayed, written, "b's watcher sees a's record as a's does");
    let listed = list_all(&b, "admin-token", team_filter()).await;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].id, written[0].id);
    assert_eq!(listed[0].outcome(), pb::Outcome::Deny);
    // a batch on b, seen on a in order, and on b once (its own, not relayed back)
    let calls = ["ls", "git status", "git push"].map(shell);
    b.policy("alice-token")
        .evaluate_batch(pb::EvaluateBatchRequest {
            team_id: TEAM.into(),
            user_id: "alice".into(),
            calls: calls.to_vec(),
            ..Default::default()
        })
        .await
        .unwrap();
    let on_a_batch = next_records(&mut on_a, 3).await;
    let on_b_batch = next_records(&mut on_b, 3).await;
    assert_eq!(on_a_batch, on_b_batch);
    let subjects: Vec<_> = on_a_batch.iter().map(subject).collect();
    assert_eq!(subjects, ["ls", "git status", "git push"]);
    // one more on a, and b's next record is that one: nothing was sent to b twice
    a.policy("alice-token")
        .evaluate(evaluate(mcp("github", "get_issue"), "codex"))
        .await
        .unwrap();
    let last = next_records(&mut on_b, 1).await;
    assert_eq!(subject(&last[0]), "github:get_issue");
    a.stop().await;
    b.stop().await;
}

/// A record's call as text: `server:tool`, or the command's excerpt.
fn subject(record: &pb::DecisionRecord) -> String {
    match &record.call.as_ref().unwrap().kind {
        Some(pb::decided_call::Kind::Mcp(m)) => format!("{}:{}", m.server, m.tool),
        Some(pb::decided_call::Kind::ShellExcerpt(text)) => text.clone(),
        other => panic!("unexpected call {other:?}"),
    }
}

#[tokio::test]
async fn a_watcher_that_does_not_read_is_told_what_it_missed_and_slows_nobody() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path());
    config.decision_log.watch_buffer = 4;
    let server = TestServer::start(config).await;
    server.set_controls(controls()).await;
    // small HTTP/2 windows, so the transport's buffers cannot hold what is written
    let channel = tonic::transport::Channel::from_shared(format!("http://{}", server.addr))
        .unwrap()
        .initial_stream_window_size(65_535)
        .initial_connection_window_size(65_535)
        .connect()
        .await
        .unwrap();
    let mut slow = DecisionLogServiceClient::with_interceptor(channel, Auth::new("admin-token"))
        .watch_decisions(pb::WatchDecisionsRequest {
            filter: Some(team_filter()),
        })
        .await
        .unwrap()
        .into_inner();
    let mut fast = watch(&server, "admin-token", team_filter()).await;
    const ROUNDS: usize = 10;
    const CALLS: usize = 1000;
    let mut policy = server.policy("alice-token");
    for round in 0..ROUNDS {
        // every call is answered while the slow watcher reads nothing
        policy
            .evaluate_batch(pb::EvaluateBatchRequest {
                team_id: TEAM.into(),
                user_id: "alice".into(),
                calls: (0..CALLS)
                    .map(|i| mcp("github", &format!("r{round}t{i}")))
                    .collect(),
                ..Default::default()
            })
            .await
            .unwrap();
    }
    // a watcher that reads as it goes may lag too with a buffer of 4: it is told so
    let (mut got, mut missed) = (0u64, 0u64);
    let total = (ROUNDS * CALLS) as u64;
    tokio::time::timeout(4 * DEADLINE, async {
        while got + missed < total {
            match fast.message().await.unwrap().unwrap().event {
                Some(pb::watch_decisions_response::Event::Decision(_)) => got += 1,
                Some(pb::watch_decisions_response::Event::Lagged(n)) => missed += n,
                Some(pb::watch_decisions_response::Event::ClientDecision(_)) | None => {}
            }
        }
    })
    .await
    .expect("the fast watcher sees or is told of every record");
    // the slow one: every record is either sent or counted as missed
    let (mut got, mut missed) = (0u64, 0u64);
    tokio::time::timeout(4 * DEADLINE, async {
        while got + missed < total {
            match slow.message().await.unwrap().unwrap().event {
                Some(pb::watch_decisions_response::Event::Decision(_)) => got += 1,
                Some(pb::watch_decisions_response::Event::Lagged(n)) => missed += n,
                Some(pb::watch_decisions_response::Event::ClientDecision(_)) | None => {}
            }
        }
    })
    .await
    .expect("the slow watcher sees or is told of every record");
    assert!(
        missed > 0,
        "a watcher that read nothing for {total} records lagged"
    );
    assert_eq!(got + missed, total);
    server.stop().await;
}

/// DENY records have a retention of their own: no volume of ALLOW records evicts them,
/// and their own limits (age, count) apply to them and to the audit trail's DENY
/// records; a pass removes at most its bound by age and says it was cut short.
#[tokio::test]
async fn deny_records_are_kept_by_their_own_retention() {
    use toolgate::store::{AuditFilter, DecisionQuery, NewAuditEvent, Retention};
    for url in backends("deny retention of its own").await {
        let dir = tempfile::tempdir().unwrap();
        let store = open_store(&config(dir.path(), &url)).await;
        let day = 86_400_000;
        let now = toolgate::service::now_ms();
        let append = |records: Vec<NewDecision>, audit: usize| {
            let store = store.clone();
            async move {
                let audit: Vec<NewAuditEvent> = (0..audit)
                    .map(|i| NewAuditEvent {
                        team_id: "acme".into(),
                        revision: i as u64,
                        actor: "alice".into(),
                        kind: "decision_denied".into(),
                        detail: serde_json::json!({}),
                    })
                    .collect();
                let packed: Vec<PackedDecision> =
                    records.iter().map(PackedDecision::from).collect();
                store
                    .append_records(
                        &audit.iter().collect::<Vec<_>>(),
                        &EncodedDecisions::from(&packed.iter().collect::<Vec<_>>()[..]),
                    )
                    .await
                    .unwrap();
            }
        };
        // ten DENYs, the first five 40 days old, among the ALLOWs of one batch; then
        // a flood of ALLOWs in batches of their own, some of them old
        let mixed: Vec<NewDecision> = (0..30)
            .map(|i| {
                let outcome = if i % 3 == 0 { "DENY" } else { "ALLOW" };
                let age = if i < 15 { 40 * day } else { 0 };
                synthetic(now - age, "mcp", &format!("github:m{i}"), outcome)
            })
            .collect();
        append(mixed, 10).await;
        for batch in 0..4 {
            let age = if batch < 2 { 40 * day } else { 0 };
            let allows = (0..500)
                .map(|i| synthetic(now - age, "mcp", &format!("jira:b{batch}n{i}"), "ALLOW"))
                .collect();
            append(allows, 0).await;
        }
        let count = |outcome: &'static str| {
            let store = store.clone();
            async move {
                store
                    .list_decisions(&DecisionQuery {
                        team_id: Some("acme".into()),
                        outcome: Some(outcome.into()),
                        limit: 100_000,
                        ..Default::default()
                    })
                    .await
                    .unwrap()
                    .len()
            }
        };
        assert_eq!((count("DENY").await, count("ALLOW").await), (10, 2020));
        let keep_all = Retention {
            older_than_ms: i64::MIN,
            max_per_team: u64::MAX >> 2,
            deny_older_than_ms: i64::MIN,
            deny_max_per_team: u64::MAX >> 2,
            audit_older_than_ms: i64::MIN,
            audit_max_per_team: u64::MAX >> 2,
            max_removed: u64::MAX >> 2,
        };
        // a pass bound smaller than what is due: one block of 500, and it says so
        let pruned = store
            .prune_decisions(&Retention {
                older_than_ms: now - 30 * day,
                max_removed: 700,
                ..keep_all
            })
            .await
            .unwrap();
        assert!(pruned.capped);
        assert_eq!(pruned.removed, 500);
        // ALLOW volume past the count: the ALLOWs go, every DENY stays
        let pruned = store
            .prune_decisions(&Retention {
                max_per_team: 100,
                ..keep_all
            })
            .await
            .unwrap();
        assert!(!pruned.capped);
        assert_eq!((count("DENY").await, count("ALLOW").await), (10, 100));
        // the DENYs' own age, then their own count, which bounds the audit trail's
        // DENY records too
        store
            .prune_decisions(&Retention {
                deny_older_than_ms: now - 30 * day,
                ..keep_all
            })
            .await
            .unwrap();
        assert_eq!(count("DENY").await, 5);
        let pruned = store
            .prune_decisions(&Retention {
                deny_max_per_team: 2,
                ..keep_all
            })
            .await
            .unwrap();
        assert_eq!(count("DENY").await, 2);
        assert_eq!(pruned.audit_removed, 8);
        let audit = store
            .list_audit(&AuditFilter {
                team_id: Some("acme".into()),
                limit: 100,
                kind: Some("decision_denied".into()),
                ..Default::default()
            })
            .await
            .unwrap();
        // the newest two are kept
        let revisions: Vec<u64> = audit.iter().map(|e| e.revision).collect();
        assert_eq!(revisions, [8, 9]);
        assert_eq!(count("ALLOW").await, 100);
        // the trail's other records have a retention of their own: by count, then by
        // age; the decision records stay
        let other = |i: u64| NewAuditEvent {
            team_id: "acme".into(),
            revision: 100 + i,
            actor: "admin".into(),
            kind: "token_revoked".into(),
            detail: serde_json::json!({}),
        };
        store
            .append_audit(&(0..5).map(other).collect::<Vec<_>>())
            .await
            .unwrap();
        let kinds = |kind: &'static str| {
            let store = store.clone();
            async move {
                store
                    .list_audit(&AuditFilter {
                        team_id: Some("acme".into()),
                        limit: 100,
                        kind: Some(kind.into()),
                        ..Default::default()
                    })
                    .await
                    .unwrap()
                    .iter()
                    .map(|e| e.revision)
                    .collect::<Vec<u64>>()
            }
        };
        let pruned = store
            .prune_decisions(&Retention {
                audit_max_per_team: 3,
                ..keep_all
            })
            .await
            .unwrap();
        assert_eq!(pruned.audit_removed, 2);
        assert_eq!(kinds("token_revoked").await, [102, 103, 104]);
        store
            .prune_decisions(&Retention {
                audit_older_than_ms: i64::MAX,
                ..keep_all
            })
            .await
            .unwrap();
        assert!(kinds("token_revoked").await.is_empty());
        assert_eq!(kinds("decision_denied").await, [8, 9]);
    }
}
