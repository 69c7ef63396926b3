//! `fields`: which keys of a record a response keeps, PocketBase-style.
//!
//! `fields=id,title,expand.list.name` keeps those paths; `*` keeps every key
//! of its level; `title:excerpt(100,true)` keeps a plain-text excerpt. Unknown
//! keys are silently dropped, as PocketBase does.

use indexmap::IndexMap;
use serde_json::{Map, Value};

#[derive(Debug, Default, Clone)]
struct Node {
    all: bool,
    excerpt: Option<(usize, bool)>,
    children: IndexMap<String, Node>,
}

impl Node {
    fn is_leaf(&self) -> bool {
        !self.all && self.children.is_empty()
    }
}

/// A parsed `fields` parameter; the empty picker keeps everything.
#[derive(Debug, Clone, Default)]
pub struct Picker(Option<Node>);

impl Picker {
    pub fn parse(spec: Option<&str>) -> Picker {
        let Some(spec) = spec.map(str::trim).filter(|s| !s.is_empty()) else { return Picker(None) };
        let mut root = Node::default();
        for item in split_top(spec) {
            let (path, modifier) = match item.split_once(':') {
                Some((p, m)) => (p.trim(), Some(m.trim())),
                None => (item.trim(), None),
            };
            if path.is_empty() {
                continue;
            }
            let mut node = &mut root;
            for part in path.split('.') {
                if part == "*" {
                    node.all = true;
                    break;
                }
                node = node.children.entry(part.to_owned()).or_default();
            }
            if let Some(m) = modifier {
                node.excerpt = parse_excerpt(m);
            }
        }
        Picker(Some(root))
    }

    pub fn apply(&self, record: Map<String, Value>) -> Map<String, Value> {
        match &self.0 {
            None => record,
            Some(node) => pick_object(node, record),
        }
    }
}

fn pick_object(node: &Node, record: Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    for (key, value) in record {
        match node.children.get(&key) {
            Some(child) => {
                out.insert(key, pick_value(child, value));
            }
            None if node.all => {
                out.insert(key, value);
            }
            None => {}
        }
    }
    out
}

fn pick_value(node: &Node, value: Value) -> Value {
    if let Some((max, ellipsis)) = node.excerpt {
        return match value {
            Value::String(s) => Value::String(excerpt(&s, max, ellipsis)),
            other => other,
        };
    }
    if node.is_leaf() {
        return value;
    }
    match value {
        Value::Object(map) => Value::Object(pick_object(node, map)),
        Value::Array(items) => Value::Array(items.into_iter().map(|v| pick_value(node, v)).collect()),
        other => other,
    }
}

/// Splits on commas that are not inside a modifier's parentheses.
fn split_top(spec: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in spec.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&spec[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&spec[start..]);
    parts
}

fn parse_excerpt(modifier: &str) -> Option<(usize, bool)> {
    let args = modifier.strip_prefix("excerpt(")?.strip_suffix(')')?;
    let mut it = args.split(',').map(str::trim);
    let max = it.next()?.parse().ok()?;
    let ellipsis = matches!(it.next(), Some("true" | "1" | "t"));
    Some((max, ellipsis))
}

/// Plain text of (possibly HTML) content, whitespace collapsed, cut to `max` characters.
fn excerpt(s: &str, max: usize, ellipsis: bool) -> String {
    let mut text = String::with_capacity(s.len());
    let mut in_tag = false;
    for c in s.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                text.push(' ');
            }
            _ if !in_tag => text.push(c),
            _ => {}
        }
    }
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.chars().count() <= max {
        return collapsed;
    }
    let mut cut: String = collapsed.chars().take(max).collect();
    cut = cut.trim_end().to_owned();
    if ellipsis {
        cut.push_str("...");
    }
    cut
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pick(spec: &str, v: Value) -> Value {
        let Value::Object(m) = v else { panic!("object") };
        Value::Object(Picker::parse(Some(spec)).apply(m))
    }

    #[test]
    fn keeps_listed_paths_and_wildcards() {
        let rec = json!({"id": "a", "title": "T", "n": 1, "expand": {"list": {"id": "l", "name": "To Do", "x": 1}}});
        assert_eq!(pick("id,expand.list.name", rec.clone()), json!({"id": "a", "expand": {"list": {"name": "To Do"}}}));
        assert_eq!(
            pick("*,expand.list.id", rec.clone()),
            json!({"id": "a", "title": "T", "n": 1, "expand": {"list": {"id": "l"}}})
        );
        assert_eq!(pick("nope", rec), json!({}));
    }

    #[test]
    fn excerpts_strip_markup() {
        let rec = json!({"d": "<p>Hello <b>big</b>   world</p>"});
        assert_eq!(pick("d:excerpt(9,true)", rec.clone()), json!({"d": "Hello big..."}));
        assert_eq!(pick("d:excerpt(100)", rec), json!({"d": "Hello big world"}));
    }
}
