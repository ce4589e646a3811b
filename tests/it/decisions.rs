//! The decision vectors against the policy core, table-driven: the shared vectors
//! (`tests/data/decisions.json`, copied from the source documents' vectors) and
//! toolgate's own (`tests/data/decisions_extra.json`), and the integrity vectors
//! (`tests/data/integrity.json`: DENY that cannot be softened, aliases, shell
//! spellings; the server runs them too, in `tests/it/server.rs`).

use serde_json::Value;
use toolgate::policy::{
    AdminControls, Call, Candidate, CompiledAdmin, CompiledUser, Outcome, UserSettings, decide,
    explain,
};

pub(crate) fn call(v: &Value) -> Call {
    let s = |v: &Value, k: &str| v[k].as_str().unwrap_or_default().to_owned();
    if let Some(m) = v.get("mcp") {
        Call::Mcp {
            server: s(m, "server"),
            tool: s(m, "tool"),
        }
    } else if let Some(m) = v.get("mcp_internal") {
        Call::McpInternal {
            name: s(m, "name"),
            fallback_server: s(m, "fallback_server"),
        }
    } else if let Some(line) = v.get("shell") {
        Call::Shell(line.as_str().unwrap().to_owned())
    } else if let Some(path) = v.get("delete_file") {
        Call::DeleteFile(path.as_str().unwrap().to_owned())
    } else {
        panic!("unknown call {v}")
    }
}

fn run(file: &str, text: &str) -> usize {
    let data: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{file}: {e}"));
    let cases = data["cases"].as_array().unwrap();
    let mut failures = Vec::new();
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let admin: AdminControls = if case["admin"].is_null() {
            AdminControls::default()
        } else {
            serde_json::from_value(case["admin"].clone())
                .unwrap_or_else(|e| panic!("{name}: admin: {e}"))
        };
        let user: UserSettings = serde_json::from_value(case["user"].clone())
            .unwrap_or_else(|e| panic!("{name}: user: {e}"));
        let admin = CompiledAdmin::compile(&admin).unwrap_or_else(|e| panic!("{name}: {e}"));
        let user = CompiledUser::compile(&user).unwrap_or_else(|e| panic!("{name}: {e}"));
        let call = call(&case["call"]);
        let d = decide(&admin, &user, &call);
        let expect = &case["expect"];
        let mut problems = Vec::new();
        let outcome = serde_json::to_value(d.outcome).unwrap();
        if outcome != expect["outcome"] {
            problems.push(format!("outcome {outcome} != {}", expect["outcome"]));
        }
        // a case may leave the reason open (only the outcome is promised)
        if expect.get("reason").is_some() && d.reason.as_str() != expect["reason"] {
            problems.push(format!(
                "reason {} != {}",
                d.reason.as_str(),
                expect["reason"]
            ));
        }
        if d.need_approval() != (d.outcome != Outcome::Allow) {
            problems.push("need_approval disagrees with the outcome".into());
        }
        if let Some(m) = expect.get("matched_entry")
            && d.matched_entry.as_deref() != m.as_str()
        {
            problems.push(format!("matched_entry {:?} != {m}", d.matched_entry));
        }
        let mcp: Vec<Value> = d
            .candidates
            .iter()
            .filter_map(|c| match c {
                Candidate::Mcp { server, tool } => {
                    Some(serde_json::json!({"server": server, "tool": tool}))
                }
                Candidate::Command(_) => None,
            })
            .collect();
        if let Some(c) = expect.get("candidates")
            && Value::Array(mcp.clone()) != *c
        {
            problems.push(format!("candidates {mcp:?} != {c}"));
        }
        let commands: Vec<Value> = d
            .candidates
            .iter()
            .filter_map(|c| match c {
                Candidate::Command(text) => Some(Value::String(text.clone())),
                Candidate::Mcp { .. } => None,
            })
            .collect();
        if let Some(c) = expect.get("command_candidates")
            && Value::Array(commands.clone()) != *c
        {
            problems.push(format!("command candidates {commands:?} != {c}"));
        }
        // the explained decision is the same decision, with its checks listed
        let explained = explain(&admin, &user, &call);
        if (
            explained.outcome,
            explained.reason,
            &explained.matched_entry,
        ) != (d.outcome, d.reason, &d.matched_entry)
        {
            problems.push("explain() decided differently".into());
        }
        if !explained
            .explanation
            .iter()
            .any(|c| c.name == "kill_switch")
        {
            problems.push(format!(
                "explanation lacks the kill switch check: {:?}",
                explained.explanation
            ));
        }
        if d.message(&call).is_empty() {
            problems.push("empty message".into());
        }
        if !problems.is_empty() {
            failures.push(format!("{name}: {}", problems.join("; ")));
        }
    }
    assert!(failures.is_empty(), "{file}:\n  {}", failures.join("\n  "));
    cases.len()
}

#[test]
fn shared_vectors() {
    let n = run("decisions.json", include_str!("../data/decisions.json"));
    assert_eq!(n, 28, "every shared vector ran");
}

#[test]
fn toolgate_vectors() {
    let n = run(
        "decisions_extra.json",
        include_str!("../data/decisions_extra.json"),
    );
    assert!(n >= 40);
}

#[test]
fn integrity_vectors() {
    let n = run("integrity.json", include_str!("../data/integrity.json"));
    assert_eq!(n, 17, "every integrity vector ran");
}
