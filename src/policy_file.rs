//! The policy YAML formats, with errors that name the file, the line and the rule
//! broken: a team's policy as code (`toolgate admin apply -f team.yaml`) and the
//! server's policy file (`policy_file`, seed 000's file-managed allowlist).
//!
//! ```yaml
//! # team.yaml
//! team: acme
//! revision: 4            # optional: apply only if the team is still at this revision
//! auto_run_controls:
//!   enabled: true
//!   mcp_tool_allowlist: ["jira:*", "github:get_*"]
//!   mcp_tool_blocklist: ["github:delete_*"]
//! ```
//!
//! ```yaml
//! # the server's policy file
//! teams:
//!   - team: acme
//!     auto_run_controls: { enabled: true, mcp_tool_allowlist: ["jira:*"] }
//! mcp_servers:
//!   - server: gasoline
//!     allowed_tools: ["observe.*", "interact.navigate"]
//! ```
//!
//! `auto_run_controls` takes every field of `AutoRunControls` and its extensions by
//! its protobuf name (README.md, "For org admins", lists them); unknown keys are errors.

use crate::policy::{
    AdminControls, CompiledAdmin, EntryProblem, PolicyError, Rule, ToolActionList, ToolActionLists,
    default_browser_server_ids,
};
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;

/// One team's policy as kept in git.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TeamPolicy {
    pub team: String,
    /// The revision the policy was read at (`admin get` writes it): `apply` changes
    /// nothing unless the team is still at it. Leave it out to apply over whatever
    /// revision the diff was computed against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<u64>,
    #[serde(default)]
    pub auto_run_controls: AdminControls,
}

/// The server's policy file: teams whose admin settings it manages, and seed 000's
/// `tool.action` lists per MCP server. Both optional; an empty file manages nothing.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct ManagedFile {
    #[serde(default)]
    teams: Vec<ManagedTeam>,
    #[serde(default)]
    mcp_servers: Vec<McpServerList>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct ManagedTeam {
    team: String,
    #[serde(default)]
    auto_run_controls: AdminControls,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct McpServerList {
    server: String,
    #[serde(default)]
    allowed_tools: Vec<String>,
}

/// The server's policy file, validated.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ManagedPolicy {
    /// Each team once, in file order.
    pub teams: Vec<(String, AdminControls)>,
    pub tool_actions: ToolActionLists,
}

/// A problem in a policy file, located.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {message}")]
pub struct PolicyFileError {
    pub file: String,
    /// 1-based; 0 when the problem has no single line.
    pub line: usize,
    pub message: String,
}

/// Every problem of a file, one per line, as printed and as `GetServerConfig` shows.
pub fn format_errors(errors: &[PolicyFileError]) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

/// A YAML syntax or shape error (unknown key, wrong type), located by the parser.
fn yaml_error(file: &str, e: &serde_norway::Error) -> PolicyFileError {
    let line = e.location().map_or(0, |l| l.line());
    let mut message = e.to_string();
    // the parser appends "at line L column C"; the line is already in front
    if let Some(at) = message.rfind(" at line ") {
        message.truncate(at);
    }
    let fix = if message.contains("unknown field `allowed_tools`, expected `teams`") {
        "put a server's list under mcp_servers: [{server: ID, allowed_tools: [...]}]"
    } else if message.contains("unknown field") {
        "remove or rename the key (README.md, \"For org admins\", lists the keys)"
    } else if message.contains("unknown variant") {
        "use one of the values named"
    } else if message.contains("invalid type") {
        "give a value of the type named"
    } else {
        "fix the YAML syntax"
    };
    PolicyFileError {
        file: file.to_owned(),
        line,
        message: format!("{message}: {fix}"),
    }
}

/// Problems in file order, the way people read them.
fn sorted(mut errors: Vec<PolicyFileError>) -> Vec<PolicyFileError> {
    errors.sort_by_key(|e| e.line);
    errors
}

fn rule_name(rule: Rule) -> String {
    serde_json::to_value(rule)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| format!("{rule:?}"))
}

/// An entry problem at `prefix` + its field, located in `text`.
fn entry_error(file: &str, text: &str, prefix: &str, p: &EntryProblem) -> PolicyFileError {
    let path = format!("{prefix}{}", p.field);
    PolicyFileError {
        file: file.to_owned(),
        line: line_at(text, &path).unwrap_or(0),
        message: format!(
            "{path}: {:?} breaks rule {}: {}",
            p.entry,
            rule_name(p.rule),
            p.hint
        ),
    }
}

/// Empty `browser_server_ids` means the defaults, as the API stores them, so a file
/// that leaves them out never differs from what the server holds.
fn normalise(controls: &mut AdminControls) {
    if controls.browser_server_ids.is_empty() {
        controls.browser_server_ids = default_browser_server_ids();
    }
}

/// Checks every entry of `controls` found at `prefix` (e.g. `auto_run_controls.`).
fn check_controls(
    file: &str,
    text: &str,
    prefix: &str,
    controls: &AdminControls,
    errors: &mut Vec<PolicyFileError>,
) {
    match CompiledAdmin::compile(controls) {
        Ok(_) => {}
        Err(PolicyError::InvalidEntries(problems)) => {
            errors.extend(problems.iter().map(|p| entry_error(file, text, prefix, p)));
        }
        Err(other) => errors.push(PolicyFileError {
            file: file.to_owned(),
            line: line_at(text, prefix.trim_end_matches('.')).unwrap_or(0),
            message: other.to_string(),
        }),
    }
}

fn check_team_id(file: &str, text: &str, path: &str, team: &str) -> Option<PolicyFileError> {
    let problem = if team.trim().is_empty() {
        "must not be empty: name the team this policy is for"
    } else if team.chars().count() > crate::service::MAX_ID_LEN {
        "is longer than 256 characters: use the team's id"
    } else if team.chars().any(char::is_control) {
        "holds control characters: use the team's id"
    } else {
        return None;
    };
    Some(PolicyFileError {
        file: file.to_owned(),
        line: line_at(text, path).unwrap_or(1),
        message: format!("{path}: {team:?} {problem}"),
    })
}

/// Parses and validates a team policy; every invalid entry is reported.
pub fn parse_team_policy(file: &str, text: &str) -> Result<TeamPolicy, Vec<PolicyFileError>> {
    let mut policy: TeamPolicy =
        serde_norway::from_str(text).map_err(|e| vec![yaml_error(file, &e)])?;
    let mut errors = Vec::new();
    errors.extend(check_team_id(file, text, "team", &policy.team));
    check_controls(
        file,
        text,
        "auto_run_controls.",
        &policy.auto_run_controls,
        &mut errors,
    );
    if !errors.is_empty() {
        return Err(sorted(errors));
    }
    normalise(&mut policy.auto_run_controls);
    Ok(policy)
}

/// Parses and validates the server's policy file; every problem is reported.
pub fn parse_managed_policy(file: &str, text: &str) -> Result<ManagedPolicy, Vec<PolicyFileError>> {
    // seed 000: an empty file (or one of comments only) restricts nothing
    let value: serde_norway::Value =
        serde_norway::from_str(text).map_err(|e| vec![yaml_error(file, &e)])?;
    let parsed: ManagedFile = if value.is_null() {
        ManagedFile::default()
    } else {
        serde_norway::from_str(text).map_err(|e| vec![yaml_error(file, &e)])?
    };
    let mut errors = Vec::new();
    let mut seen = HashSet::new();
    let mut teams = Vec::with_capacity(parsed.teams.len());
    for (i, t) in parsed.teams.into_iter().enumerate() {
        let at = format!("teams[{i}]");
        if let Some(e) = check_team_id(file, text, &format!("{at}.team"), &t.team) {
            errors.push(e);
            continue;
        }
        if !seen.insert(t.team.clone()) {
            errors.push(PolicyFileError {
                file: file.to_owned(),
                line: line_at(text, &format!("{at}.team")).unwrap_or(0),
                message: format!(
                    "{at}.team: {:?} breaks rule duplicate: the team is already listed above: keep one entry per team",
                    t.team
                ),
            });
            continue;
        }
        check_controls(
            file,
            text,
            &format!("{at}.auto_run_controls."),
            &t.auto_run_controls,
            &mut errors,
        );
        let mut controls = t.auto_run_controls;
        normalise(&mut controls);
        teams.push((t.team, controls));
    }
    let mut lists = Vec::with_capacity(parsed.mcp_servers.len());
    for (i, s) in parsed.mcp_servers.iter().enumerate() {
        match ToolActionList::compile(
            &format!("mcp_servers[{i}].allowed_tools"),
            &s.server,
            &s.allowed_tools,
        ) {
            Ok(list) => lists.push(list),
            Err(problems) => {
                errors.extend(problems.iter().map(|p| entry_error(file, text, "", p)));
            }
        }
    }
    let tool_actions = if errors.is_empty() {
        ToolActionLists::new(lists).unwrap_or_else(|problems| {
            errors.extend(problems.iter().map(|p| entry_error(file, text, "", p)));
            ToolActionLists::default()
        })
    } else {
        ToolActionLists::default()
    };
    if errors.is_empty() {
        Ok(ManagedPolicy {
            teams,
            tool_actions,
        })
    } else {
        Err(sorted(errors))
    }
}

/// The YAML of a team policy, as `admin get` prints and `apply` reads.
pub fn to_yaml(policy: &TeamPolicy) -> String {
    serde_norway::to_string(policy).unwrap_or_default()
}

// ------------------------------------------------------------ locating a path

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
