//! The decision log's records: appended in batches (with any audit records of the
//! same batch, in one transaction), listed newest first by a keyset on (time, id) so
//! pages stay put while records are written, and pruned by age and by count per team.
//!
//! A batch's records are stored as blocks, a row per team and batch holding its
//! records as one JSON array (`decision_blocks`), with the block's team, its time
//! range and its id range in columns of their own. A row per record cost the
//! database about 22,000 instructions (a B-tree insert into the table and one into
//! the (team, time) index, twenty columns each), more than the decision it recorded;
//! a block costs that once for thousands of records. Listing reads the blocks that
//! can hold a page's records (by team and time, through indexes), filters their
//! records and merges them newest first; pruning removes whole blocks and rewrites
//! the one or two that straddle a limit.

mod append;
mod encoding;
mod listing;
mod records;
mod retention;

pub use encoding::EncodedDecisions;
pub use records::{
    DECISIONS_NOTICE_PREFIX, DecisionQuery, EFFECTS_UNKNOWN_SEPARATOR, NewDecision, PRINCIPAL_TEXT,
    PackedDecision, StoredDecision, TEAM_TEXT, TEXT_COUNT,
};
pub use retention::{Pruned, Retention};

#[cfg(test)]
mod tests;
