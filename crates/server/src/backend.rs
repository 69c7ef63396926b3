//! The app's own backend process, reached over HTTP: the server's
//! implementation of `a2app_core::operations::Backend`.
//!
//! Params go as a JSON body (POST, PUT, PATCH) or as the query string (GET,
//! DELETE). The caller's identity goes along in headers (`X-A2App-Caller`,
//! `X-A2App-Agent`, `X-A2App-User`, `X-A2App-Operation`); the agent token
//! never does. Each call has the operation's timeout and reads at most
//! `MAX_BACKEND_RESPONSE` bytes of the answer.

use a2app_core::app::operations::Route;
use a2app_core::operations::{Backend, BackendError, BackendRequest, BackendResponse, BoxFuture, MAX_BACKEND_RESPONSE};
use serde_json::Value;
use std::time::Duration;

/// Where a backend may advertise its routes: `[{"method": "POST", "path": "/x"}]`.
pub const ROUTES_PATH: &str = "/_routes";

pub struct HttpBackend {
    base: String,
    /// `Err` when the client could not be built; every call then says so.
    http: Result<reqwest::Client, String>,
}

impl HttpBackend {
    /// `base` is `[backend] url` from app.toml.
    pub fn new(base: &str) -> HttpBackend {
        // This workspace's reqwest has no built-in TLS provider (see
        // docs/decisions/0003) and panics building any client until one is
        // installed; installing ring's is idempotent.
        let _ = rustls::crypto::ring::default_provider().install_default();
        // No redirects: the backend is the app's own process, and following
        // one could send the caller's identity somewhere else.
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| {
                tracing::error!(error = %e, "cannot build the backend's HTTP client");
                e.to_string()
            });
        HttpBackend { base: base.trim_end_matches('/').to_owned(), http }
    }

    fn client(&self) -> Result<&reqwest::Client, BackendError> {
        self.http.as_ref().map_err(|e| BackendError::Unreachable(format!("no HTTP client: {e}")))
    }

    async fn send(&self, request: reqwest::RequestBuilder) -> Result<BackendResponse, BackendError> {
        let mut response = request.send().await.map_err(classify)?;
        let status = response.status().as_u16();
        let too_large = || BackendError::Unreadable { status, why: format!("more than {MAX_BACKEND_RESPONSE} bytes") };
        if response.content_length().is_some_and(|n| n > MAX_BACKEND_RESPONSE as u64) {
            return Err(too_large());
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| match classify(e) {
            // The status came: what broke is the answer, not the call.
            BackendError::Timeout => BackendError::Unreadable { status, why: "it stopped coming in time".into() },
            other => BackendError::Unreadable { status, why: other.to_string() },
        })? {
            if bytes.len() + chunk.len() > MAX_BACKEND_RESPONSE {
                return Err(too_large());
            }
            bytes.extend_from_slice(&chunk);
        }
        let body = if bytes.iter().all(u8::is_ascii_whitespace) {
            Value::Null
        } else {
            serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()))
        };
        Ok(BackendResponse { status, body })
    }
}

/// What an `X-A2App-Agent` header may not carry as it is: control bytes (and,
/// by `utf8_percent_encode`, every non-ASCII byte). `%` itself is escaped so
/// the backend decodes the header without ambiguity.
const AGENT_ESCAPED: &percent_encoding::AsciiSet = &percent_encoding::CONTROLS.add(b'%');

/// The agent's name as a header value: a grant's name may be any plain text
/// ("Zoë's bot"), which a header cannot hold, so it is percent-encoded (UTF-8)
/// rather than failing the call as an unreachable backend.
fn agent_header(agent: &str) -> String {
    percent_encoding::utf8_percent_encode(agent, AGENT_ESCAPED).to_string()
}

/// A failed call: nothing sent (no connection), or sent and unanswered.
fn classify(e: reqwest::Error) -> BackendError {
    if e.is_timeout() {
        BackendError::Timeout
    } else if e.is_connect() {
        BackendError::Unreachable(e.to_string())
    } else {
        BackendError::Lost(e.to_string())
    }
}

impl Backend for HttpBackend {
    fn call(&self, request: BackendRequest) -> BoxFuture<'_, Result<BackendResponse, BackendError>> {
        Box::pin(async move {
            let mut url = format!("{}{}", self.base, request.path);
            if !request.query.is_empty() {
                let query = serde_urlencoded::to_string(&request.query)
                    .map_err(|e| BackendError::Unreachable(format!("query: {e}")))?;
                url.push('?');
                url.push_str(&query);
            }
            let method = reqwest::Method::from_bytes(request.method.as_bytes())
                .map_err(|e| BackendError::Unreachable(format!("method: {e}")))?;
            let mut builder = self
                .client()?
                .request(method, url)
                .timeout(request.timeout)
                .header("accept", "application/json")
                .header("x-a2app-operation", &request.operation)
                .header("x-a2app-caller", request.caller.label());
            if let Some(agent) = &request.caller.agent {
                builder = builder.header("x-a2app-agent", agent_header(agent));
            }
            if let Some(key) = &request.key {
                builder = builder.header("idempotency-key", key);
            }
            if let Some(user) = &request.caller.user {
                builder = builder.header("x-a2app-user", &user.id);
            }
            if let Some(body) = &request.body {
                builder = builder.header("content-type", "application/json").body(body.to_string());
            }
            self.send(builder).await
        })
    }

    fn routes(&self) -> BoxFuture<'_, Result<Option<Vec<Route>>, BackendError>> {
        Box::pin(async move {
            let request = self.client()?.get(format!("{}{ROUTES_PATH}", self.base)).timeout(Duration::from_secs(5));
            let answer = self.send(request).await?;
            if answer.status == 404 {
                return Ok(None);
            }
            if !(200..300).contains(&answer.status) {
                return Err(BackendError::Unreachable(format!("{ROUTES_PATH} answered {}", answer.status)));
            }
            serde_json::from_value(answer.body)
                .map(Some)
                .map_err(|e| BackendError::Unreachable(format!("{ROUTES_PATH} is not a list of {{method, path}}: {e}")))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agent_name_a_header_cannot_hold_is_percent_encoded() {
        assert_eq!(agent_header("claude-code/1.2 (ci)"), "claude-code/1.2 (ci)");
        assert_eq!(agent_header("Zoë's bot"), "Zo%C3%AB's bot");
        assert_eq!(agent_header("50% sure\tnow"), "50%25 sure%09now");
        for name in ["Zoë's bot", "50% sure\tnow", "\u{1F916}"] {
            let value = agent_header(name);
            assert!(reqwest::header::HeaderValue::from_str(&value).is_ok(), "{value}");
            assert_eq!(percent_encoding::percent_decode_str(&value).decode_utf8().unwrap(), name);
        }
    }
}
