//! The identity gate: is the thing at this URL an A2App we can talk to?
//!
//! An app is recognized only by the `a2app: true` marker in a 2xx answer to
//! `GET /api/_a2app`, with a protocol version this client speaks exactly.
//! Other answers are diagnosed precisely, since each has a different fix.

use protocol::identity::Identity;
use serde_json::Value;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GateError {
    #[error(
        "the app is real and running but does not answer to this host name; its owner must add it to [http] allowed_hosts"
    )]
    ForbiddenHost { host: Option<String> },
    #[error(
        "a proxy or tunnel in front of the app asked for credentials (HTTP 401); the identity document itself is public"
    )]
    ProxyAuth,
    #[error("this is not an A2App: {0}")]
    NotAnApp(String),
    #[error("the app speaks protocol {got}; this client speaks {}", crate::SUPPORTED_PROTOCOLS.join(", "))]
    UnsupportedProtocol { got: String },
}

/// Judges one answer to `GET /api/_a2app`.
pub fn check(status: u16, body: &[u8]) -> Result<Identity, GateError> {
    let json: Option<Value> = serde_json::from_slice(body).ok();
    let marker = json.as_ref().and_then(|v| v.get("a2app")).and_then(Value::as_bool) == Some(true);
    if status == 403
        && marker
        && json.as_ref().and_then(|v| v.get("code")).and_then(Value::as_str) == Some("forbidden_host")
    {
        let host = json.as_ref().and_then(|v| v.get("host")).and_then(Value::as_str).map(str::to_owned);
        return Err(GateError::ForbiddenHost { host });
    }
    if status == 401 {
        return Err(GateError::ProxyAuth);
    }
    let Some(json) = json else {
        let looks_html =
            body.iter().take(512).copied().collect::<Vec<u8>>().to_ascii_lowercase().windows(5).any(|w| w == b"<html");
        let what = if looks_html { "the answer is an HTML page" } else { "the answer is not JSON" };
        return Err(GateError::NotAnApp(what.into()));
    };
    if !(200..300).contains(&status) {
        return Err(GateError::NotAnApp(format!("the identity document answered HTTP {status}")));
    }
    if !marker {
        return Err(GateError::NotAnApp("the answer has no \"a2app\": true marker".into()));
    }
    let identity: Identity = serde_json::from_value(json)
        .map_err(|e| GateError::NotAnApp(format!("the identity document is incomplete: {e}")))?;
    if !crate::SUPPORTED_PROTOCOLS.contains(&identity.protocol.as_str()) {
        return Err(GateError::UnsupportedProtocol { got: identity.protocol });
    }
    if identity.app.id.is_empty() {
        return Err(GateError::NotAnApp("the identity document has no app.id".into()));
    }
    Ok(identity)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"{"a2app":true,"protocol":"1.0","adapterVersion":"0.1.0","app":{"id":"kanban","name":"K","pbVersion":"0.40.6"},"schemaVersion":"sv_1","serverNow":"2026-07-30 09:15:00.000Z","serverTzOffsetMinutes":60}"#;

    #[test]
    fn accepts_a_marked_2xx_identity() {
        assert_eq!(check(200, GOOD.as_bytes()).unwrap().app.id, "kanban");
    }

    #[test]
    fn diagnoses_each_failure() {
        assert_eq!(
            check(200, b"<!doctype html><html></html>"),
            Err(GateError::NotAnApp("the answer is an HTML page".into()))
        );
        assert_eq!(check(401, b"Unauthorized"), Err(GateError::ProxyAuth));
        assert_eq!(
            check(403, br#"{"a2app":true,"ok":false,"code":"forbidden_host","host":"box.lan"}"#),
            Err(GateError::ForbiddenHost { host: Some("box.lan".into()) })
        );
        assert_eq!(
            check(500, GOOD.as_bytes()),
            Err(GateError::NotAnApp("the identity document answered HTTP 500".into()))
        );
        assert_eq!(
            check(200, GOOD.replace("\"a2app\":true", "\"a2app\":false").as_bytes()),
            Err(GateError::NotAnApp("the answer has no \"a2app\": true marker".into()))
        );
        assert_eq!(
            check(200, GOOD.replace("\"1.0\"", "\"2.0\"").as_bytes()),
            Err(GateError::UnsupportedProtocol { got: "2.0".into() })
        );
    }
}
