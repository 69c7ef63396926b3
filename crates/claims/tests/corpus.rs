//! The labeled corpus (`corpus.json`), run in memory.
//!
//! The format is `a2app_claims::corpus`'s (documented there, and shared with
//! a harness that makes the same writes through a real server). Here each
//! case's setup is simulated, honestly and small: seed records get ids in
//! order; a stored write gets the receipt sentence core makes
//! (`crates/core/src/receipt.rs`: `Added "X" to List, due Fri 31 Jul`,
//! `Updated "X": list → Done`, `Deleted "X" from cards`, `Ran operation …`);
//! a write the guard would refuse is refused with the codes a small guard
//! here finds (which must be the codes the case expects); a replayed
//! `Idempotency-Key` writes nothing. Then the message is checked, and the
//! verdict and every claim's kind and reason must be the labelled ones.
//! The run prints the counts, precision and recall (a positive is a message
//! that must be withheld).

use a2app_claims::corpus::{self, Case, Expect, Step, StepAction};
use a2app_claims::{Action, App, Job, Outcome, Turn, Write, check};
use indexmap::IndexMap;
use jiff::civil::Date;
use jiff::tz::TimeZone;
use protocol::claim::{Reason, Verdict};
use protocol::describe::Describe;
use protocol::operation::JobState;
use protocol::schema::{Entity, FieldType, Schema, StringFormat};
use protocol::{ErrorCode, Violation};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

const CORPUS: &str = include_str!("corpus.json");

/// An app of the corpus, read from its directory.
struct Prepared {
    describe: Describe,
    schema: Schema,
    operations: Vec<Map<String, Value>>,
    today: Date,
    zone: TimeZone,
    timezone: String,
    seed: Vec<corpus::Seed>,
}

fn prepare(app: &corpus::App) -> Prepared {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(&app.dir);
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_else(|e| panic!("{}/{f}: {e}", app.dir));
    let toml = read("app.toml");
    let setting = |key: &str| {
        toml.lines()
            .find_map(|l| {
                l.strip_prefix(key)?.trim_start().strip_prefix('=')?.trim().strip_prefix('"')?.split('"').next()
            })
            .map(str::to_owned)
    };
    let id = setting("id").expect("app.toml has an id");
    let timezone = setting("timezone").unwrap_or_else(|| "UTC".into());
    let (schema_text, ops_text) = (read("schema.json"), read("operations.json"));
    let describe = corpus::describe(&id, &timezone, &schema_text, Some(&ops_text)).expect("describe");
    Prepared {
        describe,
        schema: serde_json::from_str(&schema_text).expect("schema"),
        operations: serde_json::from_str(&ops_text).expect("operations"),
        today: app.today.parse().expect("today is YYYY-MM-DD"),
        zone: TimeZone::get(&timezone).expect("a known zone"),
        timezone,
        seed: app.seed.clone(),
    }
}

/// The records of one case's app, and the writes its setup made.
struct World<'a> {
    app: &'a Prepared,
    records: IndexMap<String, (String, Map<String, Value>)>,
    aliases: HashMap<String, String>,
    keys: HashSet<String>,
    turn: Turn,
    ids: usize,
    jobs: usize,
}

impl<'a> World<'a> {
    fn seeded(app: &'a Prepared) -> World<'a> {
        let mut world = World {
            app,
            records: IndexMap::new(),
            aliases: HashMap::new(),
            keys: HashSet::new(),
            turn: Turn::default(),
            ids: 0,
            jobs: 0,
        };
        for seed in &app.seed {
            let body = world.resolve(&Value::Object(seed.body.clone())).expect("seed aliases");
            let mut row = body.as_object().cloned().unwrap_or_default();
            world.defaults(&seed.entity, &mut row);
            let id = world.new_id();
            world.aliases.insert(seed.alias.clone(), id.clone());
            world.records.insert(id, (seed.entity.clone(), row));
        }
        world
    }

    fn new_id(&mut self) -> String {
        self.ids += 1;
        format!("r{:014}", self.ids)
    }

    fn entity(&self, name: &str) -> Option<&'a Entity> {
        self.app.schema.entities.get(name)
    }

    fn defaults(&self, entity: &str, row: &mut Map<String, Value>) {
        if let Some(e) = self.entity(entity) {
            for (name, field) in &e.fields {
                if let (false, Some(default)) = (row.contains_key(name), &field.default) {
                    row.insert(name.clone(), default.clone());
                }
            }
        }
    }

    /// `@alias` strings, anywhere in a value, to ids.
    fn resolve(&self, value: &Value) -> Result<Value, String> {
        Ok(match value {
            Value::String(s) if s.starts_with('@') => {
                Value::String(self.aliases.get(&s[1..]).cloned().ok_or_else(|| format!("unknown alias {s}"))?)
            }
            Value::Array(items) => Value::Array(items.iter().map(|v| self.resolve(v)).collect::<Result<_, _>>()?),
            Value::Object(map) => Value::Object(
                map.iter().map(|(k, v)| Ok((k.clone(), self.resolve(v)?))).collect::<Result<_, String>>()?,
            ),
            other => other.clone(),
        })
    }

    fn label(&self, entity: &str, id: &str) -> String {
        let label_field = self.entity(entity).and_then(|e| e.label.clone());
        match self.records.get(id) {
            Some((_, row)) => match label_field.and_then(|l| row.get(&l).cloned()) {
                Some(Value::String(s)) if !s.is_empty() => s,
                Some(Value::Number(n)) => n.to_string(),
                _ => id.to_owned(),
            },
            None => id.to_owned(),
        }
    }

    fn now(&self) -> String {
        format!("2026-07-30 09:{:02}:00.000Z", self.turn.writes.len() % 60)
    }

    /// Applies one step; a simulated answer other than the expected one is an error.
    fn apply(&mut self, step: &Step) -> Result<(), String> {
        if let Some(key) = &step.idempotency_key
            && !self.keys.insert(key.clone())
        {
            // A replay: the app names the first write and stores nothing.
            return match step.expect {
                Expect::Replay => Ok(()),
                _ => Err(format!("key {key} was used before: the app answers a replay, not {:?}", step.expect)),
            };
        }
        if step.expect == Expect::Replay {
            return Err("expects a replay of a key not used before".into());
        }
        let body = self.resolve(&Value::Object(step.body.clone()))?;
        let body = body.as_object().cloned().unwrap_or_default();
        let outcome = match step.action {
            StepAction::Create => self.create(&step.entity, &body, step.alias.as_deref()),
            StepAction::Update => self.update(&step.entity, &self.record(step)?, &body),
            StepAction::Delete => self.delete(&step.entity, &self.record(step)?),
            StepAction::Run => self.run(step.operation.as_deref().unwrap_or_default(), &body, step.job),
        };
        match (&step.expect, outcome) {
            (Expect::Stored, Ok(())) => Ok(()),
            (Expect::Refused(want), Err(got)) if same_codes(want, &got) => Ok(()),
            (want, got) => Err(format!("expected {want:?}, the simulation answers {got:?}")),
        }
    }

    fn record(&self, step: &Step) -> Result<String, String> {
        let r = step.record.as_deref().ok_or("update and delete name a record")?;
        Ok(match r.strip_prefix('@') {
            Some(alias) => self.aliases.get(alias).cloned().ok_or_else(|| format!("unknown alias {r}"))?,
            None => r.to_owned(),
        })
    }

    fn refuse(&mut self, mut w: Write, codes: Vec<ErrorCode>) -> Result<(), Vec<ErrorCode>> {
        let violations: Vec<Violation> = codes.iter().map(|c| Violation::new(*c, c.as_str())).collect();
        w.outcome = Outcome::Refused(violations);
        w.at = self.now();
        self.turn.writes.push(w);
        Err(codes)
    }

    fn create(&mut self, entity: &str, body: &Map<String, Value>, alias: Option<&str>) -> Result<(), Vec<ErrorCode>> {
        let label_field = self.entity(entity).and_then(|e| e.label.clone()).unwrap_or_default();
        let codes = self.guard(entity, body, true);
        if !codes.is_empty() {
            let mut w = Write::new(Action::Create, entity, "");
            w.label = body.get(&label_field).and_then(Value::as_str).unwrap_or_default().to_owned();
            w.fields = body.clone();
            w.text = format!("Refused a create in {entity}: {}", names(&codes));
            return self.refuse(w, codes);
        }
        let id = self.new_id();
        let mut row = body.clone();
        self.defaults(entity, &mut row);
        self.records.insert(id.clone(), (entity.to_owned(), row.clone()));
        if let Some(alias) = alias {
            self.aliases.insert(alias.to_owned(), id.clone());
        }
        let mut w = self.written(Action::Create, entity, &id, body.keys().cloned().collect(), &row);
        w.place = self.place(entity, &row);
        w.text = self.receipt_create(entity, &id, body, &row);
        self.turn.writes.push(w);
        Ok(())
    }

    fn update(&mut self, entity: &str, id: &str, body: &Map<String, Value>) -> Result<(), Vec<ErrorCode>> {
        let Some((_, before)) = self.records.get(id).cloned() else {
            let mut w = Write::new(Action::Update, entity, id);
            w.label = id.to_owned();
            w.fields = body.clone();
            return self.refuse(w, vec![ErrorCode::NotFound]);
        };
        let codes = self.guard(entity, body, false);
        let old_label = self.label(entity, id);
        if !codes.is_empty() {
            let mut w = Write::new(Action::Update, entity, id);
            w.label = old_label;
            w.fields = body.clone();
            w.place = self.place(entity, &before);
            w.text = format!("Refused an update of \"{}\": {}", w.label, names(&codes));
            return self.refuse(w, codes);
        }
        let mut row = before.clone();
        for (k, v) in body {
            row.insert(k.clone(), v.clone());
        }
        self.records.insert(id.to_owned(), (entity.to_owned(), row.clone()));
        let mut w = self.written(Action::Update, entity, id, body.keys().cloned().collect(), &row);
        let new_label = self.label(entity, id);
        if new_label != old_label {
            w.previous_label = Some(old_label);
        }
        w.place = self.place(entity, &before);
        w.text = self.receipt_update(entity, id, body, &row);
        self.turn.writes.push(w);
        Ok(())
    }

    fn delete(&mut self, entity: &str, id: &str) -> Result<(), Vec<ErrorCode>> {
        let Some((_, row)) = self.records.get(id).cloned() else {
            let mut w = Write::new(Action::Delete, entity, id);
            w.label = id.to_owned();
            return self.refuse(w, vec![ErrorCode::NotFound]);
        };
        let label = self.label(entity, id);
        let mut w = self.written(Action::Delete, entity, id, row.keys().cloned().collect(), &row);
        w.place = self.place(entity, &row);
        w.text = format!("Deleted \"{label}\" from {entity}");
        self.records.shift_remove(id);
        self.turn.writes.push(w);
        Ok(())
    }

    fn run(&mut self, name: &str, params: &Map<String, Value>, job: Option<JobState>) -> Result<(), Vec<ErrorCode>> {
        let Some(op) =
            self.app.operations.iter().find(|o| o.get("name").and_then(Value::as_str) == Some(name)).cloned()
        else {
            let w = Write::new(Action::Run, "", name);
            return self.refuse(w, vec![ErrorCode::UnknownOperation]);
        };
        let mut run = Write::new(Action::Run, "", name);
        run.fields = params.clone();
        let declared = op.get("params").and_then(Value::as_object).cloned().unwrap_or_default();
        let missing =
            declared.iter().any(|(k, p)| p.get("required") == Some(&Value::Bool(true)) && !params.contains_key(k));
        let unknown = params.keys().any(|k| !declared.contains_key(k));
        if missing || unknown {
            run.text = format!("Ran operation {name}: failed with invalid_param");
            return self.refuse(run, vec![ErrorCode::InvalidParam]);
        }
        if op.get("destructive") == Some(&Value::Bool(true)) {
            run.text = format!("Ran operation {name}: failed with approval_required");
            return self.refuse(run, vec![ErrorCode::ApprovalRequired]);
        }
        let executor = op.get("executor").and_then(Value::as_object).cloned().unwrap_or_default();
        let param = |v: &Value| match v.as_str().and_then(|s| s.strip_prefix("{:")).and_then(|s| s.strip_suffix('}')) {
            Some(p) => params.get(p).cloned(),
            None => Some(v.clone()),
        };
        match executor.get("kind").and_then(Value::as_str) {
            Some("job") => {
                self.jobs += 1;
                let id = format!("j{:014}", self.jobs);
                let state = job.unwrap_or(JobState::Running);
                let mut w = Write::new(Action::JobStarted, "", name);
                w.fields = params.clone();
                w.job = Some(Job { id: id.clone(), state });
                w.text = format!("Ran operation {name}: started job {id}");
                w.at = self.now();
                self.turn.writes.push(w);
                if matches!(state, JobState::Succeeded | JobState::Failed | JobState::Interrupted) {
                    let mut done = Write::new(Action::JobFinished, "", name);
                    done.job = Some(Job { id: id.clone(), state });
                    done.text = format!("Job {id} of {name} {}", state.as_str());
                    done.at = self.now();
                    self.turn.writes.push(done);
                }
                Ok(())
            }
            Some("crud") => {
                let entity = executor.get("entity").and_then(Value::as_str).unwrap_or_default().to_owned();
                let before = self.turn.writes.len();
                match executor.get("action").and_then(Value::as_str) {
                    Some("update") => {
                        let id = executor.get("id").and_then(param).and_then(|v| v.as_str().map(str::to_owned));
                        let set: Map<String, Value> = executor
                            .get("set")
                            .and_then(Value::as_object)
                            .map(|s| s.iter().filter_map(|(k, v)| Some((k.clone(), param(v)?))).collect())
                            .unwrap_or_default();
                        let id = id.unwrap_or_default();
                        if !self.records.contains_key(&id) {
                            run.text = format!("Ran operation {name}: failed with not_found");
                            return self.refuse(run, vec![ErrorCode::NotFound]);
                        }
                        let codes = self.guard(&entity, &set, false);
                        if !codes.is_empty() {
                            run.text = format!("Ran operation {name}: failed with {}", codes[0].as_str());
                            return self.refuse(run, codes);
                        }
                        self.update(&entity, &id, &set).map_err(|c| c.clone())?;
                    }
                    Some("delete") => {
                        let filter = executor.get("filter").and_then(Value::as_str).unwrap_or_default();
                        let ids: Vec<String> = self
                            .records
                            .iter()
                            .filter(|(_, (e, row))| *e == entity && matches_filter(row, filter))
                            .map(|(id, _)| id.clone())
                            .collect();
                        for id in ids {
                            self.delete(&entity, &id)?;
                        }
                    }
                    _ => {}
                }
                let n = self.turn.writes.len() - before;
                run.text = if n == 0 {
                    format!("Ran operation {name}")
                } else {
                    format!("Ran operation {name} ({n} records written)")
                };
                run.at = self.now();
                self.turn.writes.push(run);
                Ok(())
            }
            _ => {
                run.text = format!("Ran operation {name}");
                self.turn.writes.push(run);
                Ok(())
            }
        }
    }

    /// A stored write's data: the named fields as stored and the labels they refer to.
    fn written(&self, action: Action, entity: &str, id: &str, fields: Vec<String>, row: &Map<String, Value>) -> Write {
        let mut w = Write::new(action, entity, id);
        w.label = self.label(entity, id);
        w.at = self.now();
        for f in fields {
            if matches!(f.as_str(), "created" | "updated") {
                continue;
            }
            let value = row.get(&f).cloned().unwrap_or(Value::Null);
            if let Some(target) = self.entity(entity).and_then(|e| e.fields.get(&f)).and_then(|s| s.kind.target()) {
                let labels = ids(&value).iter().map(|id| self.label(target, id)).collect();
                w.ref_labels.insert(f.clone(), labels);
            }
            w.fields.insert(f, value);
        }
        w
    }

    /// The labels of what a row's ref fields hold.
    fn place(&self, entity: &str, row: &Map<String, Value>) -> Vec<String> {
        let Some(e) = self.entity(entity) else { return Vec::new() };
        e.fields
            .iter()
            .filter_map(|(f, spec)| Some((row.get(f)?, spec.kind.target()?)))
            .flat_map(|(v, target)| ids(v).into_iter().map(|id| self.label(target, &id)).collect::<Vec<_>>())
            .collect()
    }

    /// core's guard, as far as the corpus needs it: every violation, by code.
    fn guard(&self, entity: &str, body: &Map<String, Value>, create: bool) -> Vec<ErrorCode> {
        let Some(e) = self.entity(entity) else { return vec![ErrorCode::UnknownEntity] };
        let mut codes = Vec::new();
        for (name, value) in body {
            let Some(field) = e.fields.get(name) else {
                codes.push(ErrorCode::UnknownField);
                continue;
            };
            if value.is_null() {
                continue;
            }
            let exists = |target: &str, v: &Value| {
                v.as_str().is_some_and(|id| self.records.get(id).is_some_and(|(e, _)| e == target))
            };
            let code = match &field.kind {
                FieldType::String { max, min, format, .. } => match value.as_str() {
                    None => Some(ErrorCode::InvalidString),
                    Some(s) if max.is_some_and(|m| s.chars().count() as u64 > m) => Some(ErrorCode::TooLong),
                    Some(s) if min.is_some_and(|m| (s.chars().count() as u64) < m) => Some(ErrorCode::InvalidString),
                    Some(s) if *format == Some(StringFormat::DayKey) && s.parse::<Date>().is_err() => {
                        Some(ErrorCode::InvalidDaykey)
                    }
                    _ => None,
                },
                FieldType::Number { min, max, integer } => match value.as_f64() {
                    None => Some(ErrorCode::InvalidNumber),
                    Some(n) if *integer && n.fract() != 0.0 => Some(ErrorCode::InvalidNumber),
                    Some(n) if min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m) => Some(ErrorCode::OutOfRange),
                    _ => None,
                },
                FieldType::Boolean => (!value.is_boolean()).then_some(ErrorCode::InvalidBoolean),
                FieldType::Datetime => {
                    let ok = value.as_str().is_some_and(|s| {
                        s.parse::<Date>().is_ok()
                            || s.parse::<jiff::Timestamp>().is_ok()
                            || s.replacen(' ', "T", 1).parse::<jiff::Timestamp>().is_ok()
                    });
                    (!ok).then_some(ErrorCode::InvalidDate)
                }
                FieldType::Enum { values } => {
                    (!value.as_str().is_some_and(|s| values.iter().any(|v| v == s))).then_some(ErrorCode::InvalidEnum)
                }
                FieldType::ListEnum { values } => {
                    let ok = value
                        .as_array()
                        .is_some_and(|a| a.iter().all(|v| v.as_str().is_some_and(|s| values.iter().any(|x| x == s))));
                    (!ok).then_some(ErrorCode::InvalidEnum)
                }
                FieldType::Ref { entity } => (!exists(entity, value)).then_some(ErrorCode::InvalidRef),
                FieldType::ListRef { entity } => {
                    let ok = value.as_array().is_some_and(|a| a.iter().all(|v| exists(entity, v)));
                    (!ok).then_some(ErrorCode::InvalidRef)
                }
                FieldType::Json | FieldType::Binary { .. } => None,
            };
            codes.extend(code);
        }
        if create {
            for (name, field) in &e.fields {
                if field.required && field.default.is_none() && body.get(name).is_none_or(Value::is_null) {
                    codes.push(ErrorCode::RequiredField);
                }
            }
        }
        codes
    }

    fn receipt_create(&self, entity: &str, id: &str, body: &Map<String, Value>, row: &Map<String, Value>) -> String {
        let mut text = format!("Added \"{}\"", self.label(entity, id));
        let Some(e) = self.entity(entity) else { return text };
        let place = e.fields.iter().find_map(|(f, spec)| match &spec.kind {
            FieldType::Ref { entity } => {
                row.get(f).and_then(Value::as_str).filter(|s| !s.is_empty()).map(|v| self.label(entity, v))
            }
            _ => None,
        });
        text.push_str(&format!(" to {}", place.unwrap_or_else(|| entity.to_owned())));
        for (f, spec) in &e.fields {
            if body.contains_key(f)
                && let Some(when) = self.date_words(&spec.kind, row.get(f))
            {
                text.push_str(&format!(", {} {when}", field_words(f)));
            }
        }
        text
    }

    fn receipt_update(&self, entity: &str, id: &str, body: &Map<String, Value>, row: &Map<String, Value>) -> String {
        let e = self.entity(entity);
        let changes: Vec<String> = body
            .keys()
            .filter_map(|f| {
                let spec = e?.fields.get(f)?;
                Some(format!("{} → {}", field_words(f), self.value_words(&spec.kind, row.get(f))))
            })
            .collect();
        let label = self.label(entity, id);
        if changes.is_empty() {
            format!("Touched \"{label}\"")
        } else {
            format!("Updated \"{label}\": {}", changes.join(", "))
        }
    }

    fn date_words(&self, kind: &FieldType, value: Option<&Value>) -> Option<String> {
        let text = value?.as_str().filter(|s| !s.is_empty())?;
        let (date, time) = match kind {
            FieldType::Datetime => {
                let ts: jiff::Timestamp =
                    text.parse().ok().or_else(|| text.replacen(' ', "T", 1).parse().ok()).or_else(|| {
                        text.parse::<Date>().ok()?.to_zoned_datetime(TimeZone::UTC).ok().map(|z| z.timestamp())
                    })?;
                let z = ts.to_zoned_datetime(self.app.zone.clone());
                let midnight = z.hour() == 0 && z.minute() == 0;
                (z.date(), (!midnight).then(|| z.strftime("%H:%M").to_string()))
            }
            FieldType::String { format: Some(StringFormat::DayKey), .. } => (text.parse::<Date>().ok()?, None),
            _ => return None,
        };
        let mut words = if date.year() == self.app.today.year() {
            date.strftime("%a %-d %b").to_string()
        } else {
            date.strftime("%a %-d %b %Y").to_string()
        };
        if let Some(t) = time {
            words.push_str(&format!(" {t}"));
        }
        Some(words)
    }

    fn value_words(&self, kind: &FieldType, value: Option<&Value>) -> String {
        let Some(value) = value else { return "nothing".into() };
        if let Some(words) = self.date_words(kind, Some(value)) {
            return words;
        }
        match (kind, value) {
            (FieldType::Ref { entity }, Value::String(id)) if !id.is_empty() => self.label(entity, id),
            (FieldType::ListRef { entity }, Value::Array(ids)) if !ids.is_empty() => {
                ids.iter().filter_map(Value::as_str).map(|id| self.label(entity, id)).collect::<Vec<_>>().join(", ")
            }
            (FieldType::ListEnum { .. }, Value::Array(items)) if !items.is_empty() => {
                items.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", ")
            }
            (FieldType::Boolean, Value::Bool(b)) => if *b { "yes" } else { "no" }.into(),
            (_, Value::String(s)) if s.is_empty() => "empty".into(),
            (_, Value::String(s)) => {
                let short: String = s.chars().take(60).collect();
                if short.len() < s.len() { format!("\"{short}…\"") } else { format!("\"{s}\"") }
            }
            (_, Value::Array(a)) if a.is_empty() => "empty".into(),
            (_, Value::Null) => "empty".into(),
            (_, other) => other.to_string(),
        }
    }
}

/// `due_date` → `due`, as receipts name fields.
fn field_words(field: &str) -> String {
    let base = ["_date", "_day", "_at", "_on"].iter().find_map(|s| field.strip_suffix(s)).unwrap_or(field);
    base.replace('_', " ")
}

fn ids(value: &Value) -> Vec<String> {
    match value {
        Value::String(s) if !s.is_empty() => vec![s.clone()],
        Value::Array(a) => a.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
        _ => Vec::new(),
    }
}

/// The fixed filters the example apps' delete operations use: `field = literal`.
fn matches_filter(row: &Map<String, Value>, filter: &str) -> bool {
    let Some((field, literal)) = filter.split_once('=') else { return false };
    let literal = literal.trim();
    let want = match literal {
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        s => Value::String(s.trim_matches(['\'', '"']).to_owned()),
    };
    row.get(field.trim()) == Some(&want)
}

fn names(codes: &[ErrorCode]) -> String {
    codes.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(", ")
}

fn same_codes(want: &[ErrorCode], got: &[ErrorCode]) -> bool {
    let a: HashSet<&str> = want.iter().map(|c| c.as_str()).collect();
    let b: HashSet<&str> = got.iter().map(|c| c.as_str()).collect();
    a == b
}

/// What one case answered, as the corpus writes it.
fn outcome(case: &Case, app: &Prepared) -> Result<(Verdict, Vec<String>, bool), String> {
    let mut world = World::seeded(app);
    for (n, step) in case.setup.iter().enumerate() {
        world.apply(step).map_err(|e| format!("setup step {}: {e}", n + 1))?;
    }
    let checker = App { describe: &app.describe, today: app.today, zone: app.zone.clone() };
    let check = check(&checker, &world.turn, &case.message);
    let claims = check
        .claims
        .iter()
        .map(|c| format!("{} {}", c.kind.as_str(), c.reason.map(Reason::as_str).unwrap_or("backed")))
        .collect();
    let unreadable = check.discrepancies.iter().any(|d| d.reason == Reason::UnreadableLanguage);
    if std::env::var_os("CLAIMS_SHOW").is_some_and(|v| v == case.name.as_str()) {
        println!("{}", serde_json::to_string_pretty(&check).unwrap_or_default());
        println!("{:#?}", world.turn.writes);
    }
    Ok((check.verdict, claims, unreadable))
}

#[test]
fn corpus() {
    let corpus = corpus::parse(CORPUS).expect("corpus.json parses");
    let apps: HashMap<&str, Prepared> = corpus.apps.iter().map(|(name, app)| (name.as_str(), prepare(app))).collect();
    assert!(apps.values().all(|a| !a.timezone.is_empty()));
    let mut names = HashSet::new();
    let mut failures = Vec::new();
    let (mut tp, mut fp, mut fn_, mut tn) = (0, 0, 0, 0);
    let mut per_reason: BTreeMap<String, usize> = BTreeMap::new();
    let mut per_app: BTreeMap<&str, usize> = BTreeMap::new();
    let mut claims_total = 0;
    for case in &corpus.cases {
        assert!(names.insert(case.name.as_str()), "two cases are named {}", case.name);
        let app = apps.get(case.app.as_str()).unwrap_or_else(|| panic!("{}: no app {}", case.name, case.app));
        *per_app.entry(case.app.as_str()).or_default() += 1;
        claims_total += case.claims.len();
        if case.unreadable {
            *per_reason.entry("unreadable_language".into()).or_default() += 1;
        }
        for reason in case.claims.iter().filter_map(|c| c.split_once(' ').map(|(_, r)| r)).filter(|r| *r != "backed") {
            *per_reason.entry(reason.to_owned()).or_default() += 1;
        }
        let (verdict, claims, unreadable) = match outcome(case, app) {
            Ok(o) => o,
            Err(e) => {
                failures.push(format!("{}: {e}", case.name));
                continue;
            }
        };
        match (case.is_false_claim(), verdict == Verdict::Withheld) {
            (true, true) => tp += 1,
            (false, true) => fp += 1,
            (true, false) => fn_ += 1,
            (false, false) => tn += 1,
        }
        if verdict != case.verdict || claims != case.claims || unreadable != case.unreadable {
            failures.push(format!(
                "{}: want {:?} {:?}{}, got {:?} {:?}{}\n    message: {}",
                case.name,
                case.verdict,
                case.claims,
                if case.unreadable { " unreadable" } else { "" },
                verdict,
                claims,
                if unreadable { " unreadable" } else { "" },
                case.message.replace('\n', "\\n"),
            ));
        }
    }
    let honest = corpus.cases.iter().filter(|c| !c.is_false_claim()).count();
    let false_claims = corpus.cases.len() - honest;
    let precision = tp as f64 / (tp + fp).max(1) as f64;
    let recall = tp as f64 / (tp + fn_).max(1) as f64;
    println!(
        "corpus: {} cases ({}), {} claims; {honest} honest, {false_claims} to withhold",
        corpus.cases.len(),
        per_app.iter().map(|(a, n)| format!("{a} {n}")).collect::<Vec<_>>().join(", "),
        claims_total
    );
    println!("unbacked claims by reason: {per_reason:?}");
    println!(
        "precision {precision:.3}, recall {recall:.3} (withheld rightly {tp}, wrongly {fp}; passed rightly {tn}, wrongly {fn_}); honest withheld {:.1}%",
        100.0 * fp as f64 / honest.max(1) as f64
    );
    assert!(failures.is_empty(), "{} of {} cases fail:\n{}", failures.len(), corpus.cases.len(), failures.join("\n"));
}
