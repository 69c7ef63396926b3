//! The app-to-agent queue over HTTP (`core::requests`):
//! - `GET /api/_a2app/requests?status=&capability=&page=&perPage=` and
//!   `GET /api/_a2app/requests/{id}`: read like records;
//! - `POST /api/_a2app/requests` `{capability, params}`: a person asks (the
//!   app's page, or a signed-in user);
//! - `POST …/{id}/claim` `{leaseSeconds?}` and `POST …/{id}/answer`
//!   `{claimKey, result | failure}`: the agent token;
//! - `POST …/{id}/cancel`: the person who asked.
//!
//! Changes go out on the realtime topic `_a2app_requests`.

use super::{ApiResult, State, caller, json_body, json_response};
use a2app_core::access::Intent;
use axum::body::Bytes;
use axum::extract::{Path, Query, State as S};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListQuery {
    status: Option<String>,
    capability: Option<String>,
    page: Option<u64>,
    per_page: Option<u64>,
}

pub async fn list(
    S(state): S<State>,
    headers: HeaderMap,
    q: Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> ApiResult<Response> {
    let who = caller(&state, &headers, Intent::Read).await?;
    let Query(q) = q.map_err(|e| a2app_core::Error::InvalidQuery(e.body_text()))?;
    let (page, per_page) = (q.page.unwrap_or(1), q.per_page.unwrap_or(30));
    let page =
        a2app_core::requests::list(&state.app, &who, q.status.as_deref(), q.capability.as_deref(), page, per_page)
            .await?;
    Ok(json_response(StatusCode::OK, &page))
}

pub async fn get(S(state): S<State>, Path(id): Path<String>, headers: HeaderMap) -> ApiResult<Response> {
    let who = caller(&state, &headers, Intent::Read).await?;
    Ok(json_response(StatusCode::OK, &a2app_core::requests::get(&state.app, &who, &id).await?))
}

pub async fn ask(S(state): S<State>, headers: HeaderMap, body: Bytes) -> ApiResult<Response> {
    let who = caller(&state, &headers, Intent::Write).await?;
    let body = json_body(&headers, &body)?;
    Ok(json_response(StatusCode::OK, &a2app_core::requests::ask(&state.app, &who, &body).await?))
}

pub async fn claim(S(state): S<State>, Path(id): Path<String>, headers: HeaderMap, body: Bytes) -> ApiResult<Response> {
    let who = caller(&state, &headers, Intent::Write).await?;
    let body = json_body(&headers, &body)?;
    Ok(json_response(StatusCode::OK, &a2app_core::requests::claim(&state.app, &who, &id, &body).await?))
}

pub async fn answer(
    S(state): S<State>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    let who = caller(&state, &headers, Intent::Write).await?;
    let body = json_body(&headers, &body)?;
    Ok(json_response(StatusCode::OK, &a2app_core::requests::answer(&state.app, &who, &id, &body).await?))
}

pub async fn cancel(S(state): S<State>, Path(id): Path<String>, headers: HeaderMap) -> ApiResult<Response> {
    let who = caller(&state, &headers, Intent::Write).await?;
    Ok(json_response(StatusCode::OK, &a2app_core::requests::cancel(&state.app, &who, &id).await?))
}
