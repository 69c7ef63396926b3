//! A JSON document as its author wrote it, duplicate keys included.
//!
//! `serde_json::Value` keeps only the last of two equal keys, which would hide
//! a duplicated entity or field from `agent-app check`. This tree keeps every
//! member in order so the checker can report the duplicate with its path.

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::fmt;

#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    Object(Vec<(String, Node)>),
    Array(Vec<Node>),
    Scalar(Value),
}

impl Node {
    /// Parses JSON text; the error names line and column.
    pub fn parse(text: &str) -> Result<Node, String> {
        serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))
    }

    pub fn kind(&self) -> &'static str {
        match self {
            Node::Object(_) => "an object",
            Node::Array(_) => "an array",
            Node::Scalar(Value::Null) => "null",
            Node::Scalar(Value::Bool(_)) => "a boolean",
            Node::Scalar(Value::Number(_)) => "a number",
            Node::Scalar(Value::String(_)) => "a string",
            Node::Scalar(_) => "a value",
        }
    }

    /// The plain JSON value (for duplicate keys the last one wins, as serde does).
    pub fn to_value(&self) -> Value {
        match self {
            Node::Object(members) => Value::Object(members.iter().map(|(k, v)| (k.clone(), v.to_value())).collect()),
            Node::Array(items) => Value::Array(items.iter().map(Node::to_value).collect()),
            Node::Scalar(v) => v.clone(),
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Node::Scalar(Value::String(s)) => Some(s),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Node, E> {
        Ok(Node::Scalar(Value::Bool(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Node, E> {
        Ok(Node::Scalar(Value::from(v)))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Node, E> {
        Ok(Node::Scalar(Value::from(v)))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Node, E> {
        Ok(Node::Scalar(serde_json::Number::from_f64(v).map(Value::Number).unwrap_or(Value::Null)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Node, E> {
        Ok(Node::Scalar(Value::String(v.to_owned())))
    }
    fn visit_string<E>(self, v: String) -> Result<Node, E> {
        Ok(Node::Scalar(Value::String(v)))
    }
    fn visit_unit<E>(self) -> Result<Node, E> {
        Ok(Node::Scalar(Value::Null))
    }
    fn visit_none<E>(self) -> Result<Node, E> {
        Ok(Node::Scalar(Value::Null))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Node::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut members = Vec::new();
        while let Some((k, v)) = map.next_entry::<String, Node>()? {
            members.push((k, v));
        }
        Ok(Node::Object(members))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_duplicate_keys_in_order() {
        let node = Node::parse(r#"{"a": 1, "b": [true], "a": 2}"#).unwrap();
        let Node::Object(members) = node else { panic!("object expected") };
        let keys: Vec<&str> = members.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["a", "b", "a"]);
    }

    #[test]
    fn reports_position_of_bad_json() {
        let err = Node::parse("{\n  \"a\": }").unwrap_err();
        assert!(err.contains("line 2"), "{err}");
    }
}
