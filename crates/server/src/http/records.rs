//! The PocketBase-compatible records API.

use super::{ApiResult, State, caller_seeing, json_response, meaning_header, record_body};
use a2app_core::access::Intent;
use a2app_core::files::Upload;
use a2app_core::records::{self, ListParams, Shape, WriteOptions};
use a2app_core::store::RequestInfo;
use axum::body::Bytes;
use axum::extract::{FromRequest, Multipart, Request};
use axum::extract::{Path, Query, RawQuery, State as S};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::Value;

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
fn write_options(headers: &HeaderMap, shape: Shape) -> Result<WriteOptions, a2app_core::Error> {
    Ok(WriteOptions {
        key: meaning_header(headers, "Idempotency-Key")?,
        // `If-Match` may be quoted like an ETag.
        if_match: meaning_header(headers, "If-Match")?.map(|v| v.trim().trim_matches('"').to_owned()),
        shape,
        files: Vec::new(),
        inexact: Vec::new(),
    })
}

/// The query's parameters, or `invalid_query` when they do not decode (a key
/// given twice, as `?filter=a&filter=b`). PocketBase keeps the first value;
/// dropping the rest, or all of them, would answer a list the caller did not
/// ask for, and an agent acts on what a list returns.
fn query<T>(q: Result<Query<T>, axum::extract::rejection::QueryRejection>) -> Result<T, a2app_core::Error> {
    q.map(|Query(v)| v).map_err(|e| a2app_core::Error::InvalidQuery(e.body_text()))
}

/// The entity a path names: its name, or its collection id as PocketBase's
/// routes (and the SDK's file URLs) have it; an unknown one as sent, for
/// `unknown_entity` to name.
fn entity_of(state: &State, named: String) -> String {
    match a2app_core::schema::entity_named(&state.app.definition.schema, &named) {
        Some(name) if name != named => name.to_owned(),
        _ => named,
    }
}

pub async fn list(
    S(state): S<State>,
    Path(entity): Path<String>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
    q: Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> ApiResult<Response> {
    let entity = entity_of(&state, entity);
    let caller = caller_seeing(&state, &headers, raw.as_deref(), Intent::Read).await?;
    let q = query(q)?;
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
    RawQuery(raw): RawQuery,
    q: Result<Query<ShapeQuery>, axum::extract::rejection::QueryRejection>,
) -> ApiResult<Response> {
    let entity = entity_of(&state, entity);
    let caller = caller_seeing(&state, &headers, raw.as_deref(), Intent::Read).await?;
    let record = records::view(&state.app, &caller, &entity, &id, &query(q)?.into()).await?;
    Ok(json_response(StatusCode::OK, &record))
}

pub async fn create(
    S(state): S<State>,
    Path(entity): Path<String>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
    q: Result<Query<ShapeQuery>, axum::extract::rejection::QueryRejection>,
    request: Request,
) -> ApiResult<Response> {
    let entity = entity_of(&state, entity);
    let (caller, body, opts) =
        write_input(&state, &headers, raw.as_deref(), &entity, query(q)?.into(), request).await?;
    let record = records::create(&state.app, &caller, &entity, &body, &opts).await?;
    Ok(json_response(StatusCode::OK, &record))
}

pub async fn update(
    S(state): S<State>,
    Path((entity, id)): Path<(String, String)>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
    q: Result<Query<ShapeQuery>, axum::extract::rejection::QueryRejection>,
    request: Request,
) -> ApiResult<Response> {
    let entity = entity_of(&state, entity);
    let (caller, body, opts) =
        write_input(&state, &headers, raw.as_deref(), &entity, query(q)?.into(), request).await?;
    let record = records::update(&state.app, &caller, &entity, &id, &body, &opts).await?;
    Ok(json_response(StatusCode::OK, &record))
}

pub async fn delete(
    S(state): S<State>,
    Path((entity, id)): Path<(String, String)>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
) -> ApiResult<Response> {
    let entity = entity_of(&state, entity);
    let caller = caller_seeing(&state, &headers, raw.as_deref(), Intent::Write).await?;
    records::delete(&state.app, &caller, &entity, &id, &write_options(&headers, Shape::default())?).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// What every write handler needs: the caller, the decoded body, the options.
async fn write_input(
    state: &State,
    headers: &HeaderMap,
    raw_query: Option<&str>,
    entity: &str,
    shape: Shape,
    request: Request,
) -> ApiResult<(a2app_core::caller::Caller, Value, WriteOptions)> {
    let caller = caller_seeing(state, headers, raw_query, Intent::Write).await?;
    let (body, files, inexact) = write_body(state, entity, headers, request).await?;
    let mut opts = write_options(headers, shape)?;
    opts.files = files;
    opts.inexact = inexact;
    Ok((caller, body, opts))
}

/// A write's body: JSON, or a multipart form with files for binary fields,
/// its values in `@jsonPayload` parts (what the PocketBase SDK sends) and
/// text parts, which `records::form_body` reads by the fields' types.
async fn write_body(
    state: &State,
    entity: &str,
    headers: &HeaderMap,
    request: Request,
) -> ApiResult<(Value, Vec<Upload>, Vec<a2app_core::number::Inexact>)> {
    let is_multipart = headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("multipart/form-data"));
    if !is_multipart {
        let bytes = Bytes::from_request(request, &())
            .await
            .map_err(|_| a2app_core::Error::PayloadTooLarge(super::MAX_UPLOAD))?;
        if bytes.len() > super::MAX_BODY {
            return Err(a2app_core::Error::PayloadTooLarge(super::MAX_BODY).into());
        }
        let (body, inexact) = record_body(headers, &bytes)?;
        return Ok((body, Vec::new(), inexact));
    }
    let bad = |why: String| {
        a2app_core::Error::Invalid(vec![
            protocol::Violation::new(protocol::ErrorCode::InvalidJson, why).expected("multipart/form-data"),
        ])
    };
    let mut multipart = Multipart::from_request(request, &())
        .await
        .map_err(|e| bad(format!("the multipart body cannot be read: {e}")))?;
    let mut form = records::Form::default();
    let mut files = Vec::new();
    let mut unreadable = Vec::new();
    while let Some(part) =
        multipart.next_field().await.map_err(|e| bad(format!("the multipart body is malformed: {e}")))?
    {
        let name = part.name().unwrap_or_default().to_owned();
        let filename = part.file_name().map(str::to_owned);
        let content_type = part.content_type().unwrap_or("application/octet-stream").to_owned();
        let bytes = part.bytes().await.map_err(|e| bad(format!("a multipart part cannot be read: {e}")))?;
        match filename {
            // What a browser sends for a file input left empty: no file, so
            // nothing to store (a 0-byte file named "" is nobody's upload).
            Some(filename) if filename.is_empty() && bytes.is_empty() => {}
            Some(filename) => files.push(Upload { field: name, filename, content_type, bytes: bytes.to_vec() }),
            None if name == "@jsonPayload" => match serde_json::from_slice::<Value>(&bytes) {
                Ok(Value::Object(map)) => {
                    form.inexact.extend(a2app_core::number::inexact(&bytes));
                    form.payloads.push(map);
                }
                _ => return Err(bad("@jsonPayload must be a JSON object".into()).into()),
            },
            None => match String::from_utf8(bytes.to_vec()) {
                Ok(text) => form.texts.entry(name).or_default().push(text),
                Err(_) => unreadable.push(
                    protocol::Violation::new(
                        protocol::ErrorCode::InvalidString,
                        format!("the part \"{name}\" is not UTF-8 text"),
                    )
                    .field(name)
                    .expected("UTF-8 text"),
                ),
            },
        }
    }
    if !unreadable.is_empty() {
        return Err(a2app_core::Error::Invalid(unreadable).into());
    }
    let (body, inexact) = records::form_body(&state.app, entity, form)?;
    Ok((body, files, inexact))
}

/// `GET /api/files/{entity}/{id}/{name}`: a stored file, as visible as its record.
pub async fn file(
    S(state): S<State>,
    Path((entity, id, name)): Path<(String, String, String)>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
) -> ApiResult<Response> {
    let entity = entity_of(&state, entity);
    let caller = caller_seeing(&state, &headers, raw.as_deref(), Intent::Read).await?;
    let path = records::file(&state.app, &caller, &entity, &id, &name).await?;
    let bytes = tokio::fs::read(&path).await.map_err(|_| a2app_core::Error::NotFound)?;
    let headers = [
        (axum::http::header::CONTENT_TYPE, a2app_core::files::content_type(&name)),
        // Stored files are data, never pages: no sniffing, no inline scripts.
        (axum::http::header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (axum::http::header::CONTENT_SECURITY_POLICY, "default-src 'none'; sandbox"),
    ];
    Ok((headers, bytes).into_response())
}
