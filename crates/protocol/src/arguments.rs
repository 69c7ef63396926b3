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
