//! The problems found while compiling a roles document, gathered so that every one
//! is reported at once, each with its field, entry, rule and fix.

use crate::policy::{EntryProblem, Rule};

/// The most entries of any one list of a roles document.
pub const MAX_ROLE_ENTRIES: usize = 100_000;

/// Every problem found so far.
pub(super) struct Problems(pub(super) Vec<EntryProblem>);

impl Problems {
    pub(super) fn push(
        &mut self,
        field: String,
        entry: impl Into<String>,
        rule: Rule,
        hint: String,
    ) {
        self.0.push(EntryProblem {
            field,
            entry: entry.into(),
            rule,
            hint,
        });
    }

    pub(super) fn name(&mut self, field: String, name: &str) {
        if name.trim().is_empty() {
            self.push(field, name, Rule::Empty, "write a name".to_owned());
        } else if name.len() > 256 {
            self.push(
                field,
                format!("{}…", name.chars().take(64).collect::<String>()),
                Rule::TooLong,
                "a name is at most 256 bytes".to_owned(),
            );
        }
    }

    pub(super) fn len(&mut self, field: &str, n: usize) -> bool {
        if n > MAX_ROLE_ENTRIES {
            self.push(
                field.to_owned(),
                format!("{n} entries"),
                Rule::TooMany,
                format!("at most {MAX_ROLE_ENTRIES} entries"),
            );
            return false;
        }
        true
    }
}
