//! The JSON form of the decision log's records in a block's body: records encoded for
//! the store in one buffer, and a block read back and decoded.

use super::records::{
    NewDecision, OPTIONAL, OUTCOME, PackedDecision, StoredDecision, TEAM_TEXT, TEXT_COUNT,
};
use crate::store::StoreError;
use serde::Deserialize;
use sqlx::{ColumnIndex, Decode, Type};

/// Decision-log records encoded for the store, in one buffer: each record's team,
/// then its JSON form after the id (`at, the texts…, subject_bytes, revision]`, see
/// a block's records). The log's queue of ALLOW and ASK records is a few of these, so an
/// offered record costs no allocation, queue slot or free of its own; the store reads
/// a batch from one.
#[derive(Debug, Default, Clone)]
pub struct EncodedDecisions {
    text: Vec<u8>,
    pub(super) records: Vec<Encoded>,
}

/// Where one record lies in [`EncodedDecisions::text`].
#[derive(Debug, Clone, Copy)]
pub(super) struct Encoded {
    pub(super) at_ms: i64,
    start: usize,
    team_end: usize,
    end: usize,
    /// A DENY's record: stored in blocks of DENY records only, which have a retention
    /// of their own.
    pub(super) deny: bool,
}

impl EncodedDecisions {
    /// Appends a record of `texts` in the store's order.
    pub fn push(
        &mut self,
        at_ms: i64,
        texts: [&str; TEXT_COUNT],
        subject_bytes: u64,
        revision: u64,
    ) {
        self.push_counted(at_ms, texts, subject_bytes, revision, (1, at_ms));
    }

    /// Appends a record that stands for `count` identical ones since `first_at_ms`.
    fn push_counted(
        &mut self,
        at_ms: i64,
        texts: [&str; TEXT_COUNT],
        subject_bytes: u64,
        revision: u64,
        (count, first_at_ms): (u64, i64),
    ) {
        use std::io::Write as _;
        let start = self.text.len();
        self.text.extend_from_slice(texts[TEAM_TEXT].as_bytes());
        let team_end = self.text.len();
        // writing to a Vec cannot fail; a &str always serialises
        let _ = write!(self.text, "{at_ms}");
        // the optional texts are written up to the last one not empty, so a record
        // without them keeps the form older versions read
        let written = texts[OPTIONAL..]
            .iter()
            .rposition(|t| !t.is_empty())
            .map_or(OPTIONAL, |last| OPTIONAL + last + 1);
        for text in texts.into_iter().take(written) {
            self.text.push(b',');
            // most texts need no escape: copied as they are (what serde_json writes
            // for them too), the rest through serde_json
            if text.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
                let _ = serde_json::to_writer(&mut self.text, text);
            } else {
                self.text.push(b'"');
                self.text.extend_from_slice(text.as_bytes());
                self.text.push(b'"');
            }
        }
        // a single record's form stays the one older versions read
        if count > 1 {
            let _ = write!(
                self.text,
                ",{subject_bytes},{revision},{count},{first_at_ms}]"
            );
        } else {
            let _ = write!(self.text, ",{subject_bytes},{revision}]");
        }
        self.records.push(Encoded {
            at_ms,
            start,
            team_end,
            end: self.text.len(),
            deny: texts[OUTCOME] == "DENY",
        });
    }

    /// Appends a packed record.
    pub fn push_packed(&mut self, d: &PackedDecision) {
        self.push_counted(
            d.at_ms,
            d.texts(),
            d.subject_bytes,
            d.revision,
            (d.count, d.first_at_ms),
        );
    }

    /// Appends every record of `other`.
    pub fn append(&mut self, other: &EncodedDecisions) {
        let shift = self.text.len();
        self.text.extend_from_slice(&other.text);
        self.records.extend(other.records.iter().map(|r| Encoded {
            at_ms: r.at_ms,
            start: r.start + shift,
            team_end: r.team_end + shift,
            end: r.end + shift,
            deny: r.deny,
        }));
    }

    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Empties it, keeping its room.
    pub fn clear(&mut self) {
        self.text.clear();
        self.records.clear();
    }

    pub(super) fn team(&self, i: usize) -> &[u8] {
        let r = &self.records[i];
        &self.text[r.start..r.team_end]
    }

    /// Record `i`'s JSON form after `[id,`.
    pub(super) fn tail(&self, i: usize) -> &[u8] {
        let r = &self.records[i];
        &self.text[r.team_end..r.end]
    }

    /// Record `i` as read back, with the id it was given.
    pub fn decode(&self, i: usize, id: u64) -> Result<StoredDecision, StoreError> {
        let mut json = format!("[[{id},").into_bytes();
        json.extend_from_slice(self.tail(i));
        json.push(b']');
        let text = String::from_utf8(json)
            .map_err(|e| StoreError::Corrupt(format!("a decision record is not UTF-8: {e}")))?;
        decode(&text)?
            .pop()
            .ok_or_else(|| StoreError::Corrupt("a decision record is missing".into()))
    }
}

impl From<&[&PackedDecision]> for EncodedDecisions {
    fn from(records: &[&PackedDecision]) -> Self {
        let mut encoded = EncodedDecisions::default();
        for d in records {
            encoded.push_packed(d);
        }
        encoded
    }
}
/// The columns of a block a listing or pruning reads.
pub(super) const BLOCK_COLUMNS: &str = "id, max_at, records, body";

/// One block as read: its records are decoded when a listing needs them.
pub(super) struct Block {
    pub(super) id: i64,
    pub(super) max_at: i64,
    pub(super) records: i64,
    pub(super) body: String,
}

pub(super) fn block<R: sqlx::Row>(row: &R) -> Result<Block, StoreError>
where
    for<'r> &'r str: ColumnIndex<R>,
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
{
    Ok(Block {
        id: row.try_get("id")?,
        max_at: row.try_get("max_at")?,
        records: row.try_get("records")?,
        body: row.try_get("body")?,
    })
}

/// A record's JSON form in a block: `[id, at, the texts…, subject_bytes, revision]`
/// (migration 8 writes the same from the rows it moves), then `count, first_at` for
/// a record that stands for identical DENYs of a principal past its budget. The
/// optional texts (groups, effects_unknown, cwd, tool_use_id) end where the last one not empty does
/// (a record of an older version has none).
struct JsonRecord(StoredDecision);

impl<'de> Deserialize<'de> for JsonRecord {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = JsonRecord;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(
                    f,
                    "a decision record: [id, at, {OPTIONAL} texts, up to {} optional texts, subject_bytes, revision] and optionally count, first_at",
                    TEXT_COUNT - OPTIONAL
                )
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<JsonRecord, A::Error> {
                fn next<'de, A: serde::de::SeqAccess<'de>, T: Deserialize<'de>>(
                    seq: &mut A,
                    read: &mut usize,
                ) -> Result<T, A::Error> {
                    *read += 1;
                    seq.next_element()?
                        .ok_or_else(|| serde::de::Error::invalid_length(*read - 1, &Visitor))
                }
                let mut read = 0;
                let id: u64 = next(&mut seq, &mut read)?;
                let at_ms: i64 = next(&mut seq, &mut read)?;
                let mut texts: [String; TEXT_COUNT] = Default::default();
                for text in &mut texts[..OPTIONAL] {
                    *text = next(&mut seq, &mut read)?;
                }
                let mut optional = texts[OPTIONAL..].iter_mut();
                let subject_bytes: u64 = loop {
                    match next(&mut seq, &mut read)? {
                        TextOrNumber::Text(t) => match optional.next() {
                            Some(text) => *text = t,
                            None => {
                                return Err(serde::de::Error::invalid_type(
                                    serde::de::Unexpected::Str(&t),
                                    &"the record's size after its last optional text",
                                ));
                            }
                        },
                        TextOrNumber::Number(n) => break n,
                    }
                };
                let revision: u64 = next(&mut seq, &mut read)?;
                let mut decision = NewDecision::from_texts(at_ms, texts, subject_bytes, revision);
                if let Some(count) = seq.next_element::<u64>()? {
                    read += 1;
                    decision.count = count;
                    decision.first_at_ms = next(&mut seq, &mut read)?;
                    if count < 2 || decision.first_at_ms > at_ms {
                        return Err(serde::de::Error::custom(
                            "a counted decision record needs a count of at least 2 and a first time not after its last",
                        ));
                    }
                }
                if seq.next_element::<serde::de::IgnoredAny>()?.is_some() {
                    return Err(serde::de::Error::invalid_length(read + 1, &self));
                }
                Ok(JsonRecord(StoredDecision { id, decision }))
            }
        }
        deserializer.deserialize_seq(Visitor)
    }
}

/// An element after a record's first texts: an optional text, or (no more) its size.
#[derive(Deserialize)]
#[serde(untagged)]
enum TextOrNumber {
    Text(String),
    Number(u64),
}

/// A block's records, by id.
pub(super) fn decode(body: &str) -> Result<Vec<StoredDecision>, StoreError> {
    let records: Vec<JsonRecord> = serde_json::from_str(body)
        .map_err(|e| StoreError::Corrupt(format!("a decision-log block is unreadable: {e}")))?;
    Ok(records.into_iter().map(|r| r.0).collect())
}

/// A block's body from stored records (a block rewritten by pruning).
pub(super) fn encode_stored(records: &[StoredDecision]) -> String {
    use std::io::Write as _;
    let mut encoded = EncodedDecisions::default();
    for r in records {
        encoded.push_packed(&PackedDecision::from(&r.decision));
    }
    let mut body = vec![b'['];
    for (i, r) in records.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        let _ = write!(body, "[{},", r.id);
        body.extend_from_slice(encoded.tail(i));
    }
    body.push(b']');
    String::from_utf8(body).unwrap_or_default()
}
