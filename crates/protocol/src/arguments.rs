//! Reading named arguments from a JSON object (a tool call's `arguments`),
//! with one shape of refusal: an `invalid_param` violation naming the
//! argument, what it must be and what it was. The app's MCP tools and the
//! gateway's read their arguments through these, so a wrong type is refused
//! alike whichever way an agent reached an app.

use crate::{ErrorCode, Violation};
use serde_json::{Map, Value};

/// A string argument; absent or `null` is `None`, any other type a violation.
pub fn text(args: &Map<String, Value>, key: &str) -> Result<Option<String>, Violation> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(invalid(key, "a string", other)),
    }
}

/// A string argument that must be given.
pub fn required(args: &Map<String, Value>, key: &str) -> Result<String, Violation> {
    text(args, key)?.ok_or_else(|| {
        Violation::new(ErrorCode::InvalidParam, format!("{key} is required")).field(key).expected("a string")
    })
}

/// A whole number argument, zero or more.
pub fn number(args: &Map<String, Value>, key: &str) -> Result<Option<u64>, Violation> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) if n.is_u64() => Ok(n.as_u64()),
        Some(other) => Err(invalid(key, "a positive whole number", other)),
    }
}

/// An object argument, such as a record or an operation's params.
pub fn object(args: &Map<String, Value>, key: &str, expected: &str) -> Result<Option<Map<String, Value>>, Violation> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(map)) => Ok(Some(map.clone())),
        Some(other) => Err(invalid(key, expected, other)),
    }
}

/// One violation per argument that `properties` (a tool's `inputSchema`
/// properties) does not declare, each naming the ones it does. The schemas
/// say `additionalProperties: false`, but hosts need not check it, and an
/// argument read as absent changes the call silently: a misspelled `ifMatch`
/// makes an update unconditional.
pub fn undeclared(args: &Map<String, Value>, properties: &Map<String, Value>) -> Vec<Violation> {
    let known = || properties.keys().map(String::as_str).collect::<Vec<_>>().join(", ");
    args.iter()
        .filter(|(key, _)| !properties.contains_key(*key))
        .map(|(key, got)| {
            Violation::new(ErrorCode::InvalidParam, format!("this tool has no argument {key}; it takes: {}", known()))
                .field(key)
                .got(got.clone())
        })
        .collect()
}

/// `key` must be `expected` and was `got`.
pub fn invalid(key: &str, expected: &str, got: &Value) -> Violation {
    Violation::new(ErrorCode::InvalidParam, format!("{key} must be {expected}"))
        .field(key)
        .expected(expected)
        .got(got.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arguments_the_schema_does_not_declare_are_each_refused_by_name() {
        let properties = json!({"id": {}, "ifMatch": {}}).as_object().cloned().unwrap_or_default();
        let args = json!({"id": "x", "if_match": "t", "limit": 5}).as_object().cloned().unwrap_or_default();
        let found: Vec<(Option<String>, String, Option<Value>)> =
            undeclared(&args, &properties).into_iter().map(|v| (v.field, v.message, v.got)).collect();
        assert_eq!(
            found,
            [
                (
                    Some("if_match".into()),
                    "this tool has no argument if_match; it takes: id, ifMatch".into(),
                    Some(json!("t"))
                ),
                (Some("limit".into()), "this tool has no argument limit; it takes: id, ifMatch".into(), Some(json!(5))),
            ]
        );
        assert!(undeclared(&json!({"ifMatch": "t"}).as_object().cloned().unwrap_or_default(), &properties).is_empty());
    }

    #[test]
    fn each_kind_refuses_the_other_types_by_name() {
        let args =
            json!({"s": "x", "n": 3, "neg": -1, "o": {"a": 1}, "null": null}).as_object().cloned().unwrap_or_default();
        assert_eq!(text(&args, "s"), Ok(Some("x".into())));
        assert_eq!(text(&args, "null"), Ok(None));
        assert_eq!(text(&args, "absent"), Ok(None));
        let bad = text(&args, "n").unwrap_err();
        assert_eq!((bad.code, bad.field.as_deref(), bad.got), (ErrorCode::InvalidParam, Some("n"), Some(json!(3))));
        assert_eq!(required(&args, "absent").unwrap_err().message, "absent is required");
        assert_eq!(number(&args, "n"), Ok(Some(3)));
        assert_eq!(number(&args, "neg").unwrap_err().expected.as_deref(), Some("a positive whole number"));
        assert_eq!(object(&args, "o", "an object").unwrap().map(|m| m.len()), Some(1));
        assert_eq!(
            object(&args, "s", "an object of field values").unwrap_err().message,
            "s must be an object of field values"
        );
    }
}
