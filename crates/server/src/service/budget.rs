//! Budgets of the decision log and the audit trail, per principal and per team, so one
//! token cannot fill the disk: past its records or bytes per minute, a principal's
//! repeated DENYs are counted into one record per call (a count and a first and last
//! time), its other records are shed, and what it lost is counted per principal in a
//! `decisions_shed` audit event and in metrics.
//!
//! Each budget is a token bucket holding a minute's records and bytes and refilling
//! continuously, so any span of `t` seconds writes at most a minute's budget plus
//! `t/60` of it. Nothing here waits: a call past its budget is answered as fast as one
//! within it, and every DENY is still in a record (its own, a counted one, or the
//! count of its principal's `decisions_shed` event).

use super::decision_log::record::Record;
use crate::config::DecisionLogConfig;
use crate::store::{NewAuditEvent, PRINCIPAL_TEXT, PackedDecision, TEAM_TEXT, TEXT_COUNT};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The audit kind of a principal's shed records.
pub const AUDIT_DECISIONS_SHED: &str = "decisions_shed";
/// The audit kind of a DENY's record.
const AUDIT_DECISION_DENIED: &str = "decision_denied";
/// The team of the shed event of principals past [`MAX_SHED_PRINCIPALS`].
const OTHERS: &str = "*";

/// Distinct calls of one principal counted into records between two flushes; its
/// further distinct DENYs past the budget are counted in its `decisions_shed` event.
pub(super) const FOLDS_PER_PRINCIPAL: usize = 32;
/// Counted calls held at once over all principals (memory).
const MAX_FOLDS: usize = 16_384;
/// Principals whose shed counts are held at once; the rest are counted under
/// [`OTHERS`].
const MAX_SHED_PRINCIPALS: usize = 4096;
/// How often counted records and shed events are written: the most a crash loses of
/// the counts of a principal past its budget.
pub(super) const FLUSH_EVERY: Duration = Duration::from_secs(5);
/// What a record costs beyond its texts (ids, times, numbers, the block's share).
const RECORD_OVERHEAD: usize = 64;

/// The configured budgets, per minute.
#[derive(Debug, Clone, Copy)]
struct Limits {
    principal: (f64, f64),
    team: (f64, f64),
}

/// The budgets' state: charged by the deciding side (every record, as it is made or
/// offered) and flushed by the writer's flusher ([`Budgets::take_due`]).
#[derive(Debug)]
pub(super) struct Budgets {
    limits: Limits,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    principals: HashMap<Box<str>, Bucket>,
    teams: HashMap<Box<str>, Bucket>,
    folds: HashMap<FoldKey, Fold>,
    /// Counted calls per (team, principal).
    folds_of: HashMap<(Box<str>, Box<str>), usize>,
    /// What each principal of each team lost: by team, then principal, so that a
    /// principal already counted (every record of a flood) is found without a copy
    /// of its names.
    shed: HashMap<Box<str>, HashMap<Box<str>, Shed>>,
    /// Principals in `shed`.
    shed_principals: usize,
}

/// A minute's records and bytes, refilled continuously.
#[derive(Debug)]
struct Bucket {
    records: f64,
    bytes: f64,
    at: Instant,
}

impl Bucket {
    fn full((records, bytes): (f64, f64), now: Instant) -> Self {
        Self {
            records,
            bytes,
            at: now,
        }
    }

    fn refill(&mut self, (records, bytes): (f64, f64), now: Instant) {
        let minutes = now.saturating_duration_since(self.at).as_secs_f64() / 60.0;
        self.records = (self.records + minutes * records).min(records);
        self.bytes = (self.bytes + minutes * bytes).min(bytes);
        self.at = now;
    }

    fn has(&self, bytes: usize) -> bool {
        self.records >= 1.0 && self.bytes >= bytes as f64
    }

    fn take(&mut self, bytes: usize) {
        self.records -= 1.0;
        self.bytes -= bytes as f64;
    }

    fn is_full(&self, (records, bytes): (f64, f64)) -> bool {
        self.records >= records && self.bytes >= bytes
    }
}

/// What makes two DENY records the same: everything but the time and revision.
#[derive(Debug, PartialEq, Eq, Hash)]
enum FoldKey {
    Decision(Box<str>, [u32; TEXT_COUNT]),
    Audit {
        team: String,
        actor: String,
        detail: String,
    },
}

/// Identical DENY records of a principal past its budget, counted.
#[derive(Debug)]
struct Fold {
    first: Record,
    count: u64,
    first_at_ms: i64,
    last_at_ms: i64,
    revision: u64,
}

/// What a principal lost to its budget since the last flush.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Shed {
    /// ALLOW, ASK and `decision_made` records not written.
    records: u64,
    bytes: u64,
    /// DENYs counted into a repeated call's record.
    coalesced: u64,
    /// DENYs of further distinct calls, counted only here.
    summarised: u64,
    first_at_ms: i64,
    last_at_ms: i64,
}

impl Shed {
    fn at(&mut self, at_ms: i64) {
        if self.first_at_ms == 0 || at_ms < self.first_at_ms {
            self.first_at_ms = at_ms;
        }
        self.last_at_ms = self.last_at_ms.max(at_ms);
    }
}

impl Budgets {
    pub(super) fn new(config: &DecisionLogConfig) -> Self {
        Self {
            limits: Limits {
                principal: (
                    config.principal_records_per_minute as f64,
                    config.principal_bytes_per_minute as f64,
                ),
                team: (
                    config.team_records_per_minute as f64,
                    config.team_bytes_per_minute as f64,
                ),
            },
            state: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A DENY's records: those within the budgets, to be written; the rest are counted
    /// here (into a record of the same call, or the principal's shed event).
    pub(super) fn admit_denies(&self, records: Vec<Record>) -> Vec<Record> {
        let now = Instant::now();
        let mut state = self.lock();
        let mut admitted = Vec::with_capacity(records.len());
        for record in records {
            let (team, principal, bytes, at_ms) = match &record {
                Record::Decision { decision } => {
                    let texts = decision.texts();
                    (
                        texts[TEAM_TEXT],
                        texts[PRINCIPAL_TEXT],
                        record_bytes(&texts),
                        decision.at_ms,
                    )
                }
                Record::Audit(event) => (
                    event.team_id.as_str(),
                    event.actor.as_str(),
                    audit_bytes(event),
                    super::now_ms(),
                ),
            };
            if state.charge(self.limits, team, principal, bytes, now) {
                admitted.push(record);
            } else {
                let (team, principal) = (Box::from(team), Box::from(principal));
                state.fold(record, (team, principal), at_ms);
            }
        }
        admitted
    }

    /// Whether an audit record other than a DENY's (`audit.decisions: all`'s) is within
    /// the budgets; if not, it is counted as shed.
    pub(super) fn admit_audit(&self, event: &NewAuditEvent) -> bool {
        let bytes = audit_bytes(event);
        let mut state = self.lock();
        if state.charge(
            self.limits,
            &event.team_id,
            &event.actor,
            bytes,
            Instant::now(),
        ) {
            return true;
        }
        state.shed_record(&event.team_id, &event.actor, bytes, super::now_ms());
        false
    }

    /// Whether an ALLOW's or ASK's decision-log record (`texts` in the store's order)
    /// is within its principal's and team's budgets; if not, it is counted as shed.
    /// Charged where the record is offered, before it is encoded: past a budget (a
    /// flood, the usual way to be past it) a record costs the deciding call no more
    /// than this lookup, rather than its encoding and its copies through the queue.
    pub(super) fn admit_offered(&self, texts: &[&str; TEXT_COUNT], at_ms: i64) -> bool {
        let bytes = record_bytes(texts);
        let (team, principal) = (texts[TEAM_TEXT], texts[PRINCIPAL_TEXT]);
        let mut state = self.lock();
        if state.charge(self.limits, team, principal, bytes, Instant::now()) {
            return true;
        }
        state.shed_record(team, principal, bytes, at_ms);
        false
    }

    /// The counted records and shed events due (all of them: called every
    /// [`FLUSH_EVERY`] and at shutdown), to be written as a DENY's records are; and the
    /// buckets of principals and teams idle long enough to be full again let go.
    pub(super) fn take_due(&self) -> Vec<Record> {
        let now = Instant::now();
        let mut state = self.lock();
        let limits = self.limits;
        state.principals.retain(|_, b| {
            b.refill(limits.principal, now);
            !b.is_full(limits.principal)
        });
        state.teams.retain(|_, b| {
            b.refill(limits.team, now);
            !b.is_full(limits.team)
        });
        state.folds_of.clear();
        let mut due: Vec<Record> = state.folds.drain().map(|(_, f)| f.into_record()).collect();
        let mut shed_total = 0;
        state.shed_principals = 0;
        for (team, of) in state.shed.drain() {
            for (principal, shed) in of {
                crate::metrics::decision_log_over_budget(
                    &principal,
                    shed.records,
                    shed.coalesced + shed.summarised,
                );
                shed_total += shed.records;
                due.push(Record::Audit(NewAuditEvent {
                    team_id: team.to_string(),
                    revision: 0,
                    actor: principal.into(),
                    kind: AUDIT_DECISIONS_SHED.into(),
                    detail: serde_json::json!({
                        "records": shed.records,
                        "bytes": shed.bytes,
                        "denies_coalesced": shed.coalesced,
                        "denies_summarised": shed.summarised,
                        "first_at_ms": shed.first_at_ms,
                        "last_at_ms": shed.last_at_ms,
                    }),
                }));
            }
        }
        if shed_total > 0 {
            crate::metrics::decision_log_shed(shed_total as usize);
        }
        due
    }
}

impl State {
    /// Takes one record of `bytes` from the principal's and the team's budgets, if
    /// both have it.
    fn charge(
        &mut self,
        limits: Limits,
        team: &str,
        principal: &str,
        bytes: usize,
        now: Instant,
    ) -> bool {
        let p = bucket(&mut self.principals, principal, limits.principal, now);
        if !p.has(bytes) {
            return false;
        }
        let t = bucket(&mut self.teams, team, limits.team, now);
        if !t.has(bytes) {
            return false;
        }
        t.take(bytes);
        p.take(bytes);
        true
    }

    /// Counts a DENY record past its budget: into the record of the same call, a new
    /// one while its principal has fewer than [`FOLDS_PER_PRINCIPAL`], else into its
    /// shed event.
    fn fold(&mut self, record: Record, of: (Box<str>, Box<str>), at_ms: i64) {
        let key = match &record {
            Record::Decision { decision } => {
                let (text, ends) = decision.same_call_key();
                FoldKey::Decision(text.into(), *ends)
            }
            Record::Audit(event) => FoldKey::Audit {
                team: event.team_id.clone(),
                actor: event.actor.clone(),
                detail: event.detail.to_string(),
            },
        };
        // a DENY's two records (audit and log) are counted once, by its audit record,
        // which every DENY has: a DENY is what the event counts
        let counts = matches!(&record, Record::Audit(e) if e.kind == AUDIT_DECISION_DENIED);
        if let Some(fold) = self.folds.get_mut(&key) {
            fold.count += 1;
            fold.first_at_ms = fold.first_at_ms.min(at_ms);
            fold.last_at_ms = fold.last_at_ms.max(at_ms);
            fold.revision = fold.revision.max(record_revision(&record));
            if counts {
                let shed = self.shed_of(&of.0, &of.1);
                shed.coalesced += 1;
                shed.at(at_ms);
            }
            return;
        }
        let held = self.folds_of.get(&of).copied().unwrap_or(0);
        if held < FOLDS_PER_PRINCIPAL && self.folds.len() < MAX_FOLDS {
            self.folds_of.insert(of.clone(), held + 1);
            self.folds.insert(
                key,
                Fold {
                    revision: record_revision(&record),
                    first: record,
                    count: 1,
                    first_at_ms: at_ms,
                    last_at_ms: at_ms,
                },
            );
            if counts {
                let shed = self.shed_of(&of.0, &of.1);
                shed.coalesced += 1;
                shed.at(at_ms);
            }
            return;
        }
        if counts {
            let shed = self.shed_of(&of.0, &of.1);
            shed.summarised += 1;
            shed.at(at_ms);
        }
    }

    /// Counts a record past its budget (not a DENY's) in its principal's shed event.
    fn shed_record(&mut self, team: &str, principal: &str, bytes: usize, at_ms: i64) {
        let shed = self.shed_of(team, principal);
        shed.records += 1;
        shed.bytes += bytes as u64;
        shed.at(at_ms);
    }

    /// The shed counts of a principal, or of [`OTHERS`] once too many are held.
    fn shed_of(&mut self, team: &str, principal: &str) -> &mut Shed {
        let held = self
            .shed
            .get(team)
            .is_some_and(|of| of.contains_key(principal));
        if held {
            // the usual case (every record of a flood): found without copying the names
            return self
                .shed
                .get_mut(team)
                .and_then(|of| of.get_mut(principal))
                .expect("held");
        }
        let (team, principal) = if self.shed_principals < MAX_SHED_PRINCIPALS {
            (team, principal)
        } else {
            (OTHERS, OTHERS)
        };
        // a principal not held yet: the names are copied once, here
        let of = self.shed.entry(team.into()).or_default();
        if !of.contains_key(principal) {
            self.shed_principals += 1;
        }
        of.entry(principal.into()).or_default()
    }
}

impl Fold {
    /// The record written for it: the first record, with the count and the time range
    /// when it stands for more than one.
    fn into_record(self) -> Record {
        if self.count == 1 {
            return self.first;
        }
        match self.first {
            Record::Decision { decision } => {
                let mut d: PackedDecision = decision;
                d.at_ms = self.last_at_ms;
                d.revision = self.revision;
                d.count = self.count;
                d.first_at_ms = self.first_at_ms;
                Record::Decision { decision: d }
            }
            Record::Audit(mut event) => {
                event.revision = self.revision;
                event.detail["count"] = self.count.into();
                event.detail["first_at_ms"] = self.first_at_ms.into();
                event.detail["last_at_ms"] = self.last_at_ms.into();
                Record::Audit(event)
            }
        }
    }
}

fn bucket<'a>(
    map: &'a mut HashMap<Box<str>, Bucket>,
    key: &str,
    limit: (f64, f64),
    now: Instant,
) -> &'a mut Bucket {
    // no allocation for a principal already known: the usual case
    if !map.contains_key(key) {
        map.insert(key.into(), Bucket::full(limit, now));
    }
    let b = map.get_mut(key).expect("inserted above");
    b.refill(limit, now);
    b
}

fn record_revision(record: &Record) -> u64 {
    match record {
        Record::Decision { decision } => decision.revision,
        Record::Audit(event) => event.revision,
    }
}

/// A decision-log record's size: its texts as stored.
fn record_bytes(texts: &[&str; TEXT_COUNT]) -> usize {
    texts.iter().map(|t| t.len()).sum::<usize>() + RECORD_OVERHEAD
}

/// An audit record's size: its texts and detail as stored.
fn audit_bytes(event: &NewAuditEvent) -> usize {
    event.team_id.len()
        + event.actor.len()
        + event.kind.len()
        + event.detail.to_string().len()
        + RECORD_OVERHEAD
}

#[cfg(test)]
mod tests;
