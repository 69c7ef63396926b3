//! The A2App contract documents: identity, describe, whoami, receipts and the
//! agent log; and PocketBase's `GET /api/health`.

use super::{ApiResult, State, caller, json_response};
use a2app_core::access::Intent;
use axum::extract::{Path, Query, State as S};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use protocol::identity::{AppIdentity, Identity};

/// PocketBase's health answer, so PocketBase tooling sees a live server.
pub async fn health(S(state): S<State>, headers: HeaderMap) -> ApiResult<Response> {
    caller(&state, &headers, Intent::Read).await?;
    Ok(json_response(StatusCode::OK, &serde_json::json!({"message": "API is healthy.", "code": 200, "data": {}})))
}

/// The identity document: public by design, the one reliable probe of what answers on a port.
pub async fn identity(S(state): S<State>, headers: HeaderMap) -> ApiResult<Response> {
    caller(&state, &headers, Intent::Read).await?;
    let app = &state.app;
    let now = app.clock.now();
    let offset = jiff::tz::TimeZone::get(&app.definition.config.timezone)
        .map(|tz| tz.to_offset(now).seconds() / 60)
        .unwrap_or(0);
    let doc = Identity {
        a2app: true,
        protocol: protocol::PROTOCOL_VERSION.to_owned(),
        adapter_version: env!("CARGO_PKG_VERSION").to_owned(),
        app: AppIdentity {
            id: app.definition.config.id.clone(),
            name: app.definition.config.name.clone(),
            pb_version: protocol::PB_VERSION.to_owned(),
        },
        schema_version: app.schema_version.clone(),
        server_now: a2app_core::datetime::format(now),
        server_tz_offset_minutes: offset,
    };
    Ok(json_response(StatusCode::OK, &doc))
}

/// `GET /api/_a2app/describe`: the whole document, generated now.
pub async fn describe(S(state): S<State>, headers: HeaderMap) -> ApiResult<Response> {
    caller(&state, &headers, Intent::Read).await?;
    Ok(json_response(StatusCode::OK, &state.app.describe()))
}

/// `GET /api/_a2app/describe/{path}`: one part, so an agent reads only what it needs.
pub async fn describe_part(S(state): S<State>, headers: HeaderMap, Path(path): Path<String>) -> ApiResult<Response> {
    caller(&state, &headers, Intent::Read).await?;
    Ok(json_response(StatusCode::OK, &state.app.describe_part(&path)?))
}

pub async fn whoami(S(state): S<State>, headers: HeaderMap) -> ApiResult<Response> {
    let who = caller(&state, &headers, Intent::Read).await?;
    Ok(json_response(StatusCode::OK, &a2app_core::access::whoami(&state.app, &who)))
}

#[derive(Debug, Default, serde::Deserialize)]
pub struct ReceiptsQuery {
    since: Option<String>,
    limit: Option<u64>,
}

/// `GET /api/_a2app/receipts?since=`: receipts of writes stored after `since`.
pub async fn receipts(
    S(state): S<State>,
    headers: HeaderMap,
    q: Result<Query<ReceiptsQuery>, axum::extract::rejection::QueryRejection>,
) -> ApiResult<Response> {
    let who = caller(&state, &headers, Intent::Read).await?;
    a2app_core::records::may_read_receipts(&state.app, &who)?;
    // A `limit` that is not a count refuses the whole query: read as absent,
    // it would take `since` with it and answer the oldest receipts instead.
    let Query(q) = q.map_err(|e| a2app_core::Error::InvalidQuery(e.body_text()))?;
    let limit = a2app_core::records::feed_limit(q.limit)?;
    let list = a2app_core::records::receipts(&state.app, q.since.as_deref(), limit).await?;
    Ok(json_response(StatusCode::OK, &serde_json::json!({ "items": list })))
}

/// `GET /api/_a2app/actions[?since=&limit=]`: the agent log, oldest first
/// (the newest `limit` lines, or the first after `since`); the token is required.
pub async fn actions(
    S(state): S<State>,
    headers: HeaderMap,
    q: Result<Query<ReceiptsQuery>, axum::extract::rejection::QueryRejection>,
) -> ApiResult<Response> {
    let who = caller(&state, &headers, Intent::Write).await?;
    if who.kind != a2app_core::caller::CallerKind::Agent {
        return Err(
            a2app_core::Error::Unauthorized("the agent log is read with the agent token (X-LUI-Token)".into()).into()
        );
    }
    let Query(q) = q.map_err(|e| a2app_core::Error::InvalidQuery(e.body_text()))?;
    let limit = a2app_core::records::feed_limit(q.limit)? as usize;
    let since = a2app_core::records::feed_since(q.since.as_deref())?;
    let lines =
        state.app.agent_log.read(since.as_deref(), limit).map_err(|e| a2app_core::Error::Internal(e.to_string()))?;
    Ok(json_response(StatusCode::OK, &serde_json::json!({ "items": lines })))
}
