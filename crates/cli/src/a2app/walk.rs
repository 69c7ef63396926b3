//! The walk: local apps, an app's root screen, its records, whoami, describe.

use super::Ctx;
use super::output::{Failure, NOTHING_FOUND, OK, Out, cell, table};
use a2app_client::api::ListQuery;
use a2app_client::coerce;
use a2app_client::config::ConfigDir;
use a2app_client::credentials::Source;
use protocol::describe::{Describe, DescribedEntity};
use protocol::schema::FieldType;
use serde_json::{Map, Value, json};

/// `a2app` alone: the local apps `agent-app serve` registered.
pub fn local_apps(config: &ConfigDir, out: Out) -> Result<u8, Failure> {
    let apps = a2app_client::registry::list(config).map_err(Failure::config)?;
    let added = a2app_client::connections::list(config).map_err(Failure::config)?;
    let mut text = String::new();
    if apps.is_empty() && added.is_empty() {
        text.push_str(
            "no local apps registered yet (agent-app serve DIR registers one)\nor give a URL: a2app https://…, or add one: a2app add DOMAIN\n",
        );
    } else {
        let mut rows = vec![vec!["NAME".into(), "APP".into(), "URL".into()]];
        rows.extend(apps.iter().map(|a| vec![a.id.clone(), a.name.clone(), a.url.clone()]));
        // An added app is named by its URL: names are the local registry's.
        rows.extend(added.iter().map(|c| vec![c.url.clone(), c.name.clone(), format!("added ({})", c.id)]));
        text.push_str(&table(&rows));
        let first = apps.first().map(|a| a.id.clone()).or_else(|| added.first().map(|c| c.url.clone()));
        text.push_str(&format!("\nnext: a2app {}", first.unwrap_or_default()));
    }
    out.done(json!({"ok": true, "apps": apps, "added": added}), &text);
    Ok(if apps.is_empty() && added.is_empty() { NOTHING_FOUND } else { OK })
}

fn credential_words(source: &Source) -> String {
    match source {
        Source::Env => "token from A2APP_TOKEN".into(),
        Source::File => "token from the credentials file".into(),
        Source::LocalApp { path } => format!("the local app's token ({})", path.display()),
        Source::Grant { id } => format!("grant {}", a2app_client::display::printable(id)),
        Source::None => "no token (reads only)".into(),
    }
}

/// The root screen: identity, entities with counts, operations, next moves.
pub async fn root(ctx: &mut Ctx<'_>) -> Result<u8, Failure> {
    let doc = ctx.session.describe().await?.clone();
    let mut entities = Vec::new();
    for (name, ent) in &doc.entities {
        let count = ctx.session.api.count(name).await?;
        entities.push(json!({"name": name, "label": ent.label, "count": count}));
    }
    let id = &ctx.session.identity;
    let operations: Vec<Value> = doc
        .operations
        .iter()
        .map(|o| json!({"name": o.name, "description": o.description, "destructive": o.destructive, "executor": o.executor}))
        .collect();
    let first = doc.entities.keys().next().cloned().unwrap_or_else(|| "ENTITY".into());
    let mut next = vec![
        (ctx.hint(&first), format!("list {first}")),
        (ctx.hint(&format!("create {first} {}", required_args(&doc, &first))), format!("add one to {first}")),
        (ctx.hint(&format!("describe {first}")), "its fields and types".to_owned()),
        (ctx.hint("whoami"), "what you may do".to_owned()),
    ];
    if let Some(op) = doc.operations.first() {
        next.push((ctx.hint(&format!("run {}", op.name)), op.description.clone()));
    }
    let mut text = format!(
        "{} ({}) at {}\n  protocol {} · schema {} · app time {} (UTC{:+03}:{:02}) · {}\n\nEntities\n",
        id.app.name,
        id.app.id,
        ctx.session.base.as_str().trim_end_matches('/'),
        id.protocol,
        id.schema_version,
        id.server_now,
        id.server_tz_offset_minutes / 60,
        (id.server_tz_offset_minutes % 60).abs(),
        credential_words(&ctx.session.credential),
    );
    let rows: Vec<Vec<String>> = entities
        .iter()
        .map(|e| {
            vec![
                format!("  {}", e["name"].as_str().unwrap_or_default()),
                format!("{} records", e["count"]),
                e["label"].as_str().map(|l| format!("label: {l}")).unwrap_or_default(),
            ]
        })
        .collect();
    text.push_str(&table(&rows));
    text.push_str("\nOperations\n");
    if doc.operations.is_empty() {
        text.push_str("  (none)\n");
    } else {
        let rows: Vec<Vec<String>> = doc
            .operations
            .iter()
            .map(|o| {
                vec![
                    format!("  {}", o.name),
                    o.description.clone(),
                    if o.destructive { "(destructive)".into() } else { String::new() },
                ]
            })
            .collect();
        text.push_str(&table(&rows));
    }
    text.push_str("\nNext\n");
    let rows: Vec<Vec<String>> = next.iter().map(|(c, w)| vec![format!("  {c}"), w.clone()]).collect();
    text.push_str(&table(&rows));
    let doc_json = json!({
        "ok": true,
        "app": {"id": id.app.id, "name": id.app.name, "url": ctx.session.base.as_str().trim_end_matches('/'),
                "protocol": id.protocol, "schemaVersion": id.schema_version,
                "serverNow": id.server_now, "serverTzOffsetMinutes": id.server_tz_offset_minutes},
        "credential": ctx.session.credential,
        "firstContact": ctx.session.pin == a2app_client::pins::Pin::FirstContact,
        "entities": entities,
        "operations": operations,
        "next": next.iter().map(|(c, _)| c.clone()).collect::<Vec<_>>(),
    });
    ctx.out.done(doc_json, &text);
    Ok(OK)
}

/// `title=… list=…`: the fields a create needs.
fn required_args(doc: &Describe, entity: &str) -> String {
    let Some(ent) = doc.entities.get(entity) else { return String::new() };
    ent.fields
        .iter()
        .filter(|(_, f)| f.required && f.default.is_none())
        .map(|(n, _)| format!("{n}=…"))
        .collect::<Vec<_>>()
        .join(" ")
}

pub async fn whoami(ctx: &mut Ctx<'_>) -> Result<u8, Failure> {
    let who = ctx.session.api.whoami().await?;
    let may: Vec<&str> = [("read", who.may.read), ("write", who.may.write), ("run operations", who.may.operations)]
        .iter()
        .filter(|(_, ok)| *ok)
        .map(|(w, _)| *w)
        .collect();
    let mut text = format!(
        "{} on {} ({}), {}\n  may: {}\n",
        who.kind,
        who.app,
        who.auth_mode,
        credential_words(&ctx.session.credential),
        if may.is_empty() { "nothing".into() } else { may.join(", ") }
    );
    if let Some(agent) = &who.agent {
        text.push_str(&format!("  agent: {agent}\n"));
    }
    if let Some(hint) = &who.hint {
        text.push_str(&format!("  to do more: {hint}\n"));
    }
    ctx.out.done(json!({"ok": true, "whoami": who, "credential": ctx.session.credential}), &text);
    Ok(OK)
}

pub async fn describe(ctx: &mut Ctx<'_>, path: Option<&str>) -> Result<u8, Failure> {
    let value = match path {
        None => serde_json::to_value(ctx.session.describe().await?).unwrap_or(Value::Null),
        Some(p) => ctx.session.api.describe_part(p).await?,
    };
    let text = match (path, value.get("fields")) {
        (Some(_), Some(fields)) => entity_text(path.unwrap_or_default(), &value, fields),
        _ => serde_json::to_string_pretty(&value).unwrap_or_default(),
    };
    ctx.out.done(json!({"ok": true, "path": path, "describe": value}), &text);
    Ok(OK)
}

fn entity_text(name: &str, ent: &Value, fields: &Value) -> String {
    let mut text = name.to_owned();
    if let Some(l) = ent.get("label").and_then(Value::as_str) {
        text.push_str(&format!(" (label: {l})"));
    }
    text.push('\n');
    let mut rows = Vec::new();
    for (f, spec) in fields.as_object().into_iter().flatten() {
        let kind = spec.get("type").and_then(Value::as_str).unwrap_or_default().to_owned();
        let mut notes = Vec::new();
        if spec.get("required") == Some(&Value::Bool(true)) {
            notes.push("required".to_owned());
        }
        for key in ["entity", "format", "min", "max", "default"] {
            if let Some(v) = spec.get(key) {
                notes.push(format!("{key} {}", cell(v)));
            }
        }
        if let Some(values) = spec.get("values") {
            notes.push(format!("one of {}", cell(values)));
        }
        rows.push(vec![format!("  {f}"), kind, notes.join(", ")]);
    }
    text.push_str(&table(&rows));
    text
}

fn entity<'d>(doc: &'d Describe, name: &str) -> Result<&'d DescribedEntity, Failure> {
    coerce::entity(doc, name).map_err(|p| Failure::problems(vec![p]))
}

/// The ref fields of an entity: listed with their targets' labels via `expand`.
fn ref_fields(ent: &DescribedEntity) -> Vec<String> {
    ent.fields.iter().filter(|(_, f)| f.kind.target().is_some()).map(|(n, _)| n.clone()).collect()
}

/// A field's value for people: a ref shows its target's label when expanded.
fn shown(doc: &Describe, ent: &DescribedEntity, record: &Map<String, Value>, field: &str) -> String {
    let value = record.get(field).cloned().unwrap_or(Value::Null);
    let Some(FieldType::Ref { entity } | FieldType::ListRef { entity }) = ent.fields.get(field).map(|f| &f.kind) else {
        return cell(&value);
    };
    let label = doc.entities.get(entity).and_then(|e| e.label.clone());
    let expanded = record.get("expand").and_then(|e| e.get(field));
    let name = |v: &Value| label.as_ref().and_then(|l| v.get(l)).and_then(Value::as_str).map(str::to_owned);
    match expanded {
        Some(Value::Array(items)) => cell(&Value::from(items.iter().filter_map(name).collect::<Vec<_>>())),
        Some(one) => name(one).unwrap_or_else(|| cell(&value)),
        None => cell(&value),
    }
}

pub async fn list(ctx: &mut Ctx<'_>, entity_name: &str) -> Result<u8, Failure> {
    let doc = ctx.session.describe().await?.clone();
    let ent = entity(&doc, entity_name)?;
    let refs = ref_fields(ent);
    let query = ListQuery {
        page: ctx.cli.page,
        per_page: ctx.cli.per_page,
        filter: ctx.cli.filter.clone(),
        sort: Some(ctx.cli.sort.clone().unwrap_or_else(|| "-created".into())),
        expand: (!refs.is_empty()).then(|| refs.join(",")),
        fields: None,
    };
    let page = ctx.session.api.list(entity_name, &query).await?;
    let label = ent.label.clone();
    let columns: Vec<String> = ent
        .fields
        .iter()
        .filter(|(n, f)| {
            Some(n.as_str()) != label.as_deref() && !matches!(f.kind, FieldType::Json | FieldType::Binary { .. })
        })
        .map(|(n, _)| n.clone())
        .take(4)
        .collect();
    let mut header = vec!["ID".to_owned()];
    header.extend(label.iter().map(|l| l.to_uppercase()));
    header.extend(columns.iter().map(|c| c.to_uppercase()));
    let mut rows = vec![header];
    for item in &page.items {
        let mut row = vec![item.get("id").map(cell).unwrap_or_default()];
        row.extend(label.iter().map(|l| shown(&doc, ent, item, l)));
        row.extend(columns.iter().map(|c| shown(&doc, ent, item, c)));
        rows.push(row);
    }
    let items: Vec<Value> = page
        .items
        .iter()
        .map(|item| {
            let mut item = item.clone();
            if let Some(l) = &label {
                let text = item.get(l).cloned().unwrap_or(Value::Null);
                item.insert("_label".into(), text);
            }
            Value::Object(item)
        })
        .collect();
    let doc_json = json!({
        "ok": true, "entity": entity_name, "label": label,
        "page": page.page, "perPage": page.per_page, "totalItems": page.total_items, "totalPages": page.total_pages,
        "items": items,
    });
    if page.items.is_empty() {
        let text = match &ctx.cli.filter {
            Some(f) => format!("no {entity_name} match {f}"),
            None => format!(
                "no {entity_name} yet; add one: {}",
                ctx.hint(&format!("create {entity_name} {}", required_args(&doc, entity_name)))
            ),
        };
        ctx.out.done(doc_json, &text);
        return Ok(NOTHING_FOUND);
    }
    let mut text = table(&rows);
    text.push_str(&format!(
        "\n{} of {} · page {}/{}",
        page.items.len(),
        page.total_items,
        page.page,
        page.total_pages.max(1)
    ));
    if (page.page as i64) < page.total_pages {
        text.push_str(&format!(
            " · next: {}",
            ctx.hint(&format!("{entity_name} --page {}", page.page.saturating_add(1)))
        ));
    }
    if let Some(first) = page.items.first().and_then(|i| i.get("id")).and_then(Value::as_str) {
        text.push_str(&format!("\nshow one: {}", ctx.hint(&format!("{entity_name} {first}"))));
    }
    ctx.out.done(doc_json, &text);
    Ok(OK)
}

pub async fn show(ctx: &mut Ctx<'_>, entity_name: &str, id: &str) -> Result<u8, Failure> {
    let doc = ctx.session.describe().await?.clone();
    let ent = entity(&doc, entity_name)?;
    let refs = ref_fields(ent);
    let record = if refs.is_empty() {
        ctx.session.api.view(entity_name, id).await?
    } else {
        // One filtered list instead of a plain view, to expand the refs' labels.
        let q = ListQuery {
            per_page: Some(1),
            filter: Some(format!("id = {}", coerce::quote(id))),
            expand: Some(refs.join(",")),
            ..ListQuery::default()
        };
        let page = ctx.session.api.list(entity_name, &q).await?;
        page.items.into_iter().next().ok_or_else(|| {
            Failure::new(NOTHING_FOUND, "not_found", format!("{entity_name} has no record {id}"))
                .fix(format!("list them: {}", ctx.hint(entity_name)))
        })?
    };
    let mut rows = vec![vec!["id".to_owned(), id.to_owned()]];
    for f in ent.fields.keys() {
        rows.push(vec![f.clone(), shown(&doc, ent, &record, f)]);
    }
    for f in ["created", "updated"] {
        rows.push(vec![f.to_owned(), record.get(f).map(cell).unwrap_or_default()]);
    }
    let mut text = table(&rows);
    text.push_str(&format!("\nchange it: {}", ctx.hint(&format!("update {entity_name} {id} field=value"))));
    ctx.out.done(json!({"ok": true, "entity": entity_name, "record": record}), &text);
    Ok(OK)
}
