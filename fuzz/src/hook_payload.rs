//! Every client's hook payload: the first byte picks the client, the rest is stdin.
//! Never panics; a payload read gives a call the client's tables agree with (a shell
//! tool is a command line, a call of no known tool carries a note), and every answer
//! renders as one JSON document or nothing.

use toolgate::hook::{self, Client, McpDirectory, Options, Trust, Verdict};
use toolgate::policy::{Call, Outcome};

/// One input, as libFuzzer hands it over.
pub fn run(data: &[u8]) {
    let Some((&pick, input)) = data.split_first() else {
        return;
    };
    let client = Client::ALL[usize::from(pick) % Client::ALL.len()];
    let mut directory = McpDirectory::default();
    directory.add_mcp_json(r#"{"mcpServers": {"github": {"url": "https://g.test/mcp"}, "a": {"command": "npx", "args": ["-y", "a"]}, "b": {"command": "npx"}}}"#);
    directory.add_mcp_json_as(
        r#"{"mcpServers": {"jira": {"url": "https://g.test/mcp"}, "github": {"url": "https://e.test"}}}"#,
        Trust::Workspace,
    );
    let Ok(parsed) = hook::parse(client, input, &directory) else {
        return;
    };
    let v: serde_json::Value = serde_json::from_slice(input).expect("parse read JSON");
    let tool = v.get("tool_name").and_then(|t| t.as_str()).unwrap_or("");
    let table = match client {
        Client::ClaudeCode => Some(hook::CLAUDE),
        Client::Codex => Some(hook::CODEX),
        Client::Gemini if v.get("mcp_context").is_none() => Some(hook::GEMINI),
        _ => None,
    };
    if let Some(table) = table
        && (table.shell.contains(&tool) || table.stdin.contains(&tool))
    {
        assert!(matches!(parsed.call, Call::Shell(_)), "{tool} is a shell");
    }
    if let Call::Mcp { server, .. } = &parsed.call
        && server.is_empty()
    {
        assert!(parsed.note.is_some(), "an unnamed server is explained");
    }
    for outcome in [Outcome::Allow, Outcome::Ask, Outcome::Deny] {
        let verdict = Verdict {
            outcome,
            reason: "R".into(),
            message: tool.into(),
            revision: 1,
        };
        let reply = hook::reply(
            client,
            &verdict,
            parsed.note.as_deref(),
            &Options::default(),
        );
        if !reply.stdout.is_empty() {
            serde_json::from_str::<serde_json::Value>(&reply.stdout).expect("one document");
            assert_eq!(reply.stdout.trim_end().lines().count(), 1);
        }
    }
}
