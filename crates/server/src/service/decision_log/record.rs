//! What the decision log's writer keeps and journals: an audit record or a
//! decision-log record; and a DENY's audit detail, bounded.

use crate::policy::{Call, Decision};
use crate::store::{NewAuditEvent, PackedDecision};
use serde::{Deserialize, Serialize};

/// One record the writer keeps: an audit record or a decision-log record. A journal
/// (or an older version's spill file) written before the decision log existed holds
/// audit records only, which still read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub(in crate::service) enum Record {
    Decision { decision: PackedDecision },
    Audit(NewAuditEvent),
}

/// A record on its way to the store, with the journal segment that holds it (none:
/// it could not be journaled, or needs not be).
#[derive(Debug)]
pub(super) struct Entry {
    pub(super) record: Record,
    pub(super) segment: Option<u64>,
}

/// The most bytes of a call, and of its decision's message, a DENY record keeps.
const AUDIT_EXCERPT: usize = 4 * 1024;

/// The detail of a DENY record. A huge call is kept as an excerpt with its length and
/// SHA-256, so a record's size does not grow with the command.
pub(in crate::service) fn deny_detail(user: &str, call: &Call, d: &Decision) -> serde_json::Value {
    use sha2::Digest as _;
    let text = format!("{call:?}");
    let mut detail = serde_json::json!({
        "user_id": user,
        "call": excerpt(&text),
        "reason": d.reason.as_str(),
        "matched_entry": d.matched_entry.as_deref(),
        "message": excerpt(&d.message(call)),
    });
    if text.len() > AUDIT_EXCERPT {
        detail["call_bytes"] = text.len().into();
        detail["call_sha256"] = hex::encode(sha2::Sha256::digest(text.as_bytes())).into();
    }
    detail
}

/// The first [`AUDIT_EXCERPT`] bytes of `text` (cut at a character boundary), marked
/// when cut.
pub(in crate::service) fn excerpt(text: &str) -> String {
    if text.len() <= AUDIT_EXCERPT {
        return text.to_owned();
    }
    let cut = (0..=AUDIT_EXCERPT)
        .rev()
        .find(|&n| text.is_char_boundary(n))
        .unwrap_or(0);
    format!("{}…", &text[..cut])
}
