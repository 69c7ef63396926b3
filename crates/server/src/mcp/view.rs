//! The app's MCP Apps view (the `io.modelcontextprotocol/ui` extension): one
//! `ui://` HTML resource that a host draws beside the record tools' results.
//!
//! The view is data, not a second UI to keep in step: a fixed page
//! (`view.html`, plain DOM code, no framework, no network) plus the app's
//! describe, from which it takes entity and field names, types and each
//! entity's label field. The `a2app mcp` gateway serves the same page, which
//! then asks for each app's describe through its host. It
//! talks only to its host, over `postMessage` JSON-RPC: it is handed a tool's
//! input and result, and pages, opens a record or approves an operation by
//! asking the host to call this app's tools, so every read and write it causes
//! goes through the same tools, guard and receipts as the agent's.
//!
//! Tools name the view only for a host that declared the extension: the
//! link is a host feature, and other hosts keep the compact, budgeted list.

use a2app_core::App;
use rmcp::ErrorData;
use rmcp::model::{
    CacheScope, ClientCapabilities, MetaObject, ReadResourceResult, Resource, ResourceContents, ServerCapabilities,
    Tool,
};
use serde_json::{Value, json};

/// The extension's id in capability maps.
pub const EXTENSION: &str = "io.modelcontextprotocol/ui";
/// The MIME type of an MCP Apps view.
pub const MIME: &str = "text/html;profile=mcp-app";
/// The tools whose results are not for the person's eyes: `describe` answers
/// a document for the model, the gateway's `apps` and `whoami` a list and
/// a credential summary, and its request-queue tools the agent's own work
/// (the app's page shows the person the answer), as is a claim check (its
/// confirmations are for the agent to pass on). Every other tool (the record tools, `run_operation`,
/// `job_status`, and in `full` mode each operation's own tool) is drawn.
const UNLINKED: &[&str] =
    &["describe", "apps", "whoami", "requests", "claim_request", "answer_request", "check_claims", "search_apps"];

const PAGE: &str = include_str!("view.html");
/// Where the app's model goes into the page.
const SLOT: &str = "/*A2APP_MODEL*/null";

/// The view's URI: `ui://<app id>/view`, so two apps behind one host differ.
pub fn uri(app: &App) -> String {
    format!("ui://{}/view", app.definition.config.id)
}

/// Whether the client can draw views: it declared the extension, with this
/// MIME type (or no list of them, which the extension reads as HTML).
pub fn supported(capabilities: Option<&ClientCapabilities>) -> bool {
    let Some(settings) = capabilities.and_then(|c| c.extensions.as_ref()).and_then(|e| e.get(EXTENSION)) else {
        return false;
    };
    match settings.get("mimeTypes") {
        Some(Value::Array(types)) => types.iter().any(|t| t.as_str() == Some(MIME)),
        _ => true,
    }
}

/// The capabilities entry that says a server has views.
pub fn declare(capabilities: &mut ServerCapabilities) {
    capabilities.extensions.get_or_insert_with(Default::default).insert(EXTENSION.to_owned(), Default::default());
}

/// Names the view `uri` in the `_meta.ui` of the tools it draws (and in the
/// older flat key hosts of the first release read).
pub fn link(uri: &str, tools: &mut [Tool]) {
    for tool in tools.iter_mut().filter(|t| !UNLINKED.contains(&t.name.as_ref())) {
        let meta = tool.meta.get_or_insert_with(MetaObject::new);
        meta.0.insert("ui".into(), json!({ "resourceUri": uri }));
        meta.0.insert("ui/resourceUri".into(), json!(uri));
    }
}

/// A view's entry in `resources/list`.
pub fn resource(uri: String, title: String) -> Resource {
    let mut resource = Resource::new(uri, "view")
        .with_title(title)
        .with_description("Draws lists, records, receipts, jobs and errors for the person (MCP Apps).")
        .with_mime_type(MIME);
    resource.meta = Some(ui_meta());
    resource
}

/// No `csp`: the view fetches nothing and loads nothing, so the extension's
/// default policy (no connections, no outside scripts or images) is the one
/// it needs, and a host applies none wider.
fn ui_meta() -> MetaObject {
    let mut meta = MetaObject::new();
    meta.0.insert("ui".into(), json!({ "prefersBorder": true }));
    meta
}

/// `resources/read` of a view: the page with `model` in it. The model is
/// `{"describe": <the app's describe>}` for an app's own view, or
/// `{"gateway": true}` for a view that learns each app's describe by calling
/// the `describe` tool with the result's `app` (the `a2app mcp` gateway).
pub fn contents(uri: String, model: &Value) -> ReadResourceResult {
    let text = PAGE.replacen(SLOT, &script_json(model), 1);
    let contents =
        ResourceContents::TextResourceContents { uri, mime_type: Some(MIME.into()), text, meta: Some(ui_meta()) };
    ReadResourceResult::new(vec![contents]).with_ttl_ms(0).with_cache_scope(CacheScope::Private)
}

/// The app's own view: describe is in the page, read on every call so the
/// view follows the schema as describe does.
pub fn read(app: &App) -> Result<ReadResourceResult, ErrorData> {
    let describe = serde_json::to_value(app.describe()).map_err(|e| super::internal(&e.to_string()))?;
    Ok(contents(uri(app), &json!({ "describe": describe })))
}

/// JSON safe inside a `<script>` element: `<`, `>` and `&` escaped, so no
/// name in the schema can close the element or open a comment, and the two
/// line separators JavaScript once refused in strings.
fn script_json(value: &Value) -> String {
    let text = value.to_string();
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn capabilities(value: Value) -> ClientCapabilities {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn only_a_client_that_declared_the_extension_for_html_is_sent_the_link() {
        assert!(!supported(None));
        assert!(!supported(Some(&capabilities(json!({})))));
        assert!(!supported(Some(&capabilities(json!({"extensions": {"io.other/ui": {}}})))));
        assert!(supported(Some(&capabilities(json!({"extensions": {EXTENSION: {}}})))));
        assert!(supported(Some(&capabilities(json!({"extensions": {EXTENSION: {"mimeTypes": [MIME]}}})))));
        let a2ui_only = json!({"extensions": {EXTENSION: {"mimeTypes": ["application/a2ui+json"]}}});
        assert!(!supported(Some(&capabilities(a2ui_only))));
    }

    #[test]
    fn script_json_cannot_end_the_script_element() {
        let text = script_json(&json!({"name": "</script><!-- & \u{2028}"}));
        assert_eq!(text, r#"{"name":"\u003c/script\u003e\u003c!-- \u0026 \u2028"}"#);
        let back: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back["name"], "</script><!-- & \u{2028}");
    }

    #[test]
    fn the_page_has_exactly_one_slot() {
        assert_eq!(PAGE.matches(SLOT).count(), 1);
    }
}
