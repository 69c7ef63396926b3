//! Calls of destructive operations waiting for a person (`core::approvals`,
//! `destructive_consent = "person"`):
//! - `GET /api/_a2app/approvals`: the calls the person may decide;
//! - `POST /api/_a2app/approvals/{key}/approve` and `…/deny`: a person's
//!   answer to one call. Agents never decide (`forbidden`).

use super::{ApiResult, State, caller, json_response};
use a2app_core::access::Intent;
use a2app_core::approvals::{self, Decider};
use axum::extract::{Path, State as S};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::json;

pub async fn list(S(state): S<State>, headers: HeaderMap) -> ApiResult<Response> {
    let who = caller(&state, &headers, Intent::Read).await?;
    let items = approvals::waiting(&state.app, &Decider::Person(who)).await?;
    Ok(json_response(StatusCode::OK, &json!({ "items": items })))
}

pub async fn approve(S(state): S<State>, Path(key): Path<String>, headers: HeaderMap) -> ApiResult<Response> {
    decide(state, key, headers, true).await
}

pub async fn deny(S(state): S<State>, Path(key): Path<String>, headers: HeaderMap) -> ApiResult<Response> {
    decide(state, key, headers, false).await
}

async fn decide(state: State, key: String, headers: HeaderMap, yes: bool) -> ApiResult<Response> {
    let who = caller(&state, &headers, Intent::Write).await?;
    let decided = approvals::decide(&state.app, &Decider::Person(who), &key, yes).await?;
    Ok(json_response(StatusCode::OK, &decided))
}
