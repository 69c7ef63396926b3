//! `expand`: relations resolved into the response, PocketBase-style.
//!
//! `expand=list,assignees,cards_via_list.assignees` puts the referenced records
//! under each record's `expand` key: one record for a `ref`, a list for a
//! `list<ref>` and for a back-relation (`<entity>_via_<field>`). Paths nest up
//! to six levels; names that are not relations are ignored, as PocketBase does.
//! Each level costs one store query for the whole page, not one per record.

use super::{present, read};
use crate::app::App;
use crate::caller::Caller;
use crate::error::Error;
use crate::rules;
use crate::store::Row;
use indexmap::IndexMap;
use protocol::schema::FieldType;
use serde_json::{Map, Value};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

pub const MAX_DEPTH: usize = 6;
/// At most this many back-related records are expanded per query.
pub const MAX_BACK_RELATIONS: u64 = 1000;

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

/// Expands `spec` on `records` (all of `entity`). Only records the caller may
/// view are expanded (the target entity's view rule), as PocketBase does.
pub async fn apply(
    app: &Arc<App>,
    caller: &Caller,
    entity: &str,
    records: &mut Records,
    spec: Option<&str>,
) -> Result<(), Error> {
    let Some(spec) = spec.filter(|s| !s.trim().is_empty()) else { return Ok(()) };
    let tree = parse(spec);
    walk(Arc::clone(app), caller, entity.to_owned(), records, &tree).await
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

fn walk<'a>(
    app: Arc<App>,
    caller: &'a Caller,
    entity: String,
    records: &'a mut Records,
    tree: &'a Tree,
) -> Pin<Box<dyn Future<Output = Result<(), Error>> + Send + 'a>> {
    Box::pin(async move {
        if records.is_empty() {
            return Ok(());
        }
        for (name, sub) in &tree.0 {
            let schema = &app.definition.schema;
            let Some(ent) = schema.entities.get(&entity) else { return Ok(()) };
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
                let t = target.clone();
                let rows = read(&app, move |app| Ok(app.store.get_many(&app.definition.schema, &t, &ids)?)).await?;
                let mut related = viewable(&app, caller, &target, rows).await?;
                walk(Arc::clone(&app), caller, target.clone(), &mut related, sub).await?;
                let by_id: IndexMap<String, Map<String, Value>> =
                    related.into_iter().filter_map(|r| Some((r.get("id")?.as_str()?.to_owned(), r))).collect();
                for r in records.iter_mut() {
                    // PocketBase answers `expand: {}` for a record whose relation is empty.
                    ensure_expand(r);
                    let found: Vec<Value> = ref_ids(r.get(name))
                        .iter()
                        .filter_map(|id| by_id.get(id))
                        .map(|m| Value::Object(m.clone()))
                        .collect();
                    let value = match (multi, found.len()) {
                        (_, 0) => continue,
                        (false, _) => found.into_iter().next().unwrap_or(Value::Null),
                        (true, _) => Value::Array(found),
                    };
                    attach(r, name, value);
                }
            } else if let Some((source, field)) = back_relation(&app, &entity, name) {
                let ids: Vec<String> =
                    records.iter().filter_map(|r| r.get("id")?.as_str().map(str::to_owned)).collect();
                let (s, f) = (source.clone(), field.clone());
                let (per_record, rows) = read(&app, move |app| {
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
                        per_record.push(found);
                    }
                    let rows = app.store.get_many(schema, &s, &all)?;
                    Ok((per_record, rows))
                })
                .await?;
                let mut related = viewable(&app, caller, &source, rows).await?;
                walk(Arc::clone(&app), caller, source.clone(), &mut related, sub).await?;
                let by_id: IndexMap<String, Map<String, Value>> =
                    related.into_iter().filter_map(|r| Some((r.get("id")?.as_str()?.to_owned(), r))).collect();
                for (r, found) in records.iter_mut().zip(per_record) {
                    ensure_expand(r);
                    let list: Vec<Value> =
                        found.iter().filter_map(|id| by_id.get(id)).map(|m| Value::Object(m.clone())).collect();
                    if !list.is_empty() {
                        attach(r, name, Value::Array(list));
                    }
                }
            }
        }
        Ok(())
    })
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
