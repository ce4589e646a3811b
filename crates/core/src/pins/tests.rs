//! The description checks against `tests/data/descriptions.json`, the rule table's
//! own checks, and the canonical form.

use super::*;
use serde_json::json;
use std::collections::BTreeSet;

fn table() -> Value {
    serde_json::from_str(include_str!("../../../../tests/data/descriptions.json")).unwrap()
}

#[test]
fn every_description_of_the_table_is_flagged_as_written() {
    let mut failures = Vec::new();
    let mut hostile_kinds = BTreeSet::new();
    for case in table()["cases"].as_array().unwrap() {
        let description = case["description"].as_str();
        let schema = case
            .get("schema")
            .cloned()
            .unwrap_or(json!({"type": "object"}));
        let want: BTreeSet<&str> = case["flags"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap())
            .collect();
        hostile_kinds.extend(want.iter().map(|k| k.to_string()));
        let found = check_definition(&definition("t", description, &schema));
        let got: BTreeSet<&str> = found.iter().map(|f| f.kind.as_str()).collect();
        if got != want {
            failures.push(format!(
                "{description:?}\n    got  {got:?}\n    want {want:?}"
            ));
        }
        if let Some(place) = case.get("place").and_then(Value::as_str)
            && !found.iter().all(|f| f.place == place)
        {
            failures.push(format!("{description:?}: {found:?} not all at {place}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    for kind in rule_kinds() {
        assert!(
            hostile_kinds.contains(kind),
            "rule {kind} has no hostile example in tests/data/descriptions.json"
        );
    }
}

#[test]
fn the_rule_table_refuses_bad_rows() {
    assert!(checks::parse_rules(include_str!("description_rules.toml")).unwrap() > 0);
    for bad in [
        "[[rule]]\nkind = \"Bad Kind\"\npattern = 'x'\nwhy = 'y'\n",
        "[[rule]]\nkind = \"k\"\npattern = '('\nwhy = 'y'\n",
        "[[rule]]\nkind = \"k\"\npattern = 'x'\nwhy = 'y'\nextra = 1\n",
    ] {
        assert!(checks::parse_rules(bad).is_err(), "{bad}");
    }
}

#[test]
fn key_order_does_not_change_the_canonical_form() {
    let a = definition("t", Some("d"), &json!({"b": 1, "a": {"y": 2, "x": 3}}));
    let b = definition("t", Some("d"), &json!({"a": {"x": 3, "y": 2}, "b": 1}));
    assert_eq!(canonical_text(&a), canonical_text(&b));
    assert_eq!(
        canonical_text(&definition("t", None, &Value::Null)),
        r#"{"description":null,"inputSchema":{},"name":"t"}"#
    );
}

#[test]
fn a_diff_shows_the_changed_lines() {
    let old = definition("w", Some("Gets the weather."), &json!({}));
    let new = definition(
        "w",
        Some("Gets the weather. <IMPORTANT>x</IMPORTANT>"),
        &json!({}),
    );
    let lines = diff(&old, &new);
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("- ") && l.contains("Gets the weather.\""))
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("+ ") && l.contains("IMPORTANT"))
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("  ") && l.contains("\"name\""))
    );
}
