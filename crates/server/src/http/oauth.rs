//! MCP's OAuth over HTTP (`core::oauth`): the two metadata documents, and
//! the authorization server's registration, authorization, token and
//! revocation endpoints. Everything but `/oauth/authorize` (a browser
//! navigation) is public and answers any origin, as browser-based MCP hosts
//! need; none of it reads a cookie or an ambient credential, so CORS opens
//! nothing.

use super::source::Source;
use super::{ApiError, State};
use a2app_core::oauth::{self, OAuthError};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{RawQuery, State as S};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::Value;
use std::collections::HashMap;

const RESOURCE_ROOT: &str = "/.well-known/oauth-protected-resource";
const RESOURCE_MCP: &str = "/.well-known/oauth-protected-resource/mcp";
const SERVER: &str = "/.well-known/oauth-authorization-server";
const REGISTER: &str = "/oauth/register";
const TOKEN: &str = "/oauth/token";
const REVOKE: &str = "/oauth/revoke";

pub fn routes() -> Router<State> {
    Router::new()
        .route(RESOURCE_ROOT, get(protected_resource).options(preflight))
        .route(RESOURCE_MCP, get(protected_resource).options(preflight))
        .route(SERVER, get(authorization_server).options(preflight))
        .route(REGISTER, post(register).options(preflight))
        .route("/oauth/authorize", get(authorize))
        .route(TOKEN, post(token).options(preflight))
        .route(REVOKE, post(revoke).options(preflight))
}

/// The paths that send their own `*` CORS headers.
pub fn is_public(path: &str) -> bool {
    [RESOURCE_ROOT, RESOURCE_MCP, SERVER, REGISTER, TOKEN, REVOKE].contains(&path)
}

/// The app's URL as this request reaches it (issuer, resource).
pub fn base(state: &State, headers: &HeaderMap) -> Result<String, a2app_core::Error> {
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok()).unwrap_or("");
    a2app_core::access::base_url(&state.app, host)
}

async fn protected_resource(S(state): S<State>, headers: HeaderMap) -> Response {
    match base(&state, &headers) {
        Ok(base) => public(StatusCode::OK, &oauth::protected_resource(&state.app, &base)),
        Err(e) => ApiError(e).into_response(),
    }
}

async fn authorization_server(S(state): S<State>, headers: HeaderMap) -> Response {
    match base(&state, &headers) {
        Ok(base) => public(StatusCode::OK, &oauth::authorization_server(&state.app, &base)),
        Err(e) => ApiError(e).into_response(),
    }
}

async fn register(S(state): S<State>, headers: HeaderMap, body: Bytes) -> Response {
    if let Err(e) = base(&state, &headers) {
        return ApiError(e).into_response();
    }
    let answer = match serde_json::from_slice::<Value>(&body) {
        Ok(body) => oauth::register(&state.app, &body).await,
        Err(_) => Err(OAuthError {
            status: 400,
            error: "invalid_client_metadata",
            description: "the registration is a JSON object of client metadata".into(),
        }),
    };
    match answer {
        Ok(client) => public(StatusCode::CREATED, &client),
        Err(e) => refusal(&e),
    }
}

/// The person's browser arrives here from the client: to the consent
/// screen for the new pending grant, or an error shown to them.
async fn authorize(S(state): S<State>, source: Source, headers: HeaderMap, RawQuery(query): RawQuery) -> Response {
    let base = match base(&state, &headers) {
        Ok(b) => b,
        Err(e) => return ApiError(e).into_response(),
    };
    let params = match parameters(query.unwrap_or_default().as_bytes()) {
        Ok(params) => params,
        Err(why) => return shown(&OAuthError { status: 400, error: "invalid_request", description: why }),
    };
    // A sign-in is a page the person opens. A browser says what a request is
    // for: another page's image, script or frame must not leave pending
    // grants behind (the consent page refuses to be framed, but a framed
    // request would already have made one).
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let mode_ok = header("sec-fetch-mode").is_none_or(|m| m == "navigate");
    let dest_ok = header("sec-fetch-dest").is_none_or(|d| d == "document");
    if !(mode_ok && dest_ok) {
        return shown(&OAuthError {
            status: 400,
            error: "invalid_request",
            description: "open the authorization URL as a page of its own".into(),
        });
    }
    if let Err(e) = oauth::admit(&state.app, "sign-ins") {
        return shown(&e);
    }
    let asked = match oauth::check(&state.app, &base, &params) {
        Ok(asked) => asked,
        Err(e) => return shown(&e),
    };
    // A client named by its metadata document's URL: read it, guarded as
    // discovery is (no private or metadata addresses, no redirect; local
    // addresses only when the app allows them for development).
    let document = match params.get("client_id").filter(|id| oauth::is_document_id(id)) {
        Some(url) => {
            let local = state.app.definition.config.mcp.local_client_documents;
            match document_url(url, local) {
                Ok(()) => Some(a2app_client::discovery::fetch_json(url, local).await.map_err(|e| e.to_string())),
                Err(why) => Some(Err(why)),
            }
        }
        None => None,
    };
    match oauth::authorize(&state.app, &params, asked, document, &source.0).await {
        Ok(grant) => see_other(&format!("/_/#grant={grant}")),
        Err(e) => shown(&e),
    }
}

/// Whether a client id may name a metadata document: an `https` URL (plain
/// `http` too where local documents are allowed) with a path, no user
/// information or fragment, written as its normal form (no dot segments,
/// escapes or case the person would read differently from what is fetched).
fn document_url(id: &str, local: bool) -> Result<(), String> {
    let url = reqwest::Url::parse(id).map_err(|_| "the client id is not a URL".to_owned())?;
    if !(url.scheme() == "https" || (local && url.scheme() == "http")) {
        return Err("a client id that is a URL is an https URL".into());
    }
    if !url.username().is_empty() || url.password().is_some() || url.fragment().is_some() {
        return Err("a client id URL carries no user information and no fragment".into());
    }
    if url.path() == "/" || url.as_str() != id {
        return Err("a client id URL has a path and is written in its normal form".into());
    }
    Ok(())
}

/// An error before the redirect URI is known good: shown to the person,
/// never sent to an unverified redirect URI.
fn shown(e: &OAuthError) -> Response {
    let status = StatusCode::from_u16(e.status).unwrap_or(StatusCode::BAD_REQUEST);
    let text = format!("This sign-in cannot go on: {} ({}).\n", e.description, e.error);
    (status, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text).into_response()
}

async fn token(S(state): S<State>, headers: HeaderMap, body: Bytes) -> Response {
    let params = match form(&state, &headers, &body) {
        Ok(params) => params,
        Err(refused) => return refused,
    };
    match oauth::token(&state.app, &params).await {
        Ok(tokens) => public(StatusCode::OK, &tokens),
        Err(e) => refusal(&e),
    }
}

/// RFC 7009: 200 with no body whether or not the token was live.
async fn revoke(S(state): S<State>, headers: HeaderMap, body: Bytes) -> Response {
    let params = match form(&state, &headers, &body) {
        Ok(params) => params,
        Err(refused) => return refused,
    };
    match oauth::revoke(&state.app, &params).await {
        Ok(()) => open_to_all(StatusCode::OK.into_response()),
        Err(e) => refusal(&e),
    }
}

/// The parameters of a token or revocation request: a form, as OAuth sends
/// them, to a host this app answers for.
fn form(state: &State, headers: &HeaderMap, body: &[u8]) -> Result<HashMap<String, String>, Response> {
    base(state, headers).map_err(|e| ApiError(e).into_response())?;
    let refused = |description: String| refusal(&OAuthError { status: 400, error: "invalid_request", description });
    let form = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.to_ascii_lowercase().starts_with("application/x-www-form-urlencoded"));
    if !form {
        return Err(refused("send the request as application/x-www-form-urlencoded".into()));
    }
    parameters(body).map_err(refused)
}

/// OAuth parameters, URL-encoded: each name at most once (RFC 6749 §3.1,
/// §3.2), so no two parts of a stack can read two different values.
fn parameters(raw: &[u8]) -> Result<HashMap<String, String>, String> {
    let pairs: Vec<(String, String)> =
        serde_urlencoded::from_bytes(raw).map_err(|_| "the parameters are not URL-encoded text".to_owned())?;
    let mut out = HashMap::with_capacity(pairs.len());
    for (name, value) in pairs {
        if out.contains_key(&name) {
            let name: String = name.chars().take(40).collect();
            return Err(format!("the parameter {name} is sent more than once"));
        }
        out.insert(name, value);
    }
    Ok(out)
}

async fn preflight() -> Response {
    let mut response = StatusCode::NO_CONTENT.into_response();
    let h = response.headers_mut();
    h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    h.insert(header::ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static("GET, POST"));
    h.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static("content-type, authorization, mcp-protocol-version"),
    );
    h.insert(header::ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("600"));
    response
}

/// A JSON answer any origin may read; never cached (tokens, fresh ids).
fn public(status: StatusCode, value: &Value) -> Response {
    open_to_all(super::json_response(status, value))
}

/// `response`, readable by any origin and never cached.
fn open_to_all(mut response: Response) -> Response {
    let h = response.headers_mut();
    h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

fn refusal(e: &OAuthError) -> Response {
    let status = StatusCode::from_u16(e.status).unwrap_or(StatusCode::BAD_REQUEST);
    public(status, &e.body())
}

fn see_other(location: &str) -> Response {
    match HeaderValue::from_str(location) {
        Ok(v) => (StatusCode::SEE_OTHER, [(header::LOCATION, v)]).into_response(),
        Err(_) => ApiError(a2app_core::Error::Internal("a redirect is not a header value".into())).into_response(),
    }
}
