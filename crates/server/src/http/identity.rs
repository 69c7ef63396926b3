//! `GET /api/_a2app` (identity) and `GET /api/health`.

use super::{ApiResult, State, caller, json_response};
use a2app_core::access::Intent;
use axum::extract::State as S;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use protocol::identity::{AppIdentity, Identity};

/// PocketBase's health answer, so PocketBase tooling sees a live server.
pub async fn health(S(state): S<State>, headers: HeaderMap) -> ApiResult<Response> {
    caller(&state, &headers, Intent::Read)?;
    Ok(json_response(StatusCode::OK, &serde_json::json!({"message": "API is healthy.", "code": 200, "data": {}})))
}

/// The identity document: public by design, the one reliable probe of what answers on a port.
pub async fn identity(S(state): S<State>, headers: HeaderMap) -> ApiResult<Response> {
    caller(&state, &headers, Intent::Read)?;
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
