//! Unit tests of list compilation and the list edits.

use super::*;

fn list(entries: &[&str]) -> Vec<String> {
    entries.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn add_mcp_entry_table() {
    type Case<'a> = (&'a [&'a str], &'a str, &'a str, Result<AddOutcome, ()>);
    let table: &[Case<'_>] = &[
        (
            &[],
            "github",
            "create_issue",
            Ok(AddOutcome::Added(list(&["github:create_issue"]))),
        ),
        (
            &["github:create_issue"],
            "github",
            "create_issue",
            Ok(AddOutcome::AlreadyPresent),
        ),
        (
            &["github:*"],
            "github",
            "merge_pr",
            Ok(AddOutcome::CoveredBy("github:*".into())),
        ),
        (
            &["gitlab:*"],
            "github",
            "merge_pr",
            Ok(AddOutcome::Added(list(&["gitlab:*", "github:merge_pr"]))),
        ),
        (
            &["*:*"],
            "github",
            "merge_pr",
            Ok(AddOutcome::CoveredBy("*:*".into())),
        ),
        (
            &["*:merge_pr"],
            "github",
            "merge_pr",
            Ok(AddOutcome::CoveredBy("*:merge_pr".into())),
        ),
        (
            &["github:merge_*"],
            "github",
            "merge_pr",
            Ok(AddOutcome::CoveredBy("github:merge_*".into())),
        ),
        (
            &["github:x"],
            "github",
            "*",
            Ok(AddOutcome::Added(list(&["github:x", "github:*"]))),
        ),
        (
            &["*:*"],
            "github",
            "*",
            Ok(AddOutcome::CoveredBy("*:*".into())),
        ),
        (&[], "git:hub", "x", Err(())),
        (&[], "github", "", Err(())),
        (&[], "github", "get_*", Err(())),
        (&[], "   ", "x", Err(())),
    ];
    for (existing, server, tool, want) in table {
        let got = add_mcp_entry(&list(existing), server, tool).map_err(|_| ());
        assert_eq!(&got, want, "{existing:?} + {server}:{tool}");
    }
}

#[test]
fn remove_and_normalise() {
    assert_eq!(
        remove_entry(&list(&["a:b", "c:d", "a:b"]), "a:b"),
        Some(list(&["c:d"]))
    );
    assert_eq!(remove_entry(&list(&["a:b"]), "x:y"), None);
    assert_eq!(
        normalise(&list(&[
            "github:x",
            "github:x",
            "jira:y",
            "github:*",
            "github:get_*",
            "*:y",
            "bad"
        ])),
        list(&["github:*", "*:y"])
    );
    assert_eq!(
        normalise(&list(&["builtin:Read", "builtin:read_file"])),
        list(&["builtin:Read"])
    );
    assert_eq!(
        normalise(&list(&["builtin:read_file", "@readonly"])),
        list(&["@readonly"])
    );
    assert_eq!(normalise(&list(&["a:*", "*:*", "b:c"])), list(&["*:*"]));
}

#[test]
fn compile_reports_every_problem() {
    let controls = AdminControls {
        mcp_tool_allowlist: list(&["ok:x", "nocolon", "a:b:c"]),
        mcp_tool_blocklist: list(&["@nope"]),
        allowed: list(&["git status", "  "]),
        browser_server_ids: list(&["a:b"]),
        ..AdminControls::default()
    };
    let Err(PolicyError::InvalidEntries(problems)) = CompiledAdmin::compile(&controls) else {
        panic!("invalid entries accepted")
    };
    let fields: Vec<&str> = problems.iter().map(|p| p.field.as_str()).collect();
    assert_eq!(
        fields,
        [
            "mcp_tool_allowlist[1]",
            "mcp_tool_allowlist[2]",
            "mcp_tool_blocklist[0]",
            "allowed[1]",
            "browser_server_ids[0]"
        ]
    );
    assert_eq!(problems[0].rule, Rule::Separator);
    assert_eq!(problems[2].rule, Rule::UnknownPreset);
    assert_eq!(problems[3].rule, Rule::EmptyCommand);
}

mod held_once {
    //! The compiled lists hold the MCP lists' only copy: what they read back must be
    //! the lists as given, in order, duplicates and every entry form included.
    use super::*;
    use proptest::prelude::*;

    /// Entries of every form (exact, wildcards, globs, presets, built-in aliases,
    /// accented names) from small alphabets, so duplicates are common.
    fn entry() -> impl Strategy<Value = String> {
        prop_oneof![
            ("[ab]{1,2}", "[xyé]{1,2}").prop_map(|(s, t)| format!("{s}:{t}")),
            "[ab]{1,2}".prop_map(|s| format!("{s}:*")),
            "[xy]{1,2}".prop_map(|t| format!("*:{t}")),
            Just("*:*".to_owned()),
            Just("a:x*".to_owned()),
            Just("a*:x".to_owned()),
            Just("@readonly".to_owned()),
            Just("builtin:Read".to_owned()),
            Just("builtin:read_file".to_owned()),
        ]
    }

    fn lists() -> impl Strategy<Value = Vec<String>> {
        proptest::collection::vec(entry(), 0..30)
    }

    proptest! {
        #[test]
        fn admin_lists_read_back_as_given(
            allow in lists(), block in lists(), access in lists(), user in lists(),
        ) {
            let controls = AdminControls {
                enabled: true,
                mcp_tool_allowlist: allow,
                mcp_tool_blocklist: block,
                mcp_access_allowlist: access,
                allowed: vec!["git status".to_owned()],
                ..AdminControls::default()
            };
            let compiled = CompiledAdmin::compile(&controls).unwrap();
            prop_assert_eq!(compiled.document(), controls.clone());
            prop_assert!(compiled.switches().mcp_tool_allowlist.is_empty());
            let settings = UserSettings {
                mcp_allowed_tools: user,
                ..UserSettings::default()
            };
            let compiled = CompiledUser::compile(&settings).unwrap();
            prop_assert_eq!(compiled.document(), settings);
        }
    }
}
