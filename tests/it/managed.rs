//! Native managed delivery: `toolgate managed claude-code`, Claude Code's
//! `policyHelper`, through the real binary (its settings, its cache, its failures) and
//! through the real Claude Code CLI, which reads the helper from its managed settings
//! file. Claude Code has no override of that file's path (`/etc/claude-code`), so the
//! CLI runs in a private mount namespace with an overlay on `/etc`: the machine's own
//! `/etc` is never written.

use crate::claude_code::{claude_binary, claude_output, markers_direct};
use crate::support;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use support::*;
use toolgate::proto::v1 as pb;

/// A token file only its owner reads, holding `token`.
fn token_file(dir: &Path, token: &str) -> PathBuf {
    let path = dir.join(format!("{token}.txt"));
    std::fs::write(&path, format!("{token}\n")).unwrap();
    set_mode(&path, 0o600);
    path
}

fn set_mode(path: &Path, mode: u32) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
}

/// The helper's command line (as an admin's wrapper script runs it).
fn helper_args(addr: &str, token: &Path, cache: &Path) -> Vec<String> {
    vec![
        "managed".into(),
        "claude-code".into(),
        "--server".into(),
        addr.into(),
        "--token-file".into(),
        token.display().to_string(),
        "--cache".into(),
        cache.display().to_string(),
    ]
}

/// `toolgate ARGS` with `vars` and none of the test's `TOOLGATE_*`: (exit code,
/// stdout, stderr).
async fn toolgate(args: &[String], vars: &[(&str, &str)]) -> (Option<i32>, String, String) {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolgate"));
    for (key, _) in std::env::vars().filter(|(k, _)| k.starts_with("TOOLGATE_")) {
        cmd.env_remove(key);
    }
    let out = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        cmd.args(args)
            .envs(vars.iter().copied())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the helper finished within 60 s")
    .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The controls the tests use: `touch` denied, `mkdir` allowed, one MCP server
/// blocked whole, only `markers` allowed to exist, and every lock on.
fn controls() -> pb::AutoRunControls {
    pb::AutoRunControls {
        enabled: true,
        allowed: vec!["mkdir".into()],
        denied: vec!["touch".into()],
        mcp_tool_blocklist: vec!["evil:*".into()],
        mcp_access_mode: pb::McpAccessMode::Allowlist as i32,
        mcp_access_allowlist: vec!["markers:*".into()],
        managed: Some(pb::ManagedDelivery {
            disable_bypass_permissions_mode: true,
            allow_user_hooks: false,
            managed_permission_rules_only: true,
            claude_code_minimum_version: "2.0.0".into(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The helper prints the managed settings from the effective policy, keeps them in a
/// private cache, answers from it while the server is down, and fails (so Claude Code
/// will not start) only with neither; a cache others may change is not read, and the
/// environment never redirects it.
#[tokio::test(flavor = "multi_thread")]
async fn the_helper_prints_managed_settings_and_answers_from_its_cache() {
    let (server, _data) = start().await;
    server.set_controls(controls()).await;
    let dir = tempfile::tempdir().unwrap();
    let token = token_file(dir.path(), "alice-token");
    let cache = dir.path().join("cache/claude-code.json");
    let addr = format!("http://{}", server.addr);
    let args = helper_args(&addr, &token, &cache);
    // a repository's settings may set the client's environment: it changes nothing
    let hostile = [("TOOLGATE_SERVER", "http://127.0.0.1:9")];

    let (code, stdout, stderr) = toolgate(&args, &hostile).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("ignored TOOLGATE_SERVER"), "{stderr}");
    let online: Value = serde_json::from_str(&stdout).unwrap();
    let settings = &online["managedSettings"];
    let hook = settings["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap();
    assert!(
        hook.contains(" hook claude-code --server ") && hook.contains("--token-file"),
        "{hook}"
    );
    assert_eq!(settings["hooks"]["PreToolUse"][0]["matcher"], "*");
    assert_eq!(settings["allowManagedHooksOnly"], true);
    assert_eq!(settings["allowManagedPermissionRulesOnly"], true);
    assert_eq!(settings["requiredMinimumVersion"], "2.0.0");
    assert_eq!(
        settings["permissions"]["disableBypassPermissionsMode"],
        "disable"
    );
    let deny = settings["permissions"]["deny"].to_string();
    assert!(deny.contains("Bash(touch *)"), "{deny}");
    assert_eq!(
        settings["allowedMcpServers"],
        json!([{"serverName": "markers"}])
    );
    assert_eq!(
        settings["deniedMcpServers"],
        json!([{"serverName": "evil"}])
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&cache).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    // the server gone: the same settings from the cache
    server.stop().await;
    let (code, stdout, stderr) = toolgate(&args, &[]).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("answering from the policy cached"),
        "{stderr}"
    );
    assert_eq!(serde_json::from_str::<Value>(&stdout).unwrap(), online);

    // a cache others may change, one for another user, and none: no answer
    set_mode(&cache, 0o644);
    let (code, stdout, stderr) = toolgate(&args, &[]).await;
    assert_eq!((code, stdout.as_str()), (Some(1), ""), "{stderr}");
    assert!(stderr.contains("mode 644"), "{stderr}");
    set_mode(&cache, 0o600);
    let bob = token_file(dir.path(), "bob-token");
    let mut as_bob = helper_args(&addr, &bob, &cache);
    as_bob.extend(["--user".into(), "bob".into()]);
    let (code, _, stderr) = toolgate(&as_bob, &[]).await;
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("another server, team or user"), "{stderr}");
    std::fs::remove_file(&cache).unwrap();
    let (code, stdout, stderr) = toolgate(&args, &[]).await;
    assert_eq!((code, stdout.as_str()), (Some(1), ""), "{stderr}");
    assert!(stderr.contains("will not start"), "{stderr}");
}

/// Hostile or broken caches: each is refused with a reason, never read as a policy.
#[tokio::test(flavor = "multi_thread")]
async fn a_cache_that_is_not_a_policy_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let token = token_file(dir.path(), "alice-token");
    let cache = dir.path().join("cache.json");
    // nothing listens on port 9 of loopback: the server is unreachable at once
    let args = helper_args("http://127.0.0.1:9", &token, &cache);
    let table: &[(&[u8], &str)] = &[
        (b"", "does not read"),
        (b"{\"key\": 1}", "does not read"),
        (b"[]", "does not read"),
        (b"{\"extra\": true}", "does not read"),
    ];
    for (bytes, says) in table {
        std::fs::write(&cache, bytes).unwrap();
        set_mode(&cache, 0o600);
        let (code, stdout, stderr) = toolgate(&args, &[]).await;
        assert_eq!((code, stdout.as_str()), (Some(1), ""), "{stderr}");
        assert!(stderr.contains(says), "{bytes:?}: {stderr}");
    }
    // larger than any policy
    std::fs::write(&cache, vec![b' '; 5 * 1024 * 1024]).unwrap();
    let (code, _, stderr) = toolgate(&args, &[]).await;
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("larger than"), "{stderr}");
    // a directory, not a file
    std::fs::remove_file(&cache).unwrap();
    std::fs::create_dir(&cache).unwrap();
    let (code, _, stderr) = toolgate(&args, &[]).await;
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("not a regular file"), "{stderr}");
}

/// Whether this process may make a private mount namespace with an overlay on /etc
/// (root, or CAP_SYS_ADMIN); without it the Claude Code test says so and passes,
/// except in CI.
pub(crate) fn private_etc_possible(dir: &Path) -> bool {
    let upper = dir.join("probe-upper");
    let work = dir.join("probe-work");
    std::fs::create_dir_all(&upper).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    let ok = std::process::Command::new("unshare")
        .args([
            "-m",
            "--propagation",
            "private",
            "mount",
            "-t",
            "overlay",
            "overlay",
            "-o",
        ])
        .arg(format!(
            "lowerdir=/etc,upperdir={},workdir={}",
            upper.display(),
            work.display()
        ))
        .arg("/etc")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true but no private mount namespace can be made: run the tests as root"
        );
        eprintln!(
            "skipped: the Claude Code managed-settings test needs a private mount namespace (run as root)"
        );
    }
    ok
}

/// A script that runs Claude Code in a private mount namespace whose `/etc` has
/// `managed` as `/etc/claude-code/managed-settings.json` over the machine's own.
fn claude_with_managed_settings(dir: &Path, claude: &Path, managed: &Value) -> PathBuf {
    let upper = dir.join("etc-upper");
    let work = dir.join("etc-work");
    std::fs::create_dir_all(upper.join("claude-code")).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(
        upper.join("claude-code/managed-settings.json"),
        managed.to_string(),
    )
    .unwrap();
    let script = dir.join("claude-managed.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nexec unshare -m --propagation private sh -c 'mount -t overlay overlay -o lowerdir=/etc,upperdir={},workdir={} /etc && exec \"$0\" \"$@\"' {} \"$@\"\n",
            upper.display(),
            work.display(),
            claude.display()
        ),
    )
    .unwrap();
    set_mode(&script, 0o755);
    script
}

/// The helper as an admin's script: Claude Code runs its path with no arguments.
fn policy_helper(dir: &Path, addr: &str, token: &Path, cache: &Path) -> PathBuf {
    let helper = dir.join("policy-helper.sh");
    let words: Vec<String> = helper_args(addr, token, cache)
        .iter()
        .map(|w| format!("'{w}'"))
        .collect();
    std::fs::write(
        &helper,
        format!(
            "#!/bin/sh\nexec '{}' {}\n",
            env!("CARGO_BIN_EXE_toolgate"),
            words.join(" ")
        ),
    )
    .unwrap();
    set_mode(&helper, 0o755);
    helper
}

/// The real Claude Code CLI with a managed settings file naming the helper (and no
/// hook of the user's or the project's): a denied command is refused by the hook the
/// helper delivered; with the server down it still starts from the cache; with neither
/// server nor cache it refuses to start.
#[tokio::test(flavor = "multi_thread")]
async fn claude_code_takes_its_managed_policy_from_the_helper() {
    let Some(claude) = claude_binary() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    if !private_etc_possible(dir) {
        return;
    }
    let (server, _data) = start().await;
    server
        .set_controls(pb::AutoRunControls {
            managed: None,
            mcp_access_mode: pb::McpAccessMode::Blocklist as i32,
            mcp_access_allowlist: vec![],
            ..controls()
        })
        .await;
    server.yolo("alice").await;
    let token = token_file(dir, "alice-token");
    let cache = dir.join("helper-cache.json");
    let addr = format!("http://{}", server.addr);
    let helper = policy_helper(dir, &addr, &token, &cache);
    let wrapped = claude_with_managed_settings(
        dir,
        &claude,
        &json!({"policyHelper": {"path": helper, "timeoutMs": 10000}}),
    );
    // no hook of the user's or the project's
    let settings = dir.join("no-hooks.json");
    std::fs::write(&settings, "{}").unwrap();
    let touch = |path: &Path| {
        json!({"name": "Bash", "input": {"command": format!("touch {}", path.display()),
                                          "description": "make a marker"}})
    };
    let results = |model: &crate::claude_code::FakeModel| {
        model
            .tool_results()
            .iter()
            .map(|r| r["content"].to_string())
            .collect::<Vec<_>>()
            .join("\n")
    };

    let denied = dir.join("denied-marker");
    let (out, model) =
        claude_output(&wrapped, dir, &settings, &markers_direct(), touch(&denied)).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "claude ran: {stderr}");
    assert!(!denied.exists(), "the denied touch did not run");
    // refused by the managed hook, or first by the managed deny rule beside it
    assert!(
        results(&model).contains("toolgate DENY (COMMAND_DENIED)")
            || results(&model).contains("denied"),
        "model received: {}",
        results(&model)
    );
    assert!(cache.exists(), "the helper kept its answer");

    // the server down: Claude Code starts from the cached policy, and the managed hook
    // blocks even a command the managed rules allow (nothing else would)
    server.stop().await;
    let down = dir.join("down-dir");
    let mkdir = json!({"name": "Bash", "input": {"command": format!("mkdir {}", down.display()),
                                                  "description": "make a directory"}});
    let (out, model) = claude_output(&wrapped, dir, &settings, &markers_direct(), mkdir).await;
    assert!(out.status.success(), "claude started from the cache");
    assert!(!down.exists(), "nothing runs while toolgate is down");
    assert!(
        results(&model).contains("toolgate could not decide"),
        "model received: {}",
        results(&model)
    );

    // neither server nor cache: Claude Code refuses to start
    std::fs::remove_file(&cache).unwrap();
    let never = dir.join("never-marker");
    let (out, model) =
        claude_output(&wrapped, dir, &settings, &markers_direct(), touch(&never)).await;
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "claude refused to start: {said}");
    assert!(said.contains("policyHelper"), "{said}");
    assert!(model.tool_results().is_empty(), "no call was made");
    assert!(!never.exists());
}

/// Claude Code re-runs the helper at its refresh (`refreshIntervalMs`, at least a
/// minute) while a session runs, and so receives a policy changed after it started:
/// the session's one call sleeps past the refresh while the test changes the policy.
/// What the helper printed each time is kept beside it. Runs with
/// TOOLGATE_TEST_CLAUDE and root only, and takes over a minute.
#[tokio::test(flavor = "multi_thread")]
async fn claude_code_refreshes_its_managed_policy_from_the_helper() {
    let Some(claude) = claude_binary() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    if !private_etc_possible(dir) {
        return;
    }
    let (server, _data) = start().await;
    let before = pb::AutoRunControls {
        managed: None,
        mcp_access_mode: pb::McpAccessMode::Blocklist as i32,
        mcp_access_allowlist: vec![],
        allowed: vec!["sleep".into()],
        ..controls()
    };
    server.set_controls(before.clone()).await;
    server.yolo("alice").await;
    let token = token_file(dir, "alice-token");
    let cache = dir.join("helper-cache.json");
    let printed = dir.join("helper-printed.jsonl");
    let addr = format!("http://{}", server.addr);
    let words: Vec<String> = helper_args(&addr, &token, &cache)
        .iter()
        .map(|w| format!("'{w}'"))
        .collect();
    let helper = dir.join("policy-helper.sh");
    std::fs::write(
        &helper,
        format!(
            "#!/bin/sh\nout=$('{}' {})\nrc=$?\nprintf '%s\\n' \"$out\" >> '{}'\nprintf '%s\\n' \"$out\"\nexit $rc\n",
            env!("CARGO_BIN_EXE_toolgate"),
            words.join(" "),
            printed.display()
        ),
    )
    .unwrap();
    set_mode(&helper, 0o755);
    let wrapped = claude_with_managed_settings(
        dir,
        &claude,
        &json!({"policyHelper": {"path": helper, "timeoutMs": 10000,
                                  "refreshIntervalMs": 60000}}),
    );
    let settings = dir.join("no-hooks.json");
    std::fs::write(&settings, "{}").unwrap();
    let sleep = json!({"name": "Bash", "input": {"command": "sleep 75",
        "description": "wait past the refresh", "timeout": 110000}});
    // each answer the helper printed, in order (a document may span lines)
    let printed_lines = || {
        let text = std::fs::read_to_string(&printed).unwrap_or_default();
        serde_json::Deserializer::from_str(&text)
            .into_iter::<Value>()
            .map_while(Result::ok)
            .collect::<Vec<_>>()
    };
    let session = {
        let (wrapped, dir, settings) = (wrapped.clone(), dir.to_owned(), settings.clone());
        tokio::spawn(async move {
            claude_output(&wrapped, &dir, &settings, &markers_direct(), sleep).await
        })
    };
    // the helper's answer at start, then the change
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while printed_lines().is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "Claude Code did not run the helper at start within 60 s"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(
        !printed_lines()[0].to_string().contains("Bash(wget *)"),
        "{:?}",
        printed_lines()
    );
    server
        .set_controls(pb::AutoRunControls {
            denied: vec!["touch".into(), "wget".into()],
            ..before
        })
        .await;
    let (out, _model) = session.await.unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "claude ran: {stderr}");
    let lines = printed_lines();
    assert!(
        lines.len() >= 2,
        "the helper ran {} times in a session of over a minute",
        lines.len()
    );
    let refreshed = lines.last().unwrap();
    assert!(
        refreshed["managedSettings"]["permissions"]["deny"]
            .to_string()
            .contains("Bash(wget *)"),
        "the refresh carried the change: {refreshed}"
    );
}

/// Claude Code does not load an MCP server the team denies by its launch command
/// (`deniedMcpServers`' `serverCommand`, from the helper): the model is never offered
/// its tools. Denied by a URL pattern instead, the same stdio server loads. Runs with
/// TOOLGATE_TEST_CLAUDE and root only.
#[tokio::test(flavor = "multi_thread")]
async fn claude_code_does_not_load_a_server_denied_by_its_command() {
    let Some(claude) = claude_binary() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    if !private_etc_possible(dir) {
        return;
    }
    // the command exactly as markers_direct() configures the server
    let launch = markers_direct()["mcpServers"]["markers"].clone();
    let mut words = vec![launch["command"].as_str().unwrap().to_owned()];
    words.extend(
        launch["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().to_owned()),
    );
    let denying = |identity: pb::mcp_server_identity::Identity| pb::AutoRunControls {
        enabled: true,
        managed: Some(pb::ManagedDelivery {
            denied_mcp_servers: vec![pb::McpServerIdentity {
                identity: Some(identity),
            }],
            ..Default::default()
        }),
        ..Default::default()
    };
    let (server, _data) = start().await;
    server
        .set_controls(denying(pb::mcp_server_identity::Identity::Command(
            pb::CommandWords {
                words: words.clone(),
            },
        )))
        .await;
    server.yolo("alice").await;
    let token = token_file(dir, "alice-token");
    let cache = dir.join("helper-cache.json");
    let helper = policy_helper(dir, &format!("http://{}", server.addr), &token, &cache);
    let wrapped = claude_with_managed_settings(
        dir,
        &claude,
        &json!({"policyHelper": {"path": helper, "timeoutMs": 10000}}),
    );
    let settings = dir.join("no-hooks.json");
    std::fs::write(&settings, "{}").unwrap();
    let call = json!({"name": "mcp__markers__safe", "input": {}});
    let offered_markers = |model: &crate::claude_code::FakeModel| -> Vec<String> {
        model
            .offered_tools()
            .into_iter()
            .flatten()
            .filter(|t| t.starts_with("mcp__markers__"))
            .collect()
    };

    let (out, model) =
        claude_output(&wrapped, dir, &settings, &markers_direct(), call.clone()).await;
    assert!(
        out.status.success(),
        "claude ran: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !model.offered_tools().is_empty(),
        "the model was asked with tools"
    );
    assert_eq!(
        offered_markers(&model),
        Vec::<String>::new(),
        "the server denied by its command was not loaded"
    );

    server
        .set_controls(denying(pb::mcp_server_identity::Identity::Url(
            "https://mcp.example.com/*".into(),
        )))
        .await;
    let (out, model) = claude_output(&wrapped, dir, &settings, &markers_direct(), call).await;
    assert!(out.status.success(), "claude ran");
    assert!(
        offered_markers(&model).contains(&"mcp__markers__safe".to_owned()),
        "a URL pattern does not match a stdio server: {:?}",
        model.offered_tools()
    );
    server.stop().await;
}

/// MCP servers by identity that break a rule are refused at the API, naming the entry
/// (an identity with no kind set too: never read as matching anything).
#[tokio::test]
async fn hostile_server_identities_are_refused_naming_the_entry() {
    use pb::mcp_server_identity::Identity;
    let (server, _data) = start().await;
    let cases = [
        (None, "managed.denied_mcp_servers[0].name"),
        (
            Some(Identity::Url("ftp://evil.example/".into())),
            "managed.denied_mcp_servers[0].url",
        ),
        (
            Some(Identity::Command(pb::CommandWords { words: vec![] })),
            "managed.denied_mcp_servers[0].command: no program",
        ),
        (
            Some(Identity::Name("my.server".into())),
            "letters, digits, - and _ only",
        ),
    ];
    for (identity, want) in cases {
        let err = server
            .admin("admin-token")
            .update_team_admin_settings(pb::UpdateTeamAdminSettingsRequest {
                team_id: TEAM.into(),
                auto_run_controls: Some(pb::AutoRunControls {
                    managed: Some(pb::ManagedDelivery {
                        denied_mcp_servers: vec![pb::McpServerIdentity { identity }],
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                expected_revision: None,
            })
            .await
            .unwrap_err();
        assert_eq!(err.code(), tonic::Code::InvalidArgument, "{err:?}");
        assert!(err.message().contains(want), "{want}: {}", err.message());
    }
}
