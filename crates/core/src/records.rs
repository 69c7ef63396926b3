//! The records read and write paths: the functions every transport calls.
//!
//! A write runs, in order: the guard on the raw body; the store, in one
//! transaction with its read-back; then the change is published. A read
//! parses the PocketBase list parameters with PocketBase's exact semantics,
//! runs one store query, then expands relations and picks fields.

pub mod expand;
pub mod fields;

use crate::app::App;
use crate::caller::{Caller, CallerKind};
use crate::error::Error;
use crate::guard::{self, Mode};
use crate::realtime::{Action, Change};
use crate::store::{ListQuery, QueryContext, RequestInfo, Row, Write, WriteKind, Written};
use crate::{datetime, filter, id, schema};
use protocol::page::Page;
use protocol::receipt::Receipt;
use protocol::schema::Entity;
use serde_json::{Map, Value};
use std::sync::Arc;

/// PocketBase's defaults and limits for list parameters.
pub const DEFAULT_PER_PAGE: u64 = 30;
pub const MAX_PER_PAGE: u64 = 1000;

/// The list parameters exactly as received (query-string values).
#[derive(Debug, Clone, Default)]
pub struct ListParams {
    pub page: Option<String>,
    pub per_page: Option<String>,
    pub sort: Option<String>,
    pub filter: Option<String>,
    pub expand: Option<String>,
    pub fields: Option<String>,
    pub skip_total: Option<String>,
}

/// Options of a single-record read or write response.
#[derive(Debug, Clone, Default)]
pub struct Shape {
    pub expand: Option<String>,
    pub fields: Option<String>,
}

/// What a write may carry besides its body.
#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    /// `Idempotency-Key`: a replay within 24 h is refused, naming the first record.
    pub key: Option<String>,
    /// `If-Match`: the `updated` value the caller last saw.
    pub if_match: Option<String>,
    pub shape: Shape,
}

/// The longest `Idempotency-Key` accepted.
pub const MAX_KEY_LEN: usize = 255;

pub(crate) fn entity<'a>(app: &'a App, name: &str) -> Result<&'a Entity, Error> {
    app.definition.schema.entities.get(name).ok_or_else(|| Error::UnknownEntity(name.to_owned()))
}

fn context(app: &App, request: RequestInfo) -> QueryContext {
    QueryContext { now: app.clock.now(), request }
}

/// Runs blocking store work off the async runtime.
pub(crate) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, Error> + Send + 'static,
) -> Result<T, Error> {
    tokio::task::spawn_blocking(work).await.map_err(|e| Error::Internal(format!("store task failed: {e}")))?
}

pub async fn list(
    app: &Arc<App>,
    caller: &Caller,
    entity_name: &str,
    params: &ListParams,
    request: RequestInfo,
) -> Result<Page, Error> {
    entity(app, entity_name)?;
    // As PocketBase: only the app's owner (here, the agent token) may filter or
    // sort by request or cross-collection data in a query.
    let privileged = [params.filter.as_deref(), params.sort.as_deref()]
        .into_iter()
        .flatten()
        .any(|t| t.contains("@request.") || t.contains("@collection."));
    if privileged && caller.kind != CallerKind::Agent {
        return Err(Error::Forbidden("only the agent token may filter or sort by @request or @collection".into()));
    }
    let page = parse_int("page", params.page.as_deref())?.filter(|p| *p > 0).unwrap_or(1) as u64;
    let per_page = match parse_int("perPage", params.per_page.as_deref())? {
        Some(n) if n > 0 => (n as u64).min(MAX_PER_PAGE),
        _ => DEFAULT_PER_PAGE,
    };
    let skip_total = match params.skip_total.as_deref() {
        None | Some("") => false,
        Some(v) => {
            parse_bool(v).ok_or_else(|| Error::InvalidQuery(format!("skipTotal must be true or false, got \"{v}\"")))?
        }
    };
    let filter = match params.filter.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(text) => Some(filter::parse(text).map_err(Error::InvalidFilter)?),
    };
    let sort = match params.sort.as_deref().map(str::trim) {
        None | Some("") => Vec::new(),
        Some(text) => filter::parse_sort(text).map_err(|e| Error::InvalidQuery(format!("invalid sort: {e}")))?,
    };
    let ctx = context(app, request);
    let result = {
        let app = Arc::clone(app);
        let name = entity_name.to_owned();
        blocking(move || {
            let query = ListQuery {
                entity: &name,
                filter: filter.as_ref(),
                rule: None,
                sort: &sort,
                page,
                per_page,
                skip_total,
                ctx: &ctx,
            };
            app.store.list(&app.definition.schema, &query).map_err(|e| match e {
                crate::store::StoreError::Filter(f) if f.message.contains("sort") => Error::InvalidQuery(f.to_string()),
                other => other.into(),
            })
        })
        .await?
    };
    let mut items: Vec<Map<String, Value>> = result.rows.into_iter().map(|row| present(entity_name, row)).collect();
    expand::apply(app, entity_name, &mut items, params.expand.as_deref()).await?;
    let picker = fields::Picker::parse(params.fields.as_deref());
    let items = items.into_iter().map(|r| picker.apply(r)).collect();
    let (total_items, total_pages) = match result.total {
        None => (-1, -1),
        Some(total) => (total as i64, total.div_ceil(per_page) as i64),
    };
    Ok(Page { page, per_page, total_items, total_pages, items })
}

pub async fn view(
    app: &Arc<App>,
    _caller: &Caller,
    entity_name: &str,
    id: &str,
    shape: &Shape,
) -> Result<Map<String, Value>, Error> {
    entity(app, entity_name)?;
    let row = fetch(app, entity_name, id).await?.ok_or(Error::NotFound)?;
    finish(app, entity_name, present(entity_name, row), shape).await
}

pub async fn create(
    app: &Arc<App>,
    caller: &Caller,
    entity_name: &str,
    body: &Value,
    opts: &WriteOptions,
) -> Result<Map<String, Value>, Error> {
    let ent = entity(app, entity_name)?;
    let accepted = guarded(app, entity_name, ent, body, Mode::Create, &meta(entity_name, None)).await?;
    let id = accepted.id.clone().unwrap_or_else(id::generate);
    let write = new_write(app, caller, entity_name, WriteKind::Create { id: id.clone() }, accepted.values, opts)?;
    let written = store_write(app, write).await.map_err(|e| match e {
        Error::DuplicateId(_) => Error::DuplicateId(id),
        other => other,
    })?;
    respond(app, caller, Action::Create, entity_name, written, &opts.shape).await
}

pub async fn update(
    app: &Arc<App>,
    caller: &Caller,
    entity_name: &str,
    id: &str,
    body: &Value,
    opts: &WriteOptions,
) -> Result<Map<String, Value>, Error> {
    let ent = entity(app, entity_name)?;
    if !id::is_valid(id) {
        return Err(Error::NotFound);
    }
    let accepted = guarded(app, entity_name, ent, body, Mode::Update, &meta(entity_name, Some(id))).await?;
    let kind = WriteKind::Update { id: id.to_owned(), if_match: opts.if_match.clone() };
    let write = new_write(app, caller, entity_name, kind, accepted.values, opts)?;
    let written = store_write(app, write).await?;
    respond(app, caller, Action::Update, entity_name, written, &opts.shape).await
}

/// Deletes a record; the answer is its receipt.
pub async fn delete(
    app: &Arc<App>,
    caller: &Caller,
    entity_name: &str,
    id: &str,
    opts: &WriteOptions,
) -> Result<Receipt, Error> {
    entity(app, entity_name)?;
    if !id::is_valid(id) {
        return Err(Error::NotFound);
    }
    let write = new_write(app, caller, entity_name, WriteKind::Delete { id: id.to_owned() }, Map::new(), opts)?;
    let written = store_write(app, write).await?;
    let record = present(entity_name, written.row);
    after_commit(app, caller, Action::Delete, entity_name, &record, &written.receipt);
    Ok(written.receipt)
}

fn new_write(
    app: &App,
    caller: &Caller,
    entity_name: &str,
    kind: WriteKind,
    values: Map<String, Value>,
    opts: &WriteOptions,
) -> Result<Write, Error> {
    if let Some(key) = &opts.key
        && (key.is_empty() || key.len() > MAX_KEY_LEN)
    {
        return Err(Error::InvalidQuery(format!("Idempotency-Key must be 1 to {MAX_KEY_LEN} characters")));
    }
    Ok(Write {
        entity: entity_name.to_owned(),
        kind,
        values,
        now: app.clock.now(),
        key: opts.key.clone(),
        agent: caller.agent.clone(),
        caller: caller.kind.as_str().to_owned(),
        timezone: app.definition.config.timezone.clone(),
    })
}

/// Publishes the change and, for agents, appends the agent log.
fn after_commit(
    app: &App,
    caller: &Caller,
    action: Action,
    entity_name: &str,
    record: &Map<String, Value>,
    receipt: &Receipt,
) {
    app.realtime.publish(Change { action, entity: entity_name.to_owned(), record: record.clone() });
    if caller.kind == CallerKind::Agent || caller.agent.is_some() {
        app.agent_log.append(receipt);
    }
}

/// The stored record in PocketBase's shape, plus `_receipt`.
async fn respond(
    app: &Arc<App>,
    caller: &Caller,
    action: Action,
    entity_name: &str,
    written: Written,
    shape: &Shape,
) -> Result<Map<String, Value>, Error> {
    let record = present(entity_name, written.row);
    after_commit(app, caller, action, entity_name, &record, &written.receipt);
    let mut out = finish(app, entity_name, record, shape).await?;
    let receipt = serde_json::to_value(&written.receipt).map_err(|e| Error::Internal(e.to_string()))?;
    out.insert("_receipt".into(), receipt);
    Ok(out)
}

/// Expands and picks fields of one record for a response.
pub async fn finish(
    app: &Arc<App>,
    entity_name: &str,
    record: Map<String, Value>,
    shape: &Shape,
) -> Result<Map<String, Value>, Error> {
    let mut items = vec![record];
    expand::apply(app, entity_name, &mut items, shape.expand.as_deref()).await?;
    let record = items.pop().unwrap_or_default();
    Ok(fields::Picker::parse(shape.fields.as_deref()).apply(record))
}

/// The guard; when it refuses, refs that name missing records are added to
/// the same answer, so one round trip shows every problem.
async fn guarded(
    app: &Arc<App>,
    entity_name: &str,
    ent: &Entity,
    body: &Value,
    mode: Mode,
    meta: &Map<String, Value>,
) -> Result<guard::Accepted, Error> {
    let (accepted, mut violations) = guard::inspect_body(entity_name, ent, body, mode, meta);
    if violations.is_empty() {
        return Ok(accepted);
    }
    let has_refs = accepted.values.keys().any(|k| ent.fields.get(k).is_some_and(|f| f.kind.target().is_some()));
    if has_refs {
        let app2 = Arc::clone(app);
        let (name, values) = (entity_name.to_owned(), accepted.values.clone());
        let missing = blocking(move || Ok(app2.store.missing_refs(&app2.definition.schema, &name, &values)?)).await?;
        violations.extend(missing);
        // Keep the body's field order: the guard's violations come in it.
        let order: Vec<&String> = body.as_object().map(|o| o.keys().collect()).unwrap_or_default();
        violations
            .sort_by_key(|v| v.field.as_ref().and_then(|f| order.iter().position(|k| *k == f)).unwrap_or(usize::MAX));
    }
    Err(Error::Invalid(violations))
}

async fn fetch(app: &Arc<App>, entity_name: &str, id: &str) -> Result<Option<Row>, Error> {
    if !id::is_valid(id) {
        return Ok(None);
    }
    let app2 = Arc::clone(app);
    let (name, id) = (entity_name.to_owned(), id.to_owned());
    let rows = blocking(move || Ok(app2.store.get_many(&app2.definition.schema, &name, &[id])?)).await?;
    Ok(rows.into_iter().next())
}

async fn store_write(app: &Arc<App>, write: Write) -> Result<Written, Error> {
    let app2 = Arc::clone(app);
    blocking(move || Ok(app2.store.write(&app2.definition.schema, write)?)).await
}

/// Audit entries after `since`, oldest first (at most `limit`).
pub async fn receipts(app: &Arc<App>, since: Option<&str>, limit: u64) -> Result<Vec<Receipt>, Error> {
    let since =
        match since.map(str::trim).filter(|s| !s.is_empty()) {
            None => String::new(),
            Some(s) => datetime::format(datetime::parse(s).ok_or_else(|| {
                Error::InvalidQuery(format!("since must be an ISO 8601 date or datetime, got \"{s}\""))
            })?),
        };
    let app2 = Arc::clone(app);
    let entries = blocking(move || Ok(app2.store.receipts(&since, limit)?)).await?;
    Ok(entries.into_iter().map(|e| e.receipt).collect())
}

/// The keys a body may echo unchanged.
fn meta(entity_name: &str, id: Option<&str>) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("collectionId".into(), Value::from(schema::collection_id(entity_name)));
    m.insert("collectionName".into(), Value::from(entity_name));
    if let Some(id) = id {
        m.insert("id".into(), Value::from(id));
    }
    m
}

/// A stored row in PocketBase's record shape: `collectionId`, `collectionName`,
/// `id`, the fields in schema order, then `created` and `updated`.
pub fn present(entity_name: &str, mut row: Row) -> Map<String, Value> {
    let mut out = Map::with_capacity(row.len() + 2);
    out.insert("collectionId".into(), Value::from(schema::collection_id(entity_name)));
    out.insert("collectionName".into(), Value::from(entity_name));
    let created = row.shift_remove("created");
    let updated = row.shift_remove("updated");
    out.extend(row);
    out.insert("created".into(), created.unwrap_or_default());
    out.insert("updated".into(), updated.unwrap_or_default());
    out
}

/// PocketBase reads `page`/`perPage` as integers; anything else is a 400.
fn parse_int(name: &str, value: Option<&str>) -> Result<Option<i64>, Error> {
    match value.map(str::trim) {
        None | Some("") => Ok(None),
        Some(v) => v
            .parse::<i64>()
            .map(Some)
            .map_err(|_| Error::InvalidQuery(format!("{name} must be an integer, got \"{v}\""))),
    }
}

/// Go's `strconv.ParseBool`, which PocketBase uses for `skipTotal`.
fn parse_bool(v: &str) -> Option<bool> {
    match v {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}
