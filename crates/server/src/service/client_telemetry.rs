//! The agent clients' own telemetry (OTLP logs, docs/client-telemetry.md): the
//! decisions a client reports making about its calls (Claude Code's
//! `claude_code.tool_decision`) kept beside toolgate's records of the same calls and
//! joined to them by the client's id for the call when the log is listed.
//!
//! A report binds only its sender's own records: the team and user are the
//! credential's, never the event's, and the join matches team, user and id, so an id
//! of someone else's call joins nothing. Each member has a budget of reports per
//! minute; past it, reports are refused (counted in the answer), never queued.

use super::{Service, ServiceError};
use crate::auth::Principal;
use crate::store::{ClientDecision, StoredDecision};
use std::collections::HashMap;
use std::sync::Mutex;

/// Reports one member may send per minute: an agent's calls are far fewer (each is
/// a hook run), so only a flood meets it.
pub const REPORTS_PER_MINUTE: u32 = 3_000;
/// Members whose minute is tracked at once; past it, finished minutes are let go.
const TRACKED_MEMBERS: usize = 10_000;
/// The longest decision, source or tool name kept from a report.
pub const MAX_REPORT_TEXT_BYTES: usize = 256;

/// A client decision as the telemetry carried it, before it is bound to a sender.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReportedDecision {
    pub tool_use_id: String,
    pub decision: String,
    pub source: String,
    pub tool_name: String,
}

/// What became of a request's reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Ingested {
    pub kept: u64,
    /// Past the member's budget, or not a decision that can be joined (no or a bad
    /// id, an unknown decision).
    pub refused: u64,
}

/// Each member's reports in the current minute.
#[derive(Debug, Default)]
pub(super) struct ReportBudgets {
    minutes: Mutex<HashMap<(String, String), (i64, u32)>>,
}

impl ReportBudgets {
    /// How many of `wanted` reports the member may send now.
    fn take(&self, team: &str, user: &str, wanted: u32, now_ms: i64) -> u32 {
        let minute = now_ms.div_euclid(60_000);
        let mut minutes = self.minutes.lock().unwrap_or_else(|e| e.into_inner());
        if minutes.len() >= TRACKED_MEMBERS {
            minutes.retain(|_, (m, _)| *m == minute);
        }
        // still full of this minute's members: refuse rather than grow unbounded
        if minutes.len() >= TRACKED_MEMBERS && !minutes.contains_key(&(team.into(), user.into())) {
            return 0;
        }
        let entry = minutes
            .entry((team.to_owned(), user.to_owned()))
            .or_insert((minute, 0));
        if entry.0 != minute {
            *entry = (minute, 0);
        }
        let granted = wanted.min(REPORTS_PER_MINUTE.saturating_sub(entry.1));
        entry.1 += granted;
        granted
    }
}

/// Whether a report's texts are kept: the id as the decision log's rule, the rest
/// short and printable.
fn well_formed(r: &ReportedDecision) -> bool {
    let printable = |s: &str| {
        !s.is_empty() && s.len() <= MAX_REPORT_TEXT_BYTES && s.chars().all(|c| !c.is_control())
    };
    !r.tool_use_id.is_empty()
        && super::check_tool_use_id(&r.tool_use_id).is_ok()
        && printable(&r.decision)
        && printable(&r.source)
        && (r.tool_name.is_empty() || printable(&r.tool_name))
}

impl Service {
    /// Keeps the client decisions a client reported, bound to its credential's own
    /// team and user. Only a credential naming both may report (an operator's names
    /// neither): another could not say whose calls they are.
    pub async fn ingest_client_decisions(
        &self,
        p: &Principal,
        reports: Vec<ReportedDecision>,
    ) -> Result<Ingested, ServiceError> {
        let (Some(team), Some(user)) = (p.team.as_deref(), p.user.as_deref()) else {
            return Err(ServiceError::PermissionDenied(format!(
                "{} names no team and user: send a client's telemetry with the token its hook uses, which says whose calls it reports",
                p.name
            )));
        };
        let now = super::now_ms();
        let total = reports.len() as u64;
        let kept: Vec<ReportedDecision> = reports.into_iter().filter(well_formed).collect();
        let granted = self.report_budgets.take(
            team,
            user,
            u32::try_from(kept.len()).unwrap_or(u32::MAX),
            now,
        ) as usize;
        if granted < kept.len() {
            // the sender is told the count in its answer (OTLP's partial success)
            tracing::debug!(
                team,
                user,
                refused = kept.len() - granted,
                "client reports past the member's budget"
            );
        }
        let rows: Vec<ClientDecision> = kept
            .into_iter()
            .take(granted)
            .map(|r| ClientDecision {
                team_id: team.to_owned(),
                user_id: user.to_owned(),
                tool_use_id: r.tool_use_id,
                decision: r.decision,
                source: r.source,
                tool_name: r.tool_name,
                at_ms: now,
            })
            .collect();
        self.store.record_client_decisions(&rows).await?;
        for row in &rows {
            // nobody watching is no error
            let _ = self.client_reports.send(std::sync::Arc::new(row.clone()));
        }
        Ok(Ingested {
            kept: rows.len() as u64,
            refused: total - rows.len() as u64,
        })
    }

    /// The client decisions of `records`' calls, by record id: each one reported by
    /// the record's own team and user for the record's id of the call.
    pub(super) async fn joined_client_decisions(
        &self,
        records: &[StoredDecision],
    ) -> Result<HashMap<u64, ClientDecision>, ServiceError> {
        let mut by_team: HashMap<&str, Vec<&str>> = HashMap::new();
        for r in records
            .iter()
            .filter(|r| !r.decision.tool_use_id.is_empty())
        {
            by_team
                .entry(&r.decision.team_id)
                .or_default()
                .push(&r.decision.tool_use_id);
        }
        let mut reported: HashMap<(String, String, String), ClientDecision> = HashMap::new();
        for (team, mut ids) in by_team {
            ids.sort_unstable();
            ids.dedup();
            for row in self.store.client_decisions(team, &ids).await? {
                reported.insert(
                    (
                        row.team_id.clone(),
                        row.user_id.clone(),
                        row.tool_use_id.clone(),
                    ),
                    row,
                );
            }
        }
        Ok(records
            .iter()
            .filter_map(|r| {
                let d = &r.decision;
                let key = (d.team_id.clone(), d.user_id.clone(), d.tool_use_id.clone());
                reported.get(&key).map(|c| (r.id, c.clone()))
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_member_past_its_minute_is_refused_and_the_next_minute_starts_again() {
        let budgets = ReportBudgets::default();
        assert_eq!(
            budgets.take("t", "u", REPORTS_PER_MINUTE - 1, 0),
            REPORTS_PER_MINUTE - 1
        );
        assert_eq!(budgets.take("t", "u", 5, 1), 1);
        assert_eq!(budgets.take("t", "u", 5, 59_999), 0);
        // another member's budget is its own
        assert_eq!(budgets.take("t", "v", 5, 59_999), 5);
        assert_eq!(budgets.take("t", "u", 5, 60_000), 5);
    }

    #[test]
    fn reports_that_cannot_join_are_not_kept() {
        let good = ReportedDecision {
            tool_use_id: "toolu_01".into(),
            decision: "accept".into(),
            source: "user_temporary".into(),
            tool_name: "Bash".into(),
        };
        assert!(well_formed(&good));
        let long = "x".repeat(MAX_REPORT_TEXT_BYTES + 1);
        for bad in [
            ReportedDecision {
                tool_use_id: String::new(),
                ..good.clone()
            },
            ReportedDecision {
                tool_use_id: "a b".into(),
                ..good.clone()
            },
            ReportedDecision {
                tool_use_id: long.clone(),
                ..good.clone()
            },
            ReportedDecision {
                decision: String::new(),
                ..good.clone()
            },
            ReportedDecision {
                decision: "acc\u{1b}[2Jept".into(),
                ..good.clone()
            },
            ReportedDecision {
                source: long.clone(),
                ..good.clone()
            },
            ReportedDecision {
                tool_name: long,
                ..good.clone()
            },
        ] {
            assert!(!well_formed(&bad), "{bad:?}");
        }
    }
}
