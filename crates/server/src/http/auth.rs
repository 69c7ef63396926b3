//! PocketBase-compatible sign-in for the users of multi-user apps.

use super::{ApiResult, State, caller, json_body, json_response};
use a2app_core::Error;
use a2app_core::access::Intent;
use axum::body::Bytes;
use axum::extract::{Path, State as S};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::{Value, json};

/// `POST /api/collections/users/auth-with-password` `{identity, password}` → `{token, record}`.
pub async fn with_password(
    S(state): S<State>,
    Path(entity): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    caller(&state, &headers, Intent::Read).await?;
    if entity != a2app_core::auth::ENTITY {
        return Err(Error::Missing(format!(
            "{entity} is not an auth entity; users sign in with /api/collections/users/auth-with-password"
        ))
        .into());
    }
    let body = json_body(&headers, &body)?;
    let field = |k: &str| body.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
    let (token, record) = a2app_core::users::login(&state.app, &field("identity"), &field("password")).await?;
    Ok(json_response(StatusCode::OK, &json!({ "token": token, "record": record })))
}

/// `POST /api/collections/users/auth-refresh` with a user's token → a fresh one.
pub async fn refresh(S(state): S<State>, Path(entity): Path<String>, headers: HeaderMap) -> ApiResult<Response> {
    let who = caller(&state, &headers, Intent::Read).await?;
    if entity != a2app_core::auth::ENTITY {
        return Err(Error::Missing(format!("{entity} is not an auth entity")).into());
    }
    let (token, record) = a2app_core::users::refresh(&state.app, &who).await?;
    Ok(json_response(StatusCode::OK, &json!({ "token": token, "record": record })))
}
