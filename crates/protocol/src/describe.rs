//! The describe document: an app's data model, verbs and conventions,
//! generated live from its schema and operations.

use crate::schema::Field;
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Describe {
    pub app: DescribedApp,
    pub schema_version: String,
    pub entities: IndexMap<String, DescribedEntity>,
    pub operations: Vec<DescribedOperation>,
    /// What the app may ask an agent to do (`requests.json`); absent when nothing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requests: Vec<crate::request::Capability>,
    /// Rules for driving the app well, not just legally, keyed by topic.
    pub conventions: IndexMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DescribedApp {
    pub id: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    pub auth_mode: String,
    pub timezone: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DescribedEntity {
    /// The field a person names a record by; resolve a label with one filtered GET.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Where its records live (the PocketBase-compatible records API).
    pub records: String,
    pub fields: IndexMap<String, Field>,
    /// `id`, `created`, `updated`: managed by the server, never written.
    pub system_fields: IndexMap<String, SystemField>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub indexes: Vec<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SystemField {
    #[serde(rename = "type")]
    pub kind: String,
    pub read_only: bool,
    pub format: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DescribedOperation {
    pub name: String,
    pub description: String,
    pub params: IndexMap<String, DescribedParam>,
    /// `crud`, `http`, `job` or `native`.
    pub executor: String,
    pub destructive: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<String>,
    /// Where to invoke it.
    pub url: String,
    /// `person` when a call by an agent holding a grant runs only after a
    /// person of the app approved it (`destructive_consent = "person"`);
    /// absent when the caller's host asks its person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consent: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DescribedParam {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub required: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    #[serde(default, rename = "enum", skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<Value>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
}
