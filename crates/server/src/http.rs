//! The HTTP surface: routes, the error envelope, body decoding and the caller.

pub mod approvals;
pub mod auth;
pub mod claims;
pub mod connection;
pub mod dashboard;
pub mod discovery;
pub mod grants;
pub mod identity;
pub mod oauth;
pub mod ops;
pub mod records;
pub mod requests;
pub mod source;
pub mod surfaces;

use crate::realtime::Realtime;
use a2app_core::access::{Credentials, Intent};
use a2app_core::caller::{Caller, RequestParts};
use a2app_core::{App, Error};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Request};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use serde_json::Value;
use std::sync::Arc;

/// The largest JSON body accepted.
pub const MAX_BODY: usize = 1 << 20;
/// The largest multipart body (files of binary fields) accepted.
pub const MAX_UPLOAD: usize = 32 << 20;

#[derive(Clone)]
pub struct State {
    pub app: Arc<App>,
    /// The port we listen on, to recognize the app's own origin.
    pub port: u16,
    pub realtime: Arc<Realtime>,
    /// When the discovery documents last changed.
    pub started: Arc<discovery::Started>,
    /// Who opened each legacy-era MCP session.
    pub mcp_sessions: Arc<crate::mcp::sessions::Sessions>,
}

impl State {
    pub fn new(app: Arc<App>, port: u16) -> State {
        let realtime = Arc::new(Realtime::new(&app));
        let started = Arc::new(discovery::Started::of(&app));
        State { app, port, realtime, started, mcp_sessions: Arc::default() }
    }
}

pub fn router(state: State) -> Router {
    let api = Router::new()
        .route("/api/health", get(identity::health))
        .route("/api/_a2app", get(identity::identity))
        .route("/api/_a2app/describe", get(identity::describe))
        .route("/api/_a2app/describe/{*path}", get(identity::describe_part))
        .route("/api/_a2app/whoami", get(identity::whoami))
        .route("/api/_a2app/receipts", get(identity::receipts))
        .route("/api/_a2app/actions", get(identity::actions))
        .route("/api/_a2app/claims", get(claims::checks).post(claims::check))
        .route("/api/_a2app/refusals", get(claims::refusals))
        .route("/api/_a2app/surfaces", get(surfaces::list).post(surfaces::render))
        .route("/api/_a2app/a2ui/catalog", get(surfaces::catalog))
        .route("/api/_a2app/grants", get(grants::list).post(grants::ask))
        .route("/api/_a2app/approvals", get(approvals::list))
        .route("/api/_a2app/approvals/{key}/approve", post(approvals::approve))
        .route("/api/_a2app/approvals/{key}/deny", post(approvals::deny))
        .route("/api/_a2app/grants/deny-pending", post(grants::deny_pending))
        .route("/api/_a2app/grants/{id}", get(grants::get))
        .route("/api/_a2app/grants/{id}/approve", post(grants::approve))
        .route("/api/_a2app/grants/{id}/deny", post(grants::deny))
        .route("/api/_a2app/grants/{id}/revoke", post(grants::revoke))
        .route("/api/_a2app/grants/{id}/token", post(grants::token))
        .route("/api/_a2app/requests", get(requests::list).post(requests::ask))
        .route("/api/_a2app/requests/{id}", get(requests::get))
        .route("/api/_a2app/requests/{id}/claim", post(requests::claim))
        .route("/api/_a2app/requests/{id}/answer", post(requests::answer))
        .route("/api/_a2app/requests/{id}/cancel", post(requests::cancel))
        .route("/api/_a2app/surfaces/{id}", get(surfaces::get))
        .route("/api/collections/{entity}/records", get(records::list).post(records::create))
        .route(
            "/api/collections/{entity}/records/{id}",
            get(records::view).patch(records::update).delete(records::delete),
        )
        .route("/api/_ops", get(ops::list))
        .route("/api/ops/{name}", post(ops::invoke))
        .route("/api/_jobs/{id}", get(ops::job))
        .route("/api/collections/{entity}/auth-with-password", post(auth::with_password))
        .route("/api/collections/{entity}/auth-refresh", post(auth::refresh))
        .route("/api/realtime", get(crate::realtime::connect).post(crate::realtime::subscribe))
        .route("/api/{*rest}", any(api_not_found))
        .route("/api/files/{entity}/{id}/{name}", get(records::file))
        // Multipart bodies carry files; JSON bodies are held to MAX_BODY by `json_body`.
        .layer(DefaultBodyLimit::max(MAX_UPLOAD));
    let mut router = Router::new()
        .merge(api)
        .merge(dashboard::routes())
        .route(discovery::CATALOG_PATH, get(discovery::catalog).options(discovery::preflight))
        .route(discovery::CARD_PATH, get(discovery::card).options(discovery::preflight))
        .merge(oauth::routes());
    let ui = state.app.definition.ui_dir();
    if ui.join("index.html").is_file() {
        router = router.fallback_service(tower_http::services::ServeDir::new(ui));
    } else {
        router = router.route("/", get(discovery::landing)).fallback(api_not_found);
    }
    let mcp = crate::mcp::router(&state);
    // MCP answers with its own (JSON-RPC) errors, so it is merged after the envelope layer.
    router
        .layer(middleware::from_fn(discovery::link))
        .layer(middleware::from_fn(envelope_errors))
        .layer(middleware::from_fn_with_state(state.clone(), cors))
        .with_state(state)
        .merge(mcp)
        .layer(middleware::from_fn(connection::close_unread))
}

/// CORS for the origins app.toml allows. The app's own page is same-origin and
/// needs none; any other origin gets no CORS headers, and its preflight is
/// refused with the envelope, so a browser never lets a foreign page through.
async fn cors(axum::extract::State(state): axum::extract::State<State>, request: Request, next: Next) -> Response {
    let origin = request.headers().get(header::ORIGIN).and_then(|v| v.to_str().ok()).map(str::to_owned);
    // The discovery documents are public: they send their own `*` CORS headers.
    let public = discovery::is_public(request.uri().path());
    let Some(origin) = origin.filter(|_| !public) else { return next.run(request).await };
    let host = request.headers().get(header::HOST).and_then(|v| v.to_str().ok()).unwrap_or("");
    let allowed = a2app_core::access::origin_allowed(&state.app, &origin, host, state.port);
    let preflight = request.method() == axum::http::Method::OPTIONS
        && request.headers().contains_key(header::ACCESS_CONTROL_REQUEST_METHOD);
    if preflight && !allowed {
        return ApiError(Error::ForbiddenOrigin(origin)).into_response();
    }
    let mut response = if preflight { StatusCode::NO_CONTENT.into_response() } else { next.run(request).await };
    if allowed {
        let h = response.headers_mut();
        if let Ok(v) = HeaderValue::from_str(&origin) {
            h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, v);
        }
        h.insert(header::VARY, HeaderValue::from_static("Origin"));
        if preflight {
            h.insert(header::ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static("GET, POST, PATCH, DELETE"));
            h.insert(
                header::ACCESS_CONTROL_ALLOW_HEADERS,
                HeaderValue::from_static(
                    "content-type, authorization, idempotency-key, if-match, x-lui-agent, x-a2app-agent",
                ),
            );
            h.insert(header::ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("600"));
        }
    }
    response
}

/// An error on its way out: the envelope with the code's status.
pub struct ApiError(pub Error);

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        ApiError(e)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if let Error::Internal(detail) = &self.0 {
            // Logged once here, with detail; the caller sees a generic message.
            tracing::error!(%detail, "internal error");
        }
        let body = self.0.to_body();
        let status = StatusCode::from_u16(body.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut response = (status, axum::Json(body)).into_response();
        match self.0 {
            Error::RateLimited(secs) => {
                response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
            }
            // A 401 names how to authenticate (RFC 9110 §11.6.1); MCP's
            // challenge replaces it with where to sign in.
            Error::Unauthorized(_) => {
                response
                    .headers_mut()
                    .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer realm=\"a2app\""));
            }
            _ => {}
        }
        response
    }
}

pub type ApiResult<T> = Result<T, ApiError>;

async fn api_not_found() -> ApiError {
    ApiError(Error::NotFound)
}

/// Rewrites axum's own plain-text rejections (405, 413, …) into the envelope.
async fn envelope_errors(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let status = response.status();
    let is_json =
        response.headers().get(header::CONTENT_TYPE).is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if is_json || status.is_success() || status.is_redirection() || status == StatusCode::NOT_MODIFIED {
        return response;
    }
    let error = match status {
        StatusCode::PAYLOAD_TOO_LARGE => Error::PayloadTooLarge(MAX_BODY),
        StatusCode::METHOD_NOT_ALLOWED => {
            let body = protocol::ErrorBody::new(
                protocol::ErrorCode::MethodNotAllowed,
                "this method is not allowed on this path",
            );
            return (status, axum::Json(body)).into_response();
        }
        StatusCode::NOT_FOUND => Error::NotFound,
        s if s.is_server_error() => Error::Internal(format!("unexpected status {s}")),
        _ => return response,
    };
    ApiError(error).into_response()
}

/// A header a write's meaning depends on (`Idempotency-Key`, `If-Match`,
/// `X-A2App-Approval`): `None` when absent, refused when its bytes are not
/// printable ASCII. Read as absent, it would run the write without the
/// protection the caller asked for (a retry stored twice, an update made
/// unconditional) and answer 200.
pub(crate) fn meaning_header(headers: &HeaderMap, name: &str) -> Result<Option<String>, Error> {
    match headers.get(name) {
        None => Ok(None),
        Some(v) => v
            .to_str()
            .map(|s| Some(s.to_owned()))
            .map_err(|_| Error::InvalidQuery(format!("the {name} header must be printable ASCII"))),
    }
}

/// How a refusal names a `Host` or `Origin` that is not printable ASCII:
/// its bytes are not echoed back.
pub(crate) const UNREADABLE: &str = "(not printable ASCII)";

/// What the request tells about its caller. A header that is there but
/// cannot be read is refused, never taken for absent: an `Authorization` that
/// is not ASCII would make a signed-in user anonymous, an `Origin` nobody's.
pub fn credentials(state: &State, headers: &HeaderMap) -> Result<Credentials, Error> {
    credentials_seeing(state, headers, None)
}

/// Whether `word` is an auth scheme's name (RFC 9110 §11.1: a token), as in
/// `Basic dXNlcjpw`: a bare token of the app's has no space in it.
fn is_scheme(word: &str) -> bool {
    !word.is_empty() && word.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// [`credentials`] of a request whose query string a filter or rule may read.
fn credentials_seeing(state: &State, headers: &HeaderMap, query: Option<&str>) -> Result<Credentials, Error> {
    // The header's text; `Err` when it is there but not printable ASCII.
    let ascii = |name: &str| -> Result<Option<String>, ()> {
        headers.get(name).map(|v| v.to_str().map(str::to_owned).map_err(|_| ())).transpose()
    };
    let credential = |name: &str, header: &str| {
        ascii(header).map_err(|_| {
            Error::Unauthorized(format!(
                "the {name} header holds bytes outside printable ASCII, which no credential has"
            ))
        })
    };
    // PocketBase clients send the bare token; MCP hosts send `Bearer <token>`.
    // The scheme is case-insensitive (RFC 9110 §11.1). Another scheme
    // (`Basic …`) is for a proxy in front of the app, which may pass it on:
    // no credential of the app's has one.
    let authorization = credential("Authorization", "authorization")?
        .and_then(|a| match a.split_once(' ') {
            Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") => Some(token.trim().to_owned()),
            Some((scheme, _)) if is_scheme(scheme) => None,
            _ => Some(a),
        })
        .filter(|a| !a.trim().is_empty());
    let token = match credential("X-LUI-Token", "x-lui-token")? {
        Some(token) => Some(token),
        None => credential("X-A2App-Token", "x-a2app-token")?,
    };
    // A name is text a person reads: UTF-8, as clients send it.
    let agent = match headers.get("x-lui-agent").or_else(|| headers.get("x-a2app-agent")) {
        None => None,
        Some(v) => Some(
            std::str::from_utf8(v.as_bytes())
                .map_err(|_| Error::InvalidQuery("the X-LUI-Agent header must be UTF-8 text".into()))?
                .to_owned(),
        ),
    };
    Ok(Credentials {
        host: ascii("host").map_err(|_| Error::ForbiddenHost(UNREADABLE.into()))?,
        origin: ascii("origin").map_err(|_| Error::ForbiddenOrigin(UNREADABLE.into()))?,
        token,
        authorization,
        agent,
        fetch_site: ascii("sec-fetch-site").map_err(|_| Error::ForbiddenOrigin("a page on another site".into()))?,
        port: state.port,
        resource: None,
        request: request_parts(&state.app, headers, query),
    })
}

/// Establishes the caller for a read or a write, or refuses.
pub async fn caller(state: &State, headers: &HeaderMap, intent: Intent) -> ApiResult<Caller> {
    caller_seeing(state, headers, None, intent).await
}

/// [`caller`] for a request whose query string a filter or rule may read
/// (`@request.query.*`): the records routes.
pub async fn caller_seeing(
    state: &State,
    headers: &HeaderMap,
    query: Option<&str>,
    intent: Intent,
) -> ApiResult<Caller> {
    let creds = credentials_seeing(state, headers, query)?;
    Ok(a2app_core::access::authorize(&state.app, &creds, intent).await?)
}

/// What `@request.headers.*` and `@request.query.*` read, as PocketBase
/// names them: header names lower-cased with `-` as `_`, the first value of
/// each header and parameter. Built only when something may read them (a
/// rule of the app, or a filter in the query string), so other requests do
/// not pay for copying their headers.
pub fn request_parts(app: &App, headers: &HeaderMap, query: Option<&str>) -> Option<Arc<RequestParts>> {
    // Any `@request` in a filter reaches the query string as `@` or `%40`:
    // without either, the query is not even decoded.
    let may_name_request =
        |q: &&str| q.contains('@') || q.as_bytes().windows(3).any(|w| w[0] == b'%' && w[1] == b'4' && w[2] == b'0');
    let pairs: Vec<(String, String)> =
        query.filter(may_name_request).and_then(|q| serde_urlencoded::from_str(q).ok()).unwrap_or_default();
    let wanted = a2app_core::rules::reads_request_parts(app) || pairs.iter().any(|(_, v)| v.contains("@request."));
    if !wanted {
        return None;
    }
    let pairs = match (pairs.is_empty(), query) {
        // A rule reads the query although no filter named it: decode it now.
        (true, Some(q)) if !q.is_empty() => serde_urlencoded::from_str(q).unwrap_or_default(),
        _ => pairs,
    };
    let mut parts = RequestParts::default();
    for (name, value) in headers {
        let key = name.as_str().to_ascii_lowercase().replace('-', "_");
        let text = String::from_utf8_lossy(value.as_bytes()).into_owned();
        parts.headers.entry(key).or_insert(Value::String(text));
    }
    for (name, value) in pairs {
        parts.query.entry(name).or_insert(Value::String(value));
    }
    Some(Arc::new(parts))
}

/// Decodes a JSON body without any coercion; bad JSON is `invalid_json`.
/// The body is read as JSON whatever the declared type (curl's `-d` sends a
/// form type), except multipart, which carries files.
pub fn json_body(headers: &HeaderMap, body: &Bytes) -> ApiResult<Value> {
    let (value, inexact) = record_body(headers, body)?;
    if !inexact.is_empty() {
        return Err(ApiError(Error::Invalid(a2app_core::number::violations(&inexact))));
    }
    Ok(value)
}

/// [`json_body`] for a record's values, with the numbers its parse could not
/// keep, which the guard refuses by field with the rest of what it finds.
pub fn record_body(headers: &HeaderMap, body: &Bytes) -> ApiResult<(Value, Vec<a2app_core::number::Inexact>)> {
    if let Some(ct) = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok())
        && ct.starts_with("multipart/")
    {
        let v = protocol::Violation::new(
            protocol::ErrorCode::InvalidJson,
            "send the record as a JSON object (application/json)",
        )
        .expected("application/json");
        return Err(ApiError(Error::Invalid(vec![v])));
    }
    if body.len() > MAX_BODY {
        return Err(ApiError(Error::PayloadTooLarge(MAX_BODY)));
    }
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok((Value::Object(Default::default()), Vec::new()));
    }
    let value = serde_json::from_slice(body).map_err(|e| {
        let v = protocol::Violation::new(protocol::ErrorCode::InvalidJson, format!("the body is not valid JSON: {e}"))
            .expected("a JSON object");
        ApiError(Error::Invalid(vec![v]))
    })?;
    Ok((value, a2app_core::number::inexact(body)))
}

/// A JSON response with a ready-made header value.
pub fn json_response(status: StatusCode, value: &impl serde::Serialize) -> Response {
    match serde_json::to_vec(value) {
        Ok(bytes) => {
            (status, [(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))], bytes).into_response()
        }
        Err(e) => ApiError(Error::Internal(e.to_string())).into_response(),
    }
}
