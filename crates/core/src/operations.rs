//! Running operations: the app's verbs, as declared in `operations.json` or
//! registered as Rust handlers by a library user.
//!
//! [`invoke`] is the one entry point every transport calls: it finds the
//! operation, checks its params with the guard's vocabulary, asks for an
//! approval when the operation is destructive, runs the executor and appends
//! an audit entry for the run. `crud` writes go through `records`, so the
//! guard, the read-back, receipts, the audit log and realtime apply to them
//! unchanged. `http` calls reach the app's backend through the [`Backend`]
//! trait, which a transport implements (core knows no HTTP library). `job`
//! operations hand over to `crate::jobs` and answer at once.
//!
//! Authorization and rate limits are the caller's business before this is
//! called (`access::authorize` with a write intent); the [`Caller`] it
//! established is passed through unchanged to every write, so the rules that
//! apply to a user's own writes apply to the writes of the operations they run.

use crate::app::App;
use crate::records::{self, WriteOptions};
use a2app_access::caller::{Caller, CallerKind};
use a2app_definition::error::Error;
use a2app_definition::operations::{Crud, CrudAction, Executor, Http, Operation, bind_filter, placeholder};
use protocol::operation::{Invoked, JobStarted};
use protocol::page::Page;
use protocol::receipt::Receipt;
use protocol::{ErrorCode, Violation};
use serde_json::{Map, Value};
use std::sync::Arc;

/// The longest string param accepted.
pub const MAX_PARAM_CHARS: usize = 10_000;

pub use crate::handlers::{
    Backend, BackendError, BackendRequest, BackendResponse, BoxFuture, Context, Handler, JobHandler,
    MAX_BACKEND_RESPONSE, Outcome, Registry, Runtime,
};

/// One call of an operation.
#[derive(Debug, Clone, Default)]
pub struct Invocation {
    /// The params as sent (a JSON object; `null` means none).
    pub params: Value,
    /// `X-A2App-Approval`.
    pub approval: Option<String>,
    /// `Idempotency-Key`: applied to single-record crud writes, claimed for
    /// jobs (a replay names the job it started), passed on to the backend and
    /// to native handlers. Filter-wide crud writes ignore it: repeating them
    /// finds nothing left to change.
    pub key: Option<String>,
    /// A run started by the app's own scheduler: its author approved it by scheduling it.
    pub(crate) scheduled: bool,
}

impl Invocation {
    pub fn new(params: Value) -> Invocation {
        Invocation { params, ..Default::default() }
    }

    pub fn approval(mut self, key: Option<String>) -> Invocation {
        self.approval = key;
        self
    }

    pub fn idempotency_key(mut self, key: Option<String>) -> Invocation {
        self.key = key;
        self
    }

    pub(crate) fn scheduled() -> Invocation {
        Invocation { scheduled: true, ..Default::default() }
    }
}

/// What an invocation answers.
#[derive(Debug, Clone)]
pub enum Answer {
    Done(Invoked),
    Started(JobStarted),
}

/// The operations as `GET /api/_ops` and describe list them.
pub fn list(app: &App) -> Vec<protocol::describe::DescribedOperation> {
    a2app_definition::describe::describe(&app.definition, &app.schema_version).operations
}

/// Runs an operation for `caller`, who was authorized for a write.
/// A run the app refused an agent is kept ([`crate::refusals`]), as a
/// refused record write is.
pub async fn invoke(app: &Arc<App>, caller: &Caller, name: &str, invocation: Invocation) -> Result<Answer, Error> {
    let params = invocation.params.clone();
    let result = run(app, caller, name, invocation).await;
    if let Err(e) = &result {
        let attempt = crate::refusals::Attempt { action: "run", entity: "", id: name, body: &params };
        crate::refusals::keep(app, caller, attempt, e).await;
    }
    result
}

async fn run(app: &Arc<App>, caller: &Caller, name: &str, invocation: Invocation) -> Result<Answer, Error> {
    let op = app
        .definition
        .operations
        .iter()
        .find(|o| o.name == name)
        .ok_or_else(|| Error::UnknownOperation(name.to_owned()))?;
    caller.require(protocol::grant::Scope::Operation(op.name.clone()))?;
    records::check_key(invocation.key.as_deref())?;
    if invocation.approval.is_some() && !op.destructive {
        // Nothing asks for one: a key sent anyway was meant for another call.
        return Err(Error::Invalid(vec![
            Violation::new(
                ErrorCode::InvalidParam,
                format!(
                    "{} is not destructive: it runs without an approval key, and this one approves nothing",
                    op.name
                ),
            )
            .field("approvalKey"),
        ]));
    }
    let params = normalize(op, &invocation.params)?;
    if op.destructive && !invocation.scheduled {
        crate::approvals::check(app, caller, &op.name, &params, invocation.approval.as_deref()).await?;
    }
    let done = |outcome: Outcome| {
        Answer::Done(Invoked {
            ok: true,
            operation: op.name.clone(),
            result: outcome.result,
            receipts: outcome.receipts,
        })
    };
    let scheduled = invocation.scheduled;
    let result = async {
        Ok(match &op.run {
            Executor::Crud(c) => done(crud(app, caller, c, &params, invocation.key).await?),
            Executor::Http(h) => done(http(app, caller, op, h, &params, invocation.key).await?),
            Executor::Native => {
                let handler = app
                    .operations
                    .registry()
                    .native_handler(&op.name)
                    .ok_or_else(|| Error::Internal(format!("no handler registered for {}", op.name)))?;
                let ctx = Context {
                    app: Arc::clone(app),
                    caller: caller.clone(),
                    operation: op.name.clone(),
                    params: params.clone(),
                    key: invocation.key.clone(),
                };
                // On its own task, so a panicking handler is an internal error, not a dropped connection.
                let outcome = tokio::spawn(handler(ctx))
                    .await
                    .map_err(|e| Error::Internal(format!("the handler of {} panicked: {e}", op.name)))?;
                done(outcome?)
            }
            Executor::Job(spec) => Answer::Started(
                crate::jobs::start(app, caller, op, spec, params.clone(), invocation.key.clone()).await?,
            ),
        })
    }
    .await;
    // A refused call is the caller's to see; a scheduled run that fails has
    // no caller watching, so the audit log is where it shows.
    if result.is_ok() || scheduled {
        audit(app, caller, op, &params, result.as_ref(), scheduled).await;
    }
    result
}

/// One audit entry per run, attributed like a write; a failure to record it
/// is logged, since the run itself already happened.
///
/// The audit entry of a run that started a job says which job in its text
/// (the receipt has no field for it): [`started_job`] reads it back.
async fn audit(
    app: &Arc<App>,
    caller: &Caller,
    op: &Operation,
    params: &Map<String, Value>,
    result: Result<&Answer, &Error>,
    scheduled: bool,
) {
    let how = if scheduled { "Ran scheduled operation" } else { "Ran operation" };
    let text = match result {
        Ok(Answer::Done(d)) if d.receipts.is_empty() => format!("{how} {}", op.name),
        Ok(Answer::Done(d)) => format!("{how} {} ({} records written)", op.name, d.receipts.len()),
        Ok(Answer::Started(s)) => format!("{how} {}{STARTED_JOB}{}", op.name, s.job_id),
        Err(e) => format!("{how} {}: failed with {}", op.name, e.code()),
    };
    let receipt = Receipt {
        text,
        action: "operation".into(),
        entity: String::new(),
        id: op.name.clone(),
        fields: params.clone(),
        at: a2app_definition::datetime::format(app.clock.now()),
        agent: caller.agent.clone(),
        caller: caller.label(),
        before: Default::default(),
    };
    let store = Arc::clone(&app.store);
    let entry = receipt.clone();
    if let Err(e) = a2app_store::blocking(move || Ok(store.audit(&entry)?)).await {
        tracing::error!(operation = %op.name, error = %e, "cannot audit an operation run");
    }
    if caller.kind == CallerKind::Agent || caller.agent.is_some() {
        app.agent_log.append(&receipt);
    }
}

/// Checks the params against their declarations, reporting every problem at
/// once in the guard's vocabulary, and applies defaults.
pub fn normalize(op: &Operation, raw: &Value) -> Result<Map<String, Value>, Error> {
    normalize_params(&op.name, &op.params, raw)
}

/// [`normalize`] for any list of declared params (an operation's, or a
/// request capability's params and result); `owner` names them in messages.
pub fn normalize_params(
    owner: &str,
    params: &[a2app_definition::operations::Param],
    raw: &Value,
) -> Result<Map<String, Value>, Error> {
    let empty = Map::new();
    let given = match raw {
        Value::Null => &empty,
        Value::Object(o) => o,
        other => {
            let v = Violation::new(ErrorCode::InvalidJson, "the params are a JSON object of name → value")
                .expected("a JSON object")
                .got(other.clone());
            return Err(Error::Invalid(vec![v]));
        }
    };
    let mut violations = Vec::new();
    let names: Vec<&str> = params.iter().map(|p| p.name.as_str()).collect();
    for key in given.keys().filter(|k| !names.contains(&k.as_str())) {
        let declared = if names.is_empty() { "none".to_owned() } else { names.join(", ") };
        violations.push(
            Violation::new(
                ErrorCode::InvalidParam,
                format!("\"{key}\" is not a param of {} (params: {declared})", owner),
            )
            .field(key.clone()),
        );
    }
    let mut out = Map::new();
    for p in params {
        match given.get(&p.name) {
            // null is no value: read as absent, it would take the default or
            // leave a field as it is and answer as if the call said so.
            Some(Value::Null) => violations.push(
                Violation::new(
                    ErrorCode::InvalidParam,
                    format!("\"{}\" is null: send a {}, or leave it out", p.name, p.kind.as_str()),
                )
                .field(p.name.clone())
                .expected(format!("a {}", p.kind.as_str())),
            ),
            None => {
                if let Some(d) = &p.default {
                    out.insert(p.name.clone(), d.clone());
                } else if p.required {
                    violations.push(
                        Violation::new(ErrorCode::InvalidParam, format!("\"{}\" is required", p.name))
                            .field(p.name.clone())
                            .expected(format!("a {}", p.kind.as_str())),
                    );
                }
            }
            Some(v) if !p.kind.admits(v) => {
                let code = match p.kind {
                    a2app_definition::operations::ParamType::String => ErrorCode::InvalidString,
                    a2app_definition::operations::ParamType::Number => ErrorCode::InvalidNumber,
                    a2app_definition::operations::ParamType::Boolean => ErrorCode::InvalidBoolean,
                };
                violations.push(
                    Violation::new(code, format!("\"{}\" must be a {}", p.name, p.kind.as_str()))
                        .field(p.name.clone())
                        .expected(format!("a {}", p.kind.as_str()))
                        .got(v.clone()),
                );
            }
            Some(v) if !p.choices.is_empty() && !p.choices.contains(v) => violations.push(
                Violation::new(ErrorCode::InvalidEnum, format!("\"{}\" must be one of the listed values", p.name))
                    .field(p.name.clone())
                    .expected(Value::from(p.choices.clone()).to_string())
                    .got(v.clone()),
            ),
            Some(Value::String(s)) if s.chars().count() > MAX_PARAM_CHARS => violations.push(
                Violation::new(
                    ErrorCode::TooLong,
                    format!("\"{}\" is longer than {MAX_PARAM_CHARS} characters", p.name),
                )
                .field(p.name.clone()),
            ),
            Some(v) => {
                out.insert(p.name.clone(), v.clone());
            }
        }
    }
    if violations.is_empty() { Ok(out) } else { Err(Error::Invalid(violations)) }
}

/// A template with its `{:param}` placeholders filled; `None` when it names
/// a param that was not given (an optional one without default).
fn fill(template: &Value, params: &Map<String, Value>) -> Option<Value> {
    match template.as_str().and_then(placeholder) {
        Some(name) => params.get(name).cloned(),
        None => Some(template.clone()),
    }
}

fn fill_set(set: &Map<String, Value>, params: &Map<String, Value>) -> Value {
    Value::Object(set.iter().filter_map(|(k, t)| fill(t, params).map(|v| (k.clone(), v))).collect())
}

/// A stored record and its receipt, taken apart.
fn split_receipt(mut record: Map<String, Value>) -> Result<Outcome, Error> {
    let receipt = record
        .remove("_receipt")
        .map(serde_json::from_value::<Receipt>)
        .transpose()
        .map_err(|e| Error::Internal(format!("receipt: {e}")))?;
    Ok(Outcome { result: Value::Object(record), receipts: receipt.into_iter().collect() })
}

/// Its record writes go through the records path without keeping their
/// refusals: a refused run is kept once, as the run ([`invoke`]).
async fn crud(
    app: &Arc<App>,
    caller: &Caller,
    c: &Crud,
    params: &Map<String, Value>,
    key: Option<String>,
) -> Result<Outcome, Error> {
    let opts = WriteOptions { key, ..Default::default() };
    let record_id = || -> Result<String, Error> {
        let template = c.id.as_ref().ok_or_else(|| Error::Internal("crud without id".into()))?;
        match fill(template, params) {
            Some(Value::String(id)) => Ok(id),
            _ => {
                let name = template.as_str().and_then(placeholder).unwrap_or("id").to_owned();
                Err(Error::Invalid(vec![
                    Violation::new(ErrorCode::InvalidParam, format!("\"{name}\" must name the record (its id)"))
                        .field(name)
                        .expected("a record id"),
                ]))
            }
        }
    };
    match c.action {
        CrudAction::Create => {
            let body = if c.set.is_empty() { Value::Object(params.clone()) } else { fill_set(&c.set, params) };
            split_receipt(records::create_record(app, caller, &c.entity, &body, &opts).await?)
        }
        CrudAction::Update => {
            let body = fill_set(&c.set, params);
            if c.id.is_some() {
                return split_receipt(
                    records::update_record(app, caller, &c.entity, &record_id()?, &body, &opts).await?,
                );
            }
            let mut receipts = Vec::new();
            for row in records::rows(app, &c.entity, matching(app, caller, c, params)?).await? {
                let id = row.get("id").and_then(Value::as_str).unwrap_or_default().to_owned();
                let written =
                    records::update_record(app, caller, &c.entity, &id, &body, &WriteOptions::default()).await?;
                receipts.extend(split_receipt(written)?.receipts);
            }
            Ok(Outcome { result: serde_json::json!({ "updated": receipts.len() }), receipts })
        }
        CrudAction::Delete => {
            if c.id.is_some() {
                let receipt = records::delete_record(app, caller, &c.entity, &record_id()?, &opts).await?;
                return Ok(Outcome { result: serde_json::json!({ "deleted": 1 }), receipts: vec![receipt] });
            }
            let mut receipts = Vec::new();
            for row in records::rows(app, &c.entity, matching(app, caller, c, params)?).await? {
                let id = row.get("id").and_then(Value::as_str).unwrap_or_default().to_owned();
                receipts.push(records::delete_record(app, caller, &c.entity, &id, &WriteOptions::default()).await?);
            }
            Ok(Outcome { result: serde_json::json!({ "deleted": receipts.len() }), receipts })
        }
        CrudAction::List => {
            let per_page = records::MAX_PER_PAGE;
            let (rows, total) =
                records::first_page(app, &c.entity, matching(app, caller, c, params)?, per_page).await?;
            let items = rows
                .into_iter()
                .map(|r| {
                    let mut record = records::present(&c.entity, r);
                    a2app_access::rules::redact(app, caller, &c.entity, &mut record);
                    record
                })
                .collect();
            // The page holds the first thousand; the totals count every match,
            // as a records list does.
            let (total_items, total_pages) = (total as i64, total.div_ceil(per_page) as i64);
            let page = Page { page: 1, per_page, total_items, total_pages, items };
            Ok(Outcome::from(serde_json::to_value(page).map_err(|e| Error::Internal(e.to_string()))?))
        }
    }
}

/// The query of the rows a crud executor's fixed filter selects, its params
/// bound as values, within what the caller's list rule lets them see
/// (multi-user apps).
fn matching(
    app: &Arc<App>,
    caller: &Caller,
    c: &Crud,
    params: &Map<String, Value>,
) -> Result<records::RowsQuery, Error> {
    let rule = a2app_access::rules::rule(app, caller, &c.entity, a2app_access::rules::Action::List)?;
    let filter = match &c.filter {
        None => None,
        Some(text) => {
            // `check` refused a placeholder a call may leave out, so every one
            // is bound here: none compares with nothing.
            let (bound, _) = bind_filter(text).map_err(Error::Internal)?;
            Some(a2app_filter::parse(&bound).map_err(Error::InvalidFilter)?)
        }
    };
    let sort = match &c.sort {
        None => Vec::new(),
        Some(s) => a2app_filter::parse_sort(s).map_err(Error::InvalidFilter)?,
    };
    // The caller's request context (`@request.auth` for the rule), with the
    // params where the rewritten filter looks for them.
    let mut ctx = a2app_access::rules::context(app, caller, "POST", None);
    ctx.request.query = params.clone();
    Ok(records::RowsQuery { filter, rule, sort, ctx })
}

async fn http(
    app: &Arc<App>,
    caller: &Caller,
    op: &Operation,
    h: &Http,
    params: &Map<String, Value>,
    key: Option<String>,
) -> Result<Outcome, Error> {
    let backend = app.operations.backend().ok_or_else(|| Error::Backend {
        code: ErrorCode::BackendUnavailable,
        message: "this app has no backend to run the operation: its owner sets [backend] url in app.toml".into(),
        status: None,
        answer: None,
    })?;
    let in_query = matches!(h.method.as_str(), "GET" | "DELETE");
    let query = if in_query {
        params
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().map(str::to_owned).unwrap_or_else(|| v.to_string())))
            .collect()
    } else {
        Vec::new()
    };
    let request = BackendRequest {
        operation: op.name.clone(),
        method: h.method.clone(),
        path: h.path.clone(),
        query,
        body: (!in_query).then(|| Value::Object(params.clone())),
        timeout: h.timeout,
        caller: caller.clone(),
        key,
    };
    // Once the call was sent, a failure is no proof that nothing ran: the
    // answer says so, so an agent checks before calling again.
    let response = backend.call(request).await.map_err(|e| {
        let (code, status, message) = match e {
            BackendError::Unreachable(detail) => {
                tracing::warn!(operation = %op.name, %detail, "backend unreachable");
                (
                    ErrorCode::BackendUnavailable,
                    None,
                    "the app's backend is not reachable (nothing was sent); try again later".to_owned(),
                )
            }
            BackendError::Timeout => (
                ErrorCode::BackendTimeout,
                None,
                format!(
                    "the app's backend did not answer within {} s; the call was sent, so it may have run: check before calling again",
                    h.timeout.as_secs_f64()
                ),
            ),
            BackendError::Lost(detail) => {
                tracing::warn!(operation = %op.name, %detail, "backend answer lost");
                (
                    ErrorCode::BackendTimeout,
                    None,
                    "the connection to the app's backend broke before it answered; the call was sent, so it may have run: check before calling again".to_owned(),
                )
            }
            BackendError::Unreadable { status, why } if (200..300).contains(&status) => (
                ErrorCode::BackendError,
                Some(status),
                format!("the app's backend answered {status}, so the operation ran, but its answer could not be read ({why})"),
            ),
            BackendError::Unreadable { status, why } => (
                ErrorCode::BackendError,
                Some(status),
                format!("the app's backend answered {status}, and its answer could not be read ({why})"),
            ),
        };
        Error::Backend { code, message, status, answer: None }
    })?;
    match response.status {
        200..=299 => Ok(Outcome::from(response.body)),
        400..=499 => Err(Error::Backend {
            code: ErrorCode::BackendError,
            message: format!("the app's backend refused the call with status {}", response.status),
            status: Some(response.status),
            answer: Some(response.body),
        }),
        status @ 300..=399 => Err(Error::Backend {
            code: ErrorCode::BackendError,
            message: format!(
                "the app's backend answered with a redirect ({status}), which is not followed: whether the operation ran is the backend's to say"
            ),
            status: Some(status),
            answer: None,
        }),
        status => {
            tracing::warn!(operation = %op.name, status, "backend failed");
            Err(Error::Backend {
                code: ErrorCode::BackendError,
                message: format!("the app's backend failed with status {status}"),
                status: Some(status),
                answer: None,
            })
        }
    }
}

/// How an operation run's receipt text names the job it started.
const STARTED_JOB: &str = ": started job ";

/// The job an operation run's receipt text says it started, if any.
pub fn started_job(text: &str) -> Option<&str> {
    let (_, job) = text.rsplit_once(STARTED_JOB)?;
    (!job.is_empty() && job.bytes().all(|b| b.is_ascii_alphanumeric())).then_some(job)
}
