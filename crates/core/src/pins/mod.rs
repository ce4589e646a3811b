//! Tool pinning's pure part: a tool's definition in the one form that is hashed and
//! compared (name, description and input schema, object keys sorted), the limits on
//! what is pinned, a line diff of two definitions for the admin who re-pins, and the
//! checks of a description for text aimed at the model (`checks.rs`, its rules data
//! in `description_rules.toml`).

mod checks;
#[cfg(test)]
mod tests;

pub use checks::{Finding, check_definition, rule_kinds};

use serde_json::Value;
use std::collections::BTreeMap;

/// The longest tool name pinned (the policy's own name limit).
pub const MAX_TOOL_NAME_CHARS: usize = 256;
/// The largest definition pinned, as canonical JSON: a larger one is refused, not cut
/// (a cut definition would hash as another tool).
pub const MAX_DEFINITION_BYTES: usize = 64 * 1024;
/// A description longer than this is flagged `too-long` (and the proxy cuts what it
/// shows at its own limit).
pub const MAX_DESCRIPTION_BYTES: usize = 4096;

/// The pinned form of a tool: `{"description", "inputSchema", "name"}` with every
/// object's keys sorted, so the same tool hashes the same whatever order its server
/// wrote it in. A missing description is `null`, a missing schema `{}`.
pub fn definition(name: &str, description: Option<&str>, input_schema: &Value) -> Value {
    let schema = match input_schema {
        Value::Null => Value::Object(Default::default()),
        other => other.clone(),
    };
    sorted(&serde_json::json!({
        "name": name,
        "description": description,
        "inputSchema": schema,
    }))
}

/// `value` with every object's keys sorted (serde_json's map keeps insertion order).
pub fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let by_key: BTreeMap<&String, Value> =
                map.iter().map(|(k, v)| (k, sorted(v))).collect();
            Value::Object(by_key.into_iter().map(|(k, v)| (k.clone(), v)).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// The text that is hashed: the canonical definition as compact JSON.
pub fn canonical_text(definition: &Value) -> String {
    sorted(definition).to_string()
}

/// The lines of a plain diff of two definitions, pretty-printed: `- ` old, `+ ` new,
/// two spaces for a line both have.
pub fn diff(old: &Value, new: &Value) -> Vec<String> {
    let old = serde_json::to_string_pretty(old).unwrap_or_default();
    let new = serde_json::to_string_pretty(new).unwrap_or_default();
    let (a, b): (Vec<&str>, Vec<&str>) = (old.lines().collect(), new.lines().collect());
    // longest common subsequence: a definition is at most MAX_DEFINITION_BYTES
    let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            out.push(format!("  {}", a[i]));
            i += 1;
            j += 1;
        } else if j < b.len() && (i == a.len() || lcs[i][j + 1] >= lcs[i + 1][j]) {
            out.push(format!("+ {}", b[j]));
            j += 1;
        } else {
            out.push(format!("- {}", a[i]));
            i += 1;
        }
    }
    out
}

/// Bidirectional embeddings, overrides, isolates and marks: they reorder what a
/// person reads.
pub fn is_bidi(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{61c}')
}

/// Characters that take no room (tag characters included, which can spell a whole
/// hidden text): what a person reads is not what the model reads.
pub fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{ad}' | '\u{34f}' | '\u{115f}' | '\u{1160}' | '\u{17b4}' | '\u{17b5}' | '\u{180b}'..='\u{180f}'
        | '\u{200b}'..='\u{200d}' | '\u{2060}'..='\u{2064}' | '\u{3164}' | '\u{fe00}'..='\u{fe0f}'
        | '\u{feff}' | '\u{ffa0}' | '\u{e0000}'..='\u{e007f}')
}
