//! The built-in page at `/_/`: a read-mostly dashboard for the app's owner.
//!
//! It shows what the contract already publishes (identity, describe, the
//! receipts of recent writes with the agent that made each) and how to connect
//! an agent. The page is static, embedded in the binary, and reads only the
//! public contract endpoints; the one thing it learns here is where the agent
//! token lives on disk, as a path. The token itself never reaches the page.

use super::{ApiResult, State, caller, json_response};
use a2app_core::access::Intent;
use axum::Router;
use axum::extract::State as S;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;

const INDEX: &str = include_str!("../../assets/dashboard/index.html");
const SCRIPT: &str = include_str!("../../assets/dashboard/dashboard.js");
const STYLE: &str = include_str!("../../assets/dashboard/dashboard.css");

/// The page's own policy: its scripts and styles only, fetches to this origin
/// only, and no framing (it shows receipts written by agents).
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; \
                   base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

pub fn routes() -> Router<State> {
    Router::new()
        .route("/_", get(|| async { Redirect::to("/_/") }))
        .route("/_/", get(index))
        .route("/_/dashboard.js", get(script))
        .route("/_/dashboard.css", get(style))
        .route("/_/connect.json", get(connect))
}

/// An embedded asset, after the same Host and Origin checks as any read.
async fn asset(
    state: &State,
    headers: &HeaderMap,
    content_type: &'static str,
    body: &'static str,
) -> ApiResult<Response> {
    caller(state, headers, Intent::Read).await?;
    let headers = [
        (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
        (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        (header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP)),
        (header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")),
    ];
    Ok((StatusCode::OK, headers, body).into_response())
}

async fn index(S(state): S<State>, headers: HeaderMap) -> ApiResult<Response> {
    asset(&state, &headers, "text/html; charset=utf-8", INDEX).await
}

async fn script(S(state): S<State>, headers: HeaderMap) -> ApiResult<Response> {
    asset(&state, &headers, "text/javascript; charset=utf-8", SCRIPT).await
}

async fn style(S(state): S<State>, headers: HeaderMap) -> ApiResult<Response> {
    asset(&state, &headers, "text/css; charset=utf-8", STYLE).await
}

/// Where the app lives and where its agent token is (paths, never the token),
/// and whether the app has its own page at `/`.
async fn connect(S(state): S<State>, headers: HeaderMap) -> ApiResult<Response> {
    caller(&state, &headers, Intent::Read).await?;
    let def = &state.app.definition;
    let dir = std::path::absolute(&def.dir).unwrap_or_else(|_| def.dir.clone());
    let token = std::path::absolute(def.token_path()).unwrap_or_else(|_| def.token_path());
    let body = serde_json::json!({
        "appDir": dir.display().to_string(),
        "tokenPath": token.display().to_string(),
        "mcpPath": "/mcp",
        "hasUi": def.ui_dir().join("index.html").is_file(),
    });
    Ok(json_response(StatusCode::OK, &body))
}
