//! `toolgate init`: a starter server configuration, team policy and policy file in a
//! directory, each valid as written and commented, so a first server runs at once.

use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
pub struct InitArgs {
    /// Where to write the files (created if missing).
    #[arg(long, default_value = ".")]
    dir: PathBuf,
    /// The team the starter policy is for.
    #[arg(long, default_value = "my-team")]
    team: String,
    /// Overwrite files that already exist.
    #[arg(long)]
    force: bool,
}

/// The server configuration: loopback, the embedded store, the policy file beside it.
const CONFIG: &str = "\
# toolgate server configuration (`toolgate serve --config toolgate.yaml`).
# `toolgate check-config --config toolgate.yaml` checks it without starting.
#
# Loopback only: other machines cannot reach it until you set tls.cert and
# tls.key and listen on an address they reach.
listen: 127.0.0.1:7070
# The embedded store and, while no token is configured, the operator token
# (data/bootstrap-token, readable by you only).
data_dir: data
# Teams managed by a file, reloaded when it changes.
policy_file: policy.yaml
log:
  level: info
  format: text
# Tokens, stored as SHA-256 hashes: `toolgate new-token` prints a token and its hash.
# auth:
#   tokens:
#     - { name: alice, role: member, team: TEAM, user: alice, sha256: \"<64 hex>\" }
";

/// The policy file: one team, managed by the file.
const POLICY: &str = "\
# The server's policy file: the teams it names take their admin settings from
# here (read-only through the API) and change when the file does.
teams:
  - team: TEAM
    auto_run_controls:
      # admin control on: these settings stand for every user's own
      enabled: true
      # shell command prefixes that may run without asking, word by word
      allowed: [\"git status\", \"git diff\", \"git log\", \"ls\", \"cargo test\"]
      # shell command prefixes that never run without asking
      blocked: [\"rm -rf\", \"git push\"]
      # read-only built-in tools (Read, Grep, Glob, …) run without asking
      mcp_tool_allowlist: [\"@readonly\"]
      # deleting a file always asks
      delete_file_protection: true
# MCP servers whose tool.action names are limited, for every team:
# mcp_servers:
#   - server: gasoline
#     allowed_tools: [\"observe.*\", \"interact.navigate\"]
mcp_servers: []
";

/// A team policy to apply through the API (`admin diff` / `admin apply`), for a team
/// the policy file does not manage.
const TEAM: &str = "\
# A team's policy as code, for a team the policy file does not manage:
#   toolgate admin diff -f team.yaml && toolgate admin apply -f team.yaml
# (schemas/team-policy.schema.json describes every key.)
team: TEAM-api
auto_run_controls:
  enabled: true
  allowed: [\"git status\", \"git diff\", \"ls\"]
  blocked: [\"rm -rf\", \"git push\"]
  mcp_tool_allowlist: [\"@readonly\"]
  mcp_tool_blocklist: [\"github:delete_*\"]
";

/// The files `init` writes: (name, text) with the team filled in.
pub fn starter_files(team: &str) -> Vec<(&'static str, String)> {
    vec![
        ("toolgate.yaml", CONFIG.replace("TEAM", team)),
        ("policy.yaml", POLICY.replace("TEAM", team)),
        ("team.yaml", TEAM.replace("TEAM", team)),
    ]
}

/// Writes the starter files; refuses to overwrite without `--force`, naming the file.
pub fn init(args: InitArgs) -> anyhow::Result<()> {
    crate::service::check_id("--team", &args.team).map_err(|e| anyhow::anyhow!("{e}"))?;
    std::fs::create_dir_all(&args.dir)
        .map_err(|e| anyhow::anyhow!("--dir {}: {e}", args.dir.display()))?;
    let files = starter_files(&args.team);
    if !args.force {
        let existing: Vec<String> = files
            .iter()
            .map(|(name, _)| args.dir.join(name))
            .filter(|p| p.exists())
            .map(|p| p.display().to_string())
            .collect();
        anyhow::ensure!(
            existing.is_empty(),
            "{} already exist: nothing written; move them away, or pass --force to overwrite",
            existing.join(", ")
        );
    }
    for (name, text) in &files {
        let path: &Path = &args.dir.join(name);
        std::fs::write(path, text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        println!("wrote {}", path.display());
    }
    println!(
        "next: cd {} && toolgate check-config --config toolgate.yaml && toolgate serve --config toolgate.yaml",
        args.dir.display()
    );
    Ok(())
}
