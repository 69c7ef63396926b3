//! The list page shape of the records API (PocketBase-compatible).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One page of records: `{page, perPage, totalItems, totalPages, items}`.
/// With `skipTotal` both totals are `-1`, as PocketBase answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Page {
    pub page: u64,
    pub per_page: u64,
    pub total_items: i64,
    pub total_pages: i64,
    pub items: Vec<Map<String, Value>>,
}
