//! Parsing and validating the team policy and the server's policy file, with every
//! problem located by line.

use super::checks::{check_controls, check_team_id, entry_error, normalise, sorted, yaml_error};
use super::examples::{check_answers, check_shapes};
use super::limits::check_limits;
use super::locate::line_at;
use super::{ManagedPolicy, PolicyFileError, TeamPolicy};
use serde::Deserialize;
use std::collections::HashSet;
use toolgate_core::examples::Example;
use toolgate_core::policy::{AdminControls, ToolActionList, ToolActionLists};

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
    /// Calls and the answers they must get: a failing one refuses the file.
    #[serde(default)]
    examples: Vec<Example>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct McpServerList {
    server: String,
    #[serde(default)]
    allowed_tools: Vec<String>,
}

/// Parses and validates a team policy; every invalid entry is reported, and every
/// example that does not get the answer it expects.
pub fn parse_team_policy(file: &str, text: &str) -> Result<TeamPolicy, Vec<PolicyFileError>> {
    let policy = parse_team_policy_untested(file, text)?;
    let mut errors = Vec::new();
    check_answers(
        file,
        text,
        "examples",
        &ToolActionLists::default(),
        &policy.auto_run_controls,
        &policy.examples,
        &mut errors,
    );
    if errors.is_empty() {
        Ok(policy)
    } else {
        Err(errors)
    }
}

/// [`parse_team_policy`] but for the examples' answers (their shapes are checked):
/// `toolgate test` runs them as cases and reports each.
pub fn parse_team_policy_untested(
    file: &str,
    text: &str,
) -> Result<TeamPolicy, Vec<PolicyFileError>> {
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
    check_shapes(file, text, "examples", &policy.examples, &mut errors);
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
    let mut examples = Vec::with_capacity(parsed.teams.len());
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
        check_shapes(
            file,
            text,
            &format!("{at}.examples"),
            &t.examples,
            &mut errors,
        );
        let mut controls = t.auto_run_controls;
        normalise(&mut controls);
        examples.push((at, t.examples));
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
    // decided last, under the file's tool.action lists as the server will decide
    if errors.is_empty() {
        for ((at, examples), (_, controls)) in examples.iter().zip(&teams) {
            check_answers(
                file,
                text,
                &format!("{at}.examples"),
                &tool_actions,
                controls,
                examples,
                &mut errors,
            );
        }
    }
    if errors.is_empty() {
        Ok(ManagedPolicy {
            teams,
            tool_actions,
        })
    } else {
        Err(sorted(errors))
    }
}

/// The warnings about a valid team policy (an allowed code runner), located.
pub fn team_policy_warnings(file: &str, text: &str, policy: &TeamPolicy) -> Vec<PolicyFileError> {
    located_warnings(file, text, "auto_run_controls.", &policy.auto_run_controls)
}

/// The warnings about each team of a valid server policy file, located.
pub fn managed_policy_warnings(file: &str, text: &str) -> Vec<PolicyFileError> {
    let Ok(parsed) = serde_norway::from_str::<ManagedFile>(text) else {
        return Vec::new();
    };
    parsed
        .teams
        .iter()
        .enumerate()
        .flat_map(|(i, t)| {
            located_warnings(
                file,
                text,
                &format!("teams[{i}].auto_run_controls."),
                &t.auto_run_controls,
            )
        })
        .collect()
}

fn located_warnings(
    file: &str,
    text: &str,
    prefix: &str,
    controls: &AdminControls,
) -> Vec<PolicyFileError> {
    toolgate_core::policy::warnings(controls)
        .into_iter()
        .map(|w| {
            let path = format!("{prefix}{}", w.field);
            PolicyFileError {
                file: file.to_owned(),
                line: line_at(text, &path).unwrap_or(0),
                message: format!("{path}: {}", w.message),
            }
        })
        .collect()
}
