//! The shell bypass table (`tests/data/shell_bypass.json`): spellings, quoting,
//! escapes, wrappers, nesting, newlines and lookalikes that must not get a blocked
//! or unlisted command auto-run, and plain lines that must still be allowed.

use serde_json::Value;
use toolgate::policy::{
    AdminControls, Call, CompiledAdmin, CompiledUser, Outcome, Reason, UserSettings, decide,
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
    // admin control, auto-run on: the allowed list is the admin's
    let admin = CompiledAdmin::compile(&AdminControls {
        enabled: true,
        allowed,
        blocked: blocked.clone(),
        ..AdminControls::default()
    })
    .unwrap();
    let user = CompiledUser::compile(&UserSettings {
        use_yolo_mode: true,
        ..UserSettings::default()
    })
    .unwrap();
    // run-everything: only blocked prefixes and opaque commands still ask
    let no_admin = CompiledAdmin::compile(&AdminControls::default()).unwrap();
    let everything = CompiledUser::compile(&UserSettings {
        use_yolo_mode: true,
        yolo_enable_run_everything: true,
        command_denylist: blocked,
        ..UserSettings::default()
    })
    .unwrap();
    let cases = data["cases"].as_array().unwrap();
    let mut failures = Vec::new();
    let mut counts = [0; 3];
    for case in cases {
        let line = case["line"].as_str().unwrap();
        let what = case["what"].as_str().unwrap_or_default();
        let call = Call::Shell(line.to_owned());
        let controlled = decide(&admin, &user, &call);
        let free = decide(&no_admin, &everything, &call);
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
            other => panic!("{line:?}: unknown kind {other}"),
        };
        if !ok {
            failures.push(format!(
                "{} {line:?} ({what}): admin-controlled {}, run-everything {}",
                case["kind"],
                got(&controlled),
                got(&free)
            ));
        }
    }
    assert!(failures.is_empty(), "\n  {}", failures.join("\n  "));
    assert!(counts[0] + counts[1] >= 60, "at least 60 bypass attempts");
    assert!(counts[2] >= 3, "and lines that stay allowed");
}
