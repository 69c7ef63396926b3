//! Conversions between typed JSON values and PostgreSQL columns.
//!
//! Values are stored as the SQLite store stores them (zero values, not NULLs,
//! except `json`), so both stores show a record the same way: numbers are
//! `double precision` (PocketBase's numbers are float64), lists `jsonb`
//! arrays, a `json` field the `json` type, which keeps the document as
//! written (key order too; `jsonb` would reorder it), times the wire-form text.

use postgres::types::ToSql;
use protocol::schema::{Entity, FieldType};
use serde_json::{Map, Value};

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
/// (and the SQLite store, which keeps integers as integers), up to where an
/// i64 ends.
fn number(f: f64) -> Value {
    if f.fract() == 0.0 && f.abs() < 9.2e18 {
        Value::from(f as i64)
    } else {
        serde_json::Number::from_f64(f).map(Value::Number).unwrap_or(Value::from(0))
    }
}

/// Reads one row selected with `EntitySql::columns`.
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
