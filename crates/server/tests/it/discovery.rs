//! The discovery documents over real HTTP: the AI Catalog, the MCP Server
//! Card, conditional requests, noindex, CORS and the app page's link.

use crate::TestApp;
use serde_json::{Value, json};

async fn get(t: &TestApp, path: &str, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut req = t.http.get(format!("{}{path}", t.url));
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    req.send().await.unwrap()
}

fn header<'a>(resp: &'a reqwest::Response, name: &str) -> &'a str {
    resp.headers().get(name).map(|v| v.to_str().unwrap()).unwrap_or("")
}

#[tokio::test]
async fn the_catalog_points_at_the_card() {
    let t = TestApp::kanban().await;
    let resp = get(&t, "/.well-known/ai-catalog.json", &[]).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(header(&resp, "content-type"), "application/ai-catalog+json");
    assert_eq!(header(&resp, "access-control-allow-origin"), "*");
    assert_eq!(header(&resp, "x-robots-tag"), "");
    let doc: Value = resp.json().await.unwrap();
    assert_eq!(doc["specVersion"], "1.0");
    let entry = &doc["entries"][0];
    assert_eq!(entry["type"], "application/mcp-server-card+json");
    assert_eq!(entry["identifier"], "urn:air:127.0.0.1:mcp:kanban");
    assert_eq!(entry["url"], format!("{}/mcp/server-card", t.url));
}

#[tokio::test]
async fn the_card_says_how_to_connect() {
    let t = TestApp::kanban().await;
    let resp = get(&t, "/mcp/server-card", &[("accept", "application/mcp-server-card+json")]).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(header(&resp, "content-type"), "application/mcp-server-card+json");
    assert_eq!(header(&resp, "cache-control"), "public, max-age=3600");
    assert_eq!(header(&resp, "access-control-expose-headers"), "ETag, Last-Modified");
    let card: Value = resp.json().await.unwrap();
    assert_eq!(card["$schema"], "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json");
    assert_eq!(card["name"], "localhost/kanban");
    assert_eq!(card["version"], env!("CARGO_PKG_VERSION"));
    assert!(card["description"].as_str().unwrap().starts_with("Lists of cards"));
    let remote = &card["remotes"][0];
    assert_eq!(remote["type"], "streamable-http");
    assert_eq!(remote["url"], format!("{}/mcp", t.url));
    let versions = remote["supportedProtocolVersions"].as_array().unwrap();
    assert!(versions.contains(&json!("2025-11-25")) && versions.contains(&json!("2026-07-28")));
    assert_eq!(card["icons"], json!([{"src": format!("{}/favicon.svg", t.url), "mimeType": "image/svg+xml"}]));
    let examples = &card["_meta"]["openbot/presentation"]["examples"];
    assert_eq!(examples[0]["id"], "due-this-week");
}

#[tokio::test]
async fn conditional_requests_answer_304() {
    let t = TestApp::kanban().await;
    for path in ["/.well-known/ai-catalog.json", "/mcp/server-card"] {
        let first = get(&t, path, &[]).await;
        let etag = header(&first, "etag").to_owned();
        let modified = header(&first, "last-modified").to_owned();
        assert!(etag.starts_with('"') && modified.ends_with(" GMT"), "{etag} {modified}");
        let again = get(&t, path, &[("if-none-match", &etag)]).await;
        assert_eq!(again.status(), 304, "{path}");
        assert_eq!(header(&again, "etag"), etag);
        assert_eq!(again.text().await.unwrap(), "");
        assert_eq!(get(&t, path, &[("if-modified-since", &modified)]).await.status(), 304);
        assert_eq!(get(&t, path, &[("if-none-match", "\"other\"")]).await.status(), 200);
        let old = "Thu, 01 Jan 2015 00:00:00 GMT";
        assert_eq!(get(&t, path, &[("if-modified-since", old)]).await.status(), 200);
        // If-None-Match wins over If-Modified-Since.
        assert_eq!(
            get(&t, path, &[("if-none-match", "\"other\""), ("if-modified-since", &modified)]).await.status(),
            200
        );
    }
}

#[tokio::test]
async fn noindex_icons_and_presentation_come_from_app_toml() {
    let t = TestApp::with_config(|toml| {
        let toml = toml.split("[discovery]").next().unwrap();
        format!(
            "{toml}\n[discovery]\nname = \"com.example/kanban\"\nnoindex = true\nicons = [{{ src = \"/icon.png\", mimeType = \"image/png\" }}]\n\
             [discovery.presentation]\nversion = \"1\"\n[[discovery.presentation.examples]]\nid = \"plan\"\ntitle = \"Plan the week\"\nprompt = \"What is due this week?\"\n"
        )
    })
    .await;
    for path in ["/.well-known/ai-catalog.json", "/mcp/server-card"] {
        assert_eq!(header(&get(&t, path, &[]).await, "x-robots-tag"), "noindex", "{path}");
    }
    let card: Value = get(&t, "/mcp/server-card", &[]).await.json().await.unwrap();
    assert_eq!(card["name"], "com.example/kanban");
    assert_eq!(card["icons"], json!([{"src": format!("{}/icon.png", t.url), "mimeType": "image/png"}]));
    let presentation = &card["_meta"]["openbot/presentation"];
    assert_eq!(presentation["version"], "1");
    assert_eq!(presentation["examples"][0]["title"], "Plan the week");
}

#[tokio::test]
async fn the_host_rule_applies_but_any_origin_may_read() {
    let t = TestApp::kanban().await;
    let resp = get(&t, "/mcp/server-card", &[("host", "evil.example")]).await;
    assert_eq!(resp.status(), 403);
    let resp = get(&t, "/mcp/server-card", &[("origin", "https://elsewhere.example")]).await;
    assert_eq!(resp.status(), 200);
    let pre = t.http.request(reqwest::Method::OPTIONS, format!("{}/mcp/server-card", t.url)).send().await.unwrap();
    assert_eq!(pre.status(), 204);
    assert_eq!(header(&pre, "access-control-allow-methods"), "GET");
    assert_eq!(header(&pre, "access-control-allow-headers"), "Content-Type, If-None-Match");
}

#[tokio::test]
async fn the_apps_page_links_its_catalog() {
    let t = TestApp::kanban().await;
    let resp = get(&t, "/", &[]).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(
        header(&resp, "link"),
        "</.well-known/ai-catalog.json>; rel=\"ai-catalog\"; type=\"application/ai-catalog+json\""
    );
    let html = resp.text().await.unwrap();
    assert!(
        html.contains(
            "<link rel=\"ai-catalog\" type=\"application/ai-catalog+json\" href=\"/.well-known/ai-catalog.json\">"
        ),
        "{html}"
    );
    assert!(html.contains("<title>Kanban Board</title>"));
}

#[tokio::test]
async fn an_apps_own_page_gets_the_link_tag_added() {
    let t = TestApp::fixture("page").await;
    let resp = get(&t, "/", &[]).await;
    assert_eq!(resp.status(), 200);
    assert!(header(&resp, "link").contains("rel=\"ai-catalog\""));
    let html = resp.text().await.unwrap();
    assert_eq!(
        html,
        "<!doctype html>\n<html><head><title>Notes</title><link rel=\"ai-catalog\" type=\"application/ai-catalog+json\" href=\"/.well-known/ai-catalog.json\">\n</head>\n<body><h1>My notes</h1></body></html>\n"
    );
}
