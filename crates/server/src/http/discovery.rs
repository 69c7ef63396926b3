//! Web discovery: the AI Catalog (`/.well-known/ai-catalog.json`), the MCP
//! Server Card (`/mcp/server-card`) and the `rel="ai-catalog"` link on the
//! app's page, so a host given the app's address can find its MCP endpoint.
//!
//! Both documents are public (CORS `*`), cacheable and conditional (`ETag`,
//! `Last-Modified`, 304). They hold connection metadata only: no tools, no
//! data, no secrets. The `Host` rule still applies (a rebinding name gets
//! 403); the `Origin` rule does not, since any page may read a public card.

use super::{ApiResult, State};
use a2app_core::access::Intent;
use axum::body::Body;
use axum::extract::{Request, State as S};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Response};
use serde_json::{Value, json};
use std::hash::{Hash, Hasher};

pub const CATALOG_PATH: &str = "/.well-known/ai-catalog.json";
pub const CARD_PATH: &str = "/mcp/server-card";
pub const CATALOG_TYPE: &str = "application/ai-catalog+json";
pub const CARD_TYPE: &str = "application/mcp-server-card+json";
pub const CARD_SCHEMA: &str = "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json";
/// The `Link` header of the app's page.
pub const LINK: &str = "</.well-known/ai-catalog.json>; rel=\"ai-catalog\"; type=\"application/ai-catalog+json\"";
const LINK_TAG: &str =
    "<link rel=\"ai-catalog\" type=\"application/ai-catalog+json\" href=\"/.well-known/ai-catalog.json\">";

/// `GET /.well-known/ai-catalog.json`: one entry, this app's card.
pub async fn catalog(S(state): S<State>, headers: HeaderMap) -> ApiResult<Response> {
    let base = base_url(&state, &headers).await?;
    let config = &state.app.definition.config;
    let publisher = host_name(&headers);
    let doc = json!({
        "specVersion": "1.0",
        "host": { "displayName": config.name },
        "entries": [{
            "identifier": format!("urn:air:{publisher}:mcp:{}", config.id),
            "type": CARD_TYPE,
            // The April 2026 catalog text names these; newer readers ignore them.
            "mediaType": CARD_TYPE,
            "displayName": config.name,
            "url": format!("{base}{CARD_PATH}"),
        }],
    });
    Ok(document(&state, &headers, CATALOG_TYPE, &doc))
}

/// `GET /mcp/server-card`: how to connect, matching `server/discover`.
pub async fn card(S(state): S<State>, headers: HeaderMap) -> ApiResult<Response> {
    let base = base_url(&state, &headers).await?;
    let doc = server_card(&state, &base);
    Ok(document(&state, &headers, CARD_TYPE, &doc))
}

/// The card for an app served at `base` (`http://127.0.0.1:8090`).
pub fn server_card(state: &State, base: &str) -> Value {
    let config = &state.app.definition.config;
    let discovery = &config.discovery;
    let versions: Vec<String> =
        rmcp::model::ProtocolVersion::KNOWN_VERSIONS.iter().map(|v| v.as_str().to_owned()).collect();
    let description = match config.description.trim() {
        "" => format!("{}, an a2app app", config.name),
        d => d.to_owned(),
    };
    let mut card = json!({
        "$schema": CARD_SCHEMA,
        "name": card_name(state),
        "version": env!("CARGO_PKG_VERSION"),
        "title": clip(&config.name, 100),
        "description": clip(&description, 100),
        "websiteUrl": format!("{base}/"),
        "remotes": [{
            "type": "streamable-http",
            "url": format!("{base}{}", crate::mcp::PATH),
            "supportedProtocolVersions": versions,
        }],
    });
    if !discovery.icons.is_empty() {
        let icons: Vec<Value> = discovery
            .icons
            .iter()
            .map(|icon| {
                let mut icon = icon.clone();
                if let Some(src) = icon["src"].as_str().filter(|s| s.starts_with('/')) {
                    icon["src"] = json!(format!("{base}{src}"));
                }
                icon
            })
            .collect();
        card["icons"] = json!(icons);
    }
    if let Some(presentation) = &discovery.presentation {
        card["_meta"] = json!({ "openbot/presentation": presentation });
    }
    card
}

/// `[discovery] name`, else the reversed first allowed host (`apps.example.com`
/// → `com.example.apps/kanban`), else `localhost/<id>`.
fn card_name(state: &State) -> String {
    let config = &state.app.definition.config;
    if let Some(name) = &config.discovery.name {
        return name.clone();
    }
    let namespace = config
        .http
        .allowed_hosts
        .first()
        .map(|h| h.split('.').rev().collect::<Vec<_>>().join("."))
        .unwrap_or_else(|| "localhost".into());
    format!("{namespace}/{}", config.id)
}

fn clip(text: &str, max: usize) -> String {
    text.chars().take(max).collect()
}

/// The app's own address as the request names it. Only loopback and
/// `allowed_hosts` pass the Host rule; allowed (deployed) hosts are HTTPS.
async fn base_url(state: &State, headers: &HeaderMap) -> ApiResult<String> {
    // The Host rule without the Origin rule: the documents are public, so
    // no other header is read (nor refused).
    let host = match headers.get(header::HOST) {
        None => None,
        Some(v) => Some(v.to_str().map_err(|_| a2app_core::Error::ForbiddenHost(super::UNREADABLE.into()))?.to_owned()),
    };
    let creds = a2app_core::access::Credentials { host, port: state.port, ..Default::default() };
    a2app_core::access::authorize(&state.app, &creds, Intent::Read).await?;
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok()).unwrap_or("localhost");
    let deployed = state.app.definition.config.http.allowed_hosts.iter().any(|h| h == &host_name(headers));
    Ok(format!("{}://{host}", if deployed { "https" } else { "http" }))
}

/// The Host header without its port, lowercased.
fn host_name(headers: &HeaderMap) -> String {
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok()).unwrap_or("localhost");
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map(|(h, _)| h).unwrap_or(host),
    };
    name.to_ascii_lowercase()
}

/// A public JSON document: CORS, caching, validators and 304.
fn document(state: &State, headers: &HeaderMap, media_type: &'static str, doc: &Value) -> Response {
    let body = serde_json::to_vec_pretty(doc).unwrap_or_default();
    let mut hasher = std::hash::DefaultHasher::new();
    body.hash(&mut hasher);
    let etag = format!("\"{:016x}\"", hasher.finish());
    let last_modified = state.started.last_modified.clone();
    let fresh = match headers.get(header::IF_NONE_MATCH).and_then(|v| v.to_str().ok()) {
        Some(tags) => tags.split(',').any(|t| {
            let t = t.trim();
            t == "*" || t.trim_start_matches("W/") == etag
        }),
        None => headers
            .get(header::IF_MODIFIED_SINCE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| jiff::fmt::rfc2822::DateTimeParser::new().parse_timestamp(v).ok())
            .is_some_and(|since| state.started.modified <= since),
    };
    let mut response =
        if fresh { StatusCode::NOT_MODIFIED.into_response() } else { (StatusCode::OK, body).into_response() };
    let h = response.headers_mut();
    if !fresh {
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static(media_type));
    }
    if let Ok(v) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, v);
    }
    if let Ok(v) = HeaderValue::from_str(&last_modified) {
        h.insert(header::LAST_MODIFIED, v);
    }
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=3600"));
    cors(h);
    if state.app.definition.config.discovery.noindex {
        h.insert("x-robots-tag", HeaderValue::from_static("noindex"));
    }
    response
}

fn cors(h: &mut HeaderMap) {
    h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    h.insert(header::ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static("GET"));
    h.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, HeaderValue::from_static("Content-Type, If-None-Match"));
    h.insert(header::ACCESS_CONTROL_EXPOSE_HEADERS, HeaderValue::from_static("ETag, Last-Modified"));
}

/// `OPTIONS` on either document: the CORS preflight of any page.
pub async fn preflight() -> Response {
    let mut response = StatusCode::NO_CONTENT.into_response();
    cors(response.headers_mut());
    response
}

/// When the documents last changed: the definition files' newest mtime,
/// taken once at start (a changed definition needs a restart anyway).
#[derive(Clone, Debug)]
pub struct Started {
    pub modified: jiff::Timestamp,
    pub last_modified: String,
}

impl Started {
    pub fn of(app: &a2app_core::App) -> Started {
        let dir = &app.definition.dir;
        let newest = ["app.toml", "schema.json", "operations.json"]
            .iter()
            .filter_map(|f| std::fs::metadata(dir.join(f)).ok()?.modified().ok())
            .max()
            .and_then(|t| jiff::Timestamp::try_from(t).ok())
            .unwrap_or_else(|| app.clock.now());
        let modified = jiff::Timestamp::from_second(newest.as_second()).unwrap_or(newest);
        let last_modified =
            jiff::fmt::rfc2822::DateTimePrinter::new().timestamp_to_rfc9110_string(&modified).unwrap_or_default();
        Started { modified, last_modified }
    }
}

/// `GET /` of an app without its own UI: a small page naming the app and
/// linking its catalog.
pub async fn landing(S(state): S<State>, headers: HeaderMap) -> ApiResult<Response> {
    super::caller(&state, &headers, Intent::Read).await?;
    let config = &state.app.definition.config;
    let page = format!(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>{name}</title>\n{LINK_TAG}\n</head>\n<body><h1>{name}</h1>\n<p>{description}</p>\n<p>An a2app app. Agents: <a href=\"/api/_a2app/describe\">describe</a>, MCP at <code>/mcp</code>, <a href=\"{CATALOG_PATH}\">AI catalog</a>.</p>\n</body></html>\n",
        name = escape(&config.name),
        description = escape(&config.description),
    );
    Ok(Html(page).into_response())
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// On the app's page (`GET /`): the `Link` header, and the `<link>` tag
/// added to the HTML when the app's own page lacks it.
pub async fn link(request: Request, next: Next) -> Response {
    let page = request.method() == Method::GET && matches!(request.uri().path(), "/" | "/index.html");
    let response = next.run(request).await;
    if !page || !(response.status().is_success() || response.status() == StatusCode::NOT_MODIFIED) {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    parts.headers.append(header::LINK, HeaderValue::from_static(LINK));
    let html = parts.headers.get(header::CONTENT_TYPE).is_some_and(|v| v.as_bytes().starts_with(b"text/html"));
    if !html {
        return Response::from_parts(parts, body);
    }
    let Ok(bytes) = axum::body::to_bytes(body, super::MAX_BODY * 4).await else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    let text = String::from_utf8_lossy(&bytes);
    if text.contains("rel=\"ai-catalog\"") {
        return Response::from_parts(parts, Body::from(bytes));
    }
    let lower = text.to_ascii_lowercase();
    let at = lower.find("</head>").or_else(|| lower.find("<body")).unwrap_or(0);
    let page = format!("{}{LINK_TAG}\n{}", &text[..at], &text[at..]);
    parts.headers.remove(header::CONTENT_LENGTH);
    // ServeDir's validators describe the file, not this page.
    parts.headers.remove(header::ETAG);
    parts.headers.remove(header::LAST_MODIFIED);
    Response::from_parts(parts, Body::from(page))
}

/// The paths of the public documents (their own CORS, `*`).
pub fn is_public(path: &str) -> bool {
    path == CATALOG_PATH || path == CARD_PATH || super::oauth::is_public(path)
}
