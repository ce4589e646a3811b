//! The checks of a tool's description (and of the descriptions and other texts in its
//! input schema, which the model reads too): its size, characters a person cannot see
//! or that reorder what they read, and instruction-like text aimed at the model, by
//! the rules of `description_rules.toml` (data, read once).

use super::{MAX_DEFINITION_BYTES, MAX_DESCRIPTION_BYTES, is_bidi, is_invisible};
use regex::{Regex, RegexSet};
use serde::Deserialize;
use serde_json::Value;
use std::sync::LazyLock;

/// One thing found in a definition: the rule's kind, where, and why it matters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// `too-long`, `invisible-character`, `bidirectional-character` or a rule's kind.
    pub kind: String,
    /// `description` or the JSON pointer of a text in the input schema.
    pub place: String,
    pub why: String,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} in {}: {}", self.kind, self.place, self.why)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleRow {
    kind: String,
    pattern: String,
    why: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleFile {
    rule: Vec<RuleRow>,
}

struct Rules {
    set: RegexSet,
    rows: Vec<(RuleRow, Regex)>,
}

impl Rules {
    fn parse(text: &str) -> Result<Self, String> {
        let file: RuleFile = toml::from_str(text).map_err(|e| e.to_string())?;
        let mut rows = Vec::with_capacity(file.rule.len());
        for row in file.rule {
            let kind_ok = !row.kind.is_empty()
                && row
                    .kind
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
            if !kind_ok {
                return Err(format!(
                    "kind {:?}: use lowercase letters, digits and `-`",
                    row.kind
                ));
            }
            let regex = Regex::new(&row.pattern).map_err(|e| format!("{}: {e}", row.kind))?;
            rows.push((row, regex));
        }
        let set = RegexSet::new(rows.iter().map(|(r, _)| &r.pattern)).map_err(|e| e.to_string())?;
        Ok(Self { set, rows })
    }
}

static RULES: LazyLock<Rules> = LazyLock::new(|| {
    Rules::parse(include_str!("description_rules.toml")).unwrap_or_else(|e| {
        // compiled in and checked by the unit tests
        panic!("description_rules.toml is not a valid table of rules: {e}")
    })
});

/// The kinds of instruction-like text the table flags, in its order.
pub fn rule_kinds() -> Vec<&'static str> {
    RULES.rows.iter().map(|(r, _)| r.kind.as_str()).collect()
}

/// What `definition` (the canonical form of `super::definition`) holds that an admin
/// should see before the model does; empty when nothing. Each kind is reported once
/// per place. Linear in the definition's size: every rule is a finite automaton.
pub fn check_definition(definition: &Value) -> Vec<Finding> {
    let mut found = Vec::new();
    let size = definition.to_string().len();
    if size > MAX_DEFINITION_BYTES {
        found.push(Finding {
            kind: "too-long".into(),
            place: "definition".into(),
            why: format!("{size} bytes, more than {MAX_DEFINITION_BYTES}"),
        });
    }
    if let Some(text) = definition.get("description").and_then(Value::as_str) {
        if text.len() > MAX_DESCRIPTION_BYTES {
            found.push(Finding {
                kind: "too-long".into(),
                place: "description".into(),
                why: format!(
                    "{} bytes, more than {MAX_DESCRIPTION_BYTES}: a long description can bury instructions",
                    text.len()
                ),
            });
        }
        check_text("description", text, &mut found);
    }
    if let Some(schema) = definition.get("inputSchema") {
        walk(schema, "/inputSchema", &mut found);
    }
    found
}

/// Every string of the schema, keys included (a property's name is read too).
fn walk(value: &Value, pointer: &str, found: &mut Vec<Finding>) {
    match value {
        Value::String(text) => check_text(pointer, text, found),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                walk(item, &format!("{pointer}/{i}"), found);
            }
        }
        Value::Object(map) => {
            for (key, item) in map {
                let here = format!("{pointer}/{}", key.replace('~', "~0").replace('/', "~1"));
                check_text(&here, key, found);
                walk(item, &here, found);
            }
        }
        _ => {}
    }
}

fn check_text(place: &str, text: &str, found: &mut Vec<Finding>) {
    if let Some(c) = text.chars().find(|&c| is_invisible(c)) {
        found.push(Finding {
            kind: "invisible-character".into(),
            place: place.into(),
            why: format!(
                "U+{:04X} takes no room: the model reads text a person does not see",
                c as u32
            ),
        });
    }
    if let Some(c) = text.chars().find(|&c| is_bidi(c)) {
        found.push(Finding {
            kind: "bidirectional-character".into(),
            place: place.into(),
            why: format!(
                "U+{:04X} reorders the text: a person reads it otherwise than the model",
                c as u32
            ),
        });
    }
    // read as one line of visible text: a rule is not evaded by a line break or a
    // zero-width character between its words
    let plain: String = text
        .chars()
        .filter(|&c| !is_invisible(c) && !is_bidi(c))
        .map(|c| if c.is_whitespace() { ' ' } else { c })
        .collect();
    for i in RULES.set.matches(&plain).iter() {
        let (row, regex) = &RULES.rows[i];
        let excerpt = regex
            .find(&plain)
            .map(|m| excerpt(m.as_str()))
            .unwrap_or_default();
        found.push(Finding {
            kind: row.kind.clone(),
            place: place.into(),
            why: format!("{} ({excerpt:?})", row.why),
        });
    }
}

/// At most 80 characters of a match, for the admin.
fn excerpt(text: &str) -> String {
    let mut out: String = text.chars().take(80).collect();
    if out.len() < text.len() {
        out.push('…');
    }
    out
}

#[cfg(test)]
pub(super) fn parse_rules(text: &str) -> Result<usize, String> {
    Rules::parse(text).map(|r| r.rows.len())
}
