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

/// The policy file: one team, managed by the file, whose users start with auto-run on
/// so the allowed calls run without asking from the first call.
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
      blocked: [\"git push\"]
      # shell command prefixes that never run at all
      denied: [\"rm -rf\"]
      # read-only built-in tools (Read, Grep, Glob, …) run without asking
      mcp_tool_allowlist: [\"@readonly\"]
      # deleting a file always asks
      delete_file_protection: true
      # what a user who never wrote settings starts with: auto-run on, so the
      # calls allowed above run without asking (everything else still asks)
      default_user_settings:
        use_yolo_mode: true
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
  blocked: [\"git push\"]
  denied: [\"rm -rf\"]
  mcp_tool_allowlist: [\"@readonly\"]
  mcp_tool_blocklist: [\"github:delete_*\"]
  # users start with auto-run on: the calls allowed above run without asking
  default_user_settings:
    use_yolo_mode: true
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
        "team {}: users start with auto-run on, so read-only tools (Read, Grep, …) and \
         `git status`, `git diff`, `git log`, `ls`, `cargo test` run without asking; \
         `git push` asks and `rm -rf` is refused",
        args.team
    );
    // absolute: the relative paths inside are read against the file, so this line
    // works from any directory
    let config = std::path::absolute(args.dir.join("toolgate.yaml"))
        .map_err(|e| anyhow::anyhow!("--dir {}: {e}", args.dir.display()))?;
    let config = super::agent::install::shell_quote(&config.display().to_string());
    println!("next: toolgate serve --config {config}");
    Ok(())
}
