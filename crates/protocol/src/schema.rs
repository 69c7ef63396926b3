//! The closed field type vocabulary, used both in `schema.json` and in describe.
//!
//! One vocabulary in and out: an app author writes these types, the store maps
//! them to columns, the guard checks values against them and describe publishes
//! them unchanged. Loading and validating a schema file lives in `core::schema`;
//! these types are the result of that validation.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// All entities of an app, in the order the author declared them.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Schema {
    pub entities: IndexMap<String, Entity>,
}

/// One entity (a PocketBase collection).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entity {
    /// The field a person uses to name a record ("To Do"), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    pub fields: IndexMap<String, Field>,
    /// Each index is a list of field names (system fields allowed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub indexes: Vec<Vec<String>>,
    /// Multi-user apps only: PocketBase-grammar rules. `None` means locked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rules: Option<Rules>,
}

/// PocketBase API rules: `None` (JSON `null`) = only the owner token, `""` = anyone.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Rules {
    #[serde(default)]
    pub list: Option<String>,
    #[serde(default)]
    pub view: Option<String>,
    #[serde(default)]
    pub create: Option<String>,
    #[serde(default)]
    pub update: Option<String>,
    #[serde(default)]
    pub delete: Option<String>,
}

/// One field: its type with the type's constraints, plus the common flags.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Field {
    #[serde(flatten)]
    pub kind: FieldType,
    #[serde(default, skip_serializing_if = "is_false")]
    pub required: bool,
    #[serde(default, rename = "readOnly", skip_serializing_if = "is_false")]
    pub read_only: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// The closed set of types. The `type` key carries the name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum FieldType {
    #[serde(rename = "string")]
    String {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        min: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pattern: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        format: Option<StringFormat>,
    },
    #[serde(rename = "number")]
    Number {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        min: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max: Option<f64>,
        #[serde(default, skip_serializing_if = "is_false")]
        integer: bool,
    },
    #[serde(rename = "boolean")]
    Boolean,
    #[serde(rename = "datetime")]
    Datetime,
    #[serde(rename = "enum")]
    Enum { values: Vec<String> },
    #[serde(rename = "ref")]
    Ref { entity: String },
    #[serde(rename = "list<enum>")]
    ListEnum { values: Vec<String> },
    #[serde(rename = "list<ref>")]
    ListRef { entity: String },
    #[serde(rename = "json")]
    Json,
    #[serde(rename = "binary")]
    Binary {
        #[serde(default, rename = "maxSize", skip_serializing_if = "Option::is_none")]
        max_size: Option<u64>,
        #[serde(default, rename = "mimeTypes", skip_serializing_if = "Vec::is_empty")]
        mime_types: Vec<String>,
    },
}

/// The named formats a string may carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum StringFormat {
    /// A day key: a calendar date stored as text, immune to time-zone drift.
    #[serde(rename = "YYYY-MM-DD")]
    DayKey,
    #[serde(rename = "email")]
    Email,
    #[serde(rename = "url")]
    Url,
}

impl FieldType {
    /// The vocabulary name, as written in `type`.
    pub fn name(&self) -> &'static str {
        match self {
            FieldType::String { .. } => "string",
            FieldType::Number { .. } => "number",
            FieldType::Boolean => "boolean",
            FieldType::Datetime => "datetime",
            FieldType::Enum { .. } => "enum",
            FieldType::Ref { .. } => "ref",
            FieldType::ListEnum { .. } => "list<enum>",
            FieldType::ListRef { .. } => "list<ref>",
            FieldType::Json => "json",
            FieldType::Binary { .. } => "binary",
        }
    }

    /// Every type name of the vocabulary.
    pub const NAMES: &'static [&'static str] =
        &["string", "number", "boolean", "datetime", "enum", "ref", "list<enum>", "list<ref>", "json", "binary"];

    /// The entity a `ref` or `list<ref>` points at.
    pub fn target(&self) -> Option<&str> {
        match self {
            FieldType::Ref { entity } | FieldType::ListRef { entity } => Some(entity),
            _ => None,
        }
    }

    /// True for types stored as a JSON array (PocketBase's multi-value fields).
    pub fn is_multi(&self) -> bool {
        matches!(self, FieldType::ListEnum { .. } | FieldType::ListRef { .. })
    }
}

/// The system fields every entity has, all read-only on the wire.
pub const SYSTEM_FIELDS: &[&str] = &["id", "created", "updated"];

/// Keys PocketBase adds to every record; they are not fields and cannot be written.
pub const RECORD_META_KEYS: &[&str] = &["collectionId", "collectionName"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_round_trips_through_the_vocabulary() {
        let json = serde_json::json!({"type": "list<enum>", "values": ["a", "b"], "required": true});
        let field: Field = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(field.kind, FieldType::ListEnum { values: vec!["a".into(), "b".into()] });
        assert!(field.required);
        assert_eq!(serde_json::to_value(&field).unwrap(), json);
    }

    #[test]
    fn day_key_format_keeps_its_spelling() {
        let field: Field =
            serde_json::from_value(serde_json::json!({"type": "string", "format": "YYYY-MM-DD"})).unwrap();
        assert_eq!(
            field.kind,
            FieldType::String { min: None, max: None, pattern: None, format: Some(StringFormat::DayKey) }
        );
    }
}
