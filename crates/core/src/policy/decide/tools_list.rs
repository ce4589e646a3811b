//! `tools/list` filtering (seed 003): a tool the decision DENIES is removed.

use super::mcp::mcp;
use super::{Action, Quiet};
use crate::policy::entry::validate_call_name;
use crate::policy::lists::{CompiledAdmin, CompiledUser};
use crate::policy::tool_actions::ToolActionLists;
use crate::policy::{EntryText, Outcome, PolicyError, Reason};

/// A `tools/list` result with the denied tools removed.
#[derive(Debug, Clone, PartialEq)]
pub struct FilteredTools {
    /// Same shape as given (`{"tools": [...]}` or the bare array).
    pub tools: serde_json::Value,
    /// Names of the tools removed because they are denied.
    pub removed: Vec<String>,
    /// Entries skipped because they are not an object with a string `name`.
    pub malformed_skipped: usize,
    /// Each well-formed tool's listing decision, in the order given (the decision log
    /// records one per tool).
    pub decided: Vec<ListedTool>,
}

/// One tool of a `tools/list` result and how it was decided for listing.
#[derive(Debug, Clone, PartialEq)]
pub struct ListedTool {
    pub name: String,
    pub outcome: Outcome,
    pub reason: Reason,
    pub matched_entry: Option<EntryText>,
}

/// Whether `tool` of `server` is listed: DENY hides it (seed 003). The decision
/// `filter_tools_in` makes for each tool, for callers that decide one again.
pub fn decide_listing(
    files: &ToolActionLists,
    admin: &CompiledAdmin,
    user: &CompiledUser,
    server: &str,
    tool: &str,
) -> (Outcome, Reason, Option<EntryText>) {
    let mut unused = None;
    let (outcome, reason, matched, _) = mcp(
        files,
        admin,
        user,
        (server, tool, Action::Listing),
        &mut unused,
        &mut Quiet,
    );
    (outcome, reason, matched)
}

/// Keeps only the tools of `server` that are not DENIED (seed 003), skipping malformed
/// entries. Anything but `{"tools": [...]}` or an array is an error: the caller fails
/// closed on it.
pub fn filter_tools(
    admin: &CompiledAdmin,
    user: &CompiledUser,
    server: &str,
    tools: &serde_json::Value,
) -> Result<FilteredTools, PolicyError> {
    filter_tools_in(&ToolActionLists::default(), admin, user, server, tools)
}

/// [`filter_tools`] under the policy file's `tool.action` lists: a tool none of
/// whose actions the list allows is removed.
pub fn filter_tools_in(
    files: &ToolActionLists,
    admin: &CompiledAdmin,
    user: &CompiledUser,
    server: &str,
    tools: &serde_json::Value,
) -> Result<FilteredTools, PolicyError> {
    use serde_json::Value;
    // seed 003 fails closed: with no valid server there is nothing to filter by
    if let Err(rule) = validate_call_name(server) {
        return Err(PolicyError::InvalidEntries(vec![
            crate::policy::EntryProblem {
                field: "server".to_owned(),
                entry: server.to_owned(),
                rule,
                hint: "name the MCP server whose tools/list this is, as its calls name it"
                    .to_owned(),
            },
        ]));
    }
    let list = match tools {
        Value::Array(list) => list,
        Value::Object(obj) => match obj.get("tools") {
            Some(Value::Array(list)) => list,
            _ => {
                return Err(PolicyError::InvalidToolsList(
                    "expected a \"tools\" array".into(),
                ));
            }
        },
        _ => {
            return Err(PolicyError::InvalidToolsList(
                "expected {\"tools\": [...]} or an array".into(),
            ));
        }
    };
    let mut kept = Vec::with_capacity(list.len());
    let mut removed = Vec::new();
    let mut malformed_skipped = 0;
    let mut decided = Vec::with_capacity(list.len());
    for tool in list {
        let Some(name) = tool
            .as_object()
            .and_then(|o| o.get("name"))
            .and_then(Value::as_str)
        else {
            malformed_skipped += 1;
            continue;
        };
        let (outcome, reason, matched_entry) = decide_listing(files, admin, user, server, name);
        decided.push(ListedTool {
            name: name.to_owned(),
            outcome,
            reason,
            matched_entry,
        });
        if outcome == Outcome::Deny {
            removed.push(name.to_owned());
        } else {
            kept.push(tool.clone());
        }
    }
    let tools = match tools {
        Value::Object(obj) => {
            let mut obj = obj.clone();
            obj.insert("tools".into(), Value::Array(kept));
            Value::Object(obj)
        }
        _ => Value::Array(kept),
    };
    Ok(FilteredTools {
        tools,
        removed,
        malformed_skipped,
        decided,
    })
}
