//! The decision log's command: filters, rows and the impact report.

use super::*;

#[test]
fn a_record_renders_as_one_line() {
    let r = pb::DecisionRecord {
        id: "7".into(),
        at: Some(prost_types::Timestamp {
            seconds: 1_700_000_000,
            nanos: 5_000_000,
        }),
        team_id: "acme".into(),
        user_id: "alice".into(),
        client: "claude-code".into(),
        call: Some(pb::DecidedCall {
            kind: Some(pb::decided_call::Kind::ShellExcerpt(
                "git push\norigin".into(),
            )),
            command_bytes: 15,
            command_sha256: "ab".into(),
        }),
        outcome: pb::Outcome::Ask as i32,
        reason: pb::Reason::CommandNotAllowlisted as i32,
        ..Default::default()
    };
    let row = DecisionRow::from(&r);
    assert_eq!(
        row.human(),
        "2023-11-14T22:13:20.005Z  ASK   COMMAND_NOT_ALLOWLISTED  alice            claude-code  $ git push origin\n"
    );
    assert_eq!(row.command_bytes, Some(15));
    assert_eq!(row.source, "unspecified");
    // a record that counts repeats of a principal past its budget
    let counted = pb::DecisionRecord {
        count: 3,
        first_at: Some(prost_types::Timestamp {
            seconds: 1_699_999_990,
            nanos: 0,
        }),
        outcome: pb::Outcome::Deny as i32,
        ..r
    };
    assert!(
        DecisionRow::from(&counted)
            .human()
            .ends_with("$ git push origin  ×3 since 2023-11-14T22:13:10.000Z\n")
    );
    // a record decided under group policies names them
    let grouped = pb::DecisionRecord {
        groups: vec!["contractors".into(), "pii".into()],
        ..counted
    };
    assert!(
        DecisionRow::from(&grouped)
            .human()
            .ends_with("×3 since 2023-11-14T22:13:10.000Z  (groups contractors, pii)\n")
    );
    // an ALLOW that rested on programs with unknown effects names them, last
    let unknown = pb::DecisionRecord {
        effects_unknown: vec!["zip".into(), "fakeroot".into()],
        ..grouped.clone()
    };
    assert!(
        DecisionRow::from(&unknown)
            .human()
            .ends_with("(groups contractors, pii)  (effects unknown: zip, fakeroot)\n")
    );
    // what the client did with the call, from its telemetry, is shown beside
    let reported = pb::DecisionRecord {
        tool_use_id: "toolu_01".into(),
        client_decision: Some(pb::ClientDecision {
            decision: "accept".into(),
            source: "user_temporary".into(),
            tool_name: "Bash".into(),
            at: None,
        }),
        ..grouped
    };
    let row = DecisionRow::from(&reported);
    assert!(
        row.human()
            .ends_with("(groups contractors, pii)  (client: accept by user_temporary)\n"),
        "{}",
        row.human()
    );
    let json = serde_json::to_value(&row).unwrap();
    assert_eq!(json["tool_use_id"], "toolu_01");
    assert_eq!(json["client_decision"]["source"], "user_temporary");
}

#[test]
fn windows_and_times_take_durations() {
    assert_eq!(parse_window("7d").unwrap().as_secs(), 7 * 86_400);
    assert!(parse_window("a week").is_err());
    assert!(parse_time("--since", "1h").is_ok());
    assert!(parse_time("--since", "2023-11-14T22:13:20Z").is_ok());
    assert!(parse_time("--since", "yesterday").is_err());
}
