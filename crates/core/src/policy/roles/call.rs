//! A request's agent and arguments turned into what the roles decide on: the
//! operation (named, or the tool's), and everything the call touches.

use super::{Agent, RoleCall, RoleVerdict, Touches, evaluate, tool_operation};
use super::{CompiledRoles, touches_of_command, touches_of_tool_input};
use crate::policy::{BUILTIN_SERVER, Call, canonical_builtin, split_internal_name};
use serde_json::Value;

/// Who makes a call (seed 004's `agentId` and `contextType`), as a request carries it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentSpec {
    pub id: Option<String>,
    /// The role claimed, e.g. a Claude Code subagent's `agent_type`.
    pub role: Option<String>,
    pub context: Option<String>,
    pub session: Option<String>,
}

impl AgentSpec {
    /// True when the call names an agent or a role (only then do roles decide).
    pub fn is_named(&self) -> bool {
        self.id.is_some() || self.role.is_some()
    }
}

/// What a request says the call touches.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallArgs {
    /// Seed 004's operation; `None`: the tool's ([`tool_operation`]).
    pub operation: Option<String>,
    pub file_path: Option<String>,
    pub component_type: Option<String>,
    pub component_count: Option<u64>,
    /// The tool's arguments as the client sends them (Claude Code's `tool_input`).
    pub tool_input: Option<Value>,
    /// The working directory relative paths resolve against.
    pub cwd: Option<String>,
}

/// The roles' verdict on `call` made by `agent` with `args`.
pub fn judge(
    roles: &CompiledRoles,
    agent: &AgentSpec,
    call: &Call,
    args: &CallArgs,
) -> RoleVerdict {
    let (server, tool) = match call {
        Call::Mcp { server, tool } | Call::McpAction { server, tool, .. } => {
            (server.as_str(), tool.as_str())
        }
        Call::McpInternal {
            name,
            fallback_server,
        } => split_internal_name(name, fallback_server),
        Call::Shell(_) => (BUILTIN_SERVER, "run_shell_command"),
        Call::DeleteFile(_) => (BUILTIN_SERVER, ""),
    };
    let canonical = if server == BUILTIN_SERVER {
        canonical_builtin(tool)
    } else {
        tool
    };
    let mut touches = args
        .tool_input
        .as_ref()
        .map(|input| touches_of_tool_input(canonical, input))
        .unwrap_or_default();
    match call {
        // the line decided on is the one read, whatever tool_input says
        Call::Shell(line) => touches = merge(touches, touches_of_command(line)),
        Call::DeleteFile(path) => touches.paths.push(path.clone()),
        _ => {}
    }
    if let Some(path) = &args.file_path {
        touches.paths.push(path.clone());
    }
    if args.component_type.is_some() {
        touches.component_type.clone_from(&args.component_type);
    }
    if args.component_count.is_some() {
        touches.component_count = args.component_count;
    }
    let operation = match (&args.operation, call) {
        (Some(op), _) => op.clone(),
        (None, Call::DeleteFile(_)) => "FILE_DELETE".to_owned(),
        (None, _) => tool_operation(server, canonical),
    };
    let call = RoleCall {
        agent: Agent {
            id: agent.id.as_deref(),
            role: agent.role.as_deref(),
            context: agent.context.as_deref(),
            session: agent.session.as_deref(),
        },
        operation: &operation,
        cwd: args.cwd.as_deref(),
        touches: &touches,
    };
    evaluate(roles, &call)
}

fn merge(mut into: Touches, from: Touches) -> Touches {
    into.paths.extend(from.paths);
    into.directories.extend(from.directories);
    into.loose_paths.extend(from.loose_paths);
    into.names.extend(from.names);
    into.targets.extend(from.targets);
    if into.unreadable.is_none() {
        into.unreadable = from.unreadable;
    }
    into
}
