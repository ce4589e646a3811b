//! The stored shapes of an approval's call and decision: rows as earlier versions
//! wrote them read back, the types write exactly that shape (a proptest against the
//! hand-written encoder they replace), and hostile rows are refused.

use super::*;
use proptest::prelude::*;
use serde_json::{Value, json};

/// The encoder the types replaced, kept as the reference for the stored shape.
fn reference(a: &ApprovalCall) -> Value {
    let mut v = match &a.call {
        Call::Mcp { server, tool } => json!({"kind": "mcp", "server": server, "tool": tool}),
        Call::McpAction {
            server,
            tool,
            action,
        } => json!({"kind": "mcp", "server": server, "tool": tool, "action": action}),
        Call::McpInternal {
            name,
            fallback_server,
        } => json!({"kind": "mcp_internal", "name": name, "fallback_server": fallback_server}),
        Call::Shell(line) => json!({"kind": "shell", "command": line}),
        Call::DeleteFile(path) => json!({"kind": "delete_file", "path": path}),
    };
    if let Some(cwd) = &a.cwd {
        v["cwd"] = cwd.clone().into();
    }
    if let Some(o) = &a.original {
        v["sha256"] = o.sha256.clone().into();
        v["bytes"] = o.bytes.into();
        v["redecidable"] = o.redecidable.into();
    }
    v
}

fn shell(line: &str) -> Call {
    Call::Shell(line.into())
}

/// Rows as every earlier version wrote them: before masking (the call whole), after
/// masking (its digest), and since grants are bound to a directory (`cwd`).
#[test]
fn calls_stored_by_earlier_versions_read_back() {
    let cases = [
        (
            r#"{"kind":"mcp","server":"github","tool":"create_issue"}"#,
            Call::Mcp {
                server: "github".into(),
                tool: "create_issue".into(),
            },
            None,
            None,
        ),
        (
            r#"{"kind":"mcp","server":"pw","tool":"interact","action":"navigate"}"#,
            Call::McpAction {
                server: "pw".into(),
                tool: "interact".into(),
                action: "navigate".into(),
            },
            None,
            None,
        ),
        (
            r#"{"kind":"mcp_internal","name":"mcp__gh__x","fallback_server":"builtin"}"#,
            Call::McpInternal {
                name: "mcp__gh__x".into(),
                fallback_server: "builtin".into(),
            },
            None,
            None,
        ),
        (
            r#"{"kind":"shell","command":"make"}"#,
            shell("make"),
            None,
            None,
        ),
        (
            r#"{"kind":"delete_file","path":"a.txt","sha256":"ab","bytes":5,"redecidable":true}"#,
            Call::DeleteFile("a.txt".into()),
            None,
            Some(("ab", 5, true)),
        ),
        (
            r#"{"kind":"shell","command":"curl -H ***","cwd":"/w","sha256":"cd","bytes":40,"redecidable":false}"#,
            shell("curl -H ***"),
            Some("/w"),
            Some(("cd", 40, false)),
        ),
    ];
    for (text, call, cwd, original) in cases {
        let read: ApprovalCall =
            serde_json::from_str(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        let want = ApprovalCall {
            call,
            cwd: cwd.map(str::to_owned),
            original: original.map(|(sha256, bytes, redecidable)| Original {
                sha256: sha256.into(),
                bytes,
                redecidable,
            }),
        };
        assert_eq!(read, want, "{text}");
        assert_eq!(
            serde_json::to_string(&read).unwrap(),
            text,
            "written back as it was"
        );
    }
}

#[test]
fn decisions_stored_by_earlier_versions_read_back() {
    let text = r#"{"outcome":"ASK","reason":"NOT_ALLOWLISTED","message":"ask: github:create_issue","matched_entry":null,"revision":7,"candidates":[{"server":"github","tool":"create_issue"}],"command_candidates":[]}"#;
    let read: ApprovalDecision = serde_json::from_str(text).unwrap();
    assert_eq!(
        read,
        ApprovalDecision {
            outcome: Outcome::Ask,
            reason: Reason::NotAllowlisted,
            message: "ask: github:create_issue".into(),
            matched_entry: None,
            revision: 7,
            candidates: vec![McpCandidate {
                server: "github".into(),
                tool: "create_issue".into(),
            }],
            command_candidates: vec![],
        }
    );
    assert_eq!(serde_json::to_string(&read).unwrap(), text);
    let shell = r#"{"outcome":"ASK","reason":"COMMAND_NOT_ALLOWLISTED","message":"m","matched_entry":"git","revision":0,"candidates":[],"command_candidates":["npm test","make"]}"#;
    let read: ApprovalDecision = serde_json::from_str(shell).unwrap();
    assert_eq!(read.command_candidates, ["npm test", "make"]);
    assert_eq!(read.matched_entry.as_deref(), Some("git"));
    assert_eq!(serde_json::to_string(&read).unwrap(), shell);
}

/// Rows no version wrote: each refused, the error naming what is wrong.
#[test]
fn hostile_calls_are_refused() {
    let cases = [
        ("", "EOF"),
        ("null", "invalid type"),
        ("[]", "invalid type"),
        (r#"{"server":"a","tool":"b"}"#, "kind"),
        (r#"{"kind":"exec","command":"x"}"#, "unknown variant"),
        (
            r#"{"kind":"MCP","server":"a","tool":"b"}"#,
            "unknown variant",
        ),
        (r#"{"kind":"mcp","server":"a"}"#, "tool"),
        (r#"{"kind":"mcp","server":1,"tool":"b"}"#, "invalid type"),
        (r#"{"kind":"shell","path":"x"}"#, "command"),
        (r#"{"kind":"delete_file","command":"x"}"#, "path"),
        (r#"{"kind":"mcp_internal","name":"x"}"#, "fallback_server"),
        (r#"{"kind":"shell","command":"x","sha256":"ab"}"#, "sha256"),
        (
            r#"{"kind":"shell","command":"x","sha256":"ab","bytes":1}"#,
            "sha256",
        ),
        (
            r#"{"kind":"shell","command":"x","redecidable":true}"#,
            "redecidable",
        ),
        (
            r#"{"kind":"shell","command":"x","sha256":"ab","bytes":-1,"redecidable":true}"#,
            "invalid value",
        ),
        (
            r#"{"kind":"shell","command":"x","sha256":"ab","bytes":1,"redecidable":"yes"}"#,
            "invalid type",
        ),
        (r#"{"kind":"shell","command":"x","cwd":7}"#, "invalid type"),
    ];
    for (text, names) in cases {
        let e = serde_json::from_str::<ApprovalCall>(text)
            .expect_err(&format!("{text} must be refused"))
            .to_string();
        assert!(e.contains(names), "{text}: {e} does not say {names:?}");
    }
}

#[test]
fn hostile_decisions_are_refused() {
    let full = json!({"outcome": "ASK", "reason": "NOT_ALLOWLISTED", "message": "m",
        "matched_entry": null, "revision": 1, "candidates": [], "command_candidates": []});
    assert!(serde_json::from_value::<ApprovalDecision>(full.clone()).is_ok());
    let cases: [(&str, Value, &str); 9] = [
        ("reason", json!("NO_SUCH_REASON"), "unknown variant"),
        ("reason", json!("not_allowlisted"), "unknown variant"),
        ("reason", Value::Null, "invalid type"),
        ("outcome", json!("MAYBE"), "unknown variant"),
        ("revision", json!(-1), "invalid value"),
        ("revision", json!("7"), "invalid type"),
        ("candidates", json!([{"server": "a"}]), "tool"),
        ("candidates", json!(["a:b"]), "invalid type"),
        ("command_candidates", json!([1]), "invalid type"),
    ];
    for (key, value, names) in cases {
        let mut v = full.clone();
        v[key] = value;
        let e = serde_json::from_value::<ApprovalDecision>(v.clone())
            .expect_err(&format!("{v} must be refused"))
            .to_string();
        assert!(e.contains(names), "{v}: {e} does not say {names:?}");
    }
    for key in [
        "outcome",
        "reason",
        "message",
        "revision",
        "candidates",
        "command_candidates",
    ] {
        let mut v = full.clone();
        v.as_object_mut().unwrap().remove(key);
        let e = serde_json::from_value::<ApprovalDecision>(v)
            .expect_err(&format!("without {key} must be refused"))
            .to_string();
        assert!(e.contains(key), "{key}: {e}");
    }
}

fn text() -> impl Strategy<Value = String> {
    // quotes, backslashes, controls and non-ASCII: the JSON escaping must not differ
    proptest::string::string_regex("[a-z\"\\\\\u{1}\n é🙂*]{0,12}").unwrap()
}

fn any_call() -> impl Strategy<Value = Call> {
    prop_oneof![
        (text(), text()).prop_map(|(server, tool)| Call::Mcp { server, tool }),
        (text(), text(), text()).prop_map(|(server, tool, action)| Call::McpAction {
            server,
            tool,
            action
        }),
        (text(), text()).prop_map(|(name, fallback_server)| Call::McpInternal {
            name,
            fallback_server
        }),
        text().prop_map(Call::Shell),
        text().prop_map(Call::DeleteFile),
    ]
}

fn any_approval_call() -> impl Strategy<Value = ApprovalCall> {
    let original =
        (text(), any::<u64>(), any::<bool>()).prop_map(|(sha256, bytes, redecidable)| Original {
            sha256,
            bytes,
            redecidable,
        });
    (
        any_call(),
        proptest::option::of(text()),
        proptest::option::of(original),
    )
        .prop_map(|(call, cwd, original)| ApprovalCall {
            call,
            cwd,
            original,
        })
}

proptest! {
    /// The type writes the very text the hand-written encoder wrote, and reads it back.
    #[test]
    fn a_call_is_stored_as_before_and_reads_back(a in any_approval_call()) {
        let text = serde_json::to_string(&a).unwrap();
        prop_assert_eq!(&text, &reference(&a).to_string());
        prop_assert_eq!(serde_json::from_str::<ApprovalCall>(&text).unwrap(), a);
    }
}
