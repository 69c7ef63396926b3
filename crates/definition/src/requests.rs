//! `requests.json`: the capabilities the app may ask an agent for (the
//! app-to-agent queue, DESIGN §8). Optional; an app without it asks nothing.
//!
//! A capability is a fixed task in words a person consents to, the entities
//! an agent reads and writes to do it, and typed params and result in the
//! operation param vocabulary. There is no free-form field: what the app
//! may ask is exactly this list.

use super::operations::{Param, is_op_name, params};
use crate::document::Node;
use crate::problem::{Problems, index, join};
use protocol::schema::Schema;

pub const FILE: &str = "requests.json";

/// Most capabilities one app declares: each is a line on a consent screen.
pub const MAX_CAPABILITIES: usize = 32;
const MAX_TITLE: usize = 100;
const MAX_DESCRIPTION: usize = 500;
const KEYS: &str = "name, title, description, reads, writes, params, result";

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Capability {
    pub name: String,
    pub title: String,
    pub description: String,
    pub reads: Vec<String>,
    pub writes: Vec<String>,
    pub params: Vec<Param>,
    pub result: Vec<Param>,
}

/// Parses and validates `requests.json`; with a schema, `reads` and
/// `writes` must name its entities.
pub fn parse(text: &str, schema: Option<&Schema>) -> Result<Vec<Capability>, Problems> {
    let mut problems = Problems::new(FILE);
    let root = match Node::parse(text) {
        Ok(r) => r,
        Err(e) => {
            problems.push("$", e);
            return Err(problems);
        }
    };
    let Node::Array(items) = &root else {
        problems.push("$", format!("expected a list of capabilities, got {}", root.kind()));
        return Err(problems);
    };
    if items.len() > MAX_CAPABILITIES {
        problems.push("$", format!("at most {MAX_CAPABILITIES} capabilities (each is a line a person consents to)"));
    }
    let mut out: Vec<Capability> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let path = index("$", i);
        let Node::Object(members) = item else {
            problems.push(&path, format!("expected a capability object, got {}", item.kind()));
            continue;
        };
        let mut cap = Capability::default();
        for (key, value) in members {
            let kpath = join(&path, key);
            match key.as_str() {
                "name" => match value.as_str() {
                    Some(n) if is_op_name(n) => cap.name = n.to_owned(),
                    _ => problems.push(&kpath, "name must match ^[a-z][a-z0-9_.-]*$"),
                },
                "title" => cap.title = words(value, &kpath, MAX_TITLE, &mut problems),
                "description" => cap.description = words(value, &kpath, MAX_DESCRIPTION, &mut problems),
                "reads" => cap.reads = entities(value, &kpath, schema, &mut problems),
                "writes" => cap.writes = entities(value, &kpath, schema, &mut problems),
                "params" => cap.params = params(value, &kpath, &mut problems),
                "result" => cap.result = params(value, &kpath, &mut problems),
                other => problems.push(&kpath, format!("unknown key \"{other}\" (allowed: {KEYS})")),
            }
        }
        for required in ["name", "title", "description"] {
            if !members.iter().any(|(k, _)| k == required) {
                problems.push(&path, format!("missing \"{required}\""));
            }
        }
        if !cap.name.is_empty() && out.iter().any(|c| c.name == cap.name) {
            problems.push(join(&path, "name"), format!("duplicate capability \"{}\"", cap.name));
        }
        out.push(cap);
    }
    if problems.is_empty() { Ok(out) } else { Err(problems) }
}

/// A title or description: one line of plain words a person reads.
fn words(value: &Node, path: &str, max: usize, problems: &mut Problems) -> String {
    match value.as_str() {
        Some(s) if !s.trim().is_empty() && s.chars().count() <= max && !s.chars().any(char::is_control) => s.to_owned(),
        _ => {
            problems.push(path, format!("must be 1 to {max} characters of text on one line"));
            String::new()
        }
    }
}

fn entities(value: &Node, path: &str, schema: Option<&Schema>, problems: &mut Problems) -> Vec<String> {
    let Node::Array(items) = value else {
        problems.push(path, "must be a list of entity names");
        return Vec::new();
    };
    let mut out: Vec<String> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let ipath = index(path, i);
        match item.as_str() {
            Some(name) if schema.is_none_or(|s| s.entities.contains_key(name)) => {
                if !out.iter().any(|e| e == name) {
                    out.push(name.to_owned());
                }
            }
            Some(name) => problems.push(&ipath, format!("no entity \"{name}\" in schema.json")),
            None => problems.push(&ipath, "must be an entity name"),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Schema {
        crate::schema::parse(r#"{"entities": {"cards": {"fields": {"title": {"type": "string"}}}}}"#, false)
            .expect("schema")
    }

    #[test]
    fn reads_a_capability() {
        let caps = parse(
            r#"[{"name": "summarise_board", "title": "Summarise this board",
                 "description": "Read the cards and write a summary back.", "reads": ["cards"],
                 "params": {"tone": {"type": "string", "enum": ["short", "long"], "default": "short"}},
                 "result": {"summary": {"type": "string", "required": true}}}]"#,
            Some(&schema()),
        )
        .expect("parses");
        assert_eq!(caps.len(), 1);
        assert_eq!(caps[0].reads, ["cards"]);
        assert!(caps[0].writes.is_empty());
        assert_eq!(caps[0].params[0].name, "tone");
        assert!(caps[0].result[0].required);
    }

    #[test]
    fn reports_every_problem_with_its_place() {
        let problems = parse(
            r#"[{"name": "Bad Name", "title": "", "reads": ["nope"], "prompt": "do anything", "result": {"x": {"type": "blob"}}},
                {"name": "a", "title": "A", "description": "d"}, {"name": "a", "title": "A", "description": "d"}]"#,
            Some(&schema()),
        )
        .expect_err("refused");
        let got: Vec<(String, String)> = problems.list.iter().map(|p| (p.path.clone(), p.message.clone())).collect();
        let paths: Vec<&str> = got.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            paths,
            ["$[0].name", "$[0].title", "$[0].reads[0]", "$[0].prompt", "$[0].result.x.type", "$[0]", "$[2].name"],
            "{got:?}"
        );
        assert!(got[3].1.contains("unknown key \"prompt\""), "{got:?}");
        assert_eq!(got[5].1, "missing \"description\"");
    }
}
