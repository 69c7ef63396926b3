//! Operations and jobs: `GET /api/_ops`, `POST /api/ops/{name}`, `GET /api/_jobs/{id}`.

use super::{ApiResult, State, caller, json_body, json_response};
use a2app_core::access::Intent;
use a2app_core::operations::{self, Answer, Invocation};
use axum::body::Bytes;
use axum::extract::{Path, State as S};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

pub async fn list(S(state): S<State>, headers: HeaderMap) -> ApiResult<Response> {
    caller(&state, &headers, Intent::Read).await?;
    Ok(json_response(StatusCode::OK, &operations::list(&state.app)))
}

/// An invocation counts as one write against the caller's rate limit.
pub async fn invoke(
    S(state): S<State>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    let caller = caller(&state, &headers, Intent::Write).await?;
    let params = json_body(&headers, &body)?;
    let invocation = Invocation::new(params)
        .approval(super::meaning_header(&headers, "X-A2App-Approval")?)
        .idempotency_key(super::meaning_header(&headers, "Idempotency-Key")?);
    Ok(match operations::invoke(&state.app, &caller, &name, invocation).await? {
        Answer::Done(done) => json_response(StatusCode::OK, &done),
        Answer::Started(started) => json_response(StatusCode::ACCEPTED, &started),
    })
}

pub async fn job(S(state): S<State>, Path(id): Path<String>, headers: HeaderMap) -> ApiResult<Response> {
    caller(&state, &headers, Intent::Read).await?;
    let job = a2app_core::jobs::get(&state.app, &id).await?;
    Ok(json_response(StatusCode::OK, &job))
}
