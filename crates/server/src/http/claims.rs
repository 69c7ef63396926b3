//! The claim gate over HTTP (`core::claims`, `core::refusals`):
//! - `POST /api/_a2app/claims` `{message, since?}`: a writer's message checked
//!   against its own writes of this turn;
//! - `GET /api/_a2app/claims?limit=`: the checks kept, newest first;
//! - `GET /api/_a2app/refusals?limit=`: the writes the app refused agents,
//!   newest first.
//!
//! The two lists are the person's (read as receipts are read): they hold
//! every caller's messages' outcomes and values.

use super::{ApiResult, State, caller, json_body, json_response};
use a2app_core::access::Intent;
use axum::body::Bytes;
use axum::extract::{Query, State as S};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::json;

pub async fn check(S(state): S<State>, headers: HeaderMap, body: Bytes) -> ApiResult<Response> {
    let who = caller(&state, &headers, Intent::Write).await?;
    let body = json_body(&headers, &body)?;
    Ok(json_response(StatusCode::OK, &a2app_core::claims::check(&state.app, &who, &body).await?))
}

#[derive(Debug, Default, serde::Deserialize)]
pub struct ListQuery {
    limit: Option<u64>,
}

fn limit(q: Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>) -> ApiResult<u64> {
    let Query(q) = q.map_err(|e| a2app_core::Error::InvalidQuery(e.body_text()))?;
    Ok(a2app_core::records::feed_limit(q.limit)?)
}

pub async fn checks(
    S(state): S<State>,
    headers: HeaderMap,
    q: Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> ApiResult<Response> {
    let who = caller(&state, &headers, Intent::Read).await?;
    a2app_core::records::may_read_receipts(&state.app, &who)?;
    let items = a2app_core::claims::checks(&state.app, limit(q)?).await?;
    Ok(json_response(StatusCode::OK, &json!({ "items": items })))
}

pub async fn refusals(
    S(state): S<State>,
    headers: HeaderMap,
    q: Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> ApiResult<Response> {
    let who = caller(&state, &headers, Intent::Read).await?;
    a2app_core::records::may_read_receipts(&state.app, &who)?;
    let mut items = a2app_core::refusals::list(&state.app, 0, limit(q)?).await?;
    items.reverse();
    Ok(json_response(StatusCode::OK, &json!({ "items": items })))
}
