//! PocketBase's set modifiers: a write that says how a value changes rather
//! than what it becomes. `points+: 2` adds and `points-: 2` subtracts on a
//! number; `labels+` appends, `+labels` prepends and `labels-` removes on a
//! list (`list<enum>`, `list<ref>`), one value or several.
//!
//! The change is resolved against the stored value inside the write's own
//! transaction (`store::Write::modifiers`), so two agents adding at once
//! both count: an increment is how an agent avoids a lost update. The
//! result is judged by the guard as if it had been sent (a range, an enum,
//! a ref that must exist), and the receipt shows it.

use crate::guard;
use protocol::schema::{Entity, FieldType};
use protocol::{ErrorCode, Violation};
use serde_json::{Map, Value};

/// What a modifier does to its field.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    Add(serde_json::Number),
    Subtract(serde_json::Number),
    Append(Vec<String>),
    Prepend(Vec<String>),
    Remove(Vec<String>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Modifier {
    pub field: String,
    pub change: Change,
}

/// The field and the kind of change a body key names: `points+`, `+labels`,
/// `labels-`; `None` for a plain key.
fn parse_key(key: &str) -> Option<(&str, char)> {
    if let Some(field) = key.strip_prefix('+') {
        return Some((field, '<'));
    }
    if let Some(field) = key.strip_suffix('+') {
        return Some((field, '+'));
    }
    key.strip_suffix('-').map(|field| (field, '-'))
}

/// The field a body key changes: `points` for `points+`, `+points` or
/// `points-` when the entity has it, else the key itself.
pub fn field_of<'k>(entity: &Entity, key: &'k str) -> &'k str {
    parse_key(key).map(|(f, _)| f).filter(|f| entity.fields.contains_key(*f)).unwrap_or(key)
}

/// Splits a write's body into its plain values and its modifiers. A
/// modifier's operand is checked here (a number for a number, values the
/// list may hold); what the change makes is judged by [`resolve`]. Keys
/// naming no field of the entity stay in the body, for the guard's
/// `unknown_field`.
pub fn split(entity: &Entity, body: &Value) -> (Value, Vec<Modifier>, Vec<Violation>) {
    let Value::Object(fields) = body else { return (body.clone(), Vec::new(), Vec::new()) };
    if !fields.keys().any(|k| parse_key(k).is_some_and(|(f, _)| entity.fields.contains_key(f))) {
        return (body.clone(), Vec::new(), Vec::new());
    }
    let mut plain = Map::new();
    let mut modifiers = Vec::new();
    let mut problems = Vec::new();
    for (key, value) in fields {
        let Some((name, how)) = parse_key(key).filter(|(f, _)| entity.fields.contains_key(*f)) else {
            plain.insert(key.clone(), value.clone());
            continue;
        };
        let field = &entity.fields[name];
        let bad =
            |code: ErrorCode, message: String| Violation::new(code, message).field(name.to_owned()).got(value.clone());
        if field.read_only {
            problems
                .push(bad(ErrorCode::ReadOnlyField, format!("\"{name}\" is read-only; \"{key}\" cannot change it")));
            continue;
        }
        if fields.contains_key(name) {
            problems.push(bad(
                ErrorCode::InvalidJson,
                format!("\"{name}\" is given as a value and changed by \"{key}\" in one write; send one of them"),
            ));
            continue;
        }
        let change = match (&field.kind, how) {
            (FieldType::Number { .. }, '+' | '-') => match value {
                Value::Number(n) => Ok(if how == '+' { Change::Add(n.clone()) } else { Change::Subtract(n.clone()) }),
                _ => Err(bad(ErrorCode::InvalidNumber, format!("\"{key}\" takes the number to add or subtract"))),
            },
            (FieldType::ListEnum { .. } | FieldType::ListRef { .. }, _) => list_operand(name, key, &field.kind, value)
                .map(|items| match how {
                    '+' => Change::Append(items),
                    '<' => Change::Prepend(items),
                    _ => Change::Remove(items),
                }),
            _ => Err(bad(
                ErrorCode::UnknownField,
                format!(
                    "\"{key}\" is no field: the modifiers name+ and name- apply to numbers, and +name, name+ and name- to lists"
                ),
            )),
        };
        match change {
            Ok(change) => modifiers.push(Modifier { field: name.to_owned(), change }),
            Err(v) => problems.push(v),
        }
    }
    (Value::Object(plain), modifiers, problems)
}

/// A list modifier's values: one text or a list of texts, each one the
/// field may hold (an enum value, a record id's form).
fn list_operand(name: &str, key: &str, kind: &FieldType, value: &Value) -> Result<Vec<String>, Violation> {
    let code = if matches!(kind, FieldType::ListEnum { .. }) { ErrorCode::InvalidEnum } else { ErrorCode::InvalidRef };
    let items: Option<Vec<String>> = match value {
        Value::String(s) => Some(vec![s.clone()]),
        Value::Array(items) => items.iter().map(|v| v.as_str().map(str::to_owned)).collect(),
        _ => None,
    };
    let items = items.ok_or_else(|| {
        Violation::new(code, format!("\"{key}\" takes one value or a list of values of \"{name}\""))
            .field(name.to_owned())
            .got(value.clone())
    })?;
    for item in &items {
        let fits = match kind {
            FieldType::ListEnum { values } => values.iter().any(|v| v == item),
            _ => crate::id::is_valid(item),
        };
        if !fits {
            let what = match kind {
                FieldType::ListEnum { values } => format!("one of: {}", values.join(", ")),
                _ => "record ids (15 characters of a-z and 0-9)".to_owned(),
            };
            return Err(Violation::new(code, format!("\"{key}\" holds \"{item}\"; its values are {what}"))
                .field(name.to_owned())
                .got(value.clone()));
        }
    }
    Ok(items)
}

/// The values the modifiers make of `current` (the stored record, or an empty
/// one for a create), each judged by the guard as if it had been sent.
pub fn resolve(
    entity_name: &str,
    entity: &Entity,
    current: &Map<String, Value>,
    modifiers: &[Modifier],
) -> Result<Map<String, Value>, Vec<Violation>> {
    let mut values = Map::new();
    let mut problems = Vec::new();
    for m in modifiers {
        let Some(field) = entity.fields.get(&m.field) else { continue };
        let before = values.get(&m.field).or_else(|| current.get(&m.field)).cloned().unwrap_or(Value::Null);
        let after = match &m.change {
            Change::Add(n) => arithmetic(&before, n, false),
            Change::Subtract(n) => arithmetic(&before, n, true),
            Change::Append(items) | Change::Prepend(items) | Change::Remove(items) => {
                let list: Vec<String> = match &before {
                    Value::Array(a) => a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect(),
                    _ => Vec::new(),
                };
                // As PocketBase: appended values go last and prepended ones
                // first, each value once, where it first appears.
                let joined: Vec<String> = match &m.change {
                    Change::Append(_) => list.into_iter().chain(items.iter().cloned()).collect(),
                    Change::Prepend(_) => items.iter().cloned().chain(list).collect(),
                    _ => list.into_iter().filter(|v| !items.contains(v)).collect(),
                };
                let mut unique: Vec<String> = Vec::with_capacity(joined.len());
                for v in joined {
                    if !unique.contains(&v) {
                        unique.push(v);
                    }
                }
                Some(Value::Array(unique.into_iter().map(Value::String).collect()))
            }
        };
        let Some(after) = after else {
            problems.push(
                Violation::new(
                    ErrorCode::OutOfRange,
                    format!("\"{}\" would leave the numbers a double can hold", m.field),
                )
                .field(m.field.clone()),
            );
            continue;
        };
        match guard::check_value(&m.field, field, &after) {
            Ok(value) => {
                values.insert(m.field.clone(), value);
            }
            Err(v) => problems.push(Violation {
                message: format!("{} ({} of {entity_name} after the change)", v.message, m.field),
                ..v
            }),
        }
    }
    if problems.is_empty() { Ok(values) } else { Err(problems) }
}

/// `before ± n`: whole numbers stay whole (and exact); `None` past what a
/// number can hold.
fn arithmetic(before: &Value, n: &serde_json::Number, subtract: bool) -> Option<Value> {
    let zero = serde_json::Number::from(0);
    let before = match before {
        Value::Number(b) => b,
        _ => &zero,
    };
    if let (Some(a), Some(b)) = (before.as_i64(), n.as_i64()) {
        let sum = if subtract { a.checked_sub(b) } else { a.checked_add(b) };
        if let Some(sum) = sum {
            return Some(Value::from(sum));
        }
    }
    let (a, b) = (before.as_f64()?, n.as_f64()?);
    let sum = if subtract { a - b } else { a + b };
    serde_json::Number::from_f64(sum).map(Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cards() -> Entity {
        let schema = crate::schema::parse(
            r#"{"entities": {"cards": {"fields": {
                "title": {"type": "string"},
                "points": {"type": "number", "integer": true, "min": 0, "max": 100},
                "estimate": {"type": "number"},
                "labels": {"type": "list<enum>", "values": ["bug", "feature", "chore"]},
                "seen": {"type": "number", "readOnly": true}}}}}"#,
            false,
        )
        .expect("schema");
        schema.entities["cards"].clone()
    }

    fn codes(vs: &[Violation]) -> Vec<(String, String)> {
        vs.iter().map(|v| (v.code.as_str().to_owned(), v.field.clone().unwrap_or_default())).collect()
    }

    #[test]
    fn keys_with_modifiers_split_from_the_plain_values() {
        let ent = cards();
        let body = json!({"title": "x", "points+": 2, "+labels": "bug", "labels-": ["chore"], "bogus+": 1});
        let (plain, modifiers, problems) = split(&ent, &body);
        assert_eq!(plain, json!({"title": "x", "bogus+": 1}));
        assert_eq!(problems, []);
        assert_eq!(
            modifiers,
            [
                Modifier { field: "points".into(), change: Change::Add(2.into()) },
                Modifier { field: "labels".into(), change: Change::Prepend(vec!["bug".into()]) },
                Modifier { field: "labels".into(), change: Change::Remove(vec!["chore".into()]) },
            ]
        );
        let bad =
            json!({"title+": "y", "points-": "2", "labels+": ["nope"], "seen+": 1, "estimate": 1, "estimate+": 1});
        let (_, modifiers, problems) = split(&ent, &bad);
        assert_eq!(modifiers, []);
        assert_eq!(
            codes(&problems),
            [
                ("unknown_field".to_owned(), "title".to_owned()),
                ("invalid_number".to_owned(), "points".to_owned()),
                ("invalid_enum".to_owned(), "labels".to_owned()),
                ("read_only_field".to_owned(), "seen".to_owned()),
                ("invalid_json".to_owned(), "estimate".to_owned()),
            ]
        );
    }

    #[test]
    fn the_result_is_judged_as_if_it_was_sent() {
        let ent = cards();
        let current = json!({"points": 99, "estimate": 0.5, "labels": ["bug", "chore"]});
        let current = current.as_object().expect("object");
        let (_, modifiers, _) =
            split(&ent, &json!({"points-": 9, "estimate+": 0.25, "labels+": ["feature", "bug"], "+labels": "chore"}));
        let values = resolve("cards", &ent, current, &modifiers).expect("within the field");
        assert_eq!(
            values,
            *json!({"points": 90, "estimate": 0.75, "labels": ["chore", "bug", "feature"]}).as_object().expect("o")
        );
        let (_, modifiers, _) = split(&ent, &json!({"points+": 2, "labels-": ["bug", "chore"]}));
        let refused = resolve("cards", &ent, current, &modifiers).expect_err("past max");
        assert_eq!(codes(&refused), [("out_of_range".to_owned(), "points".to_owned())]);
        // A create starts from nothing.
        let (_, modifiers, _) = split(&ent, &json!({"points+": 3, "labels-": "bug"}));
        let values = resolve("cards", &ent, &Map::new(), &modifiers).expect("fine");
        assert_eq!(values, *json!({"points": 3, "labels": []}).as_object().expect("o"));
    }
}
