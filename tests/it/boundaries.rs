//! Trust boundaries outside the shell, through the policy core: URLs read as WHATWG
//! reads them (and asking where curl would read another host), Windows and UNC paths,
//! `Glob` patterns and every path-like argument of a call
//! (tests/data/boundaries/roles.json: each attack, its variants, honest calls).

use serde_json::Value;
use toolgate::policy::roles::{AgentSpec, CallArgs, RoleVerdict, compile_roles, judge};
use toolgate::policy::{BUILTIN_SERVER, Call};

#[test]
fn urls_and_paths_are_read_as_the_agents_read_them() {
    let table: Value =
        serde_json::from_str(include_str!("../data/boundaries/roles.json")).expect("roles.json");
    let roles = compile_roles(&serde_json::from_value(table["document"].clone()).unwrap())
        .expect("the document compiles");
    let mut failures = Vec::new();
    for case in table["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let tool = case["tool"].as_str().unwrap();
        let call = if tool.starts_with("mcp__") {
            Call::McpInternal {
                name: tool.to_owned(),
                fallback_server: String::new(),
            }
        } else {
            Call::Mcp {
                server: BUILTIN_SERVER.to_owned(),
                tool: tool.to_owned(),
            }
        };
        let agent = AgentSpec {
            role: case["role"].as_str().map(str::to_owned),
            session: Some("s".into()),
            ..AgentSpec::default()
        };
        let args = CallArgs {
            tool_input: Some(case["input"].clone()),
            cwd: case["cwd"].as_str().map(str::to_owned),
            ..CallArgs::default()
        };
        let verdict = judge(&roles, &agent, &call, &args);
        let got = match &verdict {
            RoleVerdict::Allow { .. } => "allow",
            RoleVerdict::Ask { .. } => "ask",
            RoleVerdict::Deny { .. } => "deny",
        };
        if got != case["expect"].as_str().unwrap() {
            failures.push(format!(
                "{name}: {got}, expected {}: {verdict:?}",
                case["expect"]
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
