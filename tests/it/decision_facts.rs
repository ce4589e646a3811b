//! What a decision says beyond its outcome (`tests/data/decision_facts.json`): an
//! ALLOW names the programs whose effects are unknown and the paths that must stay
//! inside the working directory, and the agent's own write tools are held to the
//! protected places and the outside-directory rule on the server. Each row is
//! decided by the policy core and through `Evaluate` on a real server.

use crate::support::{self, TEAM, pb_struct};
use serde_json::Value;
use toolgate::policy::{
    AdminControls, BUILTIN_SERVER, Call, CompiledAdmin, CompiledUser, Site, ToolActionLists,
    UserSettings, decide_at,
};
use toolgate::proto::v1 as pb;

fn table() -> Value {
    serde_json::from_str(include_str!("../data/decision_facts.json"))
        .expect("decision_facts.json parses")
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| a.iter().map(|s| s.as_str().unwrap().to_owned()).collect())
        .unwrap_or_default()
}

/// A row's tool input, with `{"repeat": TEXT, "times": N}` written out.
fn expand(v: &Value) -> Value {
    match v {
        Value::Object(m) if m.contains_key("repeat") => {
            let times = m["times"].as_u64().unwrap() as usize;
            Value::String(m["repeat"].as_str().unwrap().repeat(times))
        }
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), expand(v))).collect()),
        Value::Array(a) => Value::Array(a.iter().map(expand).collect()),
        other => other.clone(),
    }
}

fn call_of(case: &Value) -> Call {
    let call = &case["call"];
    match (call.get("shell"), call.get("builtin")) {
        (Some(line), _) => Call::Shell(line.as_str().unwrap().to_owned()),
        (_, Some(tool)) => Call::Mcp {
            server: BUILTIN_SERVER.to_owned(),
            tool: tool.as_str().unwrap().to_owned(),
        },
        _ => panic!("{}: a call is shell or builtin", case["name"]),
    }
}

/// What a decision said, in the table's terms.
struct Said {
    outcome: String,
    reason: String,
    effects_unknown: Vec<String>,
    stays_inside: Vec<String>,
    message: String,
}

/// The differences between what was said and what the row expects.
fn problems(case: &Value, said: &Said) -> Vec<String> {
    let expect = &case["expect"];
    let mut out = Vec::new();
    if said.outcome != expect["outcome"].as_str().unwrap() {
        out.push(format!("outcome {} != {}", said.outcome, expect["outcome"]));
    }
    if let Some(reason) = expect["reason"].as_str()
        && said.reason != reason
    {
        out.push(format!("reason {} != {reason}", said.reason));
    }
    if said.effects_unknown != strings(&expect["effects_unknown"]) {
        out.push(format!("effects_unknown {:?}", said.effects_unknown));
    }
    if said.stays_inside != strings(&expect["stays_inside"]) {
        out.push(format!("stays_inside {:?}", said.stays_inside));
    }
    if let Some(phrase) = expect["message_contains"].as_str()
        && !said.message.contains(phrase)
    {
        out.push(format!("message lacks {phrase:?}"));
    }
    out
}

fn report(failures: Vec<String>) {
    assert!(failures.is_empty(), "\n  {}", failures.join("\n  "));
}

#[test]
fn the_core_says_what_an_allow_rests_on() {
    let data = table();
    let admin = CompiledAdmin::compile(&AdminControls {
        enabled: true,
        allowed: strings(&data["allowed"]),
        blocked: strings(&data["blocked"]),
        mcp_tool_allowlist: strings(&data["mcp_tool_allowlist"]),
        ..AdminControls::default()
    })
    .unwrap();
    let user = CompiledUser::compile(&UserSettings {
        use_yolo_mode: true,
        ..UserSettings::default()
    })
    .unwrap();
    let files = ToolActionLists::default();
    let mut failures = Vec::new();
    let cases = data["cases"].as_array().unwrap();
    for case in cases {
        let call = call_of(case);
        let input = case.get("tool_input").map(expand);
        let site = Site {
            cwd: case["cwd"].as_str(),
            tool_input: input.as_ref(),
        };
        let d = decide_at(&files, &admin, &user, &call, site);
        let said = Said {
            outcome: serde_json::to_value(d.outcome)
                .unwrap()
                .as_str()
                .unwrap()
                .to_owned(),
            reason: d.reason.as_str().to_owned(),
            effects_unknown: d.unchecked.effects_unknown.clone(),
            stays_inside: d.unchecked.stays_inside.clone(),
            message: d.message(&call),
        };
        let wrong = problems(case, &said);
        if !wrong.is_empty() {
            failures.push(format!(
                "{}: {} [{}]",
                case["name"],
                wrong.join("; "),
                said.message
            ));
        }
    }
    assert!(cases.len() >= 40, "at least 40 rows");
    report(failures);
}

#[tokio::test]
async fn evaluate_says_what_an_allow_rests_on() {
    let data = table();
    let (server, _dir) = support::start().await;
    server
        .set_controls(pb::AutoRunControls {
            enabled: true,
            allowed: strings(&data["allowed"]),
            blocked: strings(&data["blocked"]),
            mcp_tool_allowlist: strings(&data["mcp_tool_allowlist"]),
            ..Default::default()
        })
        .await;
    server.yolo("alice").await;
    let mut client = server.policy("alice-token");
    let mut failures = Vec::new();
    for case in data["cases"].as_array().unwrap() {
        let kind = match call_of(case) {
            Call::Shell(line) => pb::tool_call::Kind::Shell(line),
            Call::Mcp { server, tool } => pb::tool_call::Kind::Mcp(pb::McpCall {
                server,
                tool,
                action: String::new(),
            }),
            other => panic!("{other:?}"),
        };
        let arguments = pb::CallArguments {
            cwd: case["cwd"].as_str().unwrap_or_default().to_owned(),
            tool_input: case.get("tool_input").map(|i| pb_struct(&expand(i))),
            ..Default::default()
        };
        let d = client
            .evaluate(pb::EvaluateRequest {
                team_id: TEAM.into(),
                user_id: "alice".into(),
                call: Some(pb::ToolCall {
                    kind: Some(kind),
                    arguments: Some(arguments),
                }),
                explain: false,
                agent: None,
                client: String::new(),
                approval: None,
                tool_use_id: String::new(),
            })
            .await
            .unwrap_or_else(|e| panic!("{}: evaluate: {e}", case["name"]))
            .into_inner()
            .decision
            .expect("a decision");
        let name = |n: &str, prefix: &str| n.strip_prefix(prefix).unwrap_or(n).to_owned();
        let said = Said {
            outcome: name(d.outcome().as_str_name(), "OUTCOME_"),
            reason: name(d.reason().as_str_name(), "REASON_"),
            effects_unknown: d.effects_unknown.clone(),
            stays_inside: d.paths_stay_inside.clone(),
            message: d.message.clone(),
        };
        let wrong = problems(case, &said);
        if !wrong.is_empty() {
            failures.push(format!(
                "{}: {} [{}]",
                case["name"],
                wrong.join("; "),
                said.message
            ));
        }
    }
    report(failures);
    server.stop().await;
}

#[tokio::test]
async fn writing_a_prefix_of_unknown_effects_is_warned_about() {
    let (server, _dir) = support::start().await;
    let controls = pb::AutoRunControls {
        enabled: true,
        allowed: ["ls", "frobnicate --all", "python3", "git status"]
            .map(String::from)
            .to_vec(),
        ..Default::default()
    };
    let mut admin = server.admin("admin-token");
    let checked = admin
        .validate_team_admin_settings(pb::ValidateTeamAdminSettingsRequest {
            team_id: TEAM.into(),
            auto_run_controls: Some(controls.clone()),
            expected_revision: None,
        })
        .await
        .expect("validate")
        .into_inner();
    let written = admin
        .update_team_admin_settings(pb::UpdateTeamAdminSettingsRequest {
            team_id: TEAM.into(),
            auto_run_controls: Some(controls),
            expected_revision: None,
        })
        .await
        .expect("update")
        .into_inner();
    for warnings in [&checked.warnings, &written.warnings] {
        let fields: Vec<&str> = warnings.iter().map(|w| w.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "auto_run_controls.allowed[1]",
                "auto_run_controls.allowed[2]"
            ]
        );
        assert!(
            warnings[0].message.contains("effects are unknown"),
            "{warnings:?}"
        );
    }
    server.stop().await;
}
