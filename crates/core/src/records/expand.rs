//! `expand`: relations resolved into the response, PocketBase-style.
//!
//! `expand=list,assignees,cards_via_list.assignees` puts the referenced records
//! under each record's `expand` key: one record for a `ref`, a list for a
//! `list<ref>` and for a back-relation (`<entity>_via_<field>`). Paths nest up
//! to six levels; names that are not relations are ignored, as PocketBase does.
//! Each level costs one store query for the whole page, not one per record.

use super::{present, read};
use crate::app::App;
use crate::rules;
use a2app_access::caller::Caller;
use a2app_definition::error::Error;
use a2app_store::Row;
use indexmap::IndexMap;
use protocol::schema::FieldType;
use serde_json::{Map, Value};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

pub const MAX_DEPTH: usize = 6;
/// At most this many back-related records are expanded per query.
pub const MAX_BACK_RELATIONS: u64 = 1000;
/// At most this many expanded records in one answer. PocketBase's two limits
/// above bound each relation, not their product: a path that goes back and
/// forth (`list.cards_via_list.list.cards_via_list`) copies every card under
/// every card, so 40 cards made a 700 MB answer. This bounds the product.
pub const MAX_RECORDS: u64 = 10_000;
/// At most this many bytes (JSON, estimated) of expanded records in one answer.
pub const MAX_BYTES: u64 = 8 << 20;

#[derive(Debug, Default)]
struct Tree(IndexMap<String, Tree>);

fn parse(spec: &str) -> Tree {
    let mut root = Tree::default();
    for path in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let mut node = &mut root;
        for part in path.split('.').take(MAX_DEPTH) {
            node = node.0.entry(part.to_owned()).or_default();
        }
    }
    root
}

type Records = Vec<Map<String, Value>>;

/// What an expansion adds to an answer: records and their estimated bytes.
#[derive(Debug, Clone, Copy, Default)]
struct Weight {
    records: u64,
    bytes: u64,
}

impl Weight {
    fn add(&mut self, other: Weight) {
        self.records = self.records.saturating_add(other.records);
        self.bytes = self.bytes.saturating_add(other.bytes);
    }
}

/// Counts the rows read for one answer, so the reads stop at the budget too:
/// every row read is expanded at least once, so past the budget in rows the
/// answer is past it as well.
struct Budget {
    read: AtomicU64,
}

impl Budget {
    fn take(&self, rows: u64) -> Result<(), Error> {
        let before = self.read.fetch_add(rows, Ordering::Relaxed);
        if before.saturating_add(rows) > MAX_RECORDS {
            Err(too_large(before.saturating_add(rows), None))
        } else {
            Ok(())
        }
    }
}

fn too_large(records: u64, bytes: Option<u64>) -> Error {
    let what = match bytes {
        Some(bytes) => format!("about {} MiB of expanded records", bytes.div_ceil(1 << 20)),
        None => format!("more than {records} expanded records"),
    };
    Error::ExpandTooLarge(format!(
        "this expand would put {what} into one answer; at most {MAX_RECORDS} records and {} MiB are expanded per answer. Expand fewer or shorter paths, or ask for a smaller page (perPage)",
        MAX_BYTES >> 20
    ))
}

fn check(total: Weight) -> Result<(), Error> {
    if total.records > MAX_RECORDS {
        return Err(too_large(total.records, None));
    }
    if total.bytes > MAX_BYTES {
        return Err(too_large(total.records, Some(total.bytes)));
    }
    Ok(())
}

/// Expands `spec` on `records` (all of `entity`). Only records the caller may
/// view are expanded (the target entity's view rule), as PocketBase does. An
/// expansion past [`MAX_RECORDS`] or [`MAX_BYTES`] is refused whole
/// (`expand_too_large`) before its copies are made, never cut short.
pub async fn apply(
    app: &Arc<App>,
    caller: &Caller,
    entity: &str,
    records: &mut Records,
    spec: Option<&str>,
) -> Result<(), Error> {
    let Some(spec) = spec.filter(|s| !s.trim().is_empty()) else { return Ok(()) };
    let tree = parse(spec);
    let budget = Budget { read: AtomicU64::new(0) };
    walk(Arc::clone(app), caller, entity.to_owned(), records, &tree, &budget).await.map(drop)
}

/// Keeps the related rows the caller may view, with hidden emails blanked.
async fn viewable(app: &Arc<App>, caller: &Caller, entity: &str, rows: Vec<Row>) -> Result<Records, Error> {
    let rule = match rules::rule(app, caller, entity, rules::Action::View) {
        Ok(rule) => rule,
        // A locked entity is not expanded for this caller, not an error.
        Err(Error::Forbidden(_) | Error::InsufficientScope(_)) => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let rows = match rule {
        None => rows,
        Some(rule) => {
            let ids: Vec<String> = rows.iter().filter_map(|r| r.get("id")?.as_str().map(str::to_owned)).collect();
            let ctx = rules::context(app, caller, "GET", None);
            let name = entity.to_owned();
            let allowed =
                read(app, move |app| Ok(app.store.get_visible(&app.definition.schema, &name, &ids, &rule, &ctx)?))
                    .await?;
            rows.into_iter()
                .filter(|r| r.get("id").and_then(Value::as_str).is_some_and(|id| allowed.iter().any(|a| a == id)))
                .collect()
        }
    };
    Ok(rows
        .into_iter()
        .map(|r| {
            let mut record = present(entity, r);
            rules::redact(app, caller, entity, &mut record);
            record
        })
        .collect())
}

/// The related records of one relation, expanded themselves, keyed by id,
/// each with what it adds to an answer wherever it is attached.
async fn expanded(
    app: &Arc<App>,
    caller: &Caller,
    entity: &str,
    rows: Vec<Row>,
    sub: &Tree,
    budget: &Budget,
) -> Result<IndexMap<String, (Map<String, Value>, Weight)>, Error> {
    let mut related = viewable(app, caller, entity, rows).await?;
    let own: Vec<u64> = related.iter().map(json_size_map).collect();
    let nested = walk(Arc::clone(app), caller, entity.to_owned(), &mut related, sub, budget).await?;
    Ok(related
        .into_iter()
        .zip(own.into_iter().zip(nested))
        .filter_map(|(r, (bytes, mut weight))| {
            weight.add(Weight { records: 1, bytes });
            Some((r.get("id")?.as_str()?.to_owned(), (r, weight)))
        })
        .collect())
}

/// Expands `tree` on `records`, answering what the expansion added to each.
fn walk<'a>(
    app: Arc<App>,
    caller: &'a Caller,
    entity: String,
    records: &'a mut Records,
    tree: &'a Tree,
    budget: &'a Budget,
) -> Pin<Box<dyn Future<Output = Result<Vec<Weight>, Error>> + Send + 'a>> {
    Box::pin(async move {
        let mut weights = vec![Weight::default(); records.len()];
        if records.is_empty() {
            return Ok(weights);
        }
        for (name, sub) in &tree.0 {
            let schema = &app.definition.schema;
            let Some(ent) = schema.entities.get(&entity) else { return Ok(weights) };
            if let Some(target) = ent.fields.get(name).and_then(|f| f.kind.target()).map(str::to_owned) {
                let multi = matches!(ent.fields[name].kind, FieldType::ListRef { .. });
                let mut ids: Vec<String> = Vec::new();
                let mut seen = std::collections::HashSet::new();
                for r in records.iter() {
                    for id in ref_ids(r.get(name)) {
                        if seen.insert(id.clone()) {
                            ids.push(id);
                        }
                    }
                }
                budget.take(ids.len() as u64)?;
                let t = target.clone();
                let rows = read(&app, move |app| Ok(app.store.get_many(&app.definition.schema, &t, &ids)?)).await?;
                let by_id = expanded(&app, caller, &target, rows, sub, budget).await?;
                let found: Vec<Vec<&String>> = records
                    .iter()
                    .map(|r| {
                        let ids = ref_ids(r.get(name));
                        let mut keys: Vec<&String> =
                            ids.iter().filter_map(|id| by_id.get_key_value(id).map(|(k, _)| k)).collect();
                        if !multi {
                            keys.truncate(1);
                        }
                        keys
                    })
                    .collect();
                weigh(&mut weights, &found, &by_id)?;
                for (r, keys) in records.iter_mut().zip(found) {
                    // PocketBase answers `expand: {}` for a record whose relation is empty.
                    ensure_expand(r);
                    let mut copies =
                        keys.into_iter().filter_map(|k| by_id.get(k)).map(|(m, _)| Value::Object(m.clone()));
                    let value = match (multi, copies.next()) {
                        (_, None) => continue,
                        (false, Some(one)) => one,
                        (true, Some(first)) => Value::Array(std::iter::once(first).chain(copies).collect()),
                    };
                    attach(r, name, value);
                }
            } else if let Some((source, field)) = back_relation(&app, &entity, name) {
                let ids: Vec<String> =
                    records.iter().filter_map(|r| r.get("id")?.as_str().map(str::to_owned)).collect();
                let (s, f) = (source.clone(), field.clone());
                let (per_record, rows) = {
                    let app = Arc::clone(&app);
                    // The rows are counted as they are found, so a page of
                    // records each referenced a thousand times stops early.
                    let remaining = MAX_RECORDS.saturating_sub(budget.read.load(Ordering::Relaxed));
                    read(&app, move |app| {
                        let schema = &app.definition.schema;
                        let mut per_record = Vec::with_capacity(ids.len());
                        let mut all: Vec<String> = Vec::new();
                        let mut seen = std::collections::HashSet::new();
                        for id in &ids {
                            let found = app.store.referencing(schema, &s, &f, id, MAX_BACK_RELATIONS)?;
                            for x in &found {
                                if seen.insert(x.clone()) {
                                    all.push(x.clone());
                                }
                            }
                            if all.len() as u64 > remaining {
                                return Err(too_large(MAX_RECORDS.saturating_sub(remaining) + all.len() as u64, None));
                            }
                            per_record.push(found);
                        }
                        let rows = app.store.get_many(schema, &s, &all)?;
                        Ok((per_record, rows))
                    })
                    .await?
                };
                budget.take(rows.len() as u64)?;
                let by_id = expanded(&app, caller, &source, rows, sub, budget).await?;
                let found: Vec<Vec<&String>> = per_record
                    .iter()
                    .map(|ids| ids.iter().filter_map(|id| by_id.get_key_value(id).map(|(k, _)| k)).collect())
                    .collect();
                weigh(&mut weights, &found, &by_id)?;
                for (r, keys) in records.iter_mut().zip(found) {
                    ensure_expand(r);
                    if !keys.is_empty() {
                        let list = keys.into_iter().filter_map(|k| by_id.get(k)).map(|(m, _)| Value::Object(m.clone()));
                        attach(r, name, Value::Array(list.collect()));
                    }
                }
            }
        }
        Ok(weights)
    })
}

/// Adds what each record's related records weigh to it, and refuses before a
/// copy is made when the records of this level would carry more than one
/// answer may: each of them appears in the answer at least once, so their
/// sum is at most the answer's.
fn weigh(
    weights: &mut [Weight],
    found: &[Vec<&String>],
    by_id: &IndexMap<String, (Map<String, Value>, Weight)>,
) -> Result<(), Error> {
    let mut total = Weight::default();
    for (weight, keys) in weights.iter_mut().zip(found) {
        for key in keys {
            if let Some((_, w)) = by_id.get(*key) {
                weight.add(*w);
            }
        }
        total.add(*weight);
        check(total)?;
    }
    Ok(())
}

/// The length of `value` as compact JSON, closely enough for a budget.
fn json_size(value: &Value) -> u64 {
    match value {
        Value::Null => 4,
        Value::Bool(_) => 5,
        Value::Number(_) => 8,
        Value::String(s) => s.len() as u64 + 2,
        Value::Array(items) => items.iter().map(|v| json_size(v) + 1).sum::<u64>() + 2,
        Value::Object(map) => json_size_map(map),
    }
}

fn json_size_map(map: &Map<String, Value>) -> u64 {
    map.iter().map(|(k, v)| k.len() as u64 + 4 + json_size(v)).sum::<u64>() + 2
}

/// `<source>_via_<field>` where `source.field` points at `entity`.
fn back_relation(app: &App, entity: &str, name: &str) -> Option<(String, String)> {
    let (source, field) = name.split_once("_via_")?;
    let spec = app.definition.schema.entities.get(source)?.fields.get(field)?;
    (spec.kind.target() == Some(entity)).then(|| (source.to_owned(), field.to_owned()))
}

fn ref_ids(value: Option<&Value>) -> Vec<String> {
    match value {
        Some(Value::String(s)) if !s.is_empty() => vec![s.clone()],
        Some(Value::Array(items)) => items.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect(),
        _ => Vec::new(),
    }
}

fn ensure_expand(record: &mut Map<String, Value>) {
    record.entry("expand").or_insert_with(|| Value::Object(Map::new()));
}

fn attach(record: &mut Map<String, Value>, name: &str, value: Value) {
    let expand = record.entry("expand").or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(map) = expand {
        map.insert(name.to_owned(), value);
    }
}
