//! Policy examples in the YAML formats: a team policy's and the policy file's
//! `examples:` (each must get the answer it expects, or the policy is refused), and
//! `toolgate test` files (a team policy, optional user settings and agent, cases).

use super::checks::{check_controls, check_team_id, normalise, yaml_error};
use super::limits::check_limits;
use super::locate::line_at;
use super::{PolicyFileError, TeamPolicy};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolgate_core::examples::{Example, ExampleAgent, MAX_EXAMPLES, Mismatch, Under};
use toolgate_core::policy::groups::GroupPolicies;
use toolgate_core::policy::{
    AdminControls, CompiledAdmin, CompiledUser, ToolActionLists, UserSettings,
};

/// A `toolgate test` file: the team policy under test and the cases it must answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PolicyTest {
    /// The team policy's YAML file, relative to this file (or give `policy`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_path: Option<String>,
    /// The team policy itself, as `toolgate admin get` prints it (or give `policy_path`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<TeamPolicy>,
    /// The user's settings for every case that names none (default: the team's default
    /// user settings, else toolgate's defaults).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<UserSettings>,
    /// The agent of every case that names none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<ExampleAgent>,
    /// The caller's groups for every case that names none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub groups: Option<Vec<String>>,
    /// The working directory of every case that names none (absolute).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The calls and the answers they must get.
    pub cases: Vec<Example>,
}

impl PolicyTest {
    /// Case `i` with the file's user, agent and working directory where it names none.
    pub fn case(&self, i: usize) -> Example {
        let mut case = self.cases[i].clone();
        if case.user.is_none() {
            case.user.clone_from(&self.user);
        }
        if case.agent.is_none() {
            case.agent.clone_from(&self.agent);
        }
        if case.groups.is_none() {
            case.groups.clone_from(&self.groups);
        }
        if case.cwd.is_none() {
            case.cwd.clone_from(&self.cwd);
        }
        case
    }
}

/// Parses a `toolgate test` file; every problem is reported, located by line. An
/// inline policy is validated as a team policy is, but its own examples are left to
/// the caller to run (as cases of their own).
pub fn parse_policy_test(file: &str, text: &str) -> Result<PolicyTest, Vec<PolicyFileError>> {
    check_limits(file, text)?;
    let mut test: PolicyTest = serde_norway::from_str(text).map_err(|e| {
        let mut error = yaml_error(file, &e);
        // the keys of a test file are in the page's section on testing
        error.message = error.message.replace(
            "docs/team-policy.md lists the keys",
            "docs/team-policy.md, \"Testing a policy\", lists the keys",
        );
        vec![error]
    })?;
    let mut errors = Vec::new();
    let at = |path: &str| line_at(text, path).unwrap_or(0);
    match (&test.policy_path, &mut test.policy) {
        (Some(_), None) => {}
        (None, Some(policy)) => {
            match check_team_id(file, text, "policy.team", &policy.team) {
                Ok(team) => policy.team = team,
                Err(e) => errors.push(e),
            }
            check_controls(
                file,
                text,
                "policy.auto_run_controls.",
                &policy.auto_run_controls,
                &mut errors,
            );
            normalise(&mut policy.auto_run_controls);
            check_shapes(file, text, "policy.examples", &policy.examples, &mut errors);
        }
        (path, _) => errors.push(PolicyFileError {
            file: file.to_owned(),
            line: at("policy").max(at("policy_path")).max(1),
            message: format!(
                "names {} team policies: give exactly one, policy_path: team.yaml or policy: {{team: …, auto_run_controls: …}}",
                if path.is_some() { 2 } else { 0 }
            ),
        }),
    }
    if let Some(cwd) = &test.cwd
        && !cwd.starts_with('/')
    {
        errors.push(PolicyFileError {
            file: file.to_owned(),
            line: at("cwd"),
            message: format!("cwd: {cwd:?} is not absolute: give the working directory from /"),
        });
    }
    if let Some(user) = &test.user
        && let Err(e) = CompiledUser::compile(user)
    {
        errors.push(PolicyFileError {
            file: file.to_owned(),
            line: at("user"),
            message: format!("user: {e}: fix the entry"),
        });
    }
    if test.cases.is_empty() {
        errors.push(PolicyFileError {
            file: file.to_owned(),
            line: at("cases").max(1),
            message: "cases: there are none: give at least one call and the answer it must get"
                .into(),
        });
    }
    // the file's defaults count: a case is checked as it will run
    let cases: Vec<Example> = (0..test.cases.len()).map(|i| test.case(i)).collect();
    check_shapes(file, text, "cases", &cases, &mut errors);
    if errors.is_empty() {
        Ok(test)
    } else {
        errors.sort_by_key(|e| e.line);
        Err(errors)
    }
}

/// Each example's shape and limits (not yet its answer), at `path[i]`.
pub(super) fn check_shapes(
    file: &str,
    text: &str,
    path: &str,
    examples: &[Example],
    errors: &mut Vec<PolicyFileError>,
) {
    if examples.len() > MAX_EXAMPLES {
        errors.push(PolicyFileError {
            file: file.to_owned(),
            line: line_at(text, path).unwrap_or(0),
            message: format!(
                "{path}: {} examples is more than the limit of {MAX_EXAMPLES}: split them over test files",
                examples.len()
            ),
        });
        return;
    }
    for (i, example) in examples.iter().enumerate() {
        if let Err(e) = example.check() {
            let at = format!("{path}[{i}]");
            let field = if e.field.is_empty() {
                at.clone()
            } else {
                format!("{at}.{}", e.field)
            };
            errors.push(PolicyFileError {
                file: file.to_owned(),
                line: line_at(text, &field)
                    .or_else(|| line_at(text, &at))
                    .unwrap_or(0),
                message: format!("{field}: {}", e.message),
            });
        }
    }
}

/// One example's result: `None` when it got what it expects.
pub type ExampleResult = Result<Option<Mismatch>, toolgate_core::examples::ExampleError>;

/// Decides every example under `controls` (and the policy file's lists), with the
/// team's default user settings where an example names none.
pub fn run_examples(
    files: &ToolActionLists,
    controls: &AdminControls,
    examples: &[Example],
) -> Result<Vec<ExampleResult>, String> {
    run_examples_in(files, &GroupPolicies::new(), controls, examples)
}

/// [`run_examples`] with the organisation's group policies `org` combined, as the
/// server combines them, for a case's groups.
pub fn run_examples_in(
    files: &ToolActionLists,
    org: &GroupPolicies,
    controls: &AdminControls,
    examples: &[Example],
) -> Result<Vec<ExampleResult>, String> {
    let admin = CompiledAdmin::compile(controls).map_err(|e| e.to_string())?;
    let defaults = controls
        .default_user_settings
        .as_deref()
        .cloned()
        .unwrap_or_default();
    let user = CompiledUser::compile(&defaults).map_err(|e| e.to_string())?;
    let under = Under {
        files,
        team: controls,
        org,
        admin: &admin,
        user: &user,
    };
    Ok(examples.iter().map(|e| e.run(&under)).collect())
}

/// Refuses a policy whose examples do not get the answers they expect: each failure
/// located at `path[i]`, with what it got and why.
pub(super) fn check_answers(
    file: &str,
    text: &str,
    path: &str,
    files: &ToolActionLists,
    controls: &AdminControls,
    examples: &[Example],
    errors: &mut Vec<PolicyFileError>,
) {
    if examples.is_empty() {
        return;
    }
    let results = match run_examples(files, controls, examples) {
        Ok(results) => results,
        // the controls' own problems are reported where they are checked
        Err(_) => return,
    };
    for (i, (example, result)) in examples.iter().zip(results).enumerate() {
        let at = format!("{path}[{i}]");
        let line = line_at(text, &at).unwrap_or(0);
        let message = match result {
            Ok(None) => continue,
            Ok(Some(got)) => format!(
                "{at} ({}): expected {}, got {}: {}: change the policy or the example",
                example.title(),
                example.expected(),
                got.got(),
                got.decision.message(&got.call)
            ),
            Err(e) if e.field.is_empty() => format!("{at}: {}", e.message),
            Err(e) => format!("{at}.{}: {}", e.field, e.message),
        };
        errors.push(PolicyFileError {
            file: file.to_owned(),
            line,
            message,
        });
    }
}
