//! The MCP resources: the describe document and one schema per entity, read
//! from the same `core::describe` as `GET /api/_a2app/describe`, and the
//! app's MCP Apps view (`super::view`).

use a2app_core::App;
use rmcp::ErrorData;
use rmcp::model::{CacheScope, ReadResourceResult, Resource, ResourceContents};
use serde_json::json;

/// The whole describe document.
pub const DESCRIBE: &str = "a2app://describe";
/// The A2UI catalog the view draws (`show`).
pub const CATALOG: &str = "a2app://a2ui/catalog";
/// One entity's part of describe: `a2app://describe/cards`.
pub const ENTITY_PREFIX: &str = "a2app://describe/";

const JSON: &str = "application/json";

/// Every resource: describe, the entities in schema order, the view.
pub fn list(app: &App) -> Vec<Resource> {
    let name = &app.definition.config.name;
    let mut out = vec![
        Resource::new(DESCRIBE, "describe")
            .with_title(format!("{name}: describe"))
            .with_description("The app's data model: entities, fields, operations and conventions.")
            .with_mime_type(JSON),
    ];
    for entity in app.definition.schema.entities.keys() {
        out.push(
            Resource::new(format!("{ENTITY_PREFIX}{entity}"), format!("schema of {entity}"))
                .with_title(format!("{name}: {entity}"))
                .with_description(format!("The fields of \"{entity}\": types, limits, required, read-only."))
                .with_mime_type(JSON),
        );
    }
    out.push(
        Resource::new(CATALOG, "a2ui catalog")
            .with_title(format!("{name}: A2UI catalog"))
            .with_description("The components a surface may hold (show), with their properties.")
            .with_mime_type(JSON),
    );
    out.push(super::view::resource(super::view::uri(app), format!("{name}: view")));
    out
}

/// Reads one resource; an unknown URI is `-32602` (both eras).
pub fn read(app: &App, uri: &str) -> Result<ReadResourceResult, ErrorData> {
    if uri == super::view::uri(app) {
        return super::view::read(app);
    }
    let value = if uri == CATALOG {
        a2app_a2ui::catalog::document()
    } else if uri == DESCRIBE {
        serde_json::to_value(app.describe()).map_err(|e| super::internal(&e.to_string()))?
    } else if let Some(entity) = uri.strip_prefix(ENTITY_PREFIX)
        && app.definition.schema.entities.contains_key(entity)
    {
        app.describe_part(entity).map_err(|e| super::internal(&e.to_string()))?
    } else {
        return Err(ErrorData::invalid_params(
            format!("no resource {uri}; resources/list names them"),
            Some(json!({ "uri": uri })),
        ));
    };
    let text = serde_json::to_string_pretty(&value).map_err(|e| super::internal(&e.to_string()))?;
    let contents =
        ResourceContents::TextResourceContents { uri: uri.to_owned(), mime_type: Some(JSON.into()), text, meta: None };
    Ok(ReadResourceResult::new(vec![contents]).with_ttl_ms(0).with_cache_scope(CacheScope::Private))
}
