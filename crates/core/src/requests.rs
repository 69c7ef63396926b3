//! The app-to-agent queue (DESIGN §8): a person asks, from the app, for one
//! of the capabilities `requests.json` declares; a linked agent claims the
//! request, does the work and answers it; the answer reaches the app's page
//! through realtime (topic [`TOPIC`]) or a poll.
//!
//! The security shape is the point: the app asks only for a declared
//! capability with params checked against their declarations (data, never
//! instructions); only a person asks (the app's own page or a signed-in
//! user, never an agent, so agents cannot drive each other through an app);
//! only the agent token claims, and only the claim's key answers, with a
//! result checked like params. Consent per capability is the agent side's
//! (`a2app`): what an app may ask is public in describe, so a client can show
//! it in words before it ever delivers a request.

use crate::app::App;
use a2app_access::caller::{Caller, CallerKind};
use a2app_definition::error::Error;
use a2app_definition::guard::{object, only};
use a2app_definition::requests::Capability;
use a2app_definition::secret::digest;
use a2app_store::blocking;
use a2app_store::realtime::{Action, Change};
use a2app_store::{RequestConflict, RequestFilter, RequestStep};
use protocol::request::{AgentRequest, Claimed, RequestStatus};
use protocol::{ErrorCode, Violation};
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// The realtime topic of request changes (`_a2app_requests/*` or `/ID`).
pub const TOPIC: &str = "_a2app_requests";
/// Most requests one asker (the page, or one user) has waiting or claimed
/// at once: a page cannot flood agents, nor one user block another. Ten
/// times this is the most in all.
pub const MAX_OPEN: u64 = 100;
/// Longest text in one param: the person's data, not a document.
pub const MAX_PARAM_CHARS: usize = 1000;
/// Closed requests kept for reading back; older ones go.
pub const KEEP: u64 = 1000;
/// Largest encoded params and result.
pub const MAX_PARAMS_BYTES: usize = 4 * 1024;
pub const MAX_RESULT_BYTES: usize = 64 * 1024;
pub const MAX_FAILURE_CHARS: usize = 1000;
/// How long a claim holds unless the agent asks otherwise, and the bounds.
pub const DEFAULT_LEASE_SECONDS: i64 = 600;
pub const LEASE_SECONDS: std::ops::RangeInclusive<i64> = 30..=3600;

/// Asks for a capability: `{"capability": name, "params": {…}}`.
pub async fn ask(app: &Arc<App>, caller: &Caller, body: &Value) -> Result<AgentRequest, Error> {
    let Some(by) = person(app, caller) else {
        return Err(Error::Forbidden(
            "requests are asked by a person, from the app's own page (signed in, in a multi-user app); an agent claims and answers them"
                .into(),
        ));
    };
    // Every problem at once: unknown keys, the capability, its params.
    let (fields, mut problems) = object(body, &["capability", "params"])?;
    let checked = named(fields).and_then(|name| capability(app, name)).and_then(|cap| {
        let raw = fields.get("params").unwrap_or(&Value::Null);
        let params = crate::operations::normalize_params(&cap.name, &cap.params, raw)?;
        plain_params(&params)?;
        Ok((cap, params))
    });
    let (cap, params) = match checked {
        Ok(ok) if problems.is_empty() => ok,
        Ok(_) => return Err(Error::Invalid(problems)),
        Err(Error::Invalid(more)) => {
            problems.extend(more);
            return Err(Error::Invalid(problems));
        }
        Err(other) => return Err(other),
    };
    within(&params, MAX_PARAMS_BYTES, "params")?;
    let now = a2app_definition::datetime::format(app.clock.now());
    let request = AgentRequest {
        id: a2app_definition::id::generate(),
        capability: cap.name.clone(),
        params,
        status: RequestStatus::Pending,
        requested_by: by,
        created: now.clone(),
        updated: now,
        claimed_by: None,
        lease_until: None,
        result: None,
        failure: None,
    };
    let audit = receipt(
        caller,
        &request.id,
        &request.created,
        format!("Asked an agent: {}", cap.title),
        "ask",
        &request.params,
    );
    let store = Arc::clone(&app.store);
    let stored = request.clone();
    if !blocking(move || Ok(store.ask(&stored, MAX_OPEN, KEEP, &audit)?)).await? {
        return Err(Error::Invalid(vec![Violation::new(
            ErrorCode::OutOfRange,
            format!(
                "{MAX_OPEN} of your requests (or {} in all) are waiting for an agent already; cancel some or wait for answers",
                MAX_OPEN * 10
            ),
        )]));
    }
    publish(app, Action::Create, &request);
    Ok(request)
}

/// A page of requests, newest first, `{page, perPage, totalItems, totalPages, items}`.
pub async fn list(
    app: &Arc<App>,
    caller: &Caller,
    status: Option<&str>,
    capability: Option<&str>,
    page: u64,
    per_page: u64,
) -> Result<Value, Error> {
    // `claimable`: pending, or claimed with the lease run out (by the app's clock).
    let claimable = status == Some("claimable");
    let status = match status.filter(|s| !s.is_empty() && !claimable) {
        None => None,
        Some(s) => Some(RequestStatus::parse(s).ok_or_else(|| {
            Error::Invalid(vec![
                Violation::new(
                    ErrorCode::InvalidEnum,
                    "status is one of pending, claimed, done, failed, cancelled, claimable",
                )
                .field("status")
                .got(Value::from(s)),
            ])
        })?),
    };
    // A capability the app never declared has no requests: a misspelt name
    // is told so, not answered with an empty page.
    if let Some(name) = capability.filter(|c| !c.is_empty()) {
        self::capability(app, name)?;
    }
    let (page, per_page) = (page.max(1), per_page.clamp(1, 200));
    let filter = RequestFilter {
        status,
        capability: capability.filter(|c| !c.is_empty()).map(str::to_owned),
        capabilities: caller.grant.is_some().then(|| {
            app.definition.requests.iter().filter(|c| covers(caller, c).is_ok()).map(|c| c.name.clone()).collect()
        }),
        requested_by: reader(app, caller)?,
        claimable_at: claimable.then(|| a2app_definition::datetime::format(app.clock.now())),
        limit: per_page,
        offset: (page - 1).saturating_mul(per_page),
    };
    let store = Arc::clone(&app.store);
    let (items, total) = blocking(move || Ok(store.requests(&filter)?)).await?;
    Ok(json!({
        "page": page, "perPage": per_page, "totalItems": total, "totalPages": total.div_ceil(per_page),
        "items": items,
    }))
}

pub async fn get(app: &Arc<App>, caller: &Caller, id: &str) -> Result<AgentRequest, Error> {
    let only = reader(app, caller)?;
    let store = Arc::clone(&app.store);
    let key = id.to_owned();
    match blocking(move || Ok(store.request(&key)?)).await? {
        Some(r) if only.as_ref().is_none_or(|by| *by == r.requested_by) && covered(app, caller, &r.capability) => Ok(r),
        _ => Err(Error::NotFound),
    }
}

/// Whether a grant's scopes cover `capability` (every other caller: yes):
/// a grant sees only the requests it could claim.
fn covered(app: &App, caller: &Caller, capability: &str) -> bool {
    caller.grant.is_none()
        || app.definition.requests.iter().find(|c| c.name == capability).is_some_and(|c| covers(caller, c).is_ok())
}

/// Claims a pending request (or one whose lease ran out) for the agent;
/// `{"leaseSeconds": n}` optional. The key answered is the only way to answer.
pub async fn claim(app: &Arc<App>, caller: &Caller, id: &str, body: &Value) -> Result<Claimed, Error> {
    agent(caller)?;
    let fields = only(body, &["leaseSeconds"])?;
    let lease = match fields.get("leaseSeconds") {
        None | Some(Value::Null) => DEFAULT_LEASE_SECONDS,
        Some(v) => match v.as_i64().filter(|s| LEASE_SECONDS.contains(s)) {
            Some(s) => s,
            None => {
                return Err(Error::Invalid(vec![
                    Violation::new(
                        ErrorCode::OutOfRange,
                        format!(
                            "leaseSeconds is a whole number from {} to {}",
                            LEASE_SECONDS.start(),
                            LEASE_SECONDS.end()
                        ),
                    )
                    .field("leaseSeconds")
                    .got(v.clone()),
                ]));
            }
        },
    };
    let now = app.clock.now();
    let until = now
        .checked_add(jiff::SignedDuration::from_secs(lease))
        .map_err(|e| Error::Internal(format!("lease end: {e}")))?;
    let key = format!("a2c_{}", a2app_definition::secret::secret());
    let step = RequestStep::Claim {
        key_hash: digest(&key),
        agent: caller.agent.clone(),
        lease_until: a2app_definition::datetime::format(until),
    };
    let current = get(app, caller, id).await?;
    if let Ok(cap) = capability(app, &current.capability) {
        covers(caller, cap)?;
    } else if caller.grant.is_some() {
        // A capability the app no longer declares: nothing a grant covers.
        return Err(Error::InsufficientScope(format!("the capability {}", current.capability)));
    }
    let request = step_request(app, caller, &current, step, Map::new()).await?;
    Ok(Claimed { request, claim_key: key })
}

/// Answers a claimed request: `{"claimKey", "result": {…}}` or
/// `{"claimKey", "failure": "why"}`.
pub async fn answer(app: &Arc<App>, caller: &Caller, id: &str, body: &Value) -> Result<AgentRequest, Error> {
    agent(caller)?;
    let fields = only(body, &["claimKey", "result", "failure"])?;
    let Some(key) = fields.get("claimKey").and_then(Value::as_str).filter(|k| !k.is_empty()) else {
        return Err(Error::Invalid(vec![
            Violation::new(ErrorCode::RequiredField, "claimKey is required: the key claiming the request answered")
                .field("claimKey"),
        ]));
    };
    let current = get(app, caller, id).await?;
    let outcome = match (fields.get("result"), fields.get("failure")) {
        (Some(result), None) => {
            let cap = capability(app, &current.capability)?;
            let result = crate::operations::normalize_params(&cap.name, &cap.result, result)?;
            within(&result, MAX_RESULT_BYTES, "result")?;
            Ok(result)
        }
        (None, Some(Value::String(why)))
            if !why.trim().is_empty() && why.chars().count() <= MAX_FAILURE_CHARS && plain(why) =>
        {
            Err(why.clone())
        }
        (None, Some(other)) => {
            return Err(Error::Invalid(vec![
                Violation::new(
                    ErrorCode::InvalidString,
                    format!("failure says why, in 1 to {MAX_FAILURE_CHARS} characters of text (no control characters)"),
                )
                .field("failure")
                .got(other.clone()),
            ]));
        }
        _ => {
            return Err(Error::Invalid(vec![
                Violation::new(
                    ErrorCode::RequiredField,
                    "answer with exactly one of result (the capability's result fields) or failure (why not)",
                )
                .field("result"),
            ]));
        }
    };
    let fields = match &outcome {
        Ok(result) => result.clone(),
        Err(why) => Map::from_iter([("failure".to_owned(), Value::from(why.clone()))]),
    };
    step_request(app, caller, &current, RequestStep::Answer { key_hash: digest(key), outcome }, fields).await
}

/// Takes a request back (the person who asked it).
pub async fn cancel(app: &Arc<App>, caller: &Caller, id: &str) -> Result<AgentRequest, Error> {
    let Some(by) = person(app, caller) else {
        return Err(Error::Forbidden(
            "a request is cancelled by the person who asked it; an agent answers it with a failure".into(),
        ));
    };
    let only = caller.user.is_some().then_some(by);
    let current = get(app, caller, id).await?;
    step_request(app, caller, &current, RequestStep::Cancel { by: only }, Map::new()).await
}

/// Whether this caller may see `request` (realtime's rule, as [`get`]'s).
pub fn may_see(app: &App, caller: &Caller, record: &Map<String, Value>) -> bool {
    if !covered(app, caller, record.get("capability").and_then(Value::as_str).unwrap_or_default()) {
        return false;
    }
    match reader(app, caller) {
        Ok(None) => true,
        Ok(Some(by)) => record.get("requestedBy").and_then(Value::as_str) == Some(by.as_str()),
        Err(_) => false,
    }
}

/// Applies `step` to `current` (as read just before; the store checks the
/// step against the row it holds), with its audit entry; `fields` are what
/// the entry records.
async fn step_request(
    app: &Arc<App>,
    caller: &Caller,
    current: &AgentRequest,
    step: RequestStep,
    fields: Map<String, Value>,
) -> Result<AgentRequest, Error> {
    let title = app
        .definition
        .requests
        .iter()
        .find(|c| c.name == current.capability)
        .map_or(current.capability.as_str(), |c| c.title.as_str());
    let (verb, text) = match &step {
        RequestStep::Answer { outcome: Ok(_), .. } => ("answer", format!("Answered the request \"{title}\"")),
        RequestStep::Answer { outcome: Err(_), .. } => {
            ("answer", format!("Answered the request \"{title}\": cannot be done"))
        }
        RequestStep::Claim { .. } => ("claim", format!("Claimed the request \"{title}\"")),
        RequestStep::Cancel { .. } => ("cancel", format!("Cancelled the request \"{title}\"")),
    };
    let now = a2app_definition::datetime::format(app.clock.now());
    let audit = receipt(caller, &current.id, &now, text, verb, &fields);
    let store = Arc::clone(&app.store);
    let key = current.id.clone();
    let entry = audit.clone();
    let moved = blocking(move || Ok(store.step_request(&key, &step, &now, &entry)?)).await?;
    match moved {
        Ok(request) => {
            if matches!(caller.kind, CallerKind::Agent | CallerKind::Grant) {
                app.agent_log.append(&audit);
            }
            publish(app, Action::Update, &request);
            Ok(request)
        }
        Err(RequestConflict::NotFound) => Err(Error::NotFound),
        Err(RequestConflict::Claimed(until)) => Err(Error::Invalid(vec![
            Violation::new(ErrorCode::RequestClaimed, format!("another agent holds this request until {until}"))
                .field("id"),
        ])),
        Err(RequestConflict::Closed(status)) => Err(Error::Invalid(vec![
            Violation::new(ErrorCode::RequestClosed, format!("the request is {} already", status.as_str()))
                .field("status")
                .got(Value::from(status.as_str())),
        ])),
        Err(RequestConflict::WrongKey) => Err(Error::Invalid(vec![
            Violation::new(
                ErrorCode::RequestClaimed,
                "this claimKey does not hold the request: it was claimed again after the lease ran out, or never by this key",
            )
            .field("claimKey"),
        ])),
    }
}

/// The audit entry of one step: `action` is `request.<verb>`, the entity
/// the queue's topic, the id the request's.
fn receipt(
    caller: &Caller,
    id: &str,
    at: &str,
    text: String,
    verb: &str,
    fields: &Map<String, Value>,
) -> protocol::receipt::Receipt {
    protocol::receipt::Receipt {
        text,
        action: format!("request.{verb}"),
        entity: TOPIC.to_owned(),
        id: id.to_owned(),
        fields: fields.clone(),
        at: at.to_owned(),
        agent: caller.agent.clone(),
        caller: caller.label(),
        before: Default::default(),
    }
}

fn publish(app: &App, action: Action, request: &AgentRequest) {
    if let Ok(Value::Object(record)) = serde_json::to_value(request) {
        app.realtime.publish(Change::new(action, TOPIC.to_owned(), record));
    }
}

/// Who asked, for a person: `own_ui`, or `user:<id>`. In a multi-user app
/// only a signed-in user: any local program can send the page's Origin, and
/// requests nobody owns could be neither read nor cancelled by anyone.
fn person(app: &App, caller: &Caller) -> Option<String> {
    let multi = app.definition.config.auth_mode == a2app_definition::AuthMode::MultiUser;
    match (&caller.kind, &caller.user) {
        (CallerKind::Agent | CallerKind::Grant, _) => None,
        (_, Some(user)) => Some(format!("user:{}", user.id)),
        (CallerKind::OwnUi, None) if !multi => Some("own_ui".to_owned()),
        _ => None,
    }
}

/// The `capability` of an ask: present, and a string.
fn named(fields: &Map<String, Value>) -> Result<&str, Error> {
    match fields.get("capability") {
        Some(Value::String(name)) => Ok(name),
        None | Some(Value::Null) => Err(Error::Invalid(vec![
            Violation::new(ErrorCode::RequiredField, "capability is required: one of describe's requests")
                .field("capability"),
        ])),
        Some(other) => Err(Error::Invalid(vec![
            Violation::new(ErrorCode::InvalidString, "capability is the name of one of describe's requests")
                .field("capability")
                .got(other.clone()),
        ])),
    }
}

/// Text a person could type and read as it is (`protocol::text::is_plain`).
fn plain(text: &str) -> bool {
    protocol::text::is_plain(text)
}

/// Every string param plain and at most [`MAX_PARAM_CHARS`]: the person's
/// data reaches the agent as data, never as a terminal control or a page.
fn plain_params(params: &Map<String, Value>) -> Result<(), Error> {
    let mut problems = Vec::new();
    for (name, value) in params {
        let Value::String(text) = value else { continue };
        if text.chars().count() > MAX_PARAM_CHARS {
            problems.push(
                Violation::new(ErrorCode::TooLong, format!("\"{name}\" is longer than {MAX_PARAM_CHARS} characters"))
                    .field(name.clone()),
            );
        } else if !plain(text) {
            problems.push(
                Violation::new(ErrorCode::InvalidString, format!("\"{name}\" holds control characters"))
                    .field(name.clone())
                    .expected("text without control, hidden or direction-changing characters"),
            );
        }
    }
    if problems.is_empty() { Ok(()) } else { Err(Error::Invalid(problems)) }
}

fn agent(caller: &Caller) -> Result<(), Error> {
    if matches!(caller.kind, CallerKind::Agent | CallerKind::Grant) {
        Ok(())
    } else {
        Err(Error::Unauthorized(
            "claiming and answering requests takes the agent token (X-LUI-Token) or a grant's token".into(),
        ))
    }
}

/// A grant claims only what its scopes cover: the entities the capability
/// reads and writes, as declared (the agent token covers everything).
fn covers(caller: &Caller, cap: &Capability) -> Result<(), Error> {
    use protocol::grant::Scope;
    let needed =
        cap.reads.iter().map(|e| Scope::Read(e.clone())).chain(cap.writes.iter().map(|e| Scope::Write(e.clone())));
    for scope in needed {
        caller.require(scope)?;
    }
    Ok(())
}

/// Which requests a reader sees: all (`None`), or only a user's own. In a
/// multi-user app that is the agent token's (all) or a signed-in user's.
fn reader(app: &App, caller: &Caller) -> Result<Option<String>, Error> {
    if app.definition.config.auth_mode != a2app_definition::AuthMode::MultiUser || caller.is_owner() {
        return Ok(None);
    }
    match &caller.user {
        Some(user) => Ok(Some(format!("user:{}", user.id))),
        None => Err(Error::Unauthorized("sign in to read your requests (or send the agent token)".into())),
    }
}

fn capability<'a>(app: &'a App, name: &str) -> Result<&'a Capability, Error> {
    app.definition.requests.iter().find(|c| c.name == name).ok_or_else(|| {
        let names: Vec<&str> = app.definition.requests.iter().map(|c| c.name.as_str()).collect();
        let listed = if names.is_empty() { "none".to_owned() } else { names.join(", ") };
        Error::Invalid(vec![
            Violation::new(
                ErrorCode::UnknownCapability,
                format!("\"{name}\" is not a capability this app may ask for (capabilities: {listed})"),
            )
            .field("capability")
            .got(Value::from(name)),
        ])
    })
}

fn within(values: &Map<String, Value>, max: usize, what: &str) -> Result<(), Error> {
    let size = serde_json::to_string(values).map(|s| s.len()).unwrap_or(usize::MAX);
    if size <= max {
        return Ok(());
    }
    Err(Error::Invalid(vec![
        Violation::new(ErrorCode::TooLong, format!("the {what} take {size} bytes; at most {max}"))
            .field(what.to_owned()),
    ]))
}
