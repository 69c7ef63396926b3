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
//! or invalid params (-32602), and the records afterwards as acknowledged. The counts of what was exercised are asserted too,
//! so a generator that only produced refusals would fail.

use crate::realtime::Stream;
use crate::{NOW, TestApp};
use protocol::ErrorCode;
use protocol::schema::{Entity, FieldType};
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{RngExt, SeedableRng};
use serde_json::{Map, Value, json};
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

    /// A string from a small alphabet of troublemakers.
    fn junk(&mut self, max: usize) -> String {
        const PARTS: &[&str] = &[
            "a", "Z", "0", "9", " ", "'", "\"", "\\", "%", "_", "/", "..", "*", "?", "&", "=", "#", "~", "@", "$", "{",
            "}", "(", ")", "[", "]", ",", ":", ";", "\n", "\r", "\t", "\u{0}", "\u{1b}", "é", "日本", "🦀", "\u{202e}",
            "\u{feff}", "null", "true", "-1", "1e309", "NaN", "<script>", "%00", "%zz", "\\u0000",
        ];
        let n = self.rng.random_range(0..=max);
        (0..n).map(|_| self.pick(PARTS)).collect()
    }

    fn entity_name(&mut self) -> String {
        if self.chance(0.85) {
            let i = self.rng.random_range(0..self.entities.len());
            self.entities[i].0.clone()
        } else {
            let long = "x".repeat(300);
            self.pick(&["_a2app_audit", "_a2app_keys", "sqlite_master", "Cards", "", "users", long.as_str()]).to_owned()
        }
    }

    fn known_id(&mut self, entity: &str) -> Option<String> {
        let ids: Vec<String> = self.live.get(entity)?.iter().cloned().collect();
        if ids.is_empty() { None } else { Some(self.pick(&ids)) }
    }

    fn any_known_id(&mut self) -> Option<String> {
        let ids: Vec<String> = self.live.values().flatten().cloned().collect();
        if ids.is_empty() { None } else { Some(self.pick(&ids)) }
    }

    fn id(&mut self, entity: &str) -> String {
        match self.rng.random_range(0..10) {
            0..=5 => self.known_id(entity).unwrap_or_else(|| "abcdefghijklmno".into()),
            6 => self.any_known_id().unwrap_or_default(),
            7 => (0..15).map(|_| self.pick(&['a', 'z', '0', '9'])).collect(),
            8 => self.junk(20),
            _ => "a".repeat(self.rng.random_range(14..400)),
        }
    }

    /// A value for a field of `kind`: plausible most of the time, else anything.
    fn value(&mut self, kind: &FieldType) -> Value {
        if self.clean {
            return self.valid(kind);
        }
        if self.chance(0.25) {
            return self.any_value(3);
        }
        match kind {
            FieldType::String { .. } => match self.rng.random_range(0..8) {
                0 => Value::from(""),
                1 => Value::from("x".repeat(self.rng.random_range(90..300))),
                2 => Value::from(format!("{}@example.com", self.junk(6))),
                3 => Value::from(format!("https://example.com/{}", self.junk(4))),
                4 => Value::from(self.pick(&["2026-08-01", "2026-02-30", "26-8-1", "2026-08-01T00:00:00Z"])),
                _ => Value::from(format!("fuzz {}", self.junk(8))),
            },
            FieldType::Number { .. } => Value::from(self.pick(&[
                0.0,
                1.0,
                -1.0,
                0.5,
                50.0,
                100.0,
                101.0,
                1e15,
                -1e300,
                3.25,
                9.007_199_254_740_993e15,
            ])),
            FieldType::Boolean => Value::Bool(self.chance(0.5)),
            FieldType::Datetime => Value::from(self.pick(&[
                NOW,
                "2026-08-01",
                "2026-08-01 10:00:00.000Z",
                "next friday",
                "friday",
                "tomorrow",
                "2026-13-45",
                "0000-00-00",
                "9999-12-31T23:59:59Z",
                "",
            ])),
            FieldType::Enum { values } => {
                if self.chance(0.8) {
                    Value::from(self.pick(values))
                } else {
                    Value::from(self.junk(5))
                }
            }
            FieldType::ListEnum { values } => {
                let n = self.rng.random_range(0..4);
                Value::Array((0..n).map(|_| Value::from(self.pick(values))).collect())
            }
            FieldType::Ref { entity } => Value::from(self.id(entity)),
            FieldType::ListRef { entity } => {
                let n = self.rng.random_range(0..3);
                Value::Array((0..n).map(|_| Value::from(self.id(entity))).collect())
            }
            FieldType::Json => self.any_value(3),
            FieldType::Binary { .. } => self.any_value(1),
        }
    }

    /// A value the guard accepts for `kind` (refs to live records only).
    fn valid(&mut self, kind: &FieldType) -> Value {
        use protocol::schema::StringFormat;
        match kind {
            FieldType::String { format: Some(StringFormat::Email), .. } => Value::from("someone@example.com"),
            FieldType::String { format: Some(StringFormat::Url), .. } => Value::from("https://example.com/a"),
            FieldType::String { format: Some(StringFormat::DayKey), .. } => Value::from("2026-08-01"),
            FieldType::String { .. } => Value::from(format!("fuzz {}", self.rng.random_range(0..1000u32))),
            FieldType::Number { min, max, integer } => {
                let (lo, hi) = (min.unwrap_or(-1000.0), max.unwrap_or(1000.0));
                let n = self.rng.random_range(lo..=hi);
                if *integer { json!(n.round() as i64) } else { json!(n) }
            }
            FieldType::Boolean => Value::Bool(self.chance(0.5)),
            FieldType::Datetime => Value::from(self.pick(&[NOW, "2026-08-01 10:00:00.000Z", "next friday"])),
            FieldType::Enum { values } => Value::from(self.pick(values)),
            FieldType::ListEnum { values } => Value::Array(vec![Value::from(self.pick(values))]),
            FieldType::Ref { entity } => Value::from(self.known_id(entity).unwrap_or_default()),
            FieldType::ListRef { entity } => Value::Array(self.known_id(entity).map(Value::from).into_iter().collect()),
            FieldType::Json => json!({"k": [1, "two"]}),
            FieldType::Binary { .. } => Value::Null,
        }
    }

    fn any_value(&mut self, depth: u32) -> Value {
        match self.rng.random_range(0..if depth == 0 { 5 } else { 7 }) {
            0 => Value::Null,
            1 => Value::Bool(self.chance(0.5)),
            2 => json!(self.pick(&[0i64, -1, i64::MAX, i64::MIN, 42])),
            3 => json!(self.pick(&[0.5f64, -0.0, 1e308, 2.5e-308])),
            4 => Value::from(self.junk(12)),
            5 => {
                let n = self.rng.random_range(0..4);
                Value::Array((0..n).map(|_| self.any_value(depth - 1)).collect())
            }
            _ => {
                let n = self.rng.random_range(0..4);
                Value::Object((0..n).map(|_| (self.junk(6), self.any_value(depth - 1))).collect())
            }
        }
    }

    /// A record body for `entity`: its fields (some left out, some unknown
    /// or system fields added), or not an object at all.
    fn record(&mut self, entity: &str) -> Value {
        let Some((_, ent)) = self.entities.iter().find(|(n, _)| n == entity).cloned() else {
            return self.any_value(2);
        };
        let mut body = Map::new();
        for (name, field) in &ent.fields {
            let skip = matches!(field.kind, FieldType::Binary { .. } | FieldType::Ref { .. }) && !field.required;
            if self.clean && skip {
                continue;
            }
            let p = if field.required || self.clean { 0.92 } else { 0.5 };
            if self.chance(p) || (self.clean && field.required) {
                body.insert(name.clone(), self.value(&field.kind));
            }
        }
        if entity == "users" {
            let email = format!("fuzz{}@example.com", self.rng.random_range(0..1_000_000u32));
            body.insert("email".into(), Value::from(email));
            body.insert("password".into(), Value::from("fuzz pass 123"));
            body.insert("passwordConfirm".into(), Value::from("fuzz pass 123"));
        }
        if ent.fields.contains_key("owner") && !self.users.is_empty() {
            let keep = self.clean || self.chance(0.6);
            let user = match self.acting {
                Some(i) if keep => i,
                _ => self.rng.random_range(0..self.users.len()),
            };
            body.insert("owner".into(), Value::from(self.users[user].0.clone()));
        }
        if self.clean {
            return Value::Object(body);
        }
        if self.chance(0.1) {
            let extra = self.pick(&["id", "created", "updated", "collectionName", "titel", "", "expand"]);
            let value = if extra == "id" { Value::from(self.id(entity)) } else { self.any_value(1) };
            body.insert(extra.into(), value);
        }
        if self.chance(0.03) { self.any_value(2) } else { Value::Object(body) }
    }

    fn filter(&mut self) -> String {
        const FIELDS: &[&str] = &[
            "id",
            "title",
            "list",
            "list.name",
            "assignees.name",
            "labels",
            "points",
            "due_date",
            "done",
            "created",
            "owner",
            "public",
            "@request.auth.id",
            "@request.query.x",
            "nope",
            "list.nope.deeper",
            "meta.a",
        ];
        const OPS: &[&str] = &["=", "!=", ">", ">=", "<", "<=", "~", "!~", "?=", "?!=", "?~", "?>", "==", "=>", ""];
        const LITERALS: &[&str] = &[
            "'x'",
            "\"To Do\"",
            "1",
            "-2.5",
            "true",
            "false",
            "null",
            "''",
            "@now",
            "@todayStart",
            "@month",
            "'2026-08-01'",
            "'2026-08-01T00:00:00Z'",
            "'\\''",
            "'unterminated",
            "1e999",
            "@nope",
            "()",
        ];
        let n = self.rng.random_range(1..4);
        let mut out = String::new();
        for i in 0..n {
            if i > 0 {
                out.push_str(self.pick(&[" && ", " || ", " ", "&&", " AND "]));
            }
            if self.chance(0.15) {
                out.push('(');
            }
            let field = self.pick(FIELDS);
            let op = self.pick(OPS);
            let literal = if self.chance(0.85) { self.pick(LITERALS).to_owned() } else { self.junk(6) };
            let _ = write!(out, "{field} {op} {literal}");
            if self.chance(0.15) {
                out.push(')');
            }
        }
        if self.chance(0.1) { self.junk(30) } else { out }
    }

    fn query(&mut self) -> Vec<(String, String)> {
        let mut q = Vec::new();
        if self.chance(0.4) {
            let f = self.filter();
            q.push(("filter".into(), f));
        }
        if self.chance(0.3) {
            let s = self.pick(&["-created", "created,-id", "title", "-list.name", "@random", "nope", "", "+", "-"]);
            q.push(("sort".into(), s.into()));
        }
        if self.chance(0.2) {
            let e = self.pick(&["list", "assignees", "owner", "list.nope", "nope", "list,assignees", ""]);
            q.push(("expand".into(), e.into()));
        }
        if self.chance(0.2) {
            let f = self.pick(&["id,title", "*", "expand.list.name", "nope", "", ",,"]);
            q.push(("fields".into(), f.into()));
        }
        for key in ["page", "perPage"] {
            if self.chance(0.25) {
                let v = self.pick(&["0", "1", "-1", "2", "500", "501", "99999999999999999999", "x", "", "1.5"]);
                q.push((key.into(), v.into()));
            }
        }
        if self.chance(0.15) {
            let v = self.pick(&["true", "false", "1", "0", "yes"]);
            q.push(("skipTotal".into(), v.into()));
        }
        if self.chance(0.05) {
            let (k, v) = (self.junk(5), self.junk(5));
            q.push((k, v));
        }
        q
    }

    fn headers(&mut self) -> Vec<(&'static str, Vec<u8>)> {
        let mut h = Vec::new();
        if self.clean {
            h.push(("x-lui-token", self.t.token.clone().into_bytes()));
            h.push(("x-lui-agent", b"fuzz".to_vec()));
            if let Some(i) = self.acting {
                h.push(("authorization", self.users[i].1.clone().into_bytes()));
            }
            return h;
        }
        match self.rng.random_range(0..20) {
            0..=15 => h.push(("x-lui-token", self.t.token.clone().into_bytes())),
            16 => h.push(("x-lui-token", b"forged-token".to_vec())),
            17 => h.push(("x-a2app-token", self.t.token.clone().into_bytes())),
            _ => {}
        }
        if self.chance(0.9) {
            let agent = if self.chance(0.9) { "fuzz".to_owned() } else { self.junk(10) };
            h.push(("x-lui-agent", agent.into_bytes()));
        }
        if !self.users.is_empty() && self.chance(0.7) {
            let token = match self.rng.random_range(0..6) {
                0 => b"Bearer nonsense".to_vec(),
                1 => b"eyJhbGciOiJub25lIn0.eyJpZCI6IngifQ.".to_vec(),
                _ => self.pick(&self.users.clone()).1.into_bytes(),
            };
            h.push(("authorization", token));
        }
        match self.rng.random_range(0..20) {
            0..=5 => {
                let key = format!("fuzz-{}", self.rng.random_range(0..u32::MAX));
                self.keys.push(key.clone());
                h.push(("idempotency-key", key.into_bytes()));
            }
            6..=8 if !self.keys.is_empty() => {
                let key = self.pick(&self.keys.clone());
                h.push(("idempotency-key", key.into_bytes()));
            }
            9 => h.push(("idempotency-key", "k".repeat(5000).into_bytes())),
            10 => h.push(("idempotency-key", Vec::new())),
            _ => {}
        }
        match self.rng.random_range(0..20) {
            0 => h.push(("origin", b"http://evil.example".to_vec())),
            1 => h.push(("origin", self.t.url.clone().into_bytes())),
            2 => h.push(("sec-fetch-site", b"cross-site".to_vec())),
            3 => h.push(("if-match", self.junk(8).into_bytes())),
            _ => {}
        }
        h
    }

    /// A request body: JSON most of the time, else bytes that are not.
    fn body(&mut self, json: Value) -> (Vec<u8>, &'static [u8]) {
        if self.clean {
            return (json.to_string().into_bytes(), b"application/json");
        }
        let bytes = match self.rng.random_range(0..40) {
            0 => b"{\"title\": ".to_vec(),
            1 => vec![0xff, 0xfe, b'{', 0x80, b'}'],
            2 => "[".repeat(5000).into_bytes(),
            3 => format!("{{\"title\": \"{}\"}}", "x".repeat(a2app_server::http::MAX_BODY + 10)).into_bytes(),
            4 => b"title=x&list=y".to_vec(),
            5 => Vec::new(),
            6 => b"--b\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nx\r\n--b--\r\n".to_vec(),
            _ => json.to_string().into_bytes(),
        };
        let content_type: &'static [u8] = match self.rng.random_range(0..12) {
            0 => b"text/plain",
            1 => b"application/x-www-form-urlencoded",
            2 => b"multipart/form-data; boundary=b",
            3 => b"multipart/form-data",
            4 => b"",
            _ => b"application/json",
        };
        (bytes, content_type)
    }

    fn next(&mut self) -> Req {
        self.clean = self.chance(0.4);
        self.acting = if self.users.is_empty() { None } else { Some(self.rng.random_range(0..self.users.len())) };
        let entity = self.entity_name();
        let mut headers = self.headers();
        let mut body = None;
        let mut query = Vec::new();
        let (method, path, intent) = match self.rng.random_range(0..100) {
            0..=29 => {
                let json = self.record(&entity);
                body = Some(json);
                ("POST", format!("/api/collections/{entity}/records"), Intent::Create(entity.clone()))
            }
            30..=44 => {
                query = self.query();
                ("GET", format!("/api/collections/{entity}/records"), Intent::Other)
            }
            45..=52 => {
                query = self.query();
                let id = self.id(&entity);
                ("GET", format!("/api/collections/{entity}/records/{}", encode(&id)), Intent::Other)
            }
            53..=66 => {
                let id = self.id(&entity);
                let json = self.record(&entity);
                body = Some(json);
                query = if self.chance(0.2) { self.query() } else { Vec::new() };
                ("PATCH", format!("/api/collections/{entity}/records/{}", encode(&id)), Intent::Other)
            }
            67..=73 => {
                let id = self.id(&entity);
                let path = format!("/api/collections/{entity}/records/{}", encode(&id));
                ("DELETE", path, Intent::Delete(entity.clone(), id))
            }
            74..=79 => {
                let mut names = self.operations.clone();
                names.push(self.junk(6));
                let name = self.pick(&names);
                let mut params = Map::new();
                for p in ["card", "list", "position", "include_done", "x"] {
                    if self.chance(0.6) {
                        let v = match p {
                            "card" => Value::from(self.id("cards")),
                            "list" => Value::from(self.id("lists")),
                            _ => self.any_value(1),
                        };
                        params.insert(p.into(), v);
                    }
                }
                body = Some(Value::Object(params));
                let intent = if self.destructive.contains(&name) { Intent::Destructive } else { Intent::Other };
                ("POST", format!("/api/ops/{}", encode(&name)), intent)
            }
            80..=83 => {
                let sub = json!({"clientId": self.junk(40), "subscriptions": [format!("{entity}/*"), self.junk(10)]});
                body = Some(sub);
                ("POST", "/api/realtime".into(), Intent::Other)
            }
            84 => {
                let body_json = json!({"identity": self.junk(10), "password": self.junk(10)});
                body = Some(body_json);
                ("POST", format!("/api/collections/{entity}/auth-with-password"), Intent::Other)
            }
            85..=92 => {
                let path = self.pick(&[
                    "/api/_a2app",
                    "/api/_a2app/describe",
                    "/api/_a2app/describe/cards",
                    "/api/_a2app/describe/nope/deeper",
                    "/api/_a2app/whoami",
                    "/api/_a2app/receipts",
                    "/api/_a2app/actions",
                    "/api/_ops",
                    "/api/_jobs/nope",
                    "/api/health",
                    "/api/files/cards/x/y.png",
                    "/_/connect.json",
                    "/.well-known/ai-catalog.json",
                    "/mcp/server-card",
                    "/api/../api/health",
                ]);
                query = if self.chance(0.3) { self.query() } else { Vec::new() };
                if path == "/api/_a2app/receipts" && self.chance(0.7) {
                    let since = self.pick(&[NOW, "", "x", "2026-01-01"]);
                    query.push(("since".into(), since.into()));
                    query.push(("limit".into(), self.pick(&["1", "0", "-5", "1000000", "z"]).into()));
                }
                (self.pick(&["GET", "GET", "GET", "POST", "HEAD", "OPTIONS"]), path.into(), Intent::Other)
            }
            93..=95 => {
                let rpc = json!({
                    "jsonrpc": self.pick(&["2.0", "1.0"]),
                    "id": self.any_value(0),
                    "method": self.pick(&["initialize", "tools/list", "tools/call", "resources/read", "nope", ""]),
                    "params": self.any_value(2),
                });
                body = Some(rpc);
                headers.push(("accept", b"application/json, text/event-stream".to_vec()));
                ("POST", "/mcp".into(), Intent::Other)
            }
            _ => {
                let method = self.pick(&["GET", "PUT", "POST", "DELETE", "PATCH", "TRACE"]);
                (method, format!("/{}", encode(&self.junk(12))), Intent::Other)
            }
        };
        let body = body.map(|json| {
            let (bytes, content_type) = self.body(json);
            if !content_type.is_empty() {
                headers.push(("content-type", content_type.to_vec()));
            }
            bytes
        });
        Req { method, path, query, headers, body, intent }
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
                self.acknowledge_create(entity, id);
            }
            Intent::Delete(entity, id) if ok => {
                if status != 204 {
                    return Err(format!("a delete answered {status}, not 204"));
                }
                self.acknowledge_delete(entity, id)?;
            }
            _ if ok && req.method == "PATCH" => self.seen.updated += 1,
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

    /// Reads `stream` until it is quiet, and checks its events against what
    /// was acknowledged: exactly one create event for every acknowledged
    /// create and one delete event for every acknowledged delete, and no
    /// event for a record never acknowledged as created (or there before).
    async fn check_events(&self, stream: &mut Stream, before: &[(&str, String)]) {
        let mut creates: BTreeMap<(String, String), usize> = BTreeMap::new();
        let mut deletes: BTreeMap<(String, String), usize> = BTreeMap::new();
        let known: BTreeSet<(String, String)> =
            before.iter().map(|(e, id)| ((*e).to_owned(), id.clone())).chain(self.created.iter().cloned()).collect();
        while let Some((event, data)) = stream.within(Duration::from_secs(2)).await {
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

    /// A tool call of the compact MCP surface: a tool (sometimes one that
    /// does not exist) and arguments, mostly of the right shape.
    fn tool_call(&mut self) -> (String, Value) {
        self.clean = self.chance(0.4);
        self.acting = None;
        let tool = self.pick(&[
            "describe",
            "query",
            "query",
            "get",
            "create",
            "create",
            "create",
            "update",
            "update",
            "delete",
            "run_operation",
            "job_status",
            "nope",
        ]);
        let entity = self.entity_name();
        let mut args = Map::new();
        match tool {
            "describe" => {
                let path = self.pick(&["", "cards", "cards.fields", "operations", "nope", "cards/../lists"]);
                args.insert("path".into(), Value::from(path));
            }
            "query" => {
                args.insert("entity".into(), Value::from(entity.clone()));
                for (k, v) in self.query() {
                    let value = match k.as_str() {
                        "page" | "perPage" => v.parse::<i64>().map(Value::from).unwrap_or(Value::from(v)),
                        _ => Value::from(v),
                    };
                    args.insert(k, value);
                }
            }
            "get" | "delete" => {
                args.insert("entity".into(), Value::from(entity.clone()));
                args.insert("id".into(), Value::from(self.id(&entity)));
            }
            "create" | "update" => {
                args.insert("entity".into(), Value::from(entity.clone()));
                args.insert("record".into(), self.record(&entity));
                if tool == "update" {
                    args.insert("id".into(), Value::from(self.id(&entity)));
                }
                if self.chance(0.3) {
                    let key = format!("mcp-{}", self.rng.random_range(0..400u32));
                    args.insert("idempotencyKey".into(), Value::from(key));
                }
            }
            "run_operation" => {
                let mut names = self.operations.clone();
                names.push(self.junk(5));
                args.insert("name".into(), Value::from(self.pick(&names)));
                let params = json!({"card": self.id("cards"), "list": self.id("lists"), "include_done": true});
                args.insert("params".into(), if self.chance(0.8) { params } else { self.any_value(2) });
                if self.chance(0.3) {
                    args.insert("approvalKey".into(), Value::from(self.junk(12)));
                }
            }
            "job_status" => {
                args.insert("jobId".into(), Value::from(self.junk(15)));
            }
            _ => {}
        }
        if !self.clean && self.chance(0.2) {
            let keys: Vec<String> = args.keys().cloned().collect();
            if let Some(key) = keys.first().filter(|_| self.chance(0.5)) {
                let value = self.any_value(2);
                args.insert(key.clone(), value);
            } else {
                let (key, value) = (self.junk(6), self.any_value(1));
                args.insert(key, value);
            }
        }
        let args = if !self.clean && self.chance(0.05) { self.any_value(1) } else { Value::Object(args) };
        (tool.to_owned(), args)
    }

    /// Sends a tool call as the owner over the modern (stateless) era.
    async fn call_tool(&self, tool: &str, arguments: &Value) -> Result<(u16, Value), String> {
        const MODERN: &str = "2026-07-28";
        let params = json!({
            "name": tool,
            "arguments": arguments,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        });
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params});
        let request = self
            .t
            .http
            .post(format!("{}/mcp", self.t.url))
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", MODERN)
            .header("mcp-method", "tools/call")
            .header("mcp-name", tool)
            .header("authorization", format!("Bearer {}", self.t.token))
            .body(body.to_string());
        let response = tokio::time::timeout(Duration::from_secs(20), request.send())
            .await
            .map_err(|_| "no answer within 20 s".to_owned())?
            .map_err(|e| format!("transport error: {e:?}"))?;
        let status = response.status().as_u16();
        let text = response.text().await.map_err(|e| format!("body error: {e}"))?;
        Ok((status, serde_json::from_str(&text).unwrap_or(Value::String(text))))
    }

    /// Checks one tool call's answer; updates the bookkeeping.
    fn check_tool(&mut self, tool: &str, args: &Value, status: u16, body: &Value) -> Result<(), String> {
        if status != 200 {
            return Err(format!("answered {status}: {body}"));
        }
        if let Some(error) = body.get("error") {
            // Arguments that do not fit the tool's schema, or no such tool.
            let code = error["code"].as_i64();
            if code != Some(-32602) || !error["message"].is_string() {
                return Err(format!("a JSON-RPC error other than invalid params: {error}"));
            }
            self.seen.codes.insert("jsonrpc:invalid_params");
            return Ok(());
        }
        let result = &body["result"];
        let content = &result["structuredContent"];
        match result["isError"].as_bool() {
            Some(true) => {
                let code = content["code"].as_str().ok_or_else(|| format!("a tool error without a code: {body}"))?;
                let known = ErrorCode::from_name(code).ok_or_else(|| format!("code {code:?} is not in the table"))?;
                if content["status"] != known.status() {
                    return Err(format!("{code} with status {}, its status is {}", content["status"], known.status()));
                }
                self.seen.codes.insert(known.as_str());
            }
            Some(false) => match tool {
                "create" => {
                    let entity = content["collectionName"].as_str();
                    let (Some(entity), Some(id)) = (entity, content["id"].as_str()) else {
                        return Err(format!("a created record without collectionName and id: {body}"));
                    };
                    self.acknowledge_create(entity, id);
                }
                "delete" => {
                    let (entity, id) = (args["entity"].as_str().unwrap_or(""), args["id"].as_str().unwrap_or(""));
                    self.acknowledge_delete(entity, id)?;
                }
                "update" => self.seen.updated += 1,
                "query" => self.seen.listed += 1,
                "run_operation" if self.destructive.iter().any(|d| args["name"] == d.as_str()) => {
                    return Err(format!("a destructive operation ran unapproved: {body}"));
                }
                _ => {}
            },
            None => return Err(format!("neither a result nor an error: {body}")),
        }
        Ok(())
    }

    async fn run_tools(&mut self, calls: usize, seed: u64) -> Result<(), String> {
        for i in 0..calls {
            let (tool, args) = self.tool_call();
            let checked = match self.call_tool(&tool, &args).await {
                Ok((status, body)) => self.check_tool(&tool, &args, status, &body),
                Err(problem) => Err(problem),
            };
            if let Err(problem) = checked {
                return Err(format!("seed {seed}, tool call {i}: {problem}\n{tool} {args}"));
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

/// Runs the fuzzer against `t`, whose records before it are `existing`
/// (entity, id), with these users' (id, token).
async fn fuzz(t: &TestApp, existing: &[(&str, String)], users: Vec<(String, String)>, rounds: usize) -> Seen {
    let seed = seed();
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
    let stored = f.stored().await;
    assert_eq!(stored, f.live, "the records are those acknowledged as created and not as deleted (seed {seed})");
    f.check_events(&mut stream, existing).await;
    let (status, _) = t.call("GET", "/api/health", None).await;
    assert_eq!(status, 200);
    f.seen
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
    let seen = fuzz(&t, &existing, Vec::new(), rounds(500)).await;
    raw(&t, seed()).await;
    let (status, _) = t.call("GET", "/api/health", None).await;
    assert_eq!(status, 200);
    assert_exercised(&seen);
}

/// The MCP tools of the kanban app, called with arguments of every shape.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_tool_calls_never_break_the_mcp_endpoint() {
    let t = TestApp::with_config(|toml| toml.replace("writes_per_minute = 3000", "writes_per_minute = 0")).await;
    let list = t.create("lists", json!({"name": "To Do"})).await;
    let seed = seed();
    let mut f = Fuzzer::new(&t, seed);
    f.live.entry("lists".into()).or_default().insert(list["id"].as_str().unwrap().to_owned());
    if let Err(problem) = f.run_tools(rounds(500) * 2, seed).await {
        panic!("{problem}");
    }
    let stored = f.stored().await;
    assert_eq!(stored, f.live, "the records are those acknowledged as created and not as deleted (seed {seed})");
    assert_exercised(&f.seen);
}

/// A multi-user app with rules on every action, and two signed-in users.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_requests_never_break_a_multi_user_app() {
    let t = TestApp::fixture("notes").await;
    let mut users = Vec::new();
    for email in ["ann@example.com", "bob@example.com"] {
        let body = json!({"email": email, "password": "pass word 1", "passwordConfirm": "pass word 1"});
        let created = t.create("users", body).await;
        let (status, auth) = t
            .call(
                "POST",
                "/api/collections/users/auth-with-password",
                Some(json!({"identity": email, "password": "pass word 1"})),
            )
            .await;
        assert_eq!(status, 200, "{auth}");
        users.push((created["id"].as_str().unwrap().to_owned(), auth["token"].as_str().unwrap().to_owned()));
    }
    let existing: Vec<(&str, String)> = users.iter().map(|(id, _)| ("users", id.clone())).collect();
    let seen = fuzz(&t, &existing, users, rounds(300)).await;
    assert_exercised(&seen);
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
