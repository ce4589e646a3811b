//! Finding the line of a node named by a path such as `teams[1].auto_run_controls.allowed[2]`.

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// One step of a path such as `teams[1].auto_run_controls.allowed[2]`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Key(String),
    Index(usize),
}

fn parse_path(path: &str) -> Vec<Step> {
    let mut steps = Vec::new();
    for part in path.split('.').filter(|p| !p.is_empty()) {
        let mut pieces = part.split('[');
        if let Some(key) = pieces.next().filter(|k| !k.is_empty()) {
            steps.push(Step::Key(key.to_owned()));
        }
        for index in pieces {
            if let Ok(i) = index.trim_end_matches(']').parse() {
                steps.push(Step::Index(i));
            }
        }
    }
    steps
}

/// Raised at the node sought; the parser stamps it with the node's position.
const FOUND: &str = "\u{0}found";

/// Walks a document down `path` and fails at the node it names.
struct Find<'p>(&'p [Step]);

impl<'de> DeserializeSeed<'de> for Find<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl Find<'_> {
    fn leaf<E: de::Error>(&self) -> Result<(), E> {
        if self.0.is_empty() {
            Err(E::custom(FOUND))
        } else {
            Ok(())
        }
    }
}

impl<'de> Visitor<'de> for Find<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.leaf()
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        self.leaf()
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        self.leaf()
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        self.leaf()
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        self.leaf()
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.leaf()
    }

    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.leaf()
    }

    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let Some((first, rest)) = self.0.split_first() else {
            return Err(de::Error::custom(FOUND));
        };
        let mut i = 0;
        loop {
            let more = if *first == Step::Index(i) {
                seq.next_element_seed(Find(rest))?.is_some()
            } else {
                seq.next_element::<IgnoredAny>()?.is_some()
            };
            if !more {
                return Ok(());
            }
            i += 1;
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let Some((first, rest)) = self.0.split_first() else {
            return Err(de::Error::custom(FOUND));
        };
        while let Some(key) = map.next_key::<serde_norway::Value>()? {
            if matches!((first, key.as_str()), (Step::Key(k), Some(s)) if k == s) {
                map.next_value_seed(Find(rest))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

/// The 1-based line of the node at `path` (`teams[0].auto_run_controls.allowed[2]`),
/// if the document has one there.
pub fn line_at(text: &str, path: &str) -> Option<usize> {
    let steps = parse_path(path);
    let err = Find(&steps)
        .deserialize(serde_norway::Deserializer::from_str(text))
        .err()?;
    err.to_string()
        .contains(FOUND)
        .then(|| err.location().map(|l| l.line()))
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "\
team: acme
auto_run_controls:
  enabled: true
  mcp_tool_allowlist:
    - \"jira:*\"
    - nocolon
  blocked: [\"rm -rf\", \"  \"]
teams:
  - team: a
  - team: b
    auto_run_controls: {allowed: [x]}
";

    #[test]
    fn line_at_finds_nodes() {
        assert_eq!(line_at(DOC, "team"), Some(1));
        assert_eq!(line_at(DOC, "auto_run_controls.enabled"), Some(3));
        assert_eq!(
            line_at(DOC, "auto_run_controls.mcp_tool_allowlist[0]"),
            Some(5)
        );
        assert_eq!(
            line_at(DOC, "auto_run_controls.mcp_tool_allowlist[1]"),
            Some(6)
        );
        assert_eq!(line_at(DOC, "auto_run_controls.blocked[1]"), Some(7));
        assert_eq!(line_at(DOC, "teams[1].team"), Some(10));
        assert_eq!(
            line_at(DOC, "teams[1].auto_run_controls.allowed[0]"),
            Some(11)
        );
        assert_eq!(line_at(DOC, "teams[2].team"), None);
        assert_eq!(line_at(DOC, "nothing"), None);
    }
}
