//! Every decision that needs approval says what would change the answer under the
//! team's settings, per reason and list mode (`tests/data/advice.json`), through the
//! policy core and through `Evaluate`.

use crate::support;

use serde_json::Value;
use support::*;
use toolgate::policy::{AdminControls, Call, CompiledAdmin, CompiledUser, UserSettings, decide};
use toolgate::proto::v1 as pb;

fn cases() -> Vec<Value> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/advice.json");
    let data: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    data["cases"].as_array().unwrap().clone()
}

fn settings(case: &Value) -> (AdminControls, UserSettings) {
    let admin = match case.get("admin") {
        Some(a) => serde_json::from_value(a.clone()).unwrap(),
        None => AdminControls::default(),
    };
    (admin, serde_json::from_value(case["user"].clone()).unwrap())
}

fn call(v: &Value) -> Call {
    if let Some(m) = v.get("mcp") {
        Call::Mcp {
            server: m["server"].as_str().unwrap().into(),
            tool: m["tool"].as_str().unwrap().into(),
        }
    } else {
        Call::Shell(v["shell"].as_str().unwrap().into())
    }
}

#[test]
fn the_advice_fits_the_reason_and_the_list_mode() {
    let mut failures = Vec::new();
    for case in cases() {
        let name = case["name"].as_str().unwrap();
        let (admin, user) = settings(&case);
        let (admin, user) = (
            CompiledAdmin::compile(&admin).unwrap(),
            CompiledUser::compile(&user).unwrap(),
        );
        let call = call(&case["call"]);
        let d = decide(&admin, &user, &call);
        let message = d.message(&call);
        if d.reason.as_str() != case["reason"] || message != case["message"] {
            failures.push(format!(
                "{name}:\n  got      {} {message:?}\n  expected {} {}",
                d.reason.as_str(),
                case["reason"],
                case["message"]
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[tokio::test]
async fn evaluate_answers_with_the_same_advice() {
    let (server, _dir) = start().await;
    for (i, case) in cases().into_iter().enumerate() {
        let name = case["name"].as_str().unwrap();
        let (admin, user) = settings(&case);
        let team = format!("advice-{i}");
        server
            .admin("operator-token")
            .update_team_admin_settings(pb::UpdateTeamAdminSettingsRequest {
                team_id: team.clone(),
                auto_run_controls: Some(toolgate::proto::convert::controls_to_pb(&admin)),
                expected_revision: None,
            })
            .await
            .unwrap();
        server
            .users("operator-token")
            .update_user_settings(pb::UpdateUserSettingsRequest {
                settings: Some(pb::UserSettings {
                    team_id: team.clone(),
                    user_id: "u".into(),
                    ..toolgate::proto::convert::user_to_pb(&user)
                }),
                expected_revision: None,
                update_mask: None,
            })
            .await
            .unwrap();
        let call = match call(&case["call"]) {
            Call::Mcp { server, tool } => mcp(&server, &tool),
            Call::Shell(line) => pb::ToolCall {
                kind: Some(pb::tool_call::Kind::Shell(line)),
                arguments: None,
            },
            other => panic!("{other:?}"),
        };
        let d = server
            .policy("operator-token")
            .evaluate(pb::EvaluateRequest {
                approval: None,
                team_id: team,
                user_id: "u".into(),
                call: Some(call),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner()
            .decision
            .unwrap();
        assert_eq!(d.message, case["message"].as_str().unwrap(), "{name}");
    }
    server.stop().await;
}
