//! Random and malformed requests against a served app, from a seeded
//! generator so that a failure replays (`A2APP_FUZZ_SEED`, and
//! `A2APP_FUZZ_ROUNDS` for a longer run). Every answer is checked:
//!
//! - no 5xx, and no request left unanswered;
//! - every refusal outside `/mcp` (whose errors are JSON-RPC's) is the
//!   envelope with a code of the table and that code's status;
//! - no destructive operation runs without approval (none is given);
//! - afterwards each entity holds exactly the records whose creation was
//!   acknowledged and whose deletion was not, and the owner's realtime stream
//!   held one create event for each acknowledged create and one delete event
//!   for each acknowledged delete, and no event for anything else.
//!
//! Then raw bytes that are not HTTP at all go straight to the socket, and the
//! app must still answer. MCP tool calls get the same treatment: arguments of
//! every shape, each answer a result, a tool error with a code of the table,
//! or invalid params (-32602), and the records afterwards as acknowledged.
//! The counts of what was exercised are asserted too, so a generator that
//! only produced refusals would fail.
//!
//! `input` generates requests and values, `mcp` the tool calls; this module
//! sends, checks and keeps the books.

mod app;
mod input;
mod mcp;
mod surfaces;

use crate::TestApp;
use crate::realtime::Stream;
use protocol::ErrorCode;
use protocol::schema::Entity;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{RngExt, SeedableRng};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Requests sent at once; their answers are checked in generation order.
const BATCH: usize = 6;

fn seed() -> u64 {
    std::env::var("A2APP_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x00a2_a990)
}

fn rounds(default: usize) -> usize {
    std::env::var("A2APP_FUZZ_ROUNDS").ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

/// One generated request, kept whole so a failure can print it.
#[derive(Debug, Clone)]
struct Req {
    method: &'static str,
    path: String,
    query: Vec<(String, String)>,
    headers: Vec<(&'static str, Vec<u8>)>,
    body: Option<Vec<u8>>,
    /// What the request means when it succeeds, for the bookkeeping.
    intent: Intent,
}

#[derive(Debug, Clone, PartialEq)]
enum Intent {
    Other,
    Create(String),
    Delete(String, String),
    Destructive,
}

/// What one answer was.
struct Answer {
    status: u16,
    body: Value,
}

/// What the run exercised, asserted at the end.
#[derive(Default, Debug)]
struct Seen {
    created: usize,
    deleted: usize,
    updated: usize,
    listed: usize,
    codes: BTreeSet<&'static str>,
}

struct Fuzzer<'a> {
    t: &'a TestApp,
    rng: StdRng,
    /// Entity names of the schema.
    entities: Vec<(String, Entity)>,
    /// Ids acknowledged as created and not acknowledged as deleted.
    live: BTreeMap<String, BTreeSet<String>>,
    /// Every (entity, id) acknowledged as created, and as deleted.
    created: BTreeSet<(String, String)>,
    deleted: BTreeSet<(String, String)>,
    /// Every acknowledged create's record, as its answer gave it.
    as_created: BTreeMap<(String, String), Value>,
    /// Users whose record an acknowledged update changed (a password among them).
    touched_users: BTreeSet<String>,
    /// Idempotency keys already sent.
    keys: Vec<String>,
    /// Users' tokens (multi-user apps).
    users: Vec<(String, String)>,
    destructive: Vec<String>,
    operations: Vec<String>,
    /// This request is meant to pass: valid values, the right credentials.
    clean: bool,
    /// The user this request acts as, if any (an index into `users`).
    acting: Option<usize>,
    seen: Seen,
}

impl<'a> Fuzzer<'a> {
    fn new(t: &'a TestApp, seed: u64) -> Fuzzer<'a> {
        let schema = &t.app.definition.schema;
        let entities: Vec<(String, Entity)> = schema.entities.iter().map(|(n, e)| (n.clone(), e.clone())).collect();
        let live = entities.iter().map(|(n, _)| (n.clone(), BTreeSet::new())).collect();
        let operations = t.app.definition.operations.iter().map(|o| o.name.clone()).collect();
        let destructive =
            t.app.definition.operations.iter().filter(|o| o.destructive).map(|o| o.name.clone()).collect();
        Fuzzer {
            t,
            rng: StdRng::seed_from_u64(seed),
            entities,
            live,
            created: BTreeSet::new(),
            deleted: BTreeSet::new(),
            as_created: BTreeMap::new(),
            touched_users: BTreeSet::new(),
            keys: Vec::new(),
            users: Vec::new(),
            destructive,
            operations,
            clean: false,
            acting: None,
            seen: Seen::default(),
        }
    }

    fn chance(&mut self, p: f64) -> bool {
        self.rng.random_bool(p)
    }

    fn pick<T: Clone>(&mut self, items: &[T]) -> T {
        items.choose(&mut self.rng).cloned().expect("non-empty choice")
    }

    async fn send(&self, req: &Req) -> Result<Option<Answer>, String> {
        let method = reqwest::Method::from_bytes(req.method.as_bytes()).map_err(|e| e.to_string())?;
        let query: Vec<String> = req.query.iter().map(|(k, v)| format!("{}={}", encode(k), encode(v))).collect();
        let url = if query.is_empty() {
            format!("{}{}", self.t.url, req.path)
        } else {
            format!("{}{}?{}", self.t.url, req.path, query.join("&"))
        };
        let mut builder = self.t.http.request(method, url);
        for (name, value) in &req.headers {
            // A value reqwest refuses to send is not a request the app can get.
            if let Ok(v) = reqwest::header::HeaderValue::from_bytes(value) {
                builder = builder.header(*name, v);
            }
        }
        if let Some(body) = &req.body {
            builder = builder.body(body.clone());
        }
        let sent = tokio::time::timeout(Duration::from_secs(20), builder.send())
            .await
            .map_err(|_| "no answer within 20 s".to_owned())?;
        let oversized = req.body.as_ref().is_some_and(|b| b.len() > a2app_server::http::MAX_BODY);
        let response = match sent {
            Ok(response) => response,
            // The app answers 413 and closes once the limit is passed; a
            // client still sending the rest may see the close first.
            Err(_) if oversized => return Ok(None),
            Err(e) => return Err(format!("transport error: {e:?}")),
        };
        let status = response.status().as_u16();
        let stream = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if stream && req.path != "/mcp" {
            return Ok(Some(Answer { status, body: Value::Null }));
        }
        let text = tokio::time::timeout(Duration::from_secs(20), response.text())
            .await
            .map_err(|_| "body not finished within 20 s".to_owned())?
            .map_err(|e| format!("body error: {e}"))?;
        let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
        Ok(Some(Answer { status, body }))
    }

    /// Checks one answer against its request; updates the bookkeeping.
    fn check(&mut self, req: &Req, answer: &Answer) -> Result<(), String> {
        let status = answer.status;
        if status >= 500 {
            return Err(format!("answered {status}: {}", answer.body));
        }
        let mcp = req.path.starts_with("/mcp") && req.path != "/mcp/server-card";
        // OAuth answers its errors in its own form (RFC 6749 §5.2), and a
        // sign-in that cannot go on as text for the person.
        let oauth = req.path.starts_with("/oauth/") || req.path.starts_with("/.well-known/oauth-");
        if oauth && status >= 400 && req.method != "HEAD" && answer.body["code"].is_null() {
            let error = answer.body["error"].as_str().unwrap_or_default();
            let known = [
                "invalid_request",
                "invalid_client",
                "invalid_grant",
                "unsupported_grant_type",
                "invalid_client_metadata",
                "invalid_redirect_uri",
                "invalid_scope",
                "invalid_target",
                "unauthorized_client",
            ];
            let shown = answer.body.as_str().is_some_and(|t| t.starts_with("This sign-in cannot go on: "));
            if !known.contains(&error) && !shown {
                return Err(format!("an OAuth {status} without an OAuth error: {}", answer.body));
            }
            return Ok(());
        }
        if status >= 400 && req.method != "HEAD" && !mcp {
            let body = &answer.body;
            let code = body["code"].as_str().ok_or_else(|| format!("a {status} without a code: {body}"))?;
            let known = ErrorCode::from_name(code).ok_or_else(|| format!("code {code:?} is not in the table"))?;
            if known.status() != status || body["status"] != status {
                return Err(format!("{code} answered with {status}, its status is {}: {body}", known.status()));
            }
            if body["a2app"] != true || body["ok"] != false {
                return Err(format!("not the envelope: {body}"));
            }
            self.seen.codes.insert(known.as_str());
        }
        let ok = (200..300).contains(&status);
        match &req.intent {
            Intent::Destructive if ok => return Err(format!("a destructive operation ran unapproved: {status}")),
            Intent::Create(_) if ok => {
                let entity = answer.body["collectionName"].as_str();
                let id = answer.body["id"].as_str();
                let (Some(entity), Some(id)) = (entity, id) else {
                    return Err(format!("a created record without collectionName and id: {}", answer.body));
                };
                self.as_created.insert((entity.to_owned(), id.to_owned()), answer.body.clone());
                self.acknowledge_create(entity, id);
            }
            Intent::Delete(entity, id) if ok => {
                if status != 204 {
                    return Err(format!("a delete answered {status}, not 204"));
                }
                self.acknowledge_delete(entity, id)?;
            }
            _ if ok && req.method == "PATCH" => {
                if let Some(user) = req.path.strip_prefix("/api/collections/users/records/") {
                    self.touched_users.insert(user.to_owned());
                }
                self.seen.updated += 1;
            }
            _ if ok && req.method == "GET" && answer.body["items"].is_array() => self.seen.listed += 1,
            _ => {}
        }
        Ok(())
    }

    fn acknowledge_create(&mut self, entity: &str, id: &str) {
        self.live.entry(entity.to_owned()).or_default().insert(id.to_owned());
        self.created.insert((entity.to_owned(), id.to_owned()));
        self.seen.created += 1;
    }

    fn acknowledge_delete(&mut self, entity: &str, id: &str) -> Result<(), String> {
        if !self.live.get_mut(entity).is_some_and(|ids| ids.remove(id)) {
            return Err(format!("deleted {entity}/{id}, which was not live"));
        }
        self.deleted.insert((entity.to_owned(), id.to_owned()));
        self.seen.deleted += 1;
        Ok(())
    }

    /// Reads `stream` until every expected event came (within ten seconds of
    /// each other) and then `quiet` passed without another, and checks its
    /// events against what was acknowledged: exactly one create event for
    /// every acknowledged create and one delete event for every acknowledged
    /// delete, and no event for a record never acknowledged as created (or
    /// there before).
    async fn check_events(&self, stream: &mut Stream, before: &[(&str, String)], quiet: Duration) {
        let mut creates: BTreeMap<(String, String), usize> = BTreeMap::new();
        let mut deletes: BTreeMap<(String, String), usize> = BTreeMap::new();
        let known: BTreeSet<(String, String)> =
            before.iter().map(|(e, id)| ((*e).to_owned(), id.clone())).chain(self.created.iter().cloned()).collect();
        loop {
            let awaited = self.created.iter().any(|k| !creates.contains_key(k))
                || self.deleted.iter().any(|k| !deletes.contains_key(k));
            let wait = if awaited { Duration::from_secs(10) } else { quiet };
            let Some((event, data)) = stream.within(wait).await else { break };
            let entity = data["record"]["collectionName"].as_str().unwrap_or_default().to_owned();
            assert_eq!(event, format!("{entity}/*"), "{data}");
            let key = (entity, data["record"]["id"].as_str().unwrap_or_default().to_owned());
            assert!(known.contains(&key), "an event for a record never acknowledged: {data}");
            match data["action"].as_str() {
                Some("create") => *creates.entry(key).or_default() += 1,
                Some("delete") => *deletes.entry(key).or_default() += 1,
                Some("update") => {}
                other => panic!("unknown action {other:?}: {data}"),
            }
        }
        let once = |set: &BTreeSet<(String, String)>| set.iter().map(|k| (k.clone(), 1)).collect::<BTreeMap<_, _>>();
        assert_eq!(creates, once(&self.created), "one create event per acknowledged create");
        assert_eq!(deletes, once(&self.deleted), "one delete event per acknowledged delete");
    }

    async fn run(&mut self, rounds: usize, seed: u64) -> Result<(), String> {
        for round in 0..rounds {
            let batch: Vec<Req> = (0..BATCH).map(|_| self.next()).collect();
            let answers = futures_util::future::join_all(batch.iter().map(|r| self.send(r))).await;
            for (i, (req, answer)) in batch.iter().zip(answers).enumerate() {
                let result = answer.and_then(|a| a.map_or(Ok(()), |a| self.check(req, &a)));
                if let Err(problem) = result {
                    return Err(format!(
                        "seed {seed}, request {}: {problem}\n{} {} query {:?}\nheaders {:?}\nbody {:?}",
                        round * BATCH + i,
                        req.method,
                        req.path,
                        req.query,
                        req.headers.iter().map(|(n, v)| (n, String::from_utf8_lossy(v))).collect::<Vec<_>>(),
                        req.body.as_ref().map(|b| String::from_utf8_lossy(&b[..b.len().min(300)]).into_owned()),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Every record the owner can list, by entity.
    async fn stored(&self) -> BTreeMap<String, BTreeSet<String>> {
        let mut out = BTreeMap::new();
        for (entity, _) in &self.entities {
            let mut ids = BTreeSet::new();
            for page in 1.. {
                let path = format!("/api/collections/{entity}/records?perPage=500&page={page}&fields=id");
                let (status, body) = self.t.call("GET", &path, None).await;
                assert_eq!(status, 200, "{entity}: {body}");
                let items = body["items"].as_array().expect("items");
                ids.extend(items.iter().map(|r| r["id"].as_str().expect("id").to_owned()));
                if items.len() < 500 {
                    break;
                }
            }
            out.insert(entity.clone(), ids);
        }
        out
    }
}

/// Percent-encodes everything but unreserved characters.
fn encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// How long a run of the fuzzer is.
struct Run {
    /// Batches of HTTP requests.
    rounds: usize,
    /// MCP tool calls (2026-07-28) after them.
    tool_calls: usize,
    seed: u64,
    /// How long the realtime stream must stay quiet after the last expected event.
    quiet: Duration,
}

/// What a run did: its counts, and what the realtime checks of users need.
struct Outcome {
    seen: Seen,
    as_created: BTreeMap<(String, String), Value>,
    touched_users: BTreeSet<String>,
}

/// Runs the fuzzer against `t`, whose records before it are `existing`
/// (entity, id), with these users' (id, token).
async fn fuzz(t: &TestApp, existing: &[(&str, String)], users: Vec<(String, String)>, run: Run) -> Outcome {
    let Run { rounds, tool_calls, seed, quiet } = run;
    // The owner's stream of every entity: each acknowledged write must show in it.
    let topics: Vec<String> = t.app.definition.schema.entities.keys().map(|e| format!("{e}/*")).collect();
    let mut stream = Stream::open(t, &topics.iter().map(String::as_str).collect::<Vec<_>>()).await;
    let mut f = Fuzzer::new(t, seed);
    f.users = users;
    for (entity, id) in existing {
        f.live.entry((*entity).to_owned()).or_default().insert(id.clone());
    }
    if let Err(problem) = f.run(rounds, seed).await {
        panic!("{problem}");
    }
    if let Err(problem) = f.run_tools(tool_calls, seed, None).await {
        panic!("{problem}");
    }
    let stored = f.stored().await;
    assert_eq!(stored, f.live, "the records are those acknowledged as created and not as deleted (seed {seed})");
    f.check_events(&mut stream, existing, quiet).await;
    let (status, _) = t.call("GET", "/api/health", None).await;
    assert_eq!(status, 200);
    Outcome { seen: f.seen, as_created: f.as_created, touched_users: f.touched_users }
}

/// Bytes that are not a valid HTTP request, straight to the socket; an answer,
/// if any, is not a 500, and the app answers a good request afterwards.
async fn raw(t: &TestApp, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let addr = t.url.trim_start_matches("http://").to_owned();
    let good = "GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    let shapes: Vec<Vec<u8>> = vec![
        b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\n\r\n".to_vec(),
        b"GET /api/health HTTP/1.1\r\n\r\n".to_vec(),
        b"GET /api/health HTTP/9.9\r\nHost: 127.0.0.1\r\n\r\n".to_vec(),
        b"POST /api/collections/cards/records HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 50\r\n\r\n{\"ti".to_vec(),
        b"POST /api/collections/cards/records HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"
            .to_vec(),
        b"POST /api/collections/cards/records HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: -1\r\n\r\n".to_vec(),
        format!("GET /{} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", "a".repeat(70_000)).into_bytes(),
        format!("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX: {}\r\n\r\n", "b".repeat(200_000)).into_bytes(),
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03".to_vec(),
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec(),
        b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-LUI-Token: \xff\xfe\r\n\r\n".to_vec(),
        b"\r\n\r\n\r\n".to_vec(),
    ];
    let mut cases = shapes;
    for _ in 0..40 {
        let n = rng.random_range(1..300);
        cases.push((0..n).map(|_| rng.random::<u8>()).collect());
    }
    for case in &cases {
        let mut socket = tokio::net::TcpStream::connect(&addr).await.expect("connect");
        // The app may close first, which is a fine answer to garbage.
        let _ = socket.write_all(case).await;
        let _ = socket.shutdown().await;
        let mut answer = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(20), socket.read_to_end(&mut answer)).await;
        assert!(
            read.is_ok(),
            "no answer and no close within 20 s to {:?}",
            String::from_utf8_lossy(&case[..case.len().min(80)])
        );
        let head = String::from_utf8_lossy(&answer[..answer.len().min(12)]).into_owned();
        assert!(
            !head.starts_with("HTTP/1.1 500"),
            "a 500 for {:?}",
            String::from_utf8_lossy(&case[..case.len().min(80)])
        );
    }
    let mut socket = tokio::net::TcpStream::connect(&addr).await.expect("connect");
    socket.write_all(good.as_bytes()).await.expect("write");
    let mut answer = vec![0u8; 12];
    socket.read_exact(&mut answer).await.expect("read");
    assert_eq!(&answer, b"HTTP/1.1 200");
}

/// The example app, single-user, its write limit off so that writes go through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_requests_never_break_the_kanban_app() {
    let t = TestApp::with_config(|toml| toml.replace("writes_per_minute = 3000", "writes_per_minute = 0")).await;
    // A list to hang cards on, so that valid cards are among the creates.
    let list = t.create("lists", json!({"name": "To Do"})).await;
    let existing = [("lists", list["id"].as_str().unwrap().to_owned())];
    let seen = fuzz(
        &t,
        &existing,
        Vec::new(),
        Run { rounds: rounds(500), tool_calls: 0, seed: seed(), quiet: Duration::from_secs(1) },
    )
    .await
    .seen;
    raw(&t, seed()).await;
    let (status, _) = t.call("GET", "/api/health", None).await;
    assert_eq!(status, 200);
    assert_exercised(&seen);
}

/// A multi-user app with rules on every action, and two signed-in users,
/// each with a realtime stream of the notes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_requests_never_break_a_multi_user_app() {
    let t = TestApp::fixture("notes").await;
    let mut users = Vec::new();
    let mut streams = Vec::new();
    for email in ["ann@example.com", "bob@example.com"] {
        let (id, token) = t.user(email, "pass word 1").await;
        streams.push((id.clone(), crate::realtime::user_stream(&t, &token).await));
        users.push((id, token));
    }
    let existing: Vec<(&str, String)> = users.iter().map(|(id, _)| ("users", id.clone())).collect();
    let run = Run { rounds: rounds(300), tool_calls: 0, seed: seed(), quiet: Duration::from_secs(1) };
    let outcome = fuzz(&t, &existing, users, run).await;
    for (user, stream) in &mut streams {
        check_user_events(stream, user, &outcome).await;
    }
    assert_exercised(&outcome.seen);
}

/// A user's stream of `notes/*` against the fixture's view rule (`owner =
/// @request.auth.id || public = true`), judged on each event's record: no
/// event the rule hides from them, and exactly one create event for each
/// acknowledged note they could see as created. A user whose record was
/// changed (their password perhaps, and with it their token) is held to the
/// first half only. (The fuzzer never deletes a signed-in user.)
async fn check_user_events(stream: &mut Stream, user: &str, outcome: &Outcome) {
    let complete = !outcome.touched_users.contains(user);
    let visible = |record: &Value| record["owner"] == user || record["public"] == true;
    let expected: BTreeSet<&str> = outcome
        .as_created
        .iter()
        .filter(|((entity, _), record)| entity == "notes" && visible(record))
        .map(|((_, id), _)| id.as_str())
        .collect();
    let mut creates: BTreeMap<String, usize> = BTreeMap::new();
    loop {
        let awaited = complete && expected.iter().any(|id| !creates.contains_key(*id));
        let wait = if awaited { Duration::from_secs(10) } else { Duration::from_secs(1) };
        let Some((event, data)) = stream.within(wait).await else { break };
        assert_eq!(event, "notes/*", "{data}");
        let record = &data["record"];
        assert!(visible(record), "{user} got an event the view rule hides from them: {data}");
        if data["action"] == "create" {
            *creates.entry(record["id"].as_str().unwrap_or_default().to_owned()).or_default() += 1;
        }
    }
    let got: BTreeSet<&str> = creates.keys().map(String::as_str).collect();
    assert!(creates.values().all(|n| *n == 1), "one create event per note for {user}: {creates:?}");
    if complete {
        assert_eq!(got, expected, "{user} got a create event for each note they could see");
    } else {
        assert!(got.is_subset(&expected), "{user} got create events only for notes they could see");
    }
}

/// The run reached past the guard: records were created, changed, listed and
/// deleted, and refusals of several kinds were met.
fn assert_exercised(seen: &Seen) {
    assert!(seen.created >= 20, "{seen:?}");
    assert!(seen.updated >= 5, "{seen:?}");
    assert!(seen.deleted >= 3, "{seen:?}");
    assert!(seen.listed >= 20, "{seen:?}");
    assert!(seen.codes.len() >= 8, "{seen:?}");
}
