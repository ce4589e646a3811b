//! Seed 000's `tool.action` allowlists: for one MCP server, which qualified names
//! (`observe.*`, `interact.navigate`, `*`) may run. They come from the server's
//! policy file and are the same for every team (seed 000, assumption 1).
//!
//! A call's qualified name is `tool.action`, or `tool` alone when it has no action.
//! Patterns are `*` (everything), `tool.*` (every action of the tool, and the tool
//! called without one), or an exact name; matching ignores case. An empty list
//! allows everything (seed 000, edge case 1).

use super::entry::validate_call_name;
use super::{EntryProblem, Rule};
use rustc_hash::FxHashMap;
use std::sync::Arc;

/// One compiled pattern, lowercased.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Pattern {
    Any,
    Tool(String),
    Exact(String),
}

/// The `tool.action` allowlist of one MCP server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolActionList {
    server: String,
    /// The patterns as written, for messages and `GetServerConfig`.
    written: Arc<[String]>,
    patterns: Vec<Pattern>,
}

/// The qualified name seed 000 matches: `tool.action`, or `tool` without an action.
pub fn qualified_name(tool: &str, action: Option<&str>) -> String {
    match action {
        Some(action) if !action.is_empty() => format!("{tool}.{action}"),
        _ => tool.to_owned(),
    }
}

fn problem(field: &str, entry: &str, rule: Rule, hint: &str) -> EntryProblem {
    EntryProblem {
        field: field.to_owned(),
        entry: entry.to_owned(),
        rule,
        hint: hint.to_owned(),
    }
}

/// Parses one pattern, or says which rule it breaks.
fn parse(field: &str, raw: &str) -> Result<Pattern, EntryProblem> {
    const HINT: &str =
        "write `*`, `tool.*`, `tool` or `tool.action` (these lists have no other wildcards)";
    let trimmed = raw.trim();
    if trimmed.starts_with('!') {
        return Err(problem(
            field,
            raw,
            Rule::ReservedCharacter,
            "`tool.action` lists have no deny syntax: remove the `!` and leave the tool out of the list (or deny it with the admin blocklist)",
        ));
    }
    if trimmed == "*" {
        return Ok(Pattern::Any);
    }
    if trimmed != raw || raw.chars().any(char::is_whitespace) {
        let rule = if raw.trim().is_empty() {
            Rule::Empty
        } else {
            Rule::Whitespace
        };
        return Err(problem(
            field,
            raw,
            rule,
            "a pattern holds no whitespace: remove it",
        ));
    }
    let (tool, action) = match raw.split_once('.') {
        Some((tool, action)) => (tool, Some(action)),
        None => (raw, None),
    };
    if let Err(rule) = validate_call_name(tool) {
        return Err(problem(field, raw, rule, HINT));
    }
    match action {
        None => Ok(Pattern::Exact(raw.to_lowercase())),
        Some("*") => Ok(Pattern::Tool(tool.to_lowercase())),
        Some(action) => match validate_call_name(action) {
            Ok(()) => Ok(Pattern::Exact(raw.to_lowercase())),
            Err(rule) => Err(problem(field, raw, rule, HINT)),
        },
    }
}

impl ToolActionList {
    /// Validates every pattern (all problems at once); `field` names the list in them,
    /// e.g. `mcp_servers[0].allowed_tools`.
    pub fn compile(
        field: &str,
        server: &str,
        patterns: &[String],
    ) -> Result<Self, Vec<EntryProblem>> {
        let mut problems = Vec::new();
        if let Err(rule) = validate_call_name(server) {
            problems.push(problem(
                &field.replace("allowed_tools", "server"),
                server,
                rule,
                "name the MCP server id exactly as clients send it",
            ));
        }
        let mut compiled = Vec::with_capacity(patterns.len());
        for (i, raw) in patterns.iter().enumerate() {
            match parse(&format!("{field}[{i}]"), raw) {
                Ok(p) => compiled.push(p),
                Err(p) => problems.push(p),
            }
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        Ok(Self {
            server: server.to_owned(),
            written: patterns.to_vec().into(),
            patterns: compiled,
        })
    }

    pub fn server(&self) -> &str {
        &self.server
    }

    /// The patterns as written.
    pub fn allowed_tools(&self) -> &Arc<[String]> {
        &self.written
    }

    /// Whether the list lets `tool` run with `action` (seed 000's `IsAllowed`).
    pub fn allows(&self, tool: &str, action: Option<&str>) -> bool {
        if self.patterns.is_empty() {
            return true;
        }
        let tool = tool.to_lowercase();
        let name = qualified_name(&tool, action.map(str::to_lowercase).as_deref());
        self.patterns.iter().any(|p| match p {
            Pattern::Any => true,
            Pattern::Tool(t) => *t == tool,
            Pattern::Exact(n) => *n == name,
        })
    }

    /// Whether some action of `tool` may run: what `tools/list` filtering asks, since
    /// a listing names tools without actions.
    pub fn allows_some_action(&self, tool: &str) -> bool {
        if self.patterns.is_empty() {
            return true;
        }
        let tool = tool.to_lowercase();
        self.patterns.iter().any(|p| match p {
            Pattern::Any => true,
            Pattern::Tool(t) => *t == tool,
            Pattern::Exact(n) => n.split_once('.').map_or(n.as_str(), |(t, _)| t) == tool,
        })
    }
}

/// Every server's `tool.action` list; servers not named are not restricted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolActionLists {
    by_server: FxHashMap<String, ToolActionList>,
}

impl ToolActionLists {
    /// One list per server; a server named twice is reported at its second list.
    pub fn new(lists: Vec<ToolActionList>) -> Result<Self, Vec<EntryProblem>> {
        let mut by_server = FxHashMap::default();
        let mut problems = Vec::new();
        for (i, list) in lists.into_iter().enumerate() {
            if by_server.contains_key(&list.server) {
                problems.push(problem(
                    &format!("mcp_servers[{i}].server"),
                    &list.server,
                    Rule::Duplicate,
                    "each server has one list: merge the two",
                ));
                continue;
            }
            by_server.insert(list.server.clone(), list);
        }
        if problems.is_empty() {
            Ok(Self { by_server })
        } else {
            Err(problems)
        }
    }

    pub fn is_empty(&self) -> bool {
        self.by_server.is_empty()
    }

    /// The list of `server`, if the file restricts it.
    pub fn get(&self, server: &str) -> Option<&ToolActionList> {
        self.by_server.get(server)
    }

    /// Every list, by server id.
    pub fn iter(&self) -> impl Iterator<Item = &ToolActionList> {
        let mut lists: Vec<&ToolActionList> = self.by_server.values().collect();
        lists.sort_by(|a, b| a.server.cmp(&b.server));
        lists.into_iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(patterns: &[&str]) -> ToolActionList {
        let patterns: Vec<String> = patterns.iter().map(|s| (*s).to_owned()).collect();
        ToolActionList::compile("allowed_tools", "gasoline", &patterns).unwrap()
    }

    #[test]
    fn seed_000_matching() {
        let l = list(&["observe.*", "generate.reproduction", "interact.navigate"]);
        let table: &[(&str, Option<&str>, bool)] = &[
            ("observe", Some("logs"), true),
            ("observe", Some("server_config"), true),
            ("observe", None, true),
            ("OBSERVE", Some("Logs"), true),
            ("generate", Some("reproduction"), true),
            ("generate", Some("REPRODUCTION"), true),
            ("generate", Some("test"), false),
            ("generate", None, false),
            ("interact", Some("navigate"), true),
            ("Interact", Some("Navigate"), true),
            ("interact", Some("execute_js"), false),
            ("interact", None, false),
            ("interactx", Some("navigate"), false),
            ("observex", Some("logs"), false),
            ("other", Some("x"), false),
        ];
        for (tool, action, want) in table {
            assert_eq!(l.allows(tool, *action), *want, "{tool} {action:?}");
        }
    }

    #[test]
    fn star_exact_tool_and_empty() {
        assert!(list(&["*"]).allows("anything", Some("at_all")));
        assert!(list(&[]).allows("anything", Some("at_all")));
        assert!(list(&[]).allows_some_action("anything"));
        let tool_only = list(&["refresh"]);
        assert!(tool_only.allows("Refresh", None));
        assert!(!tool_only.allows("refresh", Some("hard")));
        let l = list(&["interact.navigate", "observe.*"]);
        assert!(l.allows_some_action("interact"));
        assert!(l.allows_some_action("OBSERVE"));
        assert!(!l.allows_some_action("generate"));
    }

    #[test]
    fn invalid_patterns_name_the_rule() {
        let bad: Vec<String> = [
            "ok.*",
            "",
            " observe.*",
            "ob*.x",
            "a:b",
            "x.y*",
            "*.x",
            "!interact.*",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        let problems = ToolActionList::compile("allowed_tools", "gasoline", &bad).unwrap_err();
        let got: Vec<(String, Rule)> = problems.iter().map(|p| (p.field.clone(), p.rule)).collect();
        assert_eq!(
            got,
            [
                ("allowed_tools[1]".to_owned(), Rule::Empty),
                ("allowed_tools[2]".to_owned(), Rule::Whitespace),
                ("allowed_tools[3]".to_owned(), Rule::ReservedCharacter),
                ("allowed_tools[4]".to_owned(), Rule::ReservedCharacter),
                ("allowed_tools[5]".to_owned(), Rule::ReservedCharacter),
                ("allowed_tools[6]".to_owned(), Rule::ReservedCharacter),
                ("allowed_tools[7]".to_owned(), Rule::ReservedCharacter),
            ]
        );
        assert!(
            problems[6].hint.contains("no deny syntax"),
            "{}",
            problems[6].hint
        );
    }

    #[test]
    fn a_server_has_one_list() {
        let err = ToolActionLists::new(vec![list(&["*"]), list(&["a"])]).unwrap_err();
        assert_eq!(err[0].field, "mcp_servers[1].server");
        assert_eq!(err[0].rule, Rule::Duplicate);
    }
}
