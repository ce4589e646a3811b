//! `toolgate test`, run as the real binary on the files of `tests/data/policy_tests/`:
//! its output and exit code for each (goldens in `*.golden`, `UPDATE_GOLDEN=1`
//! rewrites them), its JUnit XML, a team policy's failing example refusing
//! `admin apply`, `admin diff` and the server's policy file, and the warning about
//! an allowed code runner.

use crate::support::*;
use std::path::{Path, PathBuf};
use std::time::Duration;
use toolgate::proto::v1 as pb;

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/policy_tests")
}

/// The binary run from the repository root, so the paths it prints are stable.
fn toolgate(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .env_clear()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .output()
        .expect("run toolgate")
}

/// Exit code, stdout and stderr, as the goldens hold them.
fn transcript(out: &std::process::Output) -> String {
    format!(
        "exit {}\n--- stdout\n{}--- stderr\n{}",
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn check_golden(golden: &Path, got: &str, mismatches: &mut Vec<String>) {
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(golden, got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(golden)
        .unwrap_or_else(|_| panic!("{} missing: run with UPDATE_GOLDEN=1", golden.display()));
    if got != want {
        mismatches.push(format!(
            "{}:\n--- want\n{want}--- got\n{got}",
            golden.display()
        ));
    }
}

#[test]
fn each_test_file_gives_its_golden_output_and_exit_code() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(data())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".test.yaml"))
        .collect();
    files.sort();
    assert!(files.len() >= 10, "test files missing");
    let mut mismatches = Vec::new();
    for file in &files {
        let name = file.file_name().unwrap().to_str().unwrap();
        let out = toolgate(&["test", &format!("tests/data/policy_tests/{name}")]);
        let golden = data().join(name.replace(".test.yaml", ".golden"));
        check_golden(&golden, &transcript(&out), &mut mismatches);
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

#[test]
fn exit_codes_are_0_all_passed_1_a_failure_2_a_bad_file() {
    let code = |files: &[&str]| {
        let mut args = vec!["test"];
        let paths: Vec<String> = files
            .iter()
            .map(|f| format!("tests/data/policy_tests/{f}.test.yaml"))
            .collect();
        args.extend(paths.iter().map(String::as_str));
        toolgate(&args).status.code()
    };
    assert_eq!(code(&["good"]), Some(0));
    assert_eq!(code(&["good", "inline"]), Some(0));
    assert_eq!(code(&["good", "failing"]), Some(1));
    // a file that cannot be run outweighs a failure, and the others still run
    assert_eq!(code(&["failing", "bad_case", "good"]), Some(2));
    let out = toolgate(&["test"]);
    assert_eq!(out.status.code(), Some(2), "no file is a usage error");
}

#[test]
fn junit_output_has_a_suite_per_file_and_a_failure_per_failed_case() {
    let dir = tempfile::tempdir().unwrap();
    let xml = dir.path().join("results.xml");
    let out = toolgate(&[
        "test",
        "tests/data/policy_tests/good.test.yaml",
        "tests/data/policy_tests/failing.test.yaml",
        "tests/data/policy_tests/bad_case.test.yaml",
        "--junit",
        xml.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", transcript(&out));
    let text = std::fs::read_to_string(&xml).unwrap();
    let mut mismatches = Vec::new();
    check_golden(&data().join("junit.golden"), &text, &mut mismatches);
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
    // counts a CI reader takes from the root element
    assert!(
        text.contains(r#"<testsuites name="toolgate test" tests="21" failures="2" errors="1">"#),
        "{text}"
    );
}

/// A policy whose example no longer holds: apply and diff refuse it before sending
/// anything, naming the example and what it got; with the example fixed it applies.
#[tokio::test(flavor = "multi_thread")]
async fn a_failing_example_refuses_apply_and_diff() {
    let (server, dir) = start().await;
    let file = dir.path().join("team.yaml");
    let policy = |expect: &str| {
        format!(
            "team: {TEAM}\nauto_run_controls:\n  enabled: true\n  allowed: [\"cargo test\"]\n  mcp_tool_allowlist: [\"jira:*\"]\n  default_user_settings: {{use_yolo_mode: true}}\nexamples:\n  - mcp: jira:search\n    expect: ALLOW\n  - name: github needs approval\n    mcp: github:get_issue\n    expect: {expect}\n"
        )
    };
    std::fs::write(&file, policy("ALLOW")).unwrap();
    let run = |sub: &'static str| {
        let file = file.clone();
        let addr = server.addr;
        async move {
            let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolgate"))
                .env_clear()
                .kill_on_drop(true)
                .args([
                    "--server",
                    &format!("http://{addr}"),
                    "--token",
                    "admin-token",
                ])
                .args(["admin", sub, "-f"])
                .arg(&file)
                .output();
            tokio::time::timeout(Duration::from_secs(60), out)
                .await
                .expect("toolgate blocked")
                .unwrap()
        }
    };
    for sub in ["apply", "diff"] {
        let out = run(sub).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{sub}: {stderr}");
        assert!(
            stderr.contains("team.yaml:10: examples[1] (github needs approval): expected ALLOW, got ASK NOT_IN_ADMIN_ALLOWLIST"),
            "{sub}: {stderr}"
        );
    }
    let settings = server
        .admin("admin-token")
        .get_team_admin_settings(pb::GetTeamAdminSettingsRequest {
            team_id: TEAM.into(),
        })
        .await
        .unwrap()
        .into_inner()
        .settings
        .expect("settings");
    assert_eq!(settings.revision, 0, "a refused apply wrote");
    std::fs::write(&file, policy("ASK")).unwrap();
    let out = run("apply").await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    // valid, applied, and the allowed code runner is said
    assert!(
        stderr.contains("warning: ")
            && stderr.contains("team.yaml:4: auto_run_controls.allowed[0]: \"cargo test\" runs code the command line does not show"),
        "{stderr}"
    );
    server.stop().await;
}

/// The server's policy file with a failing example: `check-config` refuses it (the
/// server loads the file through the same parse, so it refuses it too, fail closed,
/// as any invalid policy file).
#[test]
fn a_failing_example_refuses_the_policy_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("policy.yaml");
    std::fs::write(
        &file,
        "teams:\n  - team: acme\n    auto_run_controls: {enabled: true, allowed: [\"git status\"]}\n    examples:\n      - shell: git status\n        expect: ALLOW\n",
    )
    .unwrap();
    let check = || {
        std::process::Command::new(env!("CARGO_BIN_EXE_toolgate"))
            .env_clear()
            .arg("check-config")
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .arg("--policy-file")
            .arg(&file)
            .output()
            .unwrap()
    };
    let out = check();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "check-config accepted it");
    assert!(
        stderr.contains(
            "teams[0].examples[0] (shell git status): expected ALLOW, got ASK AUTO_RUN_OFF"
        ),
        "{stderr}"
    );
    // with the users' auto-run on by default, the example holds
    std::fs::write(
        &file,
        "teams:\n  - team: acme\n    auto_run_controls:\n      enabled: true\n      allowed: [\"git status\"]\n      default_user_settings: {use_yolo_mode: true}\n    examples:\n      - shell: git status\n        expect: ALLOW\n",
    )
    .unwrap();
    let out = check();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("warning"), "{stderr}");
    // an allowed code runner is warned about, and the file still passes
    std::fs::write(
        &file,
        "teams:\n  - team: acme\n    auto_run_controls:\n      enabled: true\n      allowed: [\"git status\", \"npm run\"]\n",
    )
    .unwrap();
    let out = check();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "policy.yaml:5: teams[0].auto_run_controls.allowed[1]: \"npm run\" runs code"
        ),
        "{stderr}"
    );
}

/// `toolgate test --org FILE`: the organisation's group policies (an `org: true`
/// group document) combine with a case's groups as the server combines them, so the
/// organisation's deny wins over the team's allow (the golden's failing case); a
/// file that is not the organisation's group document cannot be run.
#[test]
fn org_groups_given_by_file_combine_as_the_server_does() {
    let org = |file: &str| format!("tests/data/policy_tests/org/{file}");
    let cases = org("org_groups.test.yaml");
    let out = toolgate(&["test", "--org", &org("org.yaml"), &cases]);
    let mut mismatches = Vec::new();
    check_golden(
        &data().join("org/org_groups.golden"),
        &transcript(&out),
        &mut mismatches,
    );
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
    // without it, no organisation-wide policy applies: its cases fail
    let out = toolgate(&["test", &cases]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{}", transcript(&out));
    assert!(stdout.contains("7 cases: 4 passed, 3 failed"), "{stdout}");
    for (file, says) in [
        ("team_scope.yaml", "holds team acme's group policies"),
        ("bad_entry.yaml", "groups.contractors.denied[0]"),
        ("../team.yaml", "is not a `kind: group` document"),
        ("missing.yaml", "missing.yaml"),
    ] {
        let out = toolgate(&["test", "--org", &org(file), &cases]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{file}: {}", transcript(&out));
        assert!(
            stderr.starts_with("error: --org: ") && stderr.contains(says),
            "{file}: {stderr}"
        );
        // the OS's reason once, not again as the error's cause
        assert!(stderr.matches("(os error").count() <= 1, "{file}: {stderr}");
    }
}
