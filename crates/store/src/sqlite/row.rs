//! Conversions between typed JSON values and SQLite columns.
//!
//! Values are stored as PocketBase stores them (zero values, not NULLs, except
//! `json`), so filters compare them the same way PocketBase does.

pub(crate) use crate::sql::quote;
use protocol::schema::{Entity, FieldType};
use rusqlite::types::{Value as Sql, ValueRef};
use serde_json::{Map, Value};

/// The column declaration of a field type.
pub fn column_decl(kind: &FieldType) -> &'static str {
    match kind {
        FieldType::Number { .. } => "NUMERIC NOT NULL DEFAULT 0",
        FieldType::Boolean => "BOOLEAN NOT NULL DEFAULT FALSE",
        FieldType::ListEnum { .. } | FieldType::ListRef { .. } => "JSON NOT NULL DEFAULT '[]'",
        FieldType::Json => "JSON DEFAULT NULL",
        _ => "TEXT NOT NULL DEFAULT ''",
    }
}

/// A normalized field value as a SQLite value.
pub fn to_sql(kind: &FieldType, value: &Value) -> Sql {
    match (kind, value) {
        (_, Value::Null) if matches!(kind, FieldType::Json) => Sql::Null,
        (FieldType::Json, v) => Sql::Text(v.to_string()),
        (FieldType::ListEnum { .. } | FieldType::ListRef { .. }, v) => Sql::Text(v.to_string()),
        (FieldType::Boolean, Value::Bool(b)) => Sql::Integer(i64::from(*b)),
        (_, Value::Number(n)) => match n.as_i64() {
            Some(i) => Sql::Integer(i),
            None => Sql::Real(n.as_f64().unwrap_or(0.0)),
        },
        (_, Value::String(s)) => Sql::Text(s.clone()),
        (_, Value::Bool(b)) => Sql::Integer(i64::from(*b)),
        (_, other) => Sql::Text(other.to_string()),
    }
}

/// The value a column holds for a field that was never set (its declared default).
pub fn zero(kind: &FieldType) -> Sql {
    match kind {
        FieldType::Number { .. } | FieldType::Boolean => Sql::Integer(0),
        FieldType::ListEnum { .. } | FieldType::ListRef { .. } => Sql::Text("[]".to_owned()),
        FieldType::Json => Sql::Null,
        _ => Sql::Text(String::new()),
    }
}

/// A SQLite column value as the typed JSON value of its field.
pub fn from_sql(kind: &FieldType, value: ValueRef<'_>) -> Value {
    match kind {
        FieldType::Number { .. } => match value {
            ValueRef::Integer(i) => Value::from(i),
            ValueRef::Real(f) => number(f),
            ValueRef::Text(t) => {
                std::str::from_utf8(t).ok().and_then(|s| s.parse::<f64>().ok()).map(number).unwrap_or(Value::from(0))
            }
            _ => Value::from(0),
        },
        FieldType::Boolean => match value {
            ValueRef::Integer(i) => Value::Bool(i != 0),
            ValueRef::Real(f) => Value::Bool(f != 0.0),
            ValueRef::Text(t) => Value::Bool(matches!(t, b"1" | b"true" | b"TRUE")),
            _ => Value::Bool(false),
        },
        FieldType::ListEnum { .. } | FieldType::ListRef { .. } => match value {
            ValueRef::Text(t) => match serde_json::from_slice::<Value>(t) {
                Ok(Value::Array(items)) => Value::Array(items),
                _ => Value::Array(Vec::new()),
            },
            _ => Value::Array(Vec::new()),
        },
        FieldType::Json => match value {
            ValueRef::Null => Value::Null,
            ValueRef::Text(t) | ValueRef::Blob(t) => serde_json::from_slice(t).unwrap_or(Value::Null),
            ValueRef::Integer(i) => Value::from(i),
            ValueRef::Real(f) => number(f),
        },
        _ => text(value),
    }
}

/// Integral floats are sent as integers, as PocketBase's JSON encoder does.
fn number(f: f64) -> Value {
    if f.fract() == 0.0 && f.abs() < 9.0e15 {
        Value::from(f as i64)
    } else {
        serde_json::Number::from_f64(f).map(Value::Number).unwrap_or(Value::from(0))
    }
}

pub fn text(value: ValueRef<'_>) -> Value {
    match value {
        ValueRef::Text(t) => Value::String(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Integer(i) => Value::String(i.to_string()),
        ValueRef::Real(f) => Value::String(f.to_string()),
        _ => Value::String(String::new()),
    }
}

/// Reads one row selected with `EntitySql::columns`.
pub fn read(entity: &Entity, row: &rusqlite::Row<'_>) -> rusqlite::Result<Map<String, Value>> {
    // Sized once: grown from empty, the map rehashed several times per row
    // (visible in the writer's profile, which reads back every write).
    let mut out = Map::with_capacity(entity.fields.len() + 3);
    out.insert("id".into(), text(row.get_ref(0)?));
    for (i, (name, field)) in entity.fields.iter().enumerate() {
        out.insert(name.clone(), from_sql(&field.kind, row.get_ref(i + 1)?));
    }
    let n = entity.fields.len();
    out.insert("created".into(), text(row.get_ref(n + 1)?));
    out.insert("updated".into(), text(row.get_ref(n + 2)?));
    Ok(out)
}
