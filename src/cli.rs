//! The admin and client commands of the `toolgate` binary: they talk to a server over
//! gRPC and print human tables or, with `--output json`, one JSON document.
//!
//! Exit codes: 0 success; 1 failure (server unreachable, refused, invalid file); 2
//! bad usage; 3 `admin diff` found differences; 4 a stale expected revision (someone
//! else wrote first: nothing was changed); with `evaluate --exit-code`, 10 for ASK
//! and 11 for DENY.

use anyhow::{Context as _, bail};
use clap::{Args, Subcommand, ValueEnum};
use futures::StreamExt;
use serde_json::json;
use std::path::PathBuf;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;
use toolgate::grpc::convert::{controls_from_pb, controls_to_pb};
use toolgate::policy::AdminControls;
use toolgate::policy_file::{self, TeamPolicy};
use toolgate::proto::v1 as pb;

pub const EXIT_USAGE: i32 = 2;
pub const EXIT_DIFFERENT: i32 = 3;
pub const EXIT_CONFLICT: i32 = 4;
pub const EXIT_ASK: i32 = 10;
pub const EXIT_DENY: i32 = 11;

/// A command line that cannot work as given: exits [`EXIT_USAGE`], like clap's own.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

fn usage(message: String) -> anyhow::Error {
    UsageError(message).into()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    Human,
    Json,
}

/// Where the server is and who we are.
#[derive(Debug, Args)]
pub struct Connection {
    /// Server address.
    #[arg(
        long,
        env = "TOOLGATE_SERVER",
        default_value = "http://127.0.0.1:7070",
        global = true
    )]
    pub server: String,
    /// Bearer token.
    #[arg(long, env = "TOOLGATE_TOKEN", global = true, hide_env_values = true)]
    pub token: Option<String>,
    /// File holding the bearer token (e.g. toolgate-data/bootstrap-token).
    #[arg(long, env = "TOOLGATE_TOKEN_FILE", global = true)]
    pub token_file: Option<PathBuf>,
    /// human (default) or json.
    #[arg(long, short, value_enum, default_value_t = Output::Human, global = true)]
    pub output: Output,
}

#[derive(Debug, Subcommand)]
pub enum ClientCommand {
    /// Team admin settings as code.
    #[command(subcommand)]
    Admin(AdminCommand),
    /// A user's MCP allowlist.
    #[command(subcommand)]
    Allowlist(AllowlistCommand),
    /// One decision, with the checks that made it.
    Evaluate(EvaluateArgs),
    /// The audit trail.
    #[command(subcommand)]
    Audit(AuditCommand),
    /// Turns a team's kill switch on or off (every call DENIED while on).
    KillSwitch {
        #[arg(value_parser = ["on", "off"])]
        state: String,
        #[arg(long)]
        team: String,
    },
    /// Prints policy events as they arrive.
    Watch {
        #[arg(long)]
        team: String,
        #[arg(long)]
        user: String,
        /// Resume after this revision.
        #[arg(long)]
        after: Option<u64>,
    },
}

#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Prints the team's policy as YAML (or JSON).
    Get {
        #[arg(long)]
        team: String,
    },
    /// Shows what applying the file would change; exit 3 when it would change something.
    Diff {
        /// The team policy YAML (deploy/examples/team.yaml shows every key).
        #[arg(long, short)]
        file: PathBuf,
    },
    /// Shows the diff and applies it, only if the team is still at the expected
    /// revision: `--expected-revision`, else the file's `revision:`, else the one the
    /// diff was computed against. A stale one exits 4 and changes nothing.
    Apply {
        /// The team policy YAML (deploy/examples/team.yaml shows every key).
        #[arg(long, short)]
        file: PathBuf,
        /// Show the diff, change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Apply only if the team is still at this revision.
        #[arg(long)]
        expected_revision: Option<u64>,
    },
}

#[derive(Debug, Subcommand)]
pub enum AllowlistCommand {
    /// Prints the user's MCP allowlist.
    List {
        #[arg(long)]
        team: String,
        #[arg(long)]
        user: String,
    },
    /// Adds `server:tool` by the seed's rules (no duplicate, nothing `server:*` covers).
    Add {
        #[arg(long)]
        team: String,
        #[arg(long)]
        user: String,
        entry: String,
    },
    /// Removes an entry as written (`server:tool`).
    Remove {
        #[arg(long)]
        team: String,
        #[arg(long)]
        user: String,
        entry: String,
    },
}

#[derive(Debug, Args)]
pub struct EvaluateArgs {
    #[arg(long)]
    team: String,
    #[arg(long)]
    user: String,
    /// An MCP call, `server:tool`.
    #[arg(long, group = "call")]
    mcp: Option<String>,
    /// The MCP tool's action (seed 000's `tool.action`), e.g. `navigate`.
    #[arg(long, requires = "mcp")]
    action: Option<String>,
    /// An internal tool name (`mcp_server_tool`); see --fallback-server.
    #[arg(long, group = "call")]
    internal: Option<String>,
    #[arg(long, default_value = "")]
    fallback_server: String,
    /// A shell command line.
    #[arg(long, group = "call")]
    shell: Option<String>,
    /// A file to delete.
    #[arg(long, group = "call")]
    delete: Option<String>,
    /// Exit 10 for ASK and 11 for DENY.
    #[arg(long)]
    exit_code: bool,
}

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Prints the events that match, oldest first, at most --limit.
    List(AuditArgs),
    /// Prints new events as they are recorded (polls once a second).
    Tail(AuditArgs),
}

#[derive(Debug, Args)]
pub struct AuditArgs {
    /// The team (default: the token's own; an operator sees every team, and `*` for
    /// server-wide events such as policy file reloads).
    #[arg(long)]
    team: Option<String>,
    #[arg(long)]
    actor: Option<String>,
    /// admin_settings_updated, user_settings_updated, decision_denied,
    /// policy_file_reloaded, policy_file_rejected.
    #[arg(long)]
    kind: Option<String>,
    /// Only events since: an RFC 3339 time or a duration ago (`1h`, `30m`).
    #[arg(long)]
    since: Option<String>,
    /// At most this many events (list), or per request (tail).
    #[arg(long, default_value_t = 100)]
    limit: u32,
}

type Authed = InterceptedService<Channel, Bearer>;

#[derive(Clone)]
struct Bearer(Option<tonic::metadata::MetadataValue<tonic::metadata::Ascii>>);

impl tonic::service::Interceptor for Bearer {
    fn call(&mut self, mut req: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(v) = &self.0 {
            req.metadata_mut().insert("authorization", v.clone());
        }
        Ok(req)
    }
}

struct Clients {
    channel: Channel,
    bearer: Bearer,
    output: Output,
}

impl Clients {
    async fn connect(c: &Connection) -> anyhow::Result<Self> {
        let token = match (&c.token, &c.token_file) {
            (Some(t), _) => Some(t.clone()),
            (None, Some(f)) => Some(
                std::fs::read_to_string(f)
                    .with_context(|| format!("reading {}", f.display()))?
                    .trim()
                    .to_owned(),
            ),
            (None, None) => None,
        };
        let bearer = Bearer(
            token
                .map(|t| format!("Bearer {t}").parse())
                .transpose()
                .context("the token is not valid ASCII")?,
        );
        // `127.0.0.1:7070` is what `serve --listen` takes: accept it here too
        let address = if c.server.contains("://") {
            c.server.clone()
        } else {
            format!("http://{}", c.server)
        };
        let channel = Channel::from_shared(address)
            .map_err(|e| {
                usage(format!(
                    "--server {:?}: {e}: use http://HOST:PORT",
                    c.server
                ))
            })?
            .connect()
            .await
            .with_context(|| format!("cannot connect to {}", c.server))?;
        Ok(Self {
            channel,
            bearer,
            output: c.output,
        })
    }

    fn admin(&self) -> pb::admin_service_client::AdminServiceClient<Authed> {
        pb::admin_service_client::AdminServiceClient::with_interceptor(
            self.channel.clone(),
            self.bearer.clone(),
        )
    }

    fn users(&self) -> pb::user_settings_service_client::UserSettingsServiceClient<Authed> {
        pb::user_settings_service_client::UserSettingsServiceClient::with_interceptor(
            self.channel.clone(),
            self.bearer.clone(),
        )
    }

    fn policy(&self) -> pb::policy_service_client::PolicyServiceClient<Authed> {
        pb::policy_service_client::PolicyServiceClient::with_interceptor(
            self.channel.clone(),
            self.bearer.clone(),
        )
    }

    fn json(&self) -> bool {
        self.output == Output::Json
    }
}

/// A failed RPC, with the server's message (and field violations) for people.
fn rpc_error(status: tonic::Status) -> anyhow::Error {
    use tonic_types::StatusExt;
    let mut text = format!("{:?}: {}", status.code(), status.message());
    if let Some(bad) = status.get_details_bad_request() {
        for v in bad.field_violations {
            text.push_str(&format!("\n  {}: {}", v.field, v.description));
        }
    }
    anyhow::anyhow!(text)
}

/// Runs a client command; returns the process exit code.
pub async fn run(conn: &Connection, command: ClientCommand) -> anyhow::Result<i32> {
    let c = Clients::connect(conn).await?;
    match command {
        ClientCommand::Admin(cmd) => admin(&c, cmd).await,
        ClientCommand::Allowlist(cmd) => allowlist(&c, cmd).await,
        ClientCommand::Evaluate(args) => evaluate(&c, args).await,
        ClientCommand::Audit(cmd) => audit(&c, cmd).await,
        ClientCommand::KillSwitch { state, team } => kill_switch(&c, &team, state == "on").await,
        ClientCommand::Watch { team, user, after } => watch(&c, &team, &user, after).await,
    }
}

async fn get_admin(c: &Clients, team: &str) -> anyhow::Result<(AdminControls, u64)> {
    let s = c
        .admin()
        .get_team_admin_settings(pb::GetTeamAdminSettingsRequest {
            team_id: team.into(),
        })
        .await
        .map_err(rpc_error)?
        .into_inner();
    let controls = controls_from_pb(s.auto_run_controls.unwrap_or_default())
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok((controls, s.revision))
}

fn read_policy(file: &std::path::Path) -> anyhow::Result<TeamPolicy> {
    let text =
        policy_file::read_file(file).with_context(|| format!("reading {}", file.display()))?;
    policy_file::parse_team_policy(&file.display().to_string(), &text)
        .map_err(|errors| anyhow::anyhow!(policy_file::format_errors(&errors)))
}

/// One line per changed field: lists by entry, scalars by value.
pub fn diff(current: &AdminControls, wanted: &AdminControls) -> Vec<serde_json::Value> {
    let (a, b) = (
        serde_json::to_value(current).unwrap_or_default(),
        serde_json::to_value(wanted).unwrap_or_default(),
    );
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return Vec::new();
    };
    let mut changes = Vec::new();
    for (field, new) in b {
        let old = a.get(field).cloned().unwrap_or(serde_json::Value::Null);
        if &old == new {
            continue;
        }
        match (old.as_array(), new.as_array()) {
            (Some(old), Some(new)) => {
                for e in old.iter().filter(|e| !new.contains(e)) {
                    changes.push(json!({"field": field, "op": "remove", "value": e}));
                }
                for e in new.iter().filter(|e| !old.contains(e)) {
                    changes.push(json!({"field": field, "op": "add", "value": e}));
                }
                if changes.iter().all(|c| c["field"] != *field) {
                    changes.push(json!({"field": field, "op": "reorder", "value": new}));
                }
            }
            _ => changes.push(json!({"field": field, "op": "set", "from": old, "to": new})),
        }
    }
    changes
}

fn print_diff(team: &str, revision: u64, changes: &[serde_json::Value]) {
    if changes.is_empty() {
        println!("team {team} (revision {revision}): no changes");
        return;
    }
    println!("team {team} (revision {revision}):");
    for ch in changes {
        match ch["op"].as_str() {
            Some("add") => println!(
                "  + {}: {}",
                ch["field"].as_str().unwrap_or(""),
                ch["value"]
            ),
            Some("remove") => println!(
                "  - {}: {}",
                ch["field"].as_str().unwrap_or(""),
                ch["value"]
            ),
            Some("reorder") => println!(
                "  ~ {}: reordered to {}",
                ch["field"].as_str().unwrap_or(""),
                ch["value"]
            ),
            _ => println!(
                "  ~ {}: {} -> {}",
                ch["field"].as_str().unwrap_or(""),
                ch["from"],
                ch["to"]
            ),
        }
    }
}

async fn admin(c: &Clients, cmd: AdminCommand) -> anyhow::Result<i32> {
    match cmd {
        AdminCommand::Get { team } => {
            let (controls, revision) = get_admin(c, &team).await?;
            let policy = TeamPolicy {
                team,
                // so that applying an edited copy fails if someone else wrote meanwhile
                revision: Some(revision),
                auto_run_controls: controls,
            };
            if c.json() {
                println!("{}", json!({"revision": revision, "policy": policy}));
            } else {
                print!("{}", policy_file::to_yaml(&policy));
            }
            Ok(0)
        }
        AdminCommand::Diff { file } => {
            let policy = read_policy(&file)?;
            let (current, revision) = get_admin(c, &policy.team).await?;
            let changes = diff(&current, &policy.auto_run_controls);
            if c.json() {
                println!(
                    "{}",
                    json!({"team": policy.team, "revision": revision, "changes": changes})
                );
            } else {
                print_diff(&policy.team, revision, &changes);
            }
            Ok(if changes.is_empty() {
                0
            } else {
                EXIT_DIFFERENT
            })
        }
        AdminCommand::Apply {
            file,
            dry_run,
            expected_revision,
        } => {
            let policy = read_policy(&file)?;
            let (current, revision) = get_admin(c, &policy.team).await?;
            let expected = expected_revision.or(policy.revision).unwrap_or(revision);
            let changes = diff(&current, &policy.auto_run_controls);
            let report = |applied: bool, revision: u64| {
                json!({"team": policy.team, "revision": revision, "expected_revision": expected,
                       "changes": changes, "applied": applied, "dry_run": dry_run})
            };
            if !c.json() {
                print_diff(&policy.team, revision, &changes);
            }
            if dry_run || changes.is_empty() {
                if c.json() {
                    println!("{}", report(false, revision));
                } else if dry_run {
                    println!("dry run: nothing applied");
                }
                return Ok(0);
            }
            let result = c
                .admin()
                .update_team_admin_settings(pb::UpdateTeamAdminSettingsRequest {
                    team_id: policy.team.clone(),
                    auto_run_controls: Some(controls_to_pb(&policy.auto_run_controls)),
                    expected_revision: Some(expected),
                })
                .await;
            match result {
                Ok(r) => {
                    let r = r.into_inner();
                    if c.json() {
                        println!("{}", report(true, r.revision));
                    } else {
                        println!(
                            "applied: team {} is at revision {}",
                            policy.team, r.revision
                        );
                    }
                    Ok(0)
                }
                Err(status) if status.code() == tonic::Code::Aborted => {
                    let message = format!(
                        "not applied: team {} changed since revision {expected} ({}): run `toolgate admin diff -f {}`, review, then apply again",
                        policy.team,
                        status.message(),
                        file.display()
                    );
                    if c.json() {
                        let mut r = report(false, revision);
                        r["error"] = json!(message);
                        println!("{r}");
                    }
                    eprintln!("{message}");
                    Ok(EXIT_CONFLICT)
                }
                Err(status) => Err(rpc_error(status)),
            }
        }
    }
}

async fn allowlist(c: &Clients, cmd: AllowlistCommand) -> anyhow::Result<i32> {
    let (settings, changed, detail) = match cmd {
        AllowlistCommand::List { team, user } => {
            let s = c
                .users()
                .get_user_settings(pb::GetUserSettingsRequest {
                    team_id: team,
                    user_id: user,
                })
                .await
                .map_err(rpc_error)?
                .into_inner();
            (s, None, String::new())
        }
        AllowlistCommand::Add { team, user, entry } => {
            let Some((server, tool)) = entry.split_once(':') else {
                return Err(usage(format!(
                    "entry {entry:?} is not server:tool: write e.g. github:create_issue"
                )));
            };
            let r = c
                .users()
                .add_to_allowlist(pb::AddToAllowlistRequest {
                    team_id: team,
                    user_id: user,
                    server: server.into(),
                    tool: tool.into(),
                })
                .await
                .map_err(rpc_error)?
                .into_inner();
            (r.settings.unwrap_or_default(), Some(r.changed), r.detail)
        }
        AllowlistCommand::Remove { team, user, entry } => {
            let r = c
                .users()
                .remove_from_allowlist(pb::RemoveFromAllowlistRequest {
                    team_id: team,
                    user_id: user,
                    entry,
                })
                .await
                .map_err(rpc_error)?
                .into_inner();
            (r.settings.unwrap_or_default(), Some(r.changed), r.detail)
        }
    };
    if c.json() {
        println!(
            "{}",
            json!({"team": settings.team_id, "user": settings.user_id, "revision": settings.revision,
                   "mcp_allowed_tools": settings.mcp_allowed_tools, "changed": changed, "detail": detail})
        );
    } else {
        if !detail.is_empty() {
            println!("unchanged: {detail}");
        }
        println!(
            "{}/{} (revision {}):",
            settings.team_id, settings.user_id, settings.revision
        );
        for e in &settings.mcp_allowed_tools {
            println!("  {e}");
        }
    }
    Ok(0)
}

async fn evaluate(c: &Clients, a: EvaluateArgs) -> anyhow::Result<i32> {
    use pb::tool_call::Kind;
    let kind = if let Some(m) = a.mcp {
        let Some((server, tool)) = m.split_once(':') else {
            return Err(usage(format!(
                "--mcp {m:?} is not server:tool: write e.g. github:create_issue"
            )));
        };
        Kind::Mcp(pb::McpCall {
            server: server.into(),
            tool: tool.into(),
            action: a.action.unwrap_or_default(),
        })
    } else if let Some(name) = a.internal {
        Kind::McpInternal(pb::McpInternalCall {
            name,
            fallback_server: a.fallback_server,
        })
    } else if let Some(line) = a.shell {
        Kind::Shell(line)
    } else if let Some(path) = a.delete {
        Kind::DeleteFile(path)
    } else {
        return Err(usage(
            "give the call: --mcp SERVER:TOOL [--action A], --internal NAME, --shell LINE or --delete PATH"
                .into(),
        ));
    };
    let d = c
        .policy()
        .evaluate(pb::EvaluateRequest {
            team_id: a.team,
            user_id: a.user,
            call: Some(pb::ToolCall { kind: Some(kind) }),
            explain: true,
        })
        .await
        .map_err(rpc_error)?
        .into_inner();
    let outcome = pb::Outcome::try_from(d.outcome).unwrap_or_default();
    let reason = pb::Reason::try_from(d.reason).unwrap_or_default();
    let short = |s: &str, prefix: &str| s.strip_prefix(prefix).unwrap_or(s).to_owned();
    if c.json() {
        println!(
            "{}",
            json!({
                "outcome": short(outcome.as_str_name(), "OUTCOME_"),
                "need_approval": d.need_approval,
                "reason": short(reason.as_str_name(), "REASON_"),
                "message": d.message,
                "matched_entry": d.matched_entry,
                "candidates_for_allowlist": d.candidates_for_allowlist.iter()
                    .map(|c| json!({"server": c.server, "tool": c.tool})).collect::<Vec<_>>(),
                "command_candidates": d.command_candidates,
                "allowed_tools": d.allowed_tools,
                "revision": d.revision,
                "explanation": d.explanation.iter().map(|c| json!({"check": c.name, "result": c.result})).collect::<Vec<_>>(),
            })
        );
    } else {
        println!(
            "{} ({}) at revision {}: {}",
            short(outcome.as_str_name(), "OUTCOME_"),
            short(reason.as_str_name(), "REASON_"),
            d.revision,
            d.message
        );
        if !d.matched_entry.is_empty() {
            println!("matched: {}", d.matched_entry);
        }
        for cand in &d.candidates_for_allowlist {
            println!("could allowlist: {}:{}", cand.server, cand.tool);
        }
        for cand in &d.command_candidates {
            println!("could allowlist command: {cand}");
        }
        println!("why:");
        for (i, check) in d.explanation.iter().enumerate() {
            println!("  {}. {}: {}", i + 1, check.name, check.result);
        }
    }
    Ok(match (a.exit_code, outcome) {
        (true, pb::Outcome::Ask) => EXIT_ASK,
        (true, pb::Outcome::Deny) => EXIT_DENY,
        _ => 0,
    })
}

fn parse_since(s: &str) -> anyhow::Result<prost_types::Timestamp> {
    let at = match humantime::parse_rfc3339_weak(s) {
        Ok(t) => t,
        Err(_) => {
            let ago = humantime::parse_duration(s).with_context(|| {
                format!("--since {s:?}: give an RFC 3339 time or a duration such as 1h")
            })?;
            std::time::SystemTime::now() - ago
        }
    };
    let d = at.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    Ok(prost_types::Timestamp {
        seconds: i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        nanos: i32::try_from(d.subsec_nanos()).unwrap_or(0),
    })
}

fn event_json(e: &pb::AuditEvent) -> serde_json::Value {
    let at =
        e.at.map(|t| {
            let when = std::time::UNIX_EPOCH
                + std::time::Duration::new(
                    u64::try_from(t.seconds).unwrap_or(0),
                    u32::try_from(t.nanos).unwrap_or(0),
                );
            humantime::format_rfc3339_millis(when).to_string()
        })
        .unwrap_or_default();
    json!({"id": e.id, "team": e.team_id, "revision": e.revision, "actor": e.actor, "kind": e.kind,
           "at": at, "detail": serde_json::from_str::<serde_json::Value>(&e.detail_json).unwrap_or_default()})
}

fn print_event(e: &pb::AuditEvent) {
    let j = event_json(e);
    println!(
        "{:>6}  {}  {:<12} rev {:<5} {:<24} {}",
        e.id,
        j["at"].as_str().unwrap_or(""),
        e.team_id,
        e.revision,
        e.kind,
        e.actor
    );
}

async fn audit(c: &Clients, cmd: AuditCommand) -> anyhow::Result<i32> {
    let (args, follow) = match cmd {
        AuditCommand::List(a) => (a, false),
        AuditCommand::Tail(a) => (a, true),
    };
    let since = args.since.as_deref().map(parse_since).transpose()?;
    let limit = args.limit.clamp(1, 1000);
    let mut after_id = 0;
    let mut listed = Vec::new();
    loop {
        // list stops at --limit; tail pages through everything, then polls
        let want = if follow {
            limit
        } else {
            limit.min(
                args.limit
                    .saturating_sub(u32::try_from(listed.len()).unwrap_or(u32::MAX)),
            )
        };
        if want == 0 {
            break;
        }
        let r = c
            .admin()
            .list_audit_events(pb::ListAuditEventsRequest {
                team_id: args.team.clone().unwrap_or_default(),
                after_id,
                limit: want,
                kind: args.kind.clone().unwrap_or_default(),
                actor: args.actor.clone().unwrap_or_default(),
                since,
            })
            .await
            .map_err(rpc_error)?
            .into_inner();
        let page_full = r.events.len() >= want as usize;
        if r.next_after_id > 0 {
            after_id = r.next_after_id;
        }
        if follow {
            for e in &r.events {
                if c.json() {
                    println!("{}", event_json(e));
                } else {
                    print_event(e);
                }
            }
            if !page_full {
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            }
            continue;
        }
        listed.extend(r.events);
        if !page_full {
            break;
        }
    }
    if c.json() {
        let events: Vec<_> = listed.iter().map(event_json).collect();
        println!("{}", json!({"events": events}));
    } else {
        for e in &listed {
            print_event(e);
        }
    }
    Ok(0)
}

async fn kill_switch(c: &Clients, team: &str, on: bool) -> anyhow::Result<i32> {
    for _ in 0..5 {
        let (mut controls, revision) = get_admin(c, team).await?;
        if controls.kill_switch == on {
            if c.json() {
                println!(
                    "{}",
                    json!({"team": team, "kill_switch": on, "revision": revision, "changed": false})
                );
            } else {
                println!(
                    "kill switch of team {team} is already {}",
                    if on { "on" } else { "off" }
                );
            }
            return Ok(0);
        }
        controls.kill_switch = on;
        let r = c
            .admin()
            .update_team_admin_settings(pb::UpdateTeamAdminSettingsRequest {
                team_id: team.into(),
                auto_run_controls: Some(controls_to_pb(&controls)),
                expected_revision: Some(revision),
            })
            .await;
        match r {
            Ok(r) => {
                let r = r.into_inner();
                if c.json() {
                    println!(
                        "{}",
                        json!({"team": team, "kill_switch": on, "revision": r.revision, "changed": true})
                    );
                } else {
                    println!(
                        "kill switch of team {team} is {} (revision {})",
                        if on { "on" } else { "off" },
                        r.revision
                    );
                }
                return Ok(0);
            }
            // someone else wrote in between: read again and flip only the switch
            Err(s) if s.code() == tonic::Code::Aborted => continue,
            Err(s) => return Err(rpc_error(s)),
        }
    }
    bail!("the team's settings keep changing: try again")
}

async fn watch(c: &Clients, team: &str, user: &str, after: Option<u64>) -> anyhow::Result<i32> {
    use pb::policy_event::Event;
    let mut events = c
        .policy()
        .watch_policy(pb::WatchPolicyRequest {
            team_id: team.into(),
            user_id: user.into(),
            after_revision: after,
        })
        .await
        .map_err(rpc_error)?
        .into_inner();
    while let Some(e) = events.next().await {
        let e = e.map_err(rpc_error)?;
        let (kind, body) = match &e.event {
            Some(Event::Snapshot(s)) => {
                let p = s.policy.clone().unwrap_or_default();
                let admin = p
                    .admin
                    .and_then(|a| a.auto_run_controls)
                    .map(|a| controls_from_pb(a).ok());
                let user = p.user.map(|u| {
                    json!({"mcp_allowed_tools": u.mcp_allowed_tools, "use_yolo_mode": u.use_yolo_mode,
                           "yolo_enable_run_everything": u.yolo_enable_run_everything})
                });
                let files: serde_json::Map<String, serde_json::Value> = p
                    .file_allowlists
                    .iter()
                    .map(|l| (l.server.clone(), json!(l.allowed_tools)))
                    .collect();
                (
                    if s.resync { "resync" } else { "snapshot" },
                    json!({"admin": admin, "user": user, "file_allowlists": files}),
                )
            }
            Some(Event::AdminSettings(a)) => (
                "admin",
                json!({"controls": a.auto_run_controls.clone().map(|a| controls_from_pb(a).ok()), "by": a.updated_by}),
            ),
            Some(Event::UserSettings(u)) => (
                "user",
                json!({"user": u.user_id, "mcp_allowed_tools": u.mcp_allowed_tools, "by": u.updated_by}),
            ),
            Some(Event::Heartbeat(_)) => ("heartbeat", serde_json::Value::Null),
            None => continue,
        };
        if c.json() {
            println!(
                "{}",
                json!({"revision": e.revision, "event": kind, "data": body})
            );
        } else if body.is_null() {
            println!("rev {:<6} {kind}", e.revision);
        } else {
            println!("rev {:<6} {kind:<9} {body}", e.revision);
        }
    }
    Ok(0)
}
