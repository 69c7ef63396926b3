//! An AI Catalog as the crawler reads it: the MCP Server Cards it lists, by
//! absolute URL (`a2app_client::discovery::listed`, the reading `a2app add`
//! uses). A catalog may list cards anywhere; listing one proves nothing
//! unless the card's publisher points at this catalog (`proof`).

use a2app_client::discovery::{self, Doc};
use serde_json::Value;

/// What a client accepts when it fetches a catalog.
pub const ACCEPT: &str = "application/ai-catalog+json, application/json;q=0.9";

/// The card URLs `doc` lists, or why it is no catalog.
pub fn cards(doc: &Doc) -> Result<Vec<String>, String> {
    let json: Value = serde_json::from_slice(&doc.body).map_err(|_| format!("{} is not JSON", doc.url))?;
    if !json.get("entries").is_some_and(Value::is_array) {
        return Err(format!("{} is not an AI catalog (no entries)", doc.url));
    }
    Ok(discovery::listed(&doc.url, &json).into_iter().map(|l| l.url).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::Url;

    fn doc(url: &str, body: &str) -> Doc {
        Doc {
            url: Url::parse(url).unwrap(),
            content_type: "application/ai-catalog+json".into(),
            link: None,
            robots_tag: vec![],
            body: body.as_bytes().to_vec(),
            truncated: false,
        }
    }

    #[test]
    fn a_catalog_lists_card_urls_resolved_against_itself() {
        let c = doc(
            "https://a.example/.well-known/ai-catalog.json",
            r#"{"entries": [{"type": "application/mcp-server-card+json", "url": "/mcp/server-card"},
                {"type": "application/mcp-server-card+json", "url": "https://b.example/card"},
                {"type": "text/html", "url": "/page"}]}"#,
        );
        assert_eq!(cards(&c).unwrap(), ["https://a.example/mcp/server-card", "https://b.example/card"]);
        assert!(cards(&doc("https://a.example/c", "{}")).is_err());
        assert!(cards(&doc("https://a.example/c", "<html>")).is_err());
        assert_eq!(cards(&doc("https://a.example/c", r#"{"entries": "x"}"#)).map_err(|_| ()), Err(()));
    }
}
