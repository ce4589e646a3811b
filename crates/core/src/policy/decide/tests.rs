//! The decision's unit tests.

use super::*;
use crate::policy::{AdminControls, ToolActionList, UserSettings};

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

fn files(patterns: &[&str]) -> ToolActionLists {
    let list = ToolActionList::compile("allowed_tools", "gasoline", &strings(patterns)).unwrap();
    ToolActionLists::new(vec![list]).unwrap()
}

fn action(tool: &str, action: &str) -> Call {
    Call::McpAction {
        server: "gasoline".into(),
        tool: tool.into(),
        action: action.into(),
    }
}

/// A user for whom everything else would ALLOW: only the file list can deny.
fn setup(controls: AdminControls) -> (CompiledAdmin, CompiledUser) {
    let user = UserSettings {
        use_yolo_mode: true,
        yolo_enable_run_everything: true,
        ..UserSettings::default()
    };
    (
        CompiledAdmin::compile(&controls).unwrap(),
        CompiledUser::compile(&user).unwrap(),
    )
}

#[test]
fn file_allowlist_denies_with_seed_000_message() {
    let (admin, user) = setup(AdminControls::default());
    let files = files(&["observe.*", "generate.*", "interact.navigate"]);
    let call = action("interact", "execute_js");
    let d = decide_in(&files, &admin, &user, &call);
    assert_eq!(
        (d.outcome, d.reason),
        (Outcome::Deny, Reason::NotInFileAllowlist)
    );
    assert_eq!(
        d.message(&call),
        "interact.execute_js is not permitted. Allowed: observe.*, generate.*, interact.navigate"
    );
    assert_eq!(
        d.allowed_tools.as_deref(),
        Some(&strings(&["observe.*", "generate.*", "interact.navigate"])[..])
    );
    // the same error every time (seed 000 edge case 4)
    assert_eq!(decide_in(&files, &admin, &user, &call), d);
    // a call without an action is named by its tool alone
    let bare = Call::Mcp {
        server: "gasoline".into(),
        tool: "interact".into(),
    };
    let d = decide_in(&files, &admin, &user, &bare);
    assert_eq!(d.reason, Reason::NotInFileAllowlist);
    assert!(
        d.message(&bare)
            .starts_with("interact is not permitted. Allowed: ")
    );
}

#[test]
fn file_allowlist_table() {
    let (admin, user) = setup(AdminControls::default());
    type Case<'a> = (&'a [&'a str], &'a str, &'a str, bool);
    let table: &[Case<'_>] = &[
        (&["*"], "interact", "execute_js", true),
        (&[], "interact", "execute_js", true),
        (&["interact.*"], "interact", "execute_js", true),
        (&["interact.*"], "INTERACT", "Execute_JS", true),
        (&["Interact.Navigate"], "interact", "navigate", true),
        (&["interact.navigate"], "interact", "refresh", false),
        (&["interact.navigate"], "observe", "navigate", false),
        (&["observe.*"], "observer", "logs", false),
    ];
    for (patterns, tool, act, allowed) in table {
        let d = decide_in(&files(patterns), &admin, &user, &action(tool, act));
        let want = if *allowed {
            (Outcome::Allow, Reason::RunEverything)
        } else {
            (Outcome::Deny, Reason::NotInFileAllowlist)
        };
        assert_eq!((d.outcome, d.reason), want, "{patterns:?} {tool}.{act}");
    }
    // other servers are not restricted by gasoline's list
    let other = Call::McpAction {
        server: "other".into(),
        tool: "interact".into(),
        action: "execute_js".into(),
    };
    assert_eq!(
        decide_in(&files(&["observe.*"]), &admin, &user, &other).outcome,
        Outcome::Allow
    );
}

#[test]
fn file_allowlist_comes_after_kill_switch_and_blocklist_before_names() {
    let files = files(&["observe.*"]);
    let call = action("interact", "execute_js");
    let (admin, user) = setup(AdminControls {
        kill_switch: true,
        ..AdminControls::default()
    });
    assert_eq!(
        decide_in(&files, &admin, &user, &call).reason,
        Reason::KillSwitch
    );
    let (admin, user) = setup(AdminControls {
        mcp_tool_blocklist: strings(&["gasoline:interact"]),
        ..AdminControls::default()
    });
    assert_eq!(
        decide_in(&files, &admin, &user, &call).reason,
        Reason::BlockedByAdmin
    );
    let (admin, user) = setup(AdminControls::default());
    // a malformed action of a denied tool stays DENIED; of an allowed one it asks
    assert_eq!(
        decide_in(&files, &admin, &user, &action("interact", "a:b")).reason,
        Reason::NotInFileAllowlist
    );
    assert_eq!(
        decide_in(&files, &admin, &user, &action("observe", "a:b")).reason,
        Reason::InvalidName
    );
    // `*` is a literal action name, allowed by `observe.*` like any other
    assert_eq!(
        decide_in(&files, &admin, &user, &action("observe", "*")).outcome,
        Outcome::Allow
    );
    let explained = explain_in(&files, &admin, &user, &call);
    let names: Vec<&str> = explained.explanation.iter().map(|c| c.name).collect();
    assert_eq!(names, ["kill_switch", "admin_blocklist", "file_allowlist"]);
    // without the file's lists nothing is denied
    assert_eq!(decide(&admin, &user, &call).outcome, Outcome::Allow);
}

#[test]
fn filter_tools_hides_tools_with_no_allowed_action() {
    let (admin, user) = setup(AdminControls::default());
    let files = files(&["observe.*", "interact.navigate"]);
    let tools = serde_json::json!({"tools": [
        {"name": "observe"}, {"name": "interact"}, {"name": "generate"}
    ]});
    let out = filter_tools_in(&files, &admin, &user, "gasoline", &tools).unwrap();
    assert_eq!(out.removed, ["generate"]);
    let kept = filter_tools_in(&files, &admin, &user, "other", &tools).unwrap();
    assert!(kept.removed.is_empty());
}

/// Issue 36: a program with no row of the table is allowed only by an admin's
/// explicit prefix, and the explanation says its effects are unknown.
#[test]
fn a_program_with_no_row_is_allowed_with_its_effects_unknown() {
    let admin = CompiledAdmin::compile(&AdminControls {
        enabled: true,
        allowed: strings(&["terraform plan", "ls"]),
        ..AdminControls::default()
    })
    .unwrap();
    let user = CompiledUser::compile(&UserSettings {
        use_yolo_mode: true,
        ..UserSettings::default()
    })
    .unwrap();
    let d = explain(&admin, &user, &Call::Shell("terraform plan -out=x".into()));
    assert_eq!(d.outcome, Outcome::Allow);
    assert!(
        d.explanation
            .iter()
            .any(|c| c.name == "effects" && c.result.contains("effects are unknown")),
        "{:?}",
        d.explanation
    );
    let d = explain(&admin, &user, &Call::Shell("ls -la".into()));
    assert!(
        !d.explanation
            .iter()
            .any(|c| c.result.contains("effects are unknown")),
        "{:?}",
        d.explanation
    );
}

/// An option the reader does not know makes a command opaque, never less than
/// denied: the denied prefix still sees its words.
#[test]
fn an_unknown_option_does_not_soften_a_denied_prefix() {
    let (admin, user) = setup(AdminControls {
        enabled: true,
        allowed: strings(&["@readonly"]),
        denied: strings(&["rm -rf"]),
        ..AdminControls::default()
    });
    for line in [
        "rm -rf -Z /",
        "rm -rf -fr -r -f -R --recursive --force -Recurse -Force 'C:\\'",
        "rm -rf --no-such-option build",
    ] {
        let d = decide(&admin, &user, &Call::Shell(line.into()));
        assert_eq!(d.outcome, Outcome::Deny, "{line}");
        assert_eq!(d.reason, Reason::CommandDenied, "{line}");
    }
}
