//! The hooks' pure half on the clients' payloads (tests/data/hooks/payloads.json):
//! each payload becomes the expected call (every client's shell tools as shells,
//! unknown tools asking, seed 000 actions, Cursor's server names by trust, the working
//! directory), and each decision the expected answer.

use serde_json::Value;
use std::path::Path;
use toolgate::hook::{self, Client, McpDirectory, Options, Trust, Verdict};
use toolgate::policy::{Call, Outcome};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/hooks");

fn expected_call(v: &Value) -> Call {
    if let Some(line) = v["shell"].as_str() {
        return Call::Shell(line.into());
    }
    if let Some(parts) = v["action"].as_array() {
        let part = |i: usize| parts[i].as_str().unwrap().to_owned();
        return Call::McpAction {
            server: part(0),
            tool: part(1),
            action: part(2),
        };
    }
    if let Some(name) = v["internal"].as_str() {
        return Call::McpInternal {
            name: name.into(),
            fallback_server: String::new(),
        };
    }
    let (server, tool) = v["mcp"].as_str().unwrap().split_once(':').unwrap();
    Call::Mcp {
        server: server.into(),
        tool: tool.into(),
    }
}

#[test]
fn payloads_map_to_calls() {
    let table: Vec<Value> = serde_json::from_str(
        &std::fs::read_to_string(Path::new(DATA).join("payloads.json")).unwrap(),
    )
    .unwrap();
    for case in &table {
        let client = Client::from_name(case["client"].as_str().unwrap()).unwrap();
        let input = match case["payload"].as_str() {
            Some(file) => std::fs::read(Path::new(DATA).join(file)).unwrap(),
            None => case["stdin"].to_string().into_bytes(),
        };
        let mut directory = McpDirectory::default();
        if case["mcp_json"].is_object() {
            directory.add_mcp_json(&case["mcp_json"].to_string());
        }
        if case["workspace_mcp_json"].is_object() {
            directory.add_mcp_json_as(&case["workspace_mcp_json"].to_string(), Trust::Workspace);
        }
        if let Some(pairs) = case["mapping"].as_object() {
            let pairs: Vec<(String, String)> = pairs
                .iter()
                .map(|(at, name)| (at.clone(), name.as_str().unwrap().to_owned()))
                .collect();
            directory.add_mapping(&pairs);
        }
        let parsed = hook::parse(client, &input, &directory);
        match case["error"].as_str() {
            Some(field) => {
                let e = parsed.expect_err(&case.to_string());
                assert!(e.to_string().contains(field), "{case}: {e}");
            }
            None => {
                let p = parsed.unwrap_or_else(|e| panic!("{case}: {e}"));
                assert_eq!(p.call, expected_call(&case["call"]), "{case}");
                assert_eq!(
                    p.note.is_some(),
                    case["note"] == true,
                    "{case}: {:?}",
                    p.note
                );
                let also: Vec<Call> = case["also"]
                    .as_array()
                    .map(|a| a.iter().map(expected_call).collect())
                    .unwrap_or_default();
                assert_eq!(p.also, also, "{case}");
                if let Some(cwd) = case.get("cwd") {
                    assert_eq!(p.args.cwd.as_deref(), cwd.as_str(), "{case}");
                }
            }
        }
    }
}

#[test]
fn oversized_and_malformed_input_is_refused() {
    let big = vec![b' '; hook::MAX_INPUT_BYTES + 1];
    for &client in Client::ALL {
        assert_eq!(
            hook::parse(client, &big, &McpDirectory::default()),
            Err(hook::HookError::TooLarge)
        );
        assert!(hook::parse(client, b"\"text\"", &McpDirectory::default()).is_err());
    }
}

#[test]
fn every_outcome_has_an_answer_and_every_failure_blocks() {
    let verdict = |outcome| Verdict {
        outcome,
        reason: "R".into(),
        message: "m".into(),
        revision: 1,
    };
    let o = Options::default();
    for &client in Client::ALL {
        for outcome in [Outcome::Allow, Outcome::Ask, Outcome::Deny] {
            let r = hook::reply(client, &verdict(outcome), None, &o);
            assert_eq!(r.exit, 0);
            if !r.stdout.is_empty() {
                serde_json::from_str::<Value>(&r.stdout).expect("one JSON document");
            }
        }
        let deny = hook::reply(client, &verdict(Outcome::Deny), None, &o);
        assert!(deny.stdout.contains("deny"), "{client:?}: {deny:?}");
        let failed = hook::failure(client, "boom", &o);
        assert_eq!(failed.exit, 2, "{client:?}");
        assert!(failed.stderr.contains("boom"));
        let open = hook::failure(
            client,
            "boom",
            &Options {
                fail_open: true,
                ..o
            },
        );
        assert_eq!(open.exit, 0);
        assert!(!open.stdout.contains("deny"));
    }
    // Codex cannot ask: ASK is a denial unless deferred
    let ask = hook::reply(Client::Codex, &verdict(Outcome::Ask), None, &o);
    assert!(ask.stdout.contains("\"deny\"") && ask.stdout.contains("needs approval"));
    // --no-grant: ALLOW is no opinion
    let ng = Options {
        no_grant: true,
        ..o
    };
    assert_eq!(
        hook::reply(Client::ClaudeCode, &verdict(Outcome::Allow), None, &ng).stdout,
        ""
    );
}
