//! PocketBase's realtime API over SSE.
//!
//! `GET /api/realtime` opens a stream whose first event is `PB_CONNECT`
//! carrying the client id, which is also every event's SSE id (the JS SDK
//! reads it from `lastEventId`). `POST /api/realtime` replaces a client's
//! subscriptions: `entity/*` or `entity/ID`, each optionally with
//! `?options={"query":{"expand":…,"fields":…,"filter":…},"headers":{…}}`: the
//! filter keeps only the changes it matches (PocketBase's own semantics, its
//! `@request.query.*` and `@request.headers.*` read from those options). A
//! message's event name is the exact subscription string, its data
//! `{action, record}`. A topic that cannot be followed as written (not a
//! string, no such entity, options or a filter that do not read) refuses the
//! whole call, every problem named, where PocketBase answers 204 and sends
//! nothing or everything.

use crate::http::{ApiError, ApiResult, State, caller, json_body};
use a2app_core::access::Intent;
use a2app_core::caller::{Caller, RequestParts};
use a2app_core::realtime::Change;
use a2app_core::records::{self, Shape};
use a2app_core::rules;
use a2app_core::{App, Error};
use axum::body::{Body, Bytes};
use axum::extract::State as S;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures_util::stream::{self, Stream};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};

#[derive(Debug, Clone, PartialEq)]
struct Subscription {
    raw: String,
    entity: String,
    /// `None` for `entity/*`.
    id: Option<String>,
    shape: ShapeSpec,
    /// `options.query.filter`: only the changes it matches are sent.
    filter: Option<Arc<a2app_core::filter::Expr>>,
    /// What the view rule and the filter read as `@request.query.*` and
    /// `@request.headers.*`: the topic's own options, as PocketBase has it.
    parts: Option<Arc<RequestParts>>,
    /// The `id:` and `event:` lines of this subscription's frames.
    head: String,
}

#[derive(Debug, Clone, Default, PartialEq)]
struct ShapeSpec {
    expand: Option<String>,
    fields: Option<String>,
}

#[derive(Default)]
struct Client {
    subscriptions: RwLock<Vec<Arc<Subscription>>>,
    /// The grant the stream was opened with: only the same grant subscribes
    /// it, and no other credential changes what a grant's stream follows.
    grant: Option<String>,
    /// The user the stream was opened as (multi-user apps): only that user
    /// subscribes it, as PocketBase binds a client to its auth record.
    user: Option<String>,
}

/// The connected realtime clients.
pub struct Realtime {
    clients: Mutex<HashMap<String, Arc<Client>>>,
}

impl Realtime {
    pub fn new(_app: &App) -> Realtime {
        Realtime { clients: Mutex::new(HashMap::new()) }
    }

    fn clients(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Client>>> {
        self.clients.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How many clients are connected now.
    pub fn connected(&self) -> usize {
        self.clients().len()
    }
}

/// Removes the client when its stream is dropped (the connection closed).
struct Registration {
    realtime: Arc<Realtime>,
    id: String,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.realtime.clients().remove(&self.id);
    }
}

struct StreamState {
    app: Arc<App>,
    /// Who opened the stream: rules and redaction apply as for a read.
    caller: Caller,
    client: Arc<Client>,
    registration: Registration,
    changes: broadcast::Receiver<Arc<Change>>,
    /// Frames not yet handed to the connection: sent as one chunk.
    pending: Vec<u8>,
    keep_alive: tokio::time::Interval,
    /// Whether anything was sent since the last keep-alive tick.
    sent: bool,
}

/// The keep-alive check: a stream that sent nothing since the previous check
/// gets a comment, so no stream stays silent for two periods (30 s), well
/// inside the usual 60 s idle timeout of proxies. Checking rather than
/// resetting a timer per event keeps timers out of the fan-out's path.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// How many bytes of frames one chunk may gather from changes already
/// waiting: under a burst of writes a stream sends many events per write and
/// per pass through the HTTP connection, and its buffer stays bounded.
const MAX_CHUNK: usize = 64 * 1024;

pub async fn connect(S(state): S<State>, headers: HeaderMap) -> ApiResult<Response> {
    let who = caller(&state, &headers, Intent::Read).await?;
    let id = a2app_core::realtime::client_id();
    let client = Arc::new(Client {
        grant: who.grant.as_ref().map(|g| g.id.clone()),
        user: who.user.as_ref().map(|u| u.id.clone()),
        ..Client::default()
    });
    state.realtime.clients().insert(id.clone(), Arc::clone(&client));
    let mut hello = Vec::new();
    write_frame(&mut hello, &head(&id, "PB_CONNECT"), &json!({ "clientId": id }).to_string());
    let mut keep_alive = tokio::time::interval_at(tokio::time::Instant::now() + KEEP_ALIVE, KEEP_ALIVE);
    keep_alive.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let st = StreamState {
        app: Arc::clone(&state.app),
        caller: who,
        client,
        registration: Registration { realtime: Arc::clone(&state.realtime), id },
        changes: state.app.realtime.subscribe(),
        pending: hello,
        keep_alive,
        sent: false,
    };
    let mut response = Body::from_stream(events(st)).into_response();
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    Ok(response)
}

/// The `id:` and `event:` lines of every event a subscription receives: the
/// client id (the JS SDK reads it as `lastEventId`) and the topic. Neither
/// holds a line break: client ids are alphanumeric and topics with control
/// characters are refused when subscribing.
fn head(client_id: &str, event: &str) -> String {
    format!("id:{client_id}\nevent:{event}\n")
}

/// Appends one SSE frame to `out`: `head`, then `data` on one line (JSON
/// from serde_json never holds a raw line break).
fn write_frame(out: &mut Vec<u8>, head: &str, data: &str) {
    out.reserve(head.len() + data.len() + 8);
    out.extend_from_slice(head.as_bytes());
    out.extend_from_slice(b"data:");
    out.extend_from_slice(data.as_bytes());
    out.extend_from_slice(b"\n\n");
}

/// The SSE body. Each change is encoded once (see `Change::encoded`); a
/// subscriber's frame is its precomputed head plus that shared data, so a
/// hundred streams cost a hundred small copies and writes, not a hundred
/// encodings. When a change wakes the stream, the changes queued behind it
/// join the same chunk (up to `MAX_CHUNK`), in order.
fn events(state: StreamState) -> impl Stream<Item = Result<Bytes, Infallible>> {
    stream::unfold(state, |mut st| async move {
        loop {
            if !st.pending.is_empty() {
                st.sent = true;
                return Some((Ok(Bytes::from(std::mem::take(&mut st.pending))), st));
            }
            let first = tokio::select! {
                biased;
                change = st.changes.recv() => change,
                _ = st.keep_alive.tick() => {
                    if !st.still_allowed().await {
                        return None;
                    }
                    if !std::mem::take(&mut st.sent) {
                        st.pending.extend_from_slice(b":\n\n");
                    }
                    continue;
                }
            };
            // A grant's stream ends with its token or its grant.
            if !st.still_allowed().await {
                return None;
            }
            // The waiting change, then those already queued behind it.
            let mut next = first.map_err(|e| match e {
                RecvError::Lagged(missed) => TryRecvError::Lagged(missed),
                RecvError::Closed => TryRecvError::Closed,
            });
            loop {
                match next {
                    Ok(change) => st.add(&change).await,
                    Err(TryRecvError::Lagged(missed)) => {
                        tracing::warn!(missed, client = %st.registration.id, "realtime client fell behind");
                    }
                    // The app is closing: what was gathered still goes out.
                    Err(TryRecvError::Closed) if st.pending.is_empty() => return None,
                    Err(TryRecvError::Closed | TryRecvError::Empty) => break,
                }
                if st.pending.len() >= MAX_CHUNK {
                    break;
                }
                next = st.changes.try_recv();
            }
        }
    })
}

impl StreamState {
    /// Whether the stream's caller may still read: always, but for a grant
    /// whose token expired or which was revoked since the stream opened.
    async fn still_allowed(&self) -> bool {
        match &self.caller.grant {
            None => true,
            Some(grant) => a2app_core::grants::still_valid(&self.app, grant).await,
        }
    }

    /// Appends the frames `change` makes for this stream's subscriptions, if
    /// the caller may see the record.
    async fn add(&mut self, change: &Arc<Change>) {
        let subs: Vec<Arc<Subscription>> = self
            .client
            .subscriptions
            .read()
            .map(|s| s.iter().filter(|s| matches(s, change)).cloned().collect())
            .unwrap_or_default();
        if subs.is_empty() {
            return;
        }
        if change.entity == a2app_core::requests::TOPIC {
            // The queue is not an entity: no rules, no shaping.
            if a2app_core::requests::may_see(&self.app, &self.caller, &change.record) {
                for sub in subs {
                    write_frame(&mut self.pending, &sub.head, change.encoded());
                }
            }
            return;
        }
        // The view rule as the stream's caller sees it, asked once for the
        // subscriptions without options of their own.
        let mut plain_may_see: Option<bool> = None;
        let whole = !rules::may_redact(&self.app, &self.caller, &change.entity);
        for sub in subs {
            // A topic's options are its `@request.query.*` and
            // `@request.headers.*`, for the view rule as for its filter
            // (EventSource sends no headers of its own choosing).
            let with_options =
                sub.parts.as_ref().map(|parts| Caller { request: Some(Arc::clone(parts)), ..self.caller.clone() });
            let caller = with_options.as_ref().unwrap_or(&self.caller);
            let visible = match (&with_options, plain_may_see) {
                (None, Some(known)) => known,
                _ => {
                    let seen = records::may_see(&self.app, caller, change).await.unwrap_or(false);
                    if with_options.is_none() {
                        plain_may_see = Some(seen);
                    }
                    seen
                }
            };
            if !visible {
                continue;
            }
            if let Some(filter) = &sub.filter {
                match records::change_matches(&self.app, caller, change, filter).await {
                    Ok(true) => {}
                    Ok(false) => continue,
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot judge a realtime subscription's filter");
                        continue;
                    }
                }
            }
            if whole && sub.shape == ShapeSpec::default() {
                // The common case: the record as stored, encoded once for every stream.
                write_frame(&mut self.pending, &sub.head, change.encoded());
                continue;
            }
            let record = match shaped(&self.app, &self.caller, change, &sub.shape).await {
                Ok(r) => r,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot shape a realtime record");
                    continue;
                }
            };
            let data = json!({ "action": change.action.as_str(), "record": record });
            write_frame(&mut self.pending, &sub.head, &data.to_string());
        }
    }
}

fn matches(sub: &Subscription, change: &Change) -> bool {
    let entity_ok = sub.entity == change.entity || sub.entity == a2app_core::schema::collection_id(&change.entity);
    entity_ok && sub.id.as_deref().is_none_or(|id| change.record.get("id").and_then(Value::as_str) == Some(id))
}

async fn shaped(
    app: &Arc<App>,
    caller: &Caller,
    change: &Change,
    shape: &ShapeSpec,
) -> Result<serde_json::Map<String, Value>, Error> {
    let shape = Shape { expand: shape.expand.clone(), fields: shape.fields.clone() };
    records::finish(app, caller, &change.entity, change.record.clone(), &shape).await
}

pub async fn subscribe(S(state): S<State>, headers: HeaderMap, body: Bytes) -> ApiResult<Response> {
    let who = caller(&state, &headers, Intent::Read).await?;
    let body = json_body(&headers, &body)?;
    let client_id = body.get("clientId").and_then(Value::as_str).unwrap_or("");
    if client_id.is_empty() {
        let v = protocol::Violation::new(protocol::ErrorCode::RequiredField, "clientId is required").field("clientId");
        return Err(ApiError(Error::Invalid(vec![v])));
    }
    let Some(client) = state.realtime.clients().get(client_id).cloned() else {
        return Err(ApiError(Error::NotFound));
    };
    if who.grant.as_ref().map(|g| &g.id) != client.grant.as_ref()
        || who.user.as_ref().map(|u| &u.id) != client.user.as_ref()
    {
        return Err(ApiError(Error::Forbidden(
            "this realtime client was opened with another credential; subscribe with the one that opened it".into(),
        )));
    }
    let subscriptions: Vec<Arc<Subscription>> = match body.get("subscriptions") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => {
            // Every topic is checked before any replaces the client's
            // subscriptions, and every problem is named at once: a topic
            // dropped without a word would leave the client waiting for
            // changes that never come.
            let mut subscriptions = Vec::with_capacity(items.len());
            let mut bad = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let place = format!("subscriptions.{i}");
                match checked(&state.app, &who, client_id, item).await {
                    Ok(sub) => subscriptions.push(Arc::new(sub)),
                    Err(Refusal::Violation(v)) => bad.push(v.field(place)),
                    Err(Refusal::Error(e)) => return Err(ApiError(e)),
                }
            }
            if !bad.is_empty() {
                return Err(ApiError(Error::Invalid(bad)));
            }
            subscriptions
        }
        Some(_) => {
            let v =
                protocol::Violation::new(protocol::ErrorCode::InvalidJson, "subscriptions must be a list of topics")
                    .field("subscriptions")
                    .expected("a list like [\"cards/*\"]");
            return Err(ApiError(Error::Invalid(vec![v])));
        }
    };
    if let Ok(mut subs) = client.subscriptions.write() {
        *subs = subscriptions;
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// Why a topic was not subscribed: a problem with the topic itself, named
/// with the others, or a refusal of the caller (403), which ends the call.
enum Refusal {
    Violation(protocol::Violation),
    Error(Error),
}

fn problem(code: protocol::ErrorCode, message: impl Into<String>) -> Refusal {
    Refusal::Violation(protocol::Violation::new(code, message).expected(
        "a topic like \"cards/*\" or \"cards/RECORD_ID\", optionally ?options={\"query\":{…},\"headers\":{…}}",
    ))
}

/// One topic of a subscribe call, checked whole: its entity and id, its
/// options, and the filter among them.
async fn checked(app: &Arc<App>, caller: &Caller, client_id: &str, item: &Value) -> Result<Subscription, Refusal> {
    let Some(raw) = item.as_str() else {
        return Err(problem(protocol::ErrorCode::InvalidString, "a topic is a string"));
    };
    // A topic becomes the `event:` line of an SSE frame: a line break in it
    // would forge frames, so control characters are refused.
    if raw.chars().any(char::is_control) {
        return Err(problem(protocol::ErrorCode::InvalidString, "a topic must not hold control characters"));
    }
    let topic = parse_topic(raw).map_err(|why| problem(protocol::ErrorCode::InvalidString, why))?;
    let known = topic.entity == a2app_core::requests::TOPIC || !entity_named(app, &topic.entity).is_empty();
    if !known {
        return Err(problem(
            protocol::ErrorCode::UnknownEntity,
            format!("\"{}\" is not an entity of this app; read /api/_a2app/describe for the list", topic.entity),
        ));
    }
    // A grant follows only what it may read: asked for more, it is told so
    // (a locked rule is still followed, as in PocketBase: a stream may
    // subscribe to every entity and see what the rules show it).
    if topic.entity != a2app_core::requests::TOPIC {
        let entity = entity_named(app, &topic.entity);
        if let Err(e @ Error::InsufficientScope(_)) = rules::rule(app, caller, &entity, rules::Action::View) {
            return Err(Refusal::Error(e));
        }
    }
    if topic.id.as_deref().is_some_and(|id| !a2app_core::id::is_valid(id)) {
        return Err(problem(protocol::ErrorCode::InvalidString, "a record id is 15 characters of a-z and 0-9"));
    }
    let options = topic.options;
    let filter = match options.filter.as_deref().map(str::trim).filter(|f| !f.is_empty()) {
        None => None,
        Some(_) if topic.entity == a2app_core::requests::TOPIC => {
            return Err(problem(protocol::ErrorCode::InvalidFilter, "the request queue's topic takes no filter"));
        }
        Some(text) => {
            let entity = entity_named(app, &topic.entity);
            match records::subscription_filter(app, caller, &entity, text).await {
                Ok(expr) => Some(Arc::new(expr)),
                Err(Error::InvalidFilter(f)) => {
                    return Err(problem(
                        protocol::ErrorCode::InvalidFilter,
                        format!("invalid filter: {} at position {}", f.message, f.position),
                    ));
                }
                Err(e) => return Err(Refusal::Error(e)),
            }
        }
    };
    let parts = (!options.query.is_empty() || !options.headers.is_empty())
        .then(|| Arc::new(RequestParts { headers: options.headers, query: options.query }));
    Ok(Subscription {
        head: head(client_id, raw),
        raw: raw.to_owned(),
        entity: topic.entity,
        id: topic.id,
        shape: ShapeSpec { expand: options.expand, fields: options.fields },
        filter,
        parts,
    })
}

/// The entity a topic names, as the schema names it (a topic may use its
/// collection id); empty when it names none.
fn entity_named(app: &App, named: &str) -> String {
    a2app_core::schema::entity_named(&app.definition.schema, named).unwrap_or_default().to_owned()
}

/// A topic as written: `entity/*`, `entity/ID` or a bare `entity`,
/// optionally `?options=<json>`.
#[derive(Debug, Default, PartialEq)]
struct Topic {
    entity: String,
    /// `None` for `entity/*`.
    id: Option<String>,
    options: TopicOptions,
}

/// `options` of a topic: `{"query": {…}, "headers": {…}}`. `expand`,
/// `fields` and `filter` in `query` shape and select the topic's events;
/// every `query` and `headers` value is also what the filter reads as
/// `@request.query.*` and `@request.headers.*`.
#[derive(Debug, Default, PartialEq)]
struct TopicOptions {
    expand: Option<String>,
    fields: Option<String>,
    filter: Option<String>,
    query: Map<String, Value>,
    headers: Map<String, Value>,
}

/// Reads a topic, or says what is wrong with it.
fn parse_topic(raw: &str) -> Result<Topic, String> {
    let (path, query) = raw.split_once('?').unwrap_or((raw, ""));
    let (entity, id) = match path.split_once('/') {
        Some((e, "*")) | Some((e, "")) => (e, None),
        Some((e, id)) => (e, Some(id.to_owned())),
        None => (path, None),
    };
    if entity.is_empty() {
        return Err("a topic names an entity first, as in \"cards/*\"".into());
    }
    let mut topic = Topic { entity: entity.to_owned(), id, options: TopicOptions::default() };
    if query.is_empty() {
        return Ok(topic);
    }
    let pairs: Vec<(String, String)> =
        serde_urlencoded::from_str(query).map_err(|_| "the part after ? is not a query string".to_owned())?;
    for (key, value) in pairs {
        if key != "options" {
            return Err(format!("a topic takes only ?options=…, not ?{key}="));
        }
        let Ok(Value::Object(options)) = serde_json::from_str::<Value>(&value) else {
            return Err("options must be a JSON object like {\"query\":{\"filter\":\"…\"}}".into());
        };
        for (name, value) in options {
            let target = match name.as_str() {
                "query" => &mut topic.options.query,
                "headers" => &mut topic.options.headers,
                other => return Err(format!("options take \"query\" and \"headers\", not \"{other}\"")),
            };
            let Value::Object(values) = value else {
                return Err(format!("options.{name} must be an object of texts"));
            };
            for (key, value) in values {
                let text = match value {
                    Value::String(t) => t,
                    Value::Number(n) => n.to_string(),
                    Value::Bool(b) => b.to_string(),
                    _ => return Err(format!("options.{name}.{key} must be a text")),
                };
                let key = if name == "headers" { key.to_ascii_lowercase().replace('-', "_") } else { key };
                target.insert(key, Value::String(text));
            }
        }
    }
    let text = |key: &str| topic.options.query.get(key).and_then(Value::as_str).map(str::to_owned);
    (topic.options.expand, topic.options.fields, topic.options.filter) =
        (text("expand"), text("fields"), text("filter"));
    Ok(topic)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_topics_with_options() {
        let t = parse_topic("cards/*?options=%7B%22query%22%3A%7B%22fields%22%3A%22id%2Ctitle%22%7D%7D").unwrap();
        assert_eq!((t.entity.as_str(), t.id.as_deref()), ("cards", None));
        assert_eq!(t.options.fields.as_deref(), Some("id,title"));
        let t = parse_topic("cards/abcdefghijklmno").unwrap();
        assert_eq!(t.id.as_deref(), Some("abcdefghijklmno"));
        assert_eq!(parse_topic("cards").unwrap().id, None);
        let options = r#"{"query":{"filter":"points > 2","n":5},"headers":{"X-Team":"a"}}"#;
        let t = parse_topic(&format!("cards/*?options={}", urlencode(options))).unwrap();
        assert_eq!(t.options.filter.as_deref(), Some("points > 2"));
        assert_eq!(t.options.query.get("n"), Some(&json!("5")));
        assert_eq!(t.options.headers.get("x_team"), Some(&json!("a")), "named as @request.headers reads them");
    }

    #[test]
    fn topics_that_cannot_be_read_say_why() {
        let bad = |topic: &str| parse_topic(topic).expect_err(topic);
        assert_eq!(bad("/x"), "a topic names an entity first, as in \"cards/*\"");
        assert_eq!(bad("cards/*?options=%7Bnope"), "options must be a JSON object like {\"query\":{\"filter\":\"…\"}}");
        assert_eq!(bad("cards/*?expand=list"), "a topic takes only ?options=…, not ?expand=");
        assert_eq!(
            bad(&format!("cards/*?options={}", urlencode(r#"{"qery":{}}"#))),
            "options take \"query\" and \"headers\", not \"qery\""
        );
        assert_eq!(
            bad(&format!("cards/*?options={}", urlencode(r#"{"query":{"filter":["a"]}}"#))),
            "options.query.filter must be a text"
        );
        assert_eq!(
            bad(&format!("cards/*?options={}", urlencode(r#"{"headers":"x"}"#))),
            "options.headers must be an object of texts"
        );
    }

    fn urlencode(text: &str) -> String {
        serde_urlencoded::to_string([("x", text)]).unwrap().trim_start_matches("x=").to_owned()
    }
}
