//! What every store checks of a write, whatever its SQL: the read-back of the
//! values written, and the violations a store reports in the guard's terms.

use crate::{StoreError, Write};
use protocol::schema::{Entity, Schema};
use protocol::{ErrorCode, Violation};
use serde_json::{Map, Value};

/// The entity a store was asked about; an unknown one is the caller's bug.
pub(crate) fn entity<'s>(schema: &'s Schema, name: &str) -> Result<&'s Entity, StoreError> {
    schema.entities.get(name).ok_or_else(|| StoreError::Internal(format!("unknown entity {name}")))
}

/// An `If-Match` version must be the row's `updated`: an update or a delete
/// of a record that changed since the caller read it is refused with the
/// record as it is now.
pub(crate) fn version_matches(if_match: Option<&str>, current: &Map<String, Value>) -> Result<(), StoreError> {
    match if_match {
        Some(version) if current.get("updated").and_then(Value::as_str) != Some(version) => {
            Err(StoreError::VersionConflict(Box::new(current.clone())))
        }
        _ => Ok(()),
    }
}

/// The plain write an update's modifiers make of `current`, each result
/// judged by the guard (`a2app_definition::modifier::resolve`).
pub(crate) fn modified(
    entity: &protocol::schema::Entity,
    write: &crate::Write,
    current: &Map<String, Value>,
) -> Result<crate::Write, StoreError> {
    let changed = a2app_definition::modifier::resolve(&write.entity, entity, current, &write.modifiers)
        .map_err(StoreError::Unstorable)?;
    let mut values = write.values.clone();
    values.extend(changed);
    Ok(crate::Write { values, modifiers: Vec::new(), ..write.clone() })
}

/// Compares every written value with what storage holds now.
pub(crate) fn read_back(written: &Map<String, Value>, row: &Map<String, Value>) -> Result<(), StoreError> {
    let violations: Vec<Violation> = written
        .iter()
        .filter(|(field, value)| !same_value(value, row.get(*field).unwrap_or(&Value::Null)))
        .map(|(field, value)| {
            Violation::new(ErrorCode::NotStored, format!("\"{field}\" was written but storage holds a different value"))
                .field(field.clone())
                .expected(value.to_string())
                .got(row.get(field).cloned().unwrap_or(Value::Null))
        })
        .collect();
    if violations.is_empty() { Ok(()) } else { Err(StoreError::NotStored(violations)) }
}

/// Equal as stored values: numbers by value, objects whatever their key order.
fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_value(p, q)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same_value(v, w)))
        }
        _ => a == b,
    }
}

/// The only unique constraint besides ids is a user's email.
pub(crate) fn unique_violation(values: &Map<String, Value>) -> Vec<Violation> {
    vec![
        Violation::new(ErrorCode::NotUnique, "this email is already used by another user")
            .field("email")
            .expected("an email no other user has")
            .got(values.get("email").cloned().unwrap_or(Value::Null)),
    ]
}

/// A written row that cannot be read back.
pub(crate) fn missing_row() -> Violation {
    Violation::new(ErrorCode::NotStored, "the record cannot be read back after the write")
}

/// A deleted row that can still be read.
pub(crate) fn still_there() -> Violation {
    Violation::new(ErrorCode::NotStored, "the record is still there after the delete")
}

/// The ids each ref field of `values` names: `(field, target entity, ids)`.
pub(crate) fn refs<'v>(ent: &'v Entity, values: &'v Map<String, Value>) -> Vec<(&'v str, &'v str, Vec<&'v str>)> {
    let mut out = Vec::new();
    for (field, value) in values {
        let Some(spec) = ent.fields.get(field) else { continue };
        let Some(target) = spec.kind.target() else { continue };
        let ids: Vec<&str> = match value {
            Value::String(s) if !s.is_empty() => vec![s.as_str()],
            Value::Array(items) => items.iter().filter_map(Value::as_str).collect(),
            _ => continue,
        };
        out.push((field.as_str(), target, ids));
    }
    out
}

/// A ref naming no record of its entity.
pub(crate) fn missing_ref(field: &str, target: &str, id: &str) -> Violation {
    Violation::new(ErrorCode::InvalidRef, format!("\"{field}\" names {id}, but {target} has no record with that id"))
        .field(field.to_owned())
        .expected(format!("the id of an existing record of {target}"))
        .got(Value::from(id))
}

/// The receipt of a write, naming referenced records through `label` (their
/// label field's value, read in the write's transaction) where the writer
/// may read them.
pub(crate) fn receipt(
    schema: &Schema,
    write: &Write,
    row: &Map<String, Value>,
    action: &str,
    before: Option<&Map<String, Value>>,
    label: impl Fn(&Entity, &str, &str) -> Option<Value>,
) -> protocol::receipt::Receipt {
    let ctx = a2app_definition::receipt::Context {
        schema,
        entity: &write.entity,
        action,
        written: write.values.keys().cloned().collect(),
        agent: write.agent.clone(),
        caller: write.caller.clone(),
        timezone: &write.timezone,
        now: write.now,
    };
    let named = |entity: &str, id: &str| -> Option<String> {
        if write.labels_from.as_ref().is_some_and(|readable| !readable.contains(entity)) {
            return None;
        }
        let value = label(schema.entities.get(entity)?, entity, id)?;
        Some(a2app_definition::receipt::label_text(Some(&value), id))
    };
    let mut receipt = a2app_definition::receipt::generate(&ctx, row, &named);
    if action == "delete" {
        receipt.at = a2app_definition::datetime::format(write.now);
    }
    if let (Some(before), Some(ent)) = (before, schema.entities.get(&write.entity)) {
        receipt.before = prior(ent, write, before);
    }
    receipt
}

/// What an update's record held before it, of what a message about the
/// change may name it by: the fields written, its label field and its refs
/// ("renamed X to Y", "moved X from To Do").
fn prior(ent: &Entity, write: &Write, before: &Map<String, Value>) -> Map<String, Value> {
    before
        .iter()
        .filter(|(field, _)| {
            write.values.contains_key(*field)
                || ent.label.as_deref() == Some(field.as_str())
                || ent.fields.get(*field).is_some_and(|spec| spec.kind.target().is_some())
        })
        .map(|(field, value)| (field.clone(), value.clone()))
        .collect()
}
