//! Team and user ids: the one check every id passes, wherever it enters (API
//! requests, the configuration's principals, credentials, policy files).

use std::borrow::Cow;

/// Longest team or user id.
pub const MAX_ID_LEN: usize = 256;

/// An id refused: the field it came in and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct IdError {
    pub field: String,
    pub message: String,
}

impl IdError {
    fn new(field: &str, message: impl Into<String>) -> Self {
        Self {
            field: field.to_owned(),
            message: message.into(),
        }
    }
}

/// Checks a team or user id and returns it in Unicode NFC, the one spelling under
/// which it is stored, authorized and compared: `café` typed with a combining
/// accent is the same team as with `é`. Refused, naming the field and the
/// character: control characters, bidirectional controls (which make an id read as
/// another), zero-width characters (`ali\u{200b}ce` is not `alice`) and line or
/// paragraph separators. The one id check: API requests, the configuration's
/// principals and the policy files all go through it.
pub fn check_id<'a>(field: &str, value: &'a str) -> Result<Cow<'a, str>, IdError> {
    // the usual id, checked on every call: printable ASCII is in NFC, one character
    // a byte, and holds none of the characters refused
    if value.len() <= MAX_ID_LEN
        && value.bytes().all(|b| (0x20..0x7f).contains(&b))
        && !value.trim().is_empty()
    {
        return Ok(Cow::Borrowed(value));
    }
    check_any_id(field, value)
}

/// [`check_id`] for any text.
fn check_any_id<'a>(field: &str, value: &'a str) -> Result<Cow<'a, str>, IdError> {
    use unicode_normalization::{IsNormalized, UnicodeNormalization, is_nfc_quick};
    if value.trim().is_empty() {
        return Err(IdError::new(field, "must not be empty"));
    }
    if let Some((c, what)) = value
        .chars()
        .find_map(|c| forbidden_in_id(c).map(|what| (c, what)))
    {
        return Err(IdError::new(
            field,
            format!(
                "{value:?} contains U+{:04X} ({what}): ids may not hold invisible or control characters; remove it",
                u32::from(c)
            ),
        ));
    }
    let value: Cow<'a, str> = match is_nfc_quick(value.chars()) {
        IsNormalized::Yes => Cow::Borrowed(value),
        _ => Cow::Owned(value.nfc().collect()),
    };
    if value.chars().count() > MAX_ID_LEN {
        return Err(IdError::new(
            field,
            format!("must be at most {MAX_ID_LEN} characters"),
        ));
    }
    Ok(value)
}

/// What kind of character may not appear in an id, if `c` is one.
fn forbidden_in_id(c: char) -> Option<&'static str> {
    match c {
        '\u{2028}' | '\u{2029}' => Some("a line or paragraph separator"),
        '\u{202A}'..='\u{202E}'
        | '\u{2066}'..='\u{2069}'
        | '\u{200E}'
        | '\u{200F}'
        | '\u{061C}' => Some("a bidirectional control"),
        '\u{200B}'..='\u{200D}' | '\u{2060}' | '\u{FEFF}' | '\u{00AD}' | '\u{180E}' => {
            Some("a zero-width character")
        }
        c if c.is_control() => Some("a control character"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The printable-ASCII shortcut answers as the whole check does.
        #[test]
        fn the_ascii_shortcut_agrees_with_the_whole_check(
            value in prop_oneof![
                "[ -~]{0,300}",
                "[ \\t\\x00-\\x1f\\x7fa-z]{0,12}",
                "\\PC{0,20}",
            ]
        ) {
            prop_assert_eq!(check_id("f", &value), check_any_id("f", &value));
        }
    }
}
