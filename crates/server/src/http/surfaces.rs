//! A2UI surfaces over HTTP, as over MCP's `show` (`core::surfaces`):
//! `POST /api/_a2app/surfaces` renders a batch of messages (a write: the
//! agent token), `GET /api/_a2app/surfaces` lists them, and
//! `GET /api/_a2app/surfaces/{id}` reads one with what the person entered
//! (both with the token too).
//! `GET /api/_a2app/a2ui/catalog` is the catalog they are checked against.

use super::{ApiResult, State, caller, json_body, json_response};
use a2app_core::access::Intent;
use axum::body::Bytes;
use axum::extract::{Path, State as S};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::json;

pub async fn render(S(state): S<State>, headers: HeaderMap, body: Bytes) -> ApiResult<Response> {
    a2app_core::surfaces::may_use(&caller(&state, &headers, Intent::Write).await?)?;
    let batch = json_body(&headers, &body)?;
    let surfaces = a2app_core::surfaces::render(&state.app, &batch).await?;
    Ok(json_response(StatusCode::OK, &json!({ "catalogId": a2app_a2ui::CATALOG_ID, "surfaces": surfaces })))
}

/// Surfaces hold what the person typed: reading them takes the write
/// credential (the agent token, or the app's own page).
pub async fn list(S(state): S<State>, headers: HeaderMap) -> ApiResult<Response> {
    a2app_core::surfaces::may_use(&caller(&state, &headers, Intent::Write).await?)?;
    let items = a2app_core::surfaces::list(&state.app).await?;
    Ok(json_response(StatusCode::OK, &json!({ "items": items })))
}

pub async fn get(S(state): S<State>, Path(id): Path<String>, headers: HeaderMap) -> ApiResult<Response> {
    a2app_core::surfaces::may_use(&caller(&state, &headers, Intent::Write).await?)?;
    let surface = a2app_core::surfaces::get(&state.app, &id).await?;
    Ok(json_response(StatusCode::OK, &surface))
}

pub async fn catalog(S(state): S<State>, headers: HeaderMap) -> ApiResult<Response> {
    caller(&state, &headers, Intent::Read).await?;
    Ok(json_response(StatusCode::OK, &a2app_a2ui::catalog::document()))
}
