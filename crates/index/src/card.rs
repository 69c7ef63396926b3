//! An MCP Server Card as the index keeps it: what the publisher says about
//! its app (name, words, tools, usage examples, icons) and where it is
//! served. Every field is the publisher's own, unverified, and bounded here
//! so one hostile card cannot fill the store; nothing is interpreted.

use reqwest::Url;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Bounds on what one entry keeps (characters, items).
const NAME: usize = 200;
const TEXT: usize = 2_000;
const TOOLS: usize = 100;
const TOOL_NAME: usize = 128;
const TOOL_TEXT: usize = 1_000;
const ICONS: usize = 8;
const URL: usize = 2_000;

/// The publisher's content of a card.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Card {
    /// The card's `name` (`com.example/calendar`).
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default)]
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub website_url: Option<String>,
    /// The Streamable HTTP remote an agent would connect to.
    pub remote: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub icons: Vec<Icon>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<Tool>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<Example>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Icon {
    pub src: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sizes: Option<String>,
}

/// A tool a card lists (cards may name their tools; a2app's do not).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    pub name: String,
    #[serde(default)]
    pub description: String,
}

/// A usage example of `_meta["openbot/presentation"]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Example {
    pub id: String,
    pub title: String,
    pub prompt: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// Why a document is no card the index can keep.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NotACard {
    #[error("not a JSON object")]
    NotAnObject,
    #[error("no name")]
    NoName,
    #[error("no https streamable-http remote")]
    NoRemote,
}

/// Reads the card served at `card_url`.
pub fn read(card_url: &Url, doc: &Value) -> Result<Card, NotACard> {
    let obj = doc.as_object().ok_or(NotACard::NotAnObject)?;
    let text = |key: &str, max: usize| obj.get(key).and_then(Value::as_str).map(|s| clip(s, max));
    let name = text("name", NAME).filter(|n| !n.trim().is_empty()).ok_or(NotACard::NoName)?;
    let remote = obj
        .get("remotes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|r| r.get("type").and_then(Value::as_str).is_none_or(|t| t == "streamable-http"))
        .filter_map(|r| card_url.join(r.get("url")?.as_str()?).ok())
        .find(|u| u.scheme() == "https" && u.username().is_empty() && u.password().is_none())
        .ok_or(NotACard::NoRemote)?;
    let website_url = text("websiteUrl", URL)
        .and_then(|w| card_url.join(&w).ok())
        .filter(|u| u.scheme() == "https")
        .map(String::from);
    Ok(Card {
        name,
        title: text("title", NAME),
        description: text("description", TEXT).unwrap_or_default(),
        version: text("version", NAME),
        website_url,
        remote: remote.to_string(),
        icons: icons(card_url, obj.get("icons")),
        tools: tools(obj.get("tools")),
        examples: obj.get("_meta").and_then(|m| m.get("openbot/presentation")).map(examples).unwrap_or_default(),
    })
}

/// Icons with an https source; the index never fetches them.
fn icons(card_url: &Url, list: Option<&Value>) -> Vec<Icon> {
    let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(|s| clip(s, NAME));
    list.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|icon| {
            let src = card_url.join(icon.get("src")?.as_str()?).ok().filter(|u| u.scheme() == "https")?;
            (src.as_str().len() <= URL).then(|| Icon {
                src: src.to_string(),
                mime_type: text(icon, "mimeType"),
                sizes: icon.get("sizes").and_then(|s| match s {
                    Value::String(s) => Some(clip(s, NAME)),
                    Value::Array(a) => {
                        Some(clip(&a.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" "), NAME))
                    }
                    _ => None,
                }),
            })
        })
        .take(ICONS)
        .collect()
}

fn tools(list: Option<&Value>) -> Vec<Tool> {
    list.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| {
            let name = clip(t.get("name")?.as_str()?, TOOL_NAME);
            let description = ["description", "title"]
                .iter()
                .find_map(|k| t.get(*k).and_then(Value::as_str))
                .map(|d| clip(d, TOOL_TEXT))
                .unwrap_or_default();
            (!name.trim().is_empty()).then_some(Tool { name, description })
        })
        .take(TOOLS)
        .collect()
}

/// The presentation block's examples when the whole block keeps the
/// protocol's limits; a block that breaks any is ignored (the card is kept).
fn examples(block: &Value) -> Vec<Example> {
    read_examples(block).unwrap_or_default()
}

fn read_examples(block: &Value) -> Option<Vec<Example>> {
    if block.get("version")?.as_str()? != "1" {
        return None;
    }
    let list = block.get("examples")?.as_array()?;
    if list.is_empty() || list.len() > 12 {
        return None;
    }
    let mut out: Vec<Example> = Vec::with_capacity(list.len());
    for e in list {
        let text = |key: &str, max: usize| -> Option<Option<String>> {
            match e.get(key) {
                None => Some(None),
                Some(Value::String(s)) if s.chars().count() <= max => Some(Some(s.clone())),
                Some(_) => None,
            }
        };
        let id = text("id", 100)??;
        let id_ok = id.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
            && id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
        if !id_ok || out.iter().any(|x| x.id == id) {
            return None;
        }
        let title = text("title", 100)??;
        let prompt = text("prompt", 2_000)??;
        let description = text("description", 500)?;
        if let Some(preview) = e.get("preview") {
            preview_ok(preview)?;
        }
        out.push(Example { id, title, prompt, description });
    }
    Some(out)
}

fn preview_ok(preview: &Value) -> Option<()> {
    let src = Url::parse(preview.get("src")?.as_str()?).ok()?;
    let alt_ok = match preview.get("alt") {
        None => true,
        Some(a) => a.as_str().is_some_and(|a| a.chars().count() <= 500),
    };
    let size_ok = |key: &str| match preview.get(key) {
        None => true,
        Some(v) => v.as_u64().is_some_and(|n| (1..=8192).contains(&n)),
    };
    let types = ["image/png", "image/jpeg", "image/webp", "image/avif", "image/svg+xml"];
    let type_ok = match preview.get("mimeType") {
        None => true,
        Some(t) => t.as_str().is_some_and(|t| types.contains(&t)),
    };
    (src.scheme() == "https" && alt_ok && size_ok("width") && size_ok("height") && type_ok).then_some(())
}

/// At most `max` characters.
fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => text[..at].to_owned(),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn url() -> Url {
        Url::parse("https://apps.example.com/kanban/mcp/server-card").unwrap()
    }

    #[test]
    fn a_card_keeps_its_words_tools_and_examples() {
        let doc = json!({
            "name": "com.example/kanban", "title": "Kanban", "description": "Boards and cards.",
            "websiteUrl": "/kanban/", "version": "1.0.0",
            "remotes": [{"type": "sse", "url": "https://old.example.com/sse"}, {"type": "streamable-http", "url": "/kanban/mcp"}],
            "icons": [{"src": "/i.png", "mimeType": "image/png", "sizes": ["48x48"]}, {"src": "http://plain.example/i.png"}],
            "tools": [{"name": "create_card", "description": "Adds a card"}, {"name": ""}],
            "_meta": {"openbot/presentation": {"version": "1", "examples": [{"id": "plan", "title": "Plan a week", "prompt": "Plan my week"}]}},
        });
        let card = read(&url(), &doc).unwrap();
        assert_eq!(card.remote, "https://apps.example.com/kanban/mcp");
        assert_eq!(card.website_url.as_deref(), Some("https://apps.example.com/kanban/"));
        assert_eq!(
            card.icons,
            [Icon {
                src: "https://apps.example.com/i.png".into(),
                mime_type: Some("image/png".into()),
                sizes: Some("48x48".into())
            }]
        );
        assert_eq!(card.tools, [Tool { name: "create_card".into(), description: "Adds a card".into() }]);
        assert_eq!(card.examples.len(), 1);
    }

    #[test]
    fn what_is_no_card_is_refused_and_a_bad_presentation_block_ignored() {
        assert_eq!(read(&url(), &json!([1])), Err(NotACard::NotAnObject));
        assert_eq!(read(&url(), &json!({"remotes": []})), Err(NotACard::NoName));
        let plain = json!({"name": "x", "remotes": [{"type": "streamable-http", "url": "http://a.example/mcp"}]});
        assert_eq!(read(&url(), &plain), Err(NotACard::NoRemote));
        let creds = json!({"name": "x", "remotes": [{"url": "https://u:p@a.example/mcp"}]});
        assert_eq!(read(&url(), &creds), Err(NotACard::NoRemote));
        for block in [
            json!({"version": "2", "examples": [{"id": "a", "title": "t", "prompt": "p"}]}),
            json!({"version": "1", "examples": []}),
            json!({"version": "1", "examples": [{"id": "-a", "title": "t", "prompt": "p"}]}),
            json!({"version": "1", "examples": [{"id": "a", "title": "t", "prompt": "p"}, {"id": "a", "title": "t", "prompt": "p"}]}),
            json!({"version": "1", "examples": [{"id": "a", "title": "t".repeat(101), "prompt": "p"}]}),
            json!({"version": "1", "examples": [{"id": "a", "title": "t", "prompt": "p", "preview": {"src": "http://x/p.png"}}]}),
            json!({"version": "1", "examples": [{"id": "a", "title": "t", "prompt": "p", "preview": {"src": "https://x/p.gif", "mimeType": "image/gif"}}]}),
        ] {
            let doc = json!({"name": "x", "remotes": [{"url": "https://a.example/mcp"}], "_meta": {"openbot/presentation": block}});
            let card = read(&url(), &doc).unwrap();
            assert!(card.examples.is_empty(), "{block}");
        }
    }

    #[test]
    fn long_words_are_cut_to_the_bounds() {
        let doc = json!({"name": "n".repeat(5000), "description": "é".repeat(9000), "remotes": [{"url": "https://a.example/mcp"}],
            "tools": (0..500).map(|i| json!({"name": format!("t{i}")})).collect::<Vec<_>>()});
        let card = read(&url(), &doc).unwrap();
        assert_eq!(
            (card.name.chars().count(), card.description.chars().count(), card.tools.len()),
            (NAME, TEXT, TOOLS)
        );
    }
}
