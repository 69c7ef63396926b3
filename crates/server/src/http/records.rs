//! The PocketBase-compatible records API.

use super::{ApiResult, State, caller, json_body, json_response};
use a2app_core::access::Intent;
use a2app_core::records::{self, ListParams, Shape, WriteOptions};
use a2app_core::store::RequestInfo;
use axum::body::Bytes;
use axum::extract::{Path, Query, State as S};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

#[derive(Debug, Default, Deserialize)]
pub struct ListQuery {
    page: Option<String>,
    #[serde(rename = "perPage")]
    per_page: Option<String>,
    sort: Option<String>,
    filter: Option<String>,
    expand: Option<String>,
    fields: Option<String>,
    #[serde(rename = "skipTotal")]
    skip_total: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
pub struct ShapeQuery {
    expand: Option<String>,
    fields: Option<String>,
}

impl From<ShapeQuery> for Shape {
    fn from(q: ShapeQuery) -> Shape {
        Shape { expand: q.expand, fields: q.fields }
    }
}

/// `Idempotency-Key` and `If-Match` from the headers.
fn write_options(headers: &HeaderMap, shape: Shape) -> WriteOptions {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    WriteOptions {
        key: text("idempotency-key"),
        // `If-Match` may be quoted like an ETag.
        if_match: text("if-match").map(|v| v.trim().trim_matches('"').to_owned()),
        shape,
    }
}

/// Query strings that do not decode are treated as absent parameters.
fn query<T: Default>(q: Result<Query<T>, axum::extract::rejection::QueryRejection>) -> T {
    q.map(|Query(v)| v).unwrap_or_default()
}

pub async fn list(
    S(state): S<State>,
    Path(entity): Path<String>,
    headers: HeaderMap,
    q: Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> ApiResult<Response> {
    let caller = caller(&state, &headers, Intent::Read).await?;
    let q = query(q);
    let params = ListParams {
        page: q.page,
        per_page: q.per_page,
        sort: q.sort,
        filter: q.filter,
        expand: q.expand,
        fields: q.fields,
        skip_total: q.skip_total,
    };
    let request = RequestInfo { method: "GET".into(), context: "default".into(), ..Default::default() };
    let page = records::list(&state.app, &caller, &entity, &params, request).await?;
    Ok(json_response(StatusCode::OK, &page))
}

pub async fn view(
    S(state): S<State>,
    Path((entity, id)): Path<(String, String)>,
    headers: HeaderMap,
    q: Result<Query<ShapeQuery>, axum::extract::rejection::QueryRejection>,
) -> ApiResult<Response> {
    let caller = caller(&state, &headers, Intent::Read).await?;
    let record = records::view(&state.app, &caller, &entity, &id, &query(q).into()).await?;
    Ok(json_response(StatusCode::OK, &record))
}

pub async fn create(
    S(state): S<State>,
    Path(entity): Path<String>,
    headers: HeaderMap,
    q: Result<Query<ShapeQuery>, axum::extract::rejection::QueryRejection>,
    body: Bytes,
) -> ApiResult<Response> {
    let caller = caller(&state, &headers, Intent::Write).await?;
    let body = json_body(&headers, &body)?;
    let opts = write_options(&headers, query(q).into());
    let record = records::create(&state.app, &caller, &entity, &body, &opts).await?;
    Ok(json_response(StatusCode::OK, &record))
}

pub async fn update(
    S(state): S<State>,
    Path((entity, id)): Path<(String, String)>,
    headers: HeaderMap,
    q: Result<Query<ShapeQuery>, axum::extract::rejection::QueryRejection>,
    body: Bytes,
) -> ApiResult<Response> {
    let caller = caller(&state, &headers, Intent::Write).await?;
    let body = json_body(&headers, &body)?;
    let opts = write_options(&headers, query(q).into());
    let record = records::update(&state.app, &caller, &entity, &id, &body, &opts).await?;
    Ok(json_response(StatusCode::OK, &record))
}

pub async fn delete(
    S(state): S<State>,
    Path((entity, id)): Path<(String, String)>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let caller = caller(&state, &headers, Intent::Write).await?;
    records::delete(&state.app, &caller, &entity, &id, &write_options(&headers, Shape::default())).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}
