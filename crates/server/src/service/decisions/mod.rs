//! The decision log in the service: each decision becomes a record (sampled for
//! ALLOW, handed to the writer off the decision path), records are listed and followed
//! within the caller's scope, and a team's logged calls are decided again under
//! proposed controls (the impact preview).
//!
//! A record keeps a command line or path, its secrets masked ([`Shown`]), whole up to
//! `decision_log.max_stored_command_bytes`, because the impact preview must decide the
//! call again; it hands out only an excerpt with the length and SHA-256, as the DENY
//! audit records do, to admins as to members: the whole text stays in the store.

mod impact;
mod listing;
mod origin;
mod preview;
mod record;
mod retention;
mod watch;

pub use impact::{CutShort, Impact, ImpactExample, ImpactGroup, TeamImpact};
pub use listing::{DecisionFilter, DecisionPage, MAX_PAGE};
pub use origin::{
    CHECK_CLIENT, DecisionSource, RequestOrigin, check_client, check_tool_use_id, outcome_name,
    parse_outcome, parse_reason,
};
pub use watch::{DecisionEvent, DecisionWatch};

pub(in crate::service) use impact::Tally;
pub(in crate::service) use preview::{CancelOnDrop, PreviewRun, PreviewSlot, Previews};
pub(in crate::service) use record::{DecisionRecord, Shown};
pub(in crate::service) use retention::prune;
pub(in crate::service) use watch::{Relayed, relay};

#[cfg(test)]
mod tests;
