//! Seed 004's roles document ⇄ its protobuf message. The message's JSON is the
//! document's own format; here every field maps one to one, and a list that may
//! be unset (no limit) travels as a `ListValue` of strings.

use crate::error::ConvertError;
use crate::json::{value_from_pb, value_to_pb};
use crate::v1 as pb;
use prost_types::{ListValue, Value, value::Kind};
use std::collections::BTreeMap;
use toolgate_core::policy::roles as core;

/// The protobuf document as the core's; `field` names it in errors.
pub fn roles_from_pb(
    d: pb::RolesDocument,
    field: &str,
) -> Result<core::RolesDocument, ConvertError> {
    Ok(core::RolesDocument {
        tool_categories: d
            .tool_categories
            .into_iter()
            .map(|(k, c)| {
                let v = core::ToolCategory {
                    description: c.description,
                    tools: c.tools,
                };
                (k, v)
            })
            .collect(),
        agent_roles: d
            .agent_roles
            .into_iter()
            .map(|(k, r)| {
                let v = core::AgentRole {
                    agent_ids: r.agent_ids,
                    description: r.description,
                    base_capabilities: r.base_capabilities,
                };
                (k, v)
            })
            .collect(),
        allow_lists: d
            .allow_lists
            .into_iter()
            .map(|(k, l)| {
                let f = format!("{field}.allowLists.{k}");
                let v = allow_list_from_pb(l, &f)?;
                Ok((k, v))
            })
            .collect::<Result<_, ConvertError>>()?,
        default_context: d.default_context,
    })
}

fn allow_list_from_pb(l: pb::AllowList, field: &str) -> Result<core::AllowList, ConvertError> {
    Ok(core::AllowList {
        agent_id: l.agent_id,
        role_id: l.role_id,
        version: l.version,
        last_updated: l.last_updated,
        contexts: l
            .contexts
            .into_iter()
            .map(|(k, c)| {
                let f = format!("{field}.contexts.{k}");
                let v = core::ContextAllowList {
                    allowed_tools: c
                        .allowed_tools
                        .into_iter()
                        .map(|(cat, list)| {
                            let v = strings(&list, &format!("{f}.allowedTools.{cat}"))?;
                            Ok((cat, v))
                        })
                        .collect::<Result<_, ConvertError>>()?,
                    description: c.description,
                    restrictions: restrictions_from_pb(
                        c.restrictions.unwrap_or_default(),
                        &format!("{f}.restrictions"),
                    )?,
                };
                Ok((k, v))
            })
            .collect::<Result<_, ConvertError>>()?,
    })
}

fn restrictions_from_pb(
    r: pb::Restrictions,
    field: &str,
) -> Result<core::Restrictions, ConvertError> {
    let list = |v: Option<ListValue>, name: &str| {
        v.map(|l| strings(&l, &format!("{field}.{name}")))
            .transpose()
    };
    Ok(core::Restrictions {
        max_components_per_session: r.max_components_per_session,
        forbidden_components: r.forbidden_components,
        allowed_component_types: list(r.allowed_component_types, "allowedComponentTypes")?,
        allowed_file_types: list(r.allowed_file_types, "allowedFileTypes")?,
        allowed_directories: list(r.allowed_directories, "allowedDirectories")?,
        forbidden_files: r.forbidden_files,
        max_file_size: r.max_file_size,
        allowed_network_hosts: list(r.allowed_network_hosts, "allowedNetworkHosts")?,
        allowed_endpoints: list(r.allowed_endpoints, "allowedEndpoints")?,
        allowed_protocols: list(r.allowed_protocols, "allowedProtocols")?,
        allowed_databases: list(r.allowed_databases, "allowedDatabases")?,
        allowed_tables: list(r.allowed_tables, "allowedTables")?,
        forbidden_operations: r.forbidden_operations,
        session_quotas: r.session_quotas.into_iter().collect(),
        max_component_depth: r.max_component_depth,
        sensitive_properties: list(r.sensitive_properties, "sensitiveProperties")?,
        read_only_properties: list(r.read_only_properties, "readOnlyProperties")?,
        allowed_wcag_levels: list(r.allowed_wcag_levels, "allowedWCAGLevels")?,
        allowed_contrast_checks: list(r.allowed_contrast_checks, "allowedContrastChecks")?,
        max_test_duration: r.max_test_duration,
        max_query_time: r.max_query_time,
        max_schema_size: r.max_schema_size,
        allowed_schema_versions: list(r.allowed_schema_versions, "allowedSchemaVersions")?,
        allowed_message_types: list(r.allowed_message_types, "allowedMessageTypes")?,
        max_message_size: r.max_message_size,
        allowed_test_types: list(r.allowed_test_types, "allowedTestTypes")?,
        obligations: r
            .obligations
            .into_iter()
            .map(|(k, v)| {
                let json = value_from_pb(&v, &format!("{field}.obligations.{k}"))?;
                Ok((k, json))
            })
            .collect::<Result<BTreeMap<_, _>, ConvertError>>()?,
    })
}

/// A `ListValue` whose every item is a string; anything else is refused, naming
/// the item.
fn strings(list: &ListValue, field: &str) -> Result<Vec<String>, ConvertError> {
    list.values
        .iter()
        .enumerate()
        .map(|(i, v)| match &v.kind {
            Some(Kind::StringValue(s)) => Ok(s.clone()),
            _ => Err(ConvertError {
                field: format!("{field}[{i}]"),
                message: "is not a string: this list holds names only".to_owned(),
            }),
        })
        .collect()
}

fn string_list(items: &[String]) -> ListValue {
    ListValue {
        values: items
            .iter()
            .map(|s| Value {
                kind: Some(Kind::StringValue(s.clone())),
            })
            .collect(),
    }
}

/// The core's document as protobuf; none when roles are not in use.
pub fn roles_to_pb(d: &core::RolesDocument) -> Option<pb::RolesDocument> {
    if d.is_empty() {
        return None;
    }
    Some(pb::RolesDocument {
        tool_categories: d
            .tool_categories
            .iter()
            .map(|(k, c)| {
                let v = pb::ToolCategory {
                    description: c.description.clone(),
                    tools: c.tools.clone(),
                };
                (k.clone(), v)
            })
            .collect(),
        agent_roles: d
            .agent_roles
            .iter()
            .map(|(k, r)| {
                let v = pb::AgentRole {
                    agent_ids: r.agent_ids.clone(),
                    description: r.description.clone(),
                    base_capabilities: r.base_capabilities.clone(),
                };
                (k.clone(), v)
            })
            .collect(),
        allow_lists: d
            .allow_lists
            .iter()
            .map(|(k, l)| (k.clone(), allow_list_to_pb(l)))
            .collect(),
        default_context: d.default_context.clone(),
    })
}

fn allow_list_to_pb(l: &core::AllowList) -> pb::AllowList {
    pb::AllowList {
        agent_id: l.agent_id.clone(),
        role_id: l.role_id.clone(),
        version: l.version.clone(),
        last_updated: l.last_updated.clone(),
        contexts: l
            .contexts
            .iter()
            .map(|(k, c)| {
                let v = pb::ContextAllowList {
                    description: c.description.clone(),
                    allowed_tools: c
                        .allowed_tools
                        .iter()
                        .map(|(cat, list)| (cat.clone(), string_list(list)))
                        .collect(),
                    restrictions: Some(restrictions_to_pb(&c.restrictions)),
                };
                (k.clone(), v)
            })
            .collect(),
    }
}

fn restrictions_to_pb(r: &core::Restrictions) -> pb::Restrictions {
    let list = |v: &Option<Vec<String>>| v.as_deref().map(string_list);
    pb::Restrictions {
        max_components_per_session: r.max_components_per_session,
        forbidden_components: r.forbidden_components.clone(),
        allowed_component_types: list(&r.allowed_component_types),
        allowed_file_types: list(&r.allowed_file_types),
        allowed_directories: list(&r.allowed_directories),
        forbidden_files: r.forbidden_files.clone(),
        max_file_size: r.max_file_size.clone(),
        allowed_network_hosts: list(&r.allowed_network_hosts),
        allowed_endpoints: list(&r.allowed_endpoints),
        allowed_protocols: list(&r.allowed_protocols),
        allowed_databases: list(&r.allowed_databases),
        allowed_tables: list(&r.allowed_tables),
        forbidden_operations: r.forbidden_operations.clone(),
        session_quotas: r
            .session_quotas
            .iter()
            .map(|(k, n)| (k.clone(), *n))
            .collect(),
        max_component_depth: r.max_component_depth,
        sensitive_properties: list(&r.sensitive_properties),
        read_only_properties: list(&r.read_only_properties),
        allowed_wcag_levels: list(&r.allowed_wcag_levels),
        allowed_contrast_checks: list(&r.allowed_contrast_checks),
        max_test_duration: r.max_test_duration.clone(),
        max_query_time: r.max_query_time.clone(),
        max_schema_size: r.max_schema_size.clone(),
        allowed_schema_versions: list(&r.allowed_schema_versions),
        allowed_message_types: list(&r.allowed_message_types),
        max_message_size: r.max_message_size.clone(),
        allowed_test_types: list(&r.allowed_test_types),
        obligations: r
            .obligations
            .iter()
            .map(|(k, v)| (k.clone(), value_to_pb(v)))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every field of the document set, so a field the conversion forgets shows.
    const FULL: &str = r#"{
      "toolCategories": {"ui": {"description": "d", "tools": ["CREATE_COMPONENT", "gh:issue"]}},
      "agentRoles": {"designer": {"agentIds": ["a1"], "description": "r", "baseCapabilities": ["ui"]}},
      "allowLists": {"a1": {"agentId": "a1", "roleId": "designer", "version": "2", "lastUpdated": "2025-01-01",
        "contexts": {"UI_SANDBOX": {"description": "c", "allowedTools": {"ui": ["CREATE_COMPONENT"], "none": []},
          "restrictions": {
            "maxComponentsPerSession": 4294967295, "forbiddenComponents": ["*"],
            "allowedComponentTypes": [], "allowedFileTypes": [".ts"], "allowedDirectories": ["src/**"],
            "forbiddenFiles": ["*.pem"], "maxFileSize": "10MB", "allowedNetworkHosts": ["a.example"],
            "allowedEndpoints": ["a.example:443"], "allowedProtocols": ["https"], "allowedDatabases": ["db"],
            "allowedTables": ["t"], "forbiddenOperations": ["FILE_WRITE"], "sessionQuotas": {"FILE_READ": 3},
            "maxComponentDepth": 2, "sensitiveProperties": ["p"], "readOnlyProperties": ["q"],
            "allowedWCAGLevels": ["AA"], "allowedContrastChecks": ["x"], "maxTestDuration": "5s",
            "maxQueryTime": "1s", "maxSchemaSize": "1KB", "allowedSchemaVersions": ["v1"],
            "allowedMessageTypes": ["m"], "maxMessageSize": "2KB", "allowedTestTypes": ["unit"],
            "obligations": {"custom": {"n": 1, "l": [true, null, "s", 1.5]}}}}}}},
      "defaultContext": "UI_SANDBOX"
    }"#;

    #[test]
    fn every_field_round_trips() {
        let doc: core::RolesDocument = serde_json::from_str(FULL).unwrap();
        let back = roles_from_pb(roles_to_pb(&doc).unwrap(), "roles").unwrap();
        assert_eq!(back, doc);
    }

    #[test]
    fn an_empty_document_is_no_message() {
        assert!(roles_to_pb(&core::RolesDocument::default()).is_none());
    }

    #[test]
    fn a_list_item_that_is_not_a_string_is_refused_by_path() {
        let mut doc = roles_to_pb(&serde_json::from_str(FULL).unwrap()).unwrap();
        let context = doc
            .allow_lists
            .get_mut("a1")
            .and_then(|l| l.contexts.get_mut("UI_SANDBOX"))
            .unwrap();
        context.allowed_tools.get_mut("ui").unwrap().values[0] = Value {
            kind: Some(Kind::NumberValue(1.0)),
        };
        let e = roles_from_pb(doc, "auto_run_controls.roles").unwrap_err();
        assert_eq!(
            e.field,
            "auto_run_controls.roles.allowLists.a1.contexts.UI_SANDBOX.allowedTools.ui[0]"
        );
    }
}
