//! `toolgate sync` through the real binary against a real server, every file under a
//! temporary root: a change committed reaches each client's file, a hand edit is
//! restored and reported as tampering (audited on the server), a server outage keeps the
//! last files; and the clients' own engines read the files it writes (Gemini CLI's
//! policy engine, Codex's `execpolicy` over the requirements' rules).

use crate::export::tool;
use crate::support;

use serde_json::{Value, json};
use sha2::Digest as _;
use std::path::{Path, PathBuf};
use std::time::Duration;
use support::*;
use tokio::io::AsyncBufReadExt as _;
use toolgate::proto::v1 as pb;

const FAKES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fakes");

/// A running `toolgate sync` and the events it printed.
struct Syncing {
    _child: tokio::process::Child,
    events: tokio::sync::mpsc::UnboundedReceiver<Value>,
}

impl Syncing {
    fn start(root: &Path, server: &str, token: &Path) -> Self {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolgate"));
        for (key, _) in std::env::vars().filter(|(k, _)| k.starts_with("TOOLGATE_")) {
            cmd.env_remove(key);
        }
        let mut child = cmd
            .args(["sync", "--server", server, "--token-file"])
            .arg(token)
            .arg("--root")
            .arg(root)
            .args([
                "--user",
                "alice",
                "--check-ms",
                "100",
                "--command",
                "/usr/local/bin/toolgate",
            ])
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let (tx, events) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                let event = serde_json::from_str(&line).unwrap_or(json!({"unreadable": line}));
                if tx.send(event).is_err() {
                    break;
                }
            }
        });
        Self {
            _child: child,
            events,
        }
    }

    /// The first event `wanted` accepts, within 20 s.
    async fn wait(&mut self, what: &str, wanted: impl Fn(&Value) -> bool) -> Value {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        let mut seen = Vec::new();
        loop {
            match tokio::time::timeout_at(deadline, self.events.recv()).await {
                Ok(Some(event)) if wanted(&event) => return event,
                Ok(Some(event)) => seen.push(event),
                Ok(None) => panic!("sync exited before {what}; it printed {seen:#?}"),
                Err(_) => panic!("no {what} within 20 s; sync printed {seen:#?}"),
            }
        }
    }

    /// Waits for `event` of each client in `clients` (in any order), at `revision` or
    /// later.
    async fn each(&mut self, event: &str, clients: &[&str], revision: u64) {
        let mut missing: Vec<&str> = clients.to_vec();
        while !missing.is_empty() {
            let got = self
                .wait(&format!("{event} of {missing:?}"), |e| {
                    e["event"] == event
                        && missing.iter().any(|c| e["client"] == *c)
                        && e["revision"].as_u64().is_some_and(|r| r >= revision)
                })
                .await;
            missing.retain(|c| got["client"] != *c);
        }
    }
}

fn denying(prefixes: &[&str]) -> pb::AutoRunControls {
    pb::AutoRunControls {
        enabled: true,
        allowed: vec!["ls".into()],
        denied: prefixes.iter().map(|p| (*p).to_owned()).collect(),
        ..Default::default()
    }
}

struct Files {
    codex: PathBuf,
    gemini: PathBuf,
    cursor: PathBuf,
    gemini_settings: PathBuf,
}

impl Files {
    fn under(root: &Path) -> Self {
        Self {
            codex: root.join("etc/codex/requirements.toml"),
            gemini: root.join("etc/gemini-cli/policies/toolgate.toml"),
            cursor: root.join("etc/cursor/hooks.json"),
            gemini_settings: root.join("etc/gemini-cli/settings.json"),
        }
    }

    fn read(&self) -> [String; 3] {
        [&self.codex, &self.gemini, &self.cursor].map(|p| std::fs::read_to_string(p).unwrap())
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn sync_keeps_each_clients_file_current_and_restores_hand_edits() {
    let (server, _data) = start().await;
    let first = server.set_controls(denying(&["touch"])).await;
    server.yolo("alice").await;
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "alice-token\n").unwrap();
    let root = dir.path().join("root");
    let files = Files::under(&root);
    let mut sync = Syncing::start(&root, &format!("http://{}", server.addr), &token);

    sync.each(
        "wrote",
        &["codex", "cursor", "gemini", "gemini-settings"],
        first,
    )
    .await;
    let settings: Value =
        serde_json::from_str(&std::fs::read_to_string(&files.gemini_settings).unwrap()).unwrap();
    assert_eq!(settings["hooksConfig"]["enabled"], true, "{settings}");
    assert_eq!(
        settings["hooks"]["BeforeTool"][0]["hooks"][0]["command"],
        "/usr/local/bin/toolgate hook gemini",
        "{settings}"
    );
    let [codex, gemini, cursor] = files.read();
    let requirements: toml::Table = codex.parse().unwrap();
    assert!(codex.contains("decision = \"forbidden\""), "{codex}");
    assert_eq!(
        requirements["allow_managed_hooks_only"].as_bool(),
        Some(true)
    );
    assert!(
        codex.contains("/usr/local/bin/toolgate hook codex"),
        "{codex}"
    );
    assert!(gemini.contains("touch"), "{gemini}");
    let hooks: Value = serde_json::from_str(&cursor).unwrap();
    assert_eq!(
        hooks["hooks"]["beforeShellExecution"][0]["failClosed"],
        true
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&files.gemini)
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o644);
    }

    // a change committed reaches the files it changes (Cursor's hooks do not depend on it)
    let second = server
        .set_controls(denying(&["touch", "terraform destroy"]))
        .await;
    sync.each("wrote", &["codex", "gemini"], second).await;
    let [codex, gemini, _] = files.read();
    assert!(
        codex.contains("terraform") && gemini.contains("terraform"),
        "{codex}\n{gemini}"
    );

    // a hand edit is restored, and reported as tampering (written whole, renamed into
    // place: a plain write truncates first, and sync may read the empty file between)
    write_whole(&files.gemini, "# emptied by hand\n");
    let event = sync
        .wait("the edit restored", |e| {
            e["event"] == "restored" && e["client"] == "gemini"
        })
        .await;
    assert_eq!(event["tampering"], true);
    assert_eq!(std::fs::read_to_string(&files.gemini).unwrap(), gemini);
    // ... and audited on the server, as the sync agent's principal
    sync.wait("the tampering reported", |e| {
        e["event"] == "tampering_reported" && e["recorded"] == true
    })
    .await;
    let tampering = || async {
        server
            .admin("admin-token")
            .list_audit_events(pb::ListAuditEventsRequest {
                team_id: TEAM.into(),
                kind: audit_kind("tampering_detected"),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner()
            .events
    };
    // written by the audit writer just after the answer
    eventually(EVENTUALLY, "the tampering audited", || async {
        !tampering().await.is_empty()
    })
    .await;
    let audited = tampering().await;
    assert_eq!(audited.len(), 1, "{audited:?}");
    assert_eq!(audited[0].actor, "alice");
    let found = detail(&audited[0]);
    let edited = hex::encode(sha2::Sha256::digest(b"# emptied by hand\n"));
    assert_eq!(found["file"], "gemini_policy", "{found}");
    assert_eq!(found["user"], "alice", "{found}");
    assert_eq!(found["found_sha256"], edited.as_str(), "{found}");
    assert_eq!(found["restored"], true, "{found}");
    assert_eq!(
        found["path"],
        std::path::absolute(&files.gemini)
            .unwrap()
            .display()
            .to_string(),
        "{found}"
    );

    // Gemini CLI's system settings are shared: someone else's keys stay, and only a
    // toolgate hook taken out is put back (and reported)
    let mut edited = settings.clone();
    edited["ui"] = json!({"theme": "GitHub"});
    // each edit whole (renamed into place): sync never reads one half written
    let replace = |text: String| write_whole(&files.gemini_settings, &text);
    replace(edited.to_string());
    edited["hooks"]["BeforeTool"] = json!([]);
    edited["hooksConfig"]["enabled"] = json!(false);
    replace(edited.to_string());
    let event = sync
        .wait("the settings' hook put back", |e| {
            e["event"] == "restored" && e["client"] == "gemini-settings"
        })
        .await;
    assert_eq!(event["tampering"], true);
    let settings: Value =
        serde_json::from_str(&std::fs::read_to_string(&files.gemini_settings).unwrap()).unwrap();
    assert_eq!(settings["ui"]["theme"], "GitHub", "{settings}");
    assert_eq!(settings["hooksConfig"]["enabled"], true, "{settings}");
    assert_eq!(
        settings["hooks"]["BeforeTool"][0]["hooks"][0]["command"],
        "/usr/local/bin/toolgate hook gemini",
        "{settings}"
    );

    // the server gone: the last files stay, and are still guarded
    let before = files.read();
    server.stop().await;
    sync.wait("the outage", |e| e["event"] == "unreachable")
        .await;
    std::fs::remove_file(&files.cursor).unwrap();
    sync.wait("the removed file restored", |e| {
        e["event"] == "restored" && e["client"] == "cursor"
    })
    .await;
    assert_eq!(files.read(), before);

    gemini_denies(&files.gemini, "terraform destroy prod").await;
    codex_forbids(&files.codex, &["terraform", "destroy", "prod"]);
}

/// Cursor's enterprise hooks file is shared: the hooks someone else put there stay
/// beside toolgate's, and only toolgate's taken out is put back (and reported).
#[tokio::test(flavor = "multi_thread")]
async fn sync_keeps_others_cursor_hooks() {
    let (server, _data) = start().await;
    let first = server.set_controls(denying(&["touch"])).await;
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "alice-token\n").unwrap();
    let root = dir.path().join("root");
    let files = Files::under(&root);
    std::fs::create_dir_all(files.cursor.parent().unwrap()).unwrap();
    let theirs = json!({"version": 1, "hooks": {
        "afterFileEdit": [{"command": "/opt/audit/edit"}],
        "beforeShellExecution": [{"command": "/opt/audit/shell"}]}});
    std::fs::write(&files.cursor, theirs.to_string()).unwrap();
    let mut sync = Syncing::start(&root, &format!("http://{}", server.addr), &token);
    sync.each("wrote", &["cursor"], first).await;
    let hooks: Value =
        serde_json::from_str(&std::fs::read_to_string(&files.cursor).unwrap()).unwrap();
    let commands = |hooks: &Value, event: &str| -> Vec<String> {
        hooks["hooks"][event]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["command"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        commands(&hooks, "afterFileEdit"),
        ["/opt/audit/edit"],
        "{hooks}"
    );
    let shell = commands(&hooks, "beforeShellExecution");
    assert!(
        shell.contains(&"/opt/audit/shell".to_owned())
            && shell.contains(&"/usr/local/bin/toolgate hook cursor".to_owned()),
        "{hooks}"
    );

    // toolgate's hook taken out (renamed into place, whole): put back, theirs kept
    write_whole(&files.cursor, &theirs.to_string());
    let event = sync
        .wait("the cursor hook put back", |e| {
            e["event"] == "restored" && e["client"] == "cursor"
        })
        .await;
    assert_eq!(event["tampering"], true);
    let hooks: Value =
        serde_json::from_str(&std::fs::read_to_string(&files.cursor).unwrap()).unwrap();
    assert_eq!(
        commands(&hooks, "afterFileEdit"),
        ["/opt/audit/edit"],
        "{hooks}"
    );
    assert!(
        commands(&hooks, "beforeMCPExecution")
            .contains(&"/usr/local/bin/toolgate hook cursor".to_owned()),
        "{hooks}"
    );
    server.stop().await;
}

/// Gemini CLI's own policy engine, reading the synced file as an admin policy, denies
/// `command` (skipped without TOOLGATE_TEST_GEMINI, except in CI).
/// Replaces `file` whole, as an editor saving by rename does: sync, which may look at
/// any moment, never reads it half written (or truncated and not yet written).
fn write_whole(file: &Path, text: &str) {
    let part = file.with_extension("part");
    std::fs::write(&part, text).unwrap();
    std::fs::rename(&part, file).unwrap();
}

async fn gemini_denies(policy: &Path, command: &str) {
    let Some(gemini) = tool("TOOLGATE_TEST_GEMINI") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("calls.json");
    std::fs::write(
        &calls,
        json!([{"name": "run_shell_command", "args": {"command": command}}]).to_string(),
    )
    .unwrap();
    let out = tokio::process::Command::new("node")
        .arg(Path::new(FAKES).join("gemini_policy.mjs"))
        .arg(&gemini)
        .arg(policy.parent().unwrap())
        .arg(&calls)
        .arg("admin")
        .env("HOME", dir.path())
        .output()
        .await
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout.lines().last(), Some("[\"deny\"]"), "{stdout}");
}

/// Codex's own rule engine (`codex execpolicy check`) forbids `argv` under the synced
/// requirements' prefix rules, written as its rules (the check reads no requirements
/// file itself); skipped without TOOLGATE_TEST_CODEX, except in CI.
fn codex_forbids(requirements: &Path, argv: &[&str]) {
    let Some(codex) = tool("TOOLGATE_TEST_CODEX") else {
        return;
    };
    let doc: toml::Table = std::fs::read_to_string(requirements)
        .unwrap()
        .parse()
        .unwrap();
    let mut rules = String::new();
    for rule in doc["rules"]["prefix_rules"].as_array().unwrap() {
        let pattern: Vec<Value> = rule["pattern"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| match (t.get("token"), t.get("any_of")) {
                (Some(token), _) => json!(token.as_str().unwrap()),
                (None, Some(any)) => json!(
                    any.as_array()
                        .unwrap()
                        .iter()
                        .map(|a| a.as_str().unwrap())
                        .collect::<Vec<_>>()
                ),
                _ => panic!("a pattern token codex does not take: {t}"),
            })
            .collect();
        rules.push_str(&format!(
            "prefix_rule(pattern={}, decision={})\n",
            Value::Array(pattern),
            json!(rule["decision"].as_str().unwrap())
        ));
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("requirements.rules");
    std::fs::write(&file, rules).unwrap();
    let home = dir.path().join("codex-home");
    std::fs::create_dir_all(&home).unwrap();
    let out = std::process::Command::new(&codex)
        .args(["execpolicy", "check", "--rules"])
        .arg(&file)
        .arg("--")
        .args(argv)
        .env("CODEX_HOME", &home)
        .output()
        .expect("codex runs");
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(v["decision"], "forbidden", "{v}");
}

/// A real `codex exec` under the `requirements.toml` `toolgate sync` wrote: the fake
/// model's `touch`, which the team denies, never runs (the managed hook in the file
/// denies it first, and the file's `[rules]` alone forbid it too); its `ls`, which
/// the team allows, runs.
/// Codex reads only `/etc/codex/requirements.toml`, so it runs in a private mount
/// namespace whose `/etc` has the synced files over the machine's. Needs
/// TOOLGATE_TEST_CODEX and root.
#[tokio::test(flavor = "multi_thread")]
async fn codex_exec_forbids_the_command_the_synced_requirements_deny() {
    let Some(codex) = tool("TOOLGATE_TEST_CODEX") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    if !crate::managed::private_etc_possible(dir) {
        return;
    }
    let (server, _data) = start().await;
    server
        .set_controls(pb::AutoRunControls {
            enabled: true,
            allowed: vec!["ls".into()],
            denied: vec!["touch".into()],
            ..Default::default()
        })
        .await;
    server.yolo("alice").await;
    let addr = format!("http://{}", server.addr);
    let token = dir.join("token");
    std::fs::write(&token, "alice-token\n").unwrap();
    // the hook's command: toolgate with its settings as flags (a machine's would read
    // the managed configuration and the user's profile)
    let hook = dir.join("toolgate-hook.sh");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\nexec '{}' \"$@\" --server '{addr}' --token-file '{}' --team acme --user alice\n",
            env!("CARGO_BIN_EXE_toolgate"),
            token.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let root = dir.join("root");
    let (root_arg, token_arg, hook_arg) = (
        root.display().to_string(),
        token.display().to_string(),
        hook.display().to_string(),
    );
    let (ok, text) = toolgate(&[
        "sync",
        "--once",
        "--server",
        &addr,
        "--token-file",
        &token_arg,
        "--root",
        &root_arg,
        "--user",
        "alice",
        "--client",
        "codex",
        "--command",
        &hook_arg,
    ])
    .await;
    assert!(ok, "{text}");
    assert!(
        std::fs::read_to_string(root.join("etc/codex/requirements.toml"))
            .unwrap()
            .contains("forbidden"),
        "{text}"
    );

    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let marker = work.join("marker");
    let model = codex_exec(
        &codex,
        &root.join("etc"),
        dir,
        &work,
        &format!("touch {}", marker.display()),
    )
    .await;
    assert!(!marker.exists(), "the denied touch ran");
    // the managed hook the file installs is asked first, and denies it
    let outputs = function_call_outputs(&model);
    assert!(
        outputs.contains("toolgate DENY (COMMAND_DENIED)"),
        "codex told the model: {outputs}"
    );

    // the file's [rules] alone (its hooks taken out) forbid it too
    let synced: toml::Table = std::fs::read_to_string(root.join("etc/codex/requirements.toml"))
        .unwrap()
        .parse()
        .unwrap();
    let rules_only = dir.join("rules-only");
    std::fs::create_dir_all(rules_only.join("codex")).unwrap();
    let mut only = toml::Table::new();
    only.insert("rules".into(), synced["rules"].clone());
    std::fs::write(
        rules_only.join("codex/requirements.toml"),
        toml::to_string(&only).unwrap(),
    )
    .unwrap();
    let model = codex_exec(
        &codex,
        &rules_only,
        dir,
        &work,
        &format!("touch {}", marker.display()),
    )
    .await;
    assert!(!marker.exists(), "the denied touch ran");
    let outputs = function_call_outputs(&model);
    assert!(
        outputs.contains("rejected: toolgate: a denied command prefix"),
        "codex told the model: {outputs}"
    );

    // an allowed command runs: its output reaches the model
    std::fs::write(work.join("visible.txt"), "").unwrap();
    let model = codex_exec(&codex, &root.join("etc"), dir, &work, "ls").await;
    let outputs = function_call_outputs(&model);
    assert!(
        outputs.contains("visible.txt") && !outputs.contains("blocked"),
        "the allowed ls ran; codex told the model: {outputs}"
    );
    server.stop().await;
}

/// What Codex sent the model as its calls' outputs.
fn function_call_outputs(model: &crate::claude_code::FakeModel) -> String {
    model
        .requests()
        .iter()
        .flat_map(|r| r["input"].as_array().cloned().unwrap_or_default())
        .filter(|i| i["type"] == "function_call_output")
        .map(|i| i["output"].to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// `codex exec` in `work` with `etc` over the machine's `/etc` (a private mount
/// namespace), its model the fake Responses API running `command` once.
async fn codex_exec(
    codex: &Path,
    etc: &Path,
    dir: &Path,
    work: &Path,
    command: &str,
) -> crate::claude_code::FakeModel {
    let model =
        crate::claude_code::FakeModel::start_fake("openai_responses.py", dir, &json!([command]));
    let home = dir.join("codex-home");
    std::fs::create_dir_all(&home).unwrap();
    let overlay_work = dir.join("etc-work");
    let _ = std::fs::remove_dir_all(&overlay_work);
    std::fs::create_dir_all(&overlay_work).unwrap();
    let provider = format!(
        "model_providers.fake={{name=\"fake\", base_url=\"http://127.0.0.1:{}/v1\", wire_api=\"responses\", env_key=\"CODEX_API_KEY\"}}",
        model.port()
    );
    let mut cmd = tokio::process::Command::new("unshare");
    for (key, _) in std::env::vars().filter(|(k, _)| {
        k.starts_with("TOOLGATE_") || k.starts_with("OPENAI_") || k.starts_with("CODEX_")
    }) {
        cmd.env_remove(key);
    }
    let run = cmd
        .args(["-m", "--propagation", "private", "sh", "-c"])
        .arg("mount -t overlay overlay -o \"lowerdir=/etc,upperdir=$1,workdir=$2\" /etc && shift 2 && exec \"$@\"")
        .arg("sh")
        .arg(etc)
        .arg(&overlay_work)
        .arg(codex)
        .args(["exec", "--skip-git-repo-check", "--sandbox", "workspace-write", "-c", "model_provider=fake", "-c"])
        .arg(&provider)
        .args(["-m", "fake-model", "make the call"])
        .current_dir(work)
        .env("CODEX_HOME", &home)
        .env("CODEX_API_KEY", "dummy")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .expect("codex exec finished within 120 s")
        .unwrap();
    assert!(
        out.status.success(),
        "codex exec: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    model
}

/// `toolgate ARGS` with none of the test's `TOOLGATE_*`: (success, stdout and stderr).
async fn toolgate(args: &[&str]) -> (bool, String) {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolgate"));
    for (key, _) in std::env::vars().filter(|(k, _)| k.starts_with("TOOLGATE_")) {
        cmd.env_remove(key);
    }
    let out = tokio::time::timeout(
        Duration::from_secs(60),
        cmd.args(args).kill_on_drop(true).output(),
    )
    .await
    .expect("toolgate finished within 60 s")
    .unwrap();
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// `enroll --system` under a root directory installs the managed configuration,
/// Claude Code's policy helper, Gemini CLI's system hook and the sync unit; `enroll
/// --check` then says what each client enforces, before and after the sync agent
/// wrote its files.
#[tokio::test(flavor = "multi_thread")]
async fn enroll_installs_managed_delivery_and_check_says_what_is_enforced() {
    let (server, _data) = start().await;
    server.set_controls(denying(&["touch"])).await;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let root_arg = root.display().to_string();
    let addr = format!("http://{}", server.addr);
    let (ok, text) = toolgate(&[
        "enroll", "--system", "--root", &root_arg, "--server", &addr, "--team", "acme", "--user",
        "alice",
    ])
    .await;
    assert!(ok, "{text}");
    let config = std::fs::read_to_string(root.join("etc/toolgate/client.toml")).unwrap();
    assert!(
        config.contains(&format!("server = \"{addr}\"")) && config.contains("team = \"acme\""),
        "{config}"
    );
    let helper =
        std::fs::read_to_string(root.join("usr/local/libexec/toolgate-claude-code-helper"))
            .unwrap();
    assert!(
        helper.contains("exec /usr/local/bin/toolgate managed claude-code"),
        "{helper}"
    );
    let claude: Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("etc/claude-code/managed-settings.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        claude["policyHelper"],
        json!({"path": "/usr/local/libexec/toolgate-claude-code-helper",
               "timeoutMs": 10000, "refreshIntervalMs": 300000})
    );
    let unit =
        std::fs::read_to_string(root.join("etc/systemd/system/toolgate-sync.service")).unwrap();
    assert!(
        unit.contains("toolgate sync --user alice --token-file"),
        "{unit}"
    );

    let check = |expected: &'static [(&'static str, &'static str)]| {
        let root_arg = root_arg.clone();
        async move {
            let (ok, text) = toolgate(&["enroll", "--check", "--root", &root_arg]).await;
            assert!(ok, "{text}");
            for (client, says) in expected {
                let line = text
                    .lines()
                    .find(|l| l.starts_with(client))
                    .unwrap_or_else(|| panic!("no line for {client}: {text}"));
                assert!(line.contains(says), "{client}: {says:?} not in {line:?}");
            }
        }
    };
    check(&[
        (
            "claude-code",
            "natively (managed policy) and by the managed hook",
        ),
        ("codex", "not enforced"),
        ("gemini", "by the managed hook only"),
        ("cursor", "not enforced"),
    ])
    .await;

    // the sync agent writes the other clients' files once
    let token = dir.path().join("token");
    std::fs::write(&token, "alice-token\n").unwrap();
    let (ok, text) = toolgate(&[
        "sync",
        "--once",
        "--root",
        &root_arg,
        "--server",
        &addr,
        "--token-file",
        &token.display().to_string(),
        "--command",
        "/usr/local/bin/toolgate",
    ])
    .await;
    assert!(ok, "{text}");
    check(&[
        ("codex", "natively (managed policy) and by the managed hook"),
        (
            "gemini",
            "natively (managed policy) and by the managed hook",
        ),
        ("cursor", "by the managed hook only"),
    ])
    .await;
    // without --root, as someone else than root: refused with the way out
    #[cfg(unix)]
    if !nix::unistd::geteuid().is_root() {
        let (ok, text) = toolgate(&["enroll", "--system"]).await;
        assert!(!ok && text.contains("--root DIR"), "{text}");
    }
}

/// Without `--team` and `--user`, `sync` keeps the files of the token's own team and
/// user (a service token's own name); a token that names no team is refused with the
/// flags to give.
#[tokio::test(flavor = "multi_thread")]
async fn sync_takes_the_team_and_user_from_the_token() {
    let (server, _data) = start().await;
    server.set_controls(denying(&["touch"])).await;
    server
        .users("alice-token")
        .update_user_settings(pb::UpdateUserSettingsRequest {
            settings: Some(pb::UserSettings {
                use_yolo_mode: true,
                command_denylist: vec!["wget".into()],
                ..user_settings(TEAM, "alice")
            }),
            expected_revision: None,
            update_mask: None,
        })
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let addr = format!("http://{}", server.addr);
    let once = |token: &'static str, root: PathBuf| {
        let dir = dir.path().to_owned();
        let addr = addr.clone();
        async move {
            let file = dir.join(token);
            std::fs::write(&file, format!("{token}\n")).unwrap();
            toolgate(&[
                "sync",
                "--once",
                "--client",
                "gemini",
                "--root",
                &root.display().to_string(),
                "--server",
                &addr,
                "--token-file",
                &file.display().to_string(),
                "--command",
                "/usr/local/bin/toolgate",
            ])
            .await
        }
    };
    let alice = dir.path().join("alice");
    let (ok, text) = once("alice-token", alice.clone()).await;
    assert!(ok, "{text}");
    let policy = std::fs::read_to_string(Files::under(&alice).gemini).unwrap();
    // the team's denied prefix and alice's own
    assert!(
        policy.contains("touch") && policy.contains("wget"),
        "{policy}"
    );

    // a service's token speaks for its team and itself: not alice's denied prefix
    let service = dir.path().join("service");
    let (ok, text) = once("service-token", service.clone()).await;
    assert!(ok, "{text}");
    let policy = std::fs::read_to_string(Files::under(&service).gemini).unwrap();
    assert!(
        policy.contains("touch") && !policy.contains("wget"),
        "{policy}"
    );

    // an operator's token names no team
    let operator = dir.path().join("operator");
    let (ok, text) = once("operator-token", operator.clone()).await;
    assert!(!ok, "{text}");
    assert!(text.contains("give --team and --user"), "{text}");
    assert!(!Files::under(&operator).gemini.exists());
}

/// Gemini CLI's own settings loader, pointed at the file `sync` keeps by
/// `GEMINI_CLI_SYSTEM_SETTINGS_PATH`, reads the toolgate hook on every tool beside the
/// keys the file already had. Gemini CLI reads a system settings file only when it and
/// every directory above it are root's and written by root alone: the test needs root
/// (skipped without it, or without TOOLGATE_TEST_GEMINI, except in CI).
#[tokio::test(flavor = "multi_thread")]
async fn gemini_cli_reads_the_hook_sync_keeps_in_its_system_settings() {
    let Some(gemini) = tool("TOOLGATE_TEST_GEMINI") else {
        return;
    };
    #[cfg(unix)]
    if !nix::unistd::geteuid().is_root() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true but Gemini CLI reads system settings only from root's files: run the tests as root"
        );
        eprintln!("skipped: Gemini CLI reads system settings only from root's files (run as root)");
        return;
    }
    let (server, _data) = start().await;
    server.set_controls(denying(&["touch"])).await;
    // Gemini CLI refuses a file below a group- or world-writable directory (as /tmp
    // is): the first of these places whose every ancestor is neither
    let dir = tempfile::tempdir_in(private_base()).unwrap();
    let settings = dir.path().join("settings.json");
    std::fs::write(
        &settings,
        json!({"ui": {"theme": "GitHub"}, "hooksConfig": {"enabled": false}}).to_string(),
    )
    .unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "alice-token\n").unwrap();
    let (ok, text) = toolgate(&[
        "sync",
        "--once",
        "--client",
        "gemini-settings",
        "--gemini-settings-file",
        &settings.display().to_string(),
        "--server",
        &format!("http://{}", server.addr),
        "--token-file",
        &token.display().to_string(),
        "--command",
        "/usr/local/bin/toolgate",
    ])
    .await;
    assert!(ok, "{text}");

    let home = dir.path().join("home");
    let workspace = dir.path().join("workspace");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&workspace).unwrap();
    let out = tokio::process::Command::new("node")
        .arg(Path::new(FAKES).join("gemini_settings.mjs"))
        .arg(&gemini)
        .arg(&workspace)
        .current_dir(&workspace)
        .env("HOME", &home)
        .env("GEMINI_CLI_SYSTEM_SETTINGS_PATH", &settings)
        .kill_on_drop(true)
        .output()
        .await
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let read: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(read["errors"], json!([]), "{read}");
    assert_eq!(read["hooksConfig"]["enabled"], true, "{read}");
    let before_tool = &read["hooks"]["BeforeTool"];
    assert_eq!(before_tool[0]["matcher"], ".*", "{read}");
    assert_eq!(
        before_tool[0]["hooks"][0]["command"], "/usr/local/bin/toolgate hook gemini",
        "{read}"
    );
    assert_eq!(read["system"]["ui"]["theme"], "GitHub", "{read}");
}

/// A directory no ancestor of which is writable by group or others, for files a
/// client reads only from such places: the target directory's, else root's home,
/// else `/run` or `/var/lib`.
#[cfg(unix)]
fn private_base() -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let private = |dir: &std::path::Path| {
        dir.ancestors().all(|d| {
            std::fs::metadata(d).is_ok_and(|m| m.is_dir() && m.permissions().mode() & 0o022 == 0)
        })
    };
    let candidates = [
        Some(std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))),
        std::env::var_os("HOME").map(Into::into),
        Some("/run".into()),
        Some("/var/lib".into()),
    ];
    candidates
        .into_iter()
        .flatten()
        .find(|dir| private(dir))
        .expect("a directory with no group- or world-writable ancestor")
}
