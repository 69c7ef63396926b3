//! The guard: inspects a raw JSON body before any coercion and reports every
//! violation at once.
//!
//! It runs before the store because after coercion a garbage value and a
//! deliberate "clear this field" look the same. What it returns on success is
//! the normalized value of each written field (datetimes in the wire form),
//! which is also what the read-back compares the stored row with. Whether a
//! ref points at an existing record is checked later, inside the write
//! transaction, where the answer cannot change before the commit.

use crate::error::Error;
use crate::{datetime, id};
use protocol::schema::{Entity, Field, FieldType, StringFormat};
use protocol::{ErrorCode, Violation};
use serde_json::{Map, Value};
use std::collections::HashMap;

/// Whether the body creates a record or patches one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Create,
    Update,
}

/// What the guard accepted: normalized values of the fields the body wrote
/// (plus defaults on create), and the client-chosen id if any.
#[derive(Debug, Clone, PartialEq)]
pub struct Accepted {
    pub id: Option<String>,
    pub values: Map<String, Value>,
}

/// Checks a whole body. `record_meta` holds the values a body may echo
/// unchanged (`collectionId`, `collectionName`, and `id` on update).
pub fn check_body(
    entity_name: &str,
    entity: &Entity,
    body: &Value,
    mode: Mode,
    record_meta: &Map<String, Value>,
) -> Result<Accepted, Vec<Violation>> {
    let (accepted, violations) = inspect_body(entity_name, entity, body, mode, record_meta);
    if violations.is_empty() { Ok(accepted) } else { Err(violations) }
}

/// Like [`check_body`], but also returns what passed when something did not,
/// so the caller can add the checks that need storage (refs) to one answer.
pub fn inspect_body(
    entity_name: &str,
    entity: &Entity,
    body: &Value,
    mode: Mode,
    record_meta: &Map<String, Value>,
) -> (Accepted, Vec<Violation>) {
    let Value::Object(body) = body else {
        let v = Violation::new(ErrorCode::InvalidJson, "the body must be a JSON object of field values")
            .expected("a JSON object")
            .got(Value::from(json_kind(body)));
        return (Accepted { id: None, values: Map::new() }, vec![v]);
    };
    let mut violations = Vec::new();
    let mut accepted = Accepted { id: None, values: Map::new() };
    for (key, value) in body {
        if let Some(field) = entity.fields.get(key) {
            if field.read_only {
                violations.push(read_only(key, value));
                continue;
            }
            match check_value(key, field, value) {
                Ok(v) => {
                    accepted.values.insert(key.clone(), v);
                }
                Err(v) => violations.push(v),
            }
            continue;
        }
        match key.as_str() {
            "id" if mode == Mode::Create => match value.as_str() {
                Some(s) if id::is_valid(s) => accepted.id = Some(s.to_owned()),
                Some("") => {}
                _ => violations.push(
                    Violation::new(ErrorCode::InvalidString, "a record id is 15 characters of a-z and 0-9")
                        .field("id")
                        .expected("15 characters of [a-z0-9]")
                        .got(value.clone()),
                ),
            },
            "id" | "collectionId" | "collectionName" if record_meta.get(key) == Some(value) => {}
            "id" | "created" | "updated" | "collectionId" | "collectionName" => violations.push(read_only(key, value)),
            _ => {
                let valid: Vec<&str> =
                    entity.fields.iter().filter(|(_, f)| !f.read_only).map(|(n, _)| n.as_str()).collect();
                violations.push(
                    Violation::new(
                        ErrorCode::UnknownField,
                        format!("\"{key}\" is not a field of {entity_name}; valid fields: {}", valid.join(", ")),
                    )
                    .field(key.clone())
                    .expected(format!("one of: {}", valid.join(", ")))
                    .got(value.clone()),
                );
            }
        }
    }
    if mode == Mode::Create {
        for (name, field) in &entity.fields {
            if accepted.values.contains_key(name) || body.contains_key(name) {
                continue;
            }
            if let Some(default) = &field.default {
                accepted.values.insert(name.clone(), normalize_default(field, default));
            } else if field.required && !field.read_only {
                violations.push(
                    Violation::new(ErrorCode::RequiredField, format!("\"{name}\" is required"))
                        .field(name.clone())
                        .expected(describe_expected(&field.kind)),
                );
            }
        }
    }
    (accepted, violations)
}

fn read_only(key: &str, value: &Value) -> Violation {
    Violation::new(ErrorCode::ReadOnlyField, format!("\"{key}\" is managed by the server and cannot be written"))
        .field(key)
        .expected("no value")
        .got(value.clone())
}

/// Whether `text` matches a field's `pattern`. A pattern is compiled once
/// and kept (the schema's patterns are few and fixed; compiling one on every
/// write cost more than the write's checks). One that does not compile,
/// which `check` refuses, matches nothing.
fn matches_pattern(pattern: &str, text: &str) -> bool {
    static COMPILED: std::sync::LazyLock<std::sync::RwLock<HashMap<String, Option<regex::Regex>>>> =
        std::sync::LazyLock::new(Default::default);
    if let Some(compiled) = COMPILED.read().unwrap_or_else(|e| e.into_inner()).get(pattern) {
        return compiled.as_ref().is_some_and(|re| re.is_match(text));
    }
    let compiled = regex::Regex::new(pattern).ok();
    let matched = compiled.as_ref().is_some_and(|re| re.is_match(text));
    COMPILED.write().unwrap_or_else(|e| e.into_inner()).insert(pattern.to_owned(), compiled);
    matched
}

/// Adds to `violations` one `out_of_range` per field holding a number its
/// parse could not keep (see `crate::number`), unless that field was refused
/// already: a number field's, or one inside a `json` field, which is stored
/// as the parse left it. Names the body does not hold as fields (unknown,
/// or system fields) were refused by the guard by their own codes.
pub fn inexact(entity: &Entity, found: &[crate::number::Inexact], violations: &mut Vec<Violation>) {
    for number in found {
        // `points+` is the number of `points`.
        let Some(name) = number.path.first().map(|key| crate::modifier::field_of(entity, key)) else { continue };
        let Some(field) = entity.fields.get(name) else { continue };
        if violations.iter().any(|v| v.field.as_deref() == Some(name)) {
            continue;
        }
        let message = match &field.kind {
            FieldType::Json => format!(
                "\"{name}\" holds {} at {}, a number that would be stored as another one; send it as a string, or with at most 15 significant digits",
                number.text,
                number.place()
            ),
            _ => format!(
                "\"{name}\" is {}, a number that would be stored as another one; send at most 15 significant digits, or a whole number within ±2^53",
                number.text
            ),
        };
        violations.push(
            Violation::new(ErrorCode::OutOfRange, message)
                .field(name)
                .expected("a number that is stored exactly as written")
                .got(Value::String(number.text.clone())),
        );
    }
}

/// The largest whole number every store and client keeps exactly (2^53).
pub const MAX_EXACT_INTEGER: f64 = 9_007_199_254_740_992.0;

/// Checks one value against its field; returns the normalized value.
pub fn check_value(name: &str, field: &Field, value: &Value) -> Result<Value, Violation> {
    let bad = |code: ErrorCode, message: String| {
        Violation::new(code, message).field(name).expected(describe_expected(&field.kind)).got(value.clone())
    };
    if is_empty(value) {
        if field.required {
            return Err(bad(ErrorCode::RequiredField, format!("\"{name}\" is required and cannot be empty")));
        }
        return Ok(zero(&field.kind));
    }
    match &field.kind {
        FieldType::String { min, max, pattern, format } => {
            let Some(s) = value.as_str() else {
                return Err(bad(
                    ErrorCode::InvalidString,
                    format!("\"{name}\" must be a string, got {}", json_kind(value)),
                ));
            };
            if let Some((at, c)) = protocol::text::stray_control(s) {
                return Err(bad(
                    ErrorCode::InvalidText,
                    format!(
                        "\"{name}\" holds the control character U+{:04X} at character {at}; text takes tabs and line breaks, no other control characters",
                        u32::from(c)
                    ),
                ));
            }
            let len = s.chars().count() as u64;
            if let Some(max) = max
                && len > *max
            {
                return Err(bad(
                    ErrorCode::TooLong,
                    format!("\"{name}\" is {len} characters long; at most {max} are allowed"),
                ));
            }
            if let Some(min) = min
                && len < *min
            {
                return Err(bad(
                    ErrorCode::InvalidString,
                    format!("\"{name}\" is {len} characters long; at least {min} are needed"),
                ));
            }
            match format {
                Some(StringFormat::DayKey) if !datetime::is_day_key(s) => {
                    return Err(bad(
                        ErrorCode::InvalidDaykey,
                        format!("\"{name}\" must be a calendar date written YYYY-MM-DD"),
                    ));
                }
                Some(StringFormat::Email) if !is_email(s) => {
                    return Err(bad(ErrorCode::InvalidString, format!("\"{name}\" must be an email address")));
                }
                Some(StringFormat::Url) if !is_url(s) => {
                    return Err(bad(ErrorCode::InvalidString, format!("\"{name}\" must be an http(s) URL")));
                }
                _ => {}
            }
            if let Some(p) = pattern
                && !matches_pattern(p, s)
            {
                return Err(bad(ErrorCode::InvalidString, format!("\"{name}\" must match the pattern {p}")));
            }
            Ok(value.clone())
        }
        FieldType::Number { min, max, integer } => {
            let Some(n) = value.as_f64() else {
                return Err(bad(
                    ErrorCode::InvalidNumber,
                    format!("\"{name}\" must be a number, got {}", json_kind(value)),
                ));
            };
            if *integer && n.fract() != 0.0 {
                return Err(bad(ErrorCode::InvalidNumber, format!("\"{name}\" must be a whole number")));
            }
            // Beyond 2^53 an integer is not kept exactly everywhere it goes (a
            // double in PostgreSQL, in JavaScript, past i64 in SQLite): written
            // as sent, it could be read back as a neighbour. Whole numbers are
            // held to it, however they were written.
            const LIMIT: u64 = 1 << 53;
            let beyond = match (value.as_i64(), value.as_u64()) {
                (Some(i), _) => i.unsigned_abs() > LIMIT,
                (None, Some(u)) => u > LIMIT,
                // A float: beyond the limit it is whole, and an integer
                // field's value could be any of its neighbours.
                (None, None) => *integer && n.abs() > MAX_EXACT_INTEGER,
            };
            if beyond {
                return Err(bad(
                    ErrorCode::OutOfRange,
                    format!("\"{name}\" is a whole number beyond ±2^53 (9007199254740992), which is not kept exactly"),
                ));
            }
            if min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m) {
                return Err(bad(ErrorCode::OutOfRange, format!("\"{name}\" must be {}", range_text(*min, *max))));
            }
            Ok(value.clone())
        }
        FieldType::Boolean => match value {
            Value::Bool(_) => Ok(value.clone()),
            _ => Err(bad(
                ErrorCode::InvalidBoolean,
                format!("\"{name}\" must be true or false, got {}", json_kind(value)),
            )),
        },
        FieldType::Datetime => match value.as_str().and_then(datetime::parse) {
            Some(ts) => Ok(Value::String(datetime::format(ts))),
            None => Err(bad(ErrorCode::InvalidDate, format!("\"{name}\" must be an ISO 8601 date or datetime"))),
        },
        FieldType::Enum { values } => match value.as_str() {
            Some(s) if values.iter().any(|v| v == s) => Ok(value.clone()),
            _ => Err(bad(ErrorCode::InvalidEnum, format!("\"{name}\" must be one of: {}", values.join(", ")))),
        },
        FieldType::ListEnum { values } => {
            let items = value.as_array().ok_or_else(|| {
                bad(ErrorCode::InvalidEnum, format!("\"{name}\" must be a list of values from: {}", values.join(", ")))
            })?;
            let mut seen: Vec<&str> = Vec::new();
            for item in items {
                match item.as_str() {
                    Some(s) if seen.contains(&s) => {
                        return Err(bad(ErrorCode::InvalidEnum, format!("\"{name}\" lists \"{s}\" twice")));
                    }
                    Some(s) if values.iter().any(|v| v == s) => seen.push(s),
                    _ => {
                        return Err(bad(
                            ErrorCode::InvalidEnum,
                            format!("\"{name}\" may only hold values from: {}", values.join(", ")),
                        ));
                    }
                }
            }
            Ok(value.clone())
        }
        FieldType::Ref { entity } => match value.as_str() {
            Some(s) if id::is_valid(s) => Ok(value.clone()),
            _ => Err(bad(ErrorCode::InvalidRef, format!("\"{name}\" must be the id of a record of {entity}"))),
        },
        FieldType::ListRef { entity } => {
            let items = value.as_array().ok_or_else(|| {
                bad(ErrorCode::InvalidRef, format!("\"{name}\" must be a list of ids of records of {entity}"))
            })?;
            let mut seen: Vec<&str> = Vec::new();
            for item in items {
                match item.as_str() {
                    Some(s) if seen.contains(&s) => {
                        return Err(bad(ErrorCode::InvalidRef, format!("\"{name}\" lists \"{s}\" twice")));
                    }
                    Some(s) if id::is_valid(s) => seen.push(s),
                    _ => {
                        return Err(bad(
                            ErrorCode::InvalidRef,
                            format!("\"{name}\" must hold ids of records of {entity}"),
                        ));
                    }
                }
            }
            Ok(value.clone())
        }
        FieldType::Json => Ok(value.clone()),
        FieldType::Binary { .. } => Err(bad(
            ErrorCode::InvalidString,
            format!("\"{name}\" holds a file: upload it with multipart/form-data, or send null to clear it"),
        )),
    }
}

/// Used by `agent-app check`: a default must itself pass the guard.
pub fn check_default(kind: &FieldType, value: &Value) -> Result<(), String> {
    let field = Field { kind: kind.clone(), required: false, read_only: false, default: None };
    check_value("default", &field, value).map(|_| ()).map_err(|v| v.expected.unwrap_or(v.message))
}

fn normalize_default(field: &Field, value: &Value) -> Value {
    check_value("default", field, value).unwrap_or_else(|_| zero(&field.kind))
}

/// `null` clears any field; `""` clears the text-stored ones.
fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        _ => false,
    }
}

/// The value an absent or cleared field holds, as PocketBase stores it.
pub fn zero(kind: &FieldType) -> Value {
    match kind {
        FieldType::Number { .. } => Value::from(0),
        FieldType::Boolean => Value::Bool(false),
        FieldType::ListEnum { .. } | FieldType::ListRef { .. } => Value::Array(Vec::new()),
        FieldType::Json => Value::Null,
        _ => Value::String(String::new()),
    }
}

/// What a field accepts, in words an agent can act on.
pub fn describe_expected(kind: &FieldType) -> String {
    match kind {
        FieldType::String { max, format, .. } => match (format, max) {
            (Some(StringFormat::DayKey), _) => "a day key YYYY-MM-DD".into(),
            (Some(StringFormat::Email), _) => "an email address".into(),
            (Some(StringFormat::Url), _) => "an http(s) URL".into(),
            (None, Some(m)) => format!("a string of at most {m} characters"),
            (None, None) => "a string".into(),
        },
        FieldType::Number { min, max, integer } => {
            let what = if *integer { "a whole number" } else { "a number" };
            if min.is_some() || max.is_some() { format!("{what} {}", range_text(*min, *max)) } else { what.into() }
        }
        FieldType::Boolean => "true or false".into(),
        FieldType::Datetime => "an ISO 8601 date or datetime".into(),
        FieldType::Enum { values } => format!("one of: {}", values.join(", ")),
        FieldType::ListEnum { values } => format!("a list of distinct values from: {}", values.join(", ")),
        FieldType::Ref { entity } => format!("the id of a record of {entity}"),
        FieldType::ListRef { entity } => format!("a list of distinct ids of records of {entity}"),
        FieldType::Json => "any JSON value".into(),
        FieldType::Binary { .. } => "a file upload (multipart/form-data)".into(),
    }
}

fn range_text(min: Option<f64>, max: Option<f64>) -> String {
    match (min, max) {
        (Some(lo), Some(hi)) => format!("between {lo} and {hi}"),
        (Some(lo), None) => format!("at least {lo}"),
        (None, Some(hi)) => format!("at most {hi}"),
        (None, None) => "any".into(),
    }
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn is_email(s: &str) -> bool {
    let Some((local, domain)) = s.split_once('@') else { return false };
    !local.is_empty()
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !s.chars().any(|c| c.is_whitespace() || c == ',')
        && !domain.contains('@')
}

fn is_url(s: &str) -> bool {
    let rest = s.strip_prefix("https://").or_else(|| s.strip_prefix("http://"));
    rest.is_some_and(|r| !r.is_empty() && !r.starts_with('/') && !r.chars().any(char::is_whitespace))
}

/// The body as an object, and a violation for each key not in `allowed`.
pub fn object<'a>(body: &'a Value, allowed: &[&str]) -> Result<(&'a Map<String, Value>, Vec<Violation>), Error> {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    let map = match body {
        Value::Object(m) => m,
        Value::Null => EMPTY.get_or_init(Map::new),
        other => {
            return Err(Error::Invalid(vec![
                Violation::new(ErrorCode::InvalidJson, "the body is a JSON object").got(other.clone()),
            ]));
        }
    };
    let unknown = map
        .keys()
        .filter(|k| !allowed.contains(&k.as_str()))
        .map(|k| {
            Violation::new(
                ErrorCode::UnknownField,
                format!("\"{k}\" is not read here (fields: {})", allowed.join(", ")),
            )
            .field(k.clone())
        })
        .collect();
    Ok((map, unknown))
}

/// [`object`], refusing unknown keys.
pub fn only<'a>(body: &'a Value, allowed: &[&str]) -> Result<&'a Map<String, Value>, Error> {
    let (map, unknown) = object(body, allowed)?;
    if unknown.is_empty() { Ok(map) } else { Err(Error::Invalid(unknown)) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cards() -> Entity {
        let schema = crate::schema::parse(include_str!("../../../examples/kanban/schema.json"), false).unwrap();
        schema.entities["cards"].clone()
    }

    fn codes(body: Value, mode: Mode) -> Vec<(String, String)> {
        match check_body("cards", &cards(), &body, mode, &Map::new()) {
            Ok(_) => Vec::new(),
            Err(vs) => vs.into_iter().map(|v| (v.code.as_str().to_owned(), v.field.unwrap_or_default())).collect(),
        }
    }

    #[test]
    fn reports_every_violation_at_once() {
        let body = json!({
            "title": 42, "list": "nope", "due_date": "tomorrow", "due_day": "2026-02-30",
            "priority": "asap", "labels": ["bug", "bogus"], "points": 1.5, "estimate": -1,
            "done": "yes", "bogus": 1, "created": "2026-01-01"
        });
        let got = codes(body, Mode::Create);
        let want: Vec<(String, String)> = [
            ("invalid_string", "title"),
            ("invalid_ref", "list"),
            ("invalid_date", "due_date"),
            ("invalid_daykey", "due_day"),
            ("invalid_enum", "priority"),
            ("invalid_enum", "labels"),
            ("invalid_number", "points"),
            ("out_of_range", "estimate"),
            ("invalid_boolean", "done"),
            ("unknown_field", "bogus"),
            ("read_only_field", "created"),
        ]
        .iter()
        .map(|(c, f)| (c.to_string(), f.to_string()))
        .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn missing_required_fields_are_named_on_create_only() {
        assert_eq!(
            codes(json!({}), Mode::Create),
            [("required_field".to_string(), "title".to_string()), ("required_field".into(), "list".into())]
        );
        assert_eq!(codes(json!({}), Mode::Update), Vec::<(String, String)>::new());
        assert_eq!(codes(json!({"title": ""}), Mode::Update), [("required_field".to_string(), "title".to_string())]);
    }

    #[test]
    fn normalizes_dates_and_fills_defaults() {
        let ok = check_body(
            "cards",
            &cards(),
            &json!({"title": "t", "list": "aaaaaaaaaaaaaaa", "due_date": "2026-07-30T12:00:00+02:00", "id": "bbbbbbbbbbbbbbb"}),
            Mode::Create,
            &Map::new(),
        )
        .unwrap();
        assert_eq!(ok.id.as_deref(), Some("bbbbbbbbbbbbbbb"));
        assert_eq!(ok.values["due_date"], "2026-07-30 10:00:00.000Z");
        assert_eq!(ok.values["priority"], "none");
        assert_eq!(ok.values["position"], 0);
        assert!(!ok.values.contains_key("points"));
    }

    #[test]
    fn whole_numbers_beyond_two_to_the_53_are_refused_not_rounded() {
        let schema = crate::schema::parse(
            r#"{"entities": {"n": {"fields": {"any": {"type": "number"}, "whole": {"type": "number", "integer": true}}}}}"#,
            false,
        )
        .unwrap();
        let ent = &schema.entities["n"];
        let got = |body: Value| match check_body("n", ent, &body, Mode::Update, &Map::new()) {
            Ok(_) => Vec::new(),
            Err(vs) => vs.into_iter().map(|v| (v.code.as_str().to_owned(), v.field.unwrap_or_default())).collect(),
        };
        let edge = json!({"any": 9_007_199_254_740_992_u64, "whole": -9_007_199_254_740_992_i64});
        assert_eq!(got(edge), Vec::<(String, String)>::new(), "2^53 itself is exact");
        for beyond in [json!(9_007_199_254_740_993_u64), json!(u64::MAX), json!(i64::MIN)] {
            assert_eq!(got(json!({ "any": beyond })), [("out_of_range".to_string(), "any".to_string())], "{beyond}");
        }
        // A float stays a float; an integer field holds no float beyond 2^53,
        // whose neighbours look alike.
        assert_eq!(got(json!({"any": 1e300})), Vec::<(String, String)>::new());
        assert_eq!(got(json!({"whole": 1e20})), [("out_of_range".to_string(), "whole".to_string())]);
    }

    #[test]
    fn patterns_hold_on_every_write() {
        let schema = crate::schema::parse(
            r#"{"entities": {"p": {"fields": {"code": {"type": "string", "pattern": "^[A-Z]{3}$"},
                                             "tag": {"type": "string", "pattern": "^#"}}}}}"#,
            false,
        )
        .unwrap();
        let ent = &schema.entities["p"];
        let got = |body: Value| match check_body("p", ent, &body, Mode::Update, &Map::new()) {
            Ok(_) => Vec::new(),
            Err(vs) => vs.into_iter().map(|v| v.field.unwrap_or_default()).collect::<Vec<_>>(),
        };
        // Twice each: the second write uses the pattern as compiled for the first.
        for _ in 0..2 {
            assert_eq!(got(json!({"code": "ABC", "tag": "#x"})), Vec::<String>::new());
            assert_eq!(got(json!({"code": "abc", "tag": "x"})), ["code", "tag"]);
        }
    }

    #[test]
    fn too_long_and_non_object_bodies() {
        let long = "x".repeat(256);
        assert_eq!(codes(json!({"title": long}), Mode::Update), [("too_long".to_string(), "title".to_string())]);
        assert_eq!(codes(json!([1]), Mode::Create), [("invalid_json".to_string(), String::new())]);
    }

    fn json_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(|f| serde_json::Number::from_f64(f).map(Value::Number).unwrap_or(Value::Null)),
            ".{0,40}".prop_map(Value::String),
            "[0-9]{4}-[0-9]{2}-[0-9]{2}([ T][0-9]{2}:[0-9]{2}(:[0-9]{2})?(\\.[0-9]{1,6})?(Z|[+-][0-9]{2}:[0-9]{2})?)?"
                .prop_map(Value::String),
            "[a-z0-9]{15}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                proptest::collection::btree_map("[a-z_]{1,10}", inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config::with_cases(2000))]

        /// No body makes the guard panic, and what it accepts it accepts again unchanged.
        #[test]
        fn no_body_panics_and_accepted_values_are_stable(
            keys in proptest::collection::vec(proptest::sample::select(vec![
                "title", "list", "due_date", "due_day", "priority", "labels", "assignees", "points",
                "estimate", "done", "meta", "id", "created", "collectionName", "bogus", "description",
            ]), 0..8),
            values in proptest::collection::vec(json_value(), 8),
            mode in proptest::sample::select(vec![Mode::Create, Mode::Update]),
            raw in json_value(),
        ) {
            let entity = cards();
            let body: Map<String, Value> = keys.iter().zip(values).map(|(k, v)| (k.to_string(), v)).collect();
            for body in [Value::Object(body), raw] {
                if let Ok(accepted) = check_body("cards", &entity, &body, mode, &Map::new()) {
                    for (name, value) in &accepted.values {
                        let again = check_value(name, &entity.fields[name], value);
                        proptest::prop_assert_eq!(again.as_ref(), Ok(value));
                    }
                }
            }
        }
    }
}
