//! Receipt text, generated from the stored record and the labels of what it
//! refers to. The model never writes this sentence; the system does.

use crate::record::Row;
use protocol::receipt::Receipt;
use protocol::schema::{Entity, FieldType, Schema, StringFormat};
use serde_json::{Map, Value};

/// What a receipt needs besides the record.
pub struct Context<'a> {
    pub schema: &'a Schema,
    pub entity: &'a str,
    pub action: &'a str,
    /// The fields the write named, in the order it named them.
    pub written: Vec<String>,
    pub agent: Option<String>,
    pub caller: String,
    /// The app's time zone, for dates in the sentence.
    pub timezone: &'a str,
    pub now: jiff::Timestamp,
}

/// Builds the receipt; `label(entity, id)` returns a referenced record's label.
pub fn generate(ctx: &Context<'_>, row: &Row, label: &dyn Fn(&str, &str) -> Option<String>) -> Receipt {
    let ent = ctx.schema.entities.get(ctx.entity);
    let id = row.get("id").and_then(Value::as_str).unwrap_or_default().to_owned();
    let name = ent.map(|e| record_label(e, row, &id)).unwrap_or_else(|| id.clone());
    let fields: Map<String, Value> = if ctx.action == "delete" {
        row.iter()
            .filter(|(k, _)| !matches!(k.as_str(), "created" | "updated"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    } else {
        ctx.written.iter().filter_map(|f| Some((f.clone(), row.get(f)?.clone()))).collect()
    };
    let text = match (ctx.action, ent) {
        ("create", Some(e)) => {
            let mut text = format!("Added \"{name}\"");
            let place = e.fields.iter().find_map(|(f, spec)| match &spec.kind {
                FieldType::Ref { entity } => {
                    row.get(f).and_then(Value::as_str).filter(|s| !s.is_empty()).and_then(|v| label(entity, v))
                }
                _ => None,
            });
            match place {
                Some(p) => text.push_str(&format!(" to {p}")),
                None => text.push_str(&format!(" to {}", ctx.entity)),
            }
            for (f, spec) in &e.fields {
                if !ctx.written.contains(f) {
                    continue;
                }
                if let Some(when) = date_words(&spec.kind, row.get(f), ctx) {
                    text.push_str(&format!(", {} {when}", field_words(f)));
                }
            }
            text
        }
        ("update", Some(e)) => {
            let changes: Vec<String> = ctx
                .written
                .iter()
                .filter_map(|f| {
                    let spec = e.fields.get(f)?;
                    Some(format!("{} → {}", field_words(f), value_words(&spec.kind, row.get(f), ctx, label)))
                })
                .collect();
            if changes.is_empty() {
                format!("Touched \"{name}\"")
            } else {
                format!("Updated \"{name}\": {}", changes.join(", "))
            }
        }
        ("delete", _) => format!("Deleted \"{name}\" from {}", ctx.entity),
        _ => format!("{} {} {id}", ctx.action, ctx.entity),
    };
    // A person trusts this sentence: what reorders or hides text in a
    // record's values is shown escaped, never applied.
    let text = match protocol::text::visible(&text) {
        std::borrow::Cow::Owned(shown) => shown,
        std::borrow::Cow::Borrowed(_) => text,
    };
    Receipt {
        text,
        action: ctx.action.to_owned(),
        entity: ctx.entity.to_owned(),
        id,
        fields,
        at: row.get("updated").and_then(Value::as_str).unwrap_or_default().to_owned(),
        agent: ctx.agent.clone(),
        caller: ctx.caller.clone(),
        before: Default::default(),
    }
}

/// The record's label value, or its id when it has none.
pub fn record_label(entity: &Entity, row: &Row, id: &str) -> String {
    label_text(entity.label.as_deref().and_then(|l| row.get(l)), id)
}

/// A record's label from the value of its label field: a non-empty string or
/// a number, else the id.
pub fn label_text(value: Option<&Value>, id: &str) -> String {
    match value {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => id.to_owned(),
    }
}

/// `due_date` → `due`, `start_day` → `start`, `points` → `points`.
fn field_words(field: &str) -> String {
    let base = ["_date", "_day", "_at", "_on"].iter().find_map(|s| field.strip_suffix(s)).unwrap_or(field);
    base.replace('_', " ")
}

fn date_words(kind: &FieldType, value: Option<&Value>, ctx: &Context<'_>) -> Option<String> {
    let text = value?.as_str().filter(|s| !s.is_empty())?;
    let tz = jiff::tz::TimeZone::get(ctx.timezone).unwrap_or(jiff::tz::TimeZone::UTC);
    let this_year = ctx.now.to_zoned_datetime(tz.clone()).year();
    let (date, time) = match kind {
        FieldType::Datetime => {
            let z = crate::datetime::parse(text)?.to_zoned_datetime(tz);
            let midnight = z.hour() == 0 && z.minute() == 0;
            (z.date(), (!midnight).then(|| z.strftime("%H:%M").to_string()))
        }
        FieldType::String { format: Some(StringFormat::DayKey), .. } => (text.parse::<jiff::civil::Date>().ok()?, None),
        _ => return None,
    };
    let mut words = if date.year() == this_year {
        date.strftime("%a %-d %b").to_string()
    } else {
        date.strftime("%a %-d %b %Y").to_string()
    };
    if let Some(t) = time {
        words.push_str(&format!(" {t}"));
    }
    Some(words)
}

fn value_words(
    kind: &FieldType,
    value: Option<&Value>,
    ctx: &Context<'_>,
    label: &dyn Fn(&str, &str) -> Option<String>,
) -> String {
    let Some(value) = value else { return "nothing".into() };
    if let Some(words) = date_words(kind, Some(value), ctx) {
        return words;
    }
    match (kind, value) {
        (FieldType::Ref { entity }, Value::String(id)) if !id.is_empty() => {
            label(entity, id).unwrap_or_else(|| id.clone())
        }
        (FieldType::ListRef { entity }, Value::Array(ids)) if !ids.is_empty() => ids
            .iter()
            .filter_map(Value::as_str)
            .map(|id| label(entity, id).unwrap_or_else(|| id.to_owned()))
            .collect::<Vec<_>>()
            .join(", "),
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Schema {
        crate::schema::parse(include_str!("../../../examples/kanban/schema.json"), false).unwrap()
    }

    fn row(v: Value) -> Row {
        match v {
            Value::Object(m) => m,
            _ => panic!("object"),
        }
    }

    fn ctx<'a>(schema: &'a Schema, action: &'a str, written: &[&str]) -> Context<'a> {
        Context {
            schema,
            entity: "cards",
            action,
            written: written.iter().map(|s| s.to_string()).collect(),
            agent: Some("claude".into()),
            caller: "agent".into(),
            timezone: "Europe/Berlin",
            now: "2026-07-30T09:15:00Z".parse().unwrap(),
        }
    }

    fn labels(entity: &str, id: &str) -> Option<String> {
        match (entity, id) {
            ("lists", "todo00000000001") => Some("To Do".into()),
            ("members", "mmmmmmmmmmmmmmm") => Some("Ann".into()),
            _ => None,
        }
    }

    #[test]
    fn create_names_the_place_and_the_due_date() {
        let s = schema();
        let r = row(
            json!({"id": "c1", "title": "Eat chicken", "list": "todo00000000001", "due_date": "2026-07-30 22:30:00.000Z", "updated": "2026-07-30 09:15:00.000Z"}),
        );
        let receipt = generate(&ctx(&s, "create", &["title", "list", "due_date"]), &r, &labels);
        assert_eq!(receipt.text, "Added \"Eat chicken\" to To Do, due Fri 31 Jul 00:30");
        assert_eq!(
            receipt.fields,
            row(json!({"title": "Eat chicken", "list": "todo00000000001", "due_date": "2026-07-30 22:30:00.000Z"}))
        );
        assert_eq!(receipt.agent.as_deref(), Some("claude"));
        assert_eq!(receipt.at, "2026-07-30 09:15:00.000Z");
    }

    #[test]
    fn update_lists_each_change_in_words() {
        let s = schema();
        let r = row(
            json!({"id": "c1", "title": "Eat", "done": true, "assignees": ["mmmmmmmmmmmmmmm"], "due_day": "2027-01-02"}),
        );
        let receipt = generate(&ctx(&s, "update", &["done", "assignees", "due_day"]), &r, &labels);
        assert_eq!(receipt.text, "Updated \"Eat\": done → yes, assignees → Ann, due → Sat 2 Jan 2027");
    }

    #[test]
    fn delete_and_unlabelled_records() {
        let s = schema();
        let r = row(json!({"id": "c1", "title": "", "updated": "x"}));
        assert_eq!(generate(&ctx(&s, "delete", &[]), &r, &labels).text, "Deleted \"c1\" from cards");
    }
}
