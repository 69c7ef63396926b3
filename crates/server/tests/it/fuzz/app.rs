//! Random app directories, grown from the kanban example and the multi-user
//! fixture by a few mutations of their files each, replayable by seed like
//! the rest of the fuzz. For every one:
//!
//! - loading it (what `agent-app check` runs) never panics, and every problem
//!   names one of the app's files, a JSONPath and what is wrong;
//! - whatever loads also opens (check is the whole gate of serve): on an empty
//!   directory, and on a copy of the base app's database holding records, where
//!   the migration applies or is refused with its reasons, and applies when
//!   destruction is allowed;
//! - a migration that was not refused kept every record of every entity the
//!   new schema still has;
//! - the opened app then takes a short run of the request fuzzer, with all its
//!   checks (no 5xx, the envelope, the books, the realtime stream), and MCP
//!   tool calls after it.

use super::{Run, fuzz, rounds, seed};
use crate::TestApp;
use a2app_core::app::OpenError;
use a2app_core::operations::Registry;
use protocol::schema::FieldType;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{RngExt, SeedableRng};
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

/// Request batches sent to each app that opens, and MCP tool calls after them.
const REQUEST_ROUNDS: usize = 6;
const TOOL_CALLS: usize = 20;

/// One app's three files, as values while they are mutated.
struct Files {
    toml: toml::Table,
    schema: Value,
    operations: Option<Value>,
}

/// The base app: its files, and a database holding records, by entity.
struct Base {
    name: &'static str,
    files: Files,
    database: tempfile::TempDir,
    records: BTreeMap<String, BTreeSet<String>>,
}

struct Mutator {
    rng: StdRng,
    /// What was done to the files, printed with any failure.
    log: Vec<String>,
}

const ENTITY_NAMES: &[&str] = &[
    "tasks",
    "a",
    "a__b",
    "lists",
    "cards",
    "notes",
    "users",
    "members",
    "sqlite_x",
    "a2app_idx_cards__created",
    "a2app_uidx_users__email",
    "select",
    "expand",
    "collections",
    "Cards",
    "_hidden",
    "9x",
    "a_via_b",
    "",
];

const FIELD_NAMES: &[&str] = &[
    "title", "name", "done", "list", "owner", "position", "rowid", "oid", "_rowid_", "select", "from", "id", "created",
    "updated", "expand", "email", "password", "verified", "a__b", "b", "c", "Bad-Name", "é", "",
];

const RULES: &[&str] = &[
    "",
    "owner = @request.auth.id",
    "@request.auth.id != ''",
    "public = true || owner = @request.auth.id",
    "owner.name = 'x'",
    "nope = 1",
    "owner = @request.auth.id &&",
    "@request.body.owner:changed = false",
    "created > @now",
];

/// The value under `keys`, made an object on the way where it was missing;
/// `None` where a mutation already put something else than an object.
fn at<'v>(mut value: &'v mut Value, keys: &[&str]) -> Option<&'v mut Value> {
    for key in keys {
        if value.is_null() {
            *value = Value::Object(Map::new());
        }
        value = value.as_object_mut()?.entry(*key).or_insert(Value::Null);
    }
    Some(value)
}

/// Sets the value under `keys`, when the path allows it.
fn set(value: &mut Value, keys: &[&str], to: Value) {
    if let Some(slot) = at(value, keys) {
        *slot = to;
    }
}

impl Mutator {
    fn chance(&mut self, p: f64) -> bool {
        self.rng.random_bool(p)
    }

    fn pick<T: Clone>(&mut self, items: &[T]) -> T {
        items.choose(&mut self.rng).cloned().expect("non-empty choice")
    }

    fn name(&mut self, pool: &[&str]) -> String {
        match self.rng.random_range(0..20) {
            0 => "x".repeat(self.rng.random_range(62..66)),
            1..=10 => format!("f{}", self.rng.random_range(0..30)),
            _ => self.pick(pool).to_owned(),
        }
    }

    /// A value of any JSON shape, for a key that wants one particular shape.
    fn junk(&mut self) -> Value {
        self.pick(&[
            Value::Null,
            json!(true),
            json!(-1),
            json!(0),
            json!(1.5),
            json!(1e300),
            json!(u64::MAX),
            json!(""),
            json!("x"),
            json!([]),
            json!(["a"]),
            json!({}),
            json!({"type": "string"}),
        ])
    }

    fn number(&mut self) -> Value {
        self.pick(&[json!(0), json!(1), json!(3), json!(100), json!(-5), json!(0.5), json!(1e15), json!(-1e300)])
    }

    /// A field definition, of a known type most of the time, with options
    /// that fit it most of the time.
    fn field(&mut self, entities: &[String]) -> Value {
        let kind = if self.chance(0.93) {
            self.pick(FieldType::NAMES).to_owned()
        } else {
            self.pick(&["strin", "int", "", "list<string>"]).to_owned()
        };
        let mut def = Map::new();
        def.insert("type".into(), Value::from(kind.clone()));
        if self.chance(0.3) {
            def.insert("required".into(), if self.chance(0.9) { json!(self.chance(0.5)) } else { self.junk() });
        }
        if self.chance(0.1) {
            def.insert("readOnly".into(), json!(self.chance(0.5)));
        }
        match kind.as_str() {
            "string" => {
                for key in ["min", "max"] {
                    if self.chance(0.3) {
                        let n = self.pick(&[json!(0), json!(1), json!(5), json!(255), json!(-1), json!(2.5)]);
                        def.insert(key.into(), n);
                    }
                }
                if self.chance(0.2) {
                    let p = self.pick(&["^[a-z]+$", "(", "(a+)+$", ".*", "\\d{4}", "^x"]);
                    def.insert("pattern".into(), Value::from(p));
                }
                if self.chance(0.2) {
                    let f = self.pick(&["email", "url", "YYYY-MM-DD", "phone"]);
                    def.insert("format".into(), Value::from(f));
                }
            }
            "number" => {
                for key in ["min", "max"] {
                    if self.chance(0.3) {
                        let n = self.number();
                        def.insert(key.into(), n);
                    }
                }
                if self.chance(0.3) {
                    def.insert("integer".into(), json!(self.chance(0.7)));
                }
            }
            "enum" | "list<enum>" => {
                let values = self.pick(&[
                    json!(["a", "b", "c"]),
                    json!(["low", "high"]),
                    json!(["x"]),
                    json!([]),
                    json!(["a", "a"]),
                    json!([""]),
                    json!([1]),
                ]);
                def.insert("values".into(), values);
            }
            "ref" | "list<ref>" => {
                let mut targets: Vec<String> = entities.to_vec();
                targets.push("users".into());
                if self.chance(0.1) {
                    targets.push("nope".into());
                }
                let target = self.pick(&targets);
                def.insert("entity".into(), Value::from(target));
            }
            "binary" => {
                if self.chance(0.4) {
                    def.insert("maxSize".into(), self.pick(&[json!(1024), json!(0), json!(-1)]));
                }
                if self.chance(0.4) {
                    def.insert("mimeTypes".into(), self.pick(&[json!(["image/png"]), json!(["png"]), json!([])]));
                }
            }
            _ => {}
        }
        if self.chance(0.25) {
            let default = match kind.as_str() {
                "string" => self.pick(&[json!("x"), json!(""), json!("a@b.co")]),
                "number" => self.number(),
                "boolean" => json!(self.chance(0.5)),
                "enum" => self.pick(&[json!("a"), json!("low"), json!("x")]),
                "datetime" => self.pick(&[json!("2026-08-01 10:00:00.000Z"), json!("tomorrow")]),
                _ => self.junk(),
            };
            def.insert("default".into(), default);
        }
        if self.chance(0.03) {
            def.insert(self.name(&["maxx", "values", "entity", "pattern"]), self.junk());
        }
        Value::Object(def)
    }

    fn mutate_schema(&mut self, schema: &mut Value, multi_user: bool) {
        let Some(entities) = schema.get_mut("entities").and_then(Value::as_object_mut) else { return };
        let names: Vec<String> = entities.keys().cloned().collect();
        let op = self.rng.random_range(0..17);
        if names.is_empty() && !(7..=8).contains(&op) {
            return;
        }
        let entity = if names.is_empty() { String::new() } else { self.pick(&names) };
        let fields_of = |entities: &Map<String, Value>, e: &str| -> Vec<String> {
            entities[e]["fields"].as_object().map(|f| f.keys().cloned().collect()).unwrap_or_default()
        };
        match op {
            0..=3 => {
                let name = self.name(FIELD_NAMES);
                let def = self.field(&names);
                self.log.push(format!("schema: add {entity}.{name} = {def}"));
                if let Some(Value::Object(fields)) = at(&mut entities[&entity], &["fields"]) {
                    fields.insert(name, def);
                }
            }
            4 => {
                let fields = fields_of(entities, &entity);
                if let Some(field) = fields.choose(&mut self.rng).cloned() {
                    self.log.push(format!("schema: remove {entity}.{field}"));
                    if let Some(Value::Object(f)) = at(&mut entities[&entity], &["fields"]) {
                        f.shift_remove(&field);
                    }
                }
            }
            5 | 6 => {
                // Replace a field's definition: a change of type, or of its options.
                let fields = fields_of(entities, &entity);
                if let Some(field) = fields.choose(&mut self.rng).cloned() {
                    let def = self.field(&names);
                    self.log.push(format!("schema: redefine {entity}.{field} = {def}"));
                    set(&mut entities[&entity], &["fields", &field], def);
                }
            }
            7 | 8 => {
                let name = self.name(ENTITY_NAMES);
                let mut fields = Map::new();
                for _ in 0..self.rng.random_range(0..4) {
                    let mut all = names.clone();
                    all.push(name.clone());
                    fields.insert(self.name(FIELD_NAMES), self.field(&all));
                }
                let def = json!({ "fields": fields });
                self.log.push(format!("schema: add entity {name} = {def}"));
                entities.insert(name, def);
            }
            9 => {
                self.log.push(format!("schema: remove entity {entity}"));
                entities.shift_remove(&entity);
            }
            10 => {
                let name = self.name(ENTITY_NAMES);
                self.log.push(format!("schema: rename entity {entity} to {name}"));
                if let Some(def) = entities.shift_remove(&entity) {
                    entities.insert(name, def);
                }
            }
            11 | 12 => {
                let mut columns = fields_of(entities, &entity);
                columns.extend(["created", "updated", "id"].map(String::from));
                if self.chance(0.1) {
                    columns.push("nope".into());
                }
                let n = self.rng.random_range(0..4);
                let indexes: Vec<Vec<String>> = (0..n)
                    .map(|_| {
                        let width = self.rng.random_range(1..4);
                        (0..width).map(|_| self.pick(&columns)).collect()
                    })
                    .collect();
                self.log.push(format!("schema: indexes of {entity} = {indexes:?}"));
                set(&mut entities[&entity], &["indexes"], json!(indexes));
            }
            13 => {
                let mut labels = fields_of(entities, &entity);
                labels.extend(["id", "created"].map(String::from));
                if self.chance(0.1) {
                    labels.push("nope".into());
                }
                let label = self.pick(&labels);
                self.log.push(format!("schema: label of {entity} = {label}"));
                set(&mut entities[&entity], &["label"], Value::from(label));
            }
            14 if !multi_user && self.chance(0.7) => {
                // What a switch to a single-user app needs.
                self.log.push(format!("schema: remove the rules of {entity}"));
                if let Some(def) = entities[&entity].as_object_mut() {
                    def.shift_remove("rules");
                }
            }
            14 if multi_user || self.chance(0.2) => {
                let action = self.pick(&["list", "view", "create", "update", "delete", "read"]);
                let rule = if self.chance(0.1) { Value::Null } else { Value::from(self.pick(RULES)) };
                self.log.push(format!("schema: rule {action} of {entity} = {rule}"));
                set(&mut entities[&entity], &["rules", action], rule);
            }
            15 => {
                let fields = fields_of(entities, &entity);
                if let Some(field) = fields.choose(&mut self.rng).cloned() {
                    let key = self.pick(&["type", "required", "default", "min", "max", "values", "entity", "format"]);
                    let value = self.junk();
                    self.log.push(format!("schema: {entity}.{field}.{key} = {value}"));
                    set(&mut entities[&entity], &["fields", &field, key], value);
                }
            }
            _ => {
                let value = self.junk();
                let at = self.pick(&["fields", "indexes", "label", "rules"]);
                self.log.push(format!("schema: {entity}.{at} = {value}"));
                set(&mut entities[&entity], &[at], value);
            }
        }
    }

    fn mutate_config(&mut self, config: &mut toml::Table) {
        match self.rng.random_range(0..8) {
            0 | 1 => {
                let mode = self.pick(&["single-user", "multi-user", "multi-user", "many"]);
                self.log.push(format!("app.toml: auth_mode = {mode}"));
                config.insert("auth_mode".into(), mode.into());
            }
            2 => {
                let zone = self.pick(&["UTC", "Europe/Paris", "America/Los_Angeles", "Mars/Base", ""]);
                self.log.push(format!("app.toml: timezone = {zone}"));
                config.insert("timezone".into(), zone.into());
            }
            3 => {
                let key = self.pick(&["writes_per_minute", "reads_per_minute", "nope"]);
                let value: toml::Value = self.pick(&[0i64.into(), 100_000i64.into(), (-1i64).into(), "x".into()]);
                self.log.push(format!("app.toml: limits.{key} = {value}"));
                let limits = config.entry("limits").or_insert_with(|| toml::Table::new().into());
                if let Some(t) = limits.as_table_mut() {
                    t.insert(key.into(), value);
                }
            }
            4 => {
                let id = self.pick(&["kanban", "notes-2", "", "Bad Id", "x"]);
                self.log.push(format!("app.toml: id = {id}"));
                config.insert("id".into(), id.into());
            }
            5 => {
                let key = self.pick(&["id", "name", "auth_mode", "http", "limits", "discovery", "timezone"]);
                self.log.push(format!("app.toml: remove {key}"));
                config.remove(key);
            }
            6 => {
                let origins: toml::Value = self.pick(&[
                    toml::Value::Array(vec!["https://app.example".into()]),
                    toml::Value::Array(vec!["not a url".into()]),
                    toml::Value::Array(vec![5i64.into()]),
                    "https://app.example".into(),
                ]);
                self.log.push(format!("app.toml: http.allowed_origins = {origins}"));
                let http = config.entry("http").or_insert_with(|| toml::Table::new().into());
                if let Some(t) = http.as_table_mut() {
                    t.insert("allowed_origins".into(), origins);
                }
            }
            _ => {
                let key = self.pick(&["bogus", "description", "name"]);
                let value: toml::Value = self.pick(&["x".into(), 1i64.into(), true.into(), "".into()]);
                self.log.push(format!("app.toml: {key} = {value}"));
                config.insert(key.into(), value);
            }
        }
    }

    fn mutate_operations(&mut self, operations: &mut Value, entities: &[String]) {
        let Some(list) = operations.as_array_mut() else { return };
        if list.is_empty() {
            return;
        }
        let i = self.rng.random_range(0..list.len());
        let name = list[i]["name"].clone();
        match self.rng.random_range(0..7) {
            0 => {
                self.log.push(format!("operations: remove {name}"));
                list.remove(i);
            }
            1 => {
                let mut targets = entities.to_vec();
                targets.push("nope".into());
                let entity = self.pick(&targets);
                self.log.push(format!("operations: {name}.executor.entity = {entity}"));
                set(&mut list[i], &["executor", "entity"], Value::from(entity));
            }
            2 => {
                let filter = self.pick(&["done = true", "nope = 1", "list = {:nope}", "(", "title ~ {:card}"]);
                self.log.push(format!("operations: {name}.executor.filter = {filter}"));
                set(&mut list[i], &["executor", "filter"], Value::from(filter));
            }
            3 => {
                let schedule = self.pick(&["every 15m", "hourly", "daily 25:00", "every 0m", "weekly"]);
                self.log.push(format!("operations: {name}.schedule = {schedule}"));
                set(&mut list[i], &["schedule"], Value::from(schedule));
            }
            4 => {
                let kind = self.pick(&["crud", "http", "job", "nope"]);
                self.log.push(format!("operations: {name}.executor.kind = {kind}"));
                set(&mut list[i], &["executor", "kind"], Value::from(kind));
            }
            5 => {
                let copy = list[i].clone();
                self.log.push(format!("operations: {name} twice"));
                list.push(copy);
            }
            _ => {
                let kind = self.pick(&["string", "number", "boolean", "list", "object"]);
                self.log.push(format!("operations: {name}.params.x.type = {kind}"));
                set(&mut list[i], &["params", "x"], json!({ "type": kind }));
            }
        }
    }

    /// The base's files after one to three mutations, as text; now and then
    /// one of them cut short or with bytes that are not UTF-8.
    fn files(&mut self, base: &Files) -> Vec<(&'static str, Vec<u8>)> {
        let mut config = base.toml.clone();
        let mut schema = base.schema.clone();
        let mut operations = base.operations.clone();
        for _ in 0..self.rng.random_range(1..4) {
            match self.rng.random_range(0..10) {
                0 => self.mutate_config(&mut config),
                1 if operations.is_some() => {
                    let entities: Vec<String> =
                        schema["entities"].as_object().map(|e| e.keys().cloned().collect()).unwrap_or_default();
                    if let Some(ops) = operations.as_mut() {
                        self.mutate_operations(ops, &entities);
                    }
                }
                _ => {
                    let multi_user = config.get("auth_mode").and_then(toml::Value::as_str) == Some("multi-user");
                    self.mutate_schema(&mut schema, multi_user);
                }
            }
        }
        // A switch to a single-user app needs the rules gone too, mostly done.
        let single_user = config.get("auth_mode").and_then(toml::Value::as_str) != Some("multi-user");
        if single_user && self.chance(0.7) {
            for def in schema["entities"].as_object_mut().into_iter().flat_map(|e| e.values_mut()) {
                if let Some(rules) = def.as_object_mut().and_then(|d| d.shift_remove("rules")) {
                    self.log.push(format!("schema: remove rules {rules}"));
                }
            }
        }
        let mut files = vec![
            ("app.toml", toml::to_string(&config).expect("toml").into_bytes()),
            ("schema.json", serde_json::to_vec_pretty(&schema).expect("json")),
        ];
        if let Some(ops) = &operations {
            files.push(("operations.json", serde_json::to_vec_pretty(ops).expect("json")));
        }
        if self.chance(0.04) {
            let i = self.rng.random_range(0..files.len());
            let (file, bytes) = &mut files[i];
            let at = self.rng.random_range(0..bytes.len());
            if self.chance(0.5) {
                self.log.push(format!("{file}: cut at byte {at}"));
                bytes.truncate(at);
            } else {
                self.log.push(format!("{file}: bytes 0xff 0xfe at {at}"));
                bytes.splice(at..at, [0xff, 0xfe]);
            }
        }
        files
    }
}

fn read_base(dir: &Path) -> Files {
    let text = |name: &str| std::fs::read_to_string(dir.join(name)).ok();
    Files {
        toml: text("app.toml").expect("app.toml").parse().expect("base app.toml"),
        schema: serde_json::from_str(&text("schema.json").expect("schema.json")).expect("base schema"),
        operations: text("operations.json").map(|t| serde_json::from_str(&t).expect("base operations")),
    }
}

/// Serves the base app, puts records in it, and keeps its database.
async fn seeded(name: &'static str) -> Base {
    let t = if name == "kanban" { TestApp::kanban().await } else { TestApp::fixture(name).await };
    let mut records: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut create = async |entity: &str, body: Value| {
        let id = t.create(entity, body).await["id"].as_str().expect("id").to_owned();
        records.entry(entity.to_owned()).or_default().insert(id.clone());
        id
    };
    if name == "kanban" {
        let list = create("lists", json!({"name": "To Do", "color": "blue"})).await;
        let member = create("members", json!({"name": "Ann", "email": "ann@example.com"})).await;
        for (title, done) in [("Write", false), ("Ship", true), ("Rest", false)] {
            let card = json!({"title": title, "list": list, "done": done, "points": 3, "labels": ["bug"],
                "assignees": [member], "meta": {"k": 1}, "due_date": "2026-08-01 10:00:00.000Z"});
            create("cards", card).await;
        }
    } else {
        let (owner, _) = t.user("ann@example.com", "pass word 1").await;
        let (other, _) = t.user("bob@example.com", "pass word 1").await;
        for (title, public) in [("mine", false), ("shared", true)] {
            create("notes", json!({"title": title, "owner": owner, "public": public})).await;
        }
        create("audit_notes", json!({"text": "seen"})).await;
        records.insert("users".into(), BTreeSet::from([owner, other]));
    }
    // A consistent copy, whatever the WAL holds and whoever still has it open.
    let database = tempfile::tempdir().expect("temp dir");
    let db = rusqlite::Connection::open(t.dir.path().join("data/data.db")).expect("open seed database");
    let target = database.path().join("data.db");
    db.execute("VACUUM INTO ?1", [target.to_str().expect("utf-8 path")]).expect("copy seed database");
    let files = read_base(t.dir.path());
    Base { name, files, database, records }
}

/// Writes `files` into a new directory, with the base's database if `data`.
fn directory(files: &[(&'static str, Vec<u8>)], data: Option<&Base>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for (name, bytes) in files {
        std::fs::write(dir.path().join(name), bytes).expect("write app file");
    }
    if let Some(base) = data {
        std::fs::create_dir(dir.path().join("data")).expect("data dir");
        std::fs::copy(base.database.path().join("data.db"), dir.path().join("data/data.db")).expect("copy database");
    }
    dir
}

/// Every record `t` lists, by entity.
async fn listed(t: &TestApp) -> BTreeMap<String, BTreeSet<String>> {
    let mut out = BTreeMap::new();
    for entity in t.app.definition.schema.entities.keys() {
        let path = format!("/api/collections/{entity}/records?perPage=500&fields=id");
        let (status, body) = t.call("GET", &path, None).await;
        assert_eq!(status, 200, "{entity}: {body}");
        let items = body["items"].as_array().expect("items");
        out.insert(entity.clone(), items.iter().map(|r| r["id"].as_str().expect("id").to_owned()).collect());
    }
    out
}

/// What the rounds came to, asserted at the end so that a generator that
/// only made broken apps (or only unbroken ones) fails.
#[derive(Default, Debug)]
struct Tally {
    refused_by_check: usize,
    migrated: usize,
    migration_refused: usize,
    served: usize,
}

/// One mutated app: checked, opened fresh, migrated from the base's records,
/// and served to the request fuzzer.
async fn round(base: &Base, m: &mut Mutator, round_seed: u64, tally: &mut Tally) {
    let files = m.files(&base.files);
    let context = || format!("base {}, round seed {round_seed}, mutations:\n  {}", base.name, m.log.join("\n  "));
    let fresh = directory(&files, None);
    let loaded = std::panic::catch_unwind(|| a2app_core::app::load(fresh.path()))
        .unwrap_or_else(|_| panic!("loading panicked; {}", context()));
    let definition = match loaded {
        Err(problems) => {
            assert!(!problems.is_empty(), "refused without a problem; {}", context());
            for p in &problems {
                let named = ["app.toml", "schema.json", "operations.json"].contains(&p.file);
                assert!(named && p.path.starts_with('$') && !p.message.is_empty(), "{p:?}; {}", context());
            }
            tally.refused_by_check += 1;
            return;
        }
        Ok(definition) => definition,
    };
    let native = definition.operations.iter().any(|o| o.run.kind() == "native");
    match a2app_core::App::open(definition, a2app_core::OpenOptions::default()) {
        Ok(_) => {}
        Err(OpenError::MissingHandlers(_)) if native => return,
        Err(e) => panic!("checked, but does not open on an empty directory: {e}; {}", context()),
    }
    let load = |dir: &tempfile::TempDir| a2app_core::app::load(dir.path()).expect("loads again");
    let dir = directory(&files, Some(base));
    let definition = load(&dir);
    let (t, kept) = match TestApp::start(dir, definition, Registry::default(), false).await {
        Ok(t) => (t, true),
        Err(OpenError::Refused(reasons)) => {
            assert!(reasons.iter().all(|r| !r.is_empty()) && !reasons.is_empty(), "{}", context());
            tally.migration_refused += 1;
            let dir = directory(&files, Some(base));
            let definition = load(&dir);
            match TestApp::start(dir, definition, Registry::default(), true).await {
                Ok(t) => (t, false),
                Err(e) => panic!("the migration fails even when destruction is allowed: {e}; {}", context()),
            }
        }
        Err(e) => panic!("checked, but does not open on the base's database: {e}; {}", context()),
    };
    tally.migrated += 1;
    let stored = listed(&t).await;
    if kept {
        for (entity, ids) in &base.records {
            if let Some(now) = stored.get(entity) {
                assert_eq!(now, ids, "a migration that was not refused lost records of {entity}; {}", context());
            }
        }
    }
    let (status, describe) = t.call("GET", "/api/_a2app/describe", None).await;
    assert_eq!(status, 200, "{describe}; {}", context());
    if stored.is_empty() {
        return;
    }
    eprintln!("serving {}", context());
    let existing: Vec<(&str, String)> =
        stored.iter().flat_map(|(e, ids)| ids.iter().map(move |id| (e.as_str(), id.clone()))).collect();
    let run =
        Run { rounds: REQUEST_ROUNDS, tool_calls: TOOL_CALLS, seed: round_seed, quiet: Duration::from_millis(300) };
    fuzz(&t, &existing, Vec::new(), run).await;
    tally.served += 1;
}

/// Mutated copies of the example and of the multi-user fixture.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_app_files_are_checked_or_open_migrate_and_serve() {
    let seed = seed();
    let bases = [seeded("kanban").await, seeded("notes").await];
    let mut m = Mutator { rng: StdRng::seed_from_u64(seed), log: Vec::new() };
    let mut tally = Tally::default();
    for i in 0..rounds(60) {
        let base = &bases[i % bases.len()];
        m.log.clear();
        let round_seed = seed.wrapping_add(i as u64);
        round(base, &mut m, round_seed, &mut tally).await;
    }
    let n = rounds(60);
    assert!(tally.refused_by_check * 5 >= n, "{tally:?}");
    assert!(tally.served * 5 >= n, "{tally:?}");
    assert!(tally.migration_refused >= 1, "{tally:?}");
}
