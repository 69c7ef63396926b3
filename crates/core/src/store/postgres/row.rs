//! Conversions between typed JSON values and PostgreSQL columns, and the SQL
//! text that depends only on an entity's definition.
//!
//! Values are stored as the SQLite store stores them (zero values, not NULLs,
//! except `json`), so both stores show a record the same way: numbers are
//! `double precision` (PocketBase's numbers are float64), lists `jsonb`
//! arrays, a `json` field the `json` type, which keeps the document as
//! written (key order too; `jsonb` would reorder it), times the wire-form text.

use super::quote;
use postgres::types::ToSql;
use protocol::schema::{Entity, FieldType};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

/// The column type of a field type, as `information_schema.columns` names it.
pub fn column_type(kind: &FieldType) -> &'static str {
    match kind {
        FieldType::Number { .. } => "double precision",
        FieldType::Boolean => "boolean",
        FieldType::ListEnum { .. } | FieldType::ListRef { .. } => "jsonb",
        FieldType::Json => "json",
        _ => "text",
    }
}

/// The column declaration of a field type.
pub fn column_decl(kind: &FieldType) -> String {
    let default = match kind {
        FieldType::Number { .. } => "NOT NULL DEFAULT 0",
        FieldType::Boolean => "NOT NULL DEFAULT FALSE",
        FieldType::ListEnum { .. } | FieldType::ListRef { .. } => "NOT NULL DEFAULT '[]'",
        FieldType::Json => "DEFAULT NULL",
        _ => "NOT NULL DEFAULT ''",
    };
    format!("{} {default}", column_type(kind))
}

/// A parameter for one column.
pub type Param = Box<dyn ToSql + Sync + Send>;

/// A normalized field value as a parameter of its column's type. A value the
/// guard let through in another shape becomes the column's nearest value, and
/// the write's read-back then reports the difference.
pub fn to_sql(kind: &FieldType, value: &Value) -> Param {
    match kind {
        FieldType::Number { .. } => Box::new(match value {
            Value::Number(n) => n.as_f64().unwrap_or(0.0),
            Value::String(s) => s.parse::<f64>().unwrap_or(0.0),
            Value::Bool(b) => f64::from(u8::from(*b)),
            _ => 0.0,
        }),
        FieldType::Boolean => Box::new(match value {
            Value::Bool(b) => *b,
            Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
            _ => false,
        }),
        FieldType::ListEnum { .. } | FieldType::ListRef { .. } => Box::new(match value {
            Value::Array(_) => value.clone(),
            _ => Value::Array(Vec::new()),
        }),
        FieldType::Json => Box::new((!value.is_null()).then(|| postgres::types::Json(value.clone()))),
        _ => Box::new(match value {
            Value::String(s) => s.clone(),
            Value::Null => String::new(),
            other => other.to_string(),
        }),
    }
}

/// The value of column `i` of `row` as the typed JSON value of its field.
pub fn from_sql(kind: &FieldType, row: &postgres::Row, i: usize) -> Result<Value, postgres::Error> {
    Ok(match kind {
        FieldType::Number { .. } => number(row.try_get::<_, Option<f64>>(i)?.unwrap_or(0.0)),
        FieldType::Boolean => Value::Bool(row.try_get::<_, Option<bool>>(i)?.unwrap_or(false)),
        FieldType::ListEnum { .. } | FieldType::ListRef { .. } => match row.try_get::<_, Option<Value>>(i)? {
            Some(Value::Array(items)) => Value::Array(items),
            _ => Value::Array(Vec::new()),
        },
        FieldType::Json => row.try_get::<_, Option<Value>>(i)?.unwrap_or(Value::Null),
        _ => Value::String(row.try_get::<_, Option<String>>(i)?.unwrap_or_default()),
    })
}

/// Integral floats are sent as integers, as PocketBase's JSON encoder does
/// (and the SQLite store).
fn number(f: f64) -> Value {
    if f.fract() == 0.0 && f.abs() < 9.0e15 {
        Value::from(f as i64)
    } else {
        serde_json::Number::from_f64(f).map(Value::Number).unwrap_or(Value::from(0))
    }
}

/// SQL text that depends only on an entity's definition, built once per entity.
pub struct EntitySql {
    /// The SELECT list [`read`] expects.
    pub columns: String,
    /// One row by id (`$1`).
    pub by_id: String,
    /// One row by id, locked until the transaction ends: the row a write
    /// changes, so another node's write to it waits and sees the result.
    pub by_id_for_update: String,
    /// The label column of one row by id (`id` when the entity names no label).
    pub label_by_id: String,
    /// The label field's type; `None` when the column is `id`.
    pub label_kind: Option<FieldType>,
}

/// [`EntitySql`] by entity name; `migrate` clears it.
#[derive(Default)]
pub struct SqlCache(RwLock<HashMap<String, Arc<EntitySql>>>);

impl SqlCache {
    pub fn get(&self, table: &str, entity: &Entity) -> Arc<EntitySql> {
        if let Some(found) = self.0.read().unwrap_or_else(|e| e.into_inner()).get(table) {
            return Arc::clone(found);
        }
        let t = quote(table);
        let mut cols = vec![format!("{t}.\"id\"")];
        cols.extend(entity.fields.keys().map(|name| format!("{t}.{}", quote(name))));
        cols.push(format!("{t}.\"created\""));
        cols.push(format!("{t}.\"updated\""));
        let columns = cols.join(", ");
        let by_id = format!("SELECT {columns} FROM {t} WHERE \"id\" = $1");
        let by_id_for_update = format!("{by_id} FOR UPDATE");
        let label = entity.label.as_deref().and_then(|l| Some((l, &entity.fields.get(l)?.kind)));
        let label_by_id = format!("SELECT {} FROM {t} WHERE \"id\" = $1", quote(label.map_or("id", |(l, _)| l)));
        let label_kind = label.map(|(_, kind)| kind.clone());
        let built = Arc::new(EntitySql { columns, by_id, by_id_for_update, label_by_id, label_kind });
        self.0.write().unwrap_or_else(|e| e.into_inner()).insert(table.to_owned(), Arc::clone(&built));
        built
    }

    pub fn clear(&self) {
        self.0.write().unwrap_or_else(|e| e.into_inner()).clear();
    }
}

/// Reads one row selected with [`EntitySql::columns`].
pub fn read(entity: &Entity, row: &postgres::Row) -> Result<Map<String, Value>, postgres::Error> {
    let mut out = Map::with_capacity(entity.fields.len() + 3);
    out.insert("id".into(), Value::String(row.try_get(0)?));
    for (i, (name, field)) in entity.fields.iter().enumerate() {
        out.insert(name.clone(), from_sql(&field.kind, row, i + 1)?);
    }
    let n = entity.fields.len();
    out.insert("created".into(), Value::String(row.try_get(n + 1)?));
    out.insert("updated".into(), Value::String(row.try_get(n + 2)?));
    Ok(out)
}
