//! Deployed identity over HTTP (`core::grants`):
//! - `POST /api/_a2app/grants` `{publicKey, agent, scopes}`: an agent asks;
//! - `GET /api/_a2app/grants/{id}`: the grant, to whoever holds its id (the
//!   agent polls it until a person decided);
//! - `GET /api/_a2app/grants`: the grants a person (or the agent token) may see;
//! - `POST /api/_a2app/grants/deny-pending` `{source?}`: the owner clears
//!   every pending ask (or one source's) at once;
//! - `POST …/{id}/approve` `{scopes?}` and `POST …/{id}/deny`: a person
//!   (for a grant asked through OAuth, the answer adds `redirect`);
//! - `POST …/{id}/revoke`: its person, the app's owner, or the grant itself;
//! - `POST …/{id}/token` `{timestamp, nonce, signature}`: the key's holder
//!   trades a signature for a short-lived access token.

use super::source::Source;
use super::{ApiResult, State, caller, json_body, json_response};
use a2app_core::access::Intent;
use axum::body::Bytes;
use axum::extract::{Path, State as S};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use protocol::grant::Grant;
use serde_json::json;

pub async fn ask(S(state): S<State>, source: Source, headers: HeaderMap, body: Bytes) -> ApiResult<Response> {
    // Asking needs no credential: a pending grant allows nothing.
    let who = caller(&state, &headers, Intent::Read).await?;
    let body = json_body(&headers, &body)?;
    Ok(json_response(StatusCode::OK, &a2app_core::grants::ask(&state.app, &who, &source.0, &body).await?))
}

/// `POST /api/_a2app/grants/deny-pending` `{source?}`: the owner denies every
/// pending grant, or those from one source, at once.
pub async fn deny_pending(S(state): S<State>, headers: HeaderMap, body: Bytes) -> ApiResult<Response> {
    let who = caller(&state, &headers, Intent::Write).await?;
    let body = if body.is_empty() { json!({}) } else { json_body(&headers, &body)? };
    let denied = a2app_core::grants::deny_pending(&state.app, &who, &body).await?;
    Ok(json_response(StatusCode::OK, &json!({ "denied": denied })))
}

pub async fn list(S(state): S<State>, headers: HeaderMap) -> ApiResult<Response> {
    let who = caller(&state, &headers, Intent::Read).await?;
    let items = a2app_core::grants::list(&state.app, &who).await?;
    Ok(json_response(StatusCode::OK, &json!({ "items": items })))
}

pub async fn get(S(state): S<State>, Path(id): Path<String>, headers: HeaderMap) -> ApiResult<Response> {
    caller(&state, &headers, Intent::Read).await?;
    Ok(json_response(StatusCode::OK, &a2app_core::grants::get(&state.app, &id).await?))
}

pub async fn approve(
    S(state): S<State>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    let who = caller(&state, &headers, Intent::Write).await?;
    let body = json_body(&headers, &body)?;
    let grant = a2app_core::grants::approve(&state.app, &who, &id, &body).await?;
    decided(&state, &headers, grant).await
}

pub async fn deny(S(state): S<State>, Path(id): Path<String>, headers: HeaderMap) -> ApiResult<Response> {
    let who = caller(&state, &headers, Intent::Write).await?;
    let grant = a2app_core::grants::deny(&state.app, &who, &id).await?;
    decided(&state, &headers, grant).await
}

/// The decided grant; for one asked through OAuth, with `redirect`: where
/// the person's browser returns to the client (with a code, or the denial).
async fn decided(state: &State, headers: &HeaderMap, grant: Grant) -> ApiResult<Response> {
    let base = super::oauth::base(state, headers)?;
    let redirect = a2app_core::oauth::decided(&state.app, &grant, &base).await?;
    let mut value = serde_json::to_value(&grant).map_err(|e| a2app_core::Error::Internal(e.to_string()))?;
    if let (Some(url), Some(fields)) = (redirect, value.as_object_mut()) {
        fields.insert("redirect".into(), url.into());
    }
    Ok(json_response(StatusCode::OK, &value))
}

pub async fn revoke(S(state): S<State>, Path(id): Path<String>, headers: HeaderMap) -> ApiResult<Response> {
    let who = caller(&state, &headers, Intent::Write).await?;
    Ok(json_response(StatusCode::OK, &a2app_core::grants::revoke(&state.app, &who, &id).await?))
}

pub async fn token(S(state): S<State>, Path(id): Path<String>, headers: HeaderMap, body: Bytes) -> ApiResult<Response> {
    // The signature is the credential.
    caller(&state, &headers, Intent::Read).await?;
    let body = json_body(&headers, &body)?;
    Ok(json_response(StatusCode::OK, &a2app_core::grants::token(&state.app, &id, &body).await?))
}
