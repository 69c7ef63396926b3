//! The records read and write paths: the functions every transport calls.
//!
//! A write runs, in order: the guard on the raw body; the store, in one
//! transaction with its read-back; then the change is published. A read
//! parses the PocketBase list parameters with PocketBase's exact semantics,
//! runs one store query, then expands relations and picks fields.

pub mod expand;
pub mod fields;
pub mod paths;

use crate::app::App;
use crate::files;
use crate::refusals::{self, Attempt};
use a2app_access::caller::{Caller, CallerKind};
use a2app_access::rules;
use a2app_definition::error::Error;
use a2app_definition::guard::{self, Mode};
pub use a2app_definition::record::present;
use a2app_definition::{datetime, id, modifier, schema};
use a2app_store::realtime::{Action, Change};
use a2app_store::{ListQuery, OnCommit, QueryContext, RequestInfo, Row, RuleCheck, Write, WriteKind, Written};
use protocol::ErrorCode;
use protocol::grant::Scope;
use protocol::page::Page;
use protocol::receipt::Receipt;
use protocol::schema::{Entity, FieldType};
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
    /// Files for `binary` fields (multipart uploads).
    pub files: Vec<files::Upload>,
    /// Numbers of the body, as the caller wrote it, that its parse could not
    /// keep (`crate::number`): each is refused by the guard, by its field.
    pub inexact: Vec<a2app_definition::number::Inexact>,
}

/// The longest `Idempotency-Key` accepted.
pub const MAX_KEY_LEN: usize = 255;

/// An `Idempotency-Key` is 1 to [`MAX_KEY_LEN`] printable ASCII characters on
/// every surface: it travels as an HTTP header (to an `http` backend too),
/// where nothing else can be sent, so a key that could not go on would fail
/// as an unreachable backend after the caller was told nothing of why.
pub fn check_key(key: Option<&str>) -> Result<(), Error> {
    match key {
        Some(k) if k.is_empty() || k.len() > MAX_KEY_LEN || !k.bytes().all(|b| (0x20..0x7f).contains(&b)) => {
            Err(Error::InvalidQuery(format!("Idempotency-Key must be 1 to {MAX_KEY_LEN} printable ASCII characters")))
        }
        _ => Ok(()),
    }
}

/// A key as the store keeps it. A person's or a grant's keys are theirs alone,
/// so one caller's key never refuses another's write, nor tells it the id of
/// a record it may not see; the app's owner (the agent token, its own page)
/// keeps the bare key, as stored before keys were scoped. The separator is
/// a control character, which [`check_key`] refuses in a key.
pub(crate) fn stored_key(caller: &Caller, key: &str) -> String {
    match (&caller.grant, &caller.user) {
        (Some(grant), _) => format!("grant:{}\u{1f}{key}", grant.id),
        (None, Some(user)) => format!("user:{}\u{1f}{key}", user.id),
        (None, None) => key.to_owned(),
    }
}

pub(crate) fn entity<'a>(app: &'a App, name: &str) -> Result<&'a Entity, Error> {
    app.definition.schema.entities.get(name).ok_or_else(|| Error::UnknownEntity(name.to_owned()))
}

fn context(app: &App, request: RequestInfo) -> QueryContext {
    QueryContext { now: app.clock.now(), request }
}

/// A query for [`rows`] and [`first_page`]: what to match and how to order it.
pub struct RowsQuery {
    pub filter: Option<a2app_filter::Expr>,
    pub rule: Option<a2app_filter::Expr>,
    pub sort: Vec<a2app_filter::SortKey>,
    pub ctx: QueryContext,
}

/// Every row of `entity` matching `q`, read page by page off the async runtime.
pub async fn rows(app: &Arc<App>, entity: &str, q: RowsQuery) -> Result<Vec<Row>, Error> {
    let app = Arc::clone(app);
    let entity = entity.to_owned();
    blocking(move || {
        let mut rows = Vec::new();
        for page in 1.. {
            let got = app.store.list(&app.definition.schema, &q.page(&entity, page, MAX_PER_PAGE, true))?.rows;
            let last = (got.len() as u64) < MAX_PER_PAGE;
            rows.extend(got);
            if last {
                break;
            }
        }
        Ok(rows)
    })
    .await
}

/// The first `per_page` rows of `entity` matching `q`, and how many match in
/// all (a page holds at most [`MAX_PER_PAGE`], the count has no bound).
pub async fn first_page(app: &Arc<App>, entity: &str, q: RowsQuery, per_page: u64) -> Result<(Vec<Row>, u64), Error> {
    let app = Arc::clone(app);
    let entity = entity.to_owned();
    blocking(move || {
        let got = app.store.list(&app.definition.schema, &q.page(&entity, 1, per_page.min(MAX_PER_PAGE), false))?;
        let total = got.total.unwrap_or(got.rows.len() as u64);
        Ok((got.rows, total))
    })
    .await
}

impl RowsQuery {
    fn page<'a>(&'a self, entity: &'a str, page: u64, per_page: u64, skip_total: bool) -> ListQuery<'a> {
        ListQuery {
            entity,
            filter: self.filter.as_ref(),
            rule: self.rule.as_ref(),
            sort: &self.sort,
            page,
            per_page,
            skip_total,
            ctx: &self.ctx,
        }
    }
}

/// Runs store reads: on the calling async worker when they are cheap (see
/// `Store::inline`), which spares a point read or an indexed page the two
/// thread hand-offs of the blocking pool; otherwise on the blocking pool.
/// `work` must only read: it may run twice.
pub(crate) async fn read<T: Send + 'static>(
    app: &Arc<App>,
    work: impl Fn(&App) -> Result<T, Error> + Send + Sync + 'static,
) -> Result<T, Error> {
    let mut answer = None;
    if app.store.inline(&mut || answer = Some(work(app)))
        && let Some(answer) = answer
    {
        return answer;
    }
    let app = Arc::clone(app);
    blocking(move || work(&app)).await
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
    only_owner_reads_request([params.filter.as_deref(), params.sort.as_deref()], caller)?;
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
    // An empty `filter` is none; one of only whitespace (or comments) is an
    // empty expression, refused as PocketBase 0.40.6 refuses it.
    let filter = match params.filter.as_deref() {
        None | Some("") => None,
        Some(text) => Some(a2app_filter::parse(text).map_err(Error::InvalidFilter)?),
    };
    let sort = match params.sort.as_deref().map(str::trim) {
        None | Some("") => Vec::new(),
        Some(text) => a2app_filter::parse_sort(text).map_err(|e| Error::InvalidQuery(format!("invalid sort: {e}")))?,
    };
    let rule = rules::rule(app, caller, entity_name, rules::Action::List)?;
    paths::readable(app, caller, entity_name, filter.as_ref(), &sort)?;
    let mut ctx = context(app, request);
    ctx.request.auth = caller.user.as_ref().map(|u| u.record.clone());
    if let Some(parts) = caller.request.as_deref() {
        ctx.request.headers = parts.headers.clone();
        ctx.request.query = parts.query.clone();
    }
    let result = {
        let name = entity_name.to_owned();
        read(app, move |app| {
            let query = ListQuery {
                entity: &name,
                filter: filter.as_ref(),
                rule: rule.as_ref(),
                sort: &sort,
                page,
                per_page,
                skip_total,
                ctx: &ctx,
            };
            app.store.list(&app.definition.schema, &query).map_err(|e| match e {
                a2app_store::StoreError::Filter(f) if f.message.contains("sort") => Error::InvalidQuery(f.to_string()),
                other => other.into(),
            })
        })
        .await?
    };
    let mut items: Vec<Map<String, Value>> = result.rows.into_iter().map(|row| present(entity_name, row)).collect();
    for item in &mut items {
        rules::redact(app, caller, entity_name, item);
    }
    expand::apply(app, caller, entity_name, &mut items, params.expand.as_deref()).await?;
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
    caller: &Caller,
    entity_name: &str,
    id: &str,
    shape: &Shape,
) -> Result<Map<String, Value>, Error> {
    entity(app, entity_name)?;
    let rule = rules::rule(app, caller, entity_name, rules::Action::View)?;
    let row = fetch(app, entity_name, id).await?.ok_or(Error::NotFound)?;
    if let Some(rule) = rule
        && !visible(app, caller, entity_name, id, rule).await?
    {
        // A record the rule hides is, for this caller, not there.
        return Err(Error::NotFound);
    }
    let mut record = present(entity_name, row);
    rules::redact(app, caller, entity_name, &mut record);
    finish(app, caller, entity_name, record, shape).await
}

/// Whether a change to `record` may be shown to `caller` (realtime): rules
/// apply as for a view, judged on the record as the change left it (for a
/// delete, as it was), not on whatever is stored by the time a stream looks:
/// a record deleted just after its creation was announced to its owner would
/// otherwise hide both events.
pub async fn may_see(app: &Arc<App>, caller: &Caller, change: &Arc<Change>) -> Result<bool, Error> {
    match rules::rule(app, caller, &change.entity, rules::Action::View) {
        Ok(None) => Ok(true),
        Err(Error::Forbidden(_) | Error::InsufficientScope(_)) => Ok(false),
        Err(e) => Err(e),
        Ok(Some(rule)) => {
            let ctx = rules::context(app, caller, "GET", None);
            let change = Arc::clone(change);
            read(app, move |app| {
                let schema = &app.definition.schema;
                Ok(app.store.record_satisfies(schema, &change.entity, &change.record, &rule, &ctx)?)
            })
            .await
        }
    }
}

/// As PocketBase: only the app's owner (here, the agent token) may filter or
/// sort by request or cross-collection data in a query.
fn only_owner_reads_request<'a>(
    texts: impl IntoIterator<Item = Option<&'a str>>,
    caller: &Caller,
) -> Result<(), Error> {
    let privileged = texts.into_iter().flatten().any(|t| t.contains("@request.") || t.contains("@collection."));
    if privileged && caller.kind != CallerKind::Agent {
        return Err(Error::Forbidden("only the agent token may filter or sort by @request or @collection".into()));
    }
    Ok(())
}

/// A realtime subscription's own filter (PocketBase's `options.query.filter`),
/// checked once, when subscribing, as a list's filter is: who may send it,
/// that it parses and names what the entity has, and a grant's read scopes.
/// Dropped or taken as matching nothing, it would stream every change, or none,
/// to a caller who asked for some.
pub async fn subscription_filter(
    app: &Arc<App>,
    caller: &Caller,
    entity_name: &str,
    text: &str,
) -> Result<a2app_filter::Expr, Error> {
    entity(app, entity_name)?;
    only_owner_reads_request([Some(text)], caller)?;
    let expr = a2app_filter::parse(text.trim()).map_err(Error::InvalidFilter)?;
    paths::readable(app, caller, entity_name, Some(&expr), &[])?;
    // Judged once on an empty record: a field the entity lacks fails here,
    // not silently on every change.
    let ctx = rules::context(app, caller, "GET", None);
    let (name, checked) = (entity_name.to_owned(), expr.clone());
    read(app, move |app| Ok(app.store.record_satisfies(&app.definition.schema, &name, &Map::new(), &checked, &ctx)?))
        .await?;
    Ok(expr)
}

/// Whether a change satisfies a subscription's filter, judged like the view
/// rule in [`may_see`]: on the record as the change left it.
pub async fn change_matches(
    app: &Arc<App>,
    caller: &Caller,
    change: &Arc<Change>,
    filter: &Arc<a2app_filter::Expr>,
) -> Result<bool, Error> {
    let ctx = rules::context(app, caller, "GET", None);
    let (change, filter) = (Arc::clone(change), Arc::clone(filter));
    read(app, move |app| {
        let schema = &app.definition.schema;
        Ok(app.store.record_satisfies(schema, &change.entity, &change.record, &filter, &ctx)?)
    })
    .await
}

/// Whether the record with `id` satisfies `rule` for this caller.
async fn visible(
    app: &Arc<App>,
    caller: &Caller,
    entity_name: &str,
    id: &str,
    rule: a2app_filter::Expr,
) -> Result<bool, Error> {
    // The id was validated as [a-z0-9]{15}; the filter is parsed, and its value bound.
    let by_id = a2app_filter::parse(&format!("id = '{id}'")).map_err(|e| Error::Internal(e.to_string()))?;
    let ctx = rules::context(app, caller, "GET", None);
    let name = entity_name.to_owned();
    let found = read(app, move |app| {
        let query = ListQuery {
            entity: &name,
            filter: Some(&by_id),
            rule: Some(&rule),
            sort: &[],
            page: 1,
            per_page: 1,
            skip_total: true,
            ctx: &ctx,
        };
        Ok(app.store.list(&app.definition.schema, &query)?)
    })
    .await?;
    Ok(!found.rows.is_empty())
}

/// A write the app refused an agent is kept ([`crate::refusals`]), so a
/// claim of it reads "refused", and the person sees what was tried.
pub async fn create(
    app: &Arc<App>,
    caller: &Caller,
    entity_name: &str,
    body: &Value,
    opts: &WriteOptions,
) -> Result<Map<String, Value>, Error> {
    let result = create_record(app, caller, entity_name, body, opts).await;
    if let Err(e) = &result {
        let attempt = Attempt { action: "create", entity: entity_name, id: "", body };
        refusals::keep(app, caller, attempt, e).await;
    }
    result
}

pub(crate) async fn create_record(
    app: &Arc<App>,
    caller: &Caller,
    entity_name: &str,
    body: &Value,
    opts: &WriteOptions,
) -> Result<Map<String, Value>, Error> {
    let ent = entity(app, entity_name)?;
    let rule = rules::rule(app, caller, entity_name, rules::Action::Create)?;
    let (fields_body, secret) = users_secrets(app, caller, entity_name, body, None).await?;
    let (fields_body, modifiers, modifier_violations) = modifier::split(ent, &fields_body);
    let accepted =
        guarded(app, entity_name, ent, &fields_body, Mode::Create, &meta(entity_name, None), &opts.inexact).await;
    let (planned, file_violations) = files::check(entity_name, ent, &opts.files);
    let mut extra = secret.violations;
    extra.extend(file_violations);
    extra.extend(modifier_violations);
    // A create's modifiers start from an empty record.
    let changed = match modifier::resolve(entity_name, ent, &Map::new(), &modifiers) {
        Ok(values) => values,
        Err(violations) => {
            extra.extend(violations);
            Map::new()
        }
    };
    let mut accepted = merge_violations(accepted, extra)?;
    accepted.values.extend(changed);
    let id = accepted.id.clone().unwrap_or_else(id::ordered);
    for p in &planned {
        accepted.values.insert(p.field.clone(), Value::String(p.stored.clone()));
    }
    let mut write = new_write(app, caller, entity_name, WriteKind::Create { id: id.clone() }, accepted.values, opts)?;
    write.password_hash = secret.hash;
    write.rule = rule.map(|expr| RuleCheck { expr, ctx: rules::context(app, caller, "POST", Some(body)) });
    save_files(app, entity_name, &id, planned.clone()).await?;
    let written = store_write(app, caller, write).await.map_err(|e| {
        // The record was not written: its files must not stay behind.
        for p in &planned {
            files::remove(app, entity_name, &id, &p.stored);
        }
        match e {
            Error::DuplicateId(_) => Error::DuplicateId(id.clone()),
            other => other,
        }
    })?;
    respond(app, caller, entity_name, written, &opts.shape).await
}

pub async fn update(
    app: &Arc<App>,
    caller: &Caller,
    entity_name: &str,
    id: &str,
    body: &Value,
    opts: &WriteOptions,
) -> Result<Map<String, Value>, Error> {
    let result = update_record(app, caller, entity_name, id, body, opts).await;
    if let Err(e) = &result {
        refusals::keep(app, caller, Attempt { action: "update", entity: entity_name, id, body }, e).await;
    }
    result
}

pub(crate) async fn update_record(
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
    let rule = rules::rule(app, caller, entity_name, rules::Action::Update)?;
    let (fields_body, secret) = users_secrets(app, caller, entity_name, body, Some(id)).await?;
    let (fields_body, modifiers, modifier_violations) = modifier::split(ent, &fields_body);
    let accepted =
        guarded(app, entity_name, ent, &fields_body, Mode::Update, &meta(entity_name, Some(id)), &opts.inexact).await;
    let (planned, file_violations) = files::check(entity_name, ent, &opts.files);
    let mut extra = secret.violations;
    extra.extend(file_violations);
    extra.extend(modifier_violations);
    let mut accepted = merge_violations(accepted, extra)?;
    for p in &planned {
        accepted.values.insert(p.field.clone(), Value::String(p.stored.clone()));
    }
    // Files this write replaces or clears are removed once it committed.
    let replaced = replaced_files(app, entity_name, ent, id, &accepted.values).await?;
    let kind = WriteKind::Update { id: id.to_owned(), if_match: version(opts) };
    let mut write = new_write(app, caller, entity_name, kind, accepted.values, opts)?;
    write.modifiers = modifiers;
    write.password_hash = secret.hash;
    write.rule = rule.map(|expr| RuleCheck { expr, ctx: rules::context(app, caller, "PATCH", Some(body)) });
    save_files(app, entity_name, id, planned.clone()).await?;
    let written = store_write(app, caller, write).await.map_err(|e| {
        for p in &planned {
            files::remove(app, entity_name, id, &p.stored);
        }
        match e {
            // An update or delete a rule refuses hides the record.
            Error::Forbidden(_) => Error::NotFound,
            other => other,
        }
    })?;
    for name in replaced {
        files::remove(app, entity_name, id, &name);
    }
    respond(app, caller, entity_name, written, &opts.shape).await
}

/// Deletes a record; the answer is its receipt.
pub async fn delete(
    app: &Arc<App>,
    caller: &Caller,
    entity_name: &str,
    id: &str,
    opts: &WriteOptions,
) -> Result<Receipt, Error> {
    let result = delete_record(app, caller, entity_name, id, opts).await;
    if let Err(e) = &result {
        let attempt = Attempt { action: "delete", entity: entity_name, id, body: &Value::Null };
        refusals::keep(app, caller, attempt, e).await;
    }
    result
}

pub(crate) async fn delete_record(
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
    let rule = rules::rule(app, caller, entity_name, rules::Action::Delete)?;
    let mut write = new_write(
        app,
        caller,
        entity_name,
        WriteKind::Delete { id: id.to_owned(), if_match: version(opts) },
        Map::new(),
        opts,
    )?;
    write.rule = rule.map(|expr| RuleCheck { expr, ctx: rules::context(app, caller, "DELETE", None) });
    let written = store_write(app, caller, write).await?;
    files::remove_all(app, entity_name, id);
    log_agent(app, caller, &written.receipt);
    Ok(written.receipt)
}

/// Writes uploaded files before the record that names them.
async fn save_files(app: &Arc<App>, entity_name: &str, id: &str, planned: Vec<files::Planned>) -> Result<(), Error> {
    if planned.is_empty() {
        return Ok(());
    }
    let app2 = Arc::clone(app);
    let (name, id) = (entity_name.to_owned(), id.to_owned());
    blocking(move || {
        files::save(&app2, &name, &id, &planned).map_err(|e| Error::Internal(format!("cannot store a file: {e}")))
    })
    .await
}

/// The stored file names a write replaces (binary fields it sets or clears).
async fn replaced_files(
    app: &Arc<App>,
    entity_name: &str,
    ent: &Entity,
    id: &str,
    values: &Map<String, Value>,
) -> Result<Vec<String>, Error> {
    let binary: Vec<&String> = values
        .keys()
        .filter(|k| ent.fields.get(*k).is_some_and(|f| matches!(f.kind, protocol::schema::FieldType::Binary { .. })))
        .collect();
    if binary.is_empty() {
        return Ok(Vec::new());
    }
    let Some(current) = fetch(app, entity_name, id).await? else { return Ok(Vec::new()) };
    Ok(binary
        .into_iter()
        .filter_map(|f| {
            current
                .get(f)
                .and_then(Value::as_str)
                .filter(|old| !old.is_empty() && values.get(f).and_then(Value::as_str) != Some(old))
        })
        .map(str::to_owned)
        .collect())
}

/// The path of a stored file a record names in one of its binary fields.
pub async fn file(
    app: &Arc<App>,
    caller: &Caller,
    entity_name: &str,
    id: &str,
    name: &str,
) -> Result<std::path::PathBuf, Error> {
    let ent = entity(app, entity_name)?;
    // Reading the record applies the view rule; the file is only as visible as it.
    let record = view(app, caller, entity_name, id, &Shape::default()).await?;
    let named = ent.fields.iter().any(|(f, spec)| {
        matches!(spec.kind, protocol::schema::FieldType::Binary { .. })
            && record.get(f).and_then(Value::as_str) == Some(name)
    });
    if !named || !files::is_plain_name(name) {
        return Err(Error::NotFound);
    }
    Ok(files::dir(app, entity_name, id).join(name))
}

/// Password keys of a users write, checked and hashed apart from the fields.
#[derive(Default)]
struct Secret {
    hash: Option<String>,
    violations: Vec<protocol::Violation>,
}

/// Splits `password`, `passwordConfirm` and `oldPassword` off a write to the
/// users of a multi-user app; for anything else the body is left as it is.
async fn users_secrets(
    app: &Arc<App>,
    caller: &Caller,
    entity_name: &str,
    body: &Value,
    updating: Option<&str>,
) -> Result<(Value, Secret), Error> {
    use protocol::{ErrorCode, Violation};
    let multi = app.definition.config.auth_mode == a2app_definition::AuthMode::MultiUser;
    let Value::Object(map) = body else { return Ok((body.clone(), Secret::default())) };
    if !multi || entity_name != a2app_definition::users::ENTITY {
        return Ok((body.clone(), Secret::default()));
    }
    let mut fields = map.clone();
    let mut take = |k: &str| fields.remove(k);
    let (password, confirm, old) = (take("password"), take("passwordConfirm"), take("oldPassword"));
    let mut secret = Secret::default();
    let text = |v: &Option<Value>| v.as_ref().and_then(Value::as_str).map(str::to_owned);
    let bad = |code: ErrorCode, field: &str, message: &str, expected: &str| {
        Violation::new(code, message).field(field).expected(expected)
    };
    let Some(new) = text(&password) else {
        if password.is_some() {
            secret.violations.push(bad(
                ErrorCode::InvalidString,
                "password",
                "\"password\" must be a string",
                "a string of 8 to 256 characters",
            ));
        } else if updating.is_none() {
            secret.violations.push(bad(
                ErrorCode::RequiredField,
                "password",
                "\"password\" is required",
                "a string of 8 to 256 characters",
            ));
        }
        return Ok((Value::Object(fields), secret));
    };
    let len = new.chars().count();
    if !(a2app_definition::users::MIN_PASSWORD..=a2app_definition::users::MAX_PASSWORD).contains(&len) {
        secret.violations.push(bad(
            ErrorCode::InvalidString,
            "password",
            "\"password\" must be 8 to 256 characters long",
            "a string of 8 to 256 characters",
        ));
    }
    if text(&confirm).as_deref() != Some(new.as_str()) {
        secret.violations.push(bad(
            ErrorCode::InvalidString,
            "passwordConfirm",
            "\"passwordConfirm\" must repeat the password",
            "the same value as password",
        ));
    }
    // Users changing their own password prove they know the old one.
    if let Some(id) = updating
        && caller.user.as_ref().is_some_and(|u| u.id == id)
    {
        let email = caller
            .user
            .as_ref()
            .and_then(|u| u.record.get("email"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let old = text(&old).unwrap_or_default();
        let app2 = Arc::clone(app);
        let ok = blocking(move || {
            let creds = app2.store.credentials(&app2.definition.schema, &email)?;
            Ok(creds.is_some_and(|c| a2app_access::auth::password_matches(&c.password_hash, &old)))
        })
        .await?;
        if !ok {
            secret.violations.push(bad(
                ErrorCode::InvalidString,
                "oldPassword",
                "\"oldPassword\" is missing or wrong",
                "the current password",
            ));
        }
    }
    if secret.violations.is_empty() {
        let hash = blocking(move || a2app_access::auth::hash_password(&new).map_err(Error::Internal)).await?;
        secret.hash = Some(hash);
    }
    Ok((Value::Object(fields), secret))
}

/// One answer for the guard's violations and the password checks.
fn merge_violations(
    accepted: Result<guard::Accepted, Error>,
    mut extra: Vec<protocol::Violation>,
) -> Result<guard::Accepted, Error> {
    match accepted {
        Ok(a) if extra.is_empty() => Ok(a),
        Ok(_) => Err(Error::Invalid(extra)),
        Err(Error::Invalid(mut v)) => {
            v.append(&mut extra);
            Err(Error::Invalid(v))
        }
        Err(other) => Err(other),
    }
}

fn new_write(
    app: &App,
    caller: &Caller,
    entity_name: &str,
    kind: WriteKind,
    values: Map<String, Value>,
    opts: &WriteOptions,
) -> Result<Write, Error> {
    check_key(opts.key.as_deref())?;
    let action = match &kind {
        WriteKind::Create { .. } => Action::Create,
        WriteKind::Update { .. } => Action::Update,
        WriteKind::Delete { .. } => Action::Delete,
    };
    Ok(Write {
        entity: entity_name.to_owned(),
        kind,
        values,
        now: app.clock.now(),
        key: opts.key.as_deref().map(|key| stored_key(caller, key)),
        agent: caller.agent.clone(),
        caller: caller.label(),
        timezone: app.definition.config.timezone.clone(),
        password_hash: None,
        labels_from: labels_from(caller).map(Arc::new),
        rule: None,
        on_commit: Some(feed(app, entity_name, action)),
        modifiers: Vec::new(),
    })
}

/// The entities whose records a text for `caller` may name by label (`None`:
/// all): a grant's, those its scopes read or write.
pub fn labels_from(caller: &Caller) -> Option<std::collections::BTreeSet<String>> {
    caller.grant.as_ref().map(|grant| {
        let readable = grant.scopes.iter().filter_map(|scope| match scope {
            Scope::Read(e) | Scope::Write(e) => Some(e.clone()),
            Scope::Operation(_) => None,
        });
        readable.collect()
    })
}

/// Publishes the committed change to the realtime hub, from the committing
/// thread (see `OnCommit`): in commit order, and before the writing request
/// is answered. Nothing is built while nobody listens.
fn feed(app: &App, entity_name: &str, action: Action) -> OnCommit {
    let (hub, entity) = (app.realtime.clone(), entity_name.to_owned());
    OnCommit(Arc::new(move |written: &Written| {
        if hub.has_subscribers() {
            hub.publish(Change::new(action, entity.clone(), present(&entity, written.row.clone())));
        }
    }))
}

/// For agents, appends the agent log (the change itself was published by
/// the write's `OnCommit`).
fn log_agent(app: &App, caller: &Caller, receipt: &Receipt) {
    if caller.kind == CallerKind::Agent || caller.agent.is_some() {
        app.agent_log.append(receipt);
    }
}

/// The stored record in PocketBase's shape, plus `_receipt`.
async fn respond(
    app: &Arc<App>,
    caller: &Caller,
    entity_name: &str,
    written: Written,
    shape: &Shape,
) -> Result<Map<String, Value>, Error> {
    let record = present(entity_name, written.row);
    log_agent(app, caller, &written.receipt);
    // The write is durable already: an expansion too large for one answer must
    // not report it as failed (a caller would write it again), so the record
    // comes back unexpanded, saying why under `_expand`.
    let kept = shape.expand.is_some().then(|| record.clone());
    let mut out = match (finish(app, caller, entity_name, record, shape).await, kept) {
        (Err(Error::ExpandTooLarge(why)), Some(mut record)) => {
            rules::redact(app, caller, entity_name, &mut record);
            let mut out = fields::Picker::parse(shape.fields.as_deref()).apply(record);
            let refused = Error::ExpandTooLarge(why).to_body();
            out.insert("_expand".into(), serde_json::to_value(refused).map_err(|e| Error::Internal(e.to_string()))?);
            out
        }
        (other, _) => other?,
    };
    let receipt = serde_json::to_value(&written.receipt).map_err(|e| Error::Internal(e.to_string()))?;
    out.insert("_receipt".into(), receipt);
    Ok(out)
}

/// Expands and picks fields of one record for a response.
pub async fn finish(
    app: &Arc<App>,
    caller: &Caller,
    entity_name: &str,
    record: Map<String, Value>,
    shape: &Shape,
) -> Result<Map<String, Value>, Error> {
    let mut record = record;
    rules::redact(app, caller, entity_name, &mut record);
    let mut items = vec![record];
    expand::apply(app, caller, entity_name, &mut items, shape.expand.as_deref()).await?;
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
    inexact: &[a2app_definition::number::Inexact],
) -> Result<guard::Accepted, Error> {
    let (accepted, mut violations) = guard::inspect_body(entity_name, ent, body, mode, meta);
    guard::inexact(ent, inexact, &mut violations);
    if violations.is_empty() {
        return Ok(accepted);
    }
    let has_refs = accepted.values.keys().any(|k| ent.fields.get(k).is_some_and(|f| f.kind.target().is_some()));
    if has_refs {
        let (name, values) = (entity_name.to_owned(), accepted.values.clone());
        let missing = read(app, move |app| Ok(app.store.missing_refs(&app.definition.schema, &name, &values)?)).await?;
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
    let ids = [id.to_owned()];
    let name = entity_name.to_owned();
    let rows = read(app, move |app| Ok(app.store.get_many(&app.definition.schema, &name, &ids)?)).await?;
    Ok(rows.into_iter().next())
}

/// The version a conditional write holds to. `*` asks only that the record
/// exist (RFC 9110 §13.1.1), which every update and delete needs anyway.
fn version(opts: &WriteOptions) -> Option<String> {
    opts.if_match.clone().filter(|v| v.trim() != "*")
}

async fn store_write(app: &Arc<App>, caller: &Caller, write: Write) -> Result<Written, Error> {
    let entity = write.entity.clone();
    match app.store.write(&app.definition.schema, write).await {
        Ok(Ok(written)) => Ok(written),
        Ok(Err(a2app_store::StoreError::VersionConflict(current))) => {
            Err(conflict(app, caller, &entity, *current).await)
        }
        Ok(Err(e)) => Err(e.into()),
        Err(_) => Err(Error::Internal("the writer has stopped".into())),
    }
}

/// A version conflict shows the record as it is now, in its record shape,
/// only to a caller who may view it (a rule may let one update or delete
/// what it may not read; a user's email stays redacted); anyone else learns
/// its `id` and current `updated`, enough to read it again or give up.
async fn conflict(app: &Arc<App>, caller: &Caller, entity_name: &str, current: Row) -> Error {
    let seen = match rules::rule(app, caller, entity_name, rules::Action::View) {
        Ok(None) => true,
        Ok(Some(rule)) => {
            let ctx = rules::context(app, caller, "GET", None);
            let (name, row) = (entity_name.to_owned(), current.clone());
            read(app, move |app| Ok(app.store.record_satisfies(&app.definition.schema, &name, &row, &rule, &ctx)?))
                .await
                .unwrap_or(false)
        }
        Err(_) => false,
    };
    let record = if seen {
        let mut record = present(entity_name, current);
        rules::redact(app, caller, entity_name, &mut record);
        record
    } else {
        ["id", "updated"].into_iter().filter_map(|k| Some((k.to_owned(), current.get(k)?.clone()))).collect()
    };
    Error::VersionConflict(Box::new(record))
}

/// Audit entries after `since`, oldest first (at most `limit`).
/// Who may read the receipts: anyone who may read the app in a single-user
/// app; in a multi-user app only its owner (the agent token alone), since a
/// receipt holds stored values that the entities' rules would hide from
/// other users, and a request's params and result.
pub fn may_read_receipts(app: &App, caller: &Caller) -> Result<(), Error> {
    if caller.grant.is_some() {
        // Receipts hold every entity's values, beyond any grant's scopes.
        return Err(Error::Forbidden(
            "a grant does not read the app's receipts; its own writes answer with theirs".into(),
        ));
    }
    if app.definition.config.auth_mode != a2app_definition::AuthMode::MultiUser || caller.is_owner() {
        return Ok(());
    }
    Err(Error::Unauthorized("in a multi-user app the receipts are read with the agent token (X-LUI-Token)".into()))
}

pub async fn receipts(app: &Arc<App>, since: Option<&str>, limit: u64) -> Result<Vec<Receipt>, Error> {
    let since = feed_since(since)?.unwrap_or_default();
    let entries = read(app, move |app| Ok(app.store.receipts(&since, limit)?)).await?;
    Ok(entries.into_iter().map(|e| e.receipt).collect())
}

/// A write's body sent as a form (multipart): the JSON objects of its
/// `@jsonPayload` parts, and its text parts with every value of each name.
#[derive(Debug, Default)]
pub struct Form {
    pub payloads: Vec<Map<String, Value>>,
    pub texts: indexmap::IndexMap<String, Vec<String>>,
    /// The numbers of the `@jsonPayload` parts that their parse could not keep.
    pub inexact: Vec<a2app_definition::number::Inexact>,
}

/// The record a form carries, for the guard. A form's values are text, so
/// each is read as the field's type writes it: a number field's `"5"` is 5 and
/// a boolean's `"true"` true, as the PocketBase SDK sends them beside a file;
/// text that does not read as the type stays text, for the guard to refuse
/// (`"abc"` is never 0). A name sent more than once is a list, as PocketBase
/// reads a form; a list field's single value is a list of one. Every
/// `@jsonPayload` is merged (the SDK sends one per object value); a field
/// given twice across them and the text parts is refused, never one picked.
pub fn form_body(
    app: &App,
    entity_name: &str,
    form: Form,
) -> Result<(Value, Vec<a2app_definition::number::Inexact>), Error> {
    let ent = entity(app, entity_name)?;
    let mut inexact = form.inexact;
    let mut values = Map::new();
    let mut problems = Vec::new();
    let twice = |name: &str, problems: &mut Vec<protocol::Violation>| {
        problems.push(
            protocol::Violation::new(
                ErrorCode::InvalidJson,
                format!("\"{name}\" is given twice in this form (in @jsonPayload or as a part); send it once"),
            )
            .field(name.to_owned()),
        );
    };
    for payload in form.payloads {
        for (name, value) in payload {
            if values.contains_key(&name) {
                twice(&name, &mut problems);
            } else {
                values.insert(name, value);
            }
        }
    }
    for (name, texts) in form.texts {
        if values.contains_key(&name) {
            twice(&name, &mut problems);
            continue;
        }
        let kind = ent.fields.get(&name).map(|f| &f.kind);
        let value = match (kind, texts.as_slice()) {
            (Some(FieldType::ListEnum { .. } | FieldType::ListRef { .. }), all) => {
                Value::Array(all.iter().cloned().map(Value::String).collect())
            }
            (Some(kind), [one]) => {
                let value = form_value(kind, one);
                // A number read from text is held to what the text says, as
                // one in JSON is: `"18446744073709551617"` is no double.
                let t = one.trim();
                if value.is_number()
                    && serde_json::from_str::<serde_json::Number>(t).is_ok()
                    && !a2app_definition::number::kept(t)
                {
                    inexact.push(a2app_definition::number::Inexact { path: vec![name.clone()], text: t.to_owned() });
                }
                value
            }
            (_, [one]) => Value::String(one.clone()),
            (_, all) => Value::Array(all.iter().cloned().map(Value::String).collect()),
        };
        values.insert(name, value);
    }
    if !problems.is_empty() {
        return Err(Error::Invalid(problems));
    }
    Ok((Value::Object(values), inexact))
}

/// One form value read as `kind` writes it, or left as text.
fn form_value(kind: &FieldType, text: &str) -> Value {
    match kind {
        FieldType::Number { .. } => text
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|n| n.is_finite() && !text.trim().is_empty())
            .and_then(|n| {
                // A whole number stays an integer, as JSON would carry it.
                if n.fract() == 0.0 && n.abs() < 9_007_199_254_740_992.0 {
                    Some(Value::from(n as i64))
                } else {
                    serde_json::Number::from_f64(n).map(Value::Number)
                }
            })
            .unwrap_or_else(|| Value::String(text.to_owned())),
        FieldType::Boolean => match text {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => Value::String(text.to_owned()),
        },
        _ => Value::String(text.to_owned()),
    }
}

/// The most entries one read of a feed (receipts, the agent log) answers.
pub const MAX_FEED_LIMIT: u64 = 1000;

/// A feed's `limit`: 100 when absent, else 1 to [`MAX_FEED_LIMIT`]. One
/// beyond is refused rather than cut, since a caller asking for more than it
/// got could take the answer for everything there is.
pub fn feed_limit(limit: Option<u64>) -> Result<u64, Error> {
    match limit {
        None => Ok(100),
        Some(n @ 1..=MAX_FEED_LIMIT) => Ok(n),
        Some(n) => Err(Error::InvalidQuery(format!("limit is a count from 1 to {MAX_FEED_LIMIT}, got {n}"))),
    }
}

/// A feed's `since`, in the wire form the entries carry (so it compares as
/// text); `None` when absent or blank.
pub fn feed_since(since: Option<&str>) -> Result<Option<String>, Error> {
    since
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            datetime::parse(s)
                .map(datetime::format)
                .ok_or_else(|| Error::InvalidQuery(format!("since must be an ISO 8601 date or datetime, got \"{s}\"")))
        })
        .transpose()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_one_to_255_printable_ascii_characters() {
        for ok in [None, Some("k"), Some("bench-1 2/3"), Some(&*"k".repeat(MAX_KEY_LEN))] {
            assert!(check_key(ok).is_ok(), "{ok:?}");
        }
        for bad in ["", "a\nb", "tab\there", "clé", "\u{7f}", &"k".repeat(MAX_KEY_LEN + 1)] {
            let e = check_key(Some(bad)).expect_err(bad);
            assert_eq!(e.to_body().code, protocol::ErrorCode::InvalidQuery, "{bad:?}");
        }
    }
}
