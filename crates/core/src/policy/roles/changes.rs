//! What changed between two roles documents, per allow-list and context, for the
//! audit trail's `allow_list_updated` records (seed 004's `updateAllowList` log).

use super::model::RolesDocument;
use serde_json::{Value, json};

/// One `allow_list_updated` record's detail per changed (allow-list, context), and
/// one for the categories and one for the roles when they changed.
pub fn allow_list_changes(before: &RolesDocument, after: &RolesDocument) -> Vec<Value> {
    let mut out = Vec::new();
    if before.tool_categories != after.tool_categories {
        out.push(json!({"scope": "toolCategories", "after": after.tool_categories}));
    }
    if before.agent_roles != after.agent_roles {
        out.push(json!({"scope": "agentRoles", "after": after.agent_roles}));
    }
    let empty = Default::default();
    let keys = before.allow_lists.keys().chain(after.allow_lists.keys());
    let mut seen = std::collections::BTreeSet::new();
    for key in keys.filter(|k| seen.insert(*k)) {
        let old = before.allow_lists.get(key);
        let new = after.allow_lists.get(key);
        let list = new.or(old).expect("the key comes from one of them");
        let old_contexts = old.map_or(&empty, |l| &l.contexts);
        let new_contexts = new.map_or(&empty, |l| &l.contexts);
        let mut contexts: Vec<&String> = old_contexts.keys().chain(new_contexts.keys()).collect();
        contexts.sort();
        contexts.dedup();
        for context in contexts {
            let (o, n) = (old_contexts.get(context), new_contexts.get(context));
            let change = match (o, n) {
                (None, Some(_)) => "added",
                (Some(_), None) => "removed",
                (Some(a), Some(b)) if a != b => "changed",
                _ if old.map(|l| (&l.agent_id, &l.role_id))
                    != new.map(|l| (&l.agent_id, &l.role_id)) =>
                {
                    "changed"
                }
                _ => continue,
            };
            out.push(json!({
                "scope": "allowLists",
                "allow_list": key,
                "agent_id": list.agent_id,
                "role_id": list.role_id,
                "context": context,
                "change": change,
                "after": n,
            }));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_each_changed_context() {
        let doc = |forbidden: &str, extra: bool| -> RolesDocument {
            let mut contexts = json!({"DEV": {"restrictions": {"forbiddenFiles": [forbidden]}}});
            if extra {
                contexts["OPS"] = json!({});
            }
            serde_json::from_value(
                json!({"allowLists": {"a": {"agentId": "A", "contexts": contexts}}}),
            )
            .unwrap()
        };
        assert!(allow_list_changes(&doc("*.pem", false), &doc("*.pem", false)).is_empty());
        let changes = allow_list_changes(&doc("*.pem", false), &doc("*.key", true));
        let summary: Vec<(String, String)> = changes
            .iter()
            .map(|c| (c["context"].to_string(), c["change"].to_string()))
            .collect();
        assert_eq!(
            summary,
            [
                ("\"DEV\"".to_owned(), "\"changed\"".to_owned()),
                ("\"OPS\"".to_owned(), "\"added\"".to_owned())
            ]
        );
        assert_eq!(changes[0]["agent_id"], "A");
    }
}
