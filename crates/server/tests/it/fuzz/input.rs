//! The generator: requests, values and records, mostly of the right shape,
//! the rest of every wrong one.

use super::{Fuzzer, Intent, Req, encode};
use crate::NOW;
use protocol::schema::FieldType;
use rand::RngExt;
use serde_json::{Map, Value, json};
use std::fmt::Write as _;

impl Fuzzer<'_> {
    /// A string from a small alphabet of troublemakers.
    pub(super) fn junk(&mut self, max: usize) -> String {
        const PARTS: &[&str] = &[
            "a", "Z", "0", "9", " ", "'", "\"", "\\", "%", "_", "/", "..", "*", "?", "&", "=", "#", "~", "@", "$", "{",
            "}", "(", ")", "[", "]", ",", ":", ";", "\n", "\r", "\t", "\u{0}", "\u{1b}", "é", "日本", "🦀", "\u{202e}",
            "\u{feff}", "null", "true", "-1", "1e309", "NaN", "<script>", "%00", "%zz", "\\u0000",
        ];
        let n = self.rng.random_range(0..=max);
        (0..n).map(|_| self.pick(PARTS)).collect()
    }

    pub(super) fn entity_name(&mut self) -> String {
        if self.chance(0.85) {
            let i = self.rng.random_range(0..self.entities.len());
            self.entities[i].0.clone()
        } else {
            let long = "x".repeat(300);
            self.pick(&["_a2app_audit", "_a2app_keys", "sqlite_master", "Cards", "", "users", long.as_str()]).to_owned()
        }
    }

    pub(super) fn known_id(&mut self, entity: &str) -> Option<String> {
        let ids: Vec<String> = self.live.get(entity)?.iter().cloned().collect();
        if ids.is_empty() { None } else { Some(self.pick(&ids)) }
    }

    pub(super) fn any_known_id(&mut self) -> Option<String> {
        let ids: Vec<String> = self.live.values().flatten().cloned().collect();
        if ids.is_empty() { None } else { Some(self.pick(&ids)) }
    }

    pub(super) fn id(&mut self, entity: &str) -> String {
        match self.rng.random_range(0..10) {
            0..=5 => self.known_id(entity).unwrap_or_else(|| "abcdefghijklmno".into()),
            6 => self.any_known_id().unwrap_or_default(),
            7 => (0..15).map(|_| self.pick(&['a', 'z', '0', '9'])).collect(),
            8 => self.junk(20),
            _ => "a".repeat(self.rng.random_range(14..400)),
        }
    }

    /// A value for a field of `kind`: plausible most of the time, else anything.
    pub(super) fn value(&mut self, kind: &FieldType) -> Value {
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
    pub(super) fn valid(&mut self, kind: &FieldType) -> Value {
        use protocol::schema::StringFormat;
        match kind {
            FieldType::String { format: Some(StringFormat::Email), .. } => Value::from("someone@example.com"),
            FieldType::String { format: Some(StringFormat::Url), .. } => Value::from("https://example.com/a"),
            FieldType::String { format: Some(StringFormat::DayKey), .. } => Value::from("2026-08-01"),
            FieldType::String { .. } => Value::from(format!("fuzz {}", self.rng.random_range(0..1000u32))),
            FieldType::Number { min, max, integer } => {
                // Bounded, so that the span stays finite whatever the schema says.
                let lo = min.unwrap_or(-1000.0).max(-1e12);
                let hi = max.unwrap_or(lo + 2000.0).min(1e12);
                let n = if lo < hi { self.rng.random_range(lo..=hi) } else { min.or(*max).unwrap_or(0.0) };
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

    pub(super) fn any_value(&mut self, depth: u32) -> Value {
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
    pub(super) fn record(&mut self, entity: &str) -> Value {
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

    /// A field path of `entity` as its schema has it: a field or system
    /// field, a ref followed into its target, a back-relation, a modifier.
    pub(super) fn path(&mut self, entity: &str, depth: u32) -> String {
        let Some(ent) = self.entities.iter().find(|(n, _)| n == entity).map(|(_, e)| e.clone()) else {
            return "id".into();
        };
        let mut names: Vec<(String, Option<String>)> =
            ent.fields.iter().map(|(n, f)| (n.clone(), f.kind.target().map(str::to_owned))).collect();
        names.extend(["id", "created", "updated"].map(|n| (n.to_owned(), None)));
        for (other, e) in &self.entities {
            for (field, f) in &e.fields {
                if f.kind.target() == Some(entity) {
                    names.push((format!("{other}_via_{field}"), Some(other.clone())));
                }
            }
        }
        let (name, target) = self.pick(&names);
        match target {
            Some(t) if depth > 0 && self.chance(0.5) => format!("{name}.{}", self.path(&t, depth - 1)),
            _ if self.chance(0.15) => {
                format!("{name}{}", self.pick(&[":length", ":each", ":lower", ":isset", ":changed"]))
            }
            _ => name,
        }
    }

    pub(super) fn filter(&mut self, entity: &str) -> String {
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
            let field = if self.chance(0.5) { self.path(entity, 3) } else { self.pick(FIELDS).to_owned() };
            let op = self.pick(OPS);
            let literal = if self.chance(0.85) { self.pick(LITERALS).to_owned() } else { self.junk(6) };
            let _ = write!(out, "{field} {op} {literal}");
            if self.chance(0.15) {
                out.push(')');
            }
        }
        if self.chance(0.1) { self.junk(30) } else { out }
    }

    pub(super) fn query(&mut self, entity: &str) -> Vec<(String, String)> {
        let mut q = Vec::new();
        if self.chance(0.4) {
            let f = self.filter(entity);
            q.push(("filter".into(), f));
        }
        if self.chance(0.3) {
            let s = if self.chance(0.4) {
                format!("{}{}", self.pick(&["", "-", "+"]), self.path(entity, 2))
            } else {
                self.pick(&["-created", "created,-id", "title", "-list.name", "@random", "nope", "", "+", "-"]).into()
            };
            q.push(("sort".into(), s));
        }
        if self.chance(0.2) {
            let e = if self.chance(0.4) {
                self.path(entity, 3)
            } else {
                self.pick(&["list", "assignees", "owner", "list.nope", "nope", "list,assignees", ""]).into()
            };
            q.push(("expand".into(), e));
        }
        if self.chance(0.2) {
            let f = if self.chance(0.3) {
                format!("id,{},expand.{}", self.path(entity, 0), self.path(entity, 2))
            } else {
                self.pick(&["id,title", "*", "expand.list.name", "nope", "", ",,"]).into()
            };
            q.push(("fields".into(), f));
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

    pub(super) fn headers(&mut self) -> Vec<(&'static str, Vec<u8>)> {
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
    pub(super) fn body(&mut self, json: Value) -> (Vec<u8>, &'static [u8]) {
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

    pub(super) fn next(&mut self) -> Req {
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
                query = self.query(&entity);
                ("GET", format!("/api/collections/{entity}/records"), Intent::Other)
            }
            45..=52 => {
                query = self.query(&entity);
                let id = self.id(&entity);
                ("GET", format!("/api/collections/{entity}/records/{}", encode(&id)), Intent::Other)
            }
            53..=66 => {
                let id = self.id(&entity);
                let json = self.record(&entity);
                body = Some(json);
                query = if self.chance(0.2) { self.query(&entity) } else { Vec::new() };
                ("PATCH", format!("/api/collections/{entity}/records/{}", encode(&id)), Intent::Other)
            }
            67..=73 => {
                let mut id = self.id(&entity);
                // The signed-in users stay: without them the rest of the run
                // would be refusals, and their streams are checked at the end.
                if self.users.iter().any(|(user, _)| *user == id) {
                    id = "abcdefghijklmno".into();
                }
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
                    "/api/_a2app/requests",
                    "/api/_a2app/requests/abcdefghijklmno",
                    "/api/_a2app/requests/abcdefghijklmno/claim",
                    "/api/_a2app/requests/abcdefghijklmno/answer",
                    "/api/_a2app/requests/x/cancel",
                    "/api/_a2app/grants",
                    "/api/_a2app/grants/abcdefghijklmno",
                    "/api/_a2app/grants/abcdefghijklmno/approve",
                    "/api/_a2app/grants/abcdefghijklmno/deny",
                    "/api/_a2app/grants/abcdefghijklmno/revoke",
                    "/api/_a2app/grants/abcdefghijklmno/token",
                    "/.well-known/oauth-protected-resource",
                    "/.well-known/oauth-protected-resource/mcp",
                    "/.well-known/oauth-authorization-server",
                    "/oauth/register",
                    "/oauth/authorize",
                    "/oauth/token",
                    "/oauth/revoke",
                ]);
                if path.starts_with("/oauth/") {
                    // Registrations, sign-ins and trades that almost parse.
                    let uri =
                        self.pick(&["http://127.0.0.1/cb", "https://c.example/cb", "javascript:x", "", "http://x/"]);
                    let registered = json!({
                        "redirect_uris": [uri, self.any_value(0)],
                        "client_name": self.any_value(0),
                        "token_endpoint_auth_method": self.pick(&["none", "client_secret_basic", ""]),
                        "grant_types": self.any_value(1),
                    });
                    body = Some(if self.chance(0.5) { registered } else { self.any_value(2) });
                    for key in [
                        "response_type",
                        "client_id",
                        "redirect_uri",
                        "code_challenge",
                        "code_challenge_method",
                        "scope",
                        "state",
                        "resource",
                        "grant_type",
                        "code",
                        "code_verifier",
                        "refresh_token",
                        "token",
                        "token_type_hint",
                    ] {
                        if self.chance(0.4) {
                            let len = self.rng.random_range(0..50);
                            query.push((key.into(), self.junk(len)));
                        }
                    }
                    if self.chance(0.5) {
                        headers.push(("content-type", b"application/x-www-form-urlencoded".to_vec()));
                    }
                }
                if path.starts_with("/api/_a2app/grants") {
                    // A grant token some of the time (never a valid one), and
                    // asks, decisions and trades that almost parse.
                    if self.chance(0.3) {
                        headers.push(("authorization", format!("Bearer a2g_{}", self.junk(40)).into_bytes()));
                    }
                    if self.chance(0.5) && !headers.iter().any(|(h, _)| *h == "origin") {
                        headers.push(("origin", self.t.url.clone().into_bytes()));
                    }
                    let asked = json!({
                        "publicKey": self.pick(&["11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo", "", "x"]),
                        "agent": self.any_value(0),
                        "scopes": [self.pick(&["data:cards:read", "op:export_board", "data:x:write", "", "op:"]), self.any_value(0)],
                        "timestamp": self.any_value(0),
                        "nonce": self.junk(20),
                        "signature": self.junk(86),
                    });
                    body = Some(if self.chance(0.5) { asked } else { self.any_value(2) });
                }
                if path.starts_with("/api/_a2app/requests") {
                    // The page's origin some of the time: only a person asks.
                    if self.chance(0.5) && !headers.iter().any(|(h, _)| *h == "origin") {
                        headers.push(("origin", self.t.url.clone().into_bytes()));
                    }
                    let asked = json!({
                        "capability": self.pick(&["summarise_board", "suggest_priority", "", "nope"]),
                        "params": self.any_value(2),
                        "claimKey": self.junk(8),
                        "result": self.any_value(2),
                        "leaseSeconds": self.any_value(0),
                    });
                    body = Some(if self.chance(0.5) { asked } else { self.any_value(2) });
                }
                if self.chance(0.3) {
                    query.extend(self.query(&entity));
                }
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
}
