//! The shell bypass table (`tests/data/shell_bypass.json`): spellings, quoting,
//! escapes, wrappers, nesting, newlines and lookalikes that must not get a blocked
//! or unlisted command auto-run, and plain lines that must still be allowed.

use serde_json::Value;
use std::collections::HashMap;
use toolgate::policy::{
    AdminControls, Call, CompiledAdmin, CompiledUser, Outcome, Reason, ToolActionLists,
    UserSettings, decide_at,
};

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect()
}

/// The admin controls of a policy of the table: its own `allowed` (and
/// `mcp_tool_allowlist`, when it says), the table's `blocked` and `denied`.
fn admin_for(data: &Value, policy: &Value) -> CompiledAdmin {
    let field = |name: &str| {
        if policy.get(name).is_some() {
            strings(&policy[name])
        } else {
            strings(&data[name])
        }
    };
    CompiledAdmin::compile(&AdminControls {
        enabled: true,
        allowed: field("allowed"),
        blocked: strings(&data["blocked"]),
        denied: strings(&data["denied"]),
        mcp_tool_allowlist: field("mcp_tool_allowlist"),
        ..AdminControls::default()
    })
    .unwrap()
}

#[test]
fn no_bypass_in_the_table() {
    let data: Value = serde_json::from_str(include_str!("../data/shell_bypass.json"))
        .expect("shell_bypass.json parses");
    let blocked = strings(&data["blocked"]);
    let denied = strings(&data["denied"]);
    // admin control, auto-run on: the allowed list is the policy's (the table's own
    // unless the row names another), and file writes may auto-run where the policy
    // lists builtin:write_file (so a shell write inside the directory may too)
    let team = admin_for(&data, &Value::Null);
    let policies: HashMap<&str, CompiledAdmin> = data["policies"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(name, policy)| (name.as_str(), admin_for(&data, policy)))
        .collect();
    let user = CompiledUser::compile(&UserSettings {
        use_yolo_mode: true,
        ..UserSettings::default()
    })
    .unwrap();
    // run-everything: only denied and blocked prefixes and opaque commands still ask
    let no_admin = CompiledAdmin::compile(&AdminControls {
        denied,
        ..AdminControls::default()
    })
    .unwrap();
    let everything = CompiledUser::compile(&UserSettings {
        use_yolo_mode: true,
        yolo_enable_run_everything: true,
        command_denylist: blocked,
        ..UserSettings::default()
    })
    .unwrap();
    let files = ToolActionLists::default();
    let cases = data["cases"].as_array().unwrap();
    let mut failures = Vec::new();
    let mut counts = [0; 4];
    for case in cases {
        let line = case["line"].as_str().unwrap();
        let what = case["what"].as_str().unwrap_or_default();
        assert!(
            case["effect"].as_str().is_some_and(|e| !e.is_empty()),
            "{line:?}: every row names the effect it exercises"
        );
        let admin = match case["policy"].as_str() {
            Some(name) => policies
                .get(name)
                .unwrap_or_else(|| panic!("{line:?}: no policy {name}")),
            None => &team,
        };
        let call = Call::Shell(line.to_owned());
        let cwd = case["cwd"].as_str();
        let controlled = decide_at(&files, admin, &user, &call, cwd);
        let free = decide_at(&files, &no_admin, &everything, &call, cwd);
        let got = |d: &toolgate::policy::Decision| format!("{:?} {:?}", d.outcome, d.reason);
        let ok = match case["kind"].as_str().unwrap() {
            "blocked" => {
                counts[0] += 1;
                controlled.reason == Reason::CommandBlocked
                    && free.reason == Reason::CommandBlocked
                    && controlled.outcome == Outcome::Ask
                    && free.outcome == Outcome::Ask
            }
            "unlisted" => {
                counts[1] += 1;
                controlled.outcome != Outcome::Allow
            }
            "allowed" => {
                counts[2] += 1;
                (controlled.outcome, controlled.reason) == (Outcome::Allow, Reason::CommandAllowed)
            }
            "denied" => {
                counts[3] += 1;
                [&controlled, &free]
                    .iter()
                    .all(|d| (d.outcome, d.reason) == (Outcome::Deny, Reason::CommandDenied))
            }
            other => panic!("{line:?}: unknown kind {other}"),
        };
        if !ok {
            failures.push(format!(
                "{} {line:?} ({what}): admin-controlled {} [{}], run-everything {} [{}]",
                case["kind"],
                got(&controlled),
                controlled.message(&call),
                got(&free),
                free.message(&call)
            ));
        }
    }
    assert!(failures.is_empty(), "\n  {}", failures.join("\n  "));
    assert!(cases.len() >= 300, "at least 300 rows");
    assert!(counts[0] + counts[1] >= 200, "at least 200 bypass attempts");
    assert!(counts[2] >= 50, "and lines that stay allowed");
    assert!(counts[3] >= 10, "and lines a denied prefix denies");
}
