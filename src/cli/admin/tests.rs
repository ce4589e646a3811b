//! Team admin settings as code: diffs and reports.

use super::*;
use crate::cli::output::Render;
use crate::cli::{Output, Printer};
use crate::policy::AdminControls;
use serde_json::Value;
use serde_json::json;

fn controls(allow: &[&str], kill_switch: bool) -> AdminControls {
    AdminControls {
        enabled: true,
        kill_switch,
        mcp_tool_allowlist: allow.iter().map(|s| (*s).to_owned()).collect(),
        ..AdminControls::default()
    }
}

#[test]
fn diff_lists_entries_added_and_removed_and_scalars_set() {
    let changes = diff(
        &controls(&["a:x", "b:y"], false),
        &controls(&["b:y", "c:z"], true),
    );
    let field = "mcp_tool_allowlist".to_owned();
    assert!(changes.contains(&Change::Remove {
        field: field.clone(),
        value: json!("a:x"),
    }));
    assert!(changes.contains(&Change::Add {
        field,
        value: json!("c:z"),
    }));
    assert!(changes.contains(&Change::Set {
        field: "kill_switch".into(),
        from: json!(false),
        to: json!(true),
    }));
    assert_eq!(changes.len(), 3, "{changes:?}");
}

#[test]
fn diff_lists_denied_prefixes_added_and_all_removed() {
    let none = controls(&["ls"], false);
    let mut some = none.clone();
    some.denied = vec!["terraform destroy".into()];
    let added = diff(&none, &some);
    assert_eq!(added.len(), 1, "{added:?}");
    assert_eq!(added[0].line(), diff(&none, &some)[0].line());
    assert!(added[0].line().contains("denied"), "{}", added[0].line());
    let removed = diff(&some, &none);
    assert_eq!(removed.len(), 1, "{removed:?}");
    assert!(removed[0].line().contains("terraform destroy"));
}

#[test]
fn diff_reports_a_reorder_and_nothing_for_equal_controls() {
    let (ab, ba) = (
        controls(&["a:x", "b:y"], false),
        controls(&["b:y", "a:x"], false),
    );
    assert_eq!(diff(&ab, &ab), []);
    assert_eq!(
        diff(&ab, &ba),
        [Change::Reorder {
            field: "mcp_tool_allowlist".into(),
            value: json!(["b:y", "a:x"]),
        }]
    );
}

fn apply_report(applied: bool, dry_run: bool) -> ApplyReport {
    ApplyReport {
        diff: DiffReport {
            team: "acme".into(),
            revision: 2,
            changes: vec![Change::Add {
                field: "mcp_tool_allowlist".into(),
                value: json!("jira:*"),
            }],
            impact: None,
        },
        expected_revision: 1,
        applied,
        dry_run,
        error: None,
    }
}

#[test]
fn apply_renders_the_diff_then_its_fate() {
    let human = Printer(Output::Human);
    assert_eq!(
        human.render(&apply_report(true, false)),
        "team acme (revision 2):\n  + mcp_tool_allowlist: \"jira:*\"\napplied: team acme is at revision 2\n"
    );
    assert!(
        human
            .render(&apply_report(false, true))
            .ends_with("dry run: nothing applied\n")
    );
    let json: Value =
        serde_json::from_str(&Printer(Output::Json).render(&apply_report(false, true))).unwrap();
    assert_eq!(
        json,
        json!({"team": "acme", "revision": 2, "expected_revision": 1, "applied": false,
               "dry_run": true,
               "changes": [{"op": "add", "field": "mcp_tool_allowlist", "value": "jira:*"}]})
    );
}

#[test]
fn no_changes_reads_as_one_line() {
    let report = DiffReport {
        team: "acme".into(),
        revision: 0,
        changes: Vec::new(),
        impact: None,
    };
    assert_eq!(report.human(), "team acme (revision 0): no changes\n");
}

#[test]
fn kill_switch_says_whether_it_moved() {
    let mut report = KillSwitchReport {
        team: "acme".into(),
        kill_switch: true,
        revision: 3,
        changed: true,
    };
    assert_eq!(
        report.human(),
        "kill switch of team acme is on (revision 3)\n"
    );
    report.changed = false;
    assert_eq!(report.human(), "kill switch of team acme is already on\n");
}
