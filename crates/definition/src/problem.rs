//! A problem found in an app's files: which file, where in it, and what is wrong.

use std::fmt;

/// One problem in one file. `path` is a JSONPath-like location (`$.entities.cards.fields.due`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub file: &'static str,
    pub path: String,
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}: {}", self.file, self.path, self.message)
    }
}

/// Collects every problem of one file, so a check reports all of them at once.
#[derive(Debug)]
pub struct Problems {
    file: &'static str,
    pub list: Vec<Problem>,
}

impl Problems {
    pub fn new(file: &'static str) -> Self {
        Problems { file, list: Vec::new() }
    }

    pub fn push(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.list.push(Problem { file: self.file, path: path.into(), message: message.into() });
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

/// Appends a key to a JSONPath: plain names with `.`, anything else bracketed.
pub fn join(path: &str, key: &str) -> String {
    let plain = !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if plain { format!("{path}.{key}") } else { format!("{path}[{}]", serde_json::Value::from(key)) }
}

/// Appends an array index to a JSONPath.
pub fn index(path: &str, i: usize) -> String {
    format!("{path}[{i}]")
}
