//! `operations.json`: the verbs outsiders may invoke.
//!
//! This module loads and structurally validates the file (names, parameter
//! types, executor kinds). Running operations is the operations runtime's job.

use crate::document::Node;
use crate::problem::{Problems, index, join};
use protocol::schema::Schema;
use serde_json::{Map, Value};

pub const FILE: &str = "operations.json";

#[derive(Debug, Clone, PartialEq)]
pub struct Operation {
    pub name: String,
    pub description: String,
    pub params: Vec<Param>,
    /// The executor object as written (`{"kind": "crud" | "http" | "job", …}`).
    pub executor: Map<String, Value>,
    pub destructive: bool,
    pub schedule: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    pub name: String,
    pub kind: ParamType,
    pub required: bool,
    pub default: Option<Value>,
    pub choices: Vec<Value>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamType {
    String,
    Number,
    Boolean,
}

const EXECUTORS: &[&str] = &["crud", "http", "job"];

pub fn parse(text: &str, _schema: Option<&Schema>) -> Result<Vec<Operation>, Problems> {
    let mut problems = Problems::new(FILE);
    let root = match Node::parse(text) {
        Ok(r) => r,
        Err(e) => {
            problems.push("$", e);
            return Err(problems);
        }
    };
    let items = match &root {
        Node::Array(items) => items.as_slice(),
        Node::Object(members) => match members.iter().find(|(k, _)| k == "operations") {
            Some((_, Node::Array(items))) => items.as_slice(),
            _ => {
                problems.push("$", "expected a list of operations (or {\"operations\": [...]})");
                return Err(problems);
            }
        },
        other => {
            problems.push("$", format!("expected a list of operations, got {}", other.kind()));
            return Err(problems);
        }
    };
    let mut ops: Vec<Operation> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let path = index("$", i);
        let Node::Object(members) = item else {
            problems.push(&path, format!("expected an operation object, got {}", item.kind()));
            continue;
        };
        let mut op = Operation {
            name: String::new(),
            description: String::new(),
            params: Vec::new(),
            executor: Map::new(),
            destructive: false,
            schedule: None,
        };
        for (key, value) in members {
            let kpath = join(&path, key);
            match key.as_str() {
                "name" => match value.as_str() {
                    Some(n) if is_op_name(n) => op.name = n.to_owned(),
                    _ => problems.push(&kpath, "name must match ^[a-z][a-z0-9_.-]*$"),
                },
                "description" => match value.as_str() {
                    Some(d) => op.description = d.to_owned(),
                    None => problems.push(&kpath, "description must be a string"),
                },
                "params" => op.params = params(value, &kpath, &mut problems),
                "executor" => match value.to_value() {
                    Value::Object(map) => {
                        match map.get("kind").and_then(Value::as_str) {
                            Some(k) if EXECUTORS.contains(&k) => {}
                            _ => problems.push(
                                join(&kpath, "kind"),
                                format!("executor kind must be one of: {}", EXECUTORS.join(", ")),
                            ),
                        }
                        op.executor = map;
                    }
                    _ => problems.push(&kpath, "executor must be an object with a \"kind\""),
                },
                "destructive" => match value.to_value() {
                    Value::Bool(b) => op.destructive = b,
                    _ => problems.push(&kpath, "destructive must be true or false"),
                },
                "schedule" => match value.as_str() {
                    Some(s) => op.schedule = Some(s.to_owned()),
                    None => problems
                        .push(&kpath, "schedule must be a string like \"every 15m\", \"hourly\" or \"daily 09:00\""),
                },
                other => problems.push(
                    &kpath,
                    format!(
                        "unknown key \"{other}\" (allowed: name, description, params, executor, destructive, schedule)"
                    ),
                ),
            }
        }
        if op.name.is_empty() && !members.iter().any(|(k, _)| k == "name") {
            problems.push(&path, "missing \"name\"");
        }
        if op.executor.is_empty() && !members.iter().any(|(k, _)| k == "executor") {
            problems.push(&path, "missing \"executor\"");
        }
        if !op.name.is_empty() && ops.iter().any(|o| o.name == op.name) {
            problems.push(join(&path, "name"), format!("duplicate operation \"{}\"", op.name));
        }
        ops.push(op);
    }
    if problems.is_empty() { Ok(ops) } else { Err(problems) }
}

fn params(node: &Node, path: &str, problems: &mut Problems) -> Vec<Param> {
    let Node::Object(members) = node else {
        problems.push(path, "params must be an object of name → {type, required, default, enum}");
        return Vec::new();
    };
    let mut out = Vec::new();
    for (name, spec) in members {
        let ppath = join(path, name);
        let Value::Object(spec) = spec.to_value() else {
            problems.push(&ppath, "a param must be an object with a \"type\"");
            continue;
        };
        let kind = match spec.get("type").and_then(Value::as_str) {
            Some("string") => ParamType::String,
            Some("number") => ParamType::Number,
            Some("boolean") => ParamType::Boolean,
            _ => {
                problems.push(join(&ppath, "type"), "param type must be one of: string, number, boolean");
                continue;
            }
        };
        for key in spec.keys() {
            if !["type", "required", "default", "enum", "description"].contains(&key.as_str()) {
                problems.push(
                    join(&ppath, key),
                    format!("unknown key \"{key}\" (allowed: type, required, default, enum, description)"),
                );
            }
        }
        let choices = match spec.get("enum") {
            None => Vec::new(),
            Some(Value::Array(v)) if !v.is_empty() => v.clone(),
            Some(_) => {
                problems.push(join(&ppath, "enum"), "enum must be a non-empty list");
                Vec::new()
            }
        };
        out.push(Param {
            name: name.clone(),
            kind,
            required: spec.get("required").and_then(Value::as_bool).unwrap_or(false),
            default: spec.get("default").cloned(),
            choices,
        });
    }
    out
}

fn is_op_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some('a'..='z')) && chars.all(|c| matches!(c, 'a'..='z' | '0'..='9' | '_' | '.' | '-'))
}
