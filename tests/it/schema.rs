//! The published JSON Schemas of the policy documents (`schemas/`) are the ones the
//! types generate. `UPDATE_SCHEMAS=1 cargo test --test it schema::` writes them anew.

use std::path::Path;

#[test]
fn the_published_schemas_are_up_to_date() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas");
    for (name, text) in toolgate::policy_file::json_schemas() {
        let path = dir.join(name);
        if std::env::var_os("UPDATE_SCHEMAS").is_some() {
            std::fs::write(&path, &text).expect("write the schema");
        }
        let published = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            published == text,
            "schemas/{name} is out of date: run UPDATE_SCHEMAS=1 cargo test --test it schema::"
        );
    }
}

#[test]
fn the_roles_schema_names_seed_004s_fields() {
    let (_, text) = toolgate::policy_file::json_schemas()
        .into_iter()
        .find(|(name, _)| *name == "roles.schema.json")
        .expect("roles schema");
    let schema: serde_json::Value = serde_json::from_str(&text).expect("json");
    let restrictions = &schema["$defs"]["Restrictions"]["properties"];
    for field in [
        "maxComponentsPerSession",
        "allowedDirectories",
        "forbiddenFiles",
        "allowedEndpoints",
        "allowedWCAGLevels",
        "sessionQuotas",
    ] {
        assert!(
            restrictions.get(field).is_some(),
            "{field} not in the schema"
        );
    }
    assert_eq!(
        schema["$defs"]["Restrictions"]["additionalProperties"],
        serde_json::Value::Bool(false)
    );
}
