//! The rules of group names and of the groups a principal carries, and how many
//! group policies a team keeps: read by the settings' checks and by every credential
//! that carries groups.

use std::collections::BTreeSet;

/// Longest group name, in bytes (names are ASCII).
pub const MAX_GROUP_NAME_LEN: usize = 64;
/// Most groups one principal carries.
pub const MAX_GROUPS_PER_PRINCIPAL: usize = 64;
/// Most group policies one team keeps.
pub const MAX_GROUP_POLICIES: usize = 256;

/// Checks a group name: ASCII letters, digits, `.`, `_` and `-`, starting with a
/// letter or digit, at most [`MAX_GROUP_NAME_LEN`] bytes. The message names the
/// rule and the fix.
pub fn check_group_name(name: &str) -> Result<(), String> {
    let first_ok = name
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphanumeric());
    let rest_ok = name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if name.len() > MAX_GROUP_NAME_LEN {
        return Err(format!(
            "group {:?} is longer than {MAX_GROUP_NAME_LEN} bytes: choose a shorter name (or map it to one)",
            name.chars().take(MAX_GROUP_NAME_LEN).collect::<String>()
        ));
    }
    if !first_ok || !rest_ok {
        return Err(format!(
            "group {name:?} is not a group name: use ASCII letters, digits, '.', '_' and '-', starting with a letter or digit (map other names to one)"
        ));
    }
    Ok(())
}

/// A principal's groups as it carries them: each checked, sorted, without
/// duplicates, at most [`MAX_GROUPS_PER_PRINCIPAL`].
pub fn normalise_groups<I, S>(names: I) -> Result<Vec<String>, String>
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    let mut set = BTreeSet::new();
    for name in names {
        let name = name.into();
        check_group_name(&name)?;
        set.insert(name);
        if set.len() > MAX_GROUPS_PER_PRINCIPAL {
            return Err(format!(
                "more than {MAX_GROUPS_PER_PRINCIPAL} groups: filter them (a prefix or a mapping) to the ones policies name"
            ));
        }
    }
    Ok(set.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::{MAX_GROUPS_PER_PRINCIPAL, check_group_name, normalise_groups};

    #[test]
    fn group_names_follow_one_rule() {
        for ok in [
            "contractors",
            "pii.handlers",
            "team_2",
            "A-b",
            &"g".repeat(64),
        ] {
            assert_eq!(check_group_name(ok), Ok(()), "{ok}");
        }
        for bad in [
            "",
            "-x",
            ".x",
            "a b",
            "a/b",
            "a:b",
            "é",
            "a\u{0}",
            &"g".repeat(65),
        ] {
            assert!(check_group_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_principal_s_groups_are_sorted_once_each_and_bounded() {
        assert_eq!(
            normalise_groups(["b", "a", "b"]),
            Ok(vec!["a".to_owned(), "b".to_owned()])
        );
        let many: Vec<String> = (0..=MAX_GROUPS_PER_PRINCIPAL)
            .map(|i| format!("g{i}"))
            .collect();
        assert!(normalise_groups(many).unwrap_err().contains("more than"));
        assert!(normalise_groups(["ok", "not ok"]).is_err());
    }
}
