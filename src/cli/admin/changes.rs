//! The changes between two documents, field by field, as `admin diff` prints them.

use serde::Serialize;
use serde_json::Value;

/// One change to one field of the admin controls.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Change {
    /// An entry added to a list.
    Add { field: String, value: Value },
    /// An entry removed from a list.
    Remove { field: String, value: Value },
    /// The same entries in another order (order matters: the first match wins).
    Reorder { field: String, value: Value },
    /// A scalar (or a list replacing a non-list) set to a new value.
    Set {
        field: String,
        from: Value,
        to: Value,
    },
}

impl Change {
    /// The field the change is to.
    pub(in crate::cli) fn field(&self) -> &str {
        match self {
            Self::Add { field, .. }
            | Self::Remove { field, .. }
            | Self::Reorder { field, .. }
            | Self::Set { field, .. } => field,
        }
    }

    pub(in crate::cli) fn line(&self) -> String {
        match self {
            Self::Add { field, value } => format!("  + {field}: {value}"),
            Self::Remove { field, value } => format!("  - {field}: {value}"),
            Self::Reorder { field, value } => format!("  ~ {field}: reordered to {value}"),
            Self::Set { field, from, to } => format!("  ~ {field}: {from} -> {to}"),
        }
    }
}

/// What applying `wanted` over `current` changes: lists by entry, scalars by value.
pub fn diff<T: Serialize>(current: &T, wanted: &T) -> Vec<Change> {
    let (a, b) = (
        serde_json::to_value(current).unwrap_or_default(),
        serde_json::to_value(wanted).unwrap_or_default(),
    );
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return Vec::new();
    };
    let mut changes = Vec::new();
    // a list left out when empty (`denied`) is an empty list on either side
    let fields = b.keys().chain(a.keys().filter(|k| !b.contains_key(*k)));
    for field in fields {
        let get = |side: &serde_json::Map<String, Value>,
                   other: &serde_json::Map<String, Value>| {
            match (side.get(field), other.get(field)) {
                (Some(v), _) => v.clone(),
                (None, Some(Value::Array(_))) => Value::Array(Vec::new()),
                (None, _) => Value::Null,
            }
        };
        let (old, new) = (get(a, b), get(b, a));
        if old == new {
            continue;
        }
        let new = &new;
        let field = field.clone();
        match (old.as_array(), new.as_array()) {
            (Some(old), Some(new)) => {
                let before = changes.len();
                for e in old.iter().filter(|e| !new.contains(e)) {
                    changes.push(Change::Remove {
                        field: field.clone(),
                        value: e.clone(),
                    });
                }
                for e in new.iter().filter(|e| !old.contains(e)) {
                    changes.push(Change::Add {
                        field: field.clone(),
                        value: e.clone(),
                    });
                }
                if changes.len() == before {
                    changes.push(Change::Reorder {
                        field,
                        value: Value::from(new.clone()),
                    });
                }
            }
            _ => changes.push(Change::Set {
                field,
                from: old,
                to: new.clone(),
            }),
        }
    }
    changes
}
