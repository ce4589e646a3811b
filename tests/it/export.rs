//! `toolgate export`: the exported files, read by the clients' own checkers, agree with
//! toolgate's decisions on the table in tests/data/export/agreement.json, and never
//! allow what toolgate would not. The checkers are `codex execpolicy check` (npm
//! `@openai/codex`, via TOOLGATE_TEST_CODEX) and Gemini CLI's PolicyEngine (npm
//! `@google/gemini-cli`, its package directory in TOOLGATE_TEST_GEMINI), both pinned
//! in .ci/run. Without them the test says so and checks the rest, except in CI.

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use toolgate::export::{Format, export};
use toolgate::policy::{
    AdminControls, Call, CompiledAdmin, CompiledUser, Outcome, UserSettings, decide,
};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/export");
const FAKES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fakes");

pub(crate) fn tool(var: &str) -> Option<PathBuf> {
    match std::env::var_os(var) {
        Some(p) => Some(PathBuf::from(p)),
        None if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("CI=true but {var} is not set: .ci/run installs it")
        }
        None => {
            eprintln!("skipped the {var} checker: set {var} to run it");
            None
        }
    }
}

struct Table {
    admin: AdminControls,
    user: UserSettings,
    calls: Vec<Value>,
    warnings: Vec<String>,
}

fn table() -> Table {
    let v: Value = serde_json::from_str(
        &std::fs::read_to_string(Path::new(DATA).join("agreement.json")).unwrap(),
    )
    .unwrap();
    Table {
        admin: serde_json::from_value(v["admin"].clone()).unwrap(),
        user: serde_json::from_value(v["user"].clone()).unwrap(),
        calls: v["calls"].as_array().unwrap().clone(),
        warnings: serde_json::from_value(v["warnings"].clone()).unwrap(),
    }
}

fn call_of(c: &Value) -> Call {
    if let Some(line) = c["shell"].as_str() {
        return Call::Shell(line.to_owned());
    }
    let (server, tool) = c["mcp"].as_str().unwrap().split_once(':').unwrap();
    Call::Mcp {
        server: server.into(),
        tool: tool.into(),
    }
}

fn outcome_name(o: Outcome) -> &'static str {
    match o {
        Outcome::Allow => "ALLOW",
        Outcome::Ask => "ASK",
        Outcome::Deny => "DENY",
    }
}

/// What toolgate decides is what the table says.
#[test]
fn the_table_holds_toolgate_decisions() {
    let t = table();
    let admin = CompiledAdmin::compile(&t.admin).unwrap();
    let user = CompiledUser::compile(&t.user).unwrap();
    for c in &t.calls {
        let got = outcome_name(decide(&admin, &user, &call_of(c)).outcome);
        assert_eq!(got, c["toolgate"], "toolgate on {c}");
    }
}

/// What the formats cannot say is warned about, never dropped silently.
#[test]
fn what_cannot_be_expressed_is_warned() {
    let t = table();
    let e = export(Format::Gemini, &t.admin, &t.user, &[]).unwrap();
    for want in &t.warnings {
        assert!(
            e.warnings.iter().any(|w| w.contains(want.as_str())),
            "no warning contains {want:?}: {:#?}",
            e.warnings
        );
    }
    let claude: Value = serde_json::from_str(
        &export(Format::ClaudeCode, &t.admin, &t.user, &[])
            .unwrap()
            .text,
    )
    .unwrap();
    let allow = claude["permissions"]["allow"].as_array().unwrap();
    assert!(allow.contains(&json!("Bash(npm run test *)")));
    // `*:drop_*` could deny a github tool, which no native deny says: not allowed whole
    assert!(!allow.contains(&json!("mcp__github")));
    assert!(allow.contains(&json!("Read")));
    // `git status` is exported: every option its grammar knows only reads
    assert!(allow.contains(&json!("Bash(git status *)")), "{allow:?}");
    let deny = claude["permissions"]["deny"].as_array().unwrap();
    assert!(deny.contains(&json!("mcp__github__delete_repo")));
    let ask = claude["permissions"]["ask"].as_array().unwrap();
    assert!(ask.contains(&json!("Bash(rm *)")));
    assert!(ask.contains(&json!("Bash(*$(*)")));
}

/// Cursor's Shell() rules name a command: a blocked `git push` must not become a deny
/// of all of git (Cursor asks for it, no allow rule naming git); one-word blocked
/// prefixes are denied, Cursor having no ask.
#[test]
fn cursor_keeps_git_when_git_push_is_blocked() {
    let t = table();
    let cursor: Value = serde_json::from_str(
        &export(Format::CursorCli, &t.admin, &t.user, &[])
            .unwrap()
            .text,
    )
    .unwrap();
    let deny = cursor["permissions"]["deny"].as_array().unwrap();
    let allow = cursor["permissions"]["allow"].as_array().unwrap();
    assert!(!deny.contains(&json!("Shell(git)")), "{deny:?}");
    assert!(!allow.contains(&json!("Shell(git)")), "{allow:?}");
    assert!(deny.contains(&json!("Shell(rm)")), "{deny:?}");
    assert!(deny.contains(&json!("Shell(curl)")), "{deny:?}");
    assert!(allow.contains(&json!("Shell(ls)")), "{allow:?}");
}

/// Which allowed prefixes a blocked one rules out of a native export.
#[test]
fn an_allowed_prefix_is_dropped_only_when_it_could_reach_a_blocked_one() {
    let w = |s: &str| s.split(' ').map(str::to_owned).collect::<Vec<_>>();
    for (allowed, blocked, reach) in [
        ("git", "git push", true),
        ("git status", "git push", false),
        ("git push origin", "git push", true),
        ("git -C", "git push", true),
        ("/usr/bin/git", "git push", true),
        ("rm", "rm", true),
        ("ls", "rm", false),
        ("npm run test", "npm publish", false),
    ] {
        assert_eq!(
            toolgate::export::could_reach(&w(allowed), &w(blocked)),
            reach,
            "{allowed} / {blocked}"
        );
    }
}

/// Never allows what toolgate would not; denies only what toolgate denies.
fn agrees(toolgate: &str, native: &str) -> bool {
    match native {
        "allow" => toolgate == "ALLOW",
        "deny" | "forbidden" => toolgate == "DENY",
        _ => true,
    }
}

#[test]
fn codex_execpolicy_agrees() {
    let Some(codex) = tool("TOOLGATE_TEST_CODEX") else {
        return;
    };
    let t = table();
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("toolgate.rules");
    std::fs::write(
        &rules,
        export(Format::CodexRules, &t.admin, &t.user, &[])
            .unwrap()
            .text,
    )
    .unwrap();
    let home = dir.path().join("codex-home");
    std::fs::create_dir_all(&home).unwrap();
    for c in t.calls.iter().filter(|c| c["codex"] != "n/a") {
        let argv: Vec<&str> = c["shell"].as_str().unwrap().split_whitespace().collect();
        let out = std::process::Command::new(&codex)
            .args(["execpolicy", "check", "--rules"])
            .arg(&rules)
            .arg("--")
            .args(&argv)
            .env("CODEX_HOME", &home)
            .output()
            .expect("codex runs");
        assert!(
            out.status.success(),
            "codex execpolicy check failed on {c}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let got = v.get("decision").cloned().unwrap_or(Value::Null);
        assert_eq!(got, c["codex"], "codex on {c}: {v}");
        if let Some(native) = got.as_str() {
            assert!(agrees(c["toolgate"].as_str().unwrap(), native), "{c}");
        }
    }
    // the requirements form parses too, and asks for every blocked prefix
    let req = export(Format::CodexRequirements, &t.admin, &t.user, &[]).unwrap();
    let parsed: toml::Table = req.text.parse().expect("requirements.toml parses");
    assert_eq!(parsed["rules"]["prefix_rules"].as_array().unwrap().len(), 3);
}

#[test]
fn gemini_policy_engine_agrees() {
    let Some(gemini) = tool("TOOLGATE_TEST_GEMINI") else {
        return;
    };
    let t = table();
    let dir = tempfile::tempdir().unwrap();
    let policies = dir.path().join("policies");
    std::fs::create_dir_all(&policies).unwrap();
    std::fs::write(
        policies.join("toolgate.toml"),
        export(Format::Gemini, &t.admin, &t.user, &[]).unwrap().text,
    )
    .unwrap();
    let calls: Vec<Value> = t
        .calls
        .iter()
        .map(|c| match call_of(c) {
            Call::Shell(line) => json!({"name": "run_shell_command", "args": {"command": line}}),
            Call::Mcp { server, tool } if server == "builtin" => json!({"name": tool}),
            Call::Mcp { server, tool } => {
                json!({"name": format!("mcp_{server}_{tool}"), "server": server})
            }
            _ => unreachable!(),
        })
        .collect();
    let calls_file = dir.path().join("calls.json");
    std::fs::write(&calls_file, Value::Array(calls).to_string()).unwrap();
    let out = std::process::Command::new("node")
        .arg(Path::new(FAKES).join("gemini_policy.mjs"))
        .arg(&gemini)
        .arg(&policies)
        .arg(&calls_file)
        .env("HOME", dir.path())
        .output()
        .expect("node runs");
    assert!(
        out.status.success(),
        "gemini policy check failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().last().unwrap_or("");
    let decisions: Vec<String> = serde_json::from_str(last)
        .unwrap_or_else(|e| panic!("not a decision list ({e}): {stdout}"));
    for (c, got) in t.calls.iter().zip(&decisions) {
        assert_eq!(got, &c["gemini"], "gemini on {c}");
        assert!(agrees(c["toolgate"].as_str().unwrap(), got), "{c}");
    }
}

#[test]
fn a_category_entry_is_warned_as_a_category() {
    let t = table();
    let mut admin = t.admin.clone();
    admin.mcp_tool_allowlist.push("@git".into());
    let e = export(Format::ClaudeCode, &admin, &t.user, &[]).unwrap();
    assert!(
        e.warnings
            .iter()
            .any(|w| w.contains("\"@git\"") && w.contains("tool category")),
        "{:#?}",
        e.warnings
    );
}

/// A denied prefix is a native hard deny in every format that has one: Claude Code's
/// and Gemini CLI's `deny`, Codex's `forbidden`, Cursor's `deny`.
#[test]
fn denied_prefixes_are_native_denies() {
    let t = table();
    let mut admin = t.admin.clone();
    admin.denied = vec!["terraform destroy".into()];
    let text = |format| export(format, &admin, &t.user, &[]).unwrap().text;
    let claude: Value = serde_json::from_str(&text(Format::ClaudeCode)).unwrap();
    assert!(
        claude["permissions"]["deny"]
            .as_array()
            .unwrap()
            .contains(&json!("Bash(terraform destroy *)")),
        "{claude}"
    );
    assert!(
        text(Format::CodexRules)
            .contains("prefix_rule(pattern=[\"terraform\",\"destroy\"], decision=\"forbidden\""),
        "{}",
        text(Format::CodexRules)
    );
    assert!(text(Format::CodexRequirements).contains("decision = \"forbidden\""));
    let gemini = text(Format::Gemini);
    assert!(
        gemini.contains("commandPrefix = \"terraform destroy\"")
            && gemini.contains("decision = \"deny\""),
        "{gemini}"
    );
    assert!(text(Format::CursorCli).contains("Shell(terraform)"));
}

/// The shell bypass table's policy (tests/data/shell_bypass.json), exported: what
/// the client's own engine allows of the table's lines, toolgate allows too (issue
/// 36: `sed`, `tar`, `cp`, … allowed must not become a native `sed *`).
struct Bypass {
    admin: AdminControls,
    user: UserSettings,
    lines: Vec<String>,
}

fn bypass() -> Bypass {
    let v: Value = serde_json::from_str(include_str!("../data/shell_bypass.json")).unwrap();
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_owned())
            .collect()
    };
    Bypass {
        admin: AdminControls {
            enabled: true,
            allowed: strings(&v["allowed"]),
            blocked: strings(&v["blocked"]),
            denied: strings(&v["denied"]),
            mcp_tool_allowlist: strings(&v["mcp_tool_allowlist"]),
            ..AdminControls::default()
        },
        user: UserSettings {
            use_yolo_mode: true,
            ..UserSettings::default()
        },
        // the rows decided without a working directory or policy of their own
        lines: v["cases"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c.get("cwd").is_none() && c.get("policy").is_none())
            .map(|c| c["line"].as_str().unwrap().to_owned())
            .collect(),
    }
}

#[test]
fn codex_never_allows_a_bypass_line_toolgate_does_not() {
    let Some(codex) = tool("TOOLGATE_TEST_CODEX") else {
        return;
    };
    let b = bypass();
    let admin = CompiledAdmin::compile(&b.admin).unwrap();
    let user = CompiledUser::compile(&b.user).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("toolgate.rules");
    let exported = export(Format::CodexRules, &b.admin, &b.user, &[]).unwrap();
    std::fs::write(&rules, &exported.text).unwrap();
    let home = dir.path().join("codex-home");
    std::fs::create_dir_all(&home).unwrap();
    // execpolicy matches an argv: the lines that are one plain command
    let plain = |l: &str| {
        l.chars()
            .all(|c| c.is_ascii_alphanumeric() || " ._/=:,@%+-".contains(c))
    };
    let mut allowed = Vec::new();
    for line in b.lines.iter().filter(|l| plain(l)) {
        let out = std::process::Command::new(&codex)
            .args(["execpolicy", "check", "--rules"])
            .arg(&rules)
            .arg("--")
            .args(line.split_whitespace())
            .env("CODEX_HOME", &home)
            .output()
            .expect("codex runs");
        assert!(
            out.status.success(),
            "{line}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        if v["decision"] == "allow" {
            let d = decide(&admin, &user, &Call::Shell(line.clone()));
            assert_eq!(
                d.outcome,
                Outcome::Allow,
                "codex allows {line:?}, toolgate: {d:?}\n{}",
                exported.text
            );
            allowed.push(line.clone());
        }
    }
    assert!(
        !allowed.is_empty(),
        "the export allows some plain lines natively"
    );
}

#[test]
fn gemini_never_allows_a_bypass_line_toolgate_does_not() {
    let Some(gemini) = tool("TOOLGATE_TEST_GEMINI") else {
        return;
    };
    let b = bypass();
    let admin = CompiledAdmin::compile(&b.admin).unwrap();
    let user = CompiledUser::compile(&b.user).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let policies = dir.path().join("policies");
    std::fs::create_dir_all(&policies).unwrap();
    let exported = export(Format::Gemini, &b.admin, &b.user, &[]).unwrap();
    std::fs::write(policies.join("toolgate.toml"), &exported.text).unwrap();
    let calls: Vec<Value> = b
        .lines
        .iter()
        .map(|line| json!({"name": "run_shell_command", "args": {"command": line}}))
        .collect();
    let calls_file = dir.path().join("calls.json");
    std::fs::write(&calls_file, Value::Array(calls).to_string()).unwrap();
    let out = std::process::Command::new("node")
        .arg(Path::new(FAKES).join("gemini_policy.mjs"))
        .arg(&gemini)
        .arg(&policies)
        .arg(&calls_file)
        .env("HOME", dir.path())
        .output()
        .expect("node runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let decisions: Vec<String> = serde_json::from_str(stdout.lines().last().unwrap_or("")).unwrap();
    let mut escaped = Vec::new();
    for (line, got) in b.lines.iter().zip(&decisions) {
        if got == "allow" {
            let d = decide(&admin, &user, &Call::Shell(line.clone()));
            if d.outcome != Outcome::Allow {
                escaped.push(format!("{line:?}: toolgate {:?} {:?}", d.outcome, d.reason));
            }
        }
    }
    assert!(
        escaped.is_empty(),
        "gemini allows:\n  {}\n{}",
        escaped.join("\n  "),
        exported.text
    );
}
