//! The checks a team policy's fields get wherever they stand (a policy file, the
//! server's policy file, a `toolgate test` file): YAML errors located, the controls'
//! entries and the team id checked, each problem located by line.

use super::PolicyFileError;
use super::locate::line_at;
use toolgate_core::policy::{
    AdminControls, CompiledAdmin, EntryProblem, PolicyError, Rule, default_browser_server_ids,
};

/// A YAML syntax or shape error (unknown key, wrong type), located by the parser.
pub(super) fn yaml_error(file: &str, e: &serde_norway::Error) -> PolicyFileError {
    let line = e.location().map_or(0, |l| l.line());
    let mut message = e.to_string();
    // the parser appends "at line L column C"; the line is already in front
    if let Some(at) = message.rfind(" at line ") {
        message.truncate(at);
    }
    let fix = if message.contains("unknown field `allowed_tools`, expected `teams`") {
        "put a server's list under mcp_servers: [{server: ID, allowed_tools: [...]}]"
    } else if message.contains("unknown field") {
        "remove or rename the key (docs/team-policy.md lists the keys)"
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
pub(super) fn sorted(mut errors: Vec<PolicyFileError>) -> Vec<PolicyFileError> {
    errors.sort_by_key(|e| e.line);
    errors
}

pub(super) fn rule_name(rule: Rule) -> String {
    serde_json::to_value(rule)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| format!("{rule:?}"))
}

/// An entry problem at `prefix` + its field, located in `text`.
pub(super) fn entry_error(
    file: &str,
    text: &str,
    prefix: &str,
    p: &EntryProblem,
) -> PolicyFileError {
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
pub(super) fn normalise(controls: &mut AdminControls) {
    if controls.browser_server_ids.is_empty() {
        controls.browser_server_ids = default_browser_server_ids();
    }
}

/// Checks every entry of `controls` found at `prefix` (e.g. `auto_run_controls.`).
pub(super) fn check_controls(
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

/// The team id at `path`, checked and normalised by the one id check.
pub(super) fn check_team_id(
    file: &str,
    text: &str,
    path: &str,
    team: &str,
) -> Result<String, PolicyFileError> {
    toolgate_core::ids::check_id(path, team)
        .map(std::borrow::Cow::into_owned)
        .map_err(|e| PolicyFileError {
            file: file.to_owned(),
            line: line_at(text, path).unwrap_or(1),
            message: match e {
                _ if team.trim().is_empty() => {
                    format!("{path}: {team:?} must not be empty: name the team this policy is for")
                }
                toolgate_core::ids::IdError { message, .. } => {
                    format!("{path}: {team:?} {message}: use the team's id")
                }
            },
        })
}
