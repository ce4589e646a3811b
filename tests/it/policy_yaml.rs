//! Golden tests of the policy YAML formats: every file in `tests/data/policy_yaml/`
//! parses to exactly the errors in its `.err` twin (file, line, rule), and the
//! examples in `deploy/examples/` are valid. `UPDATE_GOLDEN=1` rewrites the twins.

use std::path::{Path, PathBuf};
use toolgate::policy::{AdminControls, ListMode};
use toolgate::policy_file::{self, TeamPolicy};

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/policy_yaml")
}

/// The errors of one file as printed, or `ok` when it is valid.
fn outcome(name: &str, text: &str) -> String {
    let errors = if name.starts_with("managed_") {
        policy_file::parse_managed_policy(name, text).err()
    } else {
        policy_file::parse_team_policy(name, text).err()
    };
    errors.map_or_else(|| "ok".to_owned(), |e| policy_file::format_errors(&e)) + "\n"
}

#[test]
fn error_goldens() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(data())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    assert!(files.len() >= 10, "golden inputs missing");
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let mut mismatches = Vec::new();
    for file in files {
        let name = file.file_name().unwrap().to_str().unwrap().to_owned();
        let got = outcome(&name, &std::fs::read_to_string(&file).unwrap());
        let golden = file.with_extension("err");
        if update {
            std::fs::write(&golden, &got).unwrap();
            continue;
        }
        let want = std::fs::read_to_string(&golden)
            .unwrap_or_else(|_| panic!("{} missing: run with UPDATE_GOLDEN=1", golden.display()));
        if got != want {
            mismatches.push(format!("{name}:\n--- want\n{want}--- got\n{got}"));
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

#[test]
fn examples_are_valid() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/examples");
    let team = std::fs::read_to_string(dir.join("team.yaml")).unwrap();
    let policy = policy_file::parse_team_policy("team.yaml", &team).unwrap();
    assert_eq!(policy.team, "acme");
    assert!(policy.auto_run_controls.enabled);
    for name in ["policy-file.yaml", "gasoline-allowlist.yaml"] {
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        let managed = policy_file::parse_managed_policy(name, &text)
            .unwrap_or_else(|e| panic!("{}", policy_file::format_errors(&e)));
        assert!(managed.tool_actions.get("gasoline").is_some(), "{name}");
    }
}

#[test]
fn every_field_round_trips_through_yaml() {
    let policy = TeamPolicy {
        team: "acme".into(),
        revision: Some(3),
        auto_run_controls: AdminControls {
            enabled: true,
            allowed: vec!["git status".into()],
            blocked: vec!["rm".into()],
            denied: vec!["git push --force".into()],
            disable_mcp_auto_run: true,
            delete_file_protection: true,
            enable_run_everything: true,
            mcp_tool_allowlist: vec!["jira:*".into()],
            sandboxing_controls: Some(toolgate::policy::SandboxingControls { enabled: true }),
            browser_protection: true,
            mcp_tool_blocklist: vec!["github:delete_*".into()],
            kill_switch: true,
            browser_server_ids: vec!["my-browser".into()],
            list_mode: ListMode::Union,
            mcp_access_mode: toolgate::policy::AccessMode::Allowlist,
            mcp_access_allowlist: vec!["*:*".into()],
            roles: serde_json::from_value(serde_json::json!({
                "toolCategories": {"SYSTEM_OPERATIONS": {"tools": ["FILE_READ", "FILE_WRITE"]}},
                "agentRoles": {"Explore": {"description": "a subagent type"}},
                "allowLists": {"explore": {"roleId": "Explore", "contexts": {"default": {
                    "allowedTools": {"SYSTEM_OPERATIONS": ["FILE_READ"]},
                    "restrictions": {"forbiddenFiles": ["*.pem"], "maxQueryTime": "5s"}
                }}}},
                "defaultContext": "default"
            }))
            .unwrap(),
            approvals: Some(Box::new(toolgate::policy::approvals::ApprovalSettings {
                mode: toolgate::policy::approvals::ApprovalMode::Headless,
                deadline_seconds: 120,
                approver_users: vec!["carol".into()],
                approver_role: toolgate::policy::approvals::ApproverRole::Member,
                allow_self_approval: true,
                webhook_url: "https://hooks.example.com/toolgate".into(),
                max_grant_seconds: 3600,
            })),
            default_user_settings: Some(Box::new(toolgate::policy::UserSettings {
                use_yolo_mode: true,
                command_allowlist: vec!["git status".into()],
                ..Default::default()
            })),
            groups: [(
                "contractors".to_owned(),
                toolgate::policy::groups::GroupControls {
                    allow_mode: toolgate::policy::groups::AllowMode::Replace,
                    allowed: Some(vec!["cargo test".into()]),
                    mcp_tool_allowlist: Some(Vec::new()),
                    denied: vec!["git push".into()],
                    mcp_tool_blocklist: vec!["github:delete_*".into()],
                    delete_file_protection: true,
                    enable_run_everything: Some(false),
                    list_mode: Some(ListMode::Replace),
                    ..Default::default()
                },
            )]
            .into_iter()
            .collect::<std::collections::BTreeMap<_, _>>()
            .into(),
            managed: Some(Box::new(toolgate::policy::managed::ManagedControls {
                disable_bypass_permissions_mode: true,
                allow_user_hooks: false,
                managed_permission_rules_only: true,
                claude_code_minimum_version: "2.1.0".into(),
                ..Default::default()
            })),
            rates: Some(Box::new(toolgate::policy::rates::RateControls {
                rules: vec![
                    toolgate::policy::rates::RateRule {
                        per: toolgate::policy::rates::RateScope::Team,
                        tools: "github:*".into(),
                        calls_per_minute: 600,
                        burst: 50,
                    },
                    toolgate::policy::rates::RateRule {
                        calls_per_minute: 30,
                        burst: 5,
                        ..Default::default()
                    },
                ],
                exceeded: toolgate::policy::rates::RateExceeded::Deny,
            })),
        },
        // the kill switch is on: every call is denied
        examples: serde_json::from_value(serde_json::json!([
            {"name": "the kill switch stops jira", "mcp": "jira:search", "expect": "DENY",
             "reason": "KILL_SWITCH"},
            {"builtin": "Bash", "client": "claude-code", "input": {"command": "git status"},
             "cwd": "/repo", "agent": {"role": "Explore"}, "expect": "DENY"},
            {"shell": "rm x", "user": {"use_yolo_mode": false}, "expect": "DENY",
             "matched_entry": null},
            {"delete_file": "a.txt", "expect": "DENY"}
        ]))
        .unwrap(),
    };
    let yaml = policy_file::to_yaml(&policy);
    let golden = data().join("admin_get.golden");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&golden, &yaml).unwrap();
    }
    assert_eq!(
        yaml,
        std::fs::read_to_string(&golden).unwrap(),
        "admin get's YAML drifted"
    );
    assert_eq!(policy_file::parse_team_policy("t", &yaml).unwrap(), policy);
}

/// Issue 13 item 3: a truncated file is not "manage nothing"; `teams: []` is.
#[test]
fn empty_managed_file_is_an_error_unless_it_says_so() {
    for text in ["", "\n", "# only a comment\n", "{}\n", "---\n", "~\n"] {
        let errors = policy_file::parse_managed_policy("p.yaml", text)
            .expect_err(&format!("{text:?} must be refused"));
        let message = policy_file::format_errors(&errors);
        assert!(message.contains("teams: []"), "{message}");
    }
    for text in [
        "teams: []\n",
        "mcp_servers: []\n",
        "teams: []\nmcp_servers: []\n",
    ] {
        let p = policy_file::parse_managed_policy("p.yaml", text).unwrap();
        assert!(p.teams.is_empty() && p.tool_actions.is_empty());
    }
}

/// Issue 13 item 8: nesting past the limit is refused by a linear scan, before the
/// parser, for both formats; real nesting passes.
#[test]
fn deep_nesting_is_refused_before_parsing() {
    let n = 50_000;
    let deep = [
        format!("teams: {}{}\n", "[".repeat(n), "]".repeat(n)),
        format!("teams: {}\n", "{a: ".repeat(n) + &"}".repeat(n)),
        format!("teams:\n{}x\n", "- ".repeat(n)),
        (0..200)
            .map(|i| format!("{}k{i}:\n", " ".repeat(i)))
            .collect(),
    ];
    for text in &deep {
        let errors = policy_file::parse_managed_policy("p.yaml", text).unwrap_err();
        let message = policy_file::format_errors(&errors);
        assert!(message.contains("nested more than"), "{message}");
        let errors = policy_file::parse_team_policy("t.yaml", text).unwrap_err();
        assert!(policy_file::format_errors(&errors).contains("nested more than"));
    }
    // brackets inside quotes and comments do not count
    let fine = format!(
        "team: acme # {}\nauto_run_controls:\n  allowed: [\"{}\", '{}']\n",
        "[".repeat(100),
        "[".repeat(100),
        "{".repeat(100)
    );
    assert_eq!(policy_file::nesting_depth(&fine), None);
    // nor do they in a block scalar's text, however deep its lines are indented
    let scalar = format!(
        "team: acme\nauto_run_controls:\n  allowed:\n    - |-\n      git {}\n      {}\n    - ls\n",
        "{".repeat(100),
        "[".repeat(100)
    );
    assert_eq!(policy_file::nesting_depth(&scalar), None);
    // but a line back at the level of the mapping holding the scalar is structure
    for text in [
        format!("teams:\n- key: |\n  other: {}\n", "[".repeat(100)),
        format!("a: |\nb: {}\n", "{".repeat(100)),
        format!("a: !tag |\n   {}\n", "[".repeat(100)),
        // a quote inside a flow plain scalar opens no string
        format!("teams: [a'b, {}]\n", "[".repeat(100)),
        format!("a: !t {}\n", "[".repeat(100)),
        format!("a: {{\"k\":' #', b: {}}}\n", "[".repeat(100)),
    ] {
        assert!(policy_file::nesting_depth(&text).is_some(), "{text}");
    }
    let too_big = format!(
        "teams: []\n#{}\n",
        "x".repeat(policy_file::MAX_POLICY_BYTES)
    );
    let errors = policy_file::parse_managed_policy("p.yaml", &too_big).unwrap_err();
    assert!(policy_file::format_errors(&errors).contains("more than the limit"));
}

#[test]
fn left_out_browser_server_ids_mean_the_defaults() {
    let p = policy_file::parse_team_policy(
        "t",
        "team: a\nauto_run_controls: {browser_server_ids: []}\n",
    )
    .unwrap();
    assert_eq!(p.auto_run_controls, AdminControls::default());
}

/// Found by the `policy_yaml` fuzz target: entries holding brackets were accepted
/// quoted, but what `to_yaml` printed for them (a block scalar, a plain scalar) was
/// refused as nested too deep, so `admin get`'s output could not be applied again.
#[test]
fn a_block_scalar_entry_reads_back() {
    // the second: one printed as a plain scalar (`- cargo t{{{…`)
    for entry in [
        format!("git diff\\n{}", "{".repeat(40)),
        format!("cargo t{}- {{est it's", "{".repeat(60)),
    ] {
        let text =
            format!("team: acme\nauto_run_controls:\n  allowed: [\"git status\", \"{entry}\"]\n");
        let policy = policy_file::parse_team_policy("t.yaml", &text).unwrap();
        let yaml = policy_file::to_yaml(&policy);
        let again = policy_file::parse_team_policy("t.yaml", &yaml)
            .unwrap_or_else(|e| panic!("{}\n{yaml}", policy_file::format_errors(&e)));
        assert_eq!(again, policy);
    }
}

/// docs/roles.md's example is a team policy the server accepts as written.
#[test]
fn the_roles_guide_example_is_valid() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/roles.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let blocks: Vec<&str> = text
        .split("```yaml\n")
        .skip(1)
        .filter_map(|b| b.split("```").next())
        .collect();
    assert!(!blocks.is_empty(), "no yaml example in docs/roles.md");
    for block in blocks {
        let policy = toolgate::policy_file::parse_team_policy("docs/roles.md", block)
            .unwrap_or_else(|e| panic!("{}", toolgate::policy_file::format_errors(&e)));
        assert!(
            !policy.auto_run_controls.roles.is_empty(),
            "the example has roles"
        );
    }
}
