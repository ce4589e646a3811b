//! The shell bypass table (`tests/data/shell_bypass.json`): spellings, quoting,
//! escapes, wrappers, nesting, newlines and lookalikes that must not get a blocked
//! or unlisted command auto-run, and plain lines that must still be allowed.

use serde_json::Value;
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

#[test]
fn no_bypass_in_the_table() {
    let data: Value = serde_json::from_str(include_str!("../data/shell_bypass.json"))
        .expect("shell_bypass.json parses");
    let (allowed, blocked) = (strings(&data["allowed"]), strings(&data["blocked"]));
    let denied = strings(&data["denied"]);
    // admin control, auto-run on: the allowed list is the admin's, and file writes
    // may auto-run (so a shell write inside the directory may too)
    let admin = CompiledAdmin::compile(&AdminControls {
        enabled: true,
        allowed,
        blocked: blocked.clone(),
        denied: denied.clone(),
        mcp_tool_allowlist: strings(&data["mcp_tool_allowlist"]),
        ..AdminControls::default()
    })
    .unwrap();
    let user = CompiledUser::compile(&UserSettings {
        use_yolo_mode: true,
        ..UserSettings::default()
    })
    .unwrap();
    // run-everything: only blocked prefixes and opaque commands still ask
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
        let call = Call::Shell(line.to_owned());
        let cwd = case["cwd"].as_str();
        let controlled = decide_at(&files, &admin, &user, &call, cwd);
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
