//! `[discovery]` of `app.toml`: what the AI Catalog and the MCP Server Card
//! publish, and the optional presentation examples (`openbot/presentation`),
//! checked against the limits of the open app protocol so a malformed block
//! never reaches a host.

use super::config::DiscoveryConfig;
use crate::problem::{Problems, index, join};
use serde_json::{Map, Value as Json};
use toml::Value;

/// The most examples a presentation block may carry.
pub const MAX_EXAMPLES: usize = 12;
/// The image types a preview may have.
pub const PREVIEW_TYPES: &[&str] = &["image/png", "image/jpeg", "image/webp", "image/avif", "image/svg+xml"];

pub(super) fn discovery(value: &Value, path: &str, problems: &mut Problems) -> DiscoveryConfig {
    let mut discovery = DiscoveryConfig::default();
    let Some(table) = value.as_table() else {
        problems.push(path, "discovery must be a table");
        return discovery;
    };
    for (key, value) in table {
        let kpath = join(path, key);
        match key.as_str() {
            "name" => match value.as_str() {
                Some(n) if is_card_name(n) => discovery.name = Some(n.to_owned()),
                _ => problems.push(
                    &kpath,
                    "name must be reverse-DNS with one slash, like \"com.example/kanban\" (3-200 characters)",
                ),
            },
            "noindex" => match value.as_bool() {
                Some(b) => discovery.noindex = b,
                None => problems.push(&kpath, "noindex must be true or false"),
            },
            "icons" => discovery.icons = icons(value, &kpath, problems),
            "presentation" => {
                let before = problems.list.len();
                presentation(value, &kpath, problems);
                if problems.list.len() == before {
                    discovery.presentation = Some(to_json(value));
                }
            }
            other => {
                problems.push(&kpath, format!("unknown key \"{other}\" (allowed: name, noindex, icons, presentation)"))
            }
        }
    }
    discovery
}

fn icons(value: &Value, path: &str, problems: &mut Problems) -> Vec<Json> {
    let Some(items) = value.as_array() else {
        problems.push(path, "icons must be a list of { src, mimeType, sizes }");
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let ipath = index(path, i);
        let Some(icon) = item.as_table() else {
            problems.push(&ipath, "an icon must be a table with a src");
            continue;
        };
        match icon.get("src").and_then(Value::as_str) {
            Some(src) if src.starts_with("https://") || (src.starts_with('/') && !src.starts_with("//")) => {}
            _ => problems.push(join(&ipath, "src"), "src must be an https:// URL or a path of this app like /icon.png"),
        }
        for key in icon.keys() {
            if !["src", "mimeType", "sizes", "theme"].contains(&key.as_str()) {
                problems
                    .push(join(&ipath, key), format!("unknown key \"{key}\" (allowed: src, mimeType, sizes, theme)"));
            }
        }
        out.push(to_json(item));
    }
    out
}

fn presentation(value: &Value, path: &str, problems: &mut Problems) {
    let Some(table) = value.as_table() else {
        problems.push(path, "presentation must be a table with version = \"1\" and examples");
        return;
    };
    if table.get("version").and_then(Value::as_str) != Some("1") {
        problems.push(join(path, "version"), "version must be \"1\"");
    }
    for key in table.keys() {
        if !["version", "examples"].contains(&key.as_str()) {
            problems.push(join(path, key), format!("unknown key \"{key}\" (allowed: version, examples)"));
        }
    }
    let epath = join(path, "examples");
    let examples = table.get("examples").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]);
    if examples.is_empty() || examples.len() > MAX_EXAMPLES {
        problems.push(&epath, format!("examples must list 1 to {MAX_EXAMPLES} examples, got {}", examples.len()));
    }
    let mut seen: Vec<&str> = Vec::new();
    for (i, example) in examples.iter().enumerate() {
        let xpath = index(&epath, i);
        let Some(example) = example.as_table() else {
            problems.push(&xpath, "an example must be a table with id, title and prompt");
            continue;
        };
        let text = |key: &str| example.get(key).and_then(Value::as_str);
        match text("id") {
            Some(id) if is_example_id(id) => {
                if seen.contains(&id) {
                    problems.push(join(&xpath, "id"), format!("duplicate example id \"{id}\""));
                }
                seen.push(id);
            }
            _ => problems.push(
                join(&xpath, "id"),
                "id must be 1-100 letters, digits, '.', '_' or '-', starting with a letter or digit",
            ),
        }
        limit(text("title"), true, 100, &join(&xpath, "title"), problems);
        limit(text("prompt"), true, 2000, &join(&xpath, "prompt"), problems);
        if example.contains_key("description") {
            limit(text("description"), true, 500, &join(&xpath, "description"), problems);
        }
        if let Some(preview) = example.get("preview") {
            self::preview(preview, &join(&xpath, "preview"), problems);
        }
        for key in example.keys() {
            if !["id", "title", "prompt", "description", "preview"].contains(&key.as_str()) {
                problems.push(
                    join(&xpath, key),
                    format!("unknown key \"{key}\" (allowed: id, title, prompt, description, preview)"),
                );
            }
        }
    }
}

fn preview(value: &Value, path: &str, problems: &mut Problems) {
    let Some(preview) = value.as_table() else {
        problems.push(path, "preview must be a table with src, alt, width, height and mimeType");
        return;
    };
    match preview.get("src").and_then(Value::as_str) {
        Some(src) if src.starts_with("https://") && src.len() > "https://".len() => {}
        _ => problems.push(join(path, "src"), "src must be an https:// URL"),
    }
    if preview.contains_key("alt") {
        limit(preview.get("alt").and_then(Value::as_str), false, 500, &join(path, "alt"), problems);
    }
    for key in ["width", "height"] {
        if let Some(v) = preview.get(key)
            && !v.as_integer().is_some_and(|n| (1..=8192).contains(&n))
        {
            problems.push(join(path, key), format!("{key} must be a whole number of pixels from 1 to 8192"));
        }
    }
    if let Some(v) = preview.get("mimeType")
        && !v.as_str().is_some_and(|m| PREVIEW_TYPES.contains(&m))
    {
        problems.push(join(path, "mimeType"), format!("mimeType must be one of: {}", PREVIEW_TYPES.join(", ")));
    }
    for key in preview.keys() {
        if !["src", "alt", "width", "height", "mimeType"].contains(&key.as_str()) {
            problems
                .push(join(path, key), format!("unknown key \"{key}\" (allowed: src, alt, width, height, mimeType)"));
        }
    }
}

/// A string of at most `max` characters (and not empty when `nonempty`).
fn limit(value: Option<&str>, nonempty: bool, max: usize, path: &str, problems: &mut Problems) {
    match value {
        Some(s) if (!nonempty || !s.trim().is_empty()) && s.chars().count() <= max => {}
        Some(s) if s.chars().count() > max => {
            problems.push(path, format!("at most {max} characters, got {}", s.chars().count()))
        }
        _ => problems.push(path, format!("must be a non-empty string of at most {max} characters")),
    }
}

fn is_example_id(id: &str) -> bool {
    let mut chars = id.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && id.chars().count() <= 100
        && chars.all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
}

/// `^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$`, 3 to 200 characters.
pub fn is_card_name(name: &str) -> bool {
    let Some((ns, local)) = name.split_once('/') else { return false };
    (3..=200).contains(&name.len())
        && !ns.is_empty()
        && !local.is_empty()
        && ns.chars().all(|c| c.is_ascii_alphanumeric() || ".-".contains(c))
        && local.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
}

fn to_json(value: &Value) -> Json {
    match value {
        Value::String(s) => Json::from(s.clone()),
        Value::Integer(n) => Json::from(*n),
        Value::Float(f) => Json::from(*f),
        Value::Boolean(b) => Json::from(*b),
        Value::Datetime(d) => Json::from(d.to_string()),
        Value::Array(items) => Json::Array(items.iter().map(to_json).collect()),
        Value::Table(t) => Json::Object(t.iter().map(|(k, v)| (k.clone(), to_json(v))).collect::<Map<_, _>>()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn card_names_and_example_ids() {
        for ok in ["com.example/kanban", "localhost/kanban", "io.github.me/app_1.x"] {
            assert!(is_card_name(ok), "{ok}");
        }
        for bad in ["kanban", "a/b/c", "com example/x", "/x", "x/"] {
            assert!(!is_card_name(bad), "{bad}");
        }
        assert!(is_example_id("plan-week.1"));
        assert!(!is_example_id("-plan"));
        assert!(!is_example_id(&"a".repeat(101)));
    }
}
