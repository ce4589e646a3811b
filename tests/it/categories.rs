//! A team's tool categories as `@category` entries of its admin allowlist, through
//! the policy core: the table in `tests/data/categories.json` (what a category
//! matches, what a write refuses, a category deleted while a list names it), and the
//! allowlist and the roles never disagreeing on which calls a category holds.

use serde::Deserialize;
use std::collections::BTreeMap;
use toolgate::policy::roles::{RolesDocument, tool_operation};
use toolgate::policy::{
    AdminControls, BUILTIN_SERVER, BUILTIN_TOOLS, Call, CompiledAdmin, CompiledUser, Outcome,
    PolicyError, Reason, Rule, UserSettings, canonical_builtin, decide,
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    #[allow(dead_code)]
    comment: String,
    cases: Vec<Case>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    categories: BTreeMap<String, Vec<String>>,
    allowlist: Vec<String>,
    #[serde(default)]
    blocklist: Vec<String>,
    #[serde(default)]
    before: Vec<String>,
    #[serde(default)]
    calls: Vec<(String, String, Option<String>)>,
    refused: Option<Refused>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Refused {
    field: String,
    rule: Rule,
    hint: String,
}

fn roles(categories: &BTreeMap<String, Vec<String>>) -> RolesDocument {
    let categories: serde_json::Map<String, serde_json::Value> = categories
        .iter()
        .map(|(name, tools)| (name.clone(), serde_json::json!({ "tools": tools })))
        .collect();
    serde_json::from_value(serde_json::json!({ "toolCategories": categories })).unwrap()
}

fn controls(roles: RolesDocument, allowlist: &[String], blocklist: &[String]) -> AdminControls {
    AdminControls {
        enabled: true,
        mcp_tool_allowlist: allowlist.to_vec(),
        mcp_tool_blocklist: blocklist.to_vec(),
        roles,
        ..AdminControls::default()
    }
}

fn auto_run() -> CompiledUser {
    CompiledUser::compile(&UserSettings {
        use_yolo_mode: true,
        ..UserSettings::default()
    })
    .unwrap()
}

/// The entry that let the call run, or `None` when it was not allowlisted.
fn matched(admin: &CompiledAdmin, user: &CompiledUser, server: &str, tool: &str) -> Option<String> {
    let call = Call::Mcp {
        server: server.to_owned(),
        tool: tool.to_owned(),
    };
    let d = decide(admin, user, &call);
    match d.outcome {
        Outcome::Allow => {
            assert_eq!(d.reason, Reason::Allowlisted, "{server}:{tool}");
            d.matched_entry.map(|e| e.to_string())
        }
        _ => {
            assert_eq!(
                (d.outcome, d.reason),
                (Outcome::Ask, Reason::NotInAdminAllowlist),
                "{server}:{tool}: never a DENY or an ALLOW without the list"
            );
            None
        }
    }
}

#[test]
fn category_entries_table() {
    let table: Table =
        serde_json::from_str(include_str!("../data/categories.json")).expect("categories.json");
    let user = auto_run();
    for case in &table.cases {
        let doc = controls(roles(&case.categories), &case.allowlist, &case.blocklist);
        let before = controls(RolesDocument::default(), &case.before, &[]);
        let written = CompiledAdmin::compile_write(&doc, &before);
        match (&case.refused, written) {
            (None, Ok(_)) => {}
            (None, Err(e)) => panic!("{}: refused: {e}", case.name),
            (Some(_), Ok(_)) => panic!("{}: accepted", case.name),
            (Some(want), Err(PolicyError::InvalidEntries(problems))) => {
                let got: Vec<(&str, Rule, &str)> = problems
                    .iter()
                    .map(|p| (p.field.as_str(), p.rule, p.hint.as_str()))
                    .collect();
                assert_eq!(
                    got,
                    [(want.field.as_str(), want.rule, want.hint.as_str())],
                    "{}",
                    case.name
                );
                continue;
            }
            (Some(_), Err(e)) => panic!("{}: {e}", case.name),
        }
        // what the hub compiles on reading the stored document decides the same
        let admin = CompiledAdmin::compile(&doc).expect(&case.name);
        for (server, tool, want) in &case.calls {
            assert_eq!(
                &matched(&admin, &user, server, tool),
                want,
                "{}: {server}:{tool}",
                case.name
            );
        }
    }
}

#[test]
fn an_unknown_name_read_back_matches_nothing() {
    // a stored document whose category is gone (the write that deleted it kept the
    // entry): the decision is made, and never ALLOW by that entry
    let doc = controls(RolesDocument::default(), &["@GONE".to_owned()], &[]);
    let admin = CompiledAdmin::compile(&doc).expect("read back");
    for (canonical, alias) in BUILTIN_TOOLS {
        assert_eq!(
            matched(&admin, &auto_run(), BUILTIN_SERVER, canonical),
            None
        );
        assert_eq!(matched(&admin, &auto_run(), BUILTIN_SERVER, alias), None);
    }
}

#[test]
fn a_user_list_names_no_category() {
    let settings = UserSettings {
        mcp_allowed_tools: vec!["@FILES".to_owned()],
        ..UserSettings::default()
    };
    let Err(PolicyError::InvalidEntries(problems)) = CompiledUser::compile(&settings) else {
        panic!("a user's @FILES accepted");
    };
    assert_eq!(problems[0].rule, Rule::UnknownPreset);
}

#[test]
fn the_allowlist_and_the_roles_agree_on_every_call() {
    // every operation the roles can name for a call, plus ones they never name
    let mut operations: Vec<String> = BUILTIN_TOOLS
        .iter()
        .map(|(canonical, _)| tool_operation(BUILTIN_SERVER, canonical))
        .collect();
    operations.extend(
        [
            "github:create_issue",
            "builtin:Read",
            "builtin:read_file",
            "builtin:Task",
            "builtin:custom_tool",
            "CREATE_COMPONENT",
            "a:b:c",
            "github:*",
        ]
        .map(str::to_owned),
    );
    operations.sort();
    operations.dedup();
    let mut calls: Vec<(String, String)> = BUILTIN_TOOLS
        .iter()
        .flat_map(|(c, a)| [(*c).to_owned(), (*a).to_owned()])
        .map(|t| (BUILTIN_SERVER.to_owned(), t))
        .collect();
    for (s, t) in [
        ("github", "create_issue"),
        ("github", "merge_pr"),
        ("builtin", "custom_tool"),
        ("builtin", "Custom_Tool"),
        ("jira", "read_file"),
    ] {
        calls.push((s.to_owned(), t.to_owned()));
    }
    let user = auto_run();
    for op in &operations {
        let categories = BTreeMap::from([("C".to_owned(), vec![op.clone()])]);
        let admin =
            CompiledAdmin::compile(&controls(roles(&categories), &["@C".to_owned()], &[])).unwrap();
        for (server, tool) in &calls {
            let canonical = if server == BUILTIN_SERVER {
                canonical_builtin(tool)
            } else {
                tool
            };
            let roles_say = tool_operation(server, canonical) == *op;
            let list_says = matched(&admin, &user, server, tool).is_some();
            assert_eq!(list_says, roles_say, "category [{op}] and {server}:{tool}");
        }
    }
}
