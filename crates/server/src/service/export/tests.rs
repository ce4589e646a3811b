//! The OTLP export: records' attributes, drop rules, the spill.

use super::log_records::exported;
use super::spill::{Spill, spill_files};
use super::*;
use crate::config::OtlpDropRule;
use crate::store::NewDecision;
use opentelemetry_proto::tonic::common::v1::any_value;
use opentelemetry_proto::tonic::logs::v1::SeverityNumber;

/// A record read from its JSON form, as the store would: fields added to the
/// record later keep their defaults.
fn stored(outcome: &str, matched: &str, subject: &str) -> StoredDecision {
    let decision: NewDecision = serde_json::from_value(serde_json::json!({
        "at_ms": 1_700_000_000_000_i64, "team_id": "t", "user_id": "u",
        "principal": "member:u", "agent_id": "", "role": "", "client": "claude-code",
        "source": "evaluate", "kind": "shell", "server": "", "tool": "", "action": "",
        "subject": subject, "subject_bytes": subject.len(), "subject_sha256": "",
        "outcome": outcome, "reason": "COMMAND_ALLOWED", "matched_entry": matched,
        "revision": 3,
    }))
    .unwrap();
    StoredDecision { id: 7, decision }
}

fn value<'a>(r: &'a LogRecord, key: &str) -> Option<&'a any_value::Value> {
    r.attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref()?.value.as_ref())
}

#[test]
fn a_record_carries_its_attributes_masked() {
    let r = decision_record(
        &stored(
            "DENY",
            "",
            "curl -H 'Authorization: Bearer ghp_abcdefghijklmnopqrstuvwxyz0123456789'",
        ),
        1,
    );
    assert_eq!(r.event_name, DECISION_EVENT);
    assert_eq!(r.severity_number, SeverityNumber::Warn as i32);
    assert_eq!(r.time_unix_nano, 1_700_000_000_000_000_000);
    assert_eq!(
        value(&r, "toolgate.decision.id"),
        Some(&any_value::Value::IntValue(7))
    );
    assert_eq!(
        value(&r, "user.id"),
        Some(&any_value::Value::StringValue("u".into()))
    );
    let Some(any_value::Value::StringValue(line)) = value(&r, "process.command_line") else {
        panic!("no command line: {r:?}");
    };
    assert!(!line.contains("ghp_abcdef"), "{line}");
    assert!(!format!("{r:?}").contains("ghp_abcdef"));
    assert_eq!(value(&r, "toolgate.effects_unknown"), None);
}

/// An ALLOW resting on programs whose effects are unknown names them, an array.
#[test]
fn a_record_names_its_unknown_effects() {
    let mut d = stored("ALLOW", "zip", "zip -r a.zip . && fakeroot make");
    d.decision.effects_unknown = "zip\nfakeroot".into();
    let r = decision_record(&d, 1);
    let Some(any_value::Value::ArrayValue(programs)) = value(&r, "toolgate.effects_unknown") else {
        panic!("no unknown effects: {r:?}");
    };
    let names: Vec<_> = programs
        .values
        .iter()
        .filter_map(|v| match &v.value {
            Some(any_value::Value::StringValue(s)) => Some(s.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(names, ["zip", "fakeroot"]);
}

#[test]
fn rules_drop_allow_records_and_never_a_deny() {
    let config = OtlpExportConfig {
        drop: vec![OtlpDropRule {
            outcome: "allow".into(),
            matched_entry: Some("@readonly".into()),
            ..Default::default()
        }],
        ask_sample_rate: 0.0,
        ..Default::default()
    };
    assert!(!exported(&config, &stored("ALLOW", "@readonly", "ls")));
    assert!(exported(
        &config,
        &stored("ALLOW", "git status", "git status")
    ));
    assert!(!exported(&config, &stored("ASK", "", "rm x")));
}

#[test]
fn spill_files_read_back_in_order_and_respect_the_bound() {
    let dir = tempfile::tempdir().unwrap();
    let spill = Spill::open(dir.path().join(SPILL_DIR), 4096).unwrap();
    let records: Vec<LogRecord> = (0..5)
        .map(|i| decision_record(&stored("DENY", "", &format!("rm {i}")), 1))
        .collect();
    spill.write_all(records.clone(), 2);
    let (first, got) = spill.oldest().unwrap();
    assert_eq!(got, records[..2]);
    spill.remove(&first);
    // a new spill (a restart) counts what is there and goes on numbering
    let again = Spill::open(dir.path().join(SPILL_DIR), 4096).unwrap();
    let (_, got) = again.oldest().unwrap();
    assert_eq!(got, records[2..4]);
    // past the bound nothing more is written
    let big: Vec<LogRecord> = (0..100)
        .map(|i| decision_record(&stored("DENY", "", &"x".repeat(100 + i)), 1))
        .collect();
    again.write_all(big, 100);
    assert_eq!(spill_files(&dir.path().join(SPILL_DIR)).len(), 2);
    // hostile files: garbage is set aside, not sent
    std::fs::write(
        dir.path().join(SPILL_DIR).join("000000000000.pb"),
        b"\xff\xff\xff",
    )
    .unwrap();
    let (path, _) = again.oldest().unwrap();
    assert!(path.ends_with("000000000001.pb"), "{path:?}");
    assert!(dir.path().join(SPILL_DIR).join("000000000000.bad").exists());
}
