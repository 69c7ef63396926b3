//! The one error-code table and the error envelope.
//!
//! Every rejection the app makes, on every transport, carries an [`ErrorCode`]
//! from this table. A code's HTTP status is decided here and nowhere else.
//! Add a code only by adding a row to `error_codes!`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

macro_rules! error_codes {
    ($( $variant:ident = ($name:literal, $status:literal) ),+ $(,)?) => {
        /// A machine-readable reason for a rejection. Branch on this, never on prose.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum ErrorCode {
            $( #[serde(rename = $name)] $variant, )+
        }

        impl ErrorCode {
            /// Every code, in table order.
            pub const ALL: &'static [ErrorCode] = &[ $( ErrorCode::$variant, )+ ];

            /// The snake_case name sent on the wire.
            pub fn as_str(self) -> &'static str {
                match self { $( ErrorCode::$variant => $name, )+ }
            }

            /// The HTTP status this code is answered with.
            pub fn status(self) -> u16 {
                match self { $( ErrorCode::$variant => $status, )+ }
            }

            /// Looks a code up by its wire name.
            pub fn from_name(name: &str) -> Option<ErrorCode> {
                match name { $( $name => Some(ErrorCode::$variant), )+ _ => None }
            }
        }
    };
}

error_codes! {
    // The guard: one per kind of bad value.
    UnknownField = ("unknown_field", 400),
    ReadOnlyField = ("read_only_field", 400),
    RequiredField = ("required_field", 400),
    InvalidString = ("invalid_string", 400),
    // Text holding a control character a person cannot see (not tab or newline).
    InvalidText = ("invalid_text", 400),
    InvalidNumber = ("invalid_number", 400),
    InvalidBoolean = ("invalid_boolean", 400),
    InvalidDate = ("invalid_date", 400),
    InvalidDaykey = ("invalid_daykey", 400),
    InvalidEnum = ("invalid_enum", 400),
    InvalidRef = ("invalid_ref", 400),
    TooLong = ("too_long", 400),
    OutOfRange = ("out_of_range", 400),
    InvalidJson = ("invalid_json", 400),
    // After the store: the read-back found a value that did not land.
    NotStored = ("not_stored", 500),
    DuplicateRequest = ("duplicate_request", 409),
    DuplicateId = ("duplicate_id", 409),
    InUse = ("in_use", 409),
    NotUnique = ("not_unique", 409),
    AuthFailed = ("auth_failed", 400),
    VersionConflict = ("version_conflict", 409),
    // Addressing and queries.
    UnknownEntity = ("unknown_entity", 404),
    UnknownOperation = ("unknown_operation", 404),
    InvalidParam = ("invalid_param", 400),
    NotFound = ("not_found", 404),
    MethodNotAllowed = ("method_not_allowed", 405),
    InvalidFilter = ("invalid_filter", 400),
    InvalidQuery = ("invalid_query", 400),
    // An `expand` whose answer would pass the per-answer budget of records or bytes.
    ExpandTooLarge = ("expand_too_large", 400),
    // Requests the HTTP layer could not read: a target past 64 KiB, a head
    // past the read buffer, bytes that are no HTTP request.
    UriTooLong = ("uri_too_long", 414),
    HeadersTooLarge = ("headers_too_large", 431),
    MalformedRequest = ("malformed_request", 400),
    // A2UI surfaces: messages checked against the catalog the app draws.
    UnknownSurface = ("unknown_surface", 404),
    UnknownComponent = ("unknown_component", 400),
    UnknownProperty = ("unknown_property", 400),
    InvalidProperty = ("invalid_property", 400),
    DanglingReference = ("dangling_reference", 400),
    WrongCatalog = ("wrong_catalog", 400),
    RefusedFunction = ("refused_function", 400),
    UnknownAction = ("unknown_action", 400),
    // The app-to-agent queue.
    UnknownCapability = ("unknown_capability", 404),
    RequestClaimed = ("request_claimed", 409),
    RequestClosed = ("request_closed", 409),
    // Who may do what.
    ForbiddenOrigin = ("forbidden_origin", 403),
    ForbiddenHost = ("forbidden_host", 403),
    Unauthorized = ("unauthorized", 401),
    Forbidden = ("forbidden", 403),
    InsufficientScope = ("insufficient_scope", 403),
    ApprovalRequired = ("approval_required", 428),
    // An approval key that does not authorize this call: other params, another
    // operation, already used, or expired.
    ApprovalInvalid = ("approval_invalid", 403),
    RateLimited = ("rate_limited", 429),
    PayloadTooLarge = ("payload_too_large", 413),
    UnsupportedMediaType = ("unsupported_media_type", 415),
    // The app's own backend process (operations with an `http` executor).
    BackendError = ("backend_error", 502),
    BackendUnavailable = ("backend_unavailable", 503),
    BackendTimeout = ("backend_timeout", 504),
    // Everything unexpected. Never carries detail.
    Internal = ("internal", 500),
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One problem with one field (or with the whole body when `field` is absent).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Violation {
    pub code: ErrorCode,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub got: Option<Value>,
    pub message: String,
}

impl Violation {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Violation { code, field: None, expected: None, got: None, message: message.into() }
    }

    pub fn field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    pub fn expected(mut self, expected: impl Into<String>) -> Self {
        self.expected = Some(expected.into());
        self
    }

    pub fn got(mut self, got: Value) -> Self {
        self.got = Some(got);
        self
    }
}

/// The error envelope every non-2xx answer carries.
///
/// It is a superset of PocketBase's `{status, message, data}` so PocketBase
/// SDKs read it unchanged, plus the A2App marker, the code of the first
/// violation and the full `violations` list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub a2app: bool,
    pub ok: bool,
    pub code: ErrorCode,
    pub status: u16,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub got: Option<Value>,
    #[serde(default)]
    pub violations: Vec<Violation>,
    /// PocketBase's per-field map: `{field: {code, message}}`.
    #[serde(default)]
    pub data: Map<String, Value>,
    /// Code-specific context, e.g. `record` for `version_conflict`.
    #[serde(flatten, default)]
    pub extra: Map<String, Value>,
}

impl ErrorBody {
    /// An envelope for a single problem not tied to a field.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::from_violations(code, message, Vec::new())
    }

    /// An envelope listing every violation; the first one is echoed at the top level.
    pub fn from_violations(code: ErrorCode, message: impl Into<String>, violations: Vec<Violation>) -> Self {
        let first = violations.first().cloned();
        let mut data = Map::new();
        for v in &violations {
            if let Some(field) = &v.field {
                data.entry(field.clone())
                    .or_insert_with(|| serde_json::json!({ "code": v.code.as_str(), "message": v.message }));
            }
        }
        ErrorBody {
            a2app: true,
            ok: false,
            code,
            status: code.status(),
            message: message.into(),
            field: first.as_ref().and_then(|v| v.field.clone()),
            expected: first.as_ref().and_then(|v| v.expected.clone()),
            got: first.and_then(|v| v.got),
            violations,
            data,
            extra: Map::new(),
        }
    }

    pub fn with_extra(mut self, key: &str, value: Value) -> Self {
        self.extra.insert(key.to_owned(), value);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for code in ErrorCode::ALL {
            assert!(seen.insert(code.as_str()), "duplicate {code}");
            assert_eq!(ErrorCode::from_name(code.as_str()), Some(*code));
            let json = serde_json::to_value(code).unwrap();
            assert_eq!(json, Value::String(code.as_str().to_owned()));
        }
    }

    #[test]
    fn envelope_echoes_first_violation_and_fills_pocketbase_data() {
        let body = ErrorBody::from_violations(
            ErrorCode::InvalidDate,
            "2 problems",
            vec![
                Violation::new(ErrorCode::InvalidDate, "not a date")
                    .field("due_date")
                    .expected("an ISO 8601 date")
                    .got(Value::from("tomorrow")),
                Violation::new(ErrorCode::UnknownField, "no such field").field("bogus"),
            ],
        );
        let v = serde_json::to_value(&body).unwrap();
        assert_eq!(v["a2app"], true);
        assert_eq!(v["ok"], false);
        assert_eq!(v["status"], 400);
        assert_eq!(v["code"], "invalid_date");
        assert_eq!(v["field"], "due_date");
        assert_eq!(v["got"], "tomorrow");
        assert_eq!(v["violations"].as_array().unwrap().len(), 2);
        assert_eq!(v["data"]["bogus"]["code"], "unknown_field");
    }
}
