//! The decision log's writer, which is the DENY audit sink too: each
//! denial becomes a bounded record, journaled on disk before its answer leaves
//! (`deny_journal`), then passed through a bounded queue to one task that writes
//! records in batches, keeps them through a store outage, and is drained within the
//! shutdown grace.
//!
//! Decision-log records of DENYs take the same queue as the audit records (they wait
//! for room, never shed). ALLOW and ASK records take a second queue that is offered to,
//! never waited on: when it is full, or while the store is away, they are shed and
//! counted, so recording them never slows a decision.
//!
//! A DENY's records stay in the journal until the store has them: a process that dies
//! at any moment, during an outage or not, loses none; the next start replays them.

mod offered;
pub(super) mod record;
mod recording;
#[cfg(test)]
mod tests;
mod write_task;
mod writer;

pub use writer::{AuditWriter, SPILL_FILE};
