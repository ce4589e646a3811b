//! The `toolgate` client commands, run as the real binary against a real server on
//! an ephemeral port: what an org admin or a CI job sees, exit codes included.

use crate::support;

use serde_json::Value;
use std::path::Path;
use support::*;
use tokio::io::{AsyncBufReadExt, BufReader};
use toolgate::proto::v1 as pb;

/// The binary's result.
#[derive(Debug)]
pub(crate) struct Run {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Run {
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", self.stdout))
    }
}

/// The binary, with no `TOOLGATE_*` variable of ours leaking in from the test's env.
fn command() -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolgate"));
    for (key, _) in std::env::vars() {
        if key.starts_with("TOOLGATE_") {
            cmd.env_remove(key);
        }
    }
    cmd.kill_on_drop(true);
    cmd
}

pub(crate) async fn toolgate_as(server: &TestServer, token: &str, args: &[&str]) -> Run {
    let out = command()
        .args([
            "--server",
            &format!("http://{}", server.addr),
            "--token",
            token,
        ])
        .args(args)
        .output()
        .await
        .expect("run toolgate");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

pub(crate) async fn toolgate(server: &TestServer, args: &[&str]) -> Run {
    toolgate_as(server, "admin-token", args).await
}

pub(crate) fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

async fn admin_settings(server: &TestServer) -> pb::TeamAdminSettings {
    server
        .admin("admin-token")
        .get_team_admin_settings(pb::GetTeamAdminSettingsRequest {
            team_id: TEAM.into(),
        })
        .await
        .unwrap()
        .into_inner()
        .settings
        .unwrap()
}

const V1: &str = "\
team: acme
auto_run_controls:
  enabled: true
  mcp_tool_allowlist: [\"jira:*\"]
  mcp_tool_blocklist: [\"github:delete_*\"]
";

const V2: &str = "\
team: acme
auto_run_controls:
  enabled: true
  mcp_tool_allowlist: [\"jira:*\", \"github:get_*\"]
  mcp_tool_blocklist: [\"github:delete_*\"]
";

#[tokio::test(flavor = "multi_thread")]
async fn apply_diff_dry_run_stale_revision_and_audit() {
    let (server, dir) = start().await;
    let v1 = write(dir.path(), "team.yaml", V1);

    let diff = toolgate(&server, &["admin", "diff", "-f", &v1]).await;
    assert_eq!(diff.code, 3, "diff finds changes: {}", diff.stderr);
    assert!(
        diff.stdout.contains("+ mcp_tool_allowlist: \"jira:*\""),
        "{}",
        diff.stdout
    );

    let dry = toolgate(&server, &["admin", "apply", "-f", &v1, "--dry-run"]).await;
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    assert!(
        dry.stdout.contains("dry run: nothing applied"),
        "{}",
        dry.stdout
    );
    assert_eq!(admin_settings(&server).await.revision, 0, "dry run wrote");

    let applied = toolgate(&server, &["admin", "apply", "-f", &v1]).await;
    assert_eq!(applied.code, 0, "{}", applied.stderr);
    assert!(
        applied
            .stdout
            .contains("applied: team acme is at revision 1"),
        "{}",
        applied.stdout
    );
    let diff = toolgate(&server, &["admin", "diff", "-f", &v1]).await;
    assert_eq!(diff.code, 0, "no differences left: {}", diff.stdout);

    // an admin reads the policy (with its revision) to edit it...
    let got = toolgate(&server, &["admin", "get", "--team", TEAM]).await;
    assert_eq!(got.code, 0);
    assert!(got.stdout.contains("revision: 1\n"), "{}", got.stdout);
    let edited = write(
        dir.path(),
        "edited.yaml",
        &got.stdout
            .replace("kill_switch: false", "kill_switch: true"),
    );
    // ...while someone else applies first
    let v2 = write(dir.path(), "v2.yaml", V2);
    assert_eq!(
        toolgate(&server, &["admin", "apply", "-f", &v2]).await.code,
        0
    );

    let stale = toolgate(&server, &["admin", "apply", "-f", &edited]).await;
    assert_eq!(
        stale.code, 4,
        "stale revision: {} {}",
        stale.stdout, stale.stderr
    );
    assert!(
        stale
            .stderr
            .contains("not applied: team acme changed since revision 1")
            && stale.stderr.contains("admin diff -f"),
        "{}",
        stale.stderr
    );
    // the hint names the revision to apply at: following it applies the edit
    assert!(
        stale.stderr.contains("change `revision: 1` in ")
            && stale.stderr.contains("to `revision: 2`")
            && stale.stderr.contains("--expected-revision 2"),
        "{}",
        stale.stderr
    );
    let now = admin_settings(&server).await;
    assert_eq!(now.revision, 2, "a stale apply changed something");
    let controls = now.auto_run_controls.unwrap();
    assert!(!controls.kill_switch);
    assert_eq!(controls.mcp_tool_allowlist, ["jira:*", "github:get_*"]);

    // the flag names the revision too, and JSON reports the conflict
    let stale = toolgate(
        &server,
        &[
            "admin",
            "apply",
            "-f",
            &v1,
            "--expected-revision",
            "1",
            "-o",
            "json",
        ],
    )
    .await;
    assert_eq!(stale.code, 4);
    let report = stale.json();
    assert_eq!(report["applied"], false);
    assert_eq!(report["expected_revision"], 1);
    assert_eq!(admin_settings(&server).await.revision, 2);

    // both applies are in the audit trail, by the admin; nothing else wrote
    let audit = toolgate(
        &server,
        &[
            "audit",
            "list",
            "--team",
            TEAM,
            "--kind",
            "admin_settings_updated",
            "-o",
            "json",
        ],
    )
    .await;
    assert_eq!(audit.code, 0, "{}", audit.stderr);
    let events = audit.json()["events"].as_array().unwrap().clone();
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(
        events
            .iter()
            .map(|e| e["revision"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        [1, 2]
    );
    assert!(events.iter().all(|e| e["actor"] == "admin"));
    let human = toolgate(&server, &["audit", "list", "--actor", "admin"]).await;
    assert_eq!(human.stdout.lines().count(), 2, "{}", human.stdout);
    assert!(human.stdout.contains("admin_settings_updated"));
    let limited = toolgate(&server, &["audit", "list", "--limit", "1", "-o", "json"]).await;
    assert_eq!(limited.json()["events"].as_array().unwrap().len(), 1);

    // the exit-4 hint, followed as written, applies the edit (it does not loop)
    let text = std::fs::read_to_string(&edited).unwrap();
    std::fs::write(&edited, text.replace("revision: 1\n", "revision: 2\n")).unwrap();
    let applied = toolgate(&server, &["admin", "apply", "-f", &edited]).await;
    assert_eq!(applied.code, 0, "{} {}", applied.stdout, applied.stderr);
    let now = admin_settings(&server).await;
    assert_eq!(now.revision, 3);
    assert!(now.auto_run_controls.unwrap().kill_switch);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn invalid_files_and_usage_errors_have_their_exit_codes() {
    let (server, dir) = start().await;
    let bad = write(
        dir.path(),
        "bad.yaml",
        "team: acme\nauto_run_controls:\n  mcp_tool_allowlist:\n    - nocolon\n  enabeld: true\n",
    );
    let run = toolgate(&server, &["admin", "diff", "-f", &bad]).await;
    assert_eq!(run.code, 1);
    assert!(
        run.stderr
            .contains("bad.yaml:5: auto_run_controls: unknown field `enabeld`"),
        "{}",
        run.stderr
    );
    let bad = write(
        dir.path(),
        "bad2.yaml",
        "team: acme\nauto_run_controls:\n  mcp_tool_allowlist:\n    - \"jira:*\"\n    - nocolon\n",
    );
    let run = toolgate(&server, &["admin", "apply", "-f", &bad]).await;
    assert_eq!(run.code, 1);
    assert!(
        run.stderr
            .contains("bad2.yaml:5: auto_run_controls.mcp_tool_allowlist[1]: \"nocolon\" breaks rule separator"),
        "{}",
        run.stderr
    );
    assert_eq!(admin_settings(&server).await.revision, 0);

    let run = toolgate(
        &server,
        &[
            "evaluate", "--team", TEAM, "--user", "alice", "--mcp", "nocolon",
        ],
    )
    .await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    let run = toolgate(&server, &["kill-switch", "maybe", "--team", TEAM]).await;
    assert_eq!(run.code, 2, "clap's own usage errors exit 2 too");
    let run = toolgate_as(&server, "no-such-token", &["admin", "get", "--team", TEAM]).await;
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("Unauthenticated"), "{}", run.stderr);
    let run = toolgate_as(
        &server,
        "other-admin-token",
        &["admin", "get", "--team", TEAM],
    )
    .await;
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("PermissionDenied"), "{}", run.stderr);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn allowlist_commands_follow_the_seed_rules() {
    let (server, _dir) = start().await;
    let add = |entry: &'static str| {
        let server = &server;
        async move {
            toolgate(
                server,
                &[
                    "allowlist",
                    "add",
                    "--team",
                    TEAM,
                    "--user",
                    "alice",
                    entry,
                    "-o",
                    "json",
                ],
            )
            .await
            .json()
        }
    };
    let first = add("github:create_issue").await;
    assert_eq!(first["changed"], true);
    assert_eq!(
        first["mcp_allowed_tools"],
        serde_json::json!(["github:create_issue"])
    );
    let again = add("github:create_issue").await;
    assert_eq!(again["changed"], false);
    assert!(
        again["detail"]
            .as_str()
            .unwrap()
            .contains("already in the allowlist")
    );
    assert_eq!(add("github:*").await["changed"], true);
    let covered = add("github:merge_pr").await;
    assert_eq!(covered["changed"], false);
    assert!(
        covered["detail"]
            .as_str()
            .unwrap()
            .contains("covered by github:*"),
        "{covered}"
    );

    let list = toolgate(
        &server,
        &["allowlist", "list", "--team", TEAM, "--user", "alice"],
    )
    .await;
    assert_eq!(list.code, 0);
    assert!(
        list.stdout.contains("acme/alice (revision 2):"),
        "{}",
        list.stdout
    );
    assert!(list.stdout.contains("  github:*"));
    let removed = toolgate(
        &server,
        &[
            "allowlist",
            "remove",
            "--team",
            TEAM,
            "--user",
            "alice",
            "github:create_issue",
            "-o",
            "json",
        ],
    )
    .await
    .json();
    assert_eq!(
        removed["mcp_allowed_tools"],
        serde_json::json!(["github:*"])
    );
    // a member edits only their own list
    let bob = toolgate_as(
        &server,
        "bob-token",
        &[
            "allowlist",
            "add",
            "--team",
            TEAM,
            "--user",
            "alice",
            "jira:x",
        ],
    )
    .await;
    assert_eq!(bob.code, 1);
    let invalid = toolgate(
        &server,
        &[
            "allowlist",
            "add",
            "--team",
            TEAM,
            "--user",
            "alice",
            "git*hub:x",
        ],
    )
    .await;
    assert_eq!(invalid.code, 1);
    assert!(
        invalid.stderr.contains("InvalidArgument"),
        "{}",
        invalid.stderr
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn evaluate_exit_codes_and_the_kill_switch() {
    let (server, dir) = start().await;
    let v1 = write(dir.path(), "team.yaml", V1);
    assert_eq!(
        toolgate(&server, &["admin", "apply", "-f", &v1]).await.code,
        0
    );
    server.yolo("alice").await;
    let eval = |call: &'static str| {
        let server = &server;
        async move {
            toolgate(
                server,
                &[
                    "evaluate",
                    "--team",
                    TEAM,
                    "--user",
                    "alice",
                    "--mcp",
                    call,
                    "--exit-code",
                ],
            )
            .await
        }
    };
    let allow = eval("jira:create_ticket").await;
    assert_eq!(allow.code, 0, "{}{}", allow.stdout, allow.stderr);
    assert!(
        allow.stdout.starts_with("ALLOW (ALLOWLISTED)"),
        "{}",
        allow.stdout
    );
    assert!(
        allow.stdout.contains("why:\n  1. kill_switch: off"),
        "{}",
        allow.stdout
    );
    assert_eq!(eval("github:create_issue").await.code, 10);
    assert_eq!(eval("github:delete_repo").await.code, 11);
    // without --exit-code a decision is a success whatever it is
    let plain = toolgate(
        &server,
        &[
            "evaluate",
            "--team",
            TEAM,
            "--user",
            "alice",
            "--mcp",
            "github:delete_repo",
            "-o",
            "json",
        ],
    )
    .await;
    assert_eq!(plain.code, 0);
    let d = plain.json();
    assert_eq!(
        (d["outcome"].as_str(), d["reason"].as_str()),
        (Some("DENY"), Some("BLOCKED_BY_ADMIN"))
    );
    assert_eq!(d["matched_entry"], "github:delete_*");
    assert!(!d["explanation"].as_array().unwrap().is_empty());

    let on = toolgate(
        &server,
        &["kill-switch", "on", "--team", TEAM, "-o", "json"],
    )
    .await;
    assert_eq!(on.code, 0, "{}", on.stderr);
    assert_eq!(on.json()["kill_switch"], true);
    let killed = eval("jira:create_ticket").await;
    assert_eq!(killed.code, 11);
    assert!(
        killed.stdout.starts_with("DENY (KILL_SWITCH)"),
        "{}",
        killed.stdout
    );
    let again = toolgate(&server, &["kill-switch", "on", "--team", TEAM]).await;
    assert!(again.stdout.contains("already on"), "{}", again.stdout);
    // the switch changed only itself
    let controls = admin_settings(&server).await.auto_run_controls.unwrap();
    assert_eq!(controls.mcp_tool_allowlist, ["jira:*"]);
    assert_eq!(
        toolgate(&server, &["kill-switch", "off", "--team", TEAM])
            .await
            .code,
        0
    );
    assert_eq!(eval("jira:create_ticket").await.code, 0);
    let audit = toolgate(&server, &["audit", "list", "--team", TEAM, "-o", "json"])
        .await
        .json();
    let kinds: Vec<&str> = audit["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"decision_denied"), "{kinds:?}");
    assert_eq!(
        kinds
            .iter()
            .filter(|k| **k == "admin_settings_updated")
            .count(),
        3
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn json_output_parses_and_env_configures_the_connection() {
    let (server, dir) = start().await;
    let token_file = write(dir.path(), "token", "admin-token\n");
    let out = command()
        .env("TOOLGATE_SERVER", server.addr.to_string())
        .env("TOOLGATE_TOKEN_FILE", &token_file)
        .args(["admin", "get", "--team", TEAM, "--output", "json"])
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(got["policy"]["team"], TEAM);
    assert_eq!(got["revision"], 0);

    let v1 = write(dir.path(), "team.yaml", V1);
    for args in [
        &["admin", "diff", "-f", &v1][..],
        &["admin", "apply", "-f", &v1, "--dry-run"],
        &["admin", "apply", "-f", &v1],
        &["admin", "get", "--team", TEAM],
        &["allowlist", "list", "--team", TEAM, "--user", "alice"],
        &[
            "evaluate",
            "--team",
            TEAM,
            "--user",
            "alice",
            "--shell",
            "git status",
        ],
        &["audit", "list"],
        &["kill-switch", "off", "--team", TEAM],
    ] {
        let run = toolgate(&server, &[args, &["-o", "json"]].concat()).await;
        assert!(run.code == 0 || run.code == 3, "{args:?}: {}", run.stderr);
        let _ = run.json();
        assert_eq!(
            run.stdout.trim().lines().count(),
            1,
            "{args:?}: one JSON document"
        );
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn watch_prints_each_change() {
    let (server, dir) = start().await;
    let mut child = command()
        .args([
            "--server",
            &format!("http://{}", server.addr),
            "--token",
            "admin-token",
        ])
        .args(["watch", "--team", TEAM, "--user", "alice", "-o", "json"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(first["event"], "snapshot");
    let v1 = write(dir.path(), "team.yaml", V1);
    assert_eq!(
        toolgate(&server, &["admin", "apply", "-f", &v1]).await.code,
        0
    );
    let change = loop {
        let line = lines.next_line().await.unwrap().expect("watch ended");
        let event: Value = serde_json::from_str(&line).unwrap();
        if event["event"] != "heartbeat" {
            break event;
        }
    };
    assert_eq!(change["event"], "admin");
    assert_eq!(change["revision"], 1);
    assert_eq!(change["data"]["by"], "admin");
    assert_eq!(
        change["data"]["controls"]["mcp_tool_allowlist"],
        serde_json::json!(["jira:*"])
    );
    child.kill().await.unwrap();
    server.stop().await;
}

/// A developer's enrolment through the CLI: an admin issues a token (shown once), the
/// developer turns auto-run on with it (no ids: the token names them), their lists
/// untouched; the token is listed and revoked, and then refused.
#[tokio::test(flavor = "multi_thread")]
async fn token_and_user_commands_enrol_a_developer() {
    let (server, _dir) = start().await;
    let created = toolgate(
        &server,
        &[
            "token",
            "create",
            "--team",
            TEAM,
            "--user",
            "zed",
            "--expires",
            "30d",
            "-o",
            "json",
        ],
    )
    .await;
    assert_eq!(created.code, 0, "{}", created.stderr);
    let created = created.json();
    let secret = created["secret"].as_str().unwrap().to_owned();
    let id = created["token"]["token_id"].as_str().unwrap().to_owned();
    assert_eq!(created["token"]["role"], "member");
    let human = toolgate(
        &server,
        &["token", "create", "--team", TEAM, "--user", "yan"],
    )
    .await;
    assert!(human.stdout.contains("shown once"), "{}", human.stdout);

    // zed's list first, then auto-run alone: the list stays
    server
        .users("admin-token")
        .add_to_allowlist(pb::AddToAllowlistRequest {
            team_id: TEAM.into(),
            user_id: "zed".into(),
            server: "github".into(),
            tool: "*".into(),
        })
        .await
        .unwrap();
    let set = toolgate_as(
        &server,
        &secret,
        &["user", "set", "--auto-run", "on", "-o", "json"],
    )
    .await;
    assert_eq!(set.code, 0, "{}", set.stderr);
    let got = toolgate_as(&server, &secret, &["user", "get", "-o", "json"])
        .await
        .json();
    assert_eq!(got["user"], "zed");
    assert_eq!(got["auto_run"], true);
    assert_eq!(got["mcp_allowed_tools"], serde_json::json!(["github:*"]));
    let human = toolgate_as(&server, &secret, &["user", "get"]).await;
    assert!(human.stdout.contains("auto-run: on"), "{}", human.stdout);
    let nothing = toolgate_as(&server, &secret, &["user", "set"]).await;
    assert_eq!(nothing.code, 2, "{}", nothing.stderr);

    // a member may not issue tokens
    let refused = toolgate_as(
        &server,
        &secret,
        &["token", "create", "--team", TEAM, "--user", "x"],
    )
    .await;
    assert_eq!(refused.code, 1);
    assert!(
        refused.stderr.contains("PermissionDenied"),
        "{}",
        refused.stderr
    );

    let listed = toolgate(&server, &["token", "list"]).await;
    assert!(listed.stdout.contains(&id), "{}", listed.stdout);
    assert!(!listed.stdout.contains(&secret));
    let revoked = toolgate(&server, &["token", "revoke", &id]).await;
    assert_eq!(revoked.code, 0, "{}", revoked.stderr);
    assert!(revoked.stdout.contains("revoked"), "{}", revoked.stdout);
    let after = toolgate_as(&server, &secret, &["user", "get"]).await;
    assert_eq!(after.code, 1);
    assert!(after.stderr.contains("Unauthenticated"), "{}", after.stderr);
    server.stop().await;
}

/// `check-config` runs the checks `serve` makes before binding and reports every
/// problem at once, each naming its key or variable, without figment's `default.`.
#[tokio::test]
async fn check_config_reports_every_problem_with_its_key() {
    let dir = tempfile::tempdir().unwrap();
    let config = write(
        dir.path(),
        "c.yaml",
        &format!(
            "listen: 127.0.0.1:7070\ndata_dir: {}\nlog:\n  level: verbose\ntls:\n  cert: {}/missing.pem\n  key: {}/missing.key\npolicy_file: {}/missing-policy.yaml\n",
            dir.path().join("data").display(),
            dir.path().display(),
            dir.path().display(),
            dir.path().display()
        ),
    );
    let out = command()
        .args(["check-config", "--config", &config])
        .env("TOOLGATE_WATCH__HEARTBEAT_SECS", "soon")
        .env("TOOLGATE_TEAM", "acme")
        .env("TOOLGATE_HOOK_ASK", "deny")
        .output()
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{text}");
    for needle in [
        "log.level",
        "TOOLGATE_WATCH__HEARTBEAT_SECS (watch.heartbeat_secs)",
        "missing.pem",
        "policy_file",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in {text}");
    }
    assert!(!text.contains("default."), "{text}");
    assert!(!text.contains("TOOLGATE_TEAM"), "a client variable: {text}");
}

/// `toolgate init` writes files that are valid as written (the configuration passes
/// `check-config`, the policies parse), and refuses to overwrite them.
#[tokio::test]
async fn init_writes_a_valid_starter_and_keeps_existing_files() {
    let dir = tempfile::tempdir().unwrap();
    let at = dir.path().join("starter");
    let at_str = at.display().to_string();
    let out = command()
        .args(["init", "--dir", &at_str, "--team", "acme"])
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // the `next:` line works from any directory: the paths inside follow the file
    let said = String::from_utf8_lossy(&out.stdout);
    let next = said
        .lines()
        .find_map(|l| l.strip_prefix("next: toolgate serve --config "))
        .unwrap_or_else(|| panic!("no next: line in {said}"));
    assert!(said.contains("auto-run on"), "{said}");
    let elsewhere = tempfile::tempdir().unwrap();
    let check = command()
        .args(["check-config", "--config", next])
        .current_dir(elsewhere.path())
        .output()
        .await
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    let team = std::fs::read_to_string(at.join("team.yaml")).unwrap();
    let team = toolgate::policy_file::parse_team_policy("team.yaml", &team).unwrap();
    let defaults = team
        .auto_run_controls
        .default_user_settings
        .as_deref()
        .expect("team defaults");
    assert!(
        defaults.use_yolo_mode,
        "the starter's allowed calls auto-run"
    );
    let again = command()
        .args(["init", "--dir", &at_str])
        .output()
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&again.stderr);
    assert!(
        !again.status.success() && text.contains("--force"),
        "{text}"
    );
}

/// Shell completions and the manual page come from the same command definition.
#[tokio::test]
async fn completion_and_man_page() {
    for shell in ["bash", "zsh", "fish"] {
        let out = command()
            .args(["completion", shell])
            .output()
            .await
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success() && text.contains("toolgate"), "{shell}");
    }
    let out = command().arg("man").output().await.unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains(".TH toolgate"),
        "{text}"
    );
}

/// `evaluate` takes what the API takes: a built-in tool by any client's name, the
/// agent, its role and context, the working directory and the call's arguments.
#[tokio::test]
async fn evaluate_takes_builtins_agents_and_arguments() {
    let (server, _dir) = start().await;
    server
        .set_controls(pb::AutoRunControls {
            enabled: true,
            mcp_tool_allowlist: vec!["builtin:read_file".into()],
            ..Default::default()
        })
        .await;
    server.yolo("alice").await;
    let eval = |extra: &'static [&'static str]| {
        let server = &server;
        async move {
            let mut args = vec!["evaluate", "--team", TEAM, "--user", "alice", "--exit-code"];
            args.extend_from_slice(extra);
            toolgate(server, &args).await
        }
    };
    // Claude Code's `Read` and Gemini's `read_file` are one tool
    for name in ["Read", "read_file"] {
        let run = eval(if name == "Read" {
            &["--builtin", "Read"]
        } else {
            &["--builtin", "read_file"]
        })
        .await;
        assert_eq!(run.code, 0, "{name}: {}{}", run.stdout, run.stderr);
        assert!(run.stdout.starts_with("ALLOW"), "{name}: {}", run.stdout);
    }
    assert_eq!(eval(&["--builtin", "Write"]).await.code, 10);
    // an agent, its role and the call's arguments reach the server
    let run = eval(&[
        "--builtin",
        "Read",
        "--agent",
        "a1",
        "--role",
        "Explore",
        "--session",
        "s1",
        "--cwd",
        "/work",
        "--tool-input",
        r#"{"file_path": "src/main.rs"}"#,
    ])
    .await;
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let bad = eval(&["--builtin", "Read", "--tool-input", "[1]"]).await;
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(bad.stderr.contains("--tool-input"), "{}", bad.stderr);
}
/// What only the server can check (a team's categories: `@readonlyy` is neither a
/// preset nor one of them) fails the dry run and the diff as it fails the apply, each
/// refusal placed at its line of the file; nothing is written.
#[tokio::test]
async fn dry_runs_ask_the_server_and_place_its_refusal() {
    let (server, dir) = start().await;
    let typo = write(
        dir.path(),
        "typo.yaml",
        "team: acme\nauto_run_controls:\n  enabled: true\n  mcp_tool_allowlist:\n    - \"jira:*\"\n    - \"@readonlyy\"\n",
    );
    for args in [
        vec!["admin", "apply", "-f", &typo, "--dry-run"],
        vec!["admin", "diff", "-f", &typo],
        vec!["admin", "apply", "-f", &typo],
    ] {
        let out = toolgate(&server, &args).await;
        assert_eq!(out.code, 1, "{args:?}: {} {}", out.stdout, out.stderr);
        assert!(
            out.stderr
                .contains("typo.yaml:6: auto_run_controls.mcp_tool_allowlist[1]"),
            "{args:?}: {}",
            out.stderr
        );
    }
    assert_eq!(admin_settings(&server).await.revision, 0, "nothing written");
    server.stop().await;
}

/// The first hour's paper cuts: a misspelt team, a missing token, a token file that is
/// not there and an operator listing decisions without a team each name their fix.
#[tokio::test]
async fn errors_name_the_flag_that_fixes_them() {
    let (server, dir) = start().await;
    let typo = toolgate_as(
        &server,
        "operator-token",
        &[
            "evaluate", "--team", "acmee", "--user", "alice", "--mcp", "jira:x",
        ],
    )
    .await;
    assert!(
        typo.stderr
            .contains("team acmee has no settings: check --team"),
        "{}",
        typo.stderr
    );

    // a HOME of its own: no client profile supplies a token
    let no_token = command()
        .env("HOME", dir.path())
        .env("XDG_CONFIG_HOME", dir.path())
        .args(["--server", &format!("http://{}", server.addr)])
        .args(["decisions", "list", "--team", TEAM])
        .output()
        .await
        .unwrap();
    let said = String::from_utf8_lossy(&no_token.stderr);
    assert!(
        said.contains("--token-file") && said.contains("toolgate login"),
        "{said}"
    );

    let missing = dir.path().join("nope");
    let nope = command()
        .env("HOME", dir.path())
        .env("XDG_CONFIG_HOME", dir.path())
        .args(["--server", &format!("http://{}", server.addr)])
        .arg("--token-file")
        .arg(&missing)
        .args(["decisions", "list", "--team", TEAM])
        .output()
        .await
        .unwrap();
    let said = String::from_utf8_lossy(&nope.stderr);
    assert!(said.contains("--token-file"), "{said}");

    let operator = toolgate_as(&server, "operator-token", &["decisions", "list"]).await;
    assert_eq!(operator.code, 2, "{}", operator.stderr);
    assert!(
        operator.stderr.contains("--team is needed"),
        "{}",
        operator.stderr
    );
    assert_eq!(
        operator.stderr.lines().count(),
        1,
        "said once: {}",
        operator.stderr
    );
    server.stop().await;
}
