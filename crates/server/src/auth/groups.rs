//! A JWT principal's groups: the claim `auth.jwt.groups` names, read as a list or a
//! string of names, filtered by its prefix and mapped to toolgate's group names.
//! Fails closed: a claim that cannot be read, or a name that counts but is no group
//! name, refuses the token (dropping a group could drop its denies).

use super::principal::AuthError;
use crate::config::JwtGroupsConfig;
use serde_json::{Map, Value};
use toolgate_core::policy::groups::{MAX_GROUPS_PER_PRINCIPAL, check_group_name, normalise_groups};
use tracing::warn;

/// Most names a groups claim may hold, before filtering: past it the token is
/// refused rather than read.
pub const MAX_CLAIM_NAMES: usize = 1_024;
/// Longest name of a groups claim read, in bytes.
const MAX_CLAIM_NAME_BYTES: usize = 1_024;

/// Why a claim of names could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimProblem {
    /// A list holding something other than strings.
    NotNames,
    /// Neither a list nor a string.
    NotAList,
    /// More than [`MAX_CLAIM_NAMES`] names, or one past `MAX_CLAIM_NAME_BYTES`.
    TooLarge,
}

/// The names the claim at `path` (a dotted path into the token) holds: a list of
/// strings, or one string of names separated by spaces or commas; None when the
/// token has no such claim (or it is null). The one reader of a token's groups:
/// `auth.jwt.groups` and `auth.jwt.team_by_group` both read with it.
pub fn claim_names<'a>(
    claims: &'a Map<String, Value>,
    path: &str,
) -> Result<Option<Vec<&'a str>>, ClaimProblem> {
    let mut parts = path.split('.');
    let first = parts.next().unwrap_or_default();
    let mut value = claims.get(first);
    for part in parts {
        value = value.and_then(|v| v.get(part));
    }
    let names: Vec<&str> = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(s)) => s
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|n| !n.is_empty())
            .collect(),
        Some(Value::Array(items)) => items
            .iter()
            .map(Value::as_str)
            .collect::<Option<Vec<&str>>>()
            .ok_or(ClaimProblem::NotNames)?,
        Some(_) => return Err(ClaimProblem::NotAList),
    };
    if names.len() > MAX_CLAIM_NAMES || names.iter().any(|n| n.len() > MAX_CLAIM_NAME_BYTES) {
        return Err(ClaimProblem::TooLarge);
    }
    Ok(Some(names))
}

/// The groups `claims` put the caller in under `c`: checked, sorted, each once.
pub fn from_claims(
    c: &JwtGroupsConfig,
    claims: &Map<String, Value>,
) -> Result<Vec<String>, AuthError> {
    let names = claim_names(claims, &c.claim).map_err(|p| {
        AuthError::Unauthenticated(match p {
            ClaimProblem::NotNames => {
                "jwt groups claim holds something other than names (auth.jwt.groups.claim)"
            }
            ClaimProblem::NotAList => {
                "jwt groups claim is neither a list of names nor a string of them (auth.jwt.groups.claim)"
            }
            ClaimProblem::TooLarge => {
                "jwt groups claim is too large (at most 1024 names of 1024 bytes)"
            }
        })
    })?;
    let Some(names) = names else {
        return Ok(Vec::new());
    };
    let mut groups = Vec::new();
    for name in names {
        let Some(rest) = name.strip_prefix(c.prefix.as_str()) else {
            continue;
        };
        let mapped = match c.map.get(rest) {
            Some(to) => to.as_str(),
            None if c.mapped_only => continue,
            None => rest,
        };
        if let Err(e) = check_group_name(mapped) {
            warn!(group = %name, error = %e, "jwt refused: a group name that counts is not a group name");
            return Err(AuthError::Unauthenticated(
                "jwt groups claim holds a name that is no group name: map it in auth.jwt.groups.map, or narrow auth.jwt.groups.prefix",
            ));
        }
        groups.push(mapped.to_owned());
    }
    normalise_groups(groups).map_err(|e| {
        warn!(error = %e, limit = MAX_GROUPS_PER_PRINCIPAL, "jwt refused: too many groups");
        AuthError::Unauthenticated(
            "jwt puts the caller in too many groups (at most 64): narrow auth.jwt.groups.prefix or set mapped_only",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn claims(v: Value) -> Map<String, Value> {
        v.as_object().expect("an object").clone()
    }

    /// (config, claims, the groups, or the start of the refusal)
    #[test]
    fn a_claim_reads_as_the_table_says() {
        let plain = JwtGroupsConfig::of("groups", "", &[], false);
        let nested =
            JwtGroupsConfig::of("realm_access.roles", "tg-", &[("PII Team", "pii")], false);
        let only = JwtGroupsConfig::of("groups", "", &[("Contractors", "contractors")], true);
        let ok = |c: &JwtGroupsConfig, v: Value| from_claims(c, &claims(v));
        type Case<'a> = (&'a JwtGroupsConfig, Value, Result<Vec<&'a str>, &'a str>);
        let cases: Vec<Case<'_>> = vec![
            (&plain, json!({}), Ok(vec![])),
            (&plain, json!({"groups": null}), Ok(vec![])),
            (
                &plain,
                json!({"groups": ["b", "a", "b"]}),
                Ok(vec!["a", "b"]),
            ),
            (
                &plain,
                json!({"groups": "b a,c,, d"}),
                Ok(vec!["a", "b", "c", "d"]),
            ),
            (
                &plain,
                json!({"groups": ["a", 1]}),
                Err("jwt groups claim holds something other"),
            ),
            (
                &plain,
                json!({"groups": {"a": true}}),
                Err("jwt groups claim is neither"),
            ),
            (
                &plain,
                json!({"groups": 7}),
                Err("jwt groups claim is neither"),
            ),
            (
                &plain,
                json!({"groups": ["a b"]}),
                Err("jwt groups claim holds a name that is no group name"),
            ),
            (
                &plain,
                json!({"groups": ["../x"]}),
                Err("jwt groups claim holds a name that is no group name"),
            ),
            (
                &nested,
                json!({"realm_access": {"roles": ["tg-ops", "other", "tg-PII Team"]}}),
                Ok(vec!["ops", "pii"]),
            ),
            (&nested, json!({"realm_access": "tg-ops"}), Ok(vec![])),
            (
                &nested,
                json!({"realm_access": {"roles": ["offline_access", "uma authorization"]}}),
                Ok(vec![]),
            ),
            (
                &only,
                json!({"groups": ["Contractors", "Everyone Else", "x y"]}),
                Ok(vec!["contractors"]),
            ),
        ];
        for (c, v, want) in cases {
            let got = ok(c, v.clone());
            match (&got, &want) {
                (Ok(g), Ok(w)) => assert_eq!(g, w, "{v}"),
                (Err(AuthError::Unauthenticated(m)), Err(w)) => {
                    assert!(m.starts_with(w), "{v}: {m}")
                }
                _ => panic!("{v}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn hostile_claims_are_refused_not_read() {
        let plain = JwtGroupsConfig::of("groups", "", &[], false);
        let many: Vec<String> = (0..=MAX_CLAIM_NAMES).map(|i| format!("g{i}")).collect();
        assert!(from_claims(&plain, &claims(json!({"groups": many}))).is_err());
        let long = "g".repeat(MAX_CLAIM_NAME_BYTES + 1);
        assert!(from_claims(&plain, &claims(json!({"groups": [long]}))).is_err());
        let too_many: Vec<String> = (0..=MAX_GROUPS_PER_PRINCIPAL)
            .map(|i| format!("g{i}"))
            .collect();
        assert!(from_claims(&plain, &claims(json!({"groups": too_many}))).is_err());
    }
}
