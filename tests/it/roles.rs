//! Seed 004's roles and restrictions through the policy core: the table in
//! `tests/data/roles.json` (the seed's three worked examples, every restriction, the
//! role lookups) decided one case at a time.

use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use toolgate::policy::roles::{
    Agent, RoleCall, RoleVerdict, RolesDocument, compile_roles, evaluate, tool_operation,
    touches_of_tool_input,
};
use toolgate::policy::{BUILTIN_SERVER, canonical_builtin, split_internal_name};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    documents: BTreeMap<String, RolesDocument>,
    cases: Vec<Case>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    document: String,
    agent: AgentJson,
    operation: Option<String>,
    tool: Option<String>,
    #[serde(default)]
    input: Value,
    cwd: Option<String>,
    /// Calls of the quota's operation the session has made already (the server
    /// counts them; here the table says).
    used: Option<u64>,
    expect: Expect,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentJson {
    id: Option<String>,
    role: Option<String>,
    context: Option<String>,
    session: Option<String>,
}

#[derive(Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct Expect {
    outcome: String,
    reason: Option<String>,
    entry: Option<String>,
    message: Option<String>,
    #[serde(default)]
    obligations: BTreeMap<String, String>,
    quota: Option<QuotaJson>,
}

#[derive(Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct QuotaJson {
    operation: String,
    max: u64,
}

fn table() -> Table {
    serde_json::from_str(include_str!("../data/roles.json")).expect("tests/data/roles.json")
}

/// The tool's server and canonical name, as the service resolves them.
fn tool_of(name: &str) -> (String, String) {
    if name.starts_with("mcp__") {
        let (server, tool) = split_internal_name(name, BUILTIN_SERVER);
        (server.to_owned(), tool.to_owned())
    } else {
        (
            BUILTIN_SERVER.to_owned(),
            canonical_builtin(name).to_owned(),
        )
    }
}

fn got(verdict: RoleVerdict, used: Option<u64>) -> Expect {
    match verdict {
        RoleVerdict::Allow { quota, .. }
            if quota
                .as_ref()
                .is_some_and(|q| used.is_some_and(|u| u >= q.max)) =>
        {
            got(
                RoleVerdict::quota_exhausted(quota.as_ref().expect("quota")),
                None,
            )
        }
        RoleVerdict::Allow { obligations, quota } => Expect {
            outcome: "ALLOW".to_owned(),
            reason: None,
            entry: None,
            message: None,
            obligations: obligations
                .iter()
                .map(|o| (o.name.clone(), o.value.clone()))
                .collect(),
            quota: quota.map(|q| QuotaJson {
                operation: q.operation,
                max: q.max,
            }),
        },
        RoleVerdict::Deny {
            reason,
            entry,
            message,
        } => Expect {
            outcome: "DENY".to_owned(),
            reason: Some(reason.as_str().to_owned()),
            entry: entry.map(|e| e.to_string()),
            message: Some(message),
            obligations: BTreeMap::new(),
            quota: None,
        },
        RoleVerdict::Ask { entry, message } => Expect {
            outcome: "ASK".to_owned(),
            reason: Some("RESTRICTED".to_owned()),
            entry: entry.map(|e| e.to_string()),
            message: Some(message),
            obligations: BTreeMap::new(),
            quota: None,
        },
    }
}

#[test]
fn the_roles_table() {
    let table = table();
    let compiled: BTreeMap<_, _> = table
        .documents
        .iter()
        .map(|(name, doc)| {
            let c = compile_roles(doc).unwrap_or_else(|e| panic!("document {name}: {e}"));
            (name.clone(), c)
        })
        .collect();
    let mut failures = Vec::new();
    for case in &table.cases {
        let roles = &compiled[&case.document];
        let (server, tool) = case
            .tool
            .as_deref()
            .map(tool_of)
            .unwrap_or_else(|| (String::new(), String::new()));
        let operation = case
            .operation
            .clone()
            .unwrap_or_else(|| tool_operation(&server, &tool));
        let touches = touches_of_tool_input(&tool, &case.input);
        let call = RoleCall {
            agent: Agent {
                id: case.agent.id.as_deref(),
                role: case.agent.role.as_deref(),
                context: case.agent.context.as_deref(),
                session: case.agent.session.as_deref(),
            },
            operation: &operation,
            cwd: case.cwd.as_deref(),
            touches: &touches,
        };
        let result = got(evaluate(roles, &call), case.used);
        if result != case.expect {
            failures.push(format!(
                "{}:\n  want {:?}\n  got  {:?}",
                case.name, case.expect, result
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        table.cases.len(),
        failures.join("\n")
    );
}

#[test]
fn the_seed_document_loads_as_written() {
    let table = table();
    let seed = &table.documents["seed004"];
    assert_eq!(seed.allow_lists.len(), 4);
    assert_eq!(
        seed.allow_lists["agentD"].contexts["IPC_BRIDGE_DEVELOPMENT"]
            .restrictions
            .allowed_endpoints
            .as_deref(),
        Some(&["localhost:*".to_owned(), "127.0.0.1:*".to_owned()][..])
    );
}

#[test]
fn bad_documents_name_every_problem() {
    let doc: RolesDocument = serde_json::from_value(serde_json::json!({
        "toolCategories": {
            "A": {"tools": ["X", "Y"]},
            "B": {"tools": ["X"]}
        },
        "agentRoles": {"R": {"agentIds": ["a"]}, "S": {"agentIds": ["a"]}},
        "allowLists": {
            "one": {"agentId": "a", "roleId": "NOPE", "contexts": {"C": {
                "allowedTools": {"A": ["Z", "X"]},
                "restrictions": {
                    "maxFileSize": "ten",
                    "allowedDirectories": ["src/*.rs", "../up"],
                    "allowedNetworkHosts": ["host:80"],
                    "allowedEndpoints": ["h:port"],
                    "forbiddenFiles": ["a[b"]
                }
            }}},
            "two": {"contexts": {}}
        }
    }))
    .expect("shape");
    let err = compile_roles(&doc).expect_err("invalid");
    let toolgate::policy::PolicyError::InvalidEntries(problems) = err else {
        panic!("{err:?}")
    };
    let fields: Vec<&str> = problems.iter().map(|p| p.field.as_str()).collect();
    for want in [
        "toolCategories.B.tools[0]",
        "agentRoles.S.agentIds[0]",
        "allowLists.one.roleId",
        "allowLists.one.contexts.C.allowedTools.A[0]",
        "allowLists.one.contexts.C.restrictions.maxFileSize",
        "allowLists.one.contexts.C.restrictions.allowedDirectories[0]",
        "allowLists.one.contexts.C.restrictions.allowedDirectories[1]",
        "allowLists.one.contexts.C.restrictions.allowedNetworkHosts[0]",
        "allowLists.one.contexts.C.restrictions.allowedEndpoints[0]",
        "allowLists.one.contexts.C.restrictions.forbiddenFiles[0]",
        "allowLists.two",
    ] {
        assert!(fields.contains(&want), "{want} not in {fields:#?}");
    }
}

#[test]
fn a_misspelt_restriction_is_refused() {
    let err = serde_json::from_value::<RolesDocument>(serde_json::json!({
        "allowLists": {"a": {"agentId": "a", "contexts": {"C": {
            "restrictions": {"allowedDirectory": ["src/"]}
        }}}}
    }))
    .expect_err("unknown field");
    assert!(err.to_string().contains("allowedDirectory"), "{err}");
}
