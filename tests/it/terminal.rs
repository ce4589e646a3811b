//! Control characters never reach a terminal: calls whose text carries each escape
//! class an attacker would plant (clear screen, cursor up and erase, a window title,
//! a clipboard write, a bidirectional override) are listed by `toolgate decisions
//! list` with the characters written out, and its JSON output keeps them exact.

use crate::support::*;

use std::time::Duration;
use toolgate::proto::v1 as pb;

const DEADLINE: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread")]
async fn decisions_list_prints_control_characters_as_text() {
    let (server, _dir) = start().await;
    let table: &[(&str, &str, &str)] = &[
        (
            "clear screen",
            "echo a\u{1b}[2J\u{1b}[H",
            "echo a\\x1b[2J\\x1b[H",
        ),
        (
            "cursor up and erase",
            "rm -rf ~\u{1b}[1A\u{1b}[2KALLOW ok",
            "rm -rf ~\\x1b[1A\\x1b[2KALLOW ok",
        ),
        (
            "window title",
            "echo \u{1b}]0;pwned\u{7}",
            "echo \\x1b]0;pwned\\x07",
        ),
        (
            "clipboard write",
            "echo \u{1b}]52;c;cm0gLXJmIH4=\u{7}",
            "echo \\x1b]52;c;cm0gLXJmIH4=\\x07",
        ),
        (
            "bidi override",
            "cat safe\u{202e}txt.sh",
            "cat safe\\u{202e}txt.sh",
        ),
    ];
    let mut watch = server
        .decisions("admin-token")
        .watch_decisions(pb::WatchDecisionsRequest {
            filter: Some(pb::DecisionFilter {
                team_id: TEAM.into(),
                ..Default::default()
            }),
        })
        .await
        .unwrap()
        .into_inner();
    for (_, raw, _) in table {
        server
            .policy("alice-token")
            .evaluate(pb::EvaluateRequest {
                team_id: TEAM.into(),
                user_id: "alice".into(),
                call: Some(pb::ToolCall {
                    kind: Some(pb::tool_call::Kind::Shell((*raw).into())),
                    arguments: None,
                }),
                client: "claude-code".into(),
                ..Default::default()
            })
            .await
            .unwrap();
    }
    tokio::time::timeout(DEADLINE, async {
        for _ in table {
            watch.message().await.unwrap().expect("a record");
        }
    })
    .await
    .expect("every call recorded in time");

    let list = |json: bool| {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolgate"));
        for (key, _) in std::env::vars().filter(|(k, _)| k.starts_with("TOOLGATE_")) {
            cmd.env_remove(key);
        }
        cmd.args([
            "decisions",
            "list",
            "--team",
            TEAM,
            "--token",
            "admin-token",
        ])
        .arg("--server")
        .arg(format!("http://{}", server.addr))
        .args(if json { &["-o", "json"][..] } else { &[][..] })
        .kill_on_drop(true)
        .output()
    };
    let human = tokio::time::timeout(DEADLINE, list(false))
        .await
        .unwrap()
        .unwrap();
    assert!(human.status.success(), "{human:?}");
    let text = String::from_utf8(human.stdout).unwrap();
    for (name, raw, shown) in table {
        assert!(text.contains(shown), "{name}: {shown} not in\n{text}");
        assert!(!text.contains(raw), "{name}: printed raw");
    }
    assert!(
        !text
            .chars()
            .any(|c| c == '\u{1b}' || c == '\u{7}' || c == '\u{202e}'),
        "{text:?}"
    );
    let json = tokio::time::timeout(DEADLINE, list(true))
        .await
        .unwrap()
        .unwrap();
    let value: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let calls: Vec<&str> = value["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d["call"].as_str())
        .collect();
    for (name, raw, _) in table {
        assert!(
            calls.iter().any(|c| c.contains(raw)),
            "{name}: JSON lost it: {calls:?}"
        );
    }
    server.stop().await;
}
