//! `audit list|tail`: the audit trail.

use super::args::AuditCommand;
use super::client::{Clients, rpc_error};
use crate::proto::v1 as pb;
use anyhow::Context as _;
use serde_json::json;

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
    let d = at.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    Ok(prost_types::Timestamp {
        seconds: i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        nanos: i32::try_from(d.subsec_nanos()).unwrap_or(0),
    })
}

fn event_json(e: &pb::AuditEvent) -> serde_json::Value {
    let at =
        e.at.map(|t| {
            let when = std::time::UNIX_EPOCH
                + std::time::Duration::new(
                    u64::try_from(t.seconds).unwrap_or(0),
                    u32::try_from(t.nanos).unwrap_or(0),
                );
            humantime::format_rfc3339_millis(when).to_string()
        })
        .unwrap_or_default();
    json!({"id": e.id, "team": e.team_id, "revision": e.revision, "actor": e.actor, "kind": e.kind,
           "at": at, "detail": serde_json::from_str::<serde_json::Value>(&e.detail_json).unwrap_or_default()})
}

fn print_event(e: &pb::AuditEvent) {
    let j = event_json(e);
    println!(
        "{:>6}  {}  {:<12} rev {:<5} {:<24} {}",
        e.id,
        j["at"].as_str().unwrap_or(""),
        e.team_id,
        e.revision,
        e.kind,
        e.actor
    );
}

pub(super) async fn audit(c: &Clients, cmd: AuditCommand) -> anyhow::Result<i32> {
    let (args, follow) = match cmd {
        AuditCommand::List(a) => (a, false),
        AuditCommand::Tail(a) => (a, true),
    };
    let since = args.since.as_deref().map(parse_since).transpose()?;
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
                kind: args.kind.clone().unwrap_or_default(),
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
                if c.json() {
                    println!("{}", event_json(e));
                } else {
                    print_event(e);
                }
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
    if c.json() {
        let events: Vec<_> = listed.iter().map(event_json).collect();
        println!("{}", json!({"events": events}));
    } else {
        for e in &listed {
            print_event(e);
        }
    }
    Ok(0)
}
