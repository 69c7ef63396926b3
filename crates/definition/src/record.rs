//! A stored record as the records API shows it (PocketBase's shape).

use serde_json::{Map, Value};

/// A stored record: `id`, `created`, `updated` and every field, as typed JSON.
pub type Row = Map<String, Value>;

/// A stored row in PocketBase's record shape: `collectionId`, `collectionName`,
/// `id`, the fields in schema order, then `created` and `updated`.
pub fn present(entity_name: &str, mut row: Row) -> Map<String, Value> {
    let mut out = Map::with_capacity(row.len() + 2);
    out.insert("collectionId".into(), Value::from(crate::schema::collection_id(entity_name)));
    out.insert("collectionName".into(), Value::from(entity_name));
    let created = row.shift_remove("created");
    let updated = row.shift_remove("updated");
    out.extend(row);
    out.insert("created".into(), created.unwrap_or_default());
    out.insert("updated".into(), updated.unwrap_or_default());
    out
}
