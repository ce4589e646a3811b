//! `toolgate test FILE…`: policy test files run offline against the policy core, no
//! server: each case's call decided under the team policy the file names, and
//! compared with the answer it expects. Exit 0 when every case passes, 1 when one
//! fails, 2 when a file cannot be run as written.

use crate::examples::Example;
use crate::policy::ToolActionLists;
use crate::policy::groups::GroupPolicies;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use toolgate_files::policy_file::{self, ExampleResult, PolicyFileError, PolicyTest, TeamPolicy};

/// Exit code when a case got another answer than it expects.
pub const EXIT_FAILED: i32 = 1;
/// Exit code when a file cannot be run (unreadable, invalid YAML, a bad case).
pub const EXIT_BAD_FILE: i32 = 2;

#[derive(Debug, clap::Args)]
pub struct TestArgs {
    /// Policy test files (YAML): the team policy under test (`policy_path:` or
    /// `policy:`), optional `user:`, `agent:`, `cwd:` and `groups:`, and `cases:`, each a call
    /// (`mcp:`, `shell:`, `delete_file:` or `builtin:`) with the answer it must get
    /// (`expect:`, optional `reason:` and `matched_entry:`). The team policy's own
    /// `examples:` run too.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// Also write the results as JUnit XML to this file, for CI.
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// The organisation's group policies: a `kind: group` document with `org: true`,
    /// as `admin apply` writes it. A case's groups get them combined with the team's
    /// as the server does; without it no organisation-wide policy applies.
    #[arg(long, value_name = "FILE")]
    org: Option<PathBuf>,
}

/// One case run: where it is written, what it is, and what became of it.
struct CaseRun {
    /// `file:line`, where the case is written.
    at: String,
    title: String,
    expected: String,
    /// None when it passed; the answer it got and why, when it failed.
    failure: Option<(String, String)>,
}

/// One file run: its cases, or why it could not be run.
struct FileRun {
    name: String,
    outcome: Result<Vec<CaseRun>, Vec<String>>,
}

/// Runs the files; prints failures to stdout, bad files to stderr, and a summary.
pub fn test(args: TestArgs) -> anyhow::Result<i32> {
    let org = match &args.org {
        Some(path) => match super::group_doc::read_org_groups(path) {
            Ok(org) => org,
            Err(e) => {
                eprintln!("error: --org: {e:#}");
                return Ok(EXIT_BAD_FILE);
            }
        },
        None => GroupPolicies::new(),
    };
    let runs: Vec<FileRun> = args.files.iter().map(|f| run_file(f, &org)).collect();
    let mut out = String::new();
    let mut err = String::new();
    let (mut cases, mut failed, mut bad) = (0, 0, 0);
    for run in &runs {
        match &run.outcome {
            Ok(results) => {
                for case in results {
                    cases += 1;
                    if let Some((got, why)) = &case.failure {
                        failed += 1;
                        let _ = writeln!(out, "FAIL {}: {}", case.at, case.title);
                        let _ = writeln!(out, "  expected: {}", case.expected);
                        let _ = writeln!(out, "  got:      {got}");
                        for (i, line) in why.lines().enumerate() {
                            let label = if i == 0 {
                                "  why:      "
                            } else {
                                "            "
                            };
                            let _ = writeln!(out, "{label}{line}");
                        }
                    }
                }
            }
            Err(errors) => {
                bad += 1;
                for e in errors {
                    let _ = writeln!(err, "error: {e}");
                }
            }
        }
    }
    let files = runs.len();
    let _ = write!(
        out,
        "{files} file{}, {cases} case{}: {} passed, {failed} failed",
        plural(files),
        plural(cases),
        cases - failed
    );
    if bad > 0 {
        let _ = write!(out, ", {bad} file{} could not be run", plural(bad));
    }
    out.push('\n');
    print!("{out}");
    eprint!("{err}");
    if let Some(path) = &args.junit {
        toolgate_files::write_atomic(
            path,
            toolgate_files::Mode::KeepTarget,
            junit(&runs).as_bytes(),
        )
        .map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))?;
    }
    Ok(if bad > 0 {
        EXIT_BAD_FILE
    } else if failed > 0 {
        EXIT_FAILED
    } else {
        0
    })
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn run_file(path: &Path, org: &GroupPolicies) -> FileRun {
    let name = path.display().to_string();
    let outcome = load(path, &name).map(|(test, test_text, policy, policy_name, policy_text)| {
        let mut runs = Vec::new();
        // the team policy's own examples are cases too, reported where they are written
        let own = policy_file::run_examples(
            &ToolActionLists::default(),
            &policy.auto_run_controls,
            &policy.examples,
        );
        collect(
            &mut runs,
            &policy_name,
            &policy_text,
            "examples",
            &policy.examples,
            own,
        );
        let cases: Vec<Example> = (0..test.cases.len()).map(|i| test.case(i)).collect();
        let results = policy_file::run_examples_in(
            &ToolActionLists::default(),
            org,
            &policy.auto_run_controls,
            &cases,
        );
        collect(&mut runs, &name, &test_text, "cases", &cases, results);
        runs
    });
    FileRun { name, outcome }
}

type Loaded = (PolicyTest, String, TeamPolicy, String, String);

/// The test file and the team policy it names, each read and validated.
fn load(path: &Path, name: &str) -> Result<Loaded, Vec<String>> {
    let lines = |errors: Vec<PolicyFileError>| -> Vec<String> {
        errors.iter().map(ToString::to_string).collect()
    };
    let text = policy_file::read_file(path).map_err(|e| vec![format!("{name}: {e}")])?;
    let test = policy_file::parse_policy_test(name, &text).map_err(lines)?;
    match (&test.policy, &test.policy_path) {
        (Some(policy), _) => {
            // an inline policy's examples are located in the test file itself
            let policy = policy.clone();
            Ok((test, text.clone(), policy, name.to_owned(), text))
        }
        (None, Some(relative)) => {
            let base = path.parent().unwrap_or(Path::new(""));
            let policy_path = base.join(relative);
            let policy_name = policy_path.display().to_string();
            let policy_text = policy_file::read_file(&policy_path).map_err(|e| {
                let line = policy_file::line_at(&text, "policy_path").unwrap_or(0);
                vec![format!(
                    "{name}:{line}: policy_path: {policy_name}: {e}: give the team policy's path relative to the test file"
                )]
            })?;
            let policy = policy_file::parse_team_policy_untested(&policy_name, &policy_text)
                .map_err(lines)?;
            Ok((test, text, policy, policy_name, policy_text))
        }
        (None, None) => Err(vec![format!("{name}: names no team policy")]),
    }
}

/// Each example's run, located at `file:line` of `path[i]`.
fn collect(
    runs: &mut Vec<CaseRun>,
    file: &str,
    text: &str,
    path: &str,
    examples: &[Example],
    results: Result<Vec<ExampleResult>, String>,
) {
    // the prefix of an inline policy's examples
    let path = if path == "examples" && policy_file::line_at(text, "policy.examples").is_some() {
        "policy.examples"
    } else {
        path
    };
    let results = match results {
        Ok(results) => results,
        Err(e) => {
            runs.push(CaseRun {
                at: file.to_owned(),
                title: "the policy".into(),
                expected: "a policy that compiles".into(),
                failure: Some((e, String::new())),
            });
            return;
        }
    };
    for (i, (example, result)) in examples.iter().zip(results).enumerate() {
        let line = policy_file::line_at(text, &format!("{path}[{i}]")).unwrap_or(0);
        let failure = match result {
            Ok(None) => None,
            Ok(Some(got)) => Some((got.got(), got.why())),
            Err(e) => Some(("no answer".into(), e.to_string())),
        };
        runs.push(CaseRun {
            at: format!("{file}:{line}"),
            title: example.title(),
            expected: example.expected(),
            failure,
        });
    }
}

/// The results as JUnit XML: a suite per file, a case per case, a file that could
/// not be run as a suite with an error.
fn junit(runs: &[FileRun]) -> String {
    let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let total: usize = runs
        .iter()
        .map(|r| r.outcome.as_ref().map_or(1, Vec::len))
        .sum();
    let failures: usize = runs
        .iter()
        .filter_map(|r| r.outcome.as_ref().ok())
        .flatten()
        .filter(|c| c.failure.is_some())
        .count();
    let errors = runs.iter().filter(|r| r.outcome.is_err()).count();
    let _ = writeln!(
        xml,
        "<testsuites name=\"toolgate test\" tests=\"{total}\" failures=\"{failures}\" errors=\"{errors}\">"
    );
    for run in runs {
        let name = escape(&run.name);
        match &run.outcome {
            Ok(cases) => {
                let failed = cases.iter().filter(|c| c.failure.is_some()).count();
                let _ = writeln!(
                    xml,
                    "  <testsuite name=\"{name}\" tests=\"{}\" failures=\"{failed}\" errors=\"0\">",
                    cases.len()
                );
                for case in cases {
                    let title = escape(&case.title);
                    let _ = write!(
                        xml,
                        "    <testcase name=\"{title}\" classname=\"{}\"",
                        escape(&case.at)
                    );
                    match &case.failure {
                        None => xml.push_str("/>\n"),
                        Some((got, why)) => {
                            let _ = writeln!(
                                xml,
                                ">\n      <failure message=\"expected {}, got {}\">{}</failure>\n    </testcase>",
                                escape(&case.expected),
                                escape(got),
                                escape(why)
                            );
                        }
                    }
                }
            }
            Err(errors) => {
                let _ = writeln!(
                    xml,
                    "  <testsuite name=\"{name}\" tests=\"1\" failures=\"0\" errors=\"1\">\n    <testcase name=\"the file\" classname=\"{name}\">\n      <error message=\"the file cannot be run\">{}</error>\n    </testcase>",
                    escape(&errors.join("\n"))
                );
            }
        }
        xml.push_str("  </testsuite>\n");
    }
    xml.push_str("</testsuites>\n");
    xml
}

/// Text for XML: the five markup characters escaped, and the characters XML 1.0
/// cannot carry at all (most control characters) written as `?`.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => out.push('?'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn xml_text_is_escaped_and_control_characters_replaced() {
        assert_eq!(escape("a<b>&\"'\u{1}\n"), "a&lt;b&gt;&amp;&quot;&apos;?\n");
    }
}
