//! `audit list|tail`: the audit trail.

use super::args::AuditCommand;
use super::client::{Clients, rpc_error};
use super::output::{Render, for_terminal};
use super::usage;
use crate::proto::v1 as pb;
use anyhow::Context as _;
use serde::Serialize;

fn parse_since(s: &str) -> anyhow::Result<prost_types::Timestamp> {
    let at = match humantime::parse_rfc3339_weak(s) {
        Ok(t) => t,
        Err(_) => {
            let ago = humantime::parse_duration(s).with_context(|| {
                format!("--since {s:?}: give an RFC 3339 time or a duration such as 1h")
            })?;
            std::time::SystemTime::now() - ago
        }
    };
    Ok(at.into())
}

/// One audit event as the command prints it.
#[derive(Debug, Serialize)]
pub struct EventRow {
    pub id: u64,
    pub team: String,
    pub revision: u64,
    pub actor: String,
    pub kind: String,
    /// RFC 3339 with milliseconds; empty when the server sent no time.
    pub at: String,
    pub detail: serde_json::Value,
}

impl From<&pb::AuditEvent> for EventRow {
    fn from(e: &pb::AuditEvent) -> Self {
        let at =
            e.at.and_then(|t| std::time::SystemTime::try_from(t).ok())
                .map(|when| humantime::format_rfc3339_millis(when).to_string())
                .unwrap_or_default();
        Self {
            id: e.id,
            team: e.team_id.clone(),
            revision: e.revision,
            actor: e.actor.clone(),
            kind: kind_name(e.kind),
            at,
            detail: e.detail.as_ref().map_or(serde_json::Value::Null, |d| {
                toolgate_proto::json::object_from_pb(d, "detail")
                    .map_or(serde_json::Value::Null, serde_json::Value::Object)
            }),
        }
    }
}

impl Render for EventRow {
    fn human(&self) -> String {
        let line = format!(
            "{:>6}  {}  {:<12} rev {:<5} {:<24} {:<16} {}",
            self.id,
            self.at,
            for_terminal(&self.team, false),
            self.revision,
            self.kind,
            for_terminal(&self.actor, false),
            detail_summary(&self.detail)
        );
        format!("{}\n", line.trim_end())
    }
}

/// The most a detail summary shows on a line.
const SUMMARY_CHARS: usize = 160;

/// The event's plain fields (`reason=COMMAND_BLOCKED call=$ git push`), on one line,
/// control characters escaped; lists and documents are left to `--output json`.
fn detail_summary(detail: &serde_json::Value) -> String {
    use serde_json::Value;
    let Some(map) = detail.as_object() else {
        return String::new();
    };
    let mut parts = Vec::new();
    for (k, v) in map {
        let text = match v {
            Value::String(s) if !s.is_empty() => s.clone(),
            Value::Number(n) => n.to_string(),
            Value::Bool(true) => "true".into(),
            _ => continue,
        };
        parts.push(format!("{k}={text}"));
    }
    let mut line = for_terminal(&parts.join(" "), false).into_owned();
    if line.chars().count() > SUMMARY_CHARS {
        line = line.chars().take(SUMMARY_CHARS - 1).collect();
        line.push('…');
    }
    line
}

const KIND_PREFIX: &str = "AUDIT_EVENT_KIND_";

/// An event kind as people type it: `admin_settings_updated`.
fn kind_name(kind: i32) -> String {
    pb::AuditEventKind::try_from(kind).map_or_else(
        |_| kind.to_string(),
        |k| {
            let name = k.as_str_name();
            name.strip_prefix(KIND_PREFIX)
                .unwrap_or(name)
                .to_ascii_lowercase()
        },
    )
}

/// `--kind NAME` as the enum's value; an unknown name lists the known ones.
fn parse_kind(name: &str) -> anyhow::Result<i32> {
    let wanted = format!("{KIND_PREFIX}{}", name.to_ascii_uppercase());
    match pb::AuditEventKind::from_str_name(&wanted) {
        Some(k) if k != pb::AuditEventKind::Unspecified => Ok(k as i32),
        _ => {
            let known: Vec<String> = (1..)
                .map_while(|n| pb::AuditEventKind::try_from(n).ok())
                .map(|k| kind_name(k as i32))
                .collect();
            Err(usage(format!(
                "--kind {name:?} is not an event kind: use one of {}",
                known.join(", ")
            )))
        }
    }
}

/// `audit list`: the events, oldest first.
#[derive(Debug, Serialize)]
pub struct EventList {
    pub events: Vec<EventRow>,
}

impl Render for EventList {
    fn human(&self) -> String {
        self.events.iter().map(EventRow::human).collect()
    }
}

pub(super) async fn audit(c: &Clients, cmd: AuditCommand) -> anyhow::Result<i32> {
    let (args, follow) = match cmd {
        AuditCommand::List(a) => (a, false),
        AuditCommand::Tail(a) => (a, true),
    };
    let since = args.since.as_deref().map(parse_since).transpose()?;
    let kind = args
        .kind
        .as_deref()
        .map(parse_kind)
        .transpose()?
        .unwrap_or(0);
    let limit = args.limit.clamp(1, 1000);
    let mut after_id = 0;
    let mut listed = Vec::new();
    loop {
        // list stops at --limit; tail pages through everything, then polls
        let want = if follow {
            limit
        } else {
            limit.min(
                args.limit
                    .saturating_sub(u32::try_from(listed.len()).unwrap_or(u32::MAX)),
            )
        };
        if want == 0 {
            break;
        }
        let r = c
            .admin()
            .list_audit_events(pb::ListAuditEventsRequest {
                team_id: args.team.clone().unwrap_or_default(),
                after_id,
                limit: want,
                kind,
                actor: args.actor.clone().unwrap_or_default(),
                since,
            })
            .await
            .map_err(rpc_error)?
            .into_inner();
        let page_full = r.events.len() >= want as usize;
        if r.next_after_id > 0 {
            after_id = r.next_after_id;
        }
        if follow {
            for e in &r.events {
                c.out.print(&EventRow::from(e));
            }
            if !page_full {
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            }
            continue;
        }
        listed.extend(r.events);
        if !page_full {
            break;
        }
    }
    c.out.print(&EventList {
        events: listed.iter().map(EventRow::from).collect(),
    });
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_shows_plain_fields_escaped_and_bounded() {
        let d = serde_json::json!({"reason": "COMMAND_BLOCKED", "call": "$ git push\u{1b}[2J",
                                   "doc": {"enabled": true}, "n": 3, "off": false});
        assert_eq!(
            detail_summary(&d),
            "reason=COMMAND_BLOCKED call=$ git push\\x1b[2J n=3"
        );
        let long = serde_json::json!({"call": "x".repeat(500)});
        assert_eq!(detail_summary(&long).chars().count(), SUMMARY_CHARS);
        assert_eq!(detail_summary(&serde_json::Value::Null), "");
    }

    #[test]
    fn an_event_renders_as_one_line_with_its_time() {
        let e = pb::AuditEvent {
            id: 7,
            team_id: "acme".into(),
            revision: 2,
            actor: "admin".into(),
            kind: pb::AuditEventKind::AdminSettingsUpdated as i32,
            at: Some(prost_types::Timestamp {
                seconds: 1_700_000_000,
                nanos: 5_000_000,
            }),
            detail: Some(toolgate_proto::json::object_to_pb(
                serde_json::json!({"kind": "admin"}).as_object().unwrap(),
            )),
        };
        let row = EventRow::from(&e);
        assert_eq!(row.at, "2023-11-14T22:13:20.005Z");
        assert_eq!(row.detail["kind"], "admin");
        let list = EventList { events: vec![row] };
        assert_eq!(
            list.human(),
            "     7  2023-11-14T22:13:20.005Z  acme         rev 2     admin_settings_updated   admin            kind=admin\n"
        );
    }

    #[test]
    fn since_takes_a_time_or_a_duration_ago() {
        assert_eq!(
            parse_since("2023-11-14T22:13:20Z").unwrap().seconds,
            1_700_000_000
        );
        assert!(parse_since("1h").is_ok());
        assert!(parse_since("yesterday").is_err());
    }
}
