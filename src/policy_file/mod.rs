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
    default_browser_server_ids, roles::RolesDocument,
};
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;

/// Largest policy file, team policy or server policy file alike. Far above any real
/// policy (the lists' entry limits come first), and small enough that a file
/// pointed at the wrong thing cannot take the server's memory.
pub const MAX_POLICY_BYTES: usize = 4 * 1024 * 1024;
/// Deepest nesting of collections a policy YAML may have; real ones need 5. Checked
/// by a linear scan before the parser, whose time grows with depth faster than
/// linearly (50,000 levels took seconds).
pub const MAX_NESTING: usize = 32;

/// Why a policy file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("is not a regular file ({0}): point it at the policy YAML itself")]
    NotRegular(&'static str),
    #[error(
        "is larger than {MAX_POLICY_BYTES} bytes: a policy file is far smaller (is the path right?)"
    )]
    TooLarge,
    #[error("is not UTF-8 text: save it as UTF-8")]
    NotUtf8,
}

/// Reads a policy file, only if it is a regular file, at most [`MAX_POLICY_BYTES`],
/// without ever blocking: opened non-blocking (a FIFO opens at once instead of
/// waiting for a writer) and checked on the open handle, so a path swapped for a
/// device or a FIFO between a check and the read is refused too. Symlinks are
/// followed (a ConfigMap mount is one) but what they reach must be a regular file.
pub fn read_file(path: &std::path::Path) -> Result<String, ReadError> {
    use std::io::Read;
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    let file = options.open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(ReadError::NotRegular(file_kind(&meta)));
    }
    if meta.len() > MAX_POLICY_BYTES as u64 {
        return Err(ReadError::TooLarge);
    }
    // the length may grow after the check: the cap holds for what is read
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_POLICY_BYTES as u64 + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() > MAX_POLICY_BYTES {
        return Err(ReadError::TooLarge);
    }
    String::from_utf8(bytes).map_err(|_| ReadError::NotUtf8)
}

fn file_kind(meta: &std::fs::Metadata) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_char_device() || t.is_block_device() {
            return "a device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    if meta.is_dir() {
        "a directory"
    } else {
        "not a file"
    }
}

/// Refuses a text past the size or nesting limits before any YAML parser sees it.
/// The nesting is over-estimated, never under: flow brackets outside quotes and
/// comments, plus the open block levels (distinct indentations, and the `- `, `? `
/// indicators that open a level within a line).
fn check_limits(file: &str, text: &str) -> Result<(), Vec<PolicyFileError>> {
    let error = |line: usize, message: String| {
        vec![PolicyFileError {
            file: file.to_owned(),
            line,
            message,
        }]
    };
    if text.len() > MAX_POLICY_BYTES {
        return Err(error(
            0,
            format!(
                "the text is {} bytes, more than the limit of {MAX_POLICY_BYTES}: split the policy",
                text.len()
            ),
        ));
    }
    match nesting_depth(text) {
        Some(line) => Err(error(
            line,
            format!("nested more than {MAX_NESTING} levels deep: a policy needs no more than 5"),
        )),
        None => Ok(()),
    }
}

/// The 1-based line where nesting first goes past [`MAX_NESTING`], if it does.
pub fn nesting_depth(text: &str) -> Option<usize> {
    let mut flow = 0usize;
    let mut quote: Option<char> = None;
    // indentations of the open block levels
    let mut indents: Vec<usize> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let mut chars = line.char_indices().peekable();
        let mut inline_levels = 0;
        if quote.is_none() && flow == 0 {
            let indent = line.len() - line.trim_start_matches([' ', '\t']).len();
            let rest = &line[indent..];
            if !rest.is_empty() && !rest.starts_with('#') {
                while indents.last().is_some_and(|&top| top >= indent) {
                    indents.pop();
                }
                indents.push(indent);
            }
        }
        let mut prev = ' ';
        let mut at_start = true;
        while let Some((_, c)) = chars.next() {
            match quote {
                Some('"') if c == '\\' => {
                    chars.next();
                }
                Some(q) if c == q => quote = None,
                Some(_) => {}
                None => match c {
                    '#' if prev == ' ' || prev == '\t' => break,
                    '"' | '\'' => quote = Some(c),
                    '[' | '{' => {
                        flow += 1;
                        // checked as it opens: the line may close it again
                        if flow + indents.len() + inline_levels > MAX_NESTING {
                            return Some(n + 1);
                        }
                    }
                    ']' | '}' => flow = flow.saturating_sub(1),
                    '-' | '?' | ':' if at_start && chars.peek().is_none_or(|(_, n)| *n == ' ') => {
                        inline_levels += 1
                    }
                    ' ' | '\t' => {}
                    _ => at_start = false,
                },
            }
            prev = c;
        }
        if flow + indents.len() + inline_levels > MAX_NESTING {
            return Some(n + 1);
        }
    }
    None
}

/// One team's policy as kept in git.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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

/// The JSON Schemas of the policy documents, generated from their types, by the
/// file name they are published under in `schemas/`.
pub fn json_schemas() -> Vec<(&'static str, String)> {
    let pretty = |s: schemars::Schema| {
        let mut text = serde_json::to_string_pretty(&s).unwrap_or_default();
        text.push('\n');
        text
    };
    vec![
        (
            "roles.schema.json",
            pretty(schemars::schema_for!(RolesDocument)),
        ),
        (
            "team-policy.schema.json",
            pretty(schemars::schema_for!(TeamPolicy)),
        ),
    ]
}

/// The server's policy file: teams whose admin settings it manages, and seed 000's
/// `tool.action` lists per MCP server. Each key optional, but not both: a file that
/// manages nothing says `teams: []`.
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

/// The team id at `path`, checked and normalised by the service's one id check.
fn check_team_id(
    file: &str,
    text: &str,
    path: &str,
    team: &str,
) -> Result<String, PolicyFileError> {
    crate::service::check_id(path, team)
        .map(std::borrow::Cow::into_owned)
        .map_err(|e| PolicyFileError {
            file: file.to_owned(),
            line: line_at(text, path).unwrap_or(1),
            message: match e {
                _ if team.trim().is_empty() => {
                    format!("{path}: {team:?} must not be empty: name the team this policy is for")
                }
                crate::service::ServiceError::InvalidArgument { message, .. } => {
                    format!("{path}: {team:?} {message}: use the team's id")
                }
                other => other.to_string(),
            },
        })
}

/// Parses and validates a team policy; every invalid entry is reported.
pub fn parse_team_policy(file: &str, text: &str) -> Result<TeamPolicy, Vec<PolicyFileError>> {
    check_limits(file, text)?;
    let mut policy: TeamPolicy =
        serde_norway::from_str(text).map_err(|e| vec![yaml_error(file, &e)])?;
    let mut errors = Vec::new();
    match check_team_id(file, text, "team", &policy.team) {
        Ok(team) => policy.team = team,
        Err(e) => errors.push(e),
    }
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
    check_limits(file, text)?;
    // An empty file is what a truncation leaves: taken for "manage nothing" it would
    // open every managed team and drop every tool.action list. Managing nothing is
    // said explicitly (`teams: []`).
    let value: serde_norway::Value =
        serde_norway::from_str(text).map_err(|e| vec![yaml_error(file, &e)])?;
    if value.is_null() || value.as_mapping().is_some_and(|m| m.is_empty()) {
        return Err(vec![PolicyFileError {
            file: file.to_owned(),
            line: 0,
            message: "has no teams and no mcp_servers key (is it empty or truncated?): write `teams: []` to manage nothing".into(),
        }]);
    }
    // parsed again from the text, for errors located by line
    let parsed: ManagedFile =
        serde_norway::from_str(text).map_err(|e| vec![yaml_error(file, &e)])?;
    let mut errors = Vec::new();
    let mut seen = HashSet::new();
    let mut teams = Vec::with_capacity(parsed.teams.len());
    for (i, t) in parsed.teams.into_iter().enumerate() {
        let at = format!("teams[{i}]");
        let team = match check_team_id(file, text, &format!("{at}.team"), &t.team) {
            Ok(team) => team,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        if !seen.insert(team.clone()) {
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
        teams.push((team, controls));
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
