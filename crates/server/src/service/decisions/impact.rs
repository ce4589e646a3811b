//! What an impact preview reports: the calls whose outcome changes, counted by
//! from→to and by what they are grouped by, with the newest examples; and which
//! logged calls can be decided again at all.

use super::listing::handed_out;
use crate::policy::{self, Call, Outcome, Reason};
use crate::store::{NewDecision, StoredDecision};
use std::collections::BTreeMap;
use std::time::Duration;

/// The impact preview's window when none is given, and the longest.
pub const DEFAULT_WINDOW: Duration = Duration::from_secs(7 * 24 * 3600);
pub const MAX_WINDOW: Duration = Duration::from_secs(90 * 24 * 3600);
/// Examples per group when none is asked for, and the most.
pub const DEFAULT_EXAMPLES: usize = 3;
pub const MAX_EXAMPLES: usize = 20;

/// How many calls change from one outcome to another, in one group.
#[derive(Debug, Clone, PartialEq)]
pub struct ImpactGroup {
    pub from: Outcome,
    pub to: Outcome,
    /// `server:tool`, a command's first words, or `delete_file`; empty for the
    /// from→to total.
    pub key: String,
    pub count: u64,
    pub examples: Vec<ImpactExample>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ImpactExample {
    pub record: StoredDecision,
    pub new_reason: Reason,
    pub new_matched_entry: Option<String>,
}

/// What proposed controls would change among a team's logged calls.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Impact {
    pub decided: u64,
    pub unchanged: u64,
    pub changed: u64,
    /// Records that cannot be decided again (their command was kept cut short, or
    /// an agent's write tool, whose files were not kept).
    pub unknown: u64,
    /// Calls the proposal would ALLOW resting on programs whose effects toolgate
    /// does not know (no row of its table, or a code runner): what they run, write
    /// or delete would go unchecked.
    pub effects_unknown: u64,
    pub transitions: Vec<ImpactGroup>,
    pub groups: Vec<ImpactGroup>,
    pub revision: u64,
    pub window_start_ms: i64,
    pub window_end_ms: i64,
    /// Why the preview stopped before the window's oldest record, when it did: only
    /// the newest were decided again.
    pub cut_short: Option<CutShort>,
    /// For a change to the organisation's group policies: each team with logged
    /// calls of a member of a changed group, its own impact (the fields above are
    /// their sums); empty for a team's preview.
    pub teams: Vec<TeamImpact>,
}

/// One team's part of an organisation-wide preview.
#[derive(Debug, Clone, PartialEq)]
pub struct TeamImpact {
    pub team_id: String,
    pub impact: Impact,
}

/// Why an impact preview stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CutShort {
    /// The window held more than `decision_log.preview_max_records`.
    Records,
    /// It ran past `decision_log.preview_max_ms`.
    Time,
}

/// Counts changed calls by from→to and by from→to and key, keeping the first
/// examples of each (the newest: records come newest first).
pub(in crate::service) struct Tally {
    examples: usize,
    transitions: BTreeMap<(u8, u8), ImpactGroup>,
    groups: BTreeMap<(u8, u8, String), ImpactGroup>,
}

impl Tally {
    pub(in crate::service) fn new(examples: usize) -> Self {
        Self {
            examples,
            transitions: BTreeMap::new(),
            groups: BTreeMap::new(),
        }
    }

    pub(super) fn add(
        &mut self,
        from: Outcome,
        (to, reason, matched): (Outcome, Reason, Option<String>),
        record: &StoredDecision,
    ) {
        let example = ImpactExample {
            record: handed_out(record),
            new_reason: reason,
            new_matched_entry: matched,
        };
        let key = group_key(&record.decision);
        let rank = |o: Outcome| o as u8;
        let examples = self.examples;
        let bump = |group: &mut ImpactGroup| {
            group.count += 1;
            if group.examples.len() < examples {
                group.examples.push(example.clone());
            }
        };
        let empty = |key: String| ImpactGroup {
            from,
            to,
            key,
            count: 0,
            examples: Vec::new(),
        };
        bump(
            self.transitions
                .entry((rank(from), rank(to)))
                .or_insert_with(|| empty(String::new())),
        );
        bump(
            self.groups
                .entry((rank(from), rank(to), key.clone()))
                .or_insert_with(|| empty(key)),
        );
    }

    /// Biggest first; ties in a stable order.
    pub(in crate::service) fn finish(self) -> (Vec<ImpactGroup>, Vec<ImpactGroup>) {
        let sorted = |groups: Vec<ImpactGroup>| {
            let mut groups = groups;
            groups.sort_by_key(|g| std::cmp::Reverse(g.count));
            groups
        };
        (
            sorted(self.transitions.into_values().collect()),
            sorted(self.groups.into_values().collect()),
        )
    }
}

/// What a change is grouped by: `server:tool`, a command's program (and its
/// subcommand, a second word of letters: `git push`), or `delete_file`.
pub fn group_key(r: &NewDecision) -> String {
    match r.kind.as_str() {
        "mcp" => format!("{}:{}", r.server, r.tool),
        "shell" => {
            let mut words = r.subject.split_whitespace();
            let first = words.next().unwrap_or_default();
            match words.next() {
                Some(second)
                    if second
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-')
                        && second.starts_with(|c: char| c.is_ascii_alphabetic()) =>
                {
                    format!("{first} {second}")
                }
                _ => first.to_owned(),
            }
        }
        other => other.to_owned(),
    }
}

/// The call a record keeps, or `None` when it cannot be decided again (a command or
/// path kept cut short, or an agent's write tool: its decision rests on the files its
/// input names, which the record does not keep, since that input holds the files'
/// contents; decided without them it would look allowed wherever the tool is).
pub fn stored_call(r: &NewDecision) -> Option<Call> {
    match r.kind.as_str() {
        "mcp" if r.server == policy::BUILTIN_SERVER && policy::is_write_tool(&r.tool) => None,
        "mcp" if r.action.is_empty() => Some(Call::Mcp {
            server: r.server.clone(),
            tool: r.tool.clone(),
        }),
        "mcp" => Some(Call::McpAction {
            server: r.server.clone(),
            tool: r.tool.clone(),
            action: r.action.clone(),
        }),
        "shell" if r.complete() => Some(Call::Shell(r.subject.clone())),
        "delete_file" if r.complete() => Some(Call::DeleteFile(r.subject.clone())),
        _ => None,
    }
}
